/* test_readers.c - the reader pool and the staging rings (daemon/bulk/
 * readers.h), in process: the pool's size (limits.file_readers, its
 * default min(12, cores)), references to one pool, replacements for stuck
 * readers, every task run; a ring's buffers pinned once each and reused
 * across jobs, a lent buffer left alone until it comes back.  The bits of
 * jobs that use them are test_filered's.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/bulk/readers.h"

START_TEST(pool_size)
{
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned want = cores > 8 ? 8 : cores < 1 ? 1 : (unsigned)cores;
  ck_assert_uint_eq(wd_readers_default(), want);
  ck_assert_uint_eq(wd_readers_size(), 0);
  wave_error e = {0};
  ck_assert_int_eq(wd_readers_start(3, &e), 0);
  ck_assert_uint_eq(wd_readers_size(), 3);
  /* a second start is a reference to the same pool: its size stays */
  ck_assert_int_eq(wd_readers_start(5, &e), 0);
  ck_assert_uint_eq(wd_readers_size(), 3);
  wd_readers_stop();
  ck_assert_uint_eq(wd_readers_size(), 3);
  /* two reads stuck: two more threads until they come back */
  wd_readers_grow(2);
  ck_assert_uint_eq(wd_readers_size(), 5);
  wd_readers_shrink(1);
  ck_assert_uint_eq(wd_readers_size(), 4);
  wd_readers_shrink(5);  /* no more than were lent */
  ck_assert_uint_eq(wd_readers_size(), 3);
  wd_readers_stop();
  ck_assert_uint_eq(wd_readers_size(), 0);
  ck_assert_int_eq(wd_readers_start(0, &e), 0);
  ck_assert_uint_eq(wd_readers_size(), want);
  wd_readers_stop();
  ck_assert_int_eq(wd_readers_start(1000, &e), 0);
  ck_assert_uint_eq(wd_readers_size(), WD_READERS_MAX);
  wd_readers_stop();
}
END_TEST

typedef struct tr_task {
  wd_rtask t;
  unsigned id;
} tr_task;

static pthread_mutex_t tr_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tr_cv = PTHREAD_COND_INITIALIZER;
static unsigned tr_ran, tr_sum;

static void tr_run(wd_rtask *t)
{
  tr_task *k = (tr_task *)t;
  pthread_mutex_lock(&tr_mu);
  tr_ran++;
  tr_sum += k->id;
  pthread_cond_broadcast(&tr_cv);
  pthread_mutex_unlock(&tr_mu);
  free(k);
}

START_TEST(pool_runs_every_task)
{
  wave_error e = {0};
  ck_assert_int_eq(wd_readers_start(4, &e), 0);
  unsigned n = 1000, sum = 0;
  for (unsigned i = 0; i < n; i++) {
    tr_task *k = calloc(1, sizeof *k);
    k->t.run = tr_run;
    k->id = i;
    sum += i;
    ck_assert_int_eq(wd_readers_post(&k->t, &e), 0);
  }
  pthread_mutex_lock(&tr_mu);
  while (tr_ran < n)
    pthread_cond_wait(&tr_cv, &tr_mu);
  ck_assert_uint_eq(tr_sum, sum);
  pthread_mutex_unlock(&tr_mu);
  wd_readers_stop();
}
END_TEST

/* A backend that counts its pins. */
static atomic_uint tr_pins, tr_unpins;

static int tr_register(wv_device *dev, const void *ptr, size_t bytes,
                       wave_error *err)
{
  (void)dev;
  (void)ptr;
  (void)bytes;
  (void)err;
  atomic_fetch_add(&tr_pins, 1);
  return 0;
}

static void tr_unregister(wv_device *dev, const void *ptr, size_t bytes)
{
  (void)dev;
  (void)ptr;
  (void)bytes;
  atomic_fetch_add(&tr_unpins, 1);
}

START_TEST(ring_reuses_and_lends)
{
  wave_error e = {0};
  ck_assert_int_eq(wd_readers_start(2, &e), 0);
  wv_backend be = {.name = "counting", .host_register = tr_register,
                   .host_unregister = tr_unregister};
  wv_device *dev = (wv_device *)&be;  /* only a key here */
  uint8_t *a[3], *b[3], *c[3];
  ck_assert_int_eq(wd_ring_take(&(wv_dev){&be, dev}, 1 << 20, 3, a, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_pins), 3);
  for (unsigned i = 0; i < 3; i++)
    a[i][0] = 1, a[i][(1 << 20) - 1] = 2;  /* writable, whole */
  wd_ring_give(dev, a, NULL, 3);
  /* the next job takes the same buffers: pinned once, not per job */
  ck_assert_int_eq(wd_ring_take(&(wv_dev){&be, dev}, 1 << 20, 3, b, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_pins), 3);
  for (unsigned i = 0; i < 3; i++) {
    int found = 0;
    for (unsigned j = 0; j < 3; j++)
      found |= b[i] == a[j];
    ck_assert(found);
  }
  /* b[1] is lent to a read that has not returned: not taken again */
  int lent[3] = {0, 1, 0};
  wd_ring_give(dev, b, lent, 3);
  ck_assert_int_eq(wd_ring_take(&(wv_dev){&be, dev}, 1 << 20, 3, c, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_pins), 4);
  for (unsigned i = 0; i < 3; i++)
    ck_assert_ptr_ne(c[i], b[1]);
  wd_ring_give(dev, c, NULL, 3);
  wd_ring_return(b[1]);
  /* another device has a ring of its own */
  wv_device *other = (wv_device *)&tr_pins;
  ck_assert_int_eq(wd_ring_take(&(wv_dev){&be, other}, 1 << 20, 1, c, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_pins), 5);
  wd_ring_give(other, c, NULL, 1);
  /* a smaller size: larger free buffers serve it, nothing made or freed */
  ck_assert_int_eq(wd_ring_take(&(wv_dev){&be, dev}, 1 << 16, 2, c, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_unpins), 0);
  ck_assert_uint_eq(atomic_load(&tr_pins), 5);
  wd_ring_give(dev, c, NULL, 2);
  /* a larger one: the free buffers too small are unpinned, freed */
  ck_assert_int_eq(wd_ring_take(&(wv_dev){&be, dev}, 1 << 21, 2, c, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_unpins), 4);
  ck_assert_uint_eq(atomic_load(&tr_pins), 7);
  for (unsigned i = 0; i < 2; i++)
    c[i][0] = 1, c[i][(1 << 21) - 1] = 2;  /* writable, whole */
  wd_ring_give(dev, c, NULL, 2);
  /* a backend that does not pin (the CPU's): plain buffers */
  wv_backend cpu = {.name = "cpu"};
  ck_assert_int_eq(wd_ring_take(&(wv_dev){&cpu, (wv_device *)&cpu}, 4096, 2, c, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_pins), 7);
  wd_ring_give((wv_device *)&cpu, c, NULL, 2);
  wd_readers_stop();
}
END_TEST

int main(void)
{
  Suite *s = suite_create("readers");
  TCase *t = tcase_create("pool");
  tcase_add_test(t, pool_size);
  tcase_add_test(t, pool_runs_every_task);
  tcase_add_test(t, ring_reuses_and_lends);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
