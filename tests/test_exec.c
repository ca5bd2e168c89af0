/* test_exec.c - the executor (daemon/exec/device.c) in process, on the fake
 * backend (workers/fake/), with no sockets and no server: work items whose
 * run op writes down its id at every step, and one that waits inside its
 * run until the test lets it go.  With the device held that way the test
 * queues items, lets go, and reads the order the steps ran in.  No timing:
 * the held item says when it has begun, the items' ends come through the
 * post callback, and the test waits on condition variables.
 *
 *  - lanes: a short item queued while a long one runs goes between the
 *    long one's steps; a setup item takes turns with a long one, step by
 *    step;
 *  - the owner ring: two owners' long items alternate step by step, and
 *    one owner's two items alternate too;
 *  - park/resume: a parked item leaves the device to the others, ends only
 *    after wd_device_resume, and is resumed ahead of queued items;
 *  - unqueue: a queued long item taken back never runs, never posts, and
 *    frees its limits.jobs_in_flight slot; a running one is not taken;
 *  - the fault rule: a backend WAVE_EDEVICE faults the device; that item
 *    ends WAVE_EDEVFAULT, later ones too without running (or their abort
 *    runs), new ones are refused, setup items are still taken;
 *  - stop: what was queued drains (items with an abort op are aborted, the
 *    others run), and submits after stop say WAVE_ESHUTDOWN;
 *  - levels: the highest level first, a low long item yields to a high
 *    one between steps, a level's cap, an item past its deadline ends
 *    WAVE_EDEADLINE without running;
 *  - a held device's picked reductions move to another device (pick.h),
 *    in turn order, the highest level first; a named one waits;
 *  - jobs/packstate.h beside it: states by device index, the batch rule
 *    (the configured batch wins over the backend's, once).
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "daemon/exec/device.h"
#include "daemon/exec/pick.h"
#include "daemon/jobs/packstate.h"
#include "workers/fake/fake.h"
#include "workers/wvdev.h"

#define TE_MAX 128

typedef struct te_item {
  wd_work work;
  int id;
  int steps;              /* steps it asks for in all */
  int ran;                /* steps run */
  int hold;               /* its first step waits until released */
  int park_at;            /* parks after this step (1-based); 0: never */
  int reduce;             /* each step is a reduction on the device */
  int aborted, ended;
} te_item;

static pthread_mutex_t te_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t te_cv = PTHREAD_COND_INITIALIZER;
static int te_order[TE_MAX], te_n, te_ended, te_holding, te_released;
static int te_parked;

static const uint32_t te_rows[4] = {1, 2, 3, 4};

/* One reduction on the fake device (it counts it as a step, and faults
 * once it has run fault_after of them). */
static int te_reduce(const wd_run_ctx *x, wave_error *err)
{
  wv_span in = {te_rows, 4};
  wv_reduce_job job = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &in,
                       .n_input = 1, .rows = 4};
  wv_reduce_out out = {0};
  int rc = wv_dev_reduce(x->dev, &job, &out, err);
  if (rc == 0 && out.bits[0] != 10)
    rc = wv_seterr(err, WAVE_EINTERNAL, "sum %u, not 10", (unsigned)out.bits[0]);
  return rc;
}

static int te_run(wd_work *w, const wd_run_ctx *x)
{
  te_item *it = (te_item *)w;
  pthread_mutex_lock(&te_mu);
  if (te_n < TE_MAX)
    te_order[te_n++] = it->id;
  it->ran++;
  if (it->hold && it->ran == 1) {
    te_holding = 1;
    pthread_cond_broadcast(&te_cv);
    while (!te_released)
      pthread_cond_wait(&te_cv, &te_mu);
    te_holding = 0;
    te_released = 0;
  }
  int park = it->park_at == it->ran;
  if (park) {
    te_parked = it->id;
    pthread_cond_broadcast(&te_cv);
  }
  int more = it->ran < it->steps;
  pthread_mutex_unlock(&te_mu);
  if (it->reduce && (w->rc = te_reduce(x, &w->err)) != 0)
    return WD_RUN_END;
  if (park)
    return WD_RUN_PARK;
  return more ? WD_RUN_MORE : WD_RUN_END;
}

static void te_abort(wd_work *w, const wd_run_ctx *x)
{
  (void)x;
  te_item *it = (te_item *)w;
  pthread_mutex_lock(&te_mu);
  it->aborted = 1;
  pthread_mutex_unlock(&te_mu);
  w->rc = wv_seterr(&w->err, WAVE_ECANCELLED, "aborted");
}

/* Never called here (the server's completion queue would); the device
 * posts only items that have one. */
static void te_done(wd_work *w) { (void)w; }

static const wd_work_ops te_short = {
  .name = "short", .lane = WD_LANE_SHORT, .run = te_run, .done = te_done};
static const wd_work_ops te_long = {
  .name = "long", .lane = WD_LANE_LONG, .run = te_run, .done = te_done};
/* A long item whose job began elsewhere (a hash job's share whose first
 * piece ran on another device): its deadline no longer applies. */
static int te_began(wd_work *w) { (void)w; return 1; }
static const wd_work_ops te_long_began = {
  .name = "long, begun", .lane = WD_LANE_LONG, .run = te_run,
  .done = te_done, .started = te_began};
static const wd_work_ops te_setup = {
  .name = "setup", .lane = WD_LANE_SETUP, .run = te_run, .done = te_done};
static const wd_work_ops te_short_ab = {
  .name = "short, abort", .lane = WD_LANE_SHORT, .run = te_run,
  .abort = te_abort, .done = te_done};
static const wd_work_ops te_long_ab = {
  .name = "long, abort", .lane = WD_LANE_LONG, .run = te_run,
  .abort = te_abort, .done = te_done};
static const wd_work_ops te_setup_ab = {
  .name = "setup, abort", .lane = WD_LANE_SETUP, .run = te_run,
  .abort = te_abort, .done = te_done};

/* The device's post callback (its thread): an item has ended. */
static void te_post(void *arg, wd_work *w)
{
  (void)arg;
  pthread_mutex_lock(&te_mu);
  ((te_item *)w)->ended = 1;
  te_ended++;
  pthread_cond_broadcast(&te_cv);
  pthread_mutex_unlock(&te_mu);
}

/* A fake device; fault_after 0: it never faults. */
static wd_device *te_start(unsigned fault_after, unsigned queue_depth,
                           unsigned long_slots)
{
  te_n = te_ended = te_holding = te_released = te_parked = 0;
  wd_device_cfg cfg = {.name = "fake0", .backend = "fake", .threads = 1,
                       .queue_depth = queue_depth};
  if (fault_after > 0)
    snprintf(cfg.device, sizeof cfg.device, "fault_after=%u", fault_after);
  wd_device *d = NULL;
  wave_error err = {0};
  ck_assert_msg(wd_device_start(&cfg, 3, long_slots, te_post, NULL, NULL, &d,
                                &err) == 0, "%s", err.message);
  ck_assert_int_eq(wd_device_wait_open(d), 0);
  ck_assert_uint_eq(wd_device_index(d), 3);
  return d;
}

static void te_init(te_item *it, const wd_work_ops *ops, int id, int steps,
                    uint64_t owner)
{
  memset(it, 0, sizeof *it);
  it->work.ops = ops;
  it->work.owner = owner;
  it->id = id;
  it->steps = steps;
}

static void te_submit(wd_device *d, te_item *it)
{
  wave_error err = {0};
  ck_assert_msg(wd_device_submit(d, &it->work, &err) == 0, "%s", err.message);
}

/* A short item of owner 0 that holds the device once it runs. */
static void te_hold(wd_device *d, te_item *h, int id)
{
  te_init(h, &te_short, id, 1, 0);
  h->hold = 1;
  te_submit(d, h);
  pthread_mutex_lock(&te_mu);
  while (!te_holding)
    pthread_cond_wait(&te_cv, &te_mu);
  pthread_mutex_unlock(&te_mu);
}

static void te_release(void)
{
  pthread_mutex_lock(&te_mu);
  te_released = 1;
  pthread_cond_broadcast(&te_cv);
  pthread_mutex_unlock(&te_mu);
}

static void te_wait_ended(int n)
{
  pthread_mutex_lock(&te_mu);
  while (te_ended < n)
    pthread_cond_wait(&te_cv, &te_mu);
  pthread_mutex_unlock(&te_mu);
}

static void te_wait_parked(int id)
{
  pthread_mutex_lock(&te_mu);
  while (te_parked != id)
    pthread_cond_wait(&te_cv, &te_mu);
  pthread_mutex_unlock(&te_mu);
}

static void te_expect(const int *want, int n)
{
  char got[512] = "", exp[512] = "";
  pthread_mutex_lock(&te_mu);
  for (int i = 0; i < te_n; i++)
    snprintf(got + strlen(got), sizeof got - strlen(got), " %d", te_order[i]);
  int same = te_n == n;
  for (int i = 0; same && i < n; i++)
    same = te_order[i] == want[i];
  pthread_mutex_unlock(&te_mu);
  for (int i = 0; i < n; i++)
    snprintf(exp + strlen(exp), sizeof exp - strlen(exp), " %d", want[i]);
  ck_assert_msg(same, "steps ran in order%s, expected%s", got, exp);
}

/* A short item queued while a long one runs goes in after the long one's
 * step, not after the long one. */
START_TEST(short_between_long_steps)
{
  wd_device *d = te_start(0, 8, 4);
  te_item l, s1, s2;
  te_init(&l, &te_long, 1, 3, 7);
  l.hold = 1;
  te_submit(d, &l);
  pthread_mutex_lock(&te_mu);
  while (!te_holding)
    pthread_cond_wait(&te_cv, &te_mu);
  pthread_mutex_unlock(&te_mu);
  te_init(&s1, &te_short, 2, 1, 7);
  te_init(&s2, &te_short, 3, 1, 8);
  te_submit(d, &s1);
  te_submit(d, &s2);
  te_release();
  te_wait_ended(3);
  static const int want[] = {1, 2, 3, 1, 1};
  te_expect(want, 5);
  ck_assert(l.ended && s1.ended && s2.ended);
  wd_device_free(d);
}
END_TEST

/* A setup item (a pack's preparation) takes turns with a long item, step
 * for step, rather than waiting for it or making it wait. */
START_TEST(setup_alternates_with_long)
{
  wd_device *d = te_start(0, 8, 4);
  te_item h, l, u;
  te_hold(d, &h, 9);
  te_init(&l, &te_long, 1, 4, 7);
  te_init(&u, &te_setup, 2, 3, 0);
  te_submit(d, &l);
  te_submit(d, &u);
  te_release();
  te_wait_ended(3);
  /* the setup item takes the first turn, then the two alternate */
  static const int want[] = {9, 2, 1, 2, 1, 2, 1, 1};
  te_expect(want, 8);
  wd_device_free(d);
}
END_TEST

/* Two owners' long items take turns step by step, and one owner's two
 * items take turns within that owner's turns. */
START_TEST(owner_ring)
{
  wd_device *d = te_start(0, 8, 8);
  te_item h, a1, a2, b1;
  te_hold(d, &h, 9);
  te_init(&a1, &te_long, 1, 3, 100);
  te_init(&a2, &te_long, 2, 3, 100);
  te_init(&b1, &te_long, 3, 3, 200);
  te_submit(d, &a1);
  te_submit(d, &a2);
  te_submit(d, &b1);
  ck_assert_uint_eq(wd_device_long_load(d), 3);
  te_release();
  te_wait_ended(4);
  /* owners: A B A B A B A A A; A's items: 1 2 1 2 1 2 */
  static const int want[] = {9, 1, 3, 2, 3, 1, 3, 2, 1, 2};
  te_expect(want, 10);
  ck_assert_uint_eq(wd_device_long_load(d), 0);
  wd_device_free(d);
}
END_TEST

/* Levels: the highest first, a reduction before a long step of its own
 * level; a low long item yields to a high one between steps; a level's cap
 * refuses BUSY naming it; an item past its deadline never runs. */
START_TEST(levels)
{
  wd_device *d = te_start(0, 8, 8);
  te_item l, h, s4, s2, c1, c2, late;
  te_init(&l, &te_long, 1, 3, 100);  /* low long, held in its first step */
  l.work.level = WD_LEVEL_LOW;
  l.hold = 1;
  te_submit(d, &l);
  pthread_mutex_lock(&te_mu);
  while (!te_holding)
    pthread_cond_wait(&te_cv, &te_mu);
  pthread_mutex_unlock(&te_mu);
  te_init(&s2, &te_short, 2, 1, 200);  /* low short */
  s2.work.level = WD_LEVEL_LOW;
  te_init(&h, &te_long, 3, 2, 300);    /* high long */
  h.work.level = WD_LEVEL_HIGH;
  te_init(&s4, &te_short, 4, 1, 200);  /* normal short */
  te_init(&late, &te_short, 5, 1, 200);  /* its deadline passed */
  late.work.deadline = 1e-9;
  te_submit(d, &s2);
  te_submit(d, &h);
  te_submit(d, &s4);
  te_submit(d, &late);
  te_item begun;
  te_init(&begun, &te_long_began, 8, 1, 400);  /* past it, but begun */
  begun.work.level = WD_LEVEL_LOW;
  begun.work.deadline = 1e-9;
  te_submit(d, &begun);
  te_init(&c1, &te_short, 6, 1, 200);  /* the low cap: 2 queued */
  c1.work.level = WD_LEVEL_LOW;
  c1.work.level_cap = 2;
  wave_error err = {0};
  ck_assert_int_eq(wd_device_submit(d, &c1.work, &err), WAVE_EBUSY);
  ck_assert_msg(strstr(err.message, "2 low-priority jobs queued "
                       "(priority.low_max_queued 2)") != NULL, "%s",
                err.message);
  te_init(&c2, &te_short, 7, 1, 200);  /* a normal one is not capped */
  c2.work.level_cap = 1;
  ck_assert_int_eq(wd_device_submit(d, &c2.work, &err), WAVE_EBUSY);
  c2.work.level_cap = 3;
  te_submit(d, &c2);
  wd_device_snap sn;
  wd_device_snapshot(d, &sn);
  ck_assert_uint_eq(sn.level_queued[WD_LEVEL_HIGH], 1);
  ck_assert_uint_eq(sn.level_queued[WD_LEVEL_NORMAL], 3);
  ck_assert_uint_eq(sn.level_queued[WD_LEVEL_LOW], 2);
  te_release();
  te_wait_ended(7);
  /* l's step, h's two, the normal shorts (the late one never runs), the
   * low short before the low long items (400 queued while 100 ran; the
   * begun one runs although its deadline passed) */
  static const int want[] = {1, 3, 3, 4, 7, 2, 8, 1, 1};
  te_expect(want, 9);
  ck_assert_int_eq(late.work.rc, WAVE_EDEADLINE);
  ck_assert_int_eq(late.ran, 0);
  wd_device_snapshot(d, &sn);
  ck_assert_uint_eq(sn.deadline, 1);
  wd_device_free(d);
}
END_TEST

/* A held device's queued reductions that the daemon picked it for move to
 * another (exec/pick.h wd_pick_move) in turn order, the highest level
 * first, keeping their deadline and submit time; one that named the device
 * stays and runs once the hold ends. */
START_TEST(held_moves_picked)
{
  wd_device *d0 = te_start(0, 8, 8), *d1 = NULL;
  wd_device_cfg cfg = {.name = "fake1", .backend = "fake", .threads = 1,
                       .queue_depth = 8};
  wave_error err = {0};
  ck_assert_int_eq(wd_device_start(&cfg, 4, 8, te_post, NULL, NULL, &d1, &err), 0);
  ck_assert_int_eq(wd_device_wait_open(d1), 0);
  te_item hold, a1, a2, x, b, e, c;
  te_hold(d0, &hold, 1);
  te_init(&a1, &te_short, 2, 1, 100);  /* normal, owner 100: turn 0 */
  a1.work.deadline = 1e12;
  te_init(&a2, &te_short, 3, 1, 100);  /* turn 1 */
  te_init(&c, &te_short, 4, 1, 100);   /* named d0: stays */
  te_init(&x, &te_short, 5, 1, 200);   /* owner 200: turn 0 */
  te_init(&b, &te_short, 6, 1, 300);
  b.work.level = WD_LEVEL_HIGH;
  te_init(&e, &te_short, 7, 1, 300);
  e.work.level = WD_LEVEL_LOW;
  te_item *all[] = {&a1, &a2, &c, &x, &b, &e};
  for (size_t i = 0; i < 6; i++) {
    all[i]->work.movable = all[i] != &c;
    te_submit(d0, all[i]);
  }
  double t_submit = a1.work.t_submit;
  wd_device *devs[] = {d0, d1};
  wd_pick_move(devs, 2, d0);  /* not held: nothing moves */
  wd_device_snap sn;
  wd_device_snapshot(d0, &sn);
  ck_assert_uint_eq(sn.queued, 6);
  wd_device_hold(d0, 1);
  wd_pick_move(devs, 2, d0);
  te_wait_ended(5);  /* the five moved ones, on d1 */
  static const int want[] = {1, 6, 2, 5, 3, 7};
  te_expect(want, 6);
  ck_assert_ptr_eq(a1.work.dev, d1);
  ck_assert(a1.work.deadline == 1e12);
  ck_assert(a1.work.t_submit == t_submit);
  wd_device_snapshot(d0, &sn);
  ck_assert_uint_eq(sn.queued, 1);
  te_release();
  te_wait_ended(6);  /* the holder; c waits for the hold to end */
  ck_assert_int_eq(c.ran, 0);
  wd_device_hold(d0, 0);
  te_wait_ended(7);
  ck_assert_ptr_eq(c.work.dev, d0);
  static const int then[] = {1, 6, 2, 5, 3, 7, 4};
  te_expect(then, 7);
  wd_device_free(d1);
  wd_device_free(d0);
}
END_TEST

/* A parked item leaves the device: another runs to its end meanwhile; the
 * parked one ends only once resumed, and is resumed ahead of what is
 * queued. */
START_TEST(park_resume)
{
  wd_device *d = te_start(0, 8, 8);
  te_item p, q, h, r;
  te_init(&p, &te_long, 1, 2, 100);
  p.park_at = 1;
  te_init(&q, &te_long, 2, 2, 200);
  te_submit(d, &p);
  te_wait_parked(1);
  te_submit(d, &q);
  te_wait_ended(1);
  ck_assert(q.ended);
  ck_assert(!p.ended);  /* parked: no post */
  ck_assert_uint_eq(wd_device_long_load(d), 1);  /* still in flight */
  /* resume it while an item of another owner is queued */
  te_hold(d, &h, 9);
  te_init(&r, &te_long, 3, 1, 300);
  te_submit(d, &r);
  wd_device_resume(d, &p.work);
  te_release();
  te_wait_ended(4);
  static const int want[] = {1, 2, 2, 9, 1, 3};
  te_expect(want, 6);
  ck_assert(p.ended && p.work.rc == 0);
  wd_device_free(d);
}
END_TEST

/* A queued long item taken back never runs and frees its slot; one that
 * is running is not taken. */
START_TEST(unqueue)
{
  wd_device *d = te_start(0, 8, 1);
  te_item h, l1, l2, l3;
  te_hold(d, &h, 9);
  te_init(&l1, &te_long, 1, 2, 100);
  te_submit(d, &l1);
  te_init(&l2, &te_long, 2, 1, 200);
  wave_error err = {0};
  ck_assert_int_eq(wd_device_submit(d, &l2.work, &err), WAVE_EBUSY);
  ck_assert_int_eq(wd_device_unqueue(d, &l1.work), 1);
  ck_assert_uint_eq(wd_device_long_load(d), 0);
  ck_assert_int_eq(wd_device_unqueue(d, &l1.work), 0);  /* not queued now */
  te_submit(d, &l2);  /* the slot is free again */
  te_release();
  te_wait_ended(2);
  static const int want[] = {9, 2};
  te_expect(want, 2);
  ck_assert(!l1.ended && l1.ran == 0);
  /* a running item stays */
  te_init(&l3, &te_long, 3, 2, 100);
  l3.hold = 1;
  te_submit(d, &l3);
  pthread_mutex_lock(&te_mu);
  while (!te_holding)
    pthread_cond_wait(&te_cv, &te_mu);
  pthread_mutex_unlock(&te_mu);
  ck_assert_int_eq(wd_device_unqueue(d, &l3.work), 0);
  te_release();
  te_wait_ended(3);
  ck_assert(l3.ended && l3.ran == 2);
  wd_device_free(d);
}
END_TEST

/* The fault rule: the fake device faults on its second reduction. */
START_TEST(fault_rule)
{
  wd_device *d = te_start(1, 8, 4);
  te_item ok, h, bad, later, later_ab, lng, after, up;
  te_init(&ok, &te_short, 1, 1, 5);
  ok.reduce = 1;
  te_submit(d, &ok);
  te_wait_ended(1);
  ck_assert_int_eq(ok.work.rc, 0);
  ck_assert(!wd_device_faulted(d));

  te_hold(d, &h, 9);
  te_init(&bad, &te_short, 2, 1, 5);
  bad.reduce = 1;
  te_init(&later, &te_short, 3, 1, 5);
  later.reduce = 1;
  te_init(&later_ab, &te_short_ab, 4, 1, 5);
  te_init(&lng, &te_long, 5, 2, 6);
  te_submit(d, &bad);
  te_submit(d, &later);
  te_submit(d, &later_ab);
  te_submit(d, &lng);
  te_release();
  te_wait_ended(6);
  /* only the faulting item ran after the holder */
  static const int want[] = {1, 9, 2};
  te_expect(want, 3);
  ck_assert_int_eq(bad.work.rc, WAVE_EDEVFAULT);
  ck_assert_msg(strstr(bad.work.err.message, "faulted") != NULL, "%s",
                bad.work.err.message);
  ck_assert(wd_device_faulted(d));
  ck_assert_int_eq(later.work.rc, WAVE_EDEVFAULT);
  ck_assert_int_eq(later.ran, 0);
  ck_assert(later_ab.aborted && later_ab.ran == 0);
  ck_assert_int_eq(later_ab.work.rc, WAVE_ECANCELLED);
  ck_assert_int_eq(lng.work.rc, WAVE_EDEVFAULT);
  ck_assert_int_eq(lng.ran, 0);

  wd_device_snap snap;
  wd_device_snapshot(d, &snap);
  ck_assert(snap.faulted);
  ck_assert_msg(snap.fault[0] != '\0', "no fault reason");
  ck_assert_uint_eq(snap.done, 2);    /* ok, the holder */
  ck_assert_uint_eq(snap.failed, 3);  /* bad, later, lng */
  ck_assert_uint_eq(snap.cancelled, 1);  /* later_ab: its abort cancels */

  /* new items are refused; a setup item is still taken, and aborted */
  te_init(&after, &te_short, 6, 1, 5);
  wave_error err = {0};
  ck_assert_int_eq(wd_device_submit(d, &after.work, &err), WAVE_EDEVFAULT);
  te_init(&up, &te_setup_ab, 7, 1, 0);
  te_submit(d, &up);
  te_wait_ended(7);
  ck_assert(up.aborted && up.ran == 0);
  wd_device_free(d);
}
END_TEST

static void *te_stop_thread(void *arg)
{
  wd_device_stop(arg);
  return NULL;
}

/* Stop drains what was queued: items with an abort op are aborted, the
 * others run to their end; a submit after stop says WAVE_ESHUTDOWN. */
START_TEST(stop_drains)
{
  wd_device *d = te_start(0, 2, 4);
  te_item h, s1, s2, la, l2, u, probe;
  te_hold(d, &h, 9);
  te_init(&s1, &te_short, 1, 1, 5);
  te_init(&s2, &te_short, 2, 1, 6);
  te_init(&la, &te_long_ab, 3, 5, 7);
  te_init(&l2, &te_long, 4, 3, 8);
  te_init(&u, &te_setup, 5, 2, 0);
  te_submit(d, &s1);
  te_submit(d, &s2);  /* the short lane is full now (queue_depth 2) */
  te_submit(d, &la);
  te_submit(d, &l2);
  te_submit(d, &u);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, te_stop_thread, d), 0);
  /* until the stop is seen: a full lane answers EBUSY, a stopped device
   * WAVE_ESHUTDOWN, so no probe is ever queued */
  wave_error err = {0};
  int rc;
  te_init(&probe, &te_short, 6, 1, 9);
  while ((rc = wd_device_submit(d, &probe.work, &err)) == WAVE_EBUSY)
    sched_yield();
  ck_assert_int_eq(rc, WAVE_ESHUTDOWN);
  te_release();
  pthread_join(t, NULL);
  ck_assert_int_eq(te_ended, 6);
  ck_assert(s1.ended && s1.ran == 1 && s2.ended && s2.ran == 1);
  ck_assert(la.ended && la.aborted && la.ran == 0);
  ck_assert(l2.ended && l2.ran == 3 && l2.work.rc == 0);
  ck_assert(u.ended && u.ran == 2);
  ck_assert(!probe.ended && probe.ran == 0);
  wd_device_free(d);
}
END_TEST

/* The device x pack table by index, and the batch rule. */
START_TEST(packstate)
{
  wd_device_cfg c0 = {.name = "fake0", .backend = "fake", .threads = 1,
                      .queue_depth = 1, .batch = 300};
  wd_device_cfg c1 = c0;
  snprintf(c1.name, sizeof c1.name, "fake1");
  c1.batch = 0;
  wd_device *d[2];
  wave_error err = {0};
  ck_assert_int_eq(wd_device_start(&c0, 0, 1, te_post, NULL, NULL, &d[0], &err), 0);
  ck_assert_int_eq(wd_device_start(&c1, 1, 1, te_post, NULL, NULL, &d[1], &err), 0);
  ck_assert_int_eq(wd_device_wait_open(d[0]), 0);
  wv_caps c;
  wd_device_caps(d[0], &c);  /* a CPU device under the fake one */
  ck_assert(c.reads_host_memory);
  wd_packstate *ps = NULL;
  ck_assert_int_eq(wd_packstate_new(d, 2, 1, &ps, &err), 0);
  wv_caps caps = {.hash_batch = 5000};
  ck_assert_uint_eq(wd_packstate_batch(ps, 0, &caps), 300);   /* configured */
  ck_assert_uint_eq(wd_packstate_batch(ps, 1, &caps), 5000);  /* backend's */
  caps.hash_batch = 0;
  ck_assert_uint_eq(wd_packstate_batch(ps, 1, &caps), 1u << 16);
  caps.hash_batch = 1ull << 30;
  ck_assert_uint_eq(wd_packstate_batch(ps, 1, &caps), 1u << 24);

  wd_pack_state st;
  ck_assert_int_eq(wd_packstate_get(ps, 1, 0, &st), 0);
  ck_assert_int_eq(st.state, WD_CHECK_PENDING);  /* the fake runs hashes */
  ck_assert_int_eq(wd_packstate_get(ps, 2, 0, &st), -1);
  ck_assert_int_eq(wd_packstate_get(ps, 0, 1, &st), -1);
  wd_pack_state ok = {.state = WD_CHECK_OK};
  wd_packstate_set(ps, 1, 0, &ok);
  wd_packstate_add_hashes(ps, 1, 0, 1000, 0.5);
  ck_assert_int_eq(wd_packstate_get(ps, 0, 0, &st), 0);
  ck_assert_int_eq(st.state, WD_CHECK_PENDING);  /* device 0 untouched */
  ck_assert(st.hash_rate == 0.0);
  ck_assert_int_eq(wd_packstate_get(ps, 1, 0, &st), 0);
  ck_assert_int_eq(st.state, WD_CHECK_OK);
  ck_assert(st.hash_rate == 2000.0);
  ck_assert_int_eq(wd_packstate_add_packs(ps, 3, &err), 0);
  ck_assert_int_eq(wd_packstate_get(ps, 1, 2, &st), 0);
  ck_assert_int_eq(st.state, WD_CHECK_PENDING);
  ck_assert_int_eq(wd_packstate_get(ps, 1, 0, &st), 0);
  ck_assert_int_eq(st.state, WD_CHECK_OK);  /* kept across the growth */
  wd_packstate_free(ps);
  wd_device_free(d[0]);
  wd_device_free(d[1]);
}
END_TEST

int main(void)
{
  if (wv_backend_add(&wv_fake_backend) != 0) {
    fprintf(stderr, "cannot register the fake backend\n");
    return 1;
  }
  Suite *s = suite_create("exec");
  TCase *tc = tcase_create("executor");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, short_between_long_steps);
  tcase_add_test(tc, setup_alternates_with_long);
  tcase_add_test(tc, owner_ring);
  tcase_add_test(tc, park_resume);
  tcase_add_test(tc, unqueue);
  tcase_add_test(tc, fault_rule);
  tcase_add_test(tc, stop_drains);
  tcase_add_test(tc, packstate);
  tcase_add_test(tc, levels);
  tcase_add_test(tc, held_moves_picked);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
