/* test_arena.c - the bump allocator a request is decoded into
 * (daemon/net/arena.h): items aligned for their size and apart, big items
 * in blocks of their own and freed when given back, the limit, the whole
 * freed and the arena used again, and a Request of many one-row chunks
 * decoded through it by protobuf-c into a few blocks, within 2x of what
 * protobuf-c's own allocations would keep; big blocks given back a page
 * at a time (core/pages.h) keep their edges.  One case prints the
 * time of unpack + free with malloc and with the arena (never asserted;
 * WD_ARENA_CHUNKS=4194304 times issue 35's 40 MB request).  Seconds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>
#include <protobuf-c/protobuf-c.h>

#include <unistd.h>

#include "core/pages.h"
#include "daemon/net/arena.h"

/* an ASan build leaves 16 poisoned bytes after each small item (arena.c) */
#if defined(__SANITIZE_ADDRESS__)
#define TA_RZ 16
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TA_RZ 16
#endif
#endif
#ifndef TA_RZ
#define TA_RZ 0
#endif
#include "proto/wave.pb-c.h"

static size_t tarn_align(size_t size)  /* what an object of this size needs */
{
  size_t al = size & -size;
  return al > 16 ? 16 : al;
}

START_TEST(items_are_aligned_and_apart)
{
  wd_arena a;
  wd_arena_init(&a, SIZE_MAX);
  enum { N = 2000 };
  static unsigned char *p[N];
  static size_t sz[N];
  size_t sum = 0;
  for (int i = 0; i < N; i++) {
    sz[i] = 1 + (size_t)(i * 7919) % 700;  /* 1..700, mixed */
    p[i] = wd_arena_alloc(&a, sz[i]);
    ck_assert_ptr_nonnull(p[i]);
    ck_assert_msg((uintptr_t)p[i] % tarn_align(sz[i]) == 0,
                  "item %d of %zu bytes at %p", i, sz[i], (void *)p[i]);
    memset(p[i], i & 0xff, sz[i]);
    sum += sz[i];
  }
  int bad = -1;  /* no item wrote over another (one assert: Check's are
                 * slow in loops) */
  for (int i = 0; i < N; i++)
    for (size_t k = 0; k < sz[i]; k++)
      if (p[i][k] != (unsigned char)(i & 0xff) && bad < 0)
        bad = i;
  ck_assert_int_eq(bad, -1);
  ck_assert_uint_eq(a.used, sum);
  size_t bytes;  /* padding < alignment <= size; blocks double */
  wd_arena_blocks(&a, &bytes);
  ck_assert_uint_le(bytes, 4 * (sum + TA_RZ * N) + ((size_t)64 << 10));
  ck_assert(!a.refused);
  wd_arena_free(&a);
}
END_TEST

START_TEST(big_items_have_blocks_of_their_own)
{
  wd_arena a;
  wd_arena_init(&a, SIZE_MAX);
  void *s = wd_arena_alloc(&a, 100);
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(wd_arena_blocks(&a, NULL), 1);
  size_t used = a.used, bytes;
  /* a 64 MiB chunk (a whole request's worth): one block of its size */
  size_t huge = (size_t)64 << 20;
  unsigned char *h = wd_arena_alloc(&a, huge);
  ck_assert_ptr_nonnull(h);
  ck_assert_uint_eq((uintptr_t)h % 16, 0);
  memset(h, 0xab, huge);  /* ASan: all of it is the item's */
  ck_assert_uint_eq(wd_arena_blocks(&a, &bytes), 2);
  ck_assert_uint_le(bytes, huge + ((size_t)8 << 10));
  ck_assert_uint_eq(a.used, used + huge);
  unsigned char *b2 = wd_arena_alloc(&a, WD_ARENA_BIG);
  ck_assert_ptr_nonnull(b2);
  ck_assert_uint_eq(wd_arena_blocks(&a, NULL), 3);
  /* given back: a big one goes at once, from the middle of the list too */
  wd_arena_give(&a, h);
  ck_assert_uint_eq(wd_arena_blocks(&a, NULL), 2);
  ck_assert_uint_eq(a.used, used + WD_ARENA_BIG);
  wd_arena_give(&a, b2);
  ck_assert_uint_eq(wd_arena_blocks(&a, NULL), 1);
  ck_assert_uint_eq(a.used, used);
  /* a small one stays until the arena goes */
  wd_arena_give(&a, s);
  wd_arena_give(&a, NULL);
  ck_assert_uint_eq(wd_arena_blocks(&a, NULL), 1);
  ck_assert_uint_eq(a.used, used);
  wd_arena_free(&a);
}
END_TEST

START_TEST(free_empties_and_the_arena_serves_again)
{
  wd_arena a;
  wd_arena_init(&a, (size_t)1 << 30);
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 50000; i++)
      if (wd_arena_alloc(&a, 24) == NULL)
        ck_abort_msg("alloc %d of round %d", i, round);
    ck_assert_ptr_nonnull(wd_arena_alloc(&a, (size_t)1 << 20));
    size_t n = wd_arena_blocks(&a, NULL);
    ck_assert_uint_ge(n, 2);
    ck_assert_uint_le(n, 12);  /* doubling: 1.2 MB in about 9 blocks */
    wd_arena_free(&a);
    ck_assert_uint_eq(wd_arena_blocks(&a, NULL), 0);
    ck_assert_uint_eq(a.used, 0);
    ck_assert_uint_eq(a.limit, (size_t)1 << 30);
  }
}
END_TEST

START_TEST(the_limit_holds)
{
  wd_arena a;
  wd_arena_init(&a, 10000);
  int n = 0;
  while (wd_arena_alloc(&a, 100) != NULL)
    n++;
  ck_assert_int_eq(n, 100);
  ck_assert(a.refused);
  ck_assert_uint_eq(a.used, 10000);
  wd_arena_free(&a);
  ck_assert(!a.refused);
  /* a big item past the limit is refused before its block is made */
  ck_assert_ptr_null(wd_arena_alloc(&a, 20000 + WD_ARENA_BIG));
  ck_assert(a.refused);
  ck_assert_uint_eq(wd_arena_blocks(&a, NULL), 0);
  ck_assert_uint_eq(a.used, 0);
  wd_arena_free(&a);
}
END_TEST

#if TA_RZ
#include <sanitizer/asan_interface.h>

/* ASan builds: the bytes past a small item, a block's free tail and a
 * small item given back are poisoned (what arena.c says ASan still sees) */
START_TEST(asan_sees_past_a_small_item)
{
  wd_arena a;
  wd_arena_init(&a, SIZE_MAX);
  for (size_t size = 1; size < 200; size++) {
    unsigned char *p = wd_arena_alloc(&a, size);
    ck_assert_ptr_nonnull(p);
    ck_assert(!__asan_address_is_poisoned(p));
    ck_assert(!__asan_address_is_poisoned(p + size - 1));
    ck_assert_msg(__asan_address_is_poisoned(p + size), "size %zu", size);
    ck_assert(__asan_address_is_poisoned(p + size + TA_RZ - 1));
    if (size % 3 == 0) {
      wd_arena_give(&a, p);
      ck_assert_ptr_eq(__asan_region_is_poisoned(p, size), p);
    }
  }
  wd_arena_free(&a);
}
END_TEST
#endif

/* protobuf-c's own way, counted: what it keeps once decoded */
static size_t tarn_live;

static void *tarn_count_alloc(void *data, size_t size)
{
  (void)data;
  size_t *p = malloc(16 + size);
  if (p == NULL)
    return NULL;
  *p = size;
  tarn_live += size;
  return (unsigned char *)p + 16;
}

static void tarn_count_free(void *data, void *ptr)
{
  (void)data;
  if (ptr == NULL)
    return;
  size_t *p = (size_t *)((unsigned char *)ptr - 16);
  tarn_live -= *p;
  free(p);
}

static void *tarn_arena_alloc(void *data, size_t size)
{
  return wd_arena_alloc(data, size);
}

static void tarn_arena_give(void *data, void *ptr)
{
  wd_arena_give(data, ptr);
}

static double tarn_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* core/pages.h, which wd_arena_free's big blocks go through: only the
 * whole pages inside a block are given back (they read as zeros after),
 * the bytes of its partial first and last pages and those around it keep
 * theirs, and a block under WV_PAGES_MIN keeps all of its bytes. */
START_TEST(big_blocks_give_back_their_whole_pages_only)
{
  size_t n = WV_PAGES_MIN + 3 * WV_PAGES_STEP + 12345, pad = 8192;
  unsigned char *p = malloc(n + 2 * pad);
  ck_assert_ptr_nonnull(p);
  unsigned char *q = p + pad + 3;  /* no page boundary */
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)q + page - 1) & ~(page - 1);
  uintptr_t hi = ((uintptr_t)q + n) & ~(page - 1);
  memset(p, 0xab, n + 2 * pad);
  wv_pages_release(q, n);
  size_t zeros = 0;
  for (size_t i = 0; i < n + 2 * pad; i++) {
    uintptr_t at = (uintptr_t)(p + i);
    int inside = at >= lo && at < hi;
    if (p[i] != (inside ? 0 : 0xab))
      ck_abort_msg("byte %zu of the block: %#x (%s its whole pages)",
                   i, p[i], inside ? "inside" : "outside");
    zeros += p[i] == 0;
  }
  ck_assert_uint_eq(zeros, hi - lo);
  memset(p, 0xcd, n + 2 * pad);
  wv_pages_release(q, WV_PAGES_MIN - 1);
  for (size_t i = 0; i < n + 2 * pad; i++)
    if (p[i] != 0xcd)
      ck_abort_msg("a small block lost byte %zu", i);
  wv_free_big(p);
  wv_free_big(NULL);
}
END_TEST

START_TEST(many_chunks_decode_into_few_blocks)
{
  size_t n = 100000;
  const char *env = getenv("WD_ARENA_CHUNKS");
  if (env != NULL && atol(env) > 0)
    n = (size_t)atol(env);
  double *rows = malloc(n * sizeof *rows);
  ProtobufCBinaryData *in = malloc(n * sizeof *in);
  ck_assert(rows != NULL && in != NULL);
  for (size_t i = 0; i < n; i++) {
    rows[i] = (double)i + 0.5;
    in[i] = (ProtobufCBinaryData){8, (uint8_t *)&rows[i]};
  }
  Wave__V1__ReduceRequest rr = WAVE__V1__REDUCE_REQUEST__INIT;
  rr.dtype = WAVE__V1__DTYPE__F64;
  rr.op = WAVE__V1__OP__SUM;
  rr.n_input = n;
  rr.input = in;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = 35;
  rq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq.reduce = &rr;
  size_t len = wave__v1__request__get_packed_size(&rq);
  uint8_t *wire = malloc(len);
  ck_assert_ptr_nonnull(wire);
  wave__v1__request__pack(&rq, wire);

  /* protobuf-c with malloc, one block per element (counted) */
  ProtobufCAllocator count = {.alloc = tarn_count_alloc, .free = tarn_count_free};
  tarn_live = 0;
  double t0 = tarn_now();
  Wave__V1__Request *q = wave__v1__request__unpack(&count, len, wire);
  double t1 = tarn_now();
  ck_assert_ptr_nonnull(q);
  size_t kept = tarn_live;
  wave__v1__request__free_unpacked(q, &count);
  double t2 = tarn_now();
  ck_assert_uint_eq(tarn_live, 0);

  /* the same through the arena, freed whole */
  wd_arena a;
  wd_arena_init(&a, SIZE_MAX);
  ProtobufCAllocator pa = {.alloc = tarn_arena_alloc, .free = tarn_arena_give,
                           .allocator_data = &a};
  double t3 = tarn_now();
  q = wave__v1__request__unpack(&pa, len, wire);
  double t4 = tarn_now();
  ck_assert_ptr_nonnull(q);
  ck_assert_uint_eq(q->reduce->n_input, n);
  size_t wrong = n;  /* the first chunk decoded wrong, or n */
  for (size_t i = 0; i < n && wrong == n; i++) {
    double v;
    const ProtobufCBinaryData *d = &q->reduce->input[i];
    if (d->len != 8 || (uintptr_t)d->data % 8 != 0)
      wrong = i;
    else if (memcpy(&v, d->data, 8), v != rows[i])
      wrong = i;
  }
  ck_assert_uint_eq(wrong, n);
  size_t bytes, blocks = wd_arena_blocks(&a, &bytes);
  /* the big scan slabs were given back; the small ones (32 bytes a
   * field, in slabs that double up to WD_ARENA_BIG) are kept */
  ck_assert_uint_le(a.used, kept + 2 * WD_ARENA_BIG);
  ck_assert_uint_le(bytes, 2 * (kept + TA_RZ * n) + ((size_t)64 << 10));
  ck_assert_uint_le(blocks, 24);
  double t5 = tarn_now();
  wd_arena_free(&a);
  double t6 = tarn_now();
  printf("test_arena: %zu one-row f64 chunks (%zu wire bytes): malloc: "
         "unpack %.3f s, free %.3f s (%zu bytes kept); arena: unpack %.3f "
         "s, free %.4f s (%zu blocks, %zu bytes)\n", n, len, t1 - t0,
         t2 - t1, kept, t4 - t3, t6 - t5, blocks, bytes);
  free(wire);
  free(in);
  free(rows);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("arena");
  TCase *t = tcase_create("arena");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, items_are_aligned_and_apart);
  tcase_add_test(t, big_items_have_blocks_of_their_own);
  tcase_add_test(t, free_empties_and_the_arena_serves_again);
  tcase_add_test(t, the_limit_holds);
  tcase_add_test(t, many_chunks_decode_into_few_blocks);
  tcase_add_test(t, big_blocks_give_back_their_whole_pages_only);
#if TA_RZ
  tcase_add_test(t, asan_sees_past_a_small_item);
#endif
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_ENV);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
