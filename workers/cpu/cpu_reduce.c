/* cpu_reduce.c - reductions on the CPU, on all of the device's threads.
 *
 * Work split.  Every non-empty input chunk is cut into items of 65536 rows
 * (the last item of a chunk may be shorter), starting at the chunk's first
 * row; items are batched into pool tasks of at least 65536 rows so that a
 * job of many tiny chunks does not cost one task per chunk.
 *
 * Integer ops and float min/max/extent are order-independent
 * (docs/reduction.md), so each item keeps a partial (an accumulator, or the
 * smallest and largest "order key") and the partials are combined in any
 * order.  The loops are plain C over memcpy loads that GCC vectorizes; the
 * hot functions are built twice (AVX2 and baseline) and picked at load time
 * with target_clones.  Float min/max map every finite float to an unsigned
 * key that orders like the documented total order (-0.0 < +0.0), and give
 * NaN/inf/masked rows the key that can never win.
 *
 * The 64-bit dtypes and argmin/argmax run in cpu_wide.c.
 *
 * Float sum follows the fixed tree exactly.  An item is 65536 = 256 x 256
 * rows, i.e. 256 whole level-1 groups, i.e. exactly one level-2 group: the
 * item computes its 256 level-1 values with the vector group kernel and
 * folds them straight into its level-2 value (fusing two levels).  Items
 * start at multiples of 65536 within their chunk, so item j of a chunk IS
 * value j of the chunk's level 2.  The remaining levels of each chunk
 * (n / 65536 values) and the merge of the chunk values are small and run on
 * the calling thread: the items are partials, merged by core/partial.c.  A chunk of <= 256 rows
 * has only level 1 (its single group is its value).
 *
 * The group kernel holds 256 leaves as 32 vectors of 8 floats: the folds
 * h = 128 .. 8 of G are vertical adds of vector i and vector i + h/8 (a
 * vector add is 8 independent IEEE adds, so lane j of that add is exactly
 * v[8i + j] + v[8i + j + h]), the folds 4, 2, 1 are scalar adds in the
 * documented order.  Masked rows become -0.0 at the leaves by a bit
 * select.  Built with -ffp-contract=off and without -ffast-math, so every
 * add is one binary32 add in the given order.
 */
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/partial.h"
#include "core/reduce.h"
#include "workers/cpu/cpu.h"

#define CR_ITEM_ROWS 65536u  /* WV_GROUP * WV_GROUP: one level-2 group */

/* ThreadSanitizer instruments ifunc resolvers, which run before it is set
 * up: no clones under TSan. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__)
#define CR_HAVE_CLONES 1
#define CR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CR_HAVE_CLONES 0
#define CR_CLONES
#endif
#define CR_INLINE static inline __attribute__((always_inline))

typedef float cr_v8f __attribute__((vector_size(32)));
typedef uint32_t cr_v8u __attribute__((vector_size(32)));

unsigned wv_cpu_simd_lanes(void)
{
#if CR_HAVE_CLONES
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? 8 : 4;
#else
  return 4;
#endif
}

typedef struct cr_item {
  size_t chunk;      /* input chunk */
  uint64_t start;    /* first row within the chunk, a multiple of 65536 */
  uint64_t rows;     /* <= CR_ITEM_ROWS */
  uint64_t lrow;     /* logical row of start (mask index) */
  uint32_t a, b;     /* accumulator, or lo/hi keys */
  float v;           /* float sum: the item's level-2 (or level-1) value */
  uint64_t count;
} cr_item;

enum { CR_ACC, CR_KEYS, CR_FSUM };

typedef struct cr_ctx {
  const wv_reduce_job *job;
  int kind;            /* CR_ACC, CR_KEYS or CR_FSUM */
  cr_item *items;
  size_t n_items;
  size_t *task_first;  /* task t = items [task_first[t], task_first[t+1]) */
  size_t n_tasks;
  uint64_t *mbase;     /* mask chunk i = logical rows [mbase[i], mbase[i+1]) */
} cr_ctx;

CR_INLINE uint32_t cr_ld(const unsigned char *p, size_t i)
{
  uint32_t x;
  memcpy(&x, p + 4 * i, sizeof x);
  return x;
}

/* ---- mask access ------------------------------------------------------- */

/* Mask rows from logical row `row`: a pointer into the mask chunk holding
 * it and, in *avail, how many rows of that chunk are left from there.  *k
 * is the caller's cursor (a chunk index), tried before a binary search. */
static const unsigned char *cr_mask_run(const cr_ctx *c, uint64_t row,
                                        size_t *k, uint64_t *avail)
{
  const uint64_t *mb = c->mbase;
  size_t i = *k;
  if (!(mb[i] <= row && row < mb[i + 1])) {
    if (mb[i + 1] == row && i + 1 < c->job->n_mask && row < mb[i + 2]) {
      i++;                                   /* the common step forward */
    } else {
      size_t lo = 0, hi = c->job->n_mask;    /* first i: mb[i + 1] > row */
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (mb[mid + 1] > row)
          hi = mid;
        else
          lo = mid + 1;
      }
      i = lo;
    }
  }
  *k = i;
  *avail = mb[i + 1] - row;
  return (const unsigned char *)c->job->mask[i].data + 4 * (row - mb[i]);
}

/* n contiguous mask rows from `row`; copied into buf only when they straddle
 * mask chunks. */
static const unsigned char *cr_mask_rows(const cr_ctx *c, uint64_t row,
                                         size_t n, size_t *k,
                                         unsigned char *buf)
{
  uint64_t avail;
  const unsigned char *m = cr_mask_run(c, row, k, &avail);
  if (avail >= n)
    return m;
  for (size_t done = 0; done < n;) {
    m = cr_mask_run(c, row + done, k, &avail);
    size_t take = avail < n - done ? (size_t)avail : n - done;
    memcpy(buf + 4 * done, m, 4 * take);
    done += take;
  }
  return buf;
}

/* ---- order-independent ops -------------------------------------------- */

CR_INLINE uint32_t cr_combine(int op, uint32_t a, uint32_t x)
{
  switch (op) {
  case WAVE_SUM: return a + x;
  case WAVE_AND: return a & x;
  case WAVE_OR:  return a | x;
  default:       return a ^ x;
  }
}

CR_INLINE void cr_acc_loop(int op, const unsigned char *p,
                           const unsigned char *m, size_t n, uint32_t *acc,
                           uint64_t *count)
{
  uint32_t a = *acc;
  if (m == NULL) {
    for (size_t i = 0; i < n; i++)
      a = cr_combine(op, a, cr_ld(p, i));
  } else {
    const uint32_t id = op == WAVE_AND ? 0xffffffffu : 0;
    uint32_t c = 0;  /* n <= CR_ITEM_ROWS */
    for (size_t i = 0; i < n; i++) {
      uint32_t sel = (uint32_t)(cr_ld(m, i) != 0);
      uint32_t s = 0u - sel;
      a = cr_combine(op, a, (cr_ld(p, i) & s) | (id & ~s));
      c += sel;
    }
    *count += c;
  }
  *acc = a;
}

CR_CLONES static void cr_k_acc(int op, const unsigned char *p,
                               const unsigned char *m, size_t n,
                               uint32_t *acc, uint64_t *count)
{
  /* Constant op and mask-or-not per loop, so that each is vectorized. */
  if (m == NULL) {
    switch (op) {
    case WAVE_SUM: cr_acc_loop(WAVE_SUM, p, NULL, n, acc, count); break;
    case WAVE_AND: cr_acc_loop(WAVE_AND, p, NULL, n, acc, count); break;
    case WAVE_OR:  cr_acc_loop(WAVE_OR, p, NULL, n, acc, count); break;
    default:       cr_acc_loop(WAVE_XOR, p, NULL, n, acc, count); break;
    }
  } else {
    switch (op) {
    case WAVE_SUM: cr_acc_loop(WAVE_SUM, p, m, n, acc, count); break;
    case WAVE_AND: cr_acc_loop(WAVE_AND, p, m, n, acc, count); break;
    case WAVE_OR:  cr_acc_loop(WAVE_OR, p, m, n, acc, count); break;
    default:       cr_acc_loop(WAVE_XOR, p, m, n, acc, count); break;
    }
  }
}

/* Order key: unsigned comparison of keys = the dtype's order.  For floats
 * the sign-magnitude bits become an offset-binary number (negative: all
 * bits flipped; positive: sign bit set), so -0.0 (0x7fffffff) sorts just
 * below +0.0 (0x80000000).  Finite keys lie in [0x00800000, 0xff7fffff], so
 * 0xffffffff / 0 mean "no finite value" for lo / hi. */
CR_INLINE uint32_t cr_key(wave_dtype dt, uint32_t x)
{
  if (dt == WAVE_U32)
    return x;
  if (dt == WAVE_S32)
    return x ^ 0x80000000u;
  return x ^ ((0u - (x >> 31)) | 0x80000000u);
}

static uint32_t cr_unkey(wave_dtype dt, uint32_t k)
{
  if (dt == WAVE_U32)
    return k;
  if (dt == WAVE_S32)
    return k ^ 0x80000000u;
  return (k & 0x80000000u) ? k ^ 0x80000000u : ~k;
}

/* Branch-free (all-ones / zero masks) so that GCC vectorizes both loops. */
CR_INLINE void cr_keys_loop(wave_dtype dt, const unsigned char *p,
                            const unsigned char *m, size_t n, uint32_t *plo,
                            uint32_t *phi, uint64_t *count)
{
  uint32_t lo = *plo, hi = *phi, c = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = cr_ld(p, i);
    uint32_t k = cr_key(dt, x);
    uint32_t ok = 0xffffffffu;
    if (dt == WAVE_F32)  /* finite */
      ok = 0u - (uint32_t)((x & 0x7f800000u) != 0x7f800000u);
    if (m != NULL) {
      uint32_t sel = (uint32_t)(cr_ld(m, i) != 0);
      c += sel;
      ok &= 0u - sel;
    }
    uint32_t kl = (k & ok) | ~ok, kh = k & ok;
    lo = kl < lo ? kl : lo;
    hi = kh > hi ? kh : hi;
  }
  *plo = lo;
  *phi = hi;
  if (m != NULL)
    *count += c;
}

CR_CLONES static void cr_k_keys(wave_dtype dt, const unsigned char *p,
                                const unsigned char *m, size_t n,
                                uint32_t *lo, uint32_t *hi, uint64_t *count)
{
  /* Constant dtype and mask-or-not per loop: six loops, all vectorized. */
  if (m == NULL) {
    switch (dt) {
    case WAVE_U32: cr_keys_loop(WAVE_U32, p, NULL, n, lo, hi, count); break;
    case WAVE_S32: cr_keys_loop(WAVE_S32, p, NULL, n, lo, hi, count); break;
    default:       cr_keys_loop(WAVE_F32, p, NULL, n, lo, hi, count); break;
    }
  } else {
    switch (dt) {
    case WAVE_U32: cr_keys_loop(WAVE_U32, p, m, n, lo, hi, count); break;
    case WAVE_S32: cr_keys_loop(WAVE_S32, p, m, n, lo, hi, count); break;
    default:       cr_keys_loop(WAVE_F32, p, m, n, lo, hi, count); break;
    }
  }
}

static void cr_item_scan(const cr_ctx *c, cr_item *it)
{
  const wv_reduce_job *job = c->job;
  const unsigned char *p =
      (const unsigned char *)job->input[it->chunk].data + 4 * it->start;
  int acc = c->kind == CR_ACC;
  it->a = acc ? (job->op == WAVE_AND ? 0xffffffffu : 0) : 0xffffffffu;
  it->b = 0;
  it->count = 0;
  if (!job->has_mask) {
    if (acc)
      cr_k_acc(job->op, p, NULL, it->rows, &it->a, &it->count);
    else
      cr_k_keys(job->dtype, p, NULL, it->rows, &it->a, &it->b, &it->count);
    it->count = it->rows;
    return;
  }
  size_t k = 0;
  for (uint64_t off = 0; off < it->rows;) {
    uint64_t avail;
    const unsigned char *m = cr_mask_run(c, it->lrow + off, &k, &avail);
    size_t n = avail < it->rows - off ? (size_t)avail : it->rows - off;
    if (acc)
      cr_k_acc(job->op, p + 4 * off, m, n, &it->a, &it->count);
    else
      cr_k_keys(job->dtype, p + 4 * off, m, n, &it->a, &it->b, &it->count);
    off += n;
  }
}

/* ---- float sum ---------------------------------------------------------- */

/* G over 256 leaves at p; with a mask m, unselected rows are -0.0 and the
 * selected ones are counted into *vc (one lane count per vector lane).
 * The leaves are first read front to back into an L1-resident copy: on the
 * machines measured, reading input and mask strictly in order is up to
 * twice as fast as loading the two halves of the group in step (which is
 * what the first fold pairs up). */
CR_INLINE float cr_group(const unsigned char *p, const unsigned char *m,
                         cr_v8u *vc)
{
  cr_v8u l[32] __attribute__((aligned(32)));
  if (m == NULL) {
    memcpy(l, p, sizeof l);
  } else {
    for (int i = 0; i < 32; i++) {
      cr_v8u x, mx;
      memcpy(&x, p + 32 * i, sizeof x);
      memcpy(&mx, m + 32 * i, sizeof mx);
      cr_v8u sx = (cr_v8u)(mx != 0);  /* ~0 or 0 */
      l[i] = (x & sx) | (~sx & WV_F32_NEG_ZERO);
      *vc -= sx;
    }
  }
  cr_v8f a[16];
  for (int i = 0; i < 16; i++)     /* fold 128: rows i and i + 128 */
    a[i] = (cr_v8f)l[i] + (cr_v8f)l[i + 16];
  for (int h = 8; h >= 1; h /= 2)  /* folds 64, 32, 16, 8 */
    for (int i = 0; i < h; i++)
      a[i] = a[i] + a[i + h];
  float w[8];
  memcpy(w, &a[0], sizeof w);
  float b0 = w[0] + w[4], b1 = w[1] + w[5], b2 = w[2] + w[6],
        b3 = w[3] + w[7];                             /* fold 4 */
  float c0 = b0 + b2, c1 = b1 + b3;                   /* fold 2 */
  return c0 + c1;                                     /* fold 1 */
}

CR_CLONES static void cr_item_fsum(const cr_ctx *c, cr_item *it)
{
  const wv_reduce_job *job = c->job;
  const wv_span *ch = &job->input[it->chunk];
  const unsigned char *base = (const unsigned char *)ch->data + 4 * it->start;
  size_t ng = (size_t)((it->rows + WV_GROUP - 1) / WV_GROUP);
  float part[WV_GROUP];
  unsigned char mbuf[4 * WV_GROUP];
  cr_v8u vc = {0};
  uint64_t tail_count = 0;
  size_t k = 0;

  for (size_t g = 0; g < ng; g++) {
    uint64_t off = (uint64_t)g * WV_GROUP;
    size_t len = it->rows - off < WV_GROUP ? (size_t)(it->rows - off)
                                           : WV_GROUP;
    const unsigned char *p = base + 4 * off;
    const unsigned char *m = NULL;
    if (job->has_mask)
      m = cr_mask_rows(c, it->lrow + off, len, &k, mbuf);
    if (len == WV_GROUP) {
      part[g] = cr_group(p, m, &vc);
      continue;
    }
    /* The chunk's last group: leaves, then -0.0 padding. */
    uint32_t leaves[WV_GROUP];
    for (size_t j = 0; j < WV_GROUP; j++) {
      uint32_t sel = j < len && (m == NULL || cr_ld(m, j) != 0);
      leaves[j] = sel ? cr_ld(p, j) : WV_F32_NEG_ZERO;
      tail_count += sel;
    }
    part[g] = cr_group((const unsigned char *)leaves, NULL, &vc);
  }

  if (ch->rows <= WV_GROUP) {
    it->v = part[0];  /* the chunk has level 1 only */
  } else {
    for (size_t g = ng; g < WV_GROUP; g++)
      part[g] = -0.0f;
    it->v = cr_group((const unsigned char *)part, NULL, &vc);
  }
  if (job->has_mask) {
    uint64_t n = tail_count;
    for (int i = 0; i < 8; i++)
      n += vc[i];
    it->count = n;
  } else {
    it->count = it->rows;
  }
}

/* ---- the job ------------------------------------------------------------ */

static void cr_task(void *arg, size_t task, unsigned worker)
{
  (void)worker;
  cr_ctx *c = arg;
  for (size_t i = c->task_first[task]; i < c->task_first[task + 1]; i++) {
    if (c->kind == CR_FSUM)
      cr_item_fsum(c, &c->items[i]);
    else
      cr_item_scan(c, &c->items[i]);
  }
}

static int cr_plan(cr_ctx *c, wave_error *err)
{
  const wv_reduce_job *job = c->job;
  size_t n = 0;
  for (size_t i = 0; i < job->n_input; i++)
    n += (size_t)((job->input[i].rows + CR_ITEM_ROWS - 1) / CR_ITEM_ROWS);
  c->items = malloc(n * sizeof *c->items);
  c->task_first = malloc((n + 1) * sizeof *c->task_first);
  if (job->has_mask)
    c->mbase = malloc((job->n_mask + 1) * sizeof *c->mbase);
  if (c->items == NULL || c->task_first == NULL ||
      (job->has_mask && c->mbase == NULL))
    return wv_seterr(err, WAVE_ENOMEM, "cpu reduce: plan of %zu items", n);

  if (job->has_mask) {
    c->mbase[0] = 0;
    for (size_t i = 0; i < job->n_mask; i++)
      c->mbase[i + 1] = c->mbase[i] + job->mask[i].rows;
  }
  uint64_t lrow = 0, task_rows = 0;
  c->n_items = 0;
  c->n_tasks = 0;
  for (size_t i = 0; i < job->n_input; i++) {
    for (uint64_t s = 0; s < job->input[i].rows; s += CR_ITEM_ROWS) {
      uint64_t r = job->input[i].rows - s;
      cr_item *it = &c->items[c->n_items];
      *it = (cr_item){.chunk = i, .start = s, .lrow = lrow,
                      .rows = r < CR_ITEM_ROWS ? r : CR_ITEM_ROWS};
      if (task_rows == 0)
        c->task_first[c->n_tasks++] = c->n_items;
      c->n_items++;
      task_rows += it->rows;
      if (task_rows >= CR_ITEM_ROWS)
        task_rows = 0;
      lrow += it->rows;
    }
  }
  c->task_first[c->n_tasks] = c->n_items;
  return 0;
}

/* Item i is the level-2 partial of its chunk's rows (a piece of 256^2
 * rows, docs/reduction.md "Partials"): the items merge with core/partial.c
 * (per chunk the remaining levels, then the levels over the chunk values). */
static int cr_fsum_finish(cr_ctx *c, wv_reduce_out *out, wave_error *err)
{
  wv_partial_acc a;
  int rc = wv_partial_init(&a, WAVE_F32, WAVE_SUM, c->n_items, err);
  for (size_t i = 0; rc == 0 && i < c->n_items; i++) {
    wv_partial p = {.chunk = c->items[i].chunk, .count = c->items[i].count};
    memcpy(&p.bits[0], &c->items[i].v, sizeof p.bits[0]);
    rc = wv_partial_add(&a, &p, err);
  }
  if (rc == 0)
    wv_partial_result(&a, out, NULL);
  wv_partial_fini(&a);
  return rc;
}

int wv_cpu_reduce(wv_device *dev, const wv_reduce_job *job,
                  wv_reduce_out *out, wave_error *err)
{
  if (wv_reduce_is_wide(job->dtype, job->op))  /* 64-bit, argmin/argmax */
    return wv_cpu_reduce_wide(dev, job, out, err);
  memset(out, 0, sizeof *out);
  out->n_values = wave_op_values(job->op);
  if (job->rows == 0)
    return 0;  /* empty: zeros, count 0 */

  cr_ctx c = {.job = job};
  if (job->dtype == WAVE_F32 && job->op == WAVE_SUM)
    c.kind = CR_FSUM;
  else if (job->op == WAVE_MIN || job->op == WAVE_MAX ||
           job->op == WAVE_EXTENT)
    c.kind = CR_KEYS;
  else
    c.kind = CR_ACC;
  int rc = cr_plan(&c, err);
  if (rc == 0)
    wv_cpu_pool_run(dev, c.n_tasks, cr_task, &c);

  uint64_t count = 0;
  if (rc == 0 && c.kind == CR_FSUM) {
    rc = cr_fsum_finish(&c, out, err);
    count = out->count;
  } else if (rc == 0) {
    uint32_t a = job->op == WAVE_AND ? 0xffffffffu : 0;
    uint32_t lo = 0xffffffffu, hi = 0;
    for (size_t i = 0; i < c.n_items; i++) {
      const cr_item *it = &c.items[i];
      count += it->count;
      if (c.kind == CR_ACC) {
        a = cr_combine(job->op, a, it->a);
      } else {
        lo = it->a < lo ? it->a : lo;
        hi = it->b > hi ? it->b : hi;
      }
    }
    /* Empty, or (floats) no finite row: zeros.  For integers count > 0
     * means lo/hi hold real keys. */
    int none = count == 0 || (job->dtype == WAVE_F32 && lo == 0xffffffffu);
    if (!none) {
      switch (job->op) {
      case WAVE_MIN: out->bits[0] = cr_unkey(job->dtype, lo); break;
      case WAVE_MAX: out->bits[0] = cr_unkey(job->dtype, hi); break;
      case WAVE_EXTENT:
        out->bits[0] = cr_unkey(job->dtype, lo);
        out->bits[1] = cr_unkey(job->dtype, hi);
        break;
      default: out->bits[0] = a; break;
      }
    }
  }
  out->count = count;
  free(c.items);
  free(c.task_first);
  free(c.mbase);
  return rc;
}
