/* optable.h - the one op table (docs/reduction.md, issue 38): for every
 * dtype and op, how a reduction runs, written once for the reference's
 * helpers, the partial merge, the daemon and every backend's plan maker.
 *
 *  - wv_op_plan_of(dt, op): the row of the table (never NULL); an op that
 *    is not defined for the dtype, or an unknown dtype or op, gives a row
 *    whose rc says so (wave_op_check reads it: the OPDTYPE rule lives here);
 *  - wv_key_of / wv_unkey_of: a row's order key and back (unsigned
 *    comparison of keys is the dtype's order; floats: finite ones, -0.0
 *    just below +0.0), with wv_f32_key / wv_f64_key and their unkeys;
 *  - the row constants (-0.0, the canonical NaN) and the fill of rows a
 *    mask leaves out (wv_mask_fill).
 *
 * The paths are the kernel families every backend has: an integer sum, a
 * bitwise op (and, or, xor), smallest/largest order keys (min, max,
 * extent), the first best key with its index (argmin, argmax), and the
 * fixed float-sum tree, and the exact float sum (fsum).  tests/test_optable.c pins every row.
 */
#ifndef WV_OPTABLE_H
#define WV_OPTABLE_H

#include <stdint.h>

#include "wave/types.h"

#define WV_F32_NEG_ZERO 0x80000000u  /* leaf for masked / padding rows */
#define WV_F32_CANON_NAN 0x7fc00000u
#define WV_F64_NEG_ZERO 0x8000000000000000u
#define WV_F64_CANON_NAN 0x7ff8000000000000u

/* How a row becomes its order key. */
typedef enum wv_key_kind {
  WV_KEY_RAW = 0,     /* unsigned rows, and every op that orders nothing */
  WV_KEY_SIGNED = 1,  /* two's complement: the sign bit flipped */
  WV_KEY_FLOAT = 2,   /* sign-magnitude: wv_f32_key / wv_f64_key */
} wv_key_kind;

/* The kernel family of an op over a dtype. */
typedef enum wv_op_path {
  WV_PATH_NONE = 0,   /* not defined (rc says why) */
  WV_PATH_ISUM,       /* integer sum: one accumulator, wrapping */
  WV_PATH_BITS,       /* and, or, xor: one accumulator */
  WV_PATH_KEYS,       /* min, max, extent: the smallest / largest key */
  WV_PATH_ARG,        /* argmin, argmax: the first best key, its index */
  WV_PATH_FSUM,       /* float sum: the fixed tree of docs/reduction.md */
  WV_PATH_XSUM,       /* fsum: the exact sum (core/xsum.h), rounded once */
} wv_op_path;

/* How an accumulating op combines two values (ISUM, BITS; the float sum's
 * tree adds too, in its fixed order): a kernel variant a backend picks by
 * this, never by the op. */
typedef enum wv_acc_kind {
  WV_ACC_NONE = 0,    /* keyed ops */
  WV_ACC_ADD,         /* sum (integers: wrapping at the row's width) */
  WV_ACC_AND,
  WV_ACC_OR,
  WV_ACC_XOR,
} wv_acc_kind;

/* Which keys a keyed op keeps (wv_op_plan.halves). */
#define WV_HALF_LO 1u       /* the smallest: min, argmin, extent's first */
#define WV_HALF_HI 2u       /* the largest: max, argmax, extent's second */

/* A masked job as an unmasked one: what an unselected row may be
 * replaced by without changing the answer (the Vulkan backend's staging
 * and the daemon's file readers apply a mask so).  dup: a copy of any
 * selected row (min, max, extent: idempotent, and no constant is neutral
 * for both halves of extent); else the row bits `bits`: 0 for sum, or and
 * xor, all ones for and, -0.0 for the float sum (the leaf of an unselected
 * row) and for fsum (it adds 0 and keeps the -0.0 rule; the count, and so
 * an all-masked job's +0.0, stays the masked job's to say), NaN for the float argmin/argmax (not considered, so the unmasked
 * job's count is the masked one's).  ok = 0 for the integer argmin/argmax:
 * a copy placed before the first selected row could take the index. */
typedef struct wv_mask_fill {
  uint64_t bits;
  int dup;
  int ok;
} wv_mask_fill;

/* One row of the table.  With rc != 0 only rc, dtype and op are set. */
typedef struct wv_op_plan {
  int rc;              /* 0, or WAVE_EDTYPE, WAVE_EOP, WAVE_EOPDTYPE */
  wave_dtype dtype;
  wave_op op;
  unsigned row_bytes;  /* 4 or 8 */
  wv_op_path path;
  int keyed;           /* KEYS and ARG: rows are compared as order keys */
  wv_key_kind key;     /* keyed: the dtype's key; else WV_KEY_RAW */
  unsigned halves;     /* keyed: WV_HALF_LO and/or WV_HALF_HI; else 0 */
  unsigned n_values;   /* values in the answer: 1, or 2 for extent */
  int is_float;        /* a float dtype */
  int finite_only;     /* keyed float: NaN and +-inf rows take no part */
  int count_finite;    /* the count is of finite rows only (float argmin
                          and argmax: rows considered) */
  int says_finite;     /* the answer says whether a selected row is finite
                          (float min/max/extent: ReduceResult.finite,
                          wv_reduce_some_finite), since none is +0.0 */
  uint64_t ones;       /* all ones of the row's width */
  uint64_t acc_init;   /* ISUM, BITS: the identity (all ones for and) */
  wv_mask_fill fill;   /* the fill for unselected rows */
  wv_acc_kind acc;     /* ISUM, FSUM: ADD; BITS: AND, OR, XOR; else NONE
                          (XSUM adds exactly: core/xsum.h) */
} wv_op_plan;

/* acc(a, x) at the row's width (ones): the combine of an ISUM or BITS
 * plan's accumulator; with a constant kind it folds to one instruction. */
static inline uint64_t wv_acc_combine(wv_acc_kind k, uint64_t ones,
                                      uint64_t a, uint64_t x)
{
  switch (k) {
  case WV_ACC_ADD: return (a + x) & ones;
  case WV_ACC_AND: return a & x;
  case WV_ACC_OR:  return a | x;
  default:         return a ^ x;
  }
}

/* The row of dtype dt and op op; never NULL. */
const wv_op_plan *wv_op_plan_of(wave_dtype dt, wave_op op);

/* The order key of a finite float's bits: unsigned comparison of keys is
 * the float order, -0.0 (key 0x7fffffff) just below +0.0 (0x80000000).
 * Branch-free, so that loops over rows vectorize. */
static inline uint32_t wv_f32_key(uint32_t x)
{
  return x ^ ((0u - (x >> 31)) | 0x80000000u);
}

static inline uint32_t wv_f32_unkey(uint32_t k)
{
  return k ^ ((0u - ((k >> 31) ^ 1u)) | 0x80000000u);
}

static inline uint64_t wv_f64_key(uint64_t x)
{
  return x ^ ((0u - (x >> 63)) | 0x8000000000000000u);
}

static inline uint64_t wv_f64_unkey(uint64_t k)
{
  return k ^ ((0u - ((k >> 63) ^ 1u)) | 0x8000000000000000u);
}

/* The key of the row bits x (row_bytes 4: the low 32 bits) under kind k,
 * and back; 32-bit keys are 32-bit (the high half 0). */
static inline uint64_t wv_key_of(wv_key_kind k, unsigned row_bytes,
                                 uint64_t x)
{
  if (k == WV_KEY_SIGNED)
    return x ^ (row_bytes == 8 ? 0x8000000000000000u : 0x80000000u);
  if (k == WV_KEY_FLOAT)
    return row_bytes == 8 ? wv_f64_key(x) : wv_f32_key((uint32_t)x);
  return x;
}

static inline uint64_t wv_unkey_of(wv_key_kind k, unsigned row_bytes,
                                   uint64_t key)
{
  if (k == WV_KEY_SIGNED)
    return key ^ (row_bytes == 8 ? 0x8000000000000000u : 0x80000000u);
  if (k == WV_KEY_FLOAT)
    return row_bytes == 8 ? wv_f64_unkey(key) : wv_f32_unkey((uint32_t)key);
  return key;
}

/* Whether the row bits x take part in a keyed op of plan p: every integer
 * row, the finite float ones (all ones, or 0; branch-free). */
static inline uint64_t wv_row_ok(const wv_op_plan *p, uint64_t x)
{
  if (!p->finite_only)
    return UINT64_MAX;
  if (p->row_bytes == 8)
    return 0u - (uint64_t)((x & 0x7ff0000000000000u) != 0x7ff0000000000000u);
  return 0u - (uint64_t)((x & 0x7f800000u) != 0x7f800000u);
}

#endif
