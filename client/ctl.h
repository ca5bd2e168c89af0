/* ctl.h - the pieces of wavectl that are not main(): input loaders, the
 * command line parser, and the JSON/text printers (library wvctl, so that
 * tests/client.c can pin them without running the program).
 *
 * Every function returns 0 or a WAVE_E* code with err filled by wv_seterr();
 * messages name the file (file:line for text input) or the option at fault.
 */
#ifndef WV_CTL_H
#define WV_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "wave/client.h"

/* ---- input loaders (ctl_load.c) ---------------------------------------- */

typedef enum wv_format {
  WV_FMT_AUTO = 0, /* .npy when the file starts with its magic, text-like
                      files refused, else raw (wv_format_decide) */
  WV_FMT_RAW,
  WV_FMT_NPY,
  WV_FMT_TEXT,
} wv_format;

/* One loaded chunk: `bytes` bytes of little-endian rows at data, which
 * points into mem (owned). */
typedef struct wv_chunk_buf {
  void *mem;
  const void *data;
  size_t bytes;
} wv_chunk_buf;

int wv_format_parse(const char *s, wv_format *out);

/* How many leading bytes of a file the format decision looks at. */
#define WV_FORMAT_HEAD 65536

/* The dtype argument of the loaders for a --mask file: uint32 rows, or a
 * .npy of NumPy's bool ('|b1', one byte a row, nonzero selects), which
 * every path widens to uint32 rows before the daemon sees it (the daemon
 * takes uint32 masks only). */
#define WV_DTYPE_MASK ((wave_dtype)0x4d)

/* Where the rows of one file lie, as wv_format_decide found them. */
typedef struct wv_layout {
  wv_format format;  /* WV_FMT_RAW, WV_FMT_NPY or WV_FMT_TEXT */
  size_t offset;     /* raw, npy: the rows are [offset, offset + bytes) */
  uint64_t bytes;    /* text: the file's size (the caller parses it) */
  unsigned row;      /* bytes a row in the file: the dtype's size, or 1 for
                        a bool mask (bytes / 1 rows, to be widened) */
} wv_layout;

/* The one decision of what a file's bytes are, for every path that carries
 * them (messages, streams, memfd, copy and file regions; docs/cli.md
 * "--format"): from fmt, the first k bytes at head and the file's size.
 * k must be min(size, WV_FORMAT_HEAD).  Refusals: auto on what looks like
 * text (ARG), raw lengths not a multiple of the row (4 or 8 bytes: LENGTH),
 * an npy that is malformed (ARG) or of another dtype (DTYPE), --format npy
 * on an empty file (ARG).  An empty raw or text file is zero rows.  Text
 * that holds a word other than a number (a CSV header) is refused naming
 * its line (NAME:LINE:). */
int wv_format_decide(const char *name, const void *head, size_t k,
                     uint64_t size, wv_format fmt, wave_dtype dtype,
                     wv_layout *out, wave_error *err);

/* Load path ("-": standard input) as rows of dtype (WV_DTYPE_MASK for
 * masks: uint32 rows, a bool .npy widened to them). */
int wv_load_file(const char *path, wv_format fmt, wave_dtype dtype,
                 wv_chunk_buf *out, wave_error *err);
/* The same from memory: buf (len bytes, plus one writable byte after them
 * for a terminating NUL) is taken over and freed by the loader.  name is
 * what messages call it. */
int wv_load_buffer(const char *name, char *buf, size_t len, wv_format fmt,
                   wave_dtype dtype, wv_chunk_buf *out, wave_error *err);
void wv_chunk_buf_free(wv_chunk_buf *b);

/* Parse a .npy image: on success *data_off is where the rows start and
 * *rows how many there are; the header's dtype must be the one of dtype. */
int wv_npy_parse(const char *name, const unsigned char *buf, size_t len,
                 wave_dtype dtype, size_t *data_off, uint64_t *rows,
                 wave_error *err);
/* The .npy descr of a dtype: "<u4", "<i4", "<f4", "<u8", "<i8", "<f8". */
const char *wv_npy_descr(wave_dtype dtype);
/* The dtype a .npy header names (head: the first k = min(size,
 * WV_FORMAT_HEAD) bytes of a file of size bytes): EDTYPE for one wavedd
 * does not reduce, ARG for a malformed header. */
int wv_npy_dtype(const char *name, const void *head, size_t k, uint64_t size,
                 wave_dtype *out, wave_error *err);
/* submit reduce without --dtype: the dtype the .npy headers of the inputs
 * name (each regular file is looked at, "-" too when standard input is one
 * read from its start; pipes and others are skipped).  ARG
 * when none is a .npy file (or fmt is raw or text), DTYPE when two name
 * different dtypes, IO when one cannot be read. */
int wv_inputs_dtype(const char *const *paths, size_t n, wv_format fmt,
                    wave_dtype *out, wave_error *err);
/* n bool mask rows (bytes, nonzero selects) as n little-endian uint32 rows
 * of 0 or 1 at dst. */
void wv_mask_widen(unsigned char *dst, const unsigned char *src, size_t n);

/* ---- files into a region (ctl_region.c) ------------------------------- */

/* Read paths[0..n) (the first n_inputs rows of dtype, the rest masks of
 * uint32) into one new region, ext[i] the rows of paths[i].  1 (nothing
 * done) when some file is not a regular raw/.npy file (text, "-", a pipe):
 * the caller loads them with wv_load_file instead. */
int wv_region_load(const char *const *paths, size_t n, size_t n_inputs,
                   wv_format fmt, wave_dtype dtype, wave_region **out,
                   wave_extent *ext, wave_error *err);

/* The same files registered with the daemon one region per file: file
 * regions read at each job (wave_region_file_fd), or with copy, read once
 * into the daemon's memory (wave_region_copy_fd): 0 done; 1 not for this
 * (text, "-", not a regular file, empty); 2 the daemon refused (regions
 * off, too many): the caller tries wv_region_load; else an error. */
int wv_copy_load(wave_client *c, const char *const *paths, size_t n,
                 size_t n_inputs, wv_format fmt, wave_dtype dtype, int copy,
                 wave_region **regions, wave_extent *ext, wave_error *err);

/* ---- command line (ctl_args.c) ----------------------------------------- */

typedef enum wv_cmd {
  WV_CMD_NONE = 0,
  WV_CMD_REDUCE,
  WV_CMD_HASH,
  WV_CMD_STATUS,
  WV_CMD_PACKS,
  WV_CMD_JOBS,
  WV_CMD_WAIT,
  WV_CMD_CANCEL,
  WV_CMD_TOP,
  WV_CMD_BENCH,
  WV_CMD_COUNT
} wv_cmd;

#define WV_CMD_BIT(c) (1u << (c))
#define WV_CMDS_ALL 0x3ffu

/* ---- the option table (ctl_opts.c) -------------------------------------- */

typedef enum wv_opt_id {
  WV_O_URL, WV_O_TIMEOUT, WV_O_JSON, WV_O_HELP, WV_O_VERSION, WV_O_DEVICE,
  WV_O_OP, WV_O_DTYPE, WV_O_INPUT, WV_O_MASK, WV_O_FORMAT,
  WV_O_PACK, WV_O_NONCE, WV_O_COUNT, WV_O_TARGET, WV_O_MAXWIN, WV_O_OUTPUTS,
  WV_O_DEVICES, WV_O_SEGLOG2, WV_O_SEGMENTS, WV_O_DETACH, WV_O_PROGRESS,
  WV_O_FLEET, WV_O_PIECE, WV_O_PROBE, WV_O_TOKENFILE, WV_O_TLSCA,
  WV_O_TLSNAME, WV_O_DAEMON_UID, WV_O_KEY, WV_O_STALL, WV_O_ONCE,
  WV_O_PRIORITY, WV_O_DEADLINE, WV_O_NONCES, WV_O_ROWS,
} wv_opt_id;

/* One row of wavectl's option table: the parser, --help, the man page and
 * the shell completions are all made from these rows. */
typedef struct wv_opt {
  const char *name;   /* without the dashes */
  const char *arg;    /* the value's name (URL, MS); NULL: a flag */
  wv_opt_id id;
  unsigned cmds;      /* WV_CMD_BIT of each command that takes it */
  const char *values; /* for completion: NULL nothing to offer; "=file" a
                         path; "=pack", "=device" the names the daemon
                         lists; else the words, space separated */
  const char *help;   /* one paragraph, wrapped by the printers */
} wv_opt;

typedef struct wv_env {
  const char *name, *help;
} wv_env;

extern const wv_opt wv_opts[];
extern const size_t wv_n_opts;
extern const wv_env wv_envs[];  /* the environment wavectl reads */
extern const size_t wv_n_envs;
/* "submit reduce", "status", ... ("wavectl" for WV_CMD_NONE). */
const char *wv_cmd_name(wv_cmd c);

typedef struct wv_args {
  wv_cmd cmd;
  int help;               /* --help: print usage of cmd (or the overview) */
  int help_submit;        /* `help submit`: the usages of both kinds */
  int version;            /* --version */
  const char *url;        /* NULL: WAVE_URL, then the default */
  int timeout_ms;         /* 0: the library's default */
  const char *token_file; /* --token-file (NULL: $WAVE_TOKEN_FILE) */
  const char *tls_ca;     /* --tls-ca (NULL: $WAVE_TLS_CA, system CAs) */
  const char *tls_name;   /* --tls-server-name (NULL: the URL's host) */
  int json;
  const char *device;
  wave_priority priority; /* --priority (submit): default normal */
  unsigned deadline_ms;   /* --deadline MS (submit): 0 the daemon's */
  /* submit reduce */
  wave_dtype dtype;
  wave_op op;
  wv_format format;
  const char **inputs;    /* point into argv */
  size_t n_inputs;
  const char **masks;
  size_t n_masks;
  /* submit hash */
  const char *pack;
  uint64_t nonce, count, target;
  uint32_t max_winners;
  int outputs;
  int have_nonce, have_count;
  int detach;             /* --detach: print the job id, do not wait */
  int progress;           /* --progress: report even off a terminal */
  /* wait, cancel */
  uint64_t job_id;        /* the first id */
  uint64_t *job_ids;      /* cancel: every id given (wait: the one) */
  size_t n_job_ids;
  wave_job_key key;       /* --key (wait, cancel, jobs); key.set 0: none */
  /* fleet (ctl_fleet.c) */
  const char *fleet;      /* --fleet: URL,URL,... or slurm[:PORT[+]] */
  uint64_t piece;         /* --piece */
  unsigned stall_s;       /* --stall: fleet progress deadline, 0: default */
  int probe;              /* status --probe */
  char *devlist;          /* --devices / --device a,b: owned copy ... */
  const char **devs;      /* ... cut into names */
  size_t n_devs;
  unsigned segment_log2;  /* --segment-log2, 0: the daemon's default */
  int segments;           /* --segments: print the segment list */
  int once;               /* top --once: one frame, no screen control */
  uint64_t rows;          /* bench --rows (0: the default); --nonces is
                             count/have_count */
} wv_args;

/* Parse argv (argv[0] is the program).  WAVE_EARG with a message for any
 * usage error.  Free with wv_args_fini() whatever it returned. */
int wv_args_parse(int argc, char **argv, wv_args *a, wave_error *err);
void wv_args_fini(wv_args *a);
/* The connection options of a's --token-file, --tls-ca, --tls-server-name. */
void wv_args_client_options(const wv_args *a, int dial,
                            wave_client_options *o);
/* Usage text of cmd (WV_CMD_NONE: the overview). */
void wv_usage(FILE *f, wv_cmd cmd);

/* Unsigned number: decimal, or hexadecimal with 0x; all of s must be used. */
int wv_parse_u64(const char *s, uint64_t *out);
/* Hexadecimal with or without 0x (--target). */
int wv_parse_hex64(const char *s, uint64_t *out);

/* ---- output (ctl_out.c) ------------------------------------------------ */

/* A JSON string literal (quotes and escapes). */
void wv_json_str(FILE *f, const char *s);
/* One result value of dtype from its bits (a 32-bit dtype's in the low
 * 32), as JSON: an exact integer, a float32 printed with %.9g, a float64
 * with the fewest of 15..17 significant digits that strtod reads back to
 * the same bits, or for the non-numbers the strings "nan", "inf", "-inf".
 * Returns buf (32 bytes are enough). */
const char *wv_json_value(char *buf, size_t n, wave_dtype dtype,
                          uint64_t bits);
/* The same for text output: nan/inf/-inf without quotes. */
const char *wv_text_value(char *buf, size_t n, wave_dtype dtype,
                          uint64_t bits);

void wv_print_reduce(FILE *f, const wave_reduce_result *r, int json);
/* ... and, path not NULL, how the rows went instead and why ("path:" in
 * text, "path" and "fallback" in JSON): a fallback said in the result. */
void wv_print_reduce_path(FILE *f, const wave_reduce_result *r, int json,
                          const char *path, const char *why);
void wv_print_hash(FILE *f, const wave_hash_request *q,
                   const wave_hash_result *r, uint64_t job_id, int json);
void wv_print_status(FILE *f, const wave_status *s, const char *url,
                     int json);
void wv_print_packs(FILE *f, const wave_pack_info *p, size_t n, int json);

/* ---- job commands (ctl_jobs.c) ----------------------------------------- */

const char *wv_job_state_name(wave_job_state s);
/* Nonces per second so far (0: unknown yet) and seconds left (-1:
 * unknown), from the job's done, total and seconds. */
double wv_job_rate(const wave_job_info *j);
double wv_job_eta(const wave_job_info *j);
/* "1.23 MH/s" ("-" for 0); "42s", "3m05s", "4h12m", "2d03h" ("-" for < 0). */
void wv_fmt_rate(char *buf, size_t n, double rate);
void wv_fmt_eta(char *buf, size_t n, double seconds);
/* The progress of j in one line: bar, the terminal's form ("[###---]
 * 12.3%  1.23 MH/s  4.0 s  ETA 3m05s"), else the plain form for logs
 * ("job ID: 12.3%, D of T nonces, 1.23 MH/s, 4.0 s, ETA 3m05s"). */
void wv_progress_line(char *buf, size_t n, const wave_job_info *j, int bar);
/* Queued, preparing or running: not ended yet. */
int wv_job_live(wave_job_state s);
/* PREPARING: "waiting for pack main on cpu0: 22 of 64 steps"; else "". */
void wv_job_waiting(const wave_job_info *j, char *buf, size_t n);
void wv_print_jobs(FILE *f, const wave_job_info *jobs, size_t n, int json);
/* submit hash --detach: the job id and a command that reaches the job
 * again (with --key when the daemon gave a key), or no command when none
 * would work; url is the one connected to.  JSON: {"job": ID, "key"?}. */
void wv_print_detached(FILE *f, const wv_args *a, const char *url,
                       uint64_t id, const wave_job_key *key, int json);
/* One job as `wait`/`cancel` print it; r (may be NULL) when it is done. */
void wv_print_job(FILE *f, const wave_job_info *j, const wave_hash_result *r,
                  int json);
/* ---- top (ctl_top.c) ---------------------------------------------------- */

/* What one frame of `wavectl top` shows: the daemon's status, its jobs
 * (the live ones are drawn), and per device the busy share over the last
 * interval (busy[i] in 0..100, -1 not known) and the hash rate.  width and height bound the
 * frame (0: no bound; a terminal's size). */
typedef struct wv_top_view {
  const wave_status *s;
  const char *url;
  const wave_job_info *jobs;
  size_t n_jobs;
  const int *busy;        /* s->n_devices entries, or NULL: all unknown */
  const double *rate;     /* hash rates over the interval (0: none; then
                             s->device_hash_rate), or NULL */
  const char *clock;      /* "HH:MM:SS" for the header, or NULL */
  unsigned width, height;
  int tty;                /* the live view: the footer with the keys */
} wv_top_view;

/* One frame, as text lines; control bytes the daemon sent come out as
 * '?', and lines are cut at v->width. */
void wv_top_frame(FILE *f, const wv_top_view *v);
/* The same as one JSON object, null for what is not known (--json). */
void wv_top_json(FILE *f, const wv_top_view *v);
/* The busy share (0..100) of a device over one interval: n status
 * samples, `running` of which found it running a job; busy_ms its busy
 * time at the end, grown by d_busy_ms while the uptime grew by
 * d_uptime_ms.  d_busy_ms / d_uptime_ms, except 100 when every sample
 * found it running, and running / n when busy_ms is 0 (not reported);
 * -1 when fewer than 2 samples were taken. */
int wv_top_busy(unsigned running, unsigned n, uint64_t busy_ms,
                uint64_t d_busy_ms, uint64_t d_uptime_ms);
/* `wavectl top` over client c: the live view on a terminal, else (or
 * with --once or --json) one frame on stdout.  0, or a WAVE_E* code with err filled
 * (the terminal restored first). */
int wv_ctl_top(const wv_args *a, wave_client *c, wave_error *err);

/* ---- bench (ctl_bench.c) ------------------------------------------------ */

/* `wavectl bench` over client c: the known answers, a hash job checked
 * against the CPU's fingerprint and the reductions of every dtype checked
 * against wv_reduce_reference, per device, printed as a table or JSON.
 * 0 with *failed set when a check failed; else a WAVE_E* code (err). */
int wv_ctl_bench(const wv_args *a, wave_client *c, int *failed,
                 wave_error *err);

/* ---- fleet (ctl_fleet.c) ------------------------------------------------ */

/* The daemons of a --fleet SPEC: "URL,URL,..." or "slurm[:PORT[+]]" (the
 * nodes of $SLURM_JOB_NODELIST through `scontrol show hostnames`, each at
 * its NodeAddr from `scontrol show node`; PORT+ adds the node's index).
 * *urls is allocated (wv_fleet_urls_free). */
int wv_fleet_urls(const char *spec, char ***urls, size_t *n, wave_error *err);
void wv_fleet_urls_free(char **urls, size_t n);

/* The readiness verdict of a status reply: StatusReply.ready; for a
 * daemon before protocol 2 (instance 0, which never sets ready): some
 * device is not faulted and no pack check is pending. */
int wv_status_ready(const wave_status *s);

/* wavectl's --fleet commands: 0, or a WAVE_E* code with err filled (the
 * message already names the daemons at fault).  Ctrl-C cancels the job on
 * every daemon (WAVE_ECANCELLED). */
int wv_ctl_fleet_hash(const wv_args *a, wave_error *err);
int wv_ctl_fleet_reduce(const wv_args *a, const wave_chunk *chunks,
                        wave_error *err);
/* status --fleet: each daemon's status (or with --probe nothing); returns
 * wavectl's exit status: 0 all ready/answered, 1 one not ready, 3 one
 * unreachable, 2 a bad SPEC. */
int wv_ctl_fleet_status(const wv_args *a);

/* The coordinator's hash for wave_fleet_set_rehash: pack NAME loaded from
 * the packs folder (wv_fleet_packs_dir: $WAVE_PACKS_DIR, else the installed
 * one), first as DIR/NAME.yaml, else by its name: in the folder. */
typedef struct wv_pack wv_pack;
typedef struct wv_packset wv_packset;
typedef struct wv_fleet_pack {
  const wv_pack *pack;
  wv_pack *own;           /* loaded alone, or NULL */
  wv_packset *set;        /* the folder, or NULL */
} wv_fleet_pack;
const char *wv_fleet_packs_dir(void);
int wv_fleet_pack_open(const char *dir, const char *name, wv_fleet_pack *out,
                       wave_error *err);
void wv_fleet_pack_close(wv_fleet_pack *p);
/* wave_fleet_rehash_fn over a wv_fleet_pack (arg). */
int wv_fleet_rehash(void *arg, const char *pack, uint64_t nonce,
                    uint64_t count, uint64_t *outputs, wave_error *err);

#endif
