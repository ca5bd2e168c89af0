/* partial.h - docs/reduction.md "Partials": the one exact merge of the
 * answers of a reduction job's pieces, written once for every program that
 * cuts a job (the fleet coordinator, the daemon's file reader, the CPU
 * backend's items).  It stands on core/reduce.h (the float-sum levels) and
 * core/optable.h (each op's plan and order keys).
 *
 *  - wv_partial_acc: pieces in job order in, the whole job's bits out.
 *
 * A piece is the rows [a, a + r) of one input chunk, a a multiple of
 * P = 256^k from the chunk's start and r = min(P, rows - a), with the mask
 * rows of the same logical rows; its answer is that of a one-chunk job over
 * those rows.  P may differ from chunk to chunk, not inside one.  fsum
 * needs none of this: its pieces are any sets of rows, merged in any
 * order by integer addition (core/xsum.h).
 */
#ifndef WV_PARTIAL_H
#define WV_PARTIAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/job.h"
#include "core/optable.h"
#include "core/xsum.h"
#include "wave/error.h"

/* One piece's answer. */
typedef struct wv_partial {
  size_t chunk;        /* the job's input chunk it is a piece of */
  uint64_t bits[2];    /* the answer's bits ([min, max] for extent) */
  uint64_t count;      /* rows it selects (argmin/argmax: considers) */
  int finite;          /* float min/max/extent: a selected row is finite */
  int64_t index;       /* argmin/argmax: the answer's index in the piece */
  uint64_t offset;     /* argmin/argmax: the global index of the piece's
                          first row (the caller sets it) */
  wv_xsum xsum;        /* fsum: the piece's exact sum */
} wv_partial;

/* The piece answer o of the one-chunk job j as a partial of chunk `chunk`;
 * `finite` is wv_reduce_some_finite's (for the ops that say it).
 * offset is left 0: an argmin/argmax caller sets it after. */
void wv_partial_of(const wv_reduce_job *j, const wv_reduce_out *o,
                   size_t chunk, wv_partial *p);

typedef struct wv_partial_acc {
  wave_dtype dtype;
  wave_op op;
  uint64_t count;
  int have;            /* a piece selected a row (float: a finite one) */
  uint64_t lo, hi, acc;
  uint64_t index;      /* argmin/argmax: the global index of lo (have) */
  /* float sum: the values of the chunks closed so far, [0, n_chunks),
   * then the current chunk's piece values, [n_chunks, n_vals); float32
   * in vals, float64 in vals64 */
  float *vals;
  double *vals64;
  size_t n_chunks, n_vals, cap;
  size_t chunk;        /* the current chunk; SIZE_MAX before the first */
  wv_xsum xsum;        /* fsum: the exact sum of the pieces so far */
} wv_partial_acc;

/* cap: float-sum values to reserve (at most chunks + the largest chunk's
 * pieces are ever held; more grow the buffer). 0, or WAVE_ENOMEM. */
int wv_partial_init(wv_partial_acc *a, wave_dtype dt, wave_op op,
                    size_t cap, wave_error *err);
/* The next piece, in job order.  0, or WAVE_ENOMEM (float sum past cap). */
int wv_partial_add(wv_partial_acc *a, const wv_partial *p, wave_error *err);
/* The whole job's answer; *some_finite (may be NULL): float min/max/extent,
 * a selected row is finite (ReduceResult.finite).  Ends the accumulation. */
void wv_partial_result(wv_partial_acc *a, wv_reduce_out *out,
                       int *some_finite);
void wv_partial_fini(wv_partial_acc *a);

/* The n pieces p (job order) of a job of dt/op merged into out. */
int wv_partial_merge(wave_dtype dt, wave_op op, const wv_partial *p,
                     size_t n, wv_reduce_out *out, int *some_finite,
                     wave_error *err);

#endif
