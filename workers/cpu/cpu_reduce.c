/* cpu_reduce.c - the CPU backend's 32-bit item kernels (the items, their
 * plan and their merge are cpu_items.c's).
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
 * The 64-bit dtypes and argmin/argmax run in cpu_wide.c.  The kernels are
 * picked by the op table's accumulator kind and key kind, never by the op.
 *
 * Float sum follows the fixed tree exactly.  An item is 65536 = 256 x 256
 * rows, i.e. 256 whole level-1 groups, i.e. exactly one level-2 group: the
 * item computes its 256 level-1 values with the vector group kernel and
 * folds them straight into its level-2 value (fusing two levels).  Items
 * start at multiples of 65536 within their chunk, so item j of a chunk IS
 * value j of the chunk's level 2.  The remaining levels of each chunk
 * (n / 65536 values) and the merge of the chunk values are small and run on
 * the calling thread: the items are partials, merged by core/partial.c.
 * A chunk of <= 256 rows has only level 1 (its single group is its value).
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
#include "core/reduce.h"
#include "workers/cpu/cpu.h"

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

CR_INLINE uint32_t cr_ld(const unsigned char *p, size_t i)
{
  uint32_t x;
  memcpy(&x, p + 4 * i, sizeof x);
  return x;
}

/* ---- order-independent ops -------------------------------------------- */

CR_INLINE void cr_acc_loop(wv_acc_kind kd, const unsigned char *p,
                           const unsigned char *m, size_t n, uint32_t *acc,
                           uint64_t *count)
{
  uint32_t a = *acc;
  if (m == NULL) {
    for (size_t i = 0; i < n; i++)
      a = (uint32_t)wv_acc_combine(kd, 0xffffffffu, a, cr_ld(p, i));
  } else {
    const uint32_t id = kd == WV_ACC_AND ? 0xffffffffu : 0;
    uint32_t c = 0;  /* n <= WV_CPU_ITEM_ROWS */
    for (size_t i = 0; i < n; i++) {
      uint32_t sel = (uint32_t)(cr_ld(m, i) != 0);
      uint32_t s = 0u - sel;
      a = (uint32_t)wv_acc_combine(kd, 0xffffffffu, a,
                                   (cr_ld(p, i) & s) | (id & ~s));
      c += sel;
    }
    *count += c;
  }
  *acc = a;
}

CR_CLONES static void cr_k_acc(wv_acc_kind kd, const unsigned char *p,
                               const unsigned char *m, size_t n,
                               uint32_t *acc, uint64_t *count)
{
  /* Constant kind and mask-or-not per loop, so that each is vectorized. */
  if (m == NULL) {
    switch (kd) {
    case WV_ACC_ADD: cr_acc_loop(WV_ACC_ADD, p, NULL, n, acc, count); break;
    case WV_ACC_AND: cr_acc_loop(WV_ACC_AND, p, NULL, n, acc, count); break;
    case WV_ACC_OR:  cr_acc_loop(WV_ACC_OR, p, NULL, n, acc, count); break;
    default:         cr_acc_loop(WV_ACC_XOR, p, NULL, n, acc, count); break;
    }
  } else {
    switch (kd) {
    case WV_ACC_ADD: cr_acc_loop(WV_ACC_ADD, p, m, n, acc, count); break;
    case WV_ACC_AND: cr_acc_loop(WV_ACC_AND, p, m, n, acc, count); break;
    case WV_ACC_OR:  cr_acc_loop(WV_ACC_OR, p, m, n, acc, count); break;
    default:         cr_acc_loop(WV_ACC_XOR, p, m, n, acc, count); break;
    }
  }
}

/* Branch-free (all-ones / zero masks) so that GCC vectorizes both loops.
 * Keys (core/optable.h): finite float keys lie in [0x00800000,
 * 0xff7fffff], so 0xffffffff / 0 mean "no row took part" for lo / hi. */
CR_INLINE void cr_keys_loop(wv_key_kind kk, const unsigned char *p,
                            const unsigned char *m, size_t n, uint32_t *plo,
                            uint32_t *phi, uint64_t *count)
{
  uint32_t lo = *plo, hi = *phi, c = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = cr_ld(p, i);
    uint32_t k = (uint32_t)wv_key_of(kk, 4, x);
    uint32_t ok = 0xffffffffu;
    if (kk == WV_KEY_FLOAT)  /* finite */
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

CR_CLONES static void cr_k_keys(wv_key_kind kk, const unsigned char *p,
                                const unsigned char *m, size_t n,
                                uint32_t *lo, uint32_t *hi, uint64_t *count)
{
  /* Constant key kind and mask-or-not per loop: six loops, vectorized. */
  if (m == NULL) {
    if (kk == WV_KEY_RAW)
      cr_keys_loop(WV_KEY_RAW, p, NULL, n, lo, hi, count);
    else if (kk == WV_KEY_SIGNED)
      cr_keys_loop(WV_KEY_SIGNED, p, NULL, n, lo, hi, count);
    else
      cr_keys_loop(WV_KEY_FLOAT, p, NULL, n, lo, hi, count);
  } else {
    if (kk == WV_KEY_RAW)
      cr_keys_loop(WV_KEY_RAW, p, m, n, lo, hi, count);
    else if (kk == WV_KEY_SIGNED)
      cr_keys_loop(WV_KEY_SIGNED, p, m, n, lo, hi, count);
    else
      cr_keys_loop(WV_KEY_FLOAT, p, m, n, lo, hi, count);
  }
}

/* n rows at p (mask rows at m, or NULL) into the 32-bit partial a/b. */
static void cr_scan_run(const wv_op_plan *pl, const unsigned char *p,
                        const unsigned char *m, size_t n, uint32_t *a,
                        uint32_t *b, uint64_t *count)
{
  if (pl->keyed)
    cr_k_keys(pl->key, p, m, n, a, b, count);
  else
    cr_k_acc(pl->acc, p, m, n, a, count);
}

void wv_cpu_scan32(const wv_cpu_job *c, wv_cpu_item *it)
{
  const wv_reduce_job *job = c->job;
  const wv_op_plan *pl = c->plan;
  const unsigned char *p =
      (const unsigned char *)job->input[it->chunk].data + 4 * it->start;
  uint32_t a = pl->keyed ? 0xffffffffu : (uint32_t)pl->acc_init, b = 0;
  it->count = 0;
  if (!job->has_mask) {
    cr_scan_run(pl, p, NULL, it->rows, &a, &b, &it->count);
    it->count = it->rows;
  } else {
    size_t k = 0;
    for (uint64_t off = 0; off < it->rows;) {
      uint64_t avail;
      const unsigned char *m = wv_cpu_mask_run(c, it->lrow + off, &k, &avail);
      size_t n = avail < it->rows - off ? (size_t)avail : it->rows - off;
      cr_scan_run(pl, p + 4 * off, m, n, &a, &b, &it->count);
      off += n;
    }
  }
  it->a = a;
  it->b = b;
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

CR_CLONES static void cr_item_fsum(const wv_cpu_job *c, wv_cpu_item *it)
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
      m = wv_cpu_mask_rows(c, it->lrow + off, len, &k, mbuf);
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

  float v;
  if (ch->rows <= WV_GROUP) {
    v = part[0];  /* the chunk has level 1 only */
  } else {
    for (size_t g = ng; g < WV_GROUP; g++)
      part[g] = -0.0f;
    v = cr_group((const unsigned char *)part, NULL, &vc);
  }
  uint32_t vb;
  memcpy(&vb, &v, sizeof vb);
  it->a = vb;
  if (job->has_mask) {
    uint64_t n = tail_count;
    for (int i = 0; i < 8; i++)
      n += vc[i];
    it->count = n;
  } else {
    it->count = it->rows;
  }
}

void wv_cpu_fsum32(const wv_cpu_job *c, wv_cpu_item *it)
{
  cr_item_fsum(c, it);
}
