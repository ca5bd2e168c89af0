/* conformance_hash.c - hash jobs in the cross-backend conformance suite.
 *
 * Every device that has hash slots runs, for each selected pack, the pack's
 * own known-answer self-check and then a set of nonce ranges (aligned and
 * not, tiny and a few thousand nonces, near 0, near 2^25 units and ending at
 * 2^64 - 1, plus seeded random ones).  The expected outputs come from the
 * plain 32-lane reference (workers/hash/ref.c) evaluated "light", from the
 * cache alone, so no backend's dataset is trusted.  GPU backends run twice:
 * with exchange auto and with exchange forced to local memory, so both
 * exchange paths are held to the same bits.  Devices with a hash_batch
 * slot also fold every range on the device, compared with wv_hash_fold.
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
#define CH_MAX_COUNT 3000u

typedef struct ch_range {
  uint64_t nonce, count;
} ch_range;

static int ch_pack_selected(const char *name)
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
static size_t ch_ranges(ch_range *r, uint64_t seed)
{
  size_t n = 0;
  r[n++] = (ch_range){0, 1};
  r[n++] = (ch_range){0, 32};
  r[n++] = (ch_range){31, 2};                        /* across a unit edge */
  r[n++] = (ch_range){33, 1000};                     /* ragged both ends */
  r[n++] = (ch_range){((uint64_t)1 << 25) * 32 - 7, 77};
  r[n++] = (ch_range){UINT64_MAX - 40, 41};          /* ends at 2^64 - 1 */
  for (int i = 0; i < CH_RANDOM_RANGES; i++) {
    uint64_t nonce = conf_rng(&seed);
    uint64_t count = 1 + conf_rng(&seed) % CH_MAX_COUNT;
    if (nonce > UINT64_MAX - count)
      nonce = UINT64_MAX - count;
    r[n++] = (ch_range){nonce, count};
  }
  return n;
}

/* Run pack p on every device of set: self-check, then each range against
 * the reference outputs want[i]. */
static void ch_run(conf_set *set, const wv_pack *p, const ch_range *r,
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

/* Devices with a hash_batch slot: one batch per range (and a few wider
 * ones), folded on the device, against wv_hash_fold over the reference
 * outputs: segment fingerprints at several sizes, winners (a target that
 * lets about a quarter win, and one that lets everything win), best. */
static void ch_batches(conf_set *set, const wv_pack *p, const ch_range *r,
                       size_t nr, uint64_t *const *want)
{
  static const unsigned seg_log2[] = {5, 7, 13, 20};
  for (size_t i = 0; i < set->n; i++) {
    conf_dev *d = &set->devs[i];
    if (d->backend->hash_batch == NULL)
      continue;
    for (size_t k = 0; k < nr; k++) {
      unsigned sl = seg_log2[k % 4];
      uint64_t target = k % 3 == 2 ? UINT64_MAX : (uint64_t)1 << 62;
      size_t max_w = k % 2 ? 5 : 64;
      uint64_t ns = wv_seg_count(r[k].nonce, r[k].count, sl);
      uint64_t *fa = calloc(ns, 8), *fb = calloc(ns, 8);
      uint64_t *outs = malloc(r[k].count * 8);
      wv_hash_winner *wa = calloc(max_w, sizeof *wa);
      wv_hash_winner *wb = calloc(max_w, sizeof *wb);
      ck_assert(fa && fb && outs && wa && wb);
      wv_hash_batch host = {.nonce = r[k].nonce, .count = r[k].count,
                            .seg_log2 = sl, .target = target,
                            .max_winners = max_w, .seg_fp = fa,
                            .winners = wa};
      wv_hash_fold(&host, want[k]);
      wv_hash_batch dev = host;
      dev.seg_fp = fb;
      dev.winners = wb;
      dev.outputs = k % 2 ? outs : NULL;
      wave_error err = {0};
      int rc = d->backend->hash_batch(d->dev, p, &dev, &err);
      int same = rc == 0 && dev.winner_count == host.winner_count &&
                 dev.n_winners == host.n_winners &&
                 dev.best_nonce == host.best_nonce &&
                 dev.best_output == host.best_output &&
                 memcmp(fa, fb, ns * 8) == 0 &&
                 memcmp(wa, wb, host.n_winners * sizeof *wa) == 0 &&
                 (dev.outputs == NULL ||
                  memcmp(outs, want[k], r[k].count * 8) == 0);
      char what[160], gs[300] = "";
      snprintf(what, sizeof what, "pack %s hash_batch [%" PRIu64 ", +%"
               PRIu64 ") segments 2^%u", wv_pack_name(p), r[k].nonce,
               r[k].count, sl);
      if (rc != 0)
        snprintf(gs, sizeof gs, "error %s: %s", wave_errname(rc),
                 err.message);
      else if (!same)
        snprintf(gs, sizeof gs, "count %" PRIu64 "/%" PRIu64 ", kept %zu/%zu"
                 ", best %" PRIu64 "/%" PRIu64, dev.winner_count,
                 host.winner_count, dev.n_winners, host.n_winners,
                 dev.best_nonce, host.best_nonce);
      conf_count(d, same, what, "the host fold", gs);
      free(fa);
      free(fb);
      free(outs);
      free(wa);
      free(wb);
    }
  }
}

/* Devices of the GPU backends again, with exchange forced to local memory. */
static void ch_open_local(const conf_set *all, conf_set *local)
{
  memset(local, 0, sizeof *local);
  for (size_t i = 0; i < all->n; i++) {
    const wv_backend *b = all->devs[i].backend;
    if (b->hash == NULL || strcmp(b->name, "cpu") == 0)
      continue;
    char name[64];
    snprintf(name, sizeof name, "%s0-local", b->name);
    wv_device_config cfg = {.name = name, .backend = b->name, .index = 0,
                            .queue_depth = 16, .exchange = "local",
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
           b->name, caps.exchange, caps.exchange_reason);
    ck_assert_msg(strcmp(caps.exchange, "local") == 0,
                  "%s: exchange local was asked for, caps say %s", b->name,
                  caps.exchange);
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
  ch_open_local(&set, &local);
  uint64_t *got = malloc(CH_MAX_COUNT * sizeof *got);
  ck_assert_ptr_nonnull(got);

  unsigned n_packs = 0;
  for (size_t i = 0; i < wv_packset_count(packs); i++) {
    const wv_pack *p = wv_packset_at(packs, i);
    if (!ch_pack_selected(wv_pack_name(p)))
      continue;
    n_packs++;
    wv_hash_mem mem = {.pack = p};
    if (!p->closed)
      ck_assert_msg(wv_pack_cache_get(p, &mem.cache, &err) == 0, "%s",
                    err.message);
    ch_range r[6 + CH_RANDOM_RANGES];
    size_t nr = ch_ranges(r, 0x5eed0000u + i);
    uint64_t *want[6 + CH_RANDOM_RANGES];
    for (size_t k = 0; k < nr; k++) {
      want[k] = malloc(r[k].count * sizeof *want[k]);
      ck_assert_ptr_nonnull(want[k]);
      wv_ref_range(&mem, r[k].nonce, r[k].count, want[k]);
    }
    ch_run(&set, p, r, nr, want, got);
    ch_run(&local, p, r, nr, want, got);
    ch_batches(&set, p, r, nr, want);
    ch_batches(&local, p, r, nr, want);
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
