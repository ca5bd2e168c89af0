/* gpu_internal.h - the pieces of the CUDA/HIP backend shared between its
 * files and with the GPU benchmarks (bench/gpu): the device-resident
 * reduction engine and the kernels' descriptor layouts.
 *
 * The reduction engine works on rows already in device memory.  The backend
 * (gpu_device.cu) feeds it slices copied from host memory; the benchmarks
 * call reduce_device() directly on device-resident data.  Everything here is
 * C++ in the vendor namespace (see gpu.h).
 */
#ifndef WV_GPU_INTERNAL_H
#define WV_GPU_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <string>

#include "workers/cuda/gpu.h"

extern "C" {
#include "core/base.h"
#include "core/reduce.h"
#include "workers/worker.h"
}

/* The float-sum tree in device terms: a unit reduces one group of 256 rows
 * (level 1); the 8 blocks of a tile (256 groups) end in one level-2
 * partial; the last tile of a piece (<= 256 tiles, 2^24 rows) folds the
 * piece's level-2 partials into one level-3 partial.  Because G of one value
 * padded with -0.0 is that value, a chunk's sum is the same 256-ary tree of
 * any sufficient depth, so pieces cut at multiples of 2^24 rows of a chunk
 * and then folded again give exactly the levels of docs/reduction.md. */
/* hash_batch works in sub-batches cut at absolute multiples of 2^24 nonces
 * (gpu_seg.cu); the batch size (hash_batch()) is a multiple of it. */
#define WVG_SEG_SUB_LOG2 24u
#define WVG_TILE_ROWS 65536u            /* rows per tile (one level-2 value) */
#define WVG_PIECE_ROWS (1u << 24)       /* rows per piece (one level-3 value) */
#define WVG_PIECE_TILES 256u
#define WVG_TILE_BLOCKS 8u              /* blocks per tile, 32 groups each */
#define WVG_BLOCK 256u                  /* threads per block, every kernel */

/* "No index": a (key, index) pair that has seen no row. */
#define WVG_NOIDX 0xffffffffffffffffull

/* Return a runtime error from a function that returns cudaError_t. */
#define WVG_TRY(call)                                                          \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      return e_;                                                               \
  } while (0)

namespace WVG_NS {

/* A tile of the float sum: rows [buf_row, buf_row + rows) of the slot's
 * buffer (buf_row % 4 == 0, rows <= WVG_TILE_ROWS), part of piece `piece`
 * (an index into the slice's piece table). */
struct tile_desc {
  uint32_t buf_row, rows, piece, pad;
};
/* A piece: tiles [first_tile, first_tile + ntiles) of the slice; its level-3
 * value goes to pieces_out[out]. */
struct piece_desc {
  uint32_t first_tile, ntiles, out, pad;
};

/* The job's result in device memory, read back once at the end. */
struct result {
  uint32_t a, b;              /* value; extent: a = min key, b = max key */
  unsigned long long count;   /* selected rows (jobs with a mask) */
};

/* Kernel-level operation, from the op table's plan (kernel_op). */
enum kop { K_SUM, K_MIN, K_MAX, K_EXT, K_AND, K_OR, K_XOR, K_FSUM, K_ARGMIN,
           K_ARGMAX, K_XSUM };
/* How a row becomes an ordered key: the plan's key kind (core/optable.h):
 * as is (unsigned, and every op that orders nothing), sign-biased, or the
 * float total order (NaN/inf excluded). */
enum kkey { KEY_RAW = WV_KEY_RAW, KEY_S32 = WV_KEY_SIGNED,
            KEY_F32 = WV_KEY_FLOAT };

#if defined(__CUDACC__) || defined(__HIPCC__)
/* ---- the order-free fold at either row width (K: uint32_t for k_int,
 * unsigned long long for k_w64 and k_arg's 8-byte rows) ---------------- */

template <int OP, typename K> __device__ __forceinline__ K ident()
{
  return (OP == K_MIN || OP == K_EXT || OP == K_AND) ? (K)~(K)0 : (K)0;
}

/* The order key of row x under key kind KEY, and whether it takes part
 * (floats: finite rows only).  Floats: bits b with the sign set map to ~b,
 * others to b | sign, so unsigned order is numeric order, -0.0 < +0.0. */
template <int KEY, typename K>
__device__ __forceinline__ K row_key(K x, bool *ok)
{
  const K sign = (K)1 << (sizeof(K) * 8 - 1);
  if (KEY == KEY_F32) {
    const K exp = sizeof(K) == 4 ? (K)0x7f800000u : (K)0x7ff0000000000000ull;
    *ok = (x & exp) != exp;
    return (x & sign) ? ~x : (x | sign);
  }
  *ok = true;
  return KEY == KEY_S32 ? x ^ sign : x;
}

template <int OP, typename K>
__device__ __forceinline__ void fold(K &a, K &b, K k)
{
  switch (OP) {
  case K_SUM: a += k; break;
  case K_MIN: a = min(a, k); break;
  case K_MAX: a = max(a, k); break;
  case K_EXT: a = min(a, k); b = max(b, k); break;
  case K_AND: a &= k; break;
  case K_OR: a |= k; break;
  case K_XOR: a ^= k; break;
  }
}

/* Merge a partial (a2, b2) into (a, b).  For extent a is a min and b a max:
 * folding a2 into both, as for a row, would let the min identity (all
 * ones) of an empty partial become the max. */
template <int OP, typename K>
__device__ __forceinline__ void combine(K &a, K &b, K a2, K b2)
{
  if (OP == K_EXT) {
    a = min(a, a2);
    b = max(b, b2);
  } else {
    fold<OP>(a, b, a2);
  }
}
#endif

/* The float-sum tree's device buffers (T: float or double), grown on
 * demand between jobs, never shrunk (gpu_tree.cu). */
template <typename T> struct tree_bufs {
  T *l1;                      /* level-1 values of one launch, 256/tile */
  size_t l1_cap;
  uint32_t *tile_ctr;         /* per-tile last-block counters, kept at 0 */
  size_t tile_ctr_cap;
  T *l2;                      /* level-2 partials of one launch */
  size_t l2_cap;
  uint32_t *piece_ctr;        /* per-piece last-block counters, kept at 0 */
  size_t piece_ctr_cap;
  T *pieces;                  /* level-3 partials of a whole job */
  size_t pieces_cap;
  uint32_t *seg;              /* chunk -> first piece, [nchunks + 1] */
  size_t seg_cap;
  T *scratch;                 /* finish: chunk values, 2 x nchunks */
  size_t scratch_cap;
};

/* Device-side scratch of one device: grown on demand, never shrunk. */
struct reducer {
  int sms;
  unsigned int_blocks;        /* grid of the integer kernel (fills the GPU) */
  uint4 *partials;            /* [int_blocks] per-block partials */
  uint32_t *ticket;           /* last-block counter, kept at 0 between runs */
  result *res;
  tree_bufs<float> tree;      /* the float32 sum's (gpu_tree.cu) */
};

/* kernel_op, reducer_fini, reducer_reserve and the decoders are in
 * gpu_reducer.cu; reducer_init and the launches in gpu_reduce.cu. */

/* The kernel op of an op-table plan (its key is p->key). */
int kernel_op(const wv_op_plan *p);

cudaError_t reducer_init(reducer *r);
void reducer_fini(reducer *r);
/* Make room for `tiles` tiles, `pieces` pieces per launch and a job of
 * `job_pieces` pieces in `chunks` chunks. */
cudaError_t reducer_reserve(reducer *r, size_t tiles, size_t pieces,
                            size_t job_pieces, size_t chunks);

/* One launch of the integer/min/max kernel over rows [0, n) of d_rows (and
 * d_mask, parallel to it, or NULL).  first: start the job's result; else
 * fold into it.  d_rows must be 16-byte aligned. */
cudaError_t launch_int(reducer *r, int kop, int key, const void *d_rows,
                       const uint32_t *d_mask, uint64_t n, int first,
                       cudaStream_t st);
/* The float-sum tree (gpu_tree.cu), for T float (R result) and double
 * (R wresult).  launch_tree: one launch of the tile kernel.  Table mode:
 * tiles/pieces are device copies of ntiles/npieces descriptors.
 * Arithmetic mode (tiles == NULL): the rows [0, n) of one chunk, pieces
 * numbered from 0.  Level-3 values go to pieces_out; selected-row counts
 * add to res->count. */
template <typename T>
cudaError_t tree_reserve(tree_bufs<T> *b, size_t tiles, size_t pieces,
                         size_t job_pieces, size_t chunks);
template <typename T> void tree_free(tree_bufs<T> *b);
template <typename T, typename R>
cudaError_t launch_tree(tree_bufs<T> *b, R *res, const T *d_rows,
                        const uint32_t *d_mask, uint64_t n,
                        const tile_desc *tiles, uint32_t ntiles,
                        const piece_desc *pieces, T *pieces_out,
                        cudaStream_t st);
/* Fold the job's level-3 values (b->pieces) into res->a: per chunk
 * (seg[c] .. seg[c + 1]; seg NULL = one chunk of npieces), then across
 * chunks. */
template <typename T, typename R>
cudaError_t launch_tree_finish(tree_bufs<T> *b, R *res, const uint32_t *seg,
                               uint32_t nchunks, uint32_t npieces,
                               cudaStream_t st);
/* The float sum of n device-resident rows (one chunk) into res. */
template <typename T, typename R>
cudaError_t tree_device(tree_bufs<T> *b, R *res, const T *d_rows,
                        const uint32_t *d_mask, uint64_t n, cudaStream_t st);

/* Reduce n device-resident rows (one chunk) into r->res, all on stream st
 * with no host synchronisation (benchmarks time this). */
cudaError_t reduce_device(reducer *r, wave_dtype d, wave_op op,
                          const void *d_rows, const uint32_t *d_mask,
                          uint64_t n, cudaStream_t st);

/* The host's last step: the result read back, made into output bits
 * (key decoding, empty-input zeros, NaN canonicalisation) on plan p.
 * a, b: the kernels' value or keys (extent: min, max); idx: argmin/argmax's
 * row (WVG_NOIDX: none). */
void decode_plan(const wv_op_plan *p, uint64_t a, uint64_t b, uint64_t idx,
                 uint64_t count, wv_reduce_out *out);
void decode_result(wave_dtype d, wave_op op, const result *res,
                   uint64_t count, wv_reduce_out *out);

/* ---- the device context (gpu_device.cu, gpu_hash.cu) -------------------- */

/* Host-to-device slices: SLICE_ROWS rows of input and of mask plus the
 * float-sum tables, double-buffered.  A slice is 2^24 rows so that a whole
 * float-sum piece always fits in one. */
#define WVG_SLICE_ROWS WVG_PIECE_ROWS
#define WVG_SLICE_PAD 256u              /* rows read past a partial group */
#define WVG_MAX_PIECES 4096u            /* pieces per slice (tiny chunks) */
#define WVG_MAX_TILES (WVG_PIECE_TILES + WVG_MAX_PIECES)
#define WVG_DATA_BYTES ((size_t)(WVG_SLICE_ROWS + WVG_SLICE_PAD) * 4)
#define WVG_MASK_OFF WVG_DATA_BYTES
#define WVG_TILES_OFF (2 * WVG_DATA_BYTES)
#define WVG_PIECES_OFF (WVG_TILES_OFF + WVG_MAX_TILES * sizeof(tile_desc))
#define WVG_SLOT_BYTES (WVG_PIECES_OFF + WVG_MAX_PIECES * sizeof(piece_desc))

struct slot {
  unsigned char *h;           /* pinned staging */
  unsigned char *d;           /* device copy */
  cudaEvent_t copied;         /* the H2D copy out of h has finished */
  cudaEvent_t done;           /* the kernels reading d have finished */
  cudaEvent_t sent0, sent1;   /* timed: around the slice's H2D copies */
  int timed;                  /* sent0/sent1 hold copies not yet counted */
};

struct copy_op {
  void *dst;
  const void *src;
  size_t len;
};

/* Helper threads for host memcpy into pinned staging (a single core copies
 * far slower than a pinned DMA moves). */
struct copy_pool {
  int nthreads;               /* helpers; the device thread takes a share */
  pthread_t th[16];
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  unsigned long gen;
  int stop, pending;
  const copy_op *ops;
  size_t nops, total;
};

struct hseg;                  /* gpu_seg.cu: the device fold's buffers */
struct wreducer;              /* gpu_wide.h: 64-bit dtypes, argmin/argmax */
struct xreducer;              /* gpu_xsum.h: the exact sum, fsum */
struct hjit;                  /* gpu_jit.cu: a pack's compiled kernel */

/* A pack made ready on this device by hash_prepare. */
struct hpack {
  const struct wv_pack *pack;
  uint64_t *d_dataset;        /* NULL for closed packs */
  hjit *jit;                  /* the pack's own kernel, NULL: interpreter */
};

struct gdev {
  int index;
  char name[320];
  int major, minor, sms, warp;
  size_t mem;
  cudaStream_t copy, compute;
  slot slots[2];
  reducer red;
  wreducer *wide;             /* NULL until the first wide job */
  xreducer *xs;               /* NULL until the first fsum job */
  result *h_res;              /* pinned */
  uint32_t *h_seg;            /* pinned, chunk -> first piece */
  size_t h_seg_cap;
  copy_pool pool;
  /* the running reduction's transfer (gpu_device.cu: xfer_begin/end) */
  double xfer_host;           /* s: pool_copy into staging, wall clock */
  double xfer_dev;            /* s: the H2D copies, by the sent events */
  /* hash */
  int local;                  /* exchange path: 1 local memory, 0 shuffle */
  char exchange_reason[200];
  unsigned group_units;       /* units per block */
  hpack packs[16];
  int npacks;
  const struct wv_pack *loaded; /* program now in its constant slot */
  int hp_slot;                /* that slot (gpu_hash.cu), -1 none */
  double hash_rate;           /* measured hashes per second, 0 = unknown */
  unsigned char uuid[16];     /* cudaDeviceProp.uuid (= Vulkan's deviceUUID) */
  int jit;                    /* compile a kernel per pack (gpu_jit.cu) */
  int jit_unroll;             /* ... with the rounds unrolled too */
  unsigned jit_minblocks;     /* __launch_bounds__ min blocks, 0 = none */
  char jit_note[160];         /* which kernel the packs got */
  int jit_packs, jit_fell_back;
  hseg *seg;                  /* NULL until the first hash_batch */
};

/* A CUDA error as a wavedd error: WAVE_EDEVICE with the runtime's text. */
int dev_fail(wave_error *err, const char *what, cudaError_t e);

/* The staging copy threads (gpu_pool.cu). */
int pool_start(copy_pool *p, int nthreads);
void pool_stop(copy_pool *p);
void pool_copy(copy_pool *p, const copy_op *ops, size_t nops);

/* Hash side of the backend (gpu_hash.cu). */
void hash_init(gdev *g, const wv_device_config *cfg);
void hash_fini(gdev *g);
uint64_t hash_batch(const gdev *g);
int hash_prepare(gdev *g, const struct wv_pack *pack, wave_error *err);
int hash_run(gdev *g, const struct wv_pack *pack, uint64_t nonce,
             uint64_t count, uint64_t *out, wave_error *err);
/* Benchmarks: hash into device memory d_out on g->compute, no copy back. */
int hash_device(gdev *g, const struct wv_pack *pack, uint64_t nonce,
                uint64_t count, uint64_t *d_out, wave_error *err);
/* The hash_batch slot (gpu_seg.cu): hash, fold into segment fingerprints,
 * winners and best on the device, copy back only those (and the outputs
 * when b->outputs is set). */
int hash_fold_batch(gdev *g, const struct wv_pack *pack,
                    struct wv_hash_batch *b, wave_error *err);
void seg_fini(gdev *g);     /* from hash_fini */

/* Per-pack kernels (gpu_jit.cu).  jit_build: compile pack p for g's
 * architecture and exchange path, blocks of `threads` threads; 0, or -1
 * with the reason in why (the caller falls back to the interpreter). */
int jit_available(void);      /* libnvrtc found (opened once) */
const char *jit_missing(void); /* why not, "" when it is */
#if defined(WV_HAVE_NVRTC) && !defined(WV_GPU_HIP)
/* The pack's kernel source compiled to a cubin for sm_<major><minor>; needs
 * no GPU (tests/cuda/test_cuda_jit.cu). */
int jit_compile(const struct wv_pack *p, int local, unsigned threads,
                int unroll, unsigned minblocks, int major, int minor,
                std::string *cubin, char *why, size_t whylen);
#endif
int jit_build(gdev *g, const struct wv_pack *p, unsigned threads, hjit **out,
              char *why, size_t whylen);
/* k_hash's arguments and launch shape (smem: the local path's X[2][G]). */
cudaError_t jit_launch(const hjit *j, unsigned blocks, unsigned threads,
                       size_t smem, cudaStream_t st, const uint64_t *data,
                       uint64_t u0, uint64_t nunits, uint64_t nonce,
                       uint64_t count, uint64_t *out);
void jit_free(hjit *j);

} /* namespace WVG_NS */

#endif
