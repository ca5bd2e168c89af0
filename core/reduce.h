/* reduce.h - reduction semantics shared by every backend (docs/reduction.md).
 *
 *  - wv_reduce_validate(): the checks every job passes before a backend sees
 *    it (op defined for dtype, chunk lengths, mask length);
 *  - wv_reduce_reference(): the plain, obviously-correct transcription of
 *    docs/reduction.md that every backend is compared against;
 *  - small helpers backends share (the group tree G and the float-sum
 *    levels over it, NaN canonicalisation, "some selected row is finite").
 * The op table (what each op is over each dtype, the order keys, the fill
 * of unselected rows) is core/optable.h.
 */
#ifndef WV_REDUCE_H
#define WV_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "core/job.h"
#include "core/optable.h"
#include "wave/error.h"

#define WV_GROUP 256u                /* rows per group at every level */

int wv_reduce_validate(const wv_reduce_job *job, wave_error *err);
int wv_reduce_reference(const wv_reduce_job *job, wv_reduce_out *out,
                        wave_error *err);

/* G of docs/reduction.md over the 256 values at v (rows or leaves, read
 * only; vectorized, the same bits). */
float wv_f32_group_tree(const void *v);

/* The result rule of the float sum: count 0 -> +0.0, NaN -> canonical. */
uint32_t wv_f32_sum_finish(float sum, uint64_t count);

/* The same two for float64: G with binary64 additions, and its result. */
double wv_f64_group_tree(const void *v);
uint64_t wv_f64_sum_finish(double sum, uint64_t count);

/* The levels of docs/reduction.md over a[0..n-1], n >= 1, in place (a is
 * clobbered): returns the one value left.  n == 1 runs no level. */
float wv_f32_levels(float *a, size_t n);
double wv_f64_levels(double *a, size_t n);

/* The value of the one-chunk, unmasked float sum of rows[0..n-1], 1 <= n
 * <= WV_BLOCK (256^2), before the result rule: a chunk's level-2 partial
 * when rows start at a multiple of WV_BLOCK from the chunk's start (a
 * block of 256, its level-1 partial).  rows: little-endian, read with
 * memcpy (any alignment).  A stream reduces its pieces with these as they
 * arrive (daemon/bulk/stream.h); the chunk's value is then the levels over
 * its blocks' values, in order. */
#define WV_BLOCK (WV_GROUP * WV_GROUP)
float wv_f32_block(const void *rows, size_t n);
double wv_f64_block(const void *rows, size_t n);

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

/* What a job's answer out says of "some selected row is finite", for a
 * plan that says_finite (float min/max/extent; 0 for every other): rows
 * were selected, and the answer is not all +0.0, or else one pass
 * (wv_reduce_any_finite).  ReduceResult.finite, and a partial's. */
int wv_reduce_some_finite(const wv_reduce_job *job, const wv_reduce_out *out);

/* Mask row `row` (logical index) of a chunked mask: nonzero = selected. */
uint32_t wv_mask_at(const wv_reduce_job *job, uint64_t row);

#endif
