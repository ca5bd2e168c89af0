/* test_turns.c - the order in which a device thread serves reductions
 * (daemon/exec/device.c, the short lane's turns), in process: a CPU device and
 * work items whose run op only writes down its id, one of which waits
 * inside its run until the test lets it go.  With the device held that
 * way the test queues items from several owners, lets go, and reads the
 * order they ran in.  No timing: the held item says when it has begun, and
 * the test waits for the items' ends (condition variables).
 *
 *  - behind a held item, two owners' queued items alternate;
 *  - an owner that queues while another's backlog is being served goes
 *    next, not after one more of the backlog (first in, first out, or a
 *    plain ring of owners, would serve one more);
 *  - an owner that sends one item at a time takes one turn per turn of the
 *    others: two such owners do not keep a third one waiting;
 *  - an item in slices (a big reduction, rq/reduce.c) that returns
 *    WD_RUN_MORE while another owner has an item queued lets that item
 *    run between its slices, keeps its place ahead of its own owner's
 *    next item, and runs its last slices on once nobody else waits;
 *  - a device that faults between two slices ends the sliced item with
 *    EDEVFAULT instead of running its next slice.
 *
 * And the decode pool's lanes (daemon/net/pool.c, issue 35): while big
 * items (a many-chunk request's decode) hold every thread they may take,
 * a small item pushed after them still runs, and a pool of one thread
 * runs a small item while a big one holds it.  The big items wait inside
 * their fn until the test lets them go; the test waits for the small one
 * (a condition variable, bounded only as a guard against a hang).
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/exec/device.h"
#include "daemon/net/pool.h"
#include "core/base.h"

#define TT_MAX 64

typedef struct tt_item {
  wd_work work;
  int id;
  int hold;               /* wait in run until released */
  struct tt_item *then;   /* submitted by this one's run: its owner's next
                             item, sent when this one began */
  int slices;             /* tt_sliced_ops: slices left */
  int fail;               /* tt_sliced_ops: end with WAVE_EDEVICE */
} tt_item;

static pthread_mutex_t tt_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tt_cv = PTHREAD_COND_INITIALIZER;
static int tt_order[TT_MAX], tt_n, tt_ended, tt_holding, tt_released;

static int tt_run(wd_work *w, const wd_run_ctx *x)
{
  (void)x;
  tt_item *it = (tt_item *)w;
  if (it->then != NULL) {
    wave_error err = {0};
    if (wd_device_submit(w->dev, &it->then->work, &err) != 0)
      it->then->id = -1;  /* shows in the order as missing */
  }
  pthread_mutex_lock(&tt_mu);
  if (tt_n < TT_MAX)
    tt_order[tt_n++] = it->id;
  if (it->hold) {
    tt_holding = 1;
    pthread_cond_broadcast(&tt_cv);
    while (!tt_released)
      pthread_cond_wait(&tt_cv, &tt_mu);
    tt_holding = 0;
    tt_released = 0;
  }
  pthread_mutex_unlock(&tt_mu);
  w->rc = 0;
  return WD_RUN_END;
}

/* Never called here (the server's completion queue would); the device
 * posts only items that have one. */
static void tt_done(wd_work *w) { (void)w; }

/* An item in `slices` slices, each written down as its id, the first
 * held if it->hold; between two it leaves the device (WD_RUN_MORE) only
 * while another owner has an item queued, as a sliced reduction does.
 * An item with it->fail ends with WAVE_EDEVICE (the device faults). */
static int tt_sliced_run(wd_work *w, const wd_run_ctx *x)
{
  tt_item *it = (tt_item *)w;
  if (it->fail) {
    tt_run(w, x);
    w->rc = wv_seterr(&w->err, WAVE_EDEVICE, "test: the device is gone");
    return WD_RUN_END;
  }
  while (it->slices > 0) {
    tt_run(w, x);
    it->hold = 0;
    if (--it->slices > 0 && wd_device_short_waiting(w->dev, w->owner))
      return WD_RUN_MORE;
  }
  w->rc = 0;
  return WD_RUN_END;
}

static const wd_work_ops tt_sliced_ops = {
  .name = "test item in slices",
  .lane = WD_LANE_SHORT,
  .run = tt_sliced_run,
  .done = tt_done,
};

static const wd_work_ops tt_ops = {
  .name = "test item",
  .lane = WD_LANE_SHORT,
  .run = tt_run,
  .done = tt_done,
};

/* The device's post callback (its thread): one more item has ended. */
static void tt_post(void *arg, wd_work *w)
{
  (void)arg;
  (void)w;
  pthread_mutex_lock(&tt_mu);
  tt_ended++;
  pthread_cond_broadcast(&tt_cv);
  pthread_mutex_unlock(&tt_mu);
}

static wd_device *tt_start(void)
{
  tt_n = tt_ended = tt_holding = tt_released = 0;
  wd_device_cfg cfg = {.name = "cpu0", .backend = "cpu", .threads = 1,
                       .queue_depth = TT_MAX};
  wd_device *d = NULL;
  wave_error err = {0};
  ck_assert_msg(wd_device_start(&cfg, 0, 4, tt_post, NULL, NULL, &d,
                                &err) == 0,
                "%s", err.message);
  ck_assert_int_eq(wd_device_wait_open(d), 0);
  return d;
}

static void tt_prep(tt_item *it, int id, uint64_t owner, int hold)
{
  memset(it, 0, sizeof *it);
  it->work.ops = &tt_ops;
  it->work.owner = owner;
  it->id = id;
  it->hold = hold;
}

static void tt_submit(wd_device *d, tt_item *it, int id, uint64_t owner,
                      int hold)
{
  tt_prep(it, id, owner, hold);
  wave_error err = {0};
  ck_assert_msg(wd_device_submit(d, &it->work, &err) == 0, "%s", err.message);
}

/* Until the held item runs. */
static void tt_wait_held(void)
{
  pthread_mutex_lock(&tt_mu);
  while (!tt_holding)
    pthread_cond_wait(&tt_cv, &tt_mu);
  pthread_mutex_unlock(&tt_mu);
}

static void tt_release(void)
{
  pthread_mutex_lock(&tt_mu);
  tt_released = 1;
  pthread_cond_broadcast(&tt_cv);
  pthread_mutex_unlock(&tt_mu);
}

/* Until n items have ended. */
static void tt_wait_ended(int n)
{
  pthread_mutex_lock(&tt_mu);
  while (tt_ended < n)
    pthread_cond_wait(&tt_cv, &tt_mu);
  pthread_mutex_unlock(&tt_mu);
}

static void tt_expect(const int *want, int n)
{
  pthread_mutex_lock(&tt_mu);
  char got[400] = "", one[16];
  for (int i = 0; i < tt_n; i++) {
    snprintf(one, sizeof one, " %d", tt_order[i]);
    strncat(got, one, sizeof got - strlen(got) - 1);
  }
  int ok = tt_n == n;
  for (int i = 0; ok && i < n; i++)
    ok = tt_order[i] == want[i];
  pthread_mutex_unlock(&tt_mu);
  ck_assert_msg(ok, "served in the order%s", got);
}

/* Owner 1: ids 1x; owner 2: 2x; owner 3: 3x. */
START_TEST(two_owners_alternate)
{
  wd_device *d = tt_start();
  tt_item it[8];
  tt_submit(d, &it[0], 0, 9, 1);  /* holds the device */
  tt_wait_held();
  for (int i = 0; i < 4; i++)
    tt_submit(d, &it[1 + i], 11 + i, 1, 0);
  for (int i = 0; i < 2; i++)
    tt_submit(d, &it[5 + i], 21 + i, 2, 0);
  tt_release();
  tt_wait_ended(7);
  static const int want[] = {0, 11, 21, 12, 22, 13, 14};
  tt_expect(want, 7);
  wd_device_free(d);
}
END_TEST

/* Owner 1's backlog is being served (its item 11 holds the device, 12..15
 * are queued); owner 2 queues one item: it runs right after 11. */
START_TEST(newcomer_goes_next)
{
  wd_device *d = tt_start();
  tt_item it[8];
  tt_submit(d, &it[0], 11, 1, 1);
  tt_wait_held();
  for (int i = 0; i < 4; i++)
    tt_submit(d, &it[1 + i], 12 + i, 1, 0);
  tt_submit(d, &it[5], 21, 2, 0);
  tt_release();
  tt_wait_ended(6);
  static const int want[] = {11, 21, 12, 13, 14, 15};
  tt_expect(want, 6);
  wd_device_free(d);
}
END_TEST

/* Owners 2 and 3 send one item at a time, each the moment its previous
 * one begins (so they queue anew each time, from nothing queued); owner 1
 * has a backlog.  Owner 1 still gets every third turn: the others' new
 * items do not step ahead of it again and again. */
START_TEST(one_at_a_time_does_not_jump_turns)
{
  wd_device *d = tt_start();
  tt_item it[16];
  tt_submit(d, &it[0], 11, 1, 1);  /* holds the device */
  tt_wait_held();
  for (int i = 0; i < 6; i++)      /* 12..17 */
    tt_submit(d, &it[1 + i], 12 + i, 1, 0);
  tt_prep(&it[7], 21, 2, 0);       /* 21 -> 22 -> 23 */
  tt_prep(&it[8], 22, 2, 0);
  tt_prep(&it[9], 23, 2, 0);
  it[7].then = &it[8];
  it[8].then = &it[9];
  tt_prep(&it[10], 31, 3, 0);      /* 31 -> 32 -> 33 */
  tt_prep(&it[11], 32, 3, 0);
  tt_prep(&it[12], 33, 3, 0);
  it[10].then = &it[11];
  it[11].then = &it[12];
  wave_error err = {0};
  ck_assert_int_eq(wd_device_submit(d, &it[7].work, &err), 0);
  ck_assert_int_eq(wd_device_submit(d, &it[10].work, &err), 0);
  tt_release();
  tt_wait_ended(13);
  /* turn 0: 11 21 31; turn 1: 12 22 32; turn 2: 13 23 33; then 14..17 */
  static const int want[] = {11, 21, 31, 12, 22, 32, 13, 23, 33,
                             14, 15, 16, 17};
  tt_expect(want, 13);
  wd_device_free(d);
}
END_TEST

static void tt_submit_sliced(wd_device *d, tt_item *it, int id,
                             uint64_t owner, int slices, int hold)
{
  tt_prep(it, id, owner, hold);
  it->work.ops = &tt_sliced_ops;
  it->slices = slices;
  wave_error err = {0};
  ck_assert_msg(wd_device_submit(d, &it->work, &err) == 0, "%s", err.message);
}

/* Owner 1's item 1 in four slices holds the device in its first; owner 2
 * queues 2 and 3, owner 1 queues 4.  Item 1 lets 2 run after its first
 * slice and 3 after its second, then runs its last two on (nobody else
 * waits), all before its owner's item 4.  Served whole, it would have
 * given 1 2 4 3. */
START_TEST(slices_let_others_run_between)
{
  wd_device *d = tt_start();
  tt_item it[4];
  tt_submit_sliced(d, &it[0], 1, 1, 4, 1);
  tt_wait_held();
  tt_submit(d, &it[1], 2, 2, 0);
  tt_submit(d, &it[2], 3, 2, 0);
  tt_submit(d, &it[3], 4, 1, 0);
  tt_release();
  tt_wait_ended(4);
  static const int want[] = {1, 2, 1, 3, 1, 1, 4};
  tt_expect(want, 7);
  ck_assert_int_eq(it[0].work.rc, 0);
  wd_device_free(d);
}
END_TEST

/* Owner 2's item 2 faults the device while owner 1's item 1 waits between
 * its slices: item 1 ends with EDEVFAULT, its second slice never runs. */
START_TEST(fault_between_slices)
{
  wd_device *d = tt_start();
  tt_item it[2];
  tt_submit_sliced(d, &it[0], 1, 1, 3, 1);
  tt_wait_held();
  tt_submit_sliced(d, &it[1], 2, 2, 1, 0);
  it[1].fail = 1;
  tt_release();
  tt_wait_ended(2);
  static const int want[] = {1, 2};
  tt_expect(want, 2);
  ck_assert_int_eq(it[1].work.rc, WAVE_EDEVFAULT);
  ck_assert_int_eq(it[0].work.rc, WAVE_EDEVFAULT);
  ck_assert_int_eq(it[0].slices, 2);
  ck_assert(wd_device_faulted(d));
  wd_device_free(d);
}
END_TEST

/* ---- the decode pool's lanes ------------------------------------------ */

typedef struct tdp_item {
  wd_pool_item item;
  int ran, go;  /* under tdp_mu */
} tdp_item;

static pthread_mutex_t tdp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tdp_cv = PTHREAD_COND_INITIALIZER;

/* A big item waits until the test sets go; every item marks itself run. */
static void tdp_fn(wd_pool_item *it)
{
  tdp_item *t = (tdp_item *)it;
  pthread_mutex_lock(&tdp_mu);
  t->ran = 1;
  pthread_cond_broadcast(&tdp_cv);
  while (it->big && !t->go)
    pthread_cond_wait(&tdp_cv, &tdp_mu);
  pthread_mutex_unlock(&tdp_mu);
}

/* Until t has run (30 s: a guard against a hang, not a measure). */
static int tdp_wait_ran(tdp_item *t)
{
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 30;
  pthread_mutex_lock(&tdp_mu);
  while (!t->ran &&
         pthread_cond_timedwait(&tdp_cv, &tdp_mu, &until) == 0)
    ;
  int ran = t->ran;
  pthread_mutex_unlock(&tdp_mu);
  return ran;
}

static void tdp_go(tdp_item *t)
{
  pthread_mutex_lock(&tdp_mu);
  t->go = 1;
  pthread_cond_broadcast(&tdp_cv);
  pthread_mutex_unlock(&tdp_mu);
}

/* threads 1 or 2: as many big items as there are threads, then a small
 * one, which must run while the big ones are held. */
static void tdp_small_past_big(unsigned threads)
{
  wd_pool *p;
  wave_error err = {0};
  ck_assert_int_eq(wd_pool_start(threads, &p, &err), 0);
  tdp_item big[2] = {{.item = {.fn = tdp_fn, .big = 1}},
                     {.item = {.fn = tdp_fn, .big = 1}}};
  tdp_item small = {.item = {.fn = tdp_fn}};
  for (unsigned i = 0; i < threads; i++)
    wd_pool_push(p, &big[i].item);
  ck_assert(tdp_wait_ran(&big[0]));
  wd_pool_push(p, &small.item);
  ck_assert_msg(tdp_wait_ran(&small), "a small item waited behind %u big "
                "ones on %u threads", threads, threads);
  pthread_mutex_lock(&tdp_mu);
  int second = big[1].ran;  /* a second big item waits for the first */
  pthread_mutex_unlock(&tdp_mu);
  ck_assert_int_eq(second, 0);
  tdp_go(&big[0]);
  if (threads > 1) {
    ck_assert(tdp_wait_ran(&big[1]));  /* then it runs */
    tdp_go(&big[1]);
  }
  wd_pool_free(p);
}

START_TEST(small_decode_past_big_ones)
{
  tdp_small_past_big(2);
  tdp_small_past_big(1);
}
END_TEST

static Suite *tt_suite(void)
{
  Suite *s = suite_create("turns");
  TCase *t = tcase_create("short lane");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, two_owners_alternate);
  tcase_add_test(t, newcomer_goes_next);
  tcase_add_test(t, one_at_a_time_does_not_jump_turns);
  tcase_add_test(t, slices_let_others_run_between);
  tcase_add_test(t, fault_between_slices);
  suite_add_tcase(s, t);
  TCase *pt = tcase_create("decode pool");
  tcase_set_timeout(pt, 120);
  tcase_add_test(pt, small_decode_past_big_ones);
  suite_add_tcase(s, pt);
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(tt_suite());
  srunner_run_all(sr, CK_ENV);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
