/* test_hash.c - the lottery hash (docs/hash.md): FNV, the instruction set,
 * cache and dataset, the shipped packs' known answers, the job accumulator,
 * the GPU emulator and the CPU backend (the pack loader's errors are in
 * test_pack.c; the shared helpers in hash_harness.c).
 *
 * Where the answer is not a published constant (FNV, SplitMix64), it comes
 * from a transcription of docs/hash.md made here in the test (th_*), not
 * from workers/hash: the opcode cases run tiny synthetic packs and compare
 * every lane with formulas written out below.  The packs' known answers were
 * produced by wvhash-gen from ref.c and cross-checked, before they were
 * committed, by a separate transcription of the spec in another language;
 * here they pin ref.c, the emulator and the CPU backend.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash_harness.h"
#include "core/base.h"
#include "workers/cpu/cpu.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"
#include "workers/hash/ref.h"

/* ---- the spec, transcribed here ------------------------------------------ */

static uint64_t thb_mix(uint64_t x)
{
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

#define TH_REGS 8u

static void thb_init(uint64_t seed, uint64_t n, uint64_t r[TH_REGS])
{
  uint64_t s = thb_mix(n ^ seed ^ 0xa4093822299f31d0ull);
  for (unsigned j = 0; j < TH_REGS; j++)
    r[j] = thb_mix(s + (j + 1) * 0x9e3779b97f4a7c15ull);
}

static uint64_t thb_output(uint64_t seed, const uint64_t r[TH_REGS])
{
  uint64_t h = seed ^ 0x082efa98ec4e6c89ull;
  for (unsigned j = 0; j < TH_REGS; j++)
    h = thb_mix(h + r[j]);
  return h;
}

static uint64_t thb_closed(uint64_t seed, uint64_t addr)
{
  return thb_mix(thb_mix(seed ^ 0x13198a2e03707344ull) ^ (addr & 0xffffffffu));
}

/* ---- FNV and the mixer ---------------------------------------------------- */

START_TEST(fnv_published_vectors)
{
  /* FNV-1a 64 test vectors from the FNV reference (isthe.com/chongo). */
  ck_assert_uint_eq(wv_fnv1a64(WV_FNV_OFFSET, "", 0), 0xcbf29ce484222325ull);
  ck_assert_uint_eq(wv_fnv1a64(WV_FNV_OFFSET, "a", 1), 0xaf63dc4c8601ec8cull);
  ck_assert_uint_eq(wv_fnv1a64(WV_FNV_OFFSET, "foobar", 6),
                    0x85944171f73967e8ull);
  /* Continuation: hashing in pieces equals hashing at once. */
  uint64_t h = wv_fnv1a64(WV_FNV_OFFSET, "foo", 3);
  ck_assert_uint_eq(wv_fnv1a64(h, "bar", 3), 0x85944171f73967e8ull);
}
END_TEST

START_TEST(mix64_is_splitmix64)
{
  /* SplitMix64 seeded with 0 yields mix(GAMMA), mix(2 GAMMA), ...: its
   * published first outputs. */
  ck_assert_uint_eq(wv_mix64(0x9e3779b97f4a7c15ull), 0xe220a8397b1dcdafull);
  ck_assert_uint_eq(wv_mix64(2 * 0x9e3779b97f4a7c15ull), 0x6e789e6aa1b965f4ull);
  for (uint64_t x = 1; x < 1000; x++)
    ck_assert_uint_eq(wv_mix64(x * 0x1234567ull), thb_mix(x * 0x1234567ull));
}
END_TEST

/* ---- instruction semantics ------------------------------------------------ */

typedef struct thb_case {
  const char *insn;
  void (*apply)(uint64_t r[32][TH_REGS], uint64_t seed);
} thb_case;

#define TH_LANEWISE(fn, expr)                                                 \
  static void fn(uint64_t r[32][TH_REGS], uint64_t seed)                      \
  {                                                                           \
    (void)seed;                                                               \
    for (unsigned l = 0; l < 32; l++) {                                       \
      uint64_t *x = r[l];                                                     \
      expr;                                                                   \
    }                                                                         \
  }
TH_LANEWISE(thb_add, x[2] = x[0] + x[1])
TH_LANEWISE(thb_sub, x[2] = x[0] - x[1])
TH_LANEWISE(thb_xor, x[2] = x[0] ^ x[1])
TH_LANEWISE(thb_mul, x[2] = x[0] * x[1])
TH_LANEWISE(thb_rotl13, x[2] = (x[0] << 13) | (x[0] >> 51))
TH_LANEWISE(thb_rotl63, x[2] = (x[0] << 63) | (x[0] >> 1))
TH_LANEWISE(thb_xshr1, x[2] = x[0] ^ (x[0] >> 1))
TH_LANEWISE(thb_xshr63, x[2] = x[0] ^ (x[0] >> 63))
TH_LANEWISE(thb_addi, x[2] = x[0] - 1)
TH_LANEWISE(thb_muli, x[2] = x[0] * 0x9e3779b97f4a7c15ull)
TH_LANEWISE(thb_inplace, x[0] = x[0] + x[0])
TH_LANEWISE(thb_load, x[2] ^= thb_closed(seed, x[0]))
TH_LANEWISE(thb_load_self, x[0] ^= thb_closed(seed, x[0]))

/* xchg r1, r0, 4: r1 of lane l is r0 of lane l ^ 4 (and only 5 swaps of
 * r3 follow: r3 of lane l is r3 of lane l ^ 1). */
static void thb_xchg_other(uint64_t r[32][TH_REGS], uint64_t seed)
{
  (void)seed;
  uint64_t r0[32], r3[32];
  for (unsigned l = 0; l < 32; l++)
    r0[l] = r[l][0], r3[l] = r[l][3];
  for (unsigned l = 0; l < 32; l++)
    r[l][1] = r0[l ^ 4], r[l][3] = r3[l ^ 1];
}

/* Six in-place swaps of r0 with m = 16, 2, 8, 1, 4, 2: lane l ends with
 * lane (l ^ 16 ^ 2 ^ 8 ^ 1 ^ 4 ^ 2) = l ^ 29's value. */
static void thb_xchg_swaps(uint64_t r[32][TH_REGS], uint64_t seed)
{
  (void)seed;
  uint64_t r0[32];
  for (unsigned l = 0; l < 32; l++)
    r0[l] = r[l][0];
  for (unsigned l = 0; l < 32; l++)
    r[l][0] = r0[l ^ 29];
}

static const thb_case thb_cases[] = {
  {"add r2, r0, r1", thb_add},        {"sub r2, r0, r1", thb_sub},
  {"xor r2, r0, r1", thb_xor},        {"mul r2, r0, r1", thb_mul},
  {"rotl r2, r0, 13", thb_rotl13},    {"rotl r2, r0, 63", thb_rotl63},
  {"xshr r2, r0, 1", thb_xshr1},      {"xshr r2, r0, 63", thb_xshr63},
  {"addi r2, r0, 0xffffffffffffffff", thb_addi},
  {"muli r2, r0, 11400714819323198485", thb_muli},
  {"add r0, r0, r0", thb_inplace},    {"load r2, r0", thb_load},
  {"load r0, r0", thb_load_self},     {"xchg r1, r0, 4", thb_xchg_other},
};
#define TH_NCASES (sizeof thb_cases / sizeof thb_cases[0])

/* Expected outputs of unit u under case c (+ the 6 swaps of r3 and the
 * r5 = r6 ^ r7 filler of th_program_text). */
static void thb_expect(const thb_case *c, uint64_t seed, uint64_t u,
                      uint64_t out[32])
{
  uint64_t r[32][TH_REGS];
  for (unsigned l = 0; l < 32; l++)
    thb_init(seed, u * 32 + l, r[l]);
  c->apply(r, seed);
  for (unsigned l = 0; l < 32; l++) {
    r[l][5] = r[l][6] ^ r[l][7];
    out[l] = thb_output(seed, r[l]);
  }
}

static const uint64_t thb_units[] = {0, 12345, (1ull << 59) - 1};

START_TEST(opcode_semantics_ref_emu)
{
  const thb_case *c = &thb_cases[_i];
  const char *first[1] = {c->insn};
  char *text = th_program_text(TH_HEAD, first, 1);
  wv_pack *p = th_load_text(text);
  free(text);
  wv_hash_mem m = {.pack = p};
  for (unsigned k = 0; k < 3; k++) {
    uint64_t want[32], got[32];
    thb_expect(c, 0x1234, thb_units[k], want);
    wv_ref_unit(&m, thb_units[k], got);
    for (unsigned l = 0; l < 32; l++)
      ck_assert_msg(got[l] == want[l], "ref '%s' unit %llu lane %u",
                    c->insn, (unsigned long long)thb_units[k], l);
    wv_emu_config cfg = {.subgroup = 16, .workgroup = 64,
                         .exchange = WV_EMU_LOCAL, .sched_seed = 7};
    wave_error err;
    ck_assert_int_eq(wv_emu_range(&m, &cfg, thb_units[k] * 32, 32, got, &err),
                     0);
    for (unsigned l = 0; l < 32; l++)
      ck_assert_msg(got[l] == want[l], "emu '%s' lane %u", c->insn, l);
  }
  wv_pack_free(p);
}
END_TEST

START_TEST(xchg_reads_old_values)
{
  /* Six in-place swaps: a sequential implementation that wrote lane l
   * before lane l ^ m read it would not produce a permutation. */
  static const char *const prog[6] = {
    "xchg r0, r0, 16", "xchg r0, r0, 2", "xchg r0, r0, 8",
    "xchg r0, r0, 1",  "xchg r0, r0, 4", "xchg r0, r0, 2",
  };
  char text[8192];
  size_t k = (size_t)snprintf(text, sizeof text, "%sprogram:\n", TH_HEAD);
  for (unsigned i = 0; i < 6; i++)
    k += (size_t)snprintf(text + k, sizeof text - k, "  - \"%s\"\n", prog[i]);
  for (unsigned i = 6; i < 64; i++)
    k += (size_t)snprintf(text + k, sizeof text - k, "  - \"xor r5, r6, r7\"\n");
  wv_pack *p = th_load_text(text);
  thb_case c = {"swaps", thb_xchg_swaps};
  wv_hash_mem m = {.pack = p};
  uint64_t want[32], got[32];
  thb_expect(&c, 0x1234, 99, want);
  wv_ref_unit(&m, 99, got);
  for (unsigned l = 0; l < 32; l++)
    ck_assert_uint_eq(got[l], want[l]);
  wv_pack_free(p);
}
END_TEST

/* ---- cache and dataset --------------------------------------------------- */

/* docs/hash.md "Cache" and "Dataset", transcribed. */
static void thb_cache(uint64_t seed, uint64_t m, uint64_t *c)
{
  c[0] = thb_mix(seed ^ 0x243f6a8885a308d3ull);
  for (uint64_t k = 1; k < m; k++)
    c[k] = thb_mix(c[k - 1] + 0x9e3779b97f4a7c15ull);
  for (int pass = 0; pass < 3; pass++)
    for (uint64_t k = 0; k < m; k++) {
      uint64_t prev = k == 0 ? c[m - 1] : c[k - 1];
      uint64_t other = c[c[k] % m];
      c[k] = thb_mix((prev ^ other) + c[k]);
    }
}

static uint64_t thb_item(const uint64_t *c, uint64_t m, unsigned parents,
                        uint64_t i)
{
  uint64_t x = thb_mix(c[i % m] ^ i);
  for (unsigned j = 0; j < parents; j++)
    x = thb_mix(x + c[x % m]);
  return x;
}

START_TEST(cache_and_dataset_match_spec)
{
  wv_pack *p = th_shipped("small");
  uint64_t *cache, *mine = malloc(p->cache_items * 8);
  size_t items;
  wave_error err;
  ck_assert_int_eq(wv_pack_cache_build(p, &cache, &items, &err), 0);
  ck_assert_uint_eq(items, p->cache_items);
  thb_cache(p->seed, p->cache_items, mine);
  ck_assert(memcmp(cache, mine, items * 8) == 0);
  /* Fingerprint over little-endian bytes, computed byte by byte here. */
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t k = 0; k < items; k++)
    for (unsigned b = 0; b < 8; b++)
      h = (h ^ ((mine[k] >> (8 * b)) & 0xff)) * 0x100000001b3ull;
  ck_assert_uint_eq(h, p->cache_fnv);

  uint64_t n = p->dataset_items;
  uint64_t *ds = malloc(n * 8);
  wv_pack_dataset_range(p, cache, 0, 1000, ds);        /* a ragged tail */
  wv_pack_dataset_range(p, cache, 1000, n - 1000, ds + 1000);
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(ds[i], wv_item_from_cache(cache, items, p->parents, i));
  for (uint64_t i = 0; i < n; i += 4097)
    ck_assert_uint_eq(ds[i], thb_item(mine, items, p->parents, i));
  ck_assert_uint_eq(ds[n - 1], thb_item(mine, items, p->parents, n - 1));
  free(ds);
  free(mine);
  free(cache);
  wv_pack_free(p);
}
END_TEST

START_TEST(memory_load_semantics)
{
  /* A tiny memory pack: 8 cache items, 128 dataset items, 2 parents. */
  static const char head[] =
      "name: t\nversion: 1\nseed: 77\nregisters: 8\nrounds: 1\n"
      "dataset:\n  cache_bytes: 64\n  dataset_bytes: 1024\n  parents: 2\n";
  const char *first[1] = {"load r2, r0"};
  char *text = th_program_text(head, first, 1);
  wv_pack *p = th_load_text(text);
  free(text);
  uint64_t c[8];
  thb_cache(77, 8, c);
  wv_hash_mem m = {.pack = p};
  wave_error err;
  ck_assert_int_eq(wv_pack_cache_get(p, &m.cache, &err), 0);
  uint64_t got[32];
  wv_ref_unit(&m, 5, got);
  for (unsigned l = 0; l < 32; l++) {
    uint64_t r[TH_REGS];
    thb_init(77, 5 * 32 + l, r);
    r[2] ^= thb_item(c, 8, 2, r[0] & 127);
    r[5] = r[6] ^ r[7];
    ck_assert_uint_eq(got[l], thb_output(77, r));
  }
  wv_pack_free(p);
}
END_TEST

/* ---- shipped packs -------------------------------------------------------- */

static uint64_t thb_fnv_outputs(const uint64_t *o, size_t n)
{
  return wv_fnv1a64(WV_FNV_OFFSET, o, n * 8);  /* little-endian host */
}

START_TEST(shipped_packs_known_answers)
{
  static const char *const names[2] = {"small", "closed"};
  wv_pack *p = th_shipped(names[_i]);
  ck_assert_uint_eq(p->n_vectors, 3);
  ck_assert_uint_eq(p->loads * p->rounds, 104);
  wv_hash_mem full = {.pack = p}, light = {.pack = p};
  uint64_t *ds = NULL;
  size_t items;
  wave_error err;
  if (!p->closed) {
    ck_assert_int_eq(wv_pack_cache_build(p, (uint64_t **)&light.cache, &items,
                                         &err), 0);
    full.cache = light.cache;
    ds = malloc(p->dataset_items * 8);
    wv_pack_dataset_range(p, light.cache, 0, p->dataset_items, ds);
    full.dataset = ds;
  }
  for (size_t v = 0; v < p->n_vectors; v++) {
    uint64_t o[32], ol[32];
    wv_ref_unit(&full, p->vectors[v].nonce / 32, o);
    wv_ref_unit(&light, p->vectors[v].nonce / 32, ol);
    for (unsigned l = 0; l < 32; l++) {
      ck_assert_uint_eq(o[l], p->vectors[v].outputs[l]);
      ck_assert_uint_eq(ol[l], o[l]);
      uint64_t ver;
      ck_assert_int_eq(wv_hash_verify(p, p->vectors[v].nonce + l, &ver, &err),
                       0);
      ck_assert_uint_eq(ver, o[l]);
    }
  }
  uint64_t *out = malloc(8192 * 8);
  wv_ref_range(&full, 0, 8192, out);
  ck_assert_uint_eq(thb_fnv_outputs(out, 8192), p->batch_fnv);
  free(out);
  free(ds);
  free((void *)light.cache);
  wv_pack_free(p);
}
END_TEST

START_TEST(packset_loads_shipped_dir)
{
  wv_packset *s;
  wave_error err;
  int rv = wv_packset_load(th_packs_dir(), &s, &err);
  ck_assert_msg(rv == 0, "%s", err.message);
  ck_assert_uint_eq(wv_packset_count(s), 3);
  ck_assert_str_eq(wv_pack_name(wv_packset_at(s, 0)), "closed");  /* sorted */
  const wv_pack *m = wv_packset_find(s, "main");
  ck_assert_ptr_nonnull(m);
  ck_assert_uint_eq(wv_pack_dataset_bytes(m), 1ull << 30);
  ck_assert_uint_eq(wv_pack_dataset_bytes(wv_packset_find(s, "closed")), 0);
  ck_assert_ptr_null(wv_packset_find(s, "nope"));
  wv_packset_free(s);
}
END_TEST

/* ---- accumulator ---------------------------------------------------------- */

START_TEST(acc_winners_best_fingerprint)
{
  static const uint64_t o[10] = {50, 7, 90, 7, 3, 100, 3, 200, 5, 1000};
  wv_hash_acc a;
  ck_assert_int_eq(wv_hash_acc_init(&a, 10, 2), 0);
  wv_hash_acc_add(&a, 1000, o, 4);      /* two batches, in nonce order */
  wv_hash_acc_add(&a, 1004, o + 4, 6);
  ck_assert_uint_eq(a.hashes, 10);
  ck_assert_uint_eq(a.winner_count, 5);  /* 7, 7, 3, 3, 5 */
  ck_assert_uint_eq(a.n_winners, 2);     /* the lowest nonces */
  ck_assert_uint_eq(a.winners[0].nonce, 1001);
  ck_assert_uint_eq(a.winners[1].nonce, 1003);
  ck_assert_uint_eq(a.best_output, 3);
  ck_assert_uint_eq(a.best_nonce, 1004); /* tie 3 at 1004 and 1006 */
  unsigned char bytes[80];
  for (int i = 0; i < 10; i++)
    for (int b = 0; b < 8; b++)
      bytes[8 * i + b] = (unsigned char)(o[i] >> (8 * b));
  ck_assert_uint_eq(a.fingerprint, wv_fnv1a64(WV_FNV_OFFSET, bytes, 80));
  wv_hash_acc_fini(&a);

  /* All outputs UINT64_MAX: best is still the first nonce; target 0 never
   * wins. */
  uint64_t mx[3] = {UINT64_MAX, UINT64_MAX, UINT64_MAX};
  ck_assert_int_eq(wv_hash_acc_init(&a, 0, 0), 0);
  wv_hash_acc_add(&a, 77, mx, 3);
  ck_assert_uint_eq(a.best_nonce, 77);
  ck_assert_uint_eq(a.winner_count, 0);
  wv_hash_acc_fini(&a);
}
END_TEST

/* ---- segments ------------------------------------------------------------ */

START_TEST(fold_segments_ragged_and_near_top)
{
  uint64_t o[40];
  for (int i = 0; i < 40; i++)
    o[i] = 1000u - 17u * (unsigned)i;  /* strictly falling: best is last */
  wv_hash_winner w[3];
  uint64_t fp[8];
  /* [30, 70) with s = 5: segments [30,32) [32,64) [64,70). */
  wv_hash_batch b = {.nonce = 30, .count = 40, .seg_log2 = 5, .target = 400,
                     .max_winners = 3, .seg_fp = fp, .winners = w};
  ck_assert_uint_eq(wv_seg_count(30, 40, 5), 3);
  wv_hash_fold(&b, o);
  ck_assert_uint_eq(fp[0], wv_fnv1a64_u64(WV_FNV_OFFSET, o, 2));
  ck_assert_uint_eq(fp[1], wv_fnv1a64_u64(WV_FNV_OFFSET, o + 2, 32));
  ck_assert_uint_eq(fp[2], wv_fnv1a64_u64(WV_FNV_OFFSET, o + 34, 6));
  /* 1000 - 17 i < 400  <=>  i >= 36: four winners, the lowest three kept */
  ck_assert_uint_eq(b.winner_count, 4);
  ck_assert_uint_eq(b.n_winners, 3);
  ck_assert_uint_eq(w[0].nonce, 66);
  ck_assert_uint_eq(w[2].nonce, 68);
  ck_assert_uint_eq(b.best_nonce, 69);
  ck_assert_uint_eq(b.best_output, o[39]);

  /* The last nonces below 2^64: [2^64 - 40, 2^64) with s = 5 is two
   * segments, the last of which ends exactly at 2^64. */
  uint64_t top = UINT64_MAX - 39;
  ck_assert_uint_eq(wv_seg_count(top, 40, 5), 2);
  b = (wv_hash_batch){.nonce = top, .count = 40, .seg_log2 = 5,
                      .seg_fp = fp};
  wv_hash_fold(&b, o);
  ck_assert_uint_eq(fp[0], wv_fnv1a64_u64(WV_FNV_OFFSET, o, 8));
  ck_assert_uint_eq(fp[1], wv_fnv1a64_u64(WV_FNV_OFFSET, o + 8, 32));
  ck_assert_uint_eq(b.winner_count, 0);
}
END_TEST

START_TEST(segment_zero_is_batch_fnv)
{
  wave_error err = {0};
  wv_pack *p = th_shipped("closed");
  const wv_backend *cpu = wv_backend_find("cpu");
  wv_device_config cfg = {.name = "cpu0", .backend = "cpu", .threads = 2};
  wv_device *dev = NULL;
  ck_assert_int_eq(cpu->open(&cfg, &dev, &err), 0);
  uint64_t n = 1u << 13, fp[3];
  uint64_t *scratch = malloc((n + 64) * sizeof *scratch);
  wv_hash_batch b = {.nonce = 0, .count = n, .seg_log2 = 13, .seg_fp = fp};
  ck_assert_int_eq(wv_hash_run_batch(cpu, dev, p, &b, scratch, &err), 0);
  ck_assert_uint_eq(fp[0], p->batch_fnv);
  /* Ragged: [7, 2^13 + 50) touches two segments; the first one's
   * fingerprint covers [7, 2^13) only.  (The outputs are asked for: the
   * cpu backend folds on its own, scratch is only for backends that
   * do not.) */
  b = (wv_hash_batch){.nonce = 7, .count = n + 43, .seg_log2 = 13,
                      .seg_fp = fp, .outputs = scratch};
  ck_assert_int_eq(wv_hash_run_batch(cpu, dev, p, &b, scratch, &err), 0);
  ck_assert_uint_eq(fp[0], wv_fnv1a64_u64(WV_FNV_OFFSET, scratch, n - 7));
  ck_assert_uint_eq(fp[1], wv_fnv1a64_u64(WV_FNV_OFFSET, scratch + n - 7, 50));
  ck_assert_uint_ne(fp[0], p->batch_fnv);
  free(scratch);
  cpu->close(dev);
  wv_pack_free(p);
}
END_TEST

/* The cpu backend's hash_batch over four of its 2^20-nonce chunks: the
 * winner cut (3000 of about 1280 a chunk) and the best come from
 * different chunks; against wv_hash_fold over hash()'s outputs. */
START_TEST(cpu_batch_across_chunks)
{
  wave_error err = {0};
  wv_pack *p = th_shipped("closed");
  const wv_backend *cpu = wv_backend_find("cpu");
  ck_assert_ptr_nonnull(cpu->hash_batch);
  wv_device_config cfg = {.name = "cpu0", .backend = "cpu", .threads = 2};
  wv_device *dev = NULL;
  ck_assert_int_eq(cpu->open(&cfg, &dev, &err), 0);
  const uint64_t nonce = (1u << 20) - 5, count = (5u << 19) + 9;
  uint64_t *out = malloc(count * sizeof *out);
  uint64_t *fw = malloc((count / 32 + 2) * sizeof *fw);
  uint64_t *fg = malloc((count / 32 + 2) * sizeof *fg);
  wv_hash_winner *ww = calloc(3000, sizeof *ww), *wg = calloc(3000, sizeof *wg);
  ck_assert(out != NULL && fw != NULL && fg != NULL && ww != NULL && wg != NULL);
  ck_assert_int_eq(cpu->hash(dev, p, nonce, count, out, &err), 0);
  static const unsigned seg_log2[] = {5, 13, 20};
  for (size_t i = 0; i < 3; i++) {
    wv_hash_batch w = {.nonce = nonce, .count = count,
                       .seg_log2 = seg_log2[i], .target = 5ull << 52,
                       .max_winners = 3000, .seg_fp = fw, .winners = ww};
    wv_hash_batch g = w;
    g.seg_fp = fg;
    g.winners = wg;
    wv_hash_fold(&w, out);
    ck_assert_int_eq(cpu->hash_batch(dev, p, &g, &err), 0);
    ck_assert_uint_gt(w.winner_count, 3000);
    ck_assert_uint_gt(w.winners[2999].nonce, nonce + (2u << 20));
    uint64_t nseg = wv_seg_count(nonce, count, seg_log2[i]);
    ck_assert_int_eq(memcmp(fg, fw, nseg * sizeof *fw), 0);
    ck_assert_uint_eq(g.winner_count, w.winner_count);
    ck_assert_uint_eq(g.n_winners, 3000);
    ck_assert_int_eq(memcmp(wg, ww, 3000 * sizeof *ww), 0);
    ck_assert_uint_eq(g.best_nonce, w.best_nonce);
    ck_assert_uint_eq(g.best_output, w.best_output);
  }
  free(out);
  free(fw);
  free(fg);
  free(ww);
  free(wg);
  cpu->close(dev);
  wv_pack_free(p);
}
END_TEST

/* ---- emulator ------------------------------------------------------------- */

typedef struct thb_emu_case {
  unsigned sg, wg;
  wv_emu_exchange ex;
} thb_emu_case;

/* The seed's table (shuffle and local at 32/64-wide sub-groups, wave64
 * holding two units, a half-empty wave64, two sub-groups per work-group)
 * plus work-groups of 128 and sub-groups narrower than a unit. */
static const thb_emu_case thb_emu_cases[] = {
  {32, 32, WV_EMU_LOCAL},    {64, 64, WV_EMU_LOCAL},
  {64, 32, WV_EMU_LOCAL},    {32, 32, WV_EMU_SHUFFLE},
  {64, 32, WV_EMU_SHUFFLE},  {64, 64, WV_EMU_SHUFFLE},
  {32, 64, WV_EMU_SHUFFLE},  {32, 64, WV_EMU_LOCAL},
  {32, 128, WV_EMU_LOCAL},   {64, 128, WV_EMU_LOCAL},
  {32, 128, WV_EMU_SHUFFLE}, {64, 128, WV_EMU_SHUFFLE},
  {16, 64, WV_EMU_LOCAL},    {8, 128, WV_EMU_LOCAL},
  {1, 32, WV_EMU_LOCAL},
};
#define TH_NEMU (sizeof thb_emu_cases / sizeof thb_emu_cases[0])

static wv_pack *thb_emu_pack;
static uint64_t *thb_emu_ds;

static void thb_emu_setup(void)
{
  thb_emu_pack = th_shipped("small");
  const uint64_t *cache;
  wave_error err;
  ck_assert_int_eq(wv_pack_cache_get(thb_emu_pack, &cache, &err), 0);
  thb_emu_ds = malloc(thb_emu_pack->dataset_items * 8);
  wv_pack_dataset_range(thb_emu_pack, cache, 0, thb_emu_pack->dataset_items,
                        thb_emu_ds);
}

static void thb_emu_teardown(void)
{
  free(thb_emu_ds);
  wv_pack_free(thb_emu_pack);
}

static uint64_t thb_emu_fnv(const wv_pack *p, const uint64_t *ds, unsigned sg,
                           unsigned wg, wv_emu_exchange ex, uint64_t seed)
{
  wv_hash_mem m = {.pack = p, .dataset = ds};
  wv_emu_config cfg = {.subgroup = sg, .workgroup = wg, .exchange = ex,
                       .sched_seed = seed};
  uint64_t *out = malloc(8192 * 8);
  wave_error err;
  int rv = wv_emu_range(&m, &cfg, 0, 8192, out, &err);
  ck_assert_msg(rv == 0, "%s", err.message);
  uint64_t h = thb_fnv_outputs(out, 8192);
  free(out);
  return h;
}

START_TEST(emu_every_configuration)
{
  const thb_emu_case *c = &thb_emu_cases[_i];
  uint64_t h = thb_emu_fnv(thb_emu_pack, thb_emu_ds, c->sg, c->wg, c->ex, _i + 1);
  ck_assert_msg(h == thb_emu_pack->batch_fnv,
                "sg %u wg %u %s: %016llx", c->sg, c->wg,
                c->ex == WV_EMU_SHUFFLE ? "shuffle" : "local",
                (unsigned long long)h);
  wv_pack *cl = th_shipped("closed");
  ck_assert_uint_eq(thb_emu_fnv(cl, NULL, c->sg, c->wg, c->ex, _i + 100),
                    cl->batch_fnv);
  wv_pack_free(cl);
}
END_TEST

START_TEST(emu_sees_the_one_buffer_race)
{
  /* One local buffer is only safe in lockstep: with one sub-group per
   * work-group nothing can run ahead, so it happens to work; with sub-groups
   * narrower than a unit a fast one overwrites the buffer before a slow one
   * has read it.  The emulator must see the difference (or it proves
   * nothing about the two-buffer rule). */
  ck_assert_uint_eq(thb_emu_fnv(thb_emu_pack, thb_emu_ds, 32, 32,
                               WV_EMU_LOCAL_1BUF, 3),
                    thb_emu_pack->batch_fnv);
  ck_assert_uint_ne(thb_emu_fnv(thb_emu_pack, thb_emu_ds, 8, 128,
                               WV_EMU_LOCAL_1BUF, 3),
                    thb_emu_pack->batch_fnv);
}
END_TEST

START_TEST(emu_partial_ranges_and_bad_config)
{
  wv_hash_mem m = {.pack = thb_emu_pack, .dataset = thb_emu_ds};
  uint64_t want[300], got[300];
  wave_error err;
  static const uint64_t starts[3] = {37, 1ull << 40, UINT64_MAX - 299};
  for (int k = 0; k < 3; k++) {
    wv_ref_range(&m, starts[k], 300, want);
    wv_emu_config cfg = {.subgroup = 32, .workgroup = 128,
                         .exchange = WV_EMU_LOCAL, .sched_seed = 5};
    memset(got, 0, sizeof got);
    ck_assert_int_eq(wv_emu_range(&m, &cfg, starts[k], 300, got, &err), 0);
    ck_assert(memcmp(got, want, sizeof got) == 0);
  }
  wv_emu_config bad = {.subgroup = 16, .workgroup = 64,
                       .exchange = WV_EMU_SHUFFLE};
  ck_assert_int_eq(wv_emu_range(&m, &bad, 0, 32, got, &err), WAVE_EARG);
  bad = (wv_emu_config){.subgroup = 32, .workgroup = 48};
  ck_assert_int_eq(wv_emu_range(&m, &bad, 0, 32, got, &err), WAVE_EARG);
}
END_TEST

/* ---- CPU backend ---------------------------------------------------------- */

START_TEST(cpu_selfcheck_shipped)
{
  static const char *const names[2] = {"small", "closed"};
  wv_pack *p = th_shipped(names[_i]);
  wv_device *dev = th_cpu_open(2);
  wv_caps caps;
  wv_cpu_backend.caps(dev, &caps);
  ck_assert_int_eq(caps.exchange_mode, WV_EXCHANGE_LANES);
  ck_assert(caps.hash_batch > 0);
  char detail[160];
  wave_error err;
  int rv = wv_pack_selfcheck(&wv_cpu_backend, dev, p, detail, sizeof detail,
                             &err);
  ck_assert_msg(rv == 0, "%s", err.message);
  ck_assert(strncmp(detail, "ok", 2) == 0);
  /* The same device, a second time (prepare is idempotent). */
  ck_assert_int_eq(wv_pack_selfcheck(&wv_cpu_backend, dev, p, NULL, 0, &err),
                   0);

  /* A wrong known answer must fail, naming the nonce. */
  p->vectors[1].outputs[7] ^= 1;
  rv = wv_pack_selfcheck(&wv_cpu_backend, dev, p, detail, sizeof detail, &err);
  ck_assert_int_eq(rv, WAVE_ESELFCHECK);
  char want[40];
  snprintf(want, sizeof want, "nonce %llu",
           (unsigned long long)(p->vectors[1].nonce + 7));
  ck_assert_msg(strstr(detail, want) != NULL, "%s", detail);
  p->vectors[1].outputs[7] ^= 1;
  p->batch_fnv ^= 1;
  ck_assert_int_eq(wv_pack_selfcheck(&wv_cpu_backend, dev, p, detail,
                                     sizeof detail, &err), WAVE_ESELFCHECK);
  ck_assert_ptr_nonnull(strstr(detail, "batch"));
  wv_cpu_backend.close(dev);
  wv_pack_free(p);
}
END_TEST

START_TEST(cpu_ranges_match_reference)
{
  wv_pack *p = th_shipped(_i == 0 ? "small" : "closed");
  const unsigned threads = _i == 2 ? 1 : 2;
  wv_device *dev = th_cpu_open(threads);
  wave_error err;
  wv_hash_mem m = {.pack = p};
  ck_assert_int_eq(wv_pack_cache_get(p, &m.cache, &err), 0);  /* light */
  uint64_t *want = malloc(2001 * 8), *got = malloc(2001 * 8);
  uint64_t rng = 42;
  for (int k = 0; k < 40; k++) {
    rng = thb_mix(rng + 1);
    uint64_t nonce = k < 3 ? UINT64_MAX - (uint64_t)(k * 37) : rng;
    uint64_t count = k < 3 ? (uint64_t)k * 37 + 1 : 1 + rng % 1999;
    if (k == 3)
      nonce = 0, count = 2000;
    wv_ref_range(&m, nonce, count, want);
    memset(got, 0xee, 2001 * 8);
    ck_assert_int_eq(wv_cpu_backend.hash(dev, p, nonce, count, got, &err), 0);
    ck_assert_msg(memcmp(got, want, count * 8) == 0, "nonce %llu count %llu",
                  (unsigned long long)nonce, (unsigned long long)count);
    ck_assert_uint_eq(got[count], 0xeeeeeeeeeeeeeeeeull);  /* no overrun */
  }
  /* 2^64 - 1 is the last nonce: count beyond it is a range error. */
  ck_assert_int_eq(wv_cpu_backend.hash(dev, p, UINT64_MAX, 2, got, &err),
                   WAVE_ERANGE);
  free(want);
  free(got);
  wv_cpu_backend.close(dev);
  wv_pack_free(p);
}
END_TEST

START_TEST(cpu_opcode_semantics)
{
  wv_device *dev = th_cpu_open(2);
  wave_error err;
  for (size_t c = 0; c < TH_NCASES; c++) {
    const char *first[1] = {thb_cases[c].insn};
    char *text = th_program_text(TH_HEAD, first, 1);
    wv_pack *p = th_load_text(text);
    free(text);
    for (unsigned k = 0; k < 3; k++) {
      uint64_t want[32], got[32];
      thb_expect(&thb_cases[c], 0x1234, thb_units[k], want);
      ck_assert_int_eq(wv_cpu_backend.hash(dev, p, thb_units[k] * 32, 32, got,
                                           &err), 0);
      for (unsigned l = 0; l < 32; l++)
        ck_assert_msg(got[l] == want[l], "cpu '%s' lane %u",
                      thb_cases[c].insn, l);
    }
    wv_pack_free(p);
  }
  wv_cpu_backend.close(dev);
}
END_TEST

static Suite *tha_suite(void)
{
  Suite *s = suite_create("hash");
  TCase *tc = tcase_create("spec");
  tcase_add_checked_fixture(tc, th_setup, th_teardown);
  tcase_add_test(tc, fnv_published_vectors);
  tcase_add_test(tc, mix64_is_splitmix64);
  tcase_add_loop_test(tc, opcode_semantics_ref_emu, 0, (int)TH_NCASES);
  tcase_add_test(tc, xchg_reads_old_values);
  tcase_add_test(tc, cache_and_dataset_match_spec);
  tcase_add_test(tc, memory_load_semantics);
  tcase_add_loop_test(tc, shipped_packs_known_answers, 0, 2);
  tcase_add_test(tc, packset_loads_shipped_dir);
  tcase_add_test(tc, acc_winners_best_fingerprint);
  tcase_add_test(tc, fold_segments_ragged_and_near_top);
  tcase_add_test(tc, segment_zero_is_batch_fnv);
  tcase_add_test(tc, cpu_batch_across_chunks);
  suite_add_tcase(s, tc);

  tc = tcase_create("emulator");
  tcase_add_checked_fixture(tc, thb_emu_setup, thb_emu_teardown);
  tcase_add_loop_test(tc, emu_every_configuration, 0, (int)TH_NEMU);
  tcase_add_test(tc, emu_sees_the_one_buffer_race);
  tcase_add_test(tc, emu_partial_ranges_and_bad_config);
  suite_add_tcase(s, tc);

  tc = tcase_create("cpu");
  tcase_add_checked_fixture(tc, th_setup, th_teardown);
  tcase_add_loop_test(tc, cpu_selfcheck_shipped, 0, 2);
  tcase_add_loop_test(tc, cpu_ranges_match_reference, 0, 3);
  tcase_add_test(tc, cpu_opcode_semantics);
  suite_add_tcase(s, tc);
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(tha_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
