/* job.h - a reduction job and its answer, as every layer sees them: the
 * client's fleet merge, the daemon's file reader and every backend.  Plain
 * data, no devices and no protobuf, so core/ can hold the rules over it.
 */
#ifndef WV_JOB_H
#define WV_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "core/xsum.h"
#include "wave/types.h"

/* One chunk of rows; data is little-endian rows of the job's dtype (4 or 8
 * bytes: wv_dtype_size; uint32 for mask chunks), any alignment of 4. */
typedef struct wv_span {
  const void *data;
  uint64_t rows;
} wv_span;

typedef struct wv_reduce_job {
  wave_dtype dtype;
  wave_op op;
  const wv_span *input;   /* chunks in order; each reduced on its own */
  size_t n_input;
  const wv_span *mask;    /* chunks of the row mask, boundaries independent */
  size_t n_mask;          /* of the input's */
  int has_mask;
  uint64_t rows;          /* total input rows (= total mask rows) */
} wv_reduce_job;

/* bits hold a value's raw pattern: 32-bit dtypes in the low 32 bits (the
 * high ones 0), so 32-bit users read and store (uint32_t)bits[i]. */
typedef struct wv_reduce_out {
  uint64_t bits[2];       /* result bits; [min, max] for extent */
  unsigned n_values;      /* 1, or 2 for extent */
  uint64_t count;         /* rows selected (argmin/argmax: rows considered,
                             docs/reduction.md) */
  int64_t index;          /* argmin/argmax: the global row, -1 for none;
                             0 for every other op */
  wv_xsum xsum;           /* fsum: the exact partial (bits[0] is
                             wv_xsum_round(&xsum, count)); zeros for every
                             other op */
  double transfer_s;      /* seconds the backend spent moving the input to
                             the device (staging copies, host-to-device
                             copies), a part of its run that may overlap
                             its kernels; 0 where it moved nothing (the
                             CPU reads host memory in place).  Not a
                             result: merges (core/partial.h) leave it 0,
                             and whoever runs several reduce calls for one
                             job adds theirs up (daemon/rq/slices.c) */
} wv_reduce_out;

#endif
