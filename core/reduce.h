/* reduce.h - reduction semantics shared by every backend (docs/reduction.md).
 *
 *  - wv_reduce_validate(): the checks every job passes before a backend sees
 *    it (op defined for dtype, chunk lengths, mask length);
 *  - wv_reduce_reference(): the plain, obviously-correct transcription of
 *    docs/reduction.md that every backend is compared against;
 *  - small helpers backends share (the group tree G, NaN canonicalisation,
 *    the float total order).
 */
#ifndef WV_REDUCE_H
#define WV_REDUCE_H

#include <stdint.h>

#include "core/job.h"
#include "wave/error.h"

#define WV_GROUP 256u                /* rows per group at every level */
#define WV_F32_NEG_ZERO 0x80000000u  /* leaf for masked / padding rows */
#define WV_F32_CANON_NAN 0x7fc00000u
#define WV_F64_NEG_ZERO 0x8000000000000000u
#define WV_F64_CANON_NAN 0x7ff8000000000000u

int wv_reduce_validate(const wv_reduce_job *job, wave_error *err);
int wv_reduce_reference(const wv_reduce_job *job, wv_reduce_out *out,
                        wave_error *err);

/* G of docs/reduction.md over v[0..255] (v is clobbered). */
float wv_f32_group_tree(float v[256]);

/* The result rule of the float sum: count 0 -> +0.0, NaN -> canonical. */
uint32_t wv_f32_sum_finish(float sum, uint64_t count);

/* The same two for float64: G with binary64 additions, and its result. */
double wv_f64_group_tree(double v[256]);
uint64_t wv_f64_sum_finish(double sum, uint64_t count);

/* A job of issue 23: a 64-bit dtype, or argmin/argmax.  wv_dev_reduce
 * (workers/wvdev.c) runs one only on a backend whose caps say so, and
 * answers UNSUPPORTED on the others (the daemon names the device). */
static inline int wv_reduce_is_wide(wave_dtype d, wave_op op)
{
  return d == WAVE_U64 || d == WAVE_S64 || d == WAVE_F64 ||
         op == WAVE_ARGMIN || op == WAVE_ARGMAX;
}

/* Whether some selected row of a float32/float64 job is finite: what a float
 * min/max/extent partial must say besides its value (docs/reduction.md,
 * "Partials"), since "no finite row" is answered +0.0.  One pass that
 * stops at the first such row. */
int wv_reduce_any_finite(const wv_reduce_job *job);

/* A masked job as an unmasked one: what an unselected row may be
 * replaced by without changing the answer (the Vulkan backend's staging
 * and the daemon's file readers apply a mask so).  dup: a copy of any
 * selected row (min, max, extent: idempotent, and no constant is neutral
 * for both halves of extent); else the row bits `bits`: 0 for sum, or and
 * xor, all ones for and, -0.0 for the float sum (the leaf of an unselected
 * row), NaN for the float argmin/argmax (not considered, so the unmasked
 * job's count is the masked one's).  ok = 0 for the integer argmin/argmax:
 * a copy placed before the first selected row could take the index. */
typedef struct wv_mask_fill {
  uint64_t bits;
  int dup;
  int ok;
} wv_mask_fill;
wv_mask_fill wv_mask_fill_of(wave_dtype dt, wave_op op);

/* Mask row `row` (logical index) of a chunked mask: nonzero = selected. */
uint32_t wv_mask_at(const wv_reduce_job *job, uint64_t row);

#endif
