/* cpu_wide.c - the CPU backend's item kernels over the 64-bit dtypes and
 * argmin/argmax of every dtype (docs/reduction.md; issue 23 part 1).  The
 * items, their plan and their merge are cpu_items.c's.  Each item keeps a
 * partial:
 *
 *  - integer sum/and/or/xor: a 64-bit accumulator (order-free);
 *  - min/max/extent: the smallest and largest order key (u64: the bits;
 *    s64: the sign bit flipped; f64: wv_f64_key; core/optable.h), NaN,
 *    inf and masked rows given
 *    the key that can never win, as cpu_reduce.c does for 32 bits;
 *  - argmin/argmax: the best key and the global index of its first
 *    occurrence in the item (a later row wins only when strictly better),
 *    and the number of rows considered (selected, finite);
 *  - float64 sum: the item's level-2 value of the fixed tree (an item is
 *    256 x 256 rows from a multiple of 65536 of its chunk, so it IS value j
 *    of its chunk's level 2), merged by core/partial.c as cpu_reduce.c
 *    merges float32 items.
 *
 * The kernels are picked by the op table's path, accumulator kind and key
 * kind, never by the op.
 *
 * Correctness first: the loops are plain C over memcpy loads, branch-free
 * where that is cheap so that -O3 vectorizes them, and the float64 group
 * is core's wv_f64_group_tree (built -ffp-contract=off, on vectors, cloned
 * for AVX2), straight from the rows for a whole unmasked group.
 */
#include <string.h>

#include "core/base.h"
#include "core/reduce.h"
#include "workers/cpu/cpu.h"

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

/* ---- the item kernels (n rows at p, mask rows at m or NULL) ------------ */

static inline void cw_acc_loop(wv_acc_kind kd, const unsigned char *p,
                               const unsigned char *m, size_t n,
                               wv_cpu_item *it)
{
  const uint64_t id = kd == WV_ACC_AND ? UINT64_MAX : 0;
  uint64_t a = it->a, c = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t x = cw_ld(p, 8, i);
    if (m != NULL) {
      uint64_t sel = (uint64_t)(cw_mk(m, i) != 0);
      c += sel;
      x = (x & (0u - sel)) | (id & ~(0u - sel));
    }
    a = wv_acc_combine(kd, UINT64_MAX, a, x);  /* sum wraps modulo 2^64 */
  }
  it->a = a;
  it->count += m != NULL ? c : n;
}

static void cw_acc(wv_acc_kind kd, const unsigned char *p,
                   const unsigned char *m, size_t n, wv_cpu_item *it)
{
  /* a constant kind per loop, so that each is vectorized */
  if (kd == WV_ACC_ADD)
    cw_acc_loop(WV_ACC_ADD, p, m, n, it);
  else if (kd == WV_ACC_AND)
    cw_acc_loop(WV_ACC_AND, p, m, n, it);
  else if (kd == WV_ACC_OR)
    cw_acc_loop(WV_ACC_OR, p, m, n, it);
  else
    cw_acc_loop(WV_ACC_XOR, p, m, n, it);
}

/* All-ones when the row takes part in an order (every integer, finite
 * floats), else 0; float keys imply a float dtype. */
static inline uint64_t cw_ok(wv_key_kind kk, uint64_t x)
{
  if (kk != WV_KEY_FLOAT)
    return UINT64_MAX;
  return 0u - (uint64_t)((x & 0x7ff0000000000000u) != 0x7ff0000000000000u);
}

static inline void cw_keys_loop(wv_key_kind kk, const unsigned char *p,
                                const unsigned char *m, size_t n,
                                wv_cpu_item *it)
{
  uint64_t lo = it->a, hi = it->b, c = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t x = cw_ld(p, 8, i);
    uint64_t k = wv_key_of(kk, 8, x), ok = cw_ok(kk, x);
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

static void cw_keys(wv_key_kind kk, const unsigned char *p,
                    const unsigned char *m, size_t n, wv_cpu_item *it)
{
  if (kk == WV_KEY_RAW)
    cw_keys_loop(WV_KEY_RAW, p, m, n, it);
  else if (kk == WV_KEY_SIGNED)
    cw_keys_loop(WV_KEY_SIGNED, p, m, n, it);
  else
    cw_keys_loop(WV_KEY_FLOAT, p, m, n, it);
}

/* argmin/argmax over rows [0, n) at global index row0: a row replaces the
 * best only when strictly better, so the first occurrence is kept. */
static void cw_arg(const wv_op_plan *pl, const unsigned char *p,
                   const unsigned char *m, size_t n, uint64_t row0,
                   wv_cpu_item *it)
{
  int is_min = pl->halves == WV_HALF_LO;
  for (size_t i = 0; i < n; i++) {
    if (m != NULL && cw_mk(m, i) == 0)
      continue;
    uint64_t x = cw_ld(p, pl->row_bytes, i);
    if (wv_row_ok(pl, x) == 0)
      continue;  /* NaN, +-inf: not considered */
    uint64_t k = wv_key_of(pl->key, pl->row_bytes, x);
    if (it->count == 0 || (is_min ? k < it->a : k > it->a)) {
      it->a = k;
      it->index = row0 + i;
    }
    it->count++;
  }
}

static void cw_run(const wv_op_plan *pl, const unsigned char *p,
                   const unsigned char *m, size_t n, uint64_t row0,
                   wv_cpu_item *it)
{
  if (pl->path == WV_PATH_ARG)
    cw_arg(pl, p, m, n, row0, it);
  else if (pl->keyed)
    cw_keys(pl->key, p, m, n, it);
  else
    cw_acc(pl->acc, p, m, n, it);
}

void wv_cpu_scan64(const wv_cpu_job *c, wv_cpu_item *it)
{
  const wv_reduce_job *job = c->job;
  const wv_op_plan *pl = c->plan;
  const unsigned char *p = (const unsigned char *)job->input[it->chunk].data +
                           (size_t)pl->row_bytes * it->start;
  it->a = pl->keyed ? UINT64_MAX : pl->acc_init;
  it->b = 0;
  it->count = 0;
  it->index = 0;
  if (!job->has_mask) {
    cw_run(pl, p, NULL, it->rows, it->lrow, it);
    return;
  }
  size_t k = 0;
  for (uint64_t off = 0; off < it->rows;) {
    uint64_t avail;
    const unsigned char *m = wv_cpu_mask_run(c, it->lrow + off, &k, &avail);
    size_t n = avail < it->rows - off ? (size_t)avail : it->rows - off;
    cw_run(pl, p + (size_t)pl->row_bytes * off, m, n, it->lrow + off, it);
    off += n;
  }
}

/* The float64 sum of one item: its level-1 groups, folded into its level-2
 * value unless the chunk has level 1 only (<= 256 rows). */
void wv_cpu_fsum64(const wv_cpu_job *c, wv_cpu_item *it)
{
  const wv_reduce_job *job = c->job;
  const wv_span *ch = &job->input[it->chunk];
  const unsigned char *base = (const unsigned char *)ch->data + 8 * it->start;
  size_t ng = (size_t)((it->rows + WV_GROUP - 1) / WV_GROUP);
  double part[WV_GROUP];
  uint64_t count = 0;
  const unsigned char *m = NULL;
  uint64_t mavail = 0;
  size_t mk = 0;
  for (size_t g = 0; g < ng; g++) {
    if (!job->has_mask && (uint64_t)(g + 1) * WV_GROUP <= it->rows) {
      part[g] = wv_f64_group_tree(base + 8 * WV_GROUP * g);  /* all rows */
      count += WV_GROUP;
      continue;
    }
    double v[WV_GROUP];
    for (size_t j = 0; j < WV_GROUP; j++) {
      uint64_t k = (uint64_t)g * WV_GROUP + j;
      uint64_t x = WV_F64_NEG_ZERO;            /* padding */
      if (k < it->rows) {
        int sel = 1;
        if (job->has_mask) {
          if (mavail == 0)
            m = wv_cpu_mask_run(c, it->lrow + k, &mk, &mavail);
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
  double val;
  if (ch->rows <= WV_GROUP) {
    val = part[0];
  } else {
    for (size_t g = ng; g < WV_GROUP; g++)
      part[g] = -0.0;
    val = wv_f64_group_tree((const unsigned char *)part);
  }
  memcpy(&it->a, &val, sizeof it->a);
  it->count = count;
}
