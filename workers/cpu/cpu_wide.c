/* cpu_wide.c - the CPU backend's reductions over the 64-bit dtypes and
 * argmin/argmax of every dtype (docs/reduction.md; issue 23 part 1).
 *
 * The same work split as cpu_reduce.c: every non-empty chunk is cut into
 * items of 65536 rows from its first row, batched into pool tasks of at
 * least 65536 rows.  Each item keeps a partial:
 *
 *  - integer sum/and/or/xor: a 64-bit accumulator (order-free);
 *  - min/max/extent: the smallest and largest order key (u64: the bits;
 *    s64: the sign bit flipped; f64: wv_f64_key), NaN/inf/masked rows given
 *    the key that can never win, as cpu_reduce.c does for 32 bits;
 *  - argmin/argmax: the best key and the global index of its first
 *    occurrence in the item (a later row wins only when strictly better),
 *    and the number of rows considered (selected, finite);
 *  - float64 sum: the item's level-2 value of the fixed tree (an item is
 *    256 x 256 rows from a multiple of 65536 of its chunk, so it IS value j
 *    of its chunk's level 2), merged by core/partial.c as cpu_reduce.c
 *    merges float32 items.
 *
 * Correctness first: the loops are plain C over memcpy loads, branch-free
 * where that is cheap so that -O3 vectorizes them, and the float64 group
 * is core's wv_f64_group_tree (built, like this file, -ffp-contract=off).
 */
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/partial.h"
#include "core/reduce.h"
#include "workers/cpu/cpu.h"

#define CW_ITEM_ROWS 65536u  /* WV_GROUP * WV_GROUP: one level-2 group */

typedef struct cw_item {
  size_t chunk;      /* input chunk */
  uint64_t start;    /* first row within the chunk, a multiple of 65536 */
  uint64_t rows;     /* <= CW_ITEM_ROWS */
  uint64_t lrow;     /* global (logical) row of start: mask and index */
  uint64_t a, b;     /* accumulator, lo/hi keys, or (arg) best key */
  uint64_t index;    /* arg: global index of the best key */
  double v;          /* float64 sum: the item's level-2 (or level-1) value */
  uint64_t count;    /* rows selected (arg: considered) */
} cw_item;

enum { CW_ACC, CW_KEYS, CW_ARG, CW_FSUM };

typedef struct cw_ctx {
  const wv_reduce_job *job;
  int kind;
  unsigned size;       /* bytes per row: 4 or 8 */
  cw_item *items;
  size_t n_items;
  size_t *task_first;  /* task t = items [task_first[t], task_first[t+1]) */
  size_t n_tasks;
  uint64_t *mbase;     /* mask chunk i = logical rows [mbase[i], mbase[i+1]) */
} cw_ctx;

static inline uint64_t cw_ld(const unsigned char *p, unsigned size, size_t i)
{
  if (size == 4) {
    uint32_t x;
    memcpy(&x, p + 4 * i, sizeof x);
    return x;
  }
  uint64_t x;
  memcpy(&x, p + 8 * i, sizeof x);
  return x;
}

static inline uint32_t cw_mk(const unsigned char *m, size_t i)
{
  uint32_t x;
  memcpy(&x, m + 4 * i, sizeof x);
  return x;
}

/* Order key of the bits x of dtype dt: unsigned comparison of keys is the
 * dtype's order (floats: finite ones, -0.0 below +0.0). */
static inline uint64_t cw_key(wave_dtype dt, uint64_t x)
{
  switch (dt) {
  case WAVE_S32: return x ^ 0x80000000u;
  case WAVE_F32: return wv_f32_key((uint32_t)x);
  case WAVE_S64: return x ^ 0x8000000000000000u;
  case WAVE_F64: return wv_f64_key(x);
  default: return x;  /* u32, u64 */
  }
}

static uint64_t cw_unkey(wave_dtype dt, uint64_t k)
{
  switch (dt) {
  case WAVE_S32: return k ^ 0x80000000u;
  case WAVE_F32: return wv_f32_unkey((uint32_t)k);
  case WAVE_S64: return k ^ 0x8000000000000000u;
  case WAVE_F64: return wv_f64_unkey(k);
  default: return k;
  }
}

/* All-ones when the row takes part in an order (every integer, finite
 * floats), else 0. */
static inline uint64_t cw_ok(wave_dtype dt, uint64_t x)
{
  if (dt == WAVE_F32)
    return 0u - (uint64_t)((x & 0x7f800000u) != 0x7f800000u);
  if (dt == WAVE_F64)
    return 0u - (uint64_t)((x & 0x7ff0000000000000u) != 0x7ff0000000000000u);
  return UINT64_MAX;
}

/* ---- the item kernels (n rows at p, mask rows at m or NULL) ------------ */

static inline void cw_acc_loop(int op, const unsigned char *p,
                               const unsigned char *m, size_t n,
                               cw_item *it)
{
  const uint64_t id = op == WAVE_AND ? UINT64_MAX : 0;
  uint64_t a = it->a, c = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t x = cw_ld(p, 8, i);
    if (m != NULL) {
      uint64_t sel = (uint64_t)(cw_mk(m, i) != 0);
      c += sel;
      x = (x & (0u - sel)) | (id & ~(0u - sel));
    }
    switch (op) {
    case WAVE_SUM: a += x; break;  /* wraps modulo 2^64 */
    case WAVE_AND: a &= x; break;
    case WAVE_OR:  a |= x; break;
    default:       a ^= x; break;
    }
  }
  it->a = a;
  it->count += m != NULL ? c : n;
}

static void cw_acc(int op, const unsigned char *p, const unsigned char *m,
                   size_t n, cw_item *it)
{
  /* a constant op per loop, so that each is vectorized */
  switch (op) {
  case WAVE_SUM: cw_acc_loop(WAVE_SUM, p, m, n, it); break;
  case WAVE_AND: cw_acc_loop(WAVE_AND, p, m, n, it); break;
  case WAVE_OR:  cw_acc_loop(WAVE_OR, p, m, n, it); break;
  default:       cw_acc_loop(WAVE_XOR, p, m, n, it); break;
  }
}

static inline void cw_keys_loop(wave_dtype dt, const unsigned char *p,
                                const unsigned char *m, size_t n,
                                cw_item *it)
{
  uint64_t lo = it->a, hi = it->b, c = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t x = cw_ld(p, 8, i);
    uint64_t k = cw_key(dt, x), ok = cw_ok(dt, x);
    if (m != NULL) {
      uint64_t sel = (uint64_t)(cw_mk(m, i) != 0);
      c += sel;
      ok &= 0u - sel;
    }
    uint64_t kl = (k & ok) | ~ok, kh = k & ok;
    lo = kl < lo ? kl : lo;
    hi = kh > hi ? kh : hi;
  }
  it->a = lo;
  it->b = hi;
  it->count += m != NULL ? c : n;
}

static void cw_keys(wave_dtype dt, const unsigned char *p,
                    const unsigned char *m, size_t n, cw_item *it)
{
  switch (dt) {
  case WAVE_U64: cw_keys_loop(WAVE_U64, p, m, n, it); break;
  case WAVE_S64: cw_keys_loop(WAVE_S64, p, m, n, it); break;
  default:       cw_keys_loop(WAVE_F64, p, m, n, it); break;
  }
}

/* argmin/argmax over rows [0, n) at global index row0: a row replaces the
 * best only when strictly better, so the first occurrence is kept. */
static void cw_arg(const cw_ctx *c, const unsigned char *p,
                   const unsigned char *m, size_t n, uint64_t row0,
                   cw_item *it)
{
  wave_dtype dt = c->job->dtype;
  int is_min = c->job->op == WAVE_ARGMIN;
  for (size_t i = 0; i < n; i++) {
    if (m != NULL && cw_mk(m, i) == 0)
      continue;
    uint64_t x = cw_ld(p, c->size, i);
    if (cw_ok(dt, x) == 0)
      continue;  /* NaN, +-inf: not considered */
    uint64_t k = cw_key(dt, x);
    if (it->count == 0 || (is_min ? k < it->a : k > it->a)) {
      it->a = k;
      it->index = row0 + i;
    }
    it->count++;
  }
}

/* Mask rows from logical row `row`: a pointer into the mask chunk holding
 * it and, in *avail, how many rows of that chunk are left from there. */
static const unsigned char *cw_mask_run(const cw_ctx *c, uint64_t row,
                                        uint64_t *avail)
{
  const uint64_t *mb = c->mbase;
  size_t lo = 0, hi = c->job->n_mask;  /* first i: mb[i + 1] > row */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (mb[mid + 1] > row)
      hi = mid;
    else
      lo = mid + 1;
  }
  *avail = mb[lo + 1] - row;
  return (const unsigned char *)c->job->mask[lo].data + 4 * (row - mb[lo]);
}

static void cw_run(const cw_ctx *c, const unsigned char *p,
                   const unsigned char *m, size_t n, uint64_t row0,
                   cw_item *it)
{
  switch (c->kind) {
  case CW_ACC: cw_acc(c->job->op, p, m, n, it); break;
  case CW_KEYS: cw_keys(c->job->dtype, p, m, n, it); break;
  default: cw_arg(c, p, m, n, row0, it); break;
  }
}

static void cw_item_scan(const cw_ctx *c, cw_item *it)
{
  const wv_reduce_job *job = c->job;
  const unsigned char *p = (const unsigned char *)job->input[it->chunk].data +
                           (size_t)c->size * it->start;
  it->a = c->kind == CW_ACC ? (job->op == WAVE_AND ? UINT64_MAX : 0)
                            : UINT64_MAX;
  it->b = 0;
  it->count = 0;
  it->index = 0;
  if (!job->has_mask) {
    cw_run(c, p, NULL, it->rows, it->lrow, it);
    return;
  }
  for (uint64_t off = 0; off < it->rows;) {
    uint64_t avail;
    const unsigned char *m = cw_mask_run(c, it->lrow + off, &avail);
    size_t n = avail < it->rows - off ? (size_t)avail : it->rows - off;
    cw_run(c, p + (size_t)c->size * off, m, n, it->lrow + off, it);
    off += n;
  }
}

/* The float64 sum of one item: its level-1 groups, folded into its level-2
 * value unless the chunk has level 1 only (<= 256 rows). */
static void cw_item_fsum(const cw_ctx *c, cw_item *it)
{
  const wv_reduce_job *job = c->job;
  const wv_span *ch = &job->input[it->chunk];
  const unsigned char *base = (const unsigned char *)ch->data + 8 * it->start;
  size_t ng = (size_t)((it->rows + WV_GROUP - 1) / WV_GROUP);
  double part[WV_GROUP];
  uint64_t count = 0;
  const unsigned char *m = NULL;
  uint64_t mavail = 0;
  for (size_t g = 0; g < ng; g++) {
    double v[WV_GROUP];
    for (size_t j = 0; j < WV_GROUP; j++) {
      uint64_t k = (uint64_t)g * WV_GROUP + j;
      uint64_t x = WV_F64_NEG_ZERO;            /* padding */
      if (k < it->rows) {
        int sel = 1;
        if (job->has_mask) {
          if (mavail == 0)
            m = cw_mask_run(c, it->lrow + k, &mavail);
          sel = cw_mk(m, 0) != 0;
          m += 4;
          mavail--;
        }
        if (sel)
          x = cw_ld(base, 8, k);
        count += (uint64_t)sel;                /* else a masked leaf */
      }
      memcpy(&v[j], &x, sizeof x);
    }
    part[g] = wv_f64_group_tree(v);
  }
  if (ch->rows <= WV_GROUP) {
    it->v = part[0];
  } else {
    for (size_t g = ng; g < WV_GROUP; g++)
      part[g] = -0.0;
    it->v = wv_f64_group_tree(part);
  }
  it->count = count;
}

static void cw_task(void *arg, size_t task, unsigned worker)
{
  (void)worker;
  cw_ctx *c = arg;
  for (size_t i = c->task_first[task]; i < c->task_first[task + 1]; i++) {
    if (c->kind == CW_FSUM)
      cw_item_fsum(c, &c->items[i]);
    else
      cw_item_scan(c, &c->items[i]);
  }
}

static int cw_plan(cw_ctx *c, wave_error *err)
{
  const wv_reduce_job *job = c->job;
  size_t n = 0;
  for (size_t i = 0; i < job->n_input; i++)
    n += (size_t)((job->input[i].rows + CW_ITEM_ROWS - 1) / CW_ITEM_ROWS);
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
  for (size_t i = 0; i < job->n_input; i++) {
    for (uint64_t s = 0; s < job->input[i].rows; s += CW_ITEM_ROWS) {
      uint64_t r = job->input[i].rows - s;
      cw_item *it = &c->items[c->n_items];
      *it = (cw_item){.chunk = i, .start = s, .lrow = lrow,
                      .rows = r < CW_ITEM_ROWS ? r : CW_ITEM_ROWS};
      if (task_rows == 0)
        c->task_first[c->n_tasks++] = c->n_items;
      c->n_items++;
      task_rows += it->rows;
      if (task_rows >= CW_ITEM_ROWS)
        task_rows = 0;
      lrow += it->rows;
    }
  }
  c->task_first[c->n_tasks] = c->n_items;
  return 0;
}

/* The items' partials into the job's answer. */
static int cw_finish(const cw_ctx *c, wv_reduce_out *out, wave_error *err)
{
  const wv_reduce_job *job = c->job;
  if (c->kind == CW_FSUM || c->kind == CW_ARG) {
    /* core/partial.c: the float64 levels; argmin/argmax by value, then
     * the lowest global index (the items' indices are global already) */
    wv_partial_acc a;
    int rc = wv_partial_init(&a, job->dtype, job->op, c->n_items, err);
    for (size_t i = 0; rc == 0 && i < c->n_items; i++) {
      const cw_item *it = &c->items[i];
      wv_partial p = {.chunk = it->chunk, .count = it->count,
                      .index = (int64_t)it->index};
      if (c->kind == CW_FSUM)
        memcpy(&p.bits[0], &it->v, sizeof p.bits[0]);
      else
        p.bits[0] = it->count > 0 ? cw_unkey(job->dtype, it->a) : 0;
      rc = wv_partial_add(&a, &p, err);
    }
    if (rc == 0)
      wv_partial_result(&a, out, NULL);
    wv_partial_fini(&a);
    return rc;
  }
  uint64_t acc = job->op == WAVE_AND ? UINT64_MAX : 0, lo = UINT64_MAX, hi = 0;
  uint64_t count = 0;
  for (size_t i = 0; i < c->n_items; i++) {
    const cw_item *it = &c->items[i];
    count += it->count;
    switch (c->kind == CW_ACC ? job->op : WAVE_OP_NONE) {
    case WAVE_SUM: acc += it->a; break;
    case WAVE_AND: acc &= it->a; break;
    case WAVE_OR:  acc |= it->a; break;
    case WAVE_XOR: acc ^= it->a; break;
    default:
      lo = it->a < lo ? it->a : lo;
      hi = it->b > hi ? it->b : hi;
      break;
    }
  }
  out->count = count;
  /* Empty, or (float64) no finite row: zeros.  Finite float64 keys lie in
   * [0x0010000000000000, 0xffefffffffffffff]; for integers count > 0 means
   * lo/hi hold real keys. */
  if (count == 0 || (job->dtype == WAVE_F64 && lo == UINT64_MAX))
    return 0;
  switch (job->op) {
  case WAVE_MIN: out->bits[0] = cw_unkey(job->dtype, lo); break;
  case WAVE_MAX: out->bits[0] = cw_unkey(job->dtype, hi); break;
  case WAVE_EXTENT:
    out->bits[0] = cw_unkey(job->dtype, lo);
    out->bits[1] = cw_unkey(job->dtype, hi);
    break;
  default: out->bits[0] = acc; break;
  }
  return 0;
}

int wv_cpu_reduce_wide(wv_device *dev, const wv_reduce_job *job,
                       wv_reduce_out *out, wave_error *err)
{
  memset(out, 0, sizeof *out);
  out->n_values = wave_op_values(job->op);
  int arg = job->op == WAVE_ARGMIN || job->op == WAVE_ARGMAX;
  if (arg)
    out->index = -1;
  if (job->rows == 0)
    return 0;  /* empty: zeros, count 0 */

  cw_ctx c = {.job = job, .size = wv_dtype_size(job->dtype)};
  if (arg)
    c.kind = CW_ARG;
  else if (job->op == WAVE_SUM && job->dtype == WAVE_F64)
    c.kind = CW_FSUM;
  else if (job->op == WAVE_MIN || job->op == WAVE_MAX ||
           job->op == WAVE_EXTENT)
    c.kind = CW_KEYS;
  else
    c.kind = CW_ACC;
  int rc = cw_plan(&c, err);
  if (rc == 0) {
    wv_cpu_pool_run(dev, c.n_tasks, cw_task, &c);
    rc = cw_finish(&c, out, err);
  }
  free(c.items);
  free(c.task_first);
  free(c.mbase);
  return rc;
}
