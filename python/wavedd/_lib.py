"""_lib.py - libwaveclient through cffi in ABI mode (no compiler at install).

The declarations below are the public C API of include/wave/client.h,
error.h and types.h, as cffi reads them: the structs as laid out there,
the calls wavedd uses.  Nothing of the wire protocol is here: every request
is made by the library.  tests/test_abi.py compiles the header and checks
that each struct's size and field offsets equal these, so the two cannot
drift apart unseen.

The library: $WAVEDD_LIBWAVECLIENT (a path) when set, else the installed
soname libwaveclient.so.0 through the dynamic loader.
"""
import os

import cffi

SONAME = "libwaveclient.so.0"

CDEF = r"""
typedef enum wave_dtype { WAVE_DTYPE_NONE = 0, WAVE_U32 = 1, WAVE_S32 = 2,
                          WAVE_F32 = 3 } wave_dtype;
typedef enum wave_op { WAVE_OP_NONE = 0, WAVE_SUM = 1, WAVE_MIN = 2,
                       WAVE_MAX = 3, WAVE_EXTENT = 4, WAVE_AND = 5,
                       WAVE_OR = 6, WAVE_XOR = 7 } wave_op;
wave_dtype wave_dtype_parse(const char *s);
const char *wave_dtype_name(wave_dtype d);
wave_op wave_op_parse(const char *s);
const char *wave_op_name(wave_op op);
int wave_op_check(wave_dtype d, wave_op op);
unsigned wave_op_values(wave_op op);

const char *wave_strerror(int err);
const char *wave_errname(int err);
typedef struct wave_error { int code; char message[256]; } wave_error;

typedef struct wave_client wave_client;
typedef struct wave_client_options {
  int dial;
  const char *token;
  const char *token_file;
  const char *tls_ca_file;
  const char *tls_server_name;
  int timeout_ms;
} wave_client_options;
int wave_client_open_with(wave_client **out, const char *url,
                          const wave_client_options *opts, wave_error *err);
void wave_client_close(wave_client *c);
void wave_client_set_timeout(wave_client *c, int timeout_ms);
const char *wave_client_url(const wave_client *c);

typedef struct wave_chunk { const void *data; size_t bytes; } wave_chunk;
typedef struct wave_reduce_request {
  wave_dtype dtype;
  wave_op op;
  const wave_chunk *input;
  size_t n_input;
  const wave_chunk *mask;
  size_t n_mask;
  int has_mask;
  const char *device;
} wave_reduce_request;
typedef struct wave_reduce_result {
  wave_dtype dtype;
  wave_op op;
  unsigned n_values;
  uint32_t bits[2];
  uint64_t count;
  uint64_t rows;
  double seconds;
  char device[64];
  int finite;
} wave_reduce_result;
int wave_reduce(wave_client *c, const wave_reduce_request *req,
                wave_reduce_result *res, wave_error *err);

typedef struct wave_region wave_region;
int wave_region_create(wave_region **out, size_t bytes, const char *name,
                       wave_error *err);
void wave_region_close(wave_region *r);
void *wave_region_data(wave_region *r);
size_t wave_region_size(const wave_region *r);
int wave_region_register(wave_client *c, wave_region *r, wave_error *err);
int wave_region_unregister(wave_client *c, wave_region *r, wave_error *err);
uint64_t wave_region_id(const wave_region *r);
typedef struct wave_extent {
  const wave_region *region;
  size_t offset;
  size_t bytes;
} wave_extent;
typedef struct wave_region_reduce {
  wave_dtype dtype;
  wave_op op;
  const wave_extent *input;
  size_t n_input;
  const wave_extent *mask;
  size_t n_mask;
  int has_mask;
  const char *device;
} wave_region_reduce;
int wave_reduce_region(wave_client *c, const wave_region_reduce *req,
                       wave_reduce_result *res, wave_error *err);

typedef struct wave_pack_check {
  char pack[64];
  int ok;
  char state[16];
  char detail[160];
  double hash_rate;
} wave_pack_check;
typedef struct wave_device_status {
  char name[64];
  char backend[16];
  char description[160];
  unsigned queue_depth, queue_capacity;
  uint64_t jobs_done, jobs_failed;
  int faulted, running;
  char fault[200];
  unsigned wave_width;
  char exchange[16];
  char exchange_reason[200];
  size_t n_packs;
  wave_pack_check packs[16];
} wave_device_status;
typedef struct wave_status {
  char version[32];
  uint64_t uptime_ms, jobs_served, jobs_failed;
  uint64_t instance;
  int ready;
  size_t n_devices;
  wave_device_status *devices;
  size_t n_listen;
  char **listen;
  uint64_t max_files;
} wave_status;
int wave_status_get(wave_client *c, wave_status **out, wave_error *err);
void wave_status_free(wave_status *s);

typedef struct wave_hash_request {
  const char *pack;
  uint64_t nonce;
  uint64_t count;
  uint64_t target;
  uint32_t max_winners;
  int want_outputs;
  const char *device;
  const char *const *devices;
  size_t n_devices;
  unsigned segment_log2;
  int want_segments;
  int detach;
} wave_hash_request;
typedef enum wave_job_state { WAVE_JOB_QUEUED = 1, WAVE_JOB_RUNNING = 2,
  WAVE_JOB_DONE = 3, WAVE_JOB_FAILED = 4, WAVE_JOB_CANCELLED = 5,
  WAVE_JOB_PREPARING = 6
} wave_job_state;
typedef struct wave_winner { uint64_t nonce, output; } wave_winner;
typedef struct wave_device_share {
  char device[64];
  uint64_t hashes;
  double seconds;
  int faulted;
} wave_device_share;
typedef struct wave_hash_result {
  uint64_t job_fingerprint;
  unsigned segment_log2;
  uint64_t segment_count;
  size_t n_segments;
  uint64_t *segments;
  size_t n_shares;
  wave_device_share *shares;
  size_t n_winners;
  wave_winner *winners;
  uint64_t winner_count;
  uint64_t best_nonce, best_output;
  uint64_t hashes;
  double seconds;
  char device[64];
  char exchange[16];
  size_t n_outputs;
  uint64_t *outputs;
} wave_hash_result;
typedef struct wave_job_info {
  uint64_t job_id;
  wave_job_state state;
  uint64_t done, total;
  double seconds;
  char device[64];
  wave_error error;
  uint64_t instance;
  size_t n_devices;
  char waiting_pack[64];
  char waiting_device[64];
  unsigned prepare_steps, prepare_steps_total;
} wave_job_info;
int wave_hash_submit(wave_client *c, const wave_hash_request *req,
                     uint64_t *job_id, wave_error *err);
int wave_job_poll(wave_client *c, uint64_t job_id, unsigned wait_ms,
                  wave_job_info *info, wave_hash_result *res,
                  wave_error *err);
int wave_job_cancel(wave_client *c, uint64_t job_id, wave_job_info *info,
                    wave_error *err);
void wave_hash_result_free(wave_hash_result *res);
int wave_jobs_get(wave_client *c, wave_job_info **jobs, size_t *n_jobs,
                  wave_error *err);
void wave_jobs_free(wave_job_info *jobs);
"""

# The structs whose layout tests/test_abi.py checks against the header.
STRUCTS = [
    "wave_error", "wave_client_options", "wave_chunk", "wave_reduce_request",
    "wave_reduce_result", "wave_extent", "wave_region_reduce",
    "wave_pack_check", "wave_device_status", "wave_status",
    "wave_hash_request", "wave_winner", "wave_device_share",
    "wave_hash_result", "wave_job_info",
]

ffi = cffi.FFI()
ffi.cdef(CDEF)


def _open():
    path = os.environ.get("WAVEDD_LIBWAVECLIENT")
    name = path if path else SONAME
    try:
        return ffi.dlopen(name), name
    except OSError as e:
        how = ("$WAVEDD_LIBWAVECLIENT" if path else
               "the installed library (set WAVEDD_LIBWAVECLIENT to a "
               "build's client/libwaveclient.so.0 otherwise)")
        raise ImportError(f"wavedd: cannot load libwaveclient from {name} "
                          f"({how}): {e}") from e


lib, LIBRARY = _open()


def text(chars):
    """A char[N] field as str."""
    return ffi.string(chars).decode("utf-8", "replace")
