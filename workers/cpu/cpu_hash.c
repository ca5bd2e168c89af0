/* cpu_hash.c - hash jobs on the CPU backend (docs/hash.md).
 *
 * Lanes across SIMD: a task is a block of CH_UNITS units = CH_L lanes, and
 * the registers are held register-major, r[j][0 .. CH_L-1], so every
 * instruction is one loop over CH_L independent lanes that GCC vectorizes
 * (built for x86-64-v4, AVX2 and baseline, picked at load time; 64-bit
 * multiplies are one instruction only with AVX-512DQ).  A `load` is CH_L
 * independent random reads: that is the memory-level parallelism the hash
 * is bound by.  An `xchg` copies the source register to a temporary, then
 * reads lane l ^ m: the "lanes" exchange path (no shuffle, no barrier).
 * Units across threads: blocks are the tasks of wv_cpu_pool_run().
 *
 * The dataset is generated once per device in hash_prepare_step (in
 * parallel on the pool, several items per thread in flight; 16 MiB a step) and kept in hash_state
 * until the device closes.  It is keyed by the parameters it is a function
 * of (seed, cache and dataset sizes, parents), not by pack pointer, so a
 * reloaded pack with the same dataset reuses it.  Datasets are allocated on
 * 2 MiB boundaries with transparent huge pages requested: random reads over
 * 1 GiB would otherwise miss the TLB on nearly every load.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/base.h"
#include "workers/cpu/cpu.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"

#define CH_UNITS 4u
#define CH_L (CH_UNITS * WV_LANES)
#define CH_GEN_ITEMS (1u << 16)   /* dataset items per generation task */
#define CH_STEP_ITEMS (1u << 21) /* dataset items per prepare step */
#define CH_MAX_DATASETS 8u
#define CH_HUGE (2u << 20)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CH_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define CH_CLONES
#endif

typedef struct ch_dataset {
  uint64_t seed, cache_items, dataset_items;
  unsigned parents;
  uint64_t *items;
  size_t bytes;
} ch_dataset;

typedef struct ch_state {
  size_t n;
  ch_dataset ds[CH_MAX_DATASETS];
  ch_dataset pending;    /* being generated, step by step */
  uint64_t next_item;    /* of pending */
} ch_state;

static void ch_state_free(void *arg)
{
  ch_state *s = arg;
  for (size_t i = 0; i < s->n; i++)
    free(s->ds[i].items);
  free(s->pending.items);
  free(s);
}

static const ch_dataset *ch_find(const wv_device *dev, const wv_pack *p)
{
  const ch_state *s = dev->hash_state;
  for (size_t i = 0; s != NULL && i < s->n; i++) {
    const ch_dataset *d = &s->ds[i];
    if (d->seed == p->seed && d->cache_items == p->cache_items &&
        d->dataset_items == p->dataset_items && d->parents == p->parents)
      return d;
  }
  return NULL;
}

/* ---- dataset generation ------------------------------------------------- */

typedef struct ch_gen {
  const wv_pack *p;
  const uint64_t *cache;
  uint64_t *items;       /* item `first` goes to items[0] */
  uint64_t first, end;   /* this step's items */
} ch_gen;

static void ch_gen_task(void *arg, size_t task, unsigned worker)
{
  const ch_gen *g = arg;
  uint64_t first = g->first + (uint64_t)task * CH_GEN_ITEMS;
  uint64_t n = g->end - first;
  if (n > CH_GEN_ITEMS)
    n = CH_GEN_ITEMS;
  wv_pack_dataset_range(g->p, g->cache, first, n, g->items + (first - g->first));
}

/* One step of a dataset's generation: CH_STEP_ITEMS items (16 MiB; a
 * fraction of a second on a few cores), so the daemon serves reductions
 * between steps.  The dataset being built is s->pending until its last
 * step moves it into s->ds. */
int wv_cpu_hash_prepare_step(wv_device *dev, const wv_pack *p, int *done,
                             wave_error *err)
{
  *done = 0;
  if (p->closed || ch_find(dev, p) != NULL) {
    *done = 1;
    return 0;
  }
  if (dev->hash_state == NULL) {
    if ((dev->hash_state = calloc(1, sizeof(ch_state))) == NULL)
      return wv_seterr(err, WAVE_ENOMEM, "%s: hash state", dev->name);
    dev->hash_state_free = ch_state_free;
  }
  ch_state *s = dev->hash_state;
  ch_dataset *pd = &s->pending;
  if (pd->items != NULL &&
      !(pd->seed == p->seed && pd->cache_items == p->cache_items &&
        pd->dataset_items == p->dataset_items && pd->parents == p->parents)) {
    free(pd->items);  /* another pack's, abandoned half-way */
    memset(pd, 0, sizeof *pd);
  }
  if (s->n == CH_MAX_DATASETS)
    return wv_seterr(err, WAVE_ENOMEM, "%s: more than %u datasets", dev->name,
                     CH_MAX_DATASETS);
  const uint64_t *cache;
  int rv = wv_pack_cache_get(p, &cache, err);
  if (rv != 0)
    return rv;
  if (pd->items == NULL) {
    size_t bytes = (size_t)(p->dataset_items * sizeof(uint64_t));
    size_t alloc = (bytes + CH_HUGE - 1) / CH_HUGE * CH_HUGE;
    uint64_t *items = aligned_alloc(CH_HUGE, alloc);
    if (items == NULL)
      return wv_seterr(err, WAVE_ENOMEM, "%s: dataset of pack %s (%zu bytes)",
                       dev->name, p->name, bytes);
#ifdef MADV_HUGEPAGE
    madvise(items, alloc, MADV_HUGEPAGE);  /* advice only: failure is fine */
#endif
    *pd = (ch_dataset){p->seed, p->cache_items, p->dataset_items, p->parents,
                       items, bytes};
    s->next_item = 0;
  }
  uint64_t n = p->dataset_items - s->next_item;
  if (n > CH_STEP_ITEMS)
    n = CH_STEP_ITEMS;
  ch_gen g = {p, cache, pd->items + s->next_item, s->next_item,
              s->next_item + n};
  size_t tasks = (size_t)((n + CH_GEN_ITEMS - 1) / CH_GEN_ITEMS);
  wv_cpu_pool_run(dev, tasks, ch_gen_task, &g);
  s->next_item += n;
  if (s->next_item == p->dataset_items) {
    s->ds[s->n++] = *pd;
    memset(pd, 0, sizeof *pd);
    *done = 1;
  }
  return 0;
}

/* The steps above: one per CH_STEP_ITEMS items; a closed-form pack, or one
 * whose dataset this device holds already, is one step that does nothing. */
unsigned wv_cpu_hash_prepare_steps(wv_device *dev, const wv_pack *p)
{
  if (p->closed || ch_find(dev, p) != NULL)
    return 1;
  return (unsigned)((p->dataset_items + CH_STEP_ITEMS - 1) / CH_STEP_ITEMS);
}

int wv_cpu_hash_prepare(wv_device *dev, const wv_pack *p, wave_error *err)
{
  int done = 0, rv;
  while (!done)
    if ((rv = wv_cpu_hash_prepare_step(dev, p, &done, err)) != 0)
      return rv;
  return 0;
}

/* ---- the hash ----------------------------------------------------------- */

typedef struct ch_job {
  const wv_pack *p;
  const uint64_t *dataset;  /* NULL: closed form */
  uint64_t nonce, last;     /* requested [nonce, last] */
  uint64_t unit0;           /* first unit of task 0 */
  uint64_t *out;
} ch_job;

/* CH_L lanes = CH_UNITS units starting at unit0, outputs into out[CH_L]. */
CH_CLONES static void ch_block(const wv_pack *p, const uint64_t *dataset,
                               uint64_t unit0, uint64_t *out)
{
  uint64_t r[WV_REGS_MAX][CH_L] __attribute__((aligned(64)));  /* 32 KiB */
  uint64_t tmp[CH_L] __attribute__((aligned(64)));
  const unsigned nregs = p->registers;
  const uint64_t seed = p->seed, mask = p->item_mask, key = p->closed_key;
  const uint64_t n0 = unit0 * WV_LANES;

  for (unsigned l = 0; l < CH_L; l++)
    tmp[l] = wv_mix64((n0 + l) ^ seed ^ WV_TAG_LANE);
  for (unsigned j = 0; j < nregs; j++)
    for (unsigned l = 0; l < CH_L; l++)
      r[j][l] = wv_mix64(tmp[l] + (uint64_t)(j + 1) * WV_GAMMA);

  for (unsigned round = 0; round < p->rounds; round++)
    for (unsigned pc = 0; pc < WV_PROGRAM_LEN; pc++) {
      const wv_insn *in = &p->program[pc];
      uint64_t *d = r[in->dst];
      const uint64_t *a = r[in->a];
      /* b is a register only for add..mul (else a shift or distance). */
      const uint64_t *b = r[in->op <= WV_OP_MUL ? in->b : 0];
      const unsigned k = in->b;
      const uint64_t imm = in->imm;
      /* d may equal a or b, but only lane l of each is touched in step l,
       * so there is no dependency between lanes: ivdep. */
      switch (in->op) {
      case WV_OP_ADD:
#pragma GCC ivdep
        for (unsigned l = 0; l < CH_L; l++) d[l] = a[l] + b[l];
        break;
      case WV_OP_SUB:
#pragma GCC ivdep
        for (unsigned l = 0; l < CH_L; l++) d[l] = a[l] - b[l];
        break;
      case WV_OP_XOR:
#pragma GCC ivdep
        for (unsigned l = 0; l < CH_L; l++) d[l] = a[l] ^ b[l];
        break;
      case WV_OP_MUL:
#pragma GCC ivdep
        for (unsigned l = 0; l < CH_L; l++) d[l] = a[l] * b[l];
        break;
      case WV_OP_ROTL:
#pragma GCC ivdep
        for (unsigned l = 0; l < CH_L; l++)
          d[l] = (a[l] << k) | (a[l] >> (64u - k));
        break;
      case WV_OP_XSHR:
#pragma GCC ivdep
        for (unsigned l = 0; l < CH_L; l++) d[l] = a[l] ^ (a[l] >> k);
        break;
      case WV_OP_ADDI:
#pragma GCC ivdep
        for (unsigned l = 0; l < CH_L; l++) d[l] = a[l] + imm;
        break;
      case WV_OP_MULI:
#pragma GCC ivdep
        for (unsigned l = 0; l < CH_L; l++) d[l] = a[l] * imm;
        break;
      case WV_OP_LOAD:
        if (dataset != NULL) {
#pragma GCC ivdep
          for (unsigned l = 0; l < CH_L; l++) d[l] ^= dataset[a[l] & mask];
        } else {
#pragma GCC ivdep
          for (unsigned l = 0; l < CH_L; l++)
            d[l] ^= wv_mix64(key ^ (a[l] & mask));
        }
        break;
      case WV_OP_XCHG:
        /* All lanes read the old value first (docs/hash.md). l ^ m stays
         * in l's unit because m < 32. */
        memcpy(tmp, a, sizeof tmp);
        for (unsigned l = 0; l < CH_L; l++) d[l] = tmp[l ^ k];
        break;
      default:
        break;
      }
    }

  for (unsigned l = 0; l < CH_L; l++)
    tmp[l] = seed ^ WV_TAG_OUT;
  for (unsigned j = 0; j < nregs; j++)
    for (unsigned l = 0; l < CH_L; l++)
      tmp[l] = wv_mix64(tmp[l] + r[j][l]);
  memcpy(out, tmp, sizeof tmp);
}

static void ch_task(void *arg, size_t task, unsigned worker)
{
  const ch_job *j = arg;
  uint64_t o[CH_L];
  uint64_t unit = j->unit0 + (uint64_t)task * CH_UNITS;
  ch_block(j->p, j->dataset, unit, o);
  for (unsigned l = 0; l < CH_L; l++) {
    /* Lanes of units past the last one (the block's tail, whose nonces may
     * even wrap past 2^64) were computed only to fill the block. */
    if (unit + l / WV_LANES > j->last / WV_LANES)
      break;
    uint64_t n = unit * WV_LANES + l;
    if (n >= j->nonce && n <= j->last)
      j->out[n - j->nonce] = o[l];
  }
}

int wv_cpu_hash(wv_device *dev, const wv_pack *p, uint64_t nonce,
                uint64_t count, uint64_t *out, wave_error *err)
{
  if (count == 0)
    return 0;
  if (nonce + (count - 1) < nonce)
    return wv_seterr(err, WAVE_ERANGE, "nonce %llu + count %llu > 2^64",
                     (unsigned long long)nonce, (unsigned long long)count);
  ch_job j = {.p = p, .nonce = nonce, .last = nonce + (count - 1),
              .unit0 = nonce / WV_LANES, .out = out};
  if (!p->closed) {
    const ch_dataset *d = ch_find(dev, p);
    if (d == NULL) {
      int rv = wv_cpu_hash_prepare(dev, p, err);
      if (rv != 0)
        return rv;
      d = ch_find(dev, p);
    }
    j.dataset = d->items;
  }
  uint64_t units = j.last / WV_LANES - j.unit0 + 1;
  uint64_t tasks = (units + CH_UNITS - 1) / CH_UNITS;
  wv_cpu_pool_run(dev, (size_t)tasks, ch_task, &j);
  return 0;
}

void wv_cpu_hash_caps(wv_device *dev, wv_caps *caps)
{
  caps->exchange_mode = WV_EXCHANGE_LANES;
  caps->reverify = 0;  /* this is the reference: nothing to re-verify */
  snprintf(caps->exchange_reason, sizeof caps->exchange_reason,
           "cpu: a unit's 32 lanes are one array per register; xchg copies "
           "through a temporary (no shuffle, no barrier; exchange: setting "
           "not applicable)");
  /* ~0.1 s of work per batch at a few hundred thousand hashes/s per
   * thread: cancellation stays prompt, pool start-up stays negligible. */
  caps->hash_batch = 1ull << 15;
}
