/* regionpin.c - a region's pins as device work (see regionpin.h): a setup
 * item per device that pins one piece per step, and a short item that
 * unpins.
 *
 * A pin stalls the copies of every other device while the driver pins
 * (measured with two CUDA devices of one daemon: cuda0's staged first use
 * of a region fell from 0.47-0.60x to 0.22-0.28x a pinned copy while
 * cuda1 pinned the same region beside it, and is 0.46-0.50x with the
 * wait below; one device's own pins never overlap its jobs, since they
 * share its thread).  So a piece waits while
 * another device that pins has reductions queued or running, polling
 * every RP_POLL_US, but no longer than RP_WAIT_US a piece: a region
 * beside a device that is never idle is still pinned, a piece per
 * RP_WAIT_US, each costing that device one piece's pin (about 1.2 ms on
 * the H200 host, so about 1% of its time). */
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "daemon/bulk/regionpin.h"
#include "daemon/exec/work.h"
#include "daemon/log.h"
#include "workers/wvdev.h"

#define RP_POLL_US 500u
#define RP_WAIT_US 100000u

/* A region's business on the device of one slot (a pin or an unpin). */
typedef struct pn_work {
  wd_work work;
  wd_region *r;
  unsigned slot;
  wd_device *const *devs;  /* the daemon's, for the whole of its life */
  size_t n_devs;
  unsigned waited_us;      /* by the piece it is on */
  int said;                /* the wait was logged */
} pn_work;

/* Another device that pins, with reductions queued or running; or NULL. */
static wd_device *pn_copying(const pn_work *p)
{
  for (size_t i = 0; i < p->n_devs; i++)
    if (i != p->slot && wd_device_can_pin(p->devs[i]) &&
        wd_device_load(p->devs[i]) > 0)
      return p->devs[i];
  return NULL;
}

/* A region registered: each device that can pin it gets a setup item that
 * pins one piece per step (daemon/bulk/region.h), so the short lane's jobs run
 * between pieces.  The item holds a reference to the region until done. */
static int pn_pin_run(wd_work *w, const wd_run_ctx *x)
{
  pn_work *p = (pn_work *)w;
  wd_device *busy = p->waited_us < RP_WAIT_US ? pn_copying(p) : NULL;
  if (busy != NULL && wd_region_pin_left(p->r, p->slot, x->dev)) {
    if (!p->said)
      wd_debug("region %" PRIu64 ": pinning on %s waits while %s copies",
               wd_region_id(p->r), x->name, wd_device_name(busy));
    p->said = 1;
    struct timespec nap = {0, RP_POLL_US * 1000L};
    nanosleep(&nap, NULL);
    p->waited_us += RP_POLL_US;
    return WD_RUN_MORE;  /* this device's own short items go first */
  }
  p->waited_us = 0;
  int more = wd_region_pin_step(p->r, p->slot, x->dev);
  return more ? WD_RUN_MORE : WD_RUN_END;
}

static void pn_pin_abort(wd_work *w, const wd_run_ctx *x)
{
  (void)w;
  (void)x;  /* faulted or stopping: the region stays as pinned as it is */
}

static void pn_pin_done(wd_work *w)
{
  pn_work *p = (pn_work *)w;
  wd_region_put(p->r);
  free(p);
}

static const wd_work_ops pn_pin_ops = {
  .name = "region pin",
  .lane = WD_LANE_SETUP,
  .run = pn_pin_run,
  .abort = pn_pin_abort,
  .done = pn_pin_done,
};

void wd_regionpin_start(wd_device *const *devs, size_t n_devs, wd_region *r)
{
  for (size_t i = 0; i < n_devs && i < WD_REGION_SLOTS; i++) {
    if (!wd_device_can_pin(devs[i]))
      continue;
    pn_work *p = calloc(1, sizeof *p);
    wave_error err;
    if (p == NULL)
      return;  /* only slower: the region is staged */
    p->work.ops = &pn_pin_ops;
    p->r = r;
    p->slot = (unsigned)i;
    p->devs = devs;
    p->n_devs = n_devs < WD_REGION_SLOTS ? n_devs : WD_REGION_SLOTS;
    wd_region_ref(r);
    if (wd_device_submit(devs[i], &p->work, &err) != 0) {
      wd_region_put(r);
      free(p);
    }
  }
}

/* A region pinned on device slot is released: that device's thread unpins
 * it (a short item), then the region is unmapped.  A device that cannot
 * take the item (faulted, queue full) leaves the pin to its context's end:
 * the region's bookkeeping is dropped and it is unmapped now. */
static int pn_unpin_run(wd_work *w, const wd_run_ctx *x)
{
  pn_work *u = (pn_work *)w;
  wd_region_unpin(u->r, u->slot, x->dev);
  u->r = NULL;
  return WD_RUN_END;
}

static void pn_unpin_done(wd_work *w)
{
  pn_work *u = (pn_work *)w;
  if (u->r != NULL)  /* ended without running (faulted device) */
    wd_region_unpin(u->r, u->slot, NULL);
  free(u);
}

static const wd_work_ops pn_unpin_ops = {
  .name = "region unpin",
  .lane = WD_LANE_SHORT,
  .run = pn_unpin_run,
  .done = pn_unpin_done,
};

void wd_regionpin_unpin(wd_device *const *devs, size_t n_devs, wd_region *r,
                        unsigned slot)
{
  pn_work *u = calloc(1, sizeof *u);
  wave_error err;
  if (u != NULL && slot < n_devs) {
    u->work.ops = &pn_unpin_ops;
    u->r = r;
    u->slot = slot;
    if (wd_device_submit(devs[slot], &u->work, &err) == 0)
      return;
  }
  free(u);
  wd_region_unpin(r, slot, NULL);
}
