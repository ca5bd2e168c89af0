/* slices.c - a big reduction in slices (see slices.h).
 *
 * Two cursors walk the job, one over the input chunks and one over the
 * mask chunks, each at the next slice's first logical row; a slice takes
 * its rows from them as spans into the job's own memory (no copy), so a
 * slice costs one backend call and one partial.  Empty chunks give no
 * rows and are stepped over (they give no pieces: docs/reduction.md).
 *
 * Chunks cost too (issue 35, finding 2): a backend call spends on each
 * chunk about what SL_CHUNK_COST rows cost, so a slice also takes at most
 * slice_rows / SL_CHUNK_COST chunks, and a job of many tiny chunks yields
 * as often as one of a few big ones.  An order-free op simply stops its
 * slice at that many chunks.  A float sum of many chunks runs in blocks
 * of 256^k whole non-empty chunks, aligned at multiples of 256^k in chunk
 * order: the chunk values are reduced by the same levels as the rows, so
 * such a block's answer is exactly the node of the chunk values' tree
 * above those chunks (-0.0 padding changes no value), and the blocks'
 * values reduced by the levels give the tree's root.  The accumulator
 * takes each block as one "chunk" of one piece.  A long chunk in a block
 * (more than a 256th of a slice) is reduced first, in pieces of its own
 * (a power of 256 rows, one a step, merged by a second accumulator), and
 * its value then stands in the block's call as a one-row chunk, selected:
 * a one-row chunk's value is its row, so the block's answer is the same
 * node; only its count is the long chunk's, put back after the call.
 *
 * The plan of those cuts (pieces or blocks, the block's size, the long
 * chunks) needs every chunk's rows: one pass, made in steps of
 * SL_PLAN_CHUNKS before the first slice (wd_slices_plan), and only once
 * (it was made twice, whole, on the device thread before issue 35's
 * last round).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/rq/slices.h"
#include "core/base.h"
#include "core/optable.h"
#include "workers/wvdev.h"

#define SL_PIECE (1ull << 16)  /* 256^2: the smallest slice */
#define SL_CPU1 (1ull << 18)
#define SL_CPUN (1ull << 24)
#define SL_GPU (1ull << 32)
#define SL_CHUNK_COST 64       /* rows a chunk costs a backend call */
/* Chunks a step of a float sum's plan looks at: 16 slices' worth of an
 * order-free op, for a look is cheap (16 bytes read, 4 compares: 2 ns a
 * chunk on the 2-core VM, where an order-free slice of 4,096 one-row
 * chunks takes 165 us), so a step of 65,536 chunks (p = 2^18) costs
 * about a slice, 130 us. */
#define SL_PLAN_CHUNKS(p) ((size_t)((p) / SL_CHUNK_COST * 16))

static const uint32_t sl_one = 1;  /* the mask row of a long chunk's value */

/* The plan of a float sum on slices of p rows (wd_slices_plan), made by
 * one pass over the chunks in steps: f, a chunk's piece (the largest power
 * of 256 >= 256^2 within p); long_min, the rows above which a chunk in a
 * block is long (a 256th of p); and over the chunks seen so far, their
 * pieces of f rows, the non-empty ones, the longest, the long ones, and
 * the longest short one (most, SL_CHUNK_COST at least).  Then block,
 * whole chunks per block (0: pieces, one a slice), and the mode: 0 the
 * job runs whole, 1 pieces, 2 blocks. */
static void sl_plan_begin(sl_plan *pl, uint64_t p)
{
  *pl = (sl_plan){.p = p, .f = SL_PIECE, .long_min = p / 256,
                  .most = SL_CHUNK_COST};
  while (pl->f <= p / 256)
    pl->f *= 256;
}

/* Chunks [pl->next, end) into the plan. */
static void sl_plan_pass(sl_plan *pl, const wv_reduce_job *job, size_t end)
{
  uint64_t f = pl->f;
  for (size_t i = pl->next; i < end; i++) {
    uint64_t r = job->input[i].rows;
    if (r == 0)
      continue;
    pl->pieces += (r + f - 1) / f;
    pl->n++;
    if (r > pl->longest)
      pl->longest = r;
    if (r > pl->long_min)
      pl->n_long++;
    else if (r > pl->most)
      pl->most = r;
  }
  pl->next = end;
}

/* Once every chunk is in: the mode.  Blocks of b = 256^k whole chunks, b
 * times the longest short chunk (each costing SL_CHUNK_COST at least)
 * within p; a long one stands in its block as one row. */
static int sl_plan_mode(sl_plan *pl, const wv_reduce_job *job)
{
  uint64_t f = pl->f, p = pl->p;
  if (job->rows > f && pl->pieces <= 2 * ((job->rows + f - 1) / f))
    return 1;  /* few chunks: pieces of f rows */
  for (uint64_t k = 256; k <= p / pl->most; k *= 256)
    pl->block = k;
  if (pl->block == 0 || (pl->n <= pl->block && job->rows <= p))
    return 0;  /* one call of at most a slice */
  return 2;
}

/* An order-free op: chunks per slice at most. */
static uint64_t sl_max_chunks(uint64_t p)
{
  return p / SL_CHUNK_COST;
}

uint64_t wd_slices_device_rows(const wd_device_cfg *cfg, const wv_caps *caps)
{
  if (cfg->reduce_slice_rows != 0)  /* the configured size wins */
    return cfg->reduce_slice_rows;
  if (!caps->reads_host_memory)  /* a GPU: kernels take microseconds */
    return SL_GPU;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned threads = cfg->threads ? cfg->threads
                                  : (cores > 1 ? (unsigned)cores : 1);
  return threads == 1 ? SL_CPU1 : SL_CPUN;
}

void wd_slices_begin(wd_slices *s, const wv_reduce_job *job,
                     uint64_t slice_rows)
{
  *s = (wd_slices){.job = job, .p = slice_rows / SL_PIECE * SL_PIECE};
  if (s->p < SL_PIECE)
    s->p = SL_PIECE;
  s->fsum = (job->dtype == WAVE_F32 || job->dtype == WAVE_F64) &&
            job->op == WAVE_SUM;
  s->most = sl_max_chunks(s->p);
  sl_plan_begin(&s->plan, s->p);
  /* an order-free op's answer: p, or 0 when it fits in one slice */
  int fits = job->rows <= s->p && job->n_input <= s->most &&
             job->n_mask <= s->most;
  s->rows = slice_rows == 0 || (!s->fsum && fits) ? 0 : s->p;
  s->planned = !s->fsum || slice_rows == 0;
}

int wd_slices_plan(wd_slices *s, uint64_t *rows)
{
  const wv_reduce_job *job = s->job;
  if (!s->planned) {
    size_t end = job->n_input - s->plan.next > SL_PLAN_CHUNKS(s->p)
                     ? s->plan.next + SL_PLAN_CHUNKS(s->p)
                     : job->n_input;
    sl_plan_pass(&s->plan, job, end);
    if (end < job->n_input)
      return 0;
    /* the float sum's tree is cut only at powers of 256 (a chunk's
     * pieces) or at aligned blocks of whole chunks */
    s->mode = sl_plan_mode(&s->plan, job);
    s->rows = s->mode == 1 ? s->plan.f : s->mode == 2 ? s->p : 0;
    s->planned = 1;
  }
  *rows = s->rows;
  return 1;
}

uint64_t wd_slices_rows(const wv_reduce_job *job, uint64_t slice_rows)
{
  wd_slices s;
  uint64_t rows;
  wd_slices_begin(&s, job, slice_rows);
  while (!wd_slices_plan(&s, &rows))
    ;
  return rows;
}

int wd_slices_start(wd_slices *s, wave_error *err)
{
  const wv_reduce_job *job = s->job;
  size_t n_long = 0, cap = 0;  /* cap: chunk values + a chunk's pieces */
  if (s->fsum) {  /* pieces of P rows (f, as rows said), or blocks */
    if (s->mode == 1)
      s->p = s->plan.f;
    if (s->mode == 2) {
      s->block = s->plan.block;
      s->long_min = s->plan.long_min;
      s->piece = s->plan.f;
      n_long = s->plan.n_long;
    }
    cap = job->n_input + (size_t)((s->plan.longest + s->p - 1) / s->p);
  }
  /* a block's mask spans: a long chunk splits one, and adds its own */
  s->sub = calloc(job->n_input + job->n_mask + 2 * n_long + 2,
                  sizeof *s->sub);
  s->lv = n_long ? calloc(n_long, sizeof *s->lv) : NULL;
  if (s->sub == NULL || (n_long && s->lv == NULL)) {
    free(s->sub);
    free(s->lv);
    s->sub = NULL;
    s->lv = NULL;
    return wv_seterr(err, WAVE_ENOMEM, "slices of a %llu-row job",
                     (unsigned long long)job->rows);
  }
  int rc = wv_partial_init(&s->acc, job->dtype, job->op, cap, err);
  if (rc != 0) {
    free(s->sub);
    free(s->lv);
    s->sub = NULL;
    s->lv = NULL;
  }
  s->started = rc == 0;
  return rc;
}

int wd_slices_init(wd_slices *s, const wv_reduce_job *job, uint64_t p,
                   wave_error *err)
{
  uint64_t rows;
  wd_slices_begin(s, job, p);
  while (!wd_slices_plan(s, &rows))
    ;
  return wd_slices_start(s, err);
}

/* Move the cursor past chunks that have no rows left. */
static void sl_skip(const wv_span *c, size_t n, size_t *ci, uint64_t *off)
{
  while (*ci < n && *off == c[*ci].rows) {
    (*ci)++;
    *off = 0;
  }
}

/* Move the cursor r rows on. */
static void sl_pass(const wv_span *c, size_t n, size_t *ci, uint64_t *off,
                    uint64_t r)
{
  while (r > 0) {
    sl_skip(c, n, ci, off);
    assert(*ci < n);
    uint64_t t = c[*ci].rows - *off;
    if (t > r)
      t = r;
    *off += t;
    r -= t;
  }
}

/* The next r rows (of `size` bytes) of chunks c[0..n) from the cursor
 * (ci, off) as spans into out; the cursor moves past them.  Returns the
 * spans written. */
static size_t sl_take(const wv_span *c, size_t n, size_t *ci, uint64_t *off,
                      uint64_t r, unsigned size, wv_span *out)
{
  size_t k = 0;
  while (r > 0) {
    sl_skip(c, n, ci, off);
    assert(*ci < n);  /* a validated job has the rows it says */
    uint64_t t = c[*ci].rows - *off;
    if (t > r)
      t = r;
    out[k].data = (const uint8_t *)c[*ci].data + *off * size;
    out[k++].rows = t;
    *off += t;
    r -= t;
  }
  return k;
}

/* Rows in the next `most` chunks of c[0..n) from the cursor (ci, off). */
static uint64_t sl_rows_in(const wv_span *c, size_t n, size_t ci,
                           uint64_t off, uint64_t most)
{
  uint64_t r = 0;
  for (uint64_t k = 0; k < most && ci < n; k++, ci++, off = 0)
    r += c[ci].rows - off;
  return r;
}

/* One backend call over the spans in s->sub: ni inputs, then nm masks at
 * mask; its answer o. */
static int sl_call(wd_slices *s, const wv_dev *dev, size_t ni,
                   const wv_span *mask, size_t nm, uint64_t rows,
                   wv_reduce_job *sub, wv_reduce_out *o, wave_error *err)
{
  const wv_reduce_job *j = s->job;
  *sub = (wv_reduce_job){
    .dtype = j->dtype,
    .op = j->op,
    .input = s->sub,
    .n_input = ni,
    .mask = mask,
    .n_mask = nm,
    .has_mask = j->has_mask,
    .rows = rows,
  };
  memset(o, 0, sizeof *o);
  int rc = wv_dev_reduce(dev, sub, o, err);
  s->transfer += o->transfer_s;  /* every call's copies: the job's */
  return rc;
}

/* A block begins at the input cursor: its end, rows and long chunks. */
static void sl_block_open(wd_slices *s)
{
  const wv_reduce_job *j = s->job;
  sl_skip(j->input, j->n_input, &s->ic, &s->ioff);
  size_t ci = s->ic;
  s->brows = 0;
  s->blong = s->bdone = 0;
  for (uint64_t k = 0; k < s->block && ci < j->n_input; ci++)
    if (j->input[ci].rows > 0) {
      s->brows += j->input[ci].rows;
      s->blong += j->input[ci].rows > s->long_min;
      k++;
    }
  s->bend = ci;
  s->li = s->ic;
  s->loff = 0;
  s->lmc = s->mc;
  s->lmoff = s->moff;
  s->lcount = 0;
  s->open = 1;
}

/* The next piece of the block's next long chunk (one call); its value,
 * once its last piece is in, is s->lv[s->bdone++]. */
static int sl_long_step(wd_slices *s, const wv_dev *dev, wave_error *err)
{
  const wv_reduce_job *j = s->job;
  while (j->input[s->li].rows <= s->long_min) {  /* short: passed */
    if (j->has_mask)
      sl_pass(j->mask, j->n_mask, &s->lmc, &s->lmoff, j->input[s->li].rows);
    s->li++;
  }
  const wv_span *c = &j->input[s->li];
  unsigned size = wv_dtype_size(j->dtype);
  int rc;
  if (s->loff == 0 &&
      (rc = wv_partial_init(&s->lacc, j->dtype, j->op,
                            (size_t)((c->rows + s->piece - 1) / s->piece),
                            err)) != 0)
    return rc;
  s->lacc_on = 1;
  uint64_t r = c->rows - s->loff;
  if (r > s->piece)
    r = s->piece;
  s->sub[0] = (wv_span){(const uint8_t *)c->data + s->loff * size, r};
  size_t nm = j->has_mask ? sl_take(j->mask, j->n_mask, &s->lmc, &s->lmoff,
                                    r, 4, s->sub + 1)
                          : 0;
  wv_reduce_job sub;
  wv_reduce_out o;
  if ((rc = sl_call(s, dev, 1, s->sub + 1, nm, r, &sub, &o, err)) != 0)
    return rc;
  wv_partial p;
  wv_partial_of(&sub, &o, 0, &p);
  if ((rc = wv_partial_add(&s->lacc, &p, err)) != 0)
    return rc;
  if ((s->loff += r) < c->rows)
    return 0;
  wv_reduce_out v;
  wv_partial_result(&s->lacc, &v, NULL);
  wv_partial_fini(&s->lacc);
  s->lacc_on = 0;
  /* its tree value: all masked out is -0.0 (the result says +0.0) */
  uint64_t bits = v.count > 0 ? v.bits[0]
                  : size == 4 ? WV_F32_NEG_ZERO : WV_F64_NEG_ZERO;
  if (size == 4) {
    uint32_t b32 = (uint32_t)bits;
    memcpy(&s->lv[s->bdone], &b32, 4);
  } else {
    s->lv[s->bdone] = bits;
  }
  s->lcount += v.count;
  s->bdone++;
  s->li++;
  s->loff = 0;
  return 0;
}

/* The block's call: its short chunks in place, each long one as its value
 * (one selected row); the answer is one "chunk" of the accumulator. */
static int sl_block_call(wd_slices *s, const wv_dev *dev, int *last,
                         wave_error *err)
{
  const wv_reduce_job *j = s->job;
  wv_span *mk = s->sub + j->n_input + 1;
  size_t ni = 0, nm = 0, nl = 0;
  uint64_t run = 0, rows = 0;  /* mask rows not taken yet; the call's rows */
  for (size_t ci = s->ic; ci < s->bend; ci++) {
    const wv_span *c = &j->input[ci];
    if (c->rows == 0)
      continue;
    if (c->rows <= s->long_min) {
      s->sub[ni++] = *c;
      run += c->rows;
      rows += c->rows;
      continue;
    }
    if (j->has_mask) {
      nm += sl_take(j->mask, j->n_mask, &s->mc, &s->moff, run, 4, mk + nm);
      sl_pass(j->mask, j->n_mask, &s->mc, &s->moff, c->rows);
      mk[nm++] = (wv_span){&sl_one, 1};
    }
    run = 0;
    s->sub[ni++] = (wv_span){&s->lv[nl++], 1};
    rows++;
  }
  if (j->has_mask)
    nm += sl_take(j->mask, j->n_mask, &s->mc, &s->moff, run, 4, mk + nm);
  wv_reduce_job sub;
  wv_reduce_out o;
  int rc = sl_call(s, dev, ni, mk, nm, rows, &sub, &o, err);
  if (rc != 0)
    return rc;
  o.count = o.count - nl + s->lcount;  /* each value stood for its chunk */
  wv_partial p;
  wv_partial_of(&sub, &o, s->nblk++, &p);
  p.offset = s->lrow;
  if ((rc = wv_partial_add(&s->acc, &p, err)) != 0)
    return rc;
  s->lrow += s->brows;
  s->ic = s->bend;
  s->ioff = 0;
  s->open = 0;
  *last = s->lrow == j->rows;
  return 0;
}

int wd_slices_step(wd_slices *s, const wv_dev *dev, int *last,
                   wave_error *err)
{
  *last = 0;
  const wv_reduce_job *j = s->job;
  if (s->block) {  /* the next block of whole non-empty chunks */
    if (!s->open)
      sl_block_open(s);
    if (s->bdone < s->blong)  /* its long chunks first, a piece a step */
      return sl_long_step(s, dev, err);
    return sl_block_call(s, dev, last, err);
  }
  uint64_t r = j->rows - s->lrow;
  size_t chunk = 0;
  if (s->fsum) {  /* one piece: the rest of this chunk, <= p rows */
    sl_skip(j->input, j->n_input, &s->ic, &s->ioff);
    r = j->input[s->ic].rows - s->ioff;
    chunk = s->ic;
  } else {  /* order-free: at most s->most chunks of inputs and masks */
    sl_skip(j->input, j->n_input, &s->ic, &s->ioff);
    if (j->has_mask)
      sl_skip(j->mask, j->n_mask, &s->mc, &s->moff);
    uint64_t in = sl_rows_in(j->input, j->n_input, s->ic, s->ioff, s->most);
    uint64_t mk = j->has_mask
                      ? sl_rows_in(j->mask, j->n_mask, s->mc, s->moff, s->most)
                      : in;
    r = in < mk ? in : mk;
  }
  if (r > s->p)
    r = s->p;
  size_t ni = sl_take(j->input, j->n_input, &s->ic, &s->ioff, r,
                      wv_dtype_size(j->dtype), s->sub);
  size_t nm = j->has_mask ? sl_take(j->mask, j->n_mask, &s->mc, &s->moff, r,
                                    4, s->sub + ni)
                          : 0;
  wv_reduce_job sub;
  wv_reduce_out o;
  int rc = sl_call(s, dev, ni, s->sub + ni, nm, r, &sub, &o, err);
  if (rc != 0)
    return rc;
  wv_partial p;
  wv_partial_of(&sub, &o, chunk, &p);
  p.offset = s->lrow;  /* argmin/argmax: the slice's first logical row */
  if ((rc = wv_partial_add(&s->acc, &p, err)) != 0)
    return rc;
  s->lrow += r;
  *last = s->lrow == j->rows;
  return 0;
}

void wd_slices_result(wd_slices *s, wv_reduce_out *out, int *some_finite)
{
  wv_partial_result(&s->acc, out, some_finite);
  out->transfer_s = s->transfer;
}

void wd_slices_fini(wd_slices *s)
{
  wv_partial_fini(&s->acc);
  if (s->lacc_on)
    wv_partial_fini(&s->lacc);
  s->lacc_on = 0;
  free(s->sub);
  free(s->lv);
  s->sub = NULL;
  s->lv = NULL;
}
