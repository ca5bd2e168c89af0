/* ocl.h - the OpenCL backend's device context, shared by the files of
 * workers/opencl/ (ocl_open.c: platform and device choice, program builds,
 * the exchange rule, caps, the vtable; ocl_reduce.c: reductions, on the
 * op table; ocl_stage.c: their staging, walk and level plan; ocl_xsum.c:
 * the exact float sum, op fsum; ocl_hash.c: hash jobs).
 *
 * A device is one cl_context with one in-order command queue on one
 * cl_device_id, used by one device thread only (workers/worker.h), so
 * nothing here is locked.  The kernels are OpenCL C embedded in the binary
 * (kernels/NAME.cl, turned into strings by embed_cl.cmake): the base program
 * (reductions, dataset, batch fold) is built at open(), the hash kernel once
 * per pack at hash_prepare() with the pack's program as macros.  A build
 * failure is WAVE_EDEVICE with the build log (as much as the error holds;
 * the whole log goes to stderr).
 *
 * Errors: any cl* call that fails while running a job is WAVE_EDEVICE with
 * the call and the error's name (wv_ocl_fail), which makes the daemon mark
 * the device faulted.
 */
#ifndef WV_OCL_H
#define WV_OCL_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdint.h>

#include "workers/worker.h"

#define WV_OCL_WG 256u           /* work-group of reduce.cl / hashbase.cl */
#define WV_OCL_FOLD_BLOCK (256u * 16u)  /* outputs per hash_fold_count group */

/* Knobs for tests and benchmarks (wv_ocl_open_ex); the daemon uses the
 * defaults (all zero). */
typedef struct wv_ocl_options {
  uint64_t window_rows;   /* rows per staging window; 0 = 2^24 */
  int force_local;        /* reduce: no sub-group reductions */
  uint64_t batch_units;   /* hash: units per launch; 0 = from the device */
} wv_ocl_options;

/* The kernels of reduce.cl, at the same index in both programs (d->k: the
 * base one, 32-bit rows; d->kw: the wide one, 64-bit rows).  The ordered
 * ones sit at WV_OCL_RED_UMIN + 3 * (halves - 1) + key kind (the op
 * table's, core/optable.h). */
enum wv_ocl_kernel {
  WV_OCL_RED_SUM, WV_OCL_RED_AND, WV_OCL_RED_OR, WV_OCL_RED_XOR,
  WV_OCL_RED_UMIN, WV_OCL_RED_SMIN, WV_OCL_RED_FMIN,
  WV_OCL_RED_UMAX, WV_OCL_RED_SMAX, WV_OCL_RED_FMAX,
  WV_OCL_RED_UEXT, WV_OCL_RED_SEXT, WV_OCL_RED_FEXT,
  WV_OCL_RED_FINISH, WV_OCL_FSUM_LEVEL1, WV_OCL_FSUM_TREE,
  WV_OCL_XSUM_BINS, WV_OCL_XSUM_FOLD,
  WV_OCL_RED_COUNT_,
  /* the base program's others: the bench's baseline, hashbase.cl */
  WV_OCL_STREAM = WV_OCL_RED_COUNT_, WV_OCL_DATASET, WV_OCL_FOLD_COUNT,
  WV_OCL_FOLD_WINNERS, WV_OCL_FOLD_SEGMENTS,
  WV_OCL_KERNEL_COUNT_
};

/* The wide program's others (arg.cl): argmin/argmax of every dtype at
 * WV_OCL_ARG + 6 * (row bytes == 8) + 2 * key kind + (argmax). */
enum wv_ocl_arg_kernel {
  WV_OCL_ARG = WV_OCL_RED_COUNT_,
  WV_OCL_ARG_FINISH = WV_OCL_ARG + 12,
  WV_OCL_WIDE_COUNT_
};

/* A device buffer that grows on demand (contents lost when it grows). */
typedef struct wv_ocl_buf {
  cl_mem mem;
  size_t size;
} wv_ocl_buf;

/* Staging: a pinned host buffer (CL_MEM_ALLOC_HOST_PTR, mapped for the
 * device's life) and the device buffer it is written into. */
typedef struct wv_ocl_stage {
  cl_mem host;
  void *map;
  cl_mem dev;
  size_t size;
  cl_event done;          /* the write out of host, or NULL */
} wv_ocl_stage;

struct wv_device {
  cl_platform_id platform;
  cl_device_id id;
  cl_context ctx;
  cl_command_queue q;
  cl_program base;
  cl_kernel k[WV_OCL_KERNEL_COUNT_];

  wv_ocl_options opt;
  char name[128];           /* CL_DEVICE_NAME */
  char platform_name[128];
  int gpu;                  /* CL_DEVICE_TYPE_GPU */
  unsigned cl_major, cl_minor;   /* device OpenCL version */
  unsigned c_major, c_minor;     /* highest OpenCL C version */
  cl_uint units;            /* compute units */
  cl_ulong max_alloc;
  int denorm;               /* CL_FP_DENORM for float */
  int subgroups;            /* sub_group_reduce_* usable (reduce) */
  int khr_shuffle, intel_shuffle, khr_subgroups;
  char *extensions;         /* CL_DEVICE_EXTENSIONS, owned */

  uint64_t window_rows;
  wv_ocl_stage stage[2];
  unsigned cur;
  /* the running reduction's transfer (wv_ocl_xfer_begin/end) */
  double xfer_host;         /* s: the host filling windows */
  double fill_t0;           /* monotonic s: the window handed out */
  cl_ulong xfer_ns;         /* the windows' writes, device time */
  wv_ocl_buf part, part2, desc, result;

  /* hash exchange, decided at open (ocl_open.c) and per pack */
  int hash_shuffle;         /* 1 khr, 2 intel, 0 local */
  int hash_refused;         /* shuffle demanded but impossible */
  int has_uuid;             /* cl_khr_device_uuid */
  unsigned char uuid[16];
  int want_shuffle;         /* exchange: shuffle configured */
  unsigned hash_units;      /* units per work-group */
  uint64_t hash_batch;      /* nonces per batch suggested */
  char description[160];
  wv_exchange exchange;      /* the path caps report */
  char exchange_reason[200];
  void *hash_state;         /* ocl_hash.c */

  /* the wide program (ocl_reduce.c) */
  cl_program wide;
  cl_kernel kw[WV_OCL_WIDE_COUNT_];
  int fp64;                 /* float64 sums run: cl_khr_fp64, denormals,
                               round to nearest, and the probe agreed */
  char fp64_note[120];      /* why not, when fp64 is 0 */
};

/* ---- ocl_open.c ---------------------------------------------------------- */

extern const wv_backend wv_opencl_backend;

int wv_ocl_open_ex(const wv_device_config *cfg, const wv_ocl_options *opt,
                   wv_device **out, wave_error *err);
void wv_ocl_close(wv_device *d);

const char *wv_ocl_errname(cl_int e);
/* WAVE_EDEVICE "opencl: what: CL_..." */
int wv_ocl_fail(wave_error *err, cl_int e, const char *what);

/* Build program from sources with options; on failure the build log goes
 * into err (and stderr) and the program is released. */
int wv_ocl_build(wv_device *d, const char *const *src, unsigned nsrc,
                 const char *options, cl_program *out, wave_error *err);

/* The sub-group size the kernel gets for a 1-D work-group of `items`:
 * 0 with *how set when it was answered, -1 when no query is available
 * (then the caller may run a probe). */
int wv_ocl_kernel_subgroup(wv_device *d, cl_kernel k, size_t items,
                           size_t *size, const char **how);

int wv_ocl_buf_reserve(wv_device *d, wv_ocl_buf *b, size_t size,
                       wave_error *err);
void wv_ocl_buf_free(wv_ocl_buf *b);

/* Enqueue k over global items (a multiple of local). */
int wv_ocl_launch(wv_device *d, cl_kernel k, size_t global, size_t local,
                  cl_event *ev, wave_error *err);

/* ---- ocl_reduce.c -------------------------------------------------------- */

/* Every dtype and op (wv_dev_reduce has checked the job). */
int wv_ocl_reduce(wv_device *d, const wv_reduce_job *job, wv_reduce_out *out,
                  wave_error *err);
/* Build the wide program and decide fp64 (at open, after the base). */
int wv_ocl_wide_open(wv_device *d, wave_error *err);
void wv_ocl_wide_close(wv_device *d);
/* The base program's kernel names, in enum wv_ocl_kernel's order. */
extern const char *const wv_ocl_kernel_names[WV_OCL_KERNEL_COUNT_];
/* Benchmarks: reduce rows already in device buffer data (one chunk, no
 * mask; rows a multiple of 256); *seconds is device time from the queue's
 * profiling events.  stream: the streaming-read baseline. */
int wv_ocl_reduce_resident(wv_device *d, cl_mem data, uint64_t rows,
                           wave_dtype dtype, wave_op op, wv_reduce_out *out,
                           double *seconds, wave_error *err);
int wv_ocl_stream_resident(wv_device *d, cl_mem data, uint64_t rows,
                           double *seconds, wave_error *err);
/* Device seconds from a's start to b's end (profiling events). */
double wv_ocl_span(cl_event a, cl_event b);

/* ---- ocl_stage.c --------------------------------------------------------- */

/* The next staging window (the two taken in turn; its last write waited
 * for, grown to bytes): its index in *s, its host memory in *dst. */
int wv_ocl_window(wv_device *d, size_t bytes, unsigned *s,
                  unsigned char **dst, wave_error *err);
/* Send `bytes` of stage s to its device buffer (no wait).  The time from
 * wv_ocl_window to this call, the window's fill, counts as transfer. */
int wv_ocl_stage_send(wv_device *d, unsigned s, size_t bytes,
                      wave_error *err);
/* A reduction's transfer (wv_reduce_out.transfer_s): begin starts the
 * count (and drops, uncounted, the writes of an earlier job that ended in
 * an error); end gives the seconds since: the host's filling of the
 * windows (wall clock) plus the device's writes out of them (their
 * profiling events, read as each is waited for and the last ones at
 * end).  end adds no wait to a job that ended well: its result came back
 * by a blocking read on the same in-order queue, after every write. */
void wv_ocl_xfer_begin(wv_device *d);
double wv_ocl_xfer_end(wv_device *d);
/* Rows per staging window for rows of `size` bytes. */
uint64_t wv_ocl_wrows(const wv_device *d, unsigned size);
/* The staging buffers and the reductions' device buffers. */
void wv_ocl_reduce_free(wv_device *d);

/* A walk over a job's input and mask, by logical row. */
typedef struct wv_ocl_walk {
  const wv_reduce_job *job;
  unsigned size;     /* row bytes */
  size_t c;          /* input chunk */
  uint64_t off;      /* row within it */
  size_t mc;         /* mask chunk */
  uint64_t moff;
  uint64_t fill;     /* written for unselected rows (low bytes) */
  uint64_t selected;
} wv_ocl_walk;
/* Row i (size bytes) of data, as a word. */
uint64_t wv_ocl_word(const void *data, uint64_t i, unsigned size);
/* Put the walk at logical row `row` (input and mask). */
void wv_ocl_seek(wv_ocl_walk *w, uint64_t row);
/* The first selected row and its value; 0 when none is selected. */
int wv_ocl_first_selected(const wv_reduce_job *job, unsigned size,
                          uint64_t *row, uint64_t *v);
/* The next n rows of the stream (chunks as one, from the walk's place),
 * padded with the fill past the last row. */
void wv_ocl_stream(wv_ocl_walk *w, unsigned char *dst, uint64_t n);
/* The next n rows of the float sum's layout: every non-empty chunk on a
 * 256-row boundary, padded with the fill. */
void wv_ocl_fsum_window(wv_ocl_walk *w, unsigned char *dst, uint64_t n);

/* The float sum's later levels, planned on the host: pass p at pass_at[p]
 * with pass_n[p] descriptors (offset, length); esize: 4 (float) or 8
 * (double) bytes a value. */
typedef struct wv_ocl_seg {
  uint32_t off, len;
} wv_ocl_seg;
typedef struct wv_ocl_plan {
  uint32_t *desc;
  size_t n, cap;
  size_t passes;
  size_t pass_at[16], pass_n[16];
  uint32_t result;     /* index of the value in the last pass's output */
  size_t max_out;      /* largest pass output */
} wv_ocl_plan;
/* segs: each chunk's run of first-level values (clobbered). */
int wv_ocl_plan_make(wv_ocl_plan *pl, wv_ocl_seg *segs, size_t n,
                     wave_error *err);
int wv_ocl_plan_send(wv_device *d, const wv_ocl_plan *pl, size_t esize,
                     wave_error *err);
/* Run the passes (kernel kt) over the first-level values in d->part and
 * read the result (esize bytes) into v. */
int wv_ocl_plan_run(wv_device *d, const wv_ocl_plan *pl, cl_kernel kt,
                    size_t esize, void *v, cl_event *ev, wave_error *err);

/* ---- ocl_xsum.c ---------------------------------------------------------- */

struct wv_op_plan;
/* The exact float sum (plan p's path WV_PATH_XSUM; wv_dev_reduce has
 * checked the job): out->xsum, its rounding, the count. */
int wv_ocl_xsum(wv_device *d, const wv_reduce_job *job,
                const struct wv_op_plan *p, wv_reduce_out *out,
                wave_error *err);
/* Benchmarks: the same over rows already in device buffer data (one
 * chunk, no mask, rows a multiple of 4); *e0 and *e1 (may be NULL): the
 * first and the last launch's events. */
int wv_ocl_xsum_resident(wv_device *d, cl_mem data, uint64_t rows,
                         const struct wv_op_plan *p, wv_reduce_out *out,
                         cl_event *e0, cl_event *e1, wave_error *err);

/* ---- ocl_hash.c ---------------------------------------------------------- */

int wv_ocl_hash_prepare(wv_device *d, const struct wv_pack *pack,
                        wave_error *err);
int wv_ocl_hash(wv_device *d, const struct wv_pack *pack, uint64_t nonce,
                uint64_t count, uint64_t *out, wave_error *err);
int wv_ocl_hash_batch(wv_device *d, const struct wv_pack *pack,
                      struct wv_hash_batch *b, wave_error *err);
/* The hash kernel's source for pack with exchange ex (0 local, 1 khr,
 * 2 intel) and units per work-group: malloc'ed #define header (the source
 * itself is wv_ocl_src_hash). */
char *wv_ocl_hash_header(const struct wv_pack *pack, int ex, unsigned units);
extern const char wv_ocl_src_hash[];
/* Benchmarks: hash rate of [0, count) kept on the device (no read-back);
 * *seconds is device time. */
int wv_ocl_hash_resident(wv_device *d, const struct wv_pack *pack,
                         uint64_t count, double *seconds, wave_error *err);
void wv_ocl_hash_free(wv_device *d);

#endif
