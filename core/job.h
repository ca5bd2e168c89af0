/* job.h - a reduction job and its answer, as every layer sees them: the
 * client's fleet merge, the daemon's file reader and every backend.  Plain
 * data, no devices and no protobuf, so core/ can hold the rules over it.
 */
#ifndef WV_JOB_H
#define WV_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "wave/types.h"

/* One chunk of rows; data is little-endian rows of the job's dtype (uint32
 * for mask chunks), any alignment of 4. */
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

typedef struct wv_reduce_out {
  uint32_t bits[2];       /* result bits; [min, max] for extent */
  unsigned n_values;      /* 1, or 2 for extent */
  uint64_t count;         /* rows selected */
} wv_reduce_out;

#endif
