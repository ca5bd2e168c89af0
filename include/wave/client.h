/* wave/client.h - libwaveclient, the C API for submitting work to wavedd.
 *
 * A wave_client is one connection (an nng REQ socket) to one daemon URL.
 * Thread safety: a wave_client may be shared by any number of threads; every
 * call uses its own nng context, so calls from different threads run
 * concurrently and never see each other's replies.  wave_client_close() must
 * not race with other calls on the same client.
 *
 * Every call returns 0 or a WAVE_E* number (wave/error.h) and, when err is
 * not NULL, fills err with the code and a message: the daemon's message for
 * errors it replied with, a local one for transport and argument errors.
 *
 * Strings and lists in results (ABI 1, libwaveclient.so.1): no result
 * struct has a fixed-size array for a string or list, so nothing the
 * daemon sends is cut short (fsum's exact partial, of at most
 * WAVE_EXACT_MAX_BYTES by the protocol, is held whole).
 *   - A result the library allocates (wave_status, wave_pack_info) holds
 *     its lists and strings in the same allocation: its free call
 *     (wave_status_free, wave_packs_free) releases them all.
 *   - A result the caller provides (wave_reduce_result, wave_job_info,
 *     wave_hash_result and its shares) names devices, packs and exchanges
 *     by `const char *` into the client's own copy of each distinct name:
 *     valid until wave_client_close() of the client that answered, never
 *     to be freed by the caller.  The client keeps one copy per distinct
 *     name (at most WAVE_CLIENT_NAMES_MAX of them; a daemon that sends
 *     more gets WAVE_EIO).
 * After a successful call no such string is NULL ("" when not said).
 */
#ifndef WAVE_CLIENT_H
#define WAVE_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "wave/error.h"
#include "wave/export.h"
#include "wave/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wave_client wave_client;

/* The ABI of this header: the soname's number, libwaveclient.so.1.  1: no
 * fixed array in a public struct (docs/changelog.md). */
#define WAVE_CLIENT_ABI 4

/* The most distinct names (device, pack, exchange) one client keeps. */
#define WAVE_CLIENT_NAMES_MAX 4096

/* The system daemon's socket (systemd's RuntimeDirectory=wavedd).  With
 * neither an explicit URL nor WAVE_URL, a client that is not root uses the
 * first of $XDG_RUNTIME_DIR/wavedd/wavedd.sock and
 * /tmp/wavedd-UID/wavedd.sock that exists (a user's own daemon, with and
 * without a login session), else this one; a daemon run by a user listens
 * on one of those (docs/service.md "The socket"). */
#define WAVE_DEFAULT_URL "ipc:///run/wavedd/wavedd.sock"

/* Connect to url; NULL means getenv("WAVE_URL"), then the default above.
 * An ipc socket must belong to root, to the calling user, to the system
 * service's user `wavedd`, or to the uid in WAVE_DAEMON_UID: otherwise WAVE_EIO ("... belongs to uid N"), checked on
 * the socket file when connecting and on the peer of every reply.
 * The connection is made lazily by nng: an absent daemon shows up as
 * WAVE_ETIMEDOUT/WAVE_EIO on the first call, after timeout_ms. */
WAVE_API int wave_client_open(wave_client **out, const char *url,
                              wave_error *err);
/* The same, but connect before returning: WAVE_EIO ("connection refused")
 * at once when no daemon listens at url, instead of a timeout on the first
 * call; WAVE_ETIMEDOUT when the connection is not made within the timeout
 * (30000 ms, or wave_client_options.timeout_ms): a daemon that takes it but
 * does not answer, such as a stopped one.  Later disconnects are redialled
 * as with wave_client_open. */
WAVE_API int wave_client_dial(wave_client **out, const char *url,
                              wave_error *err);
/* How to reach a daemon that asks for credentials (docs/security.md).
 * Zero it, then set what applies; NULL fields fall back as noted. */
typedef struct wave_client_options {
  int dial;                    /* connect before returning (as
                                  wave_client_dial) */
  const char *token;           /* bearer token sent with every request;
                                  NULL: read token_file */
  const char *token_file;      /* a file holding the token (mode 0600);
                                  NULL: $WAVE_TOKEN_FILE, else no token */
  const char *tls_ca_file;     /* tls+tcp://: PEM CAs that sign the
                                  daemon's certificate; NULL: $WAVE_TLS_CA,
                                  else the system's CAs */
  const char *tls_server_name; /* tls+tcp://: the name the certificate must
                                  carry; NULL: the URL's host */
  int timeout_ms;              /* the per-call timeout (as
                                  wave_client_set_timeout), and with dial
                                  the bound on connecting: WAVE_ETIMEDOUT
                                  past it; 0: 30000 */
} wave_client_options;

/* wave_client_open with options (opts NULL: the defaults above, which is
 * what wave_client_open and wave_client_dial use).  A token file that
 * cannot be read, or is open to group or others, is WAVE_EARG.  A
 * tls+tcp:// daemon whose certificate is not trusted is WAVE_EIO ("TLS
 * handshake failed") at once when dialing, a timeout otherwise. */
WAVE_API int wave_client_open_with(wave_client **out, const char *url,
                                   const wave_client_options *opts,
                                   wave_error *err);
WAVE_API void wave_client_close(wave_client *c);
/* Per-call reply timeout in milliseconds (default 30000). */
WAVE_API void wave_client_set_timeout(wave_client *c, int timeout_ms);
WAVE_API const char *wave_client_url(const wave_client *c);

/* ---- reductions ------------------------------------------------------- */

typedef struct wave_chunk {
  const void *data; /* little-endian rows */
  size_t bytes;     /* a multiple of the row size: 4, or 8 for the 64-bit
                       dtypes (input; mask rows are 4), else the daemon
                       answers WAVE_ELENGTH */
} wave_chunk;

/* A job's service level: each device serves high, then normal, then low;
 * high only for the principals the daemon's priority.high_allow names,
 * else WAVE_EPERM.  The numbers are the wire's. */
typedef enum wave_priority {
  WAVE_PRIORITY_NORMAL = 0,
  WAVE_PRIORITY_HIGH = 1,
  WAVE_PRIORITY_LOW = 2,
} wave_priority;

/* "high", "normal", "low" -> *out; -1 for anything else. */
WAVE_API int wave_priority_parse(const char *name, wave_priority *out);

typedef struct wave_reduce_request {
  wave_dtype dtype;
  wave_op op;
  const wave_chunk *input;
  size_t n_input;
  const wave_chunk *mask; /* uint32 rows; used when has_mask */
  size_t n_mask;
  int has_mask;
  const char *device;     /* NULL or "": the daemon picks */
  /* Appended in 0.x (issue 37): the service level and the deadline
   * (docs/protocol.md "Priorities and deadlines"). */
  wave_priority priority;     /* WAVE_PRIORITY_NORMAL (0): the default */
  unsigned deadline_ms;       /* longest wait before it starts, else
                                 WAVE_EDEADLINE; 0: the daemon's default */
} wave_reduce_request;

/* fsum's exact partial (wave_reduce_result.exact, exact_flags): its
 * sizes, and the flags a selected row sets (merged by OR). */
#define WAVE_EXACT_F32_BYTES 48     /* 6 limbs of 64 bits */
#define WAVE_EXACT_F64_BYTES 272    /* 34 limbs */
#define WAVE_EXACT_MAX_BYTES 272
#define WAVE_EXACT_NAN 1u           /* a NaN row */
#define WAVE_EXACT_PINF 2u          /* a +inf row */
#define WAVE_EXACT_NINF 4u          /* a -inf row */
#define WAVE_EXACT_NOT_NEGZERO 8u   /* a row other than -0.0 */

typedef struct wave_reduce_result {
  wave_dtype dtype;
  wave_op op;
  unsigned n_values;      /* 1, or 2 for extent ([min, max]) */
  uint64_t bits[2];       /* raw result bits; a 32-bit dtype's value in the
                             low 32 bits, the high ones 0 */
  int64_t index;          /* argmin/argmax: the value's first row, global
                             over the chunks, -1 when count is 0; 0 for
                             every other op (docs/reduction.md) */
  uint64_t count;         /* rows selected (argmin/argmax: rows considered) */
  uint64_t rows;          /* rows in the input */
  double seconds;         /* time on the device */
  const char *device;     /* the device that ran it: the client's name */
  int finite;             /* float min/max/extent: 1 a selected row is
                             finite, 2 none is, 0 not said (other ops, or a
                             daemon before ReduceResult.finite) */
  /* Appended in ABI 4 (issue 39): fsum's exact partial (docs/protocol.md
   * "The exact sum"), checked by the library (a daemon that sends a wrong
   * length, unknown flag bits or a value that is not its rounding gets
   * WAVE_EIO).  exact holds the accumulator X as on the wire, exact_bytes
   * bytes little-endian two's complement (WAVE_EXACT_F32_BYTES, or
   * WAVE_EXACT_F64_BYTES); the selected finite rows sum to exactly X *
   * 2^-149 (float32) or X * 2^-1074 (float64).  Merging two answers of
   * the same dtype is adding their X and OR-ing their flags; bits[0] is X
   * rounded once, under the flags.  0 and empty for every other op. */
  uint32_t exact_flags;   /* WAVE_EXACT_* */
  uint32_t exact_bytes;   /* 0, or the accumulator's bytes in exact */
  uint8_t exact[WAVE_EXACT_MAX_BYTES];
} wave_reduce_result;

WAVE_API int wave_reduce(wave_client *c, const wave_reduce_request *req,
                         wave_reduce_result *res, wave_error *err);

/* Inputs above 16 MiB in total are sent as a stream of pieces (StreamOpen,
 * StreamPut, StreamCommit; docs/protocol.md "Streams"), on any transport:
 * sizes up to the daemon's limits.max_job_rows work with no giant message,
 * and an over-large job is refused before its rows travel. */

/* ---- shared-memory regions (same host, ipc) ---------------------------- */

/* A region is a memfd sealed against shrinking and growing, its pages
 * allocated at creation (the daemon refuses sparse ones), mapped
 * read-write here.  Fill it (wave_region_data, wave_region_read_fd), then
 * register it with a daemon over ipc (allow_client_shm, on by default):
 * the descriptor is passed to the daemon by SCM_RIGHTS ("<ipc path>.fd",
 * docs/protocol.md "Regions"), whatever the two processes' users, and the
 * daemon reads the rows in place, with no copy and no message of their
 * size.  The daemon drops the
 * registration when the client disconnects; wave_region_close unmaps and
 * closes here.  Rows written while a reduction runs give an unspecified
 * result, never a crash.
 *
 * A region of 64 MiB or more is made of 2 MiB huge pages when the host has
 * them reserved (vm.nr_hugepages), else of ordinary pages, silently: a
 * daemon that first meets the region then maps 512 page-table entries a
 * GiB instead of 262,144 (docs/performance.md "Regions"); it is sealed
 * against writes too (F_SEAL_FUTURE_WRITE: this mapping stays writable,
 * no hole can be punched), as the daemon requires of huge pages.
 * WAVE_REGION_HUGEPAGES=off in the environment never asks for them. */
typedef struct wave_region wave_region;

WAVE_API int wave_region_create(wave_region **out, size_t bytes,
                                const char *name, wave_error *err);
WAVE_API void wave_region_close(wave_region *r);
WAVE_API void *wave_region_data(wave_region *r);
WAVE_API size_t wave_region_size(const wave_region *r);
/* The memfd (sealed: it cannot be shrunk or grown, only written). */
WAVE_API int wave_region_fd(const wave_region *r);
/* Read up to bytes from fd (at its position) into the region at offset;
 * *got (may be NULL) receives how many were read before end of file. */
WAVE_API int wave_region_read_fd(wave_region *r, size_t offset, int fd,
                                 size_t bytes, size_t *got, wave_error *err);
/* Register with the daemon of c; the id the daemon gave it.  WAVE_EBUSY
 * (here and from wave_region_copy_fd, wave_region_file_fd) when the
 * daemon's descriptor side socket refused or reset the connection (its
 * connections full, docs/security.md "Regions"): send the rows instead
 * (wave_reduce), as wavectl does. */
WAVE_API int wave_region_register(wave_client *c, wave_region *r,
                                  wave_error *err);
WAVE_API int wave_region_unregister(wave_client *c, wave_region *r,
                                    wave_error *err);
WAVE_API uint64_t wave_region_id(const wave_region *r);
/* A region the daemon reads into its own memory, now, from the regular
 * file open for reading at fd (its descriptor is passed, so any file this
 * process could open; bytes 0: all of it): one read from
 * the page cache, with no memory of ours, and a snapshot (later writes to
 * the file do not reach it).  Reduce it like any region; its data here is
 * NULL.  wave_region_close forgets it (fd stays the caller's). */
WAVE_API int wave_region_copy_fd(wave_client *c, int fd, size_t bytes,
                                 const char *name, wave_region **out,
                                 wave_error *err);
/* Like wave_region_copy_fd, but the daemon keeps the file open and reads
 * it at each reduction that uses it, in small pieces that it reduces as
 * they arrive: no copy of the file in its memory, and no snapshot (a job
 * sees the file as it is then; a file shorter than an extent at that time
 * fails the job with WAVE_EREGION).  A daemon without file regions makes
 * the copy instead.  fd may also be a pipe's read end, with bytes above
 * 0: a pipe region, which one reduction reads once, whole ([0, bytes)),
 * while another thread writes it; unregister it after (docs/protocol.md
 * "Pipe regions"). */
WAVE_API int wave_region_file_fd(wave_client *c, int fd, size_t bytes,
                                 const char *name, wave_region **out,
                                 wave_error *err);

typedef struct wave_extent {
  const wave_region *region; /* registered with the client it is used on */
  size_t offset;
  size_t bytes;              /* a multiple of the row size (4, or 8 for
                                the 64-bit dtypes' input), as wave_chunk */
} wave_extent;

typedef struct wave_region_reduce {
  wave_dtype dtype;
  wave_op op;
  const wave_extent *input;  /* chunks, in order */
  size_t n_input;
  const wave_extent *mask;   /* used when has_mask */
  size_t n_mask;
  int has_mask;
  const char *device;
  /* Appended in 0.x (issue 37): the service level and the deadline
   * (docs/protocol.md "Priorities and deadlines"). */
  wave_priority priority;     /* WAVE_PRIORITY_NORMAL (0): the default */
  unsigned deadline_ms;       /* longest wait before it starts, else
                                 WAVE_EDEADLINE; 0: the daemon's default */
} wave_region_reduce;

WAVE_API int wave_reduce_region(wave_client *c, const wave_region_reduce *req,
                                wave_reduce_result *res, wave_error *err);

/* wave_reduce's stream, with no fresh memory per job: each piece is
 * copied into the next slot of ring, a region registered with c, and its
 * StreamPut names the slot (StreamPutRequest.from) instead of carrying
 * the rows.  The stream asks pieces of a quarter of the ring (4096 bytes
 * at least) and gets that, or the daemon's own piece when smaller (16 MiB
 * at most); the ring's slots are the pieces it holds, at most 4 used.
 * The daemon reads the slot before it answers (an unmasked float sum of
 * one chunk: reduces it there, as the piece arrives), and the slot is
 * written again only after that answer, so the copy of one piece runs
 * while the daemon reduces the one before.  Any job wave_reduce takes,
 * with its bits.  A ring made once and kept (the Python package's: 4 x 4
 * MiB) is warm memory of both processes: docs/python.md "What each way
 * costs".  WAVE_EARG when ring is not registered or holds no piece. */
WAVE_API int wave_reduce_ring(wave_client *c, const wave_reduce_request *req,
                              wave_region *ring, wave_reduce_result *res,
                              wave_error *err);

/* ---- status ----------------------------------------------------------- */

/* Every string and list below lives in the wave_status allocation. */
typedef struct wave_pack_check {
  const char *pack;
  int ok;
  const char *state;  /* "pending", "ok", "failed", "none" (no hash
                         support) */
  const char *detail;
  double hash_rate;  /* hashes/s measured on the device with the pack, over
                        its hash batches so far (0: none yet) */
} wave_pack_check;

typedef struct wave_device_status {
  const char *name;
  const char *backend;
  const char *description;
  unsigned queue_depth, queue_capacity;
  uint64_t jobs_done, jobs_failed;
  int faulted, running;
  const char *fault;
  unsigned wave_width;
  const char *exchange;
  const char *exchange_reason;
  size_t n_packs;
  wave_pack_check *packs;  /* n_packs entries: every pack the daemon lists */
  /* appended in 0.x (issue 36) */
  uint64_t jobs_cancelled; /* ended cancelled: not in jobs_failed */
  uint64_t busy_ms;        /* time its jobs ran on it, all told */
  /* Health, read by the daemon every 2 s (docs/service.md "Device
   * health").  A field whose WAVE_HEALTH_* bit is not in health_have was
   * not read: show it as absent, never as zero. */
  const char *health_source;  /* "nvml", "amdgpu", "feed"; "": none */
  const char *health_note;    /* no source (or a bad reading): why */
  unsigned health_have;       /* WAVE_HEALTH_* bits */
  double temperature_c, power_w, power_limit_w;
  unsigned sm_clock_mhz, mem_clock_mhz;
  uint64_t throttle_reasons;  /* NVML's clocks-throttle-reason bits */
  const char *throttle;       /* their names joined by ',' ("" none) */
  uint64_t memory_used, memory_total;  /* bytes */
  double utilization_pct;
  /* appended (issue 37): the guards (docs/config.md "Device guards") */
  const char *guard;        /* "off", "inactive", "ok", "throttled",
                               "degraded" (the rate watchdog) */
  const char *guard_reason; /* throttled or inactive: why */
  uint64_t guard_throttles; /* times it went throttled */
  unsigned max_temperature_c, resume_temperature_c, max_power_w; /* 0 off */
  uint64_t watchdog_restarts; /* times the rate watchdog reopened it */
} wave_device_status;

/* wave_device_status.health_have */
#define WAVE_HEALTH_TEMPERATURE 0x1u
#define WAVE_HEALTH_POWER 0x2u
#define WAVE_HEALTH_POWER_LIMIT 0x4u
#define WAVE_HEALTH_SM_CLOCK 0x8u
#define WAVE_HEALTH_MEM_CLOCK 0x10u
#define WAVE_HEALTH_THROTTLE 0x20u
#define WAVE_HEALTH_MEMORY_USED 0x40u
#define WAVE_HEALTH_MEMORY_TOTAL 0x80u
#define WAVE_HEALTH_UTILIZATION 0x100u

/* One principal's share of regions and streams (docs/security.md
 * "Shares"): what it holds and its limit, in bytes. */
typedef struct wave_share {
  const char *principal;   /* "uid:N", "pipe:N" or "token:NAME" */
  uint64_t region_bytes;   /* its regions */
  uint64_t region_limit;   /* limits.max_client_region_bytes */
  uint64_t stream_bytes;   /* its copy regions and streams */
  uint64_t stream_limit;   /* limits.max_client_stream_bytes */
  /* appended in ABI 4 (issue 35): a "uid:N" principal's connections open
   * now to the descriptor side sockets (<ipc path>.fd, every one's), and
   * the most one uid may hold open on one side socket */
  unsigned fd_conns, fd_limit;
  uint64_t file_fds;       /* descriptors its file regions keep open */
  uint64_t file_fd_limit;  /* limits.max_client_files */
} wave_share;

typedef struct wave_status {
  const char *version;
  uint64_t uptime_ms, jobs_served, jobs_failed;
  uint64_t instance;            /* random per daemon start */
  int ready;                    /* every device can serve (packs prepared) */
  size_t n_devices;
  wave_device_status *devices;  /* n_devices entries */
  size_t n_listen;
  char **listen;  /* the daemon's listen URLs as bound (a tcp port 0
                     replaced by the port it got) */
  uint64_t max_files;  /* the daemon's open-files limit (0: not reported) */
  /* appended in 0.x (issue 36) */
  uint64_t jobs_cancelled;  /* hash jobs cancelled: not in jobs_failed */
  /* appended in ABI 3 (issue 35): the asker's own share (root over ipc:
   * every principal's that holds anything, and its own) */
  size_t n_shares;
  wave_share *shares;       /* n_shares entries */
  /* appended (issue 37) */
  unsigned devices_throttled;  /* devices a guard holds now */
  /* appended in ABI 4 (issue 35): side-socket connections open now, every
   * uid's, and the most open on one side socket */
  unsigned fd_conns, fd_limit;
  /* appended in ABI 4 (issue 36): listen[i]'s connections open now, n_listen
   * entries; NULL from a daemon that does not say */
  uint64_t *listen_connections;
  /* appended in ABI 4: per device (n_devices entries, in devices' order)
   * the nonces it hashed since the daemon started, a job over several
   * devices counted on each for its own pieces, and their rate over the
   * last 10 s (the metrics page's wavedd_hash_rate{window="10s"}); NULL
   * from a daemon that does not say */
  uint64_t *device_hashes;
  double *device_hash_rate;
} wave_status;

/* *out is allocated; free it with wave_status_free(), which frees its
 * devices, their packs and every string with it. */
WAVE_API int wave_status_get(wave_client *c, wave_status **out,
                             wave_error *err);
WAVE_API void wave_status_free(wave_status *s);

/* ---- hash jobs -------------------------------------------------------- */

typedef struct wave_hash_request {
  const char *pack;
  uint64_t nonce;
  uint64_t count;
  uint64_t target;        /* output < target wins */
  uint32_t max_winners;
  int want_outputs;
  const char *device;
  /* Protocol 2 */
  const char *const *devices; /* run over these devices; {"all"}: every one
                                 with hash jobs (device must be NULL) */
  size_t n_devices;
  unsigned segment_log2;      /* segments of 2^s nonces; 0: 13; 5..20 */
  int want_segments;          /* return the segment fingerprints */
  /* The job outlives this client's connection; without it the daemon
   * cancels the job when the connection closes (docs/protocol.md "Job
   * ownership"). */
  int detach;
  /* Appended in 0.x (issue 37): the service level and the deadline
   * (docs/protocol.md "Priorities and deadlines"). */
  wave_priority priority;     /* WAVE_PRIORITY_NORMAL (0): the default */
  unsigned deadline_ms;       /* longest wait for its first piece, else
                                 WAVE_EDEADLINE; 0: the daemon's default */
} wave_hash_request;

typedef enum wave_job_state {
  WAVE_JOB_QUEUED = 1,
  WAVE_JOB_RUNNING = 2,
  WAVE_JOB_DONE = 3,
  WAVE_JOB_FAILED = 4,
  WAVE_JOB_CANCELLED = 5,
  /* Waiting for its pack to be prepared on its device(s): waiting_pack,
   * waiting_device and the prepare_steps say which and how far.  It starts
   * by itself once the pack passes its check; poll as for QUEUED. */
  WAVE_JOB_PREPARING = 6,
} wave_job_state;

typedef struct wave_winner {
  uint64_t nonce, output;
} wave_winner;

typedef struct wave_device_share {
  const char *device;      /* the client's name */
  uint64_t hashes;
  double seconds;
  int faulted;             /* faulted during the job; its pieces re-ran */
} wave_device_share;

typedef struct wave_hash_result {
  /* FNV-1a-64 over the segment fingerprints (docs/hash.md "Segments") */
  uint64_t job_fingerprint;
  unsigned segment_log2;
  uint64_t segment_count;  /* segments the job touches */
  size_t n_segments;       /* want_segments: all segment_count of them */
  uint64_t *segments;      /* allocated */
  size_t n_shares;
  wave_device_share *shares; /* allocated: what each device hashed */
  size_t n_winners;
  wave_winner *winners;    /* allocated */
  uint64_t winner_count;
  uint64_t best_nonce, best_output;
  uint64_t hashes;
  double seconds;
  const char *device;      /* the client's names (see the top) */
  const char *exchange;
  size_t n_outputs;
  uint64_t *outputs;       /* allocated, when want_outputs */
} wave_hash_result;

typedef struct wave_job_info {
  uint64_t job_id;
  wave_job_state state;
  uint64_t done, total;
  double seconds;
  const char *device;      /* the client's names (see the top) */
  wave_error error;        /* when FAILED or CANCELLED */
  uint64_t instance;       /* the daemon instance that owns job_id */
  size_t n_devices;        /* how many devices the job runs on */
  /* PREPARING: the pack it waits for, the device preparing it, and that
   * preparation's steps done of prepare_steps_total (0: not known) */
  const char *waiting_pack;    /* "" when not PREPARING */
  const char *waiting_device;
  unsigned prepare_steps, prepare_steps_total;
  const char *owner;       /* who submitted it: "uid:N", "token:NAME" or
                              "pipe:N" (docs/protocol.md "Job ownership");
                              "" from a daemon before 2026-12 */
  /* QUEUED or RUNNING: the job's devices that a guard or the rate
   * watchdog holds now, each with why ("fk0 throttled: temperature 85.0 C,
   * max_temperature_c 80"; "; " between them); "" when none is held.  A
   * held device takes no new piece; a queued job whose devices are all
   * held waits for them (appended in ABI 4) */
  char held[512];
} wave_job_info;

WAVE_API int wave_hash_submit(wave_client *c, const wave_hash_request *req,
                              uint64_t *job_id, wave_error *err);
/* Progress of a job, waiting up to wait_ms for it to end.  When the job is
 * DONE and res is not NULL, res receives the result (free it with
 * wave_hash_result_free()). */
/* The client remembers the daemon instance of its last submit and sends it
 * with polls and cancels: a restarted daemon answers NOJOB. */
WAVE_API int wave_job_poll(wave_client *c, uint64_t job_id, unsigned wait_ms,
                           wave_job_info *info, wave_hash_result *res,
                           wave_error *err);
WAVE_API int wave_job_cancel(wave_client *c, uint64_t job_id,
                             wave_job_info *info, wave_error *err);
WAVE_API void wave_hash_result_free(wave_hash_result *res);

/* Submit, then poll until the job ends; progress (may be NULL) is called
 * after every poll.  Returns the job's error when it failed. */
typedef void (*wave_progress_fn)(const wave_job_info *info, void *arg);
WAVE_API int wave_hash(wave_client *c, const wave_hash_request *req,
                       wave_hash_result *res, wave_progress_fn progress,
                       void *arg, wave_error *err);

/* The hash jobs the daemon knows (queued, running, and the finished ones it
 * keeps), in submit order; *jobs is allocated (wave_jobs_free); its names
 * are the client's, as for wave_job_poll. */
WAVE_API int wave_jobs_get(wave_client *c, wave_job_info **jobs,
                           size_t *n_jobs, wave_error *err);
WAVE_API void wave_jobs_free(wave_job_info *jobs);

/* ---- job keys --------------------------------------------------------- */

/* A job key: 128 random bits that reach one hash job from any connection.
 *
 * A job belongs to the principal that submitted it (docs/protocol.md "Job
 * ownership"): the uid over ipc, the token's name over tcp with a token.
 * Over tcp without a token (a listener with `auth: none`) there is no one
 * but the connection, so the daemon gives each job a key in the submit
 * reply, and only there.  Whoever presents it may poll, wait on, cancel
 * and list that job (and no other), from any connection; the daemon
 * compares it in constant time.  Keep it as secret as the job deserves. */
#define WAVE_JOB_KEY_BYTES 16
#define WAVE_JOB_KEY_HEX (2 * WAVE_JOB_KEY_BYTES + 1) /* text form, NUL */

typedef struct wave_job_key {
  int set;                               /* 0: no key (none was given) */
  unsigned char bytes[WAVE_JOB_KEY_BYTES];
} wave_job_key;

/* wave_hash_submit_key - submit a hash job and learn its key.
 *
 * As wave_hash_submit(); *key (may be NULL) receives the job's key, with
 * key->set 0 when the daemon gave none (the submitter is a uid or a
 * token, which reaches the job already, or the daemon predates keys). */
WAVE_API int wave_hash_submit_key(wave_client *c, const wave_hash_request *req,
                                  uint64_t *job_id, wave_job_key *key,
                                  wave_error *err);

/* wave_job_poll_key, wave_job_cancel_key, wave_jobs_get_key - the same as
 * wave_job_poll(), wave_job_cancel() and wave_jobs_get(), presenting key
 * (NULL or key->set 0: none) with the request.  The job is found if this
 * connection's principal owns it or the key is the job's; otherwise, and
 * for a wrong key, the answer is WAVE_ENOJOB, as for an unknown id.
 * wave_jobs_get_key lists the principal's jobs and the key's one job;
 * listings never carry keys. */
WAVE_API int wave_job_poll_key(wave_client *c, uint64_t job_id,
                               const wave_job_key *key, unsigned wait_ms,
                               wave_job_info *info, wave_hash_result *res,
                               wave_error *err);
WAVE_API int wave_job_cancel_key(wave_client *c, uint64_t job_id,
                                 const wave_job_key *key, wave_job_info *info,
                                 wave_error *err);
WAVE_API int wave_jobs_get_key(wave_client *c, const wave_job_key *key,
                               wave_job_info **jobs, size_t *n_jobs,
                               wave_error *err);

/* wave_job_key_format - key as 32 lowercase hex digits and a NUL into buf
 * (n >= WAVE_JOB_KEY_HEX); "" for a key that is not set.
 * wave_job_key_parse - the reverse: exactly 32 hex digits (either case);
 * WAVE_EARG otherwise. */
WAVE_API void wave_job_key_format(const wave_job_key *key, char *buf,
                                  size_t n);
WAVE_API int wave_job_key_parse(const char *s, wave_job_key *key,
                                wave_error *err);

/* ---- packs ------------------------------------------------------------ */

/* Every string and list below lives in the array wave_packs_get returns:
 * wave_packs_free releases them with it. */
typedef struct wave_pack_device {
  const char *device;
  int ok;
  const char *state;  /* as in wave_pack_check */
  const char *detail;
} wave_pack_device;

typedef struct wave_pack_info {
  const char *name;
  unsigned version;
  uint64_t dataset_bytes;
  const char *description;
  size_t n_devices;
  wave_pack_device *devices;  /* n_devices entries: every device listed */
} wave_pack_info;

WAVE_API int wave_packs_get(wave_client *c, wave_pack_info **packs,
                            size_t *n_packs, wave_error *err);
WAVE_API void wave_packs_free(wave_pack_info *packs);

#ifdef __cplusplus
}
#endif
#endif
