/* slices.h - a big reduction run as a sequence of slices, so that its
 * device can serve another client's reduction between two of them
 * (daemon/exec/device.c, WD_RUN_MORE), with the bits of the whole job.
 *
 * A slice is one backend call over a sub-job of the job's rows; each
 * slice's answer is a partial of docs/reduction.md "Partials", merged in
 * job order by core/partial.c (the one exact merge):
 *  - float sum: a slice is one piece, the rows [a, a + r) of one input
 *    chunk, a a multiple of P counted from the chunk's start and
 *    r = min(P, rows - a), P a power of 256 (>= 256^2): exactly the
 *    chunk's level-k partial for its rows;
 *  - a float sum of many chunks (issue 35): a slice is a block of 256^k
 *    whole non-empty chunks, aligned in chunk order: the node of the
 *    chunk values' tree above them.  A long chunk among them (more than a
 *    256th of a slice) is first reduced in pieces of its own, a slice
 *    each, and stands in its block's call as its value, one row;
 *  - every other op is order-free: a slice is the next P logical rows of
 *    the job (P a multiple of 65536), across chunk boundaries, and at most
 *    P / 64 chunks (a chunk costs a call about 64 rows).
 * The mask rows of a slice are the same logical rows, in the mask chunks
 * that hold them.  Spans are used in place (memory only: a file region's
 * job is read by bulk/filered.c and is not sliced here).
 *
 * How a float sum is cut depends on all its chunks, so its plan is one
 * pass over them, made in steps (wd_slices_plan) of a slice's worth of
 * chunks, between which the device serves another client as it does
 * between slices (issue 35: the pass over 4M chunks held the device
 * 17-23 ms before the first slice).  The other ops need no pass.
 */
#ifndef WD_SLICES_H
#define WD_SLICES_H

#include <stddef.h>
#include <stdint.h>

#include "core/job.h"
#include "core/partial.h"
#include "daemon/config.h"
#include "workers/worker.h"
#include "workers/wvdev.h"

/* A float sum's plan, over the chunks [0, next) so far (slices.c). */
typedef struct sl_plan {
  uint64_t p, f, long_min, most;
  size_t next;
  uint64_t pieces, n, longest;
  size_t n_long;
  uint64_t block;
} sl_plan;

typedef struct wd_slices {
  const wv_reduce_job *job;
  sl_plan plan;          /* the plan, while !planned: */
  int planned, mode;     /* ... then its mode (0 whole, 1 pieces, 2 blocks) */
  int started;           /* wd_slices_start made its buffers */
  uint64_t rows;         /* ... and wd_slices_rows's answer */
  uint64_t p;            /* rows per slice */
  int fsum;              /* float sum: slices are pieces of one chunk */
  uint64_t lrow;         /* next slice's first logical row */
  size_t ic;             /* its input chunk, and its row there */
  uint64_t ioff;
  size_t mc;             /* the mask chunk holding lrow, and its row */
  uint64_t moff;
  uint64_t most;         /* order-free: chunks per slice at most */
  uint64_t block;        /* float sum in blocks: whole chunks per block
                          * (256^k), else 0 */
  uint64_t long_min;     /* ... a chunk of more rows is long: */
  uint64_t piece;        /* reduced first, in pieces of this many rows */
  size_t nblk;           /* blocks done (each one "chunk" of the merge) */
  int open;              /* the block under way: */
  size_t bend;           /* the chunk after its last */
  uint64_t brows;        /* its rows */
  size_t blong, bdone;   /* its long chunks, and those reduced */
  size_t li;             /* the long chunk under way (or a chunk before) */
  uint64_t loff;         /* its rows done */
  size_t lmc;            /* the mask cursor at row loff of chunk li */
  uint64_t lmoff;
  uint64_t lcount;       /* rows the block's long chunks selected */
  uint64_t *lv;          /* their values, one row each (4 or 8 bytes) */
  wv_partial_acc lacc;   /* the pieces of the long chunk under way */
  int lacc_on;
  wv_span *sub;          /* the slice's spans: inputs, then masks */
  wv_partial_acc acc;
  double transfer;       /* the slices' transfer_s, added up */
} wd_slices;

/* Rows per slice on a device: devices[].reduce_slice_rows, or when 0 the
 * device's default (docs/config.md): the CPU reference (caps.reads_host_memory:
 * the host's own threads), one thread 2^18 rows (1 MiB, about 40 us),
 * more threads 256^3 (a slice keeps them all busy, and float sums can be
 * cut there); a GPU 256^4 (its jobs stay whole unless huge). */
uint64_t wd_slices_device_rows(const wd_device_cfg *cfg, const wv_caps *caps);

/* The way the device thread starts a job (rq/reduce.c), in steps:
 * begin (no pass over the chunks), then wd_slices_plan until it returns 1
 * (each call looks at a slice's worth of chunks, 1 step for every op but
 * a float sum of many chunks), then, unless *rows is 0 (the job runs
 * whole), wd_slices_start.  job: validated, in memory, kept by the caller;
 * slice_rows: wd_slices_device_rows. */
void wd_slices_begin(wd_slices *s, const wv_reduce_job *job,
                     uint64_t slice_rows);
/* 0: call again; 1: planned, *rows as wd_slices_rows says. */
int wd_slices_plan(wd_slices *s, uint64_t *rows);
/* A planned job's buffers.  0, or WAVE_ENOMEM (then wd_slices_fini). */
int wd_slices_start(wd_slices *s, wave_error *err);

/* Rows per slice of job on a device of slice_rows (wd_slices_device_rows),
 * or 0 when the job runs whole: it fits in one slice (for a float sum:
 * at most a block of chunks and a slice of rows).  The whole plan at once. */
uint64_t wd_slices_rows(const wv_reduce_job *job, uint64_t slice_rows);

/* job (validated, in memory) in slices of p rows (wd_slices_rows): begin,
 * the whole plan and start at once.  0, or WAVE_ENOMEM. */
int wd_slices_init(wd_slices *s, const wv_reduce_job *job, uint64_t p,
                   wave_error *err);
/* The next slice on the device; *last once that was the last (the answer
 * is ready).  0, or a WAVE_E* error (the backend's, or WAVE_ENOMEM). */
int wd_slices_step(wd_slices *s, const wv_dev *dev, int *last,
                   wave_error *err);
/* The whole job's answer once wd_slices_step returned 1; *some_finite as
 * wv_partial_result says (ReduceResult.finite); its transfer_s is every
 * slice's. */
void wd_slices_result(wd_slices *s, wv_reduce_out *out, int *some_finite);
void wd_slices_fini(wd_slices *s);

#endif
