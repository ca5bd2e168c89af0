/* test_readers.c - the reader pool and the staging rings (daemon/bulk/
 * readers.h), in process: the pool's size (limits.file_readers, its
 * default min(12, cores)), pools of their own (none for the process),
 * replacements for stuck readers, every task run, a pool freed while a
 * read is stuck outlived by that reader; a ring's buffers pinned once
 * each and reused across jobs, a lent buffer left alone until it comes
 * back.  The bits of
 * jobs that use them are test_filered's.
 */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/bulk/readers.h"

START_TEST(pool_size)
{
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned want = cores > 12 ? 12 : cores < 1 ? 1 : (unsigned)cores;
  ck_assert_uint_eq(wd_readers_default(), want);
  wave_error e = {0};
  wd_readers *r, *r2;
  ck_assert_int_eq(wd_readers_new(3, &r, &e), 0);
  ck_assert_uint_eq(wd_readers_size(r), 3);
  /* a second pool is a pool of its own: no process-wide one */
  ck_assert_int_eq(wd_readers_new(5, &r2, &e), 0);
  ck_assert_uint_eq(wd_readers_size(r2), 5);
  ck_assert_uint_eq(wd_readers_size(r), 3);
  wd_readers_free(r2);
  ck_assert_uint_eq(wd_readers_size(r), 3);
  /* two reads stuck: two more threads until they come back */
  wd_readers_grow(r, 2);
  ck_assert_uint_eq(wd_readers_size(r), 5);
  ck_assert_uint_eq(wd_readers_stuck(r), 2);
  wd_readers_shrink(r, 1);
  ck_assert_uint_eq(wd_readers_size(r), 4);
  ck_assert_uint_eq(wd_readers_stuck(r), 1);
  wd_readers_shrink(r, 5);  /* no more than were lent */
  ck_assert_uint_eq(wd_readers_size(r), 3);
  ck_assert_uint_eq(wd_readers_stuck(r), 0);
  wd_readers_free(r);
  ck_assert_int_eq(wd_readers_new(0, &r, &e), 0);
  ck_assert_uint_eq(wd_readers_size(r), want);
  wd_readers_free(r);
  ck_assert_int_eq(wd_readers_new(1000, &r, &e), 0);
  ck_assert_uint_eq(wd_readers_size(r), WD_READERS_MAX);
  wd_readers_free(r);
  wd_readers_free(NULL);
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
  wd_readers *r;
  ck_assert_int_eq(wd_readers_new(4, &r, &e), 0);
  unsigned n = 1000, sum = 0;
  for (unsigned i = 0; i < n; i++) {
    tr_task *k = calloc(1, sizeof *k);
    k->t.run = tr_run;
    k->id = i;
    sum += i;
    wd_readers_post(r, &k->t);
  }
  pthread_mutex_lock(&tr_mu);
  while (tr_ran < n)
    pthread_cond_wait(&tr_cv, &tr_mu);
  ck_assert_uint_eq(tr_sum, sum);
  pthread_mutex_unlock(&tr_mu);
  wd_readers_free(r);
}
END_TEST

/* A task stuck in a "read" (it waits for tr_go) when its pool is freed:
 * the free returns, and the task, let go, still has its pool (shrink and
 * a lent ring buffer given back), which the last thread out frees (ASan
 * says so if it does not, or too soon). */
/* Threads of this process named wv-reader (/proc/self/task/N/comm). */
static int tr_readers_alive(void)
{
  DIR *d = opendir("/proc/self/task");
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char path[300], comm[32] = "";
    if (de->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL)
      continue;  /* ended meanwhile */
    if (fgets(comm, sizeof comm, f) != NULL &&
        strncmp(comm, "wv-reader", 9) == 0)
      n++;
    fclose(f);
  }
  closedir(d);
  return n;
}

static pthread_mutex_t trs_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t trs_cv = PTHREAD_COND_INITIALIZER;
static int trs_in, trs_go, trs_out;

typedef struct trs_task {
  wd_rtask t;
  wd_readers *r;
  uint8_t *lent;
} trs_task;

static void trs_run(wd_rtask *t)
{
  trs_task *k = (trs_task *)t;
  pthread_mutex_lock(&trs_mu);
  trs_in = 1;
  pthread_cond_broadcast(&trs_cv);
  while (!trs_go)
    pthread_cond_wait(&trs_cv, &trs_mu);
  pthread_mutex_unlock(&trs_mu);
  wd_ring_return(k->r, k->lent);
  wd_readers_shrink(k->r, 1);
  pthread_mutex_lock(&trs_mu);
  trs_out = 1;
  pthread_cond_broadcast(&trs_cv);
  pthread_mutex_unlock(&trs_mu);
  free(k);
}

START_TEST(pool_outlived_by_a_stuck_read)
{
  wave_error e = {0};
  wd_readers *r;
  ck_assert_int_eq(wd_readers_new(2, &r, &e), 0);
  wv_backend cpu = {.name = "cpu"};
  wv_device *dev = (wv_device *)&cpu;
  uint8_t *buf[1];
  ck_assert_int_eq(wd_ring_take(r, &(wv_dev){&cpu, dev}, 4096, 1, buf, &e),
                   0);
  int lent = 1;
  wd_ring_give(r, dev, buf, &lent, 1);
  trs_task *k = calloc(1, sizeof *k);
  *k = (trs_task){.t.run = trs_run, .r = r, .lent = buf[0]};
  wd_readers_post(r, &k->t);
  pthread_mutex_lock(&trs_mu);
  while (!trs_in)
    pthread_cond_wait(&trs_cv, &trs_mu);
  pthread_mutex_unlock(&trs_mu);
  wd_readers_grow(r, 1);  /* left behind, as filered.c does */
  ck_assert_uint_eq(wd_readers_stuck(r), 1);
  wd_ring_forget(r, &(wv_dev){&cpu, dev});
  wd_readers_free(r);  /* returns with the read still out */
  pthread_mutex_lock(&trs_mu);
  ck_assert_int_eq(trs_out, 0);
  trs_go = 1;
  pthread_cond_broadcast(&trs_cv);
  while (!trs_out)
    pthread_cond_wait(&trs_cv, &trs_mu);
  pthread_mutex_unlock(&trs_mu);
  /* the thread frees r after its task: wait for it to be gone (its name
   * leaves /proc) so that LeakSanitizer sees the end of it */
  for (int i = 0; i < 1000 && tr_readers_alive() > 0; i++)
    usleep(2000);
  ck_assert_int_eq(tr_readers_alive(), 0);
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
  wd_readers *r;
  ck_assert_int_eq(wd_readers_new(2, &r, &e), 0);
  wv_backend be = {.name = "counting", .host_register = tr_register,
                   .host_unregister = tr_unregister};
  wv_device *dev = (wv_device *)&be;  /* only a key here */
  uint8_t *a[3], *b[3], *c[3];
  ck_assert_int_eq(wd_ring_take(r, &(wv_dev){&be, dev}, 1 << 20, 3, a, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_pins), 3);
  for (unsigned i = 0; i < 3; i++)
    a[i][0] = 1, a[i][(1 << 20) - 1] = 2;  /* writable, whole */
  wd_ring_give(r, dev, a, NULL, 3);
  /* the next job takes the same buffers: pinned once, not per job */
  ck_assert_int_eq(wd_ring_take(r, &(wv_dev){&be, dev}, 1 << 20, 3, b, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_pins), 3);
  for (unsigned i = 0; i < 3; i++) {
    int found = 0;
    for (unsigned j = 0; j < 3; j++)
      found |= b[i] == a[j];
    ck_assert(found);
  }
  /* b[1] is lent to a read that has not returned: not taken again */
  int lent[3] = {0, 1, 0};
  wd_ring_give(r, dev, b, lent, 3);
  ck_assert_int_eq(wd_ring_take(r, &(wv_dev){&be, dev}, 1 << 20, 3, c, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_pins), 4);
  for (unsigned i = 0; i < 3; i++)
    ck_assert_ptr_ne(c[i], b[1]);
  wd_ring_give(r, dev, c, NULL, 3);
  wd_ring_return(r, b[1]);
  /* another device has a ring of its own */
  wv_device *other = (wv_device *)&tr_pins;
  ck_assert_int_eq(wd_ring_take(r, &(wv_dev){&be, other}, 1 << 20, 1, c, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_pins), 5);
  wd_ring_give(r, other, c, NULL, 1);
  /* a smaller size: larger free buffers serve it, nothing made or freed */
  ck_assert_int_eq(wd_ring_take(r, &(wv_dev){&be, dev}, 1 << 16, 2, c, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_unpins), 0);
  ck_assert_uint_eq(atomic_load(&tr_pins), 5);
  wd_ring_give(r, dev, c, NULL, 2);
  /* a larger one: the free buffers too small are unpinned, freed */
  ck_assert_int_eq(wd_ring_take(r, &(wv_dev){&be, dev}, 1 << 21, 2, c, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_unpins), 4);
  ck_assert_uint_eq(atomic_load(&tr_pins), 7);
  for (unsigned i = 0; i < 2; i++)
    c[i][0] = 1, c[i][(1 << 21) - 1] = 2;  /* writable, whole */
  wd_ring_give(r, dev, c, NULL, 2);
  /* a backend that does not pin (the CPU's): plain buffers */
  wv_backend cpu = {.name = "cpu"};
  ck_assert_int_eq(wd_ring_take(r, &(wv_dev){&cpu, (wv_device *)&cpu}, 4096, 2, c, &e), 0);
  ck_assert_uint_eq(atomic_load(&tr_pins), 7);
  wd_ring_give(r, (wv_device *)&cpu, c, NULL, 2);
  wd_readers_free(r);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("readers");
  TCase *t = tcase_create("pool");
  tcase_add_test(t, pool_size);
  tcase_add_test(t, pool_runs_every_task);
  tcase_add_test(t, ring_reuses_and_lends);
  tcase_add_test(t, pool_outlived_by_a_stuck_read);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
