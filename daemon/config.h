/* config.h - wavedd's configuration (config/devices.yaml, docs/config.md).
 *
 * The file is parsed with libyaml into a fresh wd_config, every key checked
 * against one descriptor table (config.c: name, type, bounds, default) and
 * the whole validated before anyone sees it; an error names
 * file:line:column and the key ("devices.yaml:7:5: devices[0].threads:
 * expected an integer 0..1024").  Unknown and duplicate keys are errors.
 * Nothing here touches devices or sockets: --check-config and the tests use
 * it alone.
 */
#ifndef WD_CONFIG_H
#define WD_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "wave/error.h"

#define WD_NAME_MAX 64
#define WD_PATH_MAX 4096

/* A new field here also goes into reload.c's rl_same_device (a reload
 * refuses device changes). */
typedef struct wd_device_cfg {
  char name[WD_NAME_MAX];
  char backend[16];
  unsigned index;
  unsigned platform;      /* opencl: platform ordinal */
  char device[128];       /* opencl: device name match, "" = none */
  unsigned threads;       /* cpu backend: 0 = all cores */
  unsigned queue_depth;   /* reduce jobs waiting for the device */
  int exchange;           /* hash exchange: a wv_exchange (workers/
                             worker.h), AUTO, SHUFFLE or LOCAL */
  unsigned group_units;
  uint64_t batch;         /* nonces per hash batch, 0 = backend default */
  uint64_t reduce_slice_rows; /* rows per slice of a big reduction,
                                 0 = the device's default (exec/device.h) */
  /* guards (exec/health.h), 0 = off; live on reload */
  unsigned max_temperature_c;    /* at or over: throttled */
  unsigned resume_temperature_c; /* ... until at or under this */
  unsigned max_power_w;          /* at or over: throttled */
  /* the rate watchdog (exec/health.h), live on reload */
  unsigned watchdog_min_rate_pct; /* of its own best window; 0 = off */
  unsigned watchdog_window_s;     /* one window */
  unsigned watchdog_windows;      /* degraded this many: restarted */
  unsigned watchdog_restarts;     /* at most this many restarts */
} wd_device_cfg;

typedef struct wd_limits {
  uint64_t max_request_bytes; /* larger requests are answered TOOBIG */
  uint64_t max_job_rows;      /* larger reductions are answered JOBSIZE */
  unsigned jobs_in_flight;    /* hash jobs queued or running per device */
  unsigned client_jobs;       /* ... and per principal, all devices */
  uint64_t keep_result_bytes; /* ended jobs' outputs + segment lists */
  unsigned contexts;          /* requests received concurrently (nng ctxs) */
  unsigned max_outputs;       /* want_outputs only for count <= this */
  unsigned max_winners;       /* HashRequest.max_winners bound */
  unsigned max_wait_ms;       /* JobRequest.wait_ms is capped to this */
  unsigned keep_jobs;         /* finished hash jobs remembered ... */
  unsigned keep_seconds;      /* ... and for how long */
  unsigned decode_threads;    /* threads that decode requests off the loop */
  uint64_t max_stream_bytes;  /* streamed jobs' buffers, all clients */
  unsigned max_client_regions;/* shared-memory regions per connection */
  uint64_t max_region_bytes;  /* shared-memory regions mapped, all clients */
  uint64_t max_client_region_bytes; /* ... of one client (share.h) */
  uint64_t max_client_stream_bytes; /* streams + copies of one client */
  unsigned max_client_files;  /* descriptors of one client's file regions */
  uint64_t region_cache_bytes;/* freed copy-region buffers kept for reuse */
  unsigned region_read_timeout_ms; /* a file-region read that blocks longer
                                 fails its job (daemon/filered.h) */
  unsigned file_readers;      /* reader pool (bulk/readers.h); 0: min(12,
                                 cores); sized at start */
  int staging_rings;          /* WD_PREPARE_*: the devices' staging rings
                                 made as they open, or at their first
                                 file job (bulk/readers.h) */
  unsigned max_segments;      /* want_segments only for jobs of at most
                                 this many segments (else TOOBIG) */
  unsigned max_parked;        /* JobRequests waiting at once; more are
                                 answered at once */
  /* per connection (daemon/peer.c, docs/config.md) */
  unsigned max_connections;   /* pipes open at once; more are closed */
  unsigned max_peer_requests; /* contexts one pipe holds; then BUSY */
  unsigned max_peer_parked;   /* parked polls of one pipe */
  unsigned send_timeout_ms;   /* a reply that cannot leave: pipe closed */
  unsigned idle_timeout_ms;   /* no message for this long: closed; 0 off */
  unsigned slow_request_ms;   /* a reply this late is logged; 0 off */
  /* connections that are not pipes yet, and metrics (daemon/connguard.c) */
  unsigned tls_handshake_ms;  /* TLS + SP handshake deadline; 0 off */
  unsigned max_tls_handshakes;/* TLS connections not yet pipes, at once */
  unsigned metrics_max_age_ms;/* a metrics connection lives this long */
  unsigned metrics_connections;/* metrics connections at once */
  /* wrong tokens per tcp peer address (daemon/auth.c) */
  unsigned auth_failures;     /* a peer's burst of wrong tokens */
  unsigned auth_failure_ms;   /* then one more each this long */
} wd_limits;

/* auth.tokens[i] (daemon/auth.c checks requests against them). */
#define WD_TOKEN_MAX 256      /* a secret is 16..WD_TOKEN_MAX-1 bytes, with
                                 at least 128 bits (auth.c) */
typedef struct wd_token_cfg {
  char name[WD_NAME_MAX];     /* the principal: "token:NAME" */
  char file[WD_PATH_MAX];     /* resolved against the config file's folder */
  char secret[WD_TOKEN_MAX];  /* the file's one line, read at load */
  size_t len;
  int generate;               /* generate: true - a missing file is made at
                                 start (wd_token_generate) */
  int pending;                /* generate and the file is absent: no secret
                                 yet; never matches a request */
} wd_token_cfg;

/* tls: the certificate of every tls+tcp:// listener (daemon/tls.c). */
enum { WD_TLS_VERIFY_NONE, WD_TLS_VERIFY_OPTIONAL, WD_TLS_VERIFY_REQUIRED };
typedef struct wd_tls_cfg {
  int set;                    /* a tls: section was given */
  char cert_file[WD_PATH_MAX];/* PEM: the server certificate (chain) */
  char key_file[WD_PATH_MAX]; /* PEM: its private key, unencrypted */
  char ca_file[WD_PATH_MAX];  /* PEM: CAs for client certificates, "" none */
  int verify;                 /* client certificates: WD_TLS_VERIFY_* */
} wd_tls_cfg;

/* priority: who may ask for the high level, and per level (indexed by
 * WD_LEVEL_*: normal, high, low) a cap of queued jobs per device and a
 * default deadline (docs/config.md "priority"). */
typedef struct wd_prio_cfg {
  char high_allow[1024];      /* "uid:N", "gid:N", "token:NAME" separated by
                                 spaces or commas; root over ipc always */
  unsigned max_queued[3];     /* 0: no cap of its own */
  unsigned deadline_ms[3];    /* 0: none */
} wd_prio_cfg;

/* packs.prepare: every pack on every device before READY=1, or each
 * pack on a device when the first hash job there needs it. */
enum { WD_PREPARE_STARTUP = 0, WD_PREPARE_FIRST_USE = 1 };

typedef struct wd_config {
  char path[WD_PATH_MAX];     /* as given: messages name it */
  char **listen;              /* URLs, n_listen >= 1 */
  size_t n_listen;
  unsigned (*listen_at)[2];   /* listen[i]'s line and column in the file;
                                 NULL when listen was not given */
  unsigned ipc_mode;          /* the ipc socket files' mode (default 0660) */
  char metrics[256];          /* http://host:port of /metrics; "" = off */
  int log_level;              /* WD_LOG_* */
  int allow_client_shm;       /* ipc clients may register memfd regions */
  wd_limits limits;
  wd_tls_cfg tls;
  wd_prio_cfg prio;
  int auth_none;              /* auth: none - tcp served without tokens */
  wd_token_cfg *tokens;       /* auth.tokens; n_tokens 0: none configured */
  size_t n_tokens;
  char packs_dir[WD_PATH_MAX];/* resolved against the config file's folder */
  int packs_dir_set;          /* given explicitly: a missing folder is an error */
  size_t packs_line, packs_col; /* where packs.dir (else packs.load) is */
  int packs_all;              /* load every pack in packs_dir */
  char **packs_load;          /* otherwise these names */
  size_t n_packs_load;
  unsigned (*packs_load_at)[2]; /* packs_load[i]'s line and column */
  int packs_prepare;          /* WD_PREPARE_*: when packs are prepared */
  wd_device_cfg *devices;
  size_t n_devices;
} wd_config;

/* Load and validate path.  On error *out is NULL and err holds
 * "file:line:column: key: what" with code WAVE_ECONFIG. */
int wd_config_load(const char *path, wd_config **out, wave_error *err);
void wd_config_free(wd_config *c);
/* Do a and b say the same in every field (token secrets included, the
 * file's positions too)?  A reload of an unchanged file keeps serving the
 * config it has (reload.c): nothing is kept for it. */
int wd_config_same(const wd_config *a, const wd_config *b);
/* What a reload may change, by the key table's reload column
 * (config_keys.h): 0 when nc (the file just read) differs from oc (the
 * serving config) only in keys a reload applies or takes for the next
 * start; else WAVE_ECONFIG naming the first refused key ("FILE: KEY
 * changed; why").  later(arg, key, why) is called for each changed key
 * that takes effect only at the next start (may be NULL). */
int wd_config_reload_check(const wd_config *oc, const wd_config *nc,
                           void (*later)(void *arg, const char *key,
                                         const char *why),
                           void *arg, wave_error *err);

/* Name comparisons the duplicate checks made in this thread, ever: the
 * tests bound it (O(n log n), not n^2). */
extern _Thread_local uint64_t wd_config_compares;

#endif
