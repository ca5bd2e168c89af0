/* cpu_items.c - the CPU backend's reduce slot: one item planner for every
 * dtype and op, on the op table (core/optable.h).
 *
 * Work split.  Every non-empty input chunk is cut into items of 65536 rows
 * (the last item of a chunk may be shorter), starting at the chunk's first
 * row; items are batched into pool tasks of at least 65536 rows so that a
 * job of many tiny chunks does not cost one task per chunk.  The plan's
 * row bytes and path pick the item kernel (cpu_reduce.c: 32 bits,
 * cpu_wide.c: 64 bits and argmin/argmax); none looks at the op.
 *
 * Merge.  An item is a piece of docs/reduction.md "Partials" (65536 =
 * 256^2 rows from a multiple of 65536 of its chunk), so the items merge
 * with core/partial.c, which holds every op's rule: the accumulators with
 * the op, keyed items by their values under the total order (a float item
 * without a finite row is skipped: its lo key is above its hi key), arg
 * items by value then the lowest global index, float-sum items by the
 * remaining levels per chunk and then over the chunk values.
 *
 * fsum (cpu_xsum.c) needs no pieces: each worker adds its items' rows to
 * its own exact accumulator, and the workers' sums merge in any order.
 */
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/partial.h"
#include "core/reduce.h"
#include "workers/cpu/cpu.h"

const unsigned char *wv_cpu_mask_run(const wv_cpu_job *c, uint64_t row,
                                     size_t *k, uint64_t *avail)
{
  const uint64_t *mb = c->mbase;
  size_t i = *k;
  if (!(mb[i] <= row && row < mb[i + 1])) {
    if (mb[i + 1] == row && i + 1 < c->job->n_mask && row < mb[i + 2]) {
      i++;                                   /* the common step forward */
    } else {
      size_t lo = 0, hi = c->job->n_mask;    /* first i: mb[i + 1] > row */
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (mb[mid + 1] > row)
          hi = mid;
        else
          lo = mid + 1;
      }
      i = lo;
    }
  }
  *k = i;
  *avail = mb[i + 1] - row;
  return (const unsigned char *)c->job->mask[i].data + 4 * (row - mb[i]);
}

const unsigned char *wv_cpu_mask_rows(const wv_cpu_job *c, uint64_t row,
                                      size_t n, size_t *k,
                                      unsigned char *buf)
{
  uint64_t avail;
  const unsigned char *m = wv_cpu_mask_run(c, row, k, &avail);
  if (avail >= n)
    return m;
  for (size_t done = 0; done < n;) {
    m = wv_cpu_mask_run(c, row + done, k, &avail);
    size_t take = avail < n - done ? (size_t)avail : n - done;
    memcpy(buf + 4 * done, m, 4 * take);
    done += take;
  }
  return buf;
}

/* The items, their tasks and the mask chunks' first rows. */
static int ci_plan(wv_cpu_job *c, wave_error *err)
{
  const wv_reduce_job *job = c->job;
  size_t n = 0;
  for (size_t i = 0; i < job->n_input; i++)
    n += (size_t)((job->input[i].rows + WV_CPU_ITEM_ROWS - 1) /
                  WV_CPU_ITEM_ROWS);
  c->items = malloc(n * sizeof *c->items);
  c->task_first = malloc((n + 1) * sizeof *c->task_first);
  if (job->has_mask)
    c->mbase = malloc((job->n_mask + 1) * sizeof *c->mbase);
  if (c->items == NULL || c->task_first == NULL ||
      (job->has_mask && c->mbase == NULL))
    return wv_seterr(err, WAVE_ENOMEM, "cpu reduce: plan of %zu items", n);
  if (job->has_mask) {
    c->mbase[0] = 0;
    for (size_t i = 0; i < job->n_mask; i++)
      c->mbase[i + 1] = c->mbase[i] + job->mask[i].rows;
  }
  uint64_t lrow = 0, task_rows = 0;
  for (size_t i = 0; i < job->n_input; i++) {
    for (uint64_t s = 0; s < job->input[i].rows; s += WV_CPU_ITEM_ROWS) {
      uint64_t r = job->input[i].rows - s;
      wv_cpu_item *it = &c->items[c->n_items];
      *it = (wv_cpu_item){.chunk = i, .start = s, .lrow = lrow,
                          .rows = r < WV_CPU_ITEM_ROWS ? r
                                                       : WV_CPU_ITEM_ROWS};
      if (task_rows == 0)
        c->task_first[c->n_tasks++] = c->n_items;
      c->n_items++;
      task_rows += it->rows;
      if (task_rows >= WV_CPU_ITEM_ROWS)
        task_rows = 0;
      lrow += it->rows;
    }
  }
  c->task_first[c->n_tasks] = c->n_items;
  return 0;
}

typedef struct ci_run {
  const wv_cpu_job *job;
  void (*kernel)(const wv_cpu_job *c, wv_cpu_item *it);
} ci_run;

/* fsum: the items of a task into the worker's accumulator. */
static void ci_xtask(void *arg, size_t task, unsigned worker)
{
  const ci_run *r = arg;
  for (size_t i = r->job->task_first[task];
       i < r->job->task_first[task + 1]; i++)
    wv_cpu_xsum_item(r->job, &r->job->items[i], worker);
}

/* fsum: the counts of the items, the workers' sums merged (any order). */
static void ci_xfinish(wv_device *dev, const wv_cpu_job *c,
                       wv_reduce_out *out)
{
  for (size_t i = 0; i < c->n_items; i++)
    out->count += c->items[i].count;
  wv_cpu_xacc_result(c->xacc, dev->threads, c->plan->row_bytes == 8,
                     &out->xsum);
  out->bits[0] = wv_xsum_round(&out->xsum, out->count);
}

static void ci_task(void *arg, size_t task, unsigned worker)
{
  (void)worker;
  const ci_run *r = arg;
  wv_cpu_item *items = r->job->items;
  for (size_t i = r->job->task_first[task];
       i < r->job->task_first[task + 1]; i++)
    r->kernel(r->job, &items[i]);
}

/* Item it as a piece's answer (partial.h). */
static void ci_partial(const wv_cpu_job *c, const wv_cpu_item *it,
                       wv_partial *p)
{
  const wv_op_plan *pl = c->plan;
  *p = (wv_partial){.chunk = it->chunk, .count = it->count, .finite = 1,
                    .index = (int64_t)it->index};
  if (pl->path == WV_PATH_ARG) {
    p->bits[0] = it->count > 0 ? wv_unkey_of(pl->key, pl->row_bytes, it->a)
                               : 0;
  } else if (pl->keyed) {
    p->finite = it->a <= it->b;  /* a row took part (float: finite) */
    uint64_t first = pl->halves & WV_HALF_LO ? it->a : it->b;
    p->bits[0] = wv_unkey_of(pl->key, pl->row_bytes, first);
    if (pl->n_values > 1)
      p->bits[1] = wv_unkey_of(pl->key, pl->row_bytes, it->b);
  } else {
    p->bits[0] = it->a;  /* an accumulator, or a float sum's value */
  }
}

static int ci_finish(const wv_cpu_job *c, wv_reduce_out *out,
                     wave_error *err)
{
  wv_partial_acc a;
  size_t cap = c->plan->path == WV_PATH_FSUM ? c->n_items : 0;
  int rc = wv_partial_init(&a, c->job->dtype, c->job->op, cap, err);
  for (size_t i = 0; rc == 0 && i < c->n_items; i++) {
    wv_partial p;
    ci_partial(c, &c->items[i], &p);
    rc = wv_partial_add(&a, &p, err);
  }
  if (rc == 0)
    wv_partial_result(&a, out, NULL);
  wv_partial_fini(&a);
  return rc;
}

int wv_cpu_reduce(wv_device *dev, const wv_reduce_job *job,
                  wv_reduce_out *out, wave_error *err)
{
  const wv_op_plan *pl = wv_op_plan_of(job->dtype, job->op);
  memset(out, 0, sizeof *out);
  if (pl->rc != 0)  /* validated before a backend sees it; said anyway */
    return wv_seterr(err, pl->rc, "cpu reduce: op %s over %s",
                     wave_op_name(job->op), wave_dtype_name(job->dtype));
  out->n_values = pl->n_values;
  if (pl->path == WV_PATH_ARG)
    out->index = -1;
  if (pl->path == WV_PATH_XSUM)
    wv_xsum_init(&out->xsum, job->dtype);
  if (job->rows == 0)
    return 0;  /* empty: zeros, count 0 */

  wv_cpu_job c = {.job = job, .plan = pl};
  ci_run r = {.job = &c};
  if (pl->path == WV_PATH_FSUM)
    r.kernel = pl->row_bytes == 4 ? wv_cpu_fsum32 : wv_cpu_fsum64;
  else if (pl->row_bytes == 4 && pl->path != WV_PATH_ARG)
    r.kernel = wv_cpu_scan32;
  else
    r.kernel = wv_cpu_scan64;
  int rc = ci_plan(&c, err);
  if (rc == 0 && pl->path == WV_PATH_XSUM) {
    if ((c.xacc = wv_cpu_xacc_new(dev->threads, job->dtype)) == NULL) {
      rc = wv_seterr(err, WAVE_ENOMEM, "cpu fsum: %u accumulators",
                     dev->threads);
    } else {
      wv_cpu_pool_run(dev, c.n_tasks, ci_xtask, &r);
      ci_xfinish(dev, &c, out);
    }
  } else if (rc == 0) {
    wv_cpu_pool_run(dev, c.n_tasks, ci_task, &r);
    rc = ci_finish(&c, out, err);
  }
  free(c.xacc);
  free(c.items);
  free(c.task_first);
  free(c.mbase);
  return rc;
}
