/* conformance_hash.c - hash jobs in the cross-backend conformance suite.
 *
 * Every device that has hash slots runs, for each selected pack, the pack's
 * own known-answer self-check and then a set of nonce ranges (aligned and
 * not, tiny and a few thousand nonces, near 0, near 2^25 units and ending at
 * 2^64 - 1, plus seeded random ones).  The expected outputs come from the
 * plain 32-lane reference (workers/hash/ref.c) evaluated "light", from the
 * cache alone, so no backend's dataset is trusted.  GPU backends run twice:
 * with exchange auto and with exchange forced to local memory, so both
 * exchange paths are held to the same bits.
 *
 * Then every range is run again as hash batches (wv_hash_run_batch: the
 * backend's hash_batch slot, the device fold, where it has one) at segment
 * sizes 2^5, 2^13 and 2^20, with a zero target, a target that about one
 * nonce in 16 beats and one that every nonce beats (few winner slots, so
 * the lowest-nonce cut is exercised), with and without the outputs; the
 * segment list, winners, count and best must equal wv_hash_fold over the
 * reference outputs.  The ranges include ones that cross 2^20 and 2^24
 * (where backends cut batches into pieces) and one ending at 2^64.
 *
 * Environment: WAVE_CONFORMANCE_PACKS (comma list, default "small,closed";
 * the GPU machine adds "main"), and those of conformance.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"
#include "workers/hash/ref.h"

#define CH_RANDOM_RANGES 6
#define CH_FIXED_RANGES 11
#define CH_MAX_COUNT 3000u

typedef struct cfh_range {
  uint64_t nonce, count;
} cfh_range;

static int cfh_pack_selected(const char *name)
{
  const char *l = getenv("WAVE_CONFORMANCE_PACKS");
  if (l == NULL || *l == '\0')
    l = "small,closed";
  size_t n = strlen(name);
  for (const char *p = l; *p != '\0';) {
    p += strspn(p, " ,");
    size_t len = strcspn(p, ", ");
    if (len == n && strncmp(p, name, n) == 0)
      return 1;
    p += len;
  }
  return 0;
}

/* The ranges every device hashes for one pack. */
static size_t cfh_ranges(cfh_range *r, uint64_t seed)
{
  size_t n = 0;
  r[n++] = (cfh_range){0, 1};
  r[n++] = (cfh_range){0, 32};
  r[n++] = (cfh_range){31, 2};                        /* across a unit edge */
  r[n++] = (cfh_range){33, 1000};                     /* ragged both ends */
  r[n++] = (cfh_range){((uint64_t)1 << 25) * 32 - 7, 77};
  r[n++] = (cfh_range){UINT64_MAX - 40, 41};          /* ends at 2^64 - 1 */
  r[n++] = (cfh_range){100, 5};                       /* inside a segment */
  r[n++] = (cfh_range){((uint64_t)1 << 20) - 1000, 3000};
  r[n++] = (cfh_range){((uint64_t)1 << 24) - 1500, 3000};
  r[n++] = (cfh_range){((uint64_t)7 << 40) + 8191, 2};  /* a segment edge */
  r[n++] = (cfh_range){UINT64_MAX - 2998, 2999};      /* ends at 2^64 - 1 */
  for (int i = 0; i < CH_RANDOM_RANGES; i++) {
    uint64_t nonce = conf_rng(&seed);
    uint64_t count = 1 + conf_rng(&seed) % CH_MAX_COUNT;
    if (nonce > UINT64_MAX - count)
      nonce = UINT64_MAX - count;
    r[n++] = (cfh_range){nonce, count};
  }
  return n;
}

/* Run pack p on every device of set: self-check, then each range against
 * the reference outputs want[i]. */
static void cfh_run(conf_set *set, const wv_pack *p, const cfh_range *r,
                   size_t nr, uint64_t *const *want, uint64_t *got)
{
  for (size_t i = 0; i < set->n; i++) {
    conf_dev *d = &set->devs[i];
    const wv_backend *b = d->backend;
    if (b->hash == NULL)
      continue;
    wave_error err = {0};
    char what[160], detail[256] = "";
    int rc = b->hash_prepare != NULL ? b->hash_prepare(d->dev, p, &err) : 0;
    snprintf(what, sizeof what, "pack %s prepare", wv_pack_name(p));
    conf_count(d, rc == 0, what, "ok", err.message);
    if (rc != 0)
      continue;
    rc = wv_pack_selfcheck(b, d->dev, p, detail, sizeof detail, &err);
    snprintf(what, sizeof what, "pack %s known answers", wv_pack_name(p));
    conf_count(d, rc == 0, what, "ok", rc == 0 ? "" : detail);
    for (size_t k = 0; k < nr; k++) {
      memset(got, 0x5a, r[k].count * sizeof *got);
      rc = b->hash(d->dev, p, r[k].nonce, r[k].count, got, &err);
      uint64_t bad = r[k].count;
      for (uint64_t j = 0; rc == 0 && j < r[k].count; j++)
        if (got[j] != want[k][j]) {
          bad = j;
          break;
        }
      int same = rc == 0 && bad == r[k].count;
      char ws[40] = "", gs[300] = "";
      snprintf(what, sizeof what, "pack %s nonces [%" PRIu64 ", +%" PRIu64 ")",
               wv_pack_name(p), r[k].nonce, r[k].count);
      if (!same && rc != 0) {
        snprintf(gs, sizeof gs, "error %s: %s", wave_errname(rc), err.message);
      } else if (!same) {
        snprintf(ws, sizeof ws, "%016" PRIx64, want[k][bad]);
        snprintf(gs, sizeof gs, "%016" PRIx64 " at nonce %" PRIu64,
                 got[bad], r[k].nonce + bad);
      }
      conf_count(d, same, what, ws, gs);
    }
  }
}

/* One batch's results, as compared. */
typedef struct cfh_batch {
  wv_hash_batch b;
  uint64_t *seg, *out;
  wv_hash_winner *win;
} cfh_batch;

static void cfh_batch_init(cfh_batch *c, const cfh_range *r, unsigned s,
                          uint64_t target, size_t max_winners, int outputs)
{
  memset(c, 0, sizeof *c);
  c->b.nonce = r->nonce;
  c->b.count = r->count;
  c->b.seg_log2 = s;
  c->b.target = target;
  c->b.max_winners = max_winners;
  uint64_t nseg = wv_seg_count(r->nonce, r->count, s);
  c->seg = malloc(nseg * sizeof *c->seg);
  c->win = malloc((max_winners + 1) * sizeof *c->win);
  ck_assert_ptr_nonnull(c->seg);
  ck_assert_ptr_nonnull(c->win);
  memset(c->seg, 0x5a, nseg * sizeof *c->seg);
  memset(c->win, 0x5a, (max_winners + 1) * sizeof *c->win);
  c->b.seg_fp = c->seg;
  c->b.winners = max_winners > 0 ? c->win : NULL;
  if (outputs) {
    c->out = malloc(r->count * sizeof *c->out);
    ck_assert_ptr_nonnull(c->out);
    memset(c->out, 0x5a, r->count * sizeof *c->out);
    c->b.outputs = c->out;
  }
  /* Results the backend must overwrite. */
  c->b.n_winners = 99;
  c->b.winner_count = 99;
  c->b.best_nonce = c->b.best_output = 99;
}

static void cfh_batch_free(cfh_batch *c)
{
  free(c->seg);
  free(c->out);
  free(c->win);
}

/* The first difference of got from want, or "" when equal. */
static void cfh_batch_diff(const cfh_batch *want, const cfh_batch *got,
                          const uint64_t *ref, char *ws, size_t wl, char *gs,
                          size_t gl)
{
  const wv_hash_batch *w = &want->b, *g = &got->b;
  uint64_t nseg = wv_seg_count(w->nonce, w->count, w->seg_log2);
  ws[0] = gs[0] = '\0';
  for (uint64_t k = 0; k < nseg; k++)
    if (want->seg[k] != got->seg[k]) {
      snprintf(ws, wl, "segment %" PRIu64 " of %" PRIu64 " %016" PRIx64, k,
               nseg, want->seg[k]);
      snprintf(gs, gl, "%016" PRIx64, got->seg[k]);
      return;
    }
  if (w->winner_count != g->winner_count || w->n_winners != g->n_winners) {
    snprintf(ws, wl, "%" PRIu64 " winners, %zu kept", w->winner_count,
             w->n_winners);
    snprintf(gs, gl, "%" PRIu64 ", %zu", g->winner_count, g->n_winners);
    return;
  }
  for (size_t k = 0; k < w->n_winners; k++)
    if (want->win[k].nonce != got->win[k].nonce ||
        want->win[k].output != got->win[k].output) {
      snprintf(ws, wl, "winner %zu: %" PRIu64 " %016" PRIx64, k,
               want->win[k].nonce, want->win[k].output);
      snprintf(gs, gl, "%" PRIu64 " %016" PRIx64, got->win[k].nonce,
               got->win[k].output);
      return;
    }
  if (w->best_nonce != g->best_nonce || w->best_output != g->best_output) {
    snprintf(ws, wl, "best %" PRIu64 " %016" PRIx64, w->best_nonce,
             w->best_output);
    snprintf(gs, gl, "%" PRIu64 " %016" PRIx64, g->best_nonce,
             g->best_output);
    return;
  }
  if (got->out != NULL)
    for (uint64_t k = 0; k < w->count; k++)
      if (got->out[k] != ref[k]) {
        snprintf(ws, wl, "output of nonce %" PRIu64 " %016" PRIx64,
                 w->nonce + k, ref[k]);
        snprintf(gs, gl, "%016" PRIx64, got->out[k]);
        return;
      }
}

/* Every range as hash batches on every device of set, against
 * wv_hash_fold over the reference outputs. */
static void cfh_run_batches(conf_set *set, const wv_pack *p, const cfh_range *r,
                           size_t nr, uint64_t *const *want)
{
  static const unsigned seg_log2[] = {WV_SEG_LOG2_MIN, WV_SEG_LOG2_DEFAULT,
                                      WV_SEG_LOG2_MAX};
  /* Target, winner slots: none win; about 1 in 16 (every winner kept);
   * every nonce wins (only the first few dozen kept, or 2000: across the
   * pieces of a range over 2^24); no slots at all. */
  static const struct { uint64_t target; size_t slots; } tg[] = {
    {0, 16}, {(uint64_t)1 << 60, 4096}, {UINT64_MAX, 37}, {UINT64_MAX, 2000},
    {(uint64_t)1 << 60, 0},
  };
  for (size_t i = 0; i < set->n; i++) {
    conf_dev *d = &set->devs[i];
    const wv_backend *b = d->backend;
    if (b->hash == NULL)
      continue;
    printf("conformance: %s hash batches: %s\n", b->name,
           b->hash_batch != NULL ? "backend fold (hash_batch)" : "host fold");
    unsigned v = 0;
    for (size_t k = 0; k < nr; k++)
      for (size_t si = 0; si < sizeof seg_log2 / sizeof *seg_log2; si++)
        for (size_t ti = 0; ti < sizeof tg / sizeof *tg; ti++, v++) {
          cfh_batch w, g;
          int outputs = v % 3 == 1;
          cfh_batch_init(&w, &r[k], seg_log2[si], tg[ti].target, tg[ti].slots,
                        0);
          cfh_batch_init(&g, &r[k], seg_log2[si], tg[ti].target, tg[ti].slots,
                        outputs);
          wv_hash_fold(&w.b, want[k]);
          wave_error err = {0};
          /* Scratch for a backend that folds on the host. */
          uint64_t *scratch = malloc(r[k].count * sizeof *scratch);
          ck_assert_ptr_nonnull(scratch);
          int rc = wv_hash_run_batch(b, d->dev, p, &g.b, scratch, &err);
          free(scratch);
          char what[200], ws[120] = "", gs[300] = "";
          snprintf(what, sizeof what, "pack %s batch [%" PRIu64 ", +%" PRIu64
                   ") s=%u target %016" PRIx64 " slots %zu%s", wv_pack_name(p),
                   r[k].nonce, r[k].count, seg_log2[si], tg[ti].target,
                   tg[ti].slots, outputs ? " with outputs" : "");
          if (rc != 0)
            snprintf(gs, sizeof gs, "error %s: %s", wave_errname(rc),
                     err.message);
          else
            cfh_batch_diff(&w, &g, want[k], ws, sizeof ws, gs, sizeof gs);
          conf_count(d, rc == 0 && ws[0] == '\0', what, ws, gs);
          cfh_batch_free(&w);
          cfh_batch_free(&g);
        }
  }
}

/* Devices of the GPU backends again, with exchange forced to local memory. */
static void cfh_open_local(const conf_set *all, conf_set *local)
{
  memset(local, 0, sizeof *local);
  local->may_be_empty = 1;  /* no GPU backend opened */
  for (size_t i = 0; i < all->n; i++) {
    const wv_backend *b = all->devs[i].backend;
    if (b->hash == NULL || strcmp(b->name, "cpu") == 0)
      continue;
    char name[64];
    snprintf(name, sizeof name, "%s0-local", b->name);
    wv_device_config cfg = {.name = name, .backend = b->name, .index = 0,
                            .queue_depth = 16, .exchange = WV_EXCHANGE_LOCAL,
                            .device_match = getenv("WAVE_CONFORMANCE_MATCH")};
    wave_error err = {0};
    wv_device *dev = NULL;
    if (b->open(&cfg, &dev, &err) != 0) {
      printf("conformance: %s (exchange local) cannot open: %s\n", b->name,
             err.message);
      local->failed_required++;
      continue;
    }
    conf_dev *d = &local->devs[local->n++];
    d->backend = b;
    d->dev = dev;
    wv_caps caps;
    memset(&caps, 0, sizeof caps);
    b->caps(dev, &caps);
    printf("conformance: %s (exchange local) opened: exchange %s (%s)\n",
           b->name, wv_exchange_name(caps.exchange_mode), caps.exchange_reason);
    ck_assert_msg(caps.exchange_mode == WV_EXCHANGE_LOCAL,
                  "%s: exchange local was asked for, caps say %s", b->name,
                  wv_exchange_name(caps.exchange_mode));
  }
}

START_TEST(hash_jobs)
{
  const char *src = getenv("WAVE_SOURCE_DIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/config/packs",
           src != NULL ? src : WAVE_SOURCE_DIR_DEFAULT);
  wv_packset *packs = NULL;
  wave_error err = {0};
  ck_assert_msg(wv_packset_load(dir, &packs, &err) == 0, "%s", err.message);

  conf_set set, local;
  conf_open_all(&set);
  cfh_open_local(&set, &local);
  uint64_t *got = malloc(CH_MAX_COUNT * sizeof *got);
  ck_assert_ptr_nonnull(got);

  unsigned n_packs = 0;
  for (size_t i = 0; i < wv_packset_count(packs); i++) {
    const wv_pack *p = wv_packset_at(packs, i);
    if (!cfh_pack_selected(wv_pack_name(p)))
      continue;
    n_packs++;
    wv_hash_mem mem = {.pack = p};
    if (!p->closed)
      ck_assert_msg(wv_pack_cache_get(p, &mem.cache, &err) == 0, "%s",
                    err.message);
    cfh_range r[CH_FIXED_RANGES + CH_RANDOM_RANGES];
    size_t nr = cfh_ranges(r, 0x5eed0000u + i);
    uint64_t *want[CH_FIXED_RANGES + CH_RANDOM_RANGES];
    for (size_t k = 0; k < nr; k++) {
      want[k] = malloc(r[k].count * sizeof *want[k]);
      ck_assert_ptr_nonnull(want[k]);
      wv_ref_range(&mem, r[k].nonce, r[k].count, want[k]);
    }
    cfh_run(&set, p, r, nr, want, got);
    cfh_run(&local, p, r, nr, want, got);
    cfh_run_batches(&set, p, r, nr, want);
    cfh_run_batches(&local, p, r, nr, want);
    for (size_t k = 0; k < nr; k++)
      free(want[k]);
    printf("conformance: hash pack %s done\n", wv_pack_name(p));
    fflush(stdout);
  }
  ck_assert_msg(n_packs > 0, "no pack selected by WAVE_CONFORMANCE_PACKS");
  free(got);
  conf_report(&local, "hash (exchange local)");
  conf_close_all(&local);
  conf_report(&set, "hash");
  conf_close_all(&set);
  wv_packset_free(packs);
}
END_TEST

TCase *conf_hash_tcase(void)
{
  TCase *tc = tcase_create("hash");
  tcase_set_timeout(tc, 3600);  /* the main pack's dataset on slow devices */
  tcase_add_test(tc, hash_jobs);
  return tc;
}
