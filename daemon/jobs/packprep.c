/* packprep.c - pack preparation and self-check items (see packprep.h). */
#include <stdio.h>
#include <string.h>

#include "daemon/log.h"
#include "daemon/jobs/packprep.h"
#include "core/base.h"
#include "workers/wvdev.h"

static void pp_set(wd_prep *p, int state, const char *detail)
{
  wd_pack_state st = {.state = state, .queued = state == WD_CHECK_PENDING,
                      .steps = p->steps, .steps_total = p->steps_total};
  snprintf(st.detail, sizeof st.detail, "%.159s", detail);
  wd_packstate_set(p->states, p->dev_index, p->index, &st);
}

static int pp_run(wd_work *w, const wd_run_ctx *x)
{
  wd_prep *p = (wd_prep *)w;
  wave_error err = {0};
  char detail[160] = "";
  if (!p->prepared) {
    if (p->steps == 0 && p->steps_total == 0) {  /* its first step */
      p->steps_total = wv_dev_prepare_steps(x->dev, p->pack);
      pp_set(p, WD_CHECK_PENDING, "preparing: 0 steps done");
    }
    int done = 0;
    int rc = wv_dev_prepare_step(x->dev, p->pack, &done, &err);
    if (rc == 0 && !done) {
      ++p->steps;
      if (p->steps_total > p->steps)
        snprintf(detail, sizeof detail, "preparing: %u of %u steps done",
                 p->steps, p->steps_total);
      else
        snprintf(detail, sizeof detail, "preparing: %u steps done",
                 p->steps);
      pp_set(p, WD_CHECK_PENDING, detail);
      return WD_RUN_MORE;
    }
    if (rc != 0) {
      snprintf(detail, sizeof detail, "prepare: %.150s", err.message);
      pp_set(p, WD_CHECK_FAILED, detail);
      wd_warn("device %s: pack %s failed to prepare: %s", x->name,
              wv_pack_name(p->pack), err.message);
      w->rc = rc;
      w->err = err;
      return WD_RUN_END;
    }
    p->prepared = 1;
    p->steps++;
    if (p->steps_total < p->steps)
      p->steps_total = p->steps;
    w->caps_changed = 1;  /* a backend may measure its batch now */
    pp_set(p, WD_CHECK_PENDING, "prepared; the known answers run next");
    return WD_RUN_MORE;  /* the self-check is the next step */
  }
  int rc = wv_dev_selfcheck(x->dev, p->pack, detail, sizeof detail, &err);
  if (rc != 0) {
    if (detail[0] == '\0')
      snprintf(detail, sizeof detail, "%.159s", err.message);
    pp_set(p, WD_CHECK_FAILED, detail);
    wd_warn("device %s: pack %s failed its self-check: %s", x->name,
            wv_pack_name(p->pack), detail);
    w->rc = rc;
    w->err = err;
    return WD_RUN_END;
  }
  pp_set(p, WD_CHECK_OK, detail[0] ? detail : "known answers reproduced");
  wd_info("device %s: pack %s self-check ok", x->name,
          wv_pack_name(p->pack));
  return WD_RUN_END;
}

static void pp_abort(wd_work *w, const wd_run_ctx *x)
{
  (void)x;
  wd_prep *p = (wd_prep *)w;
  int faulted = wd_device_faulted(w->dev);
  pp_set(p, WD_CHECK_FAILED,
         faulted ? "not run: the device is faulted (or did not open)"
                 : "not run: the daemon is stopping");
  w->rc = wv_seterr(&w->err, faulted ? WAVE_EDEVFAULT : WAVE_ESHUTDOWN, NULL);
}

static void pp_done(wd_work *w)
{
  wd_prep *p = (wd_prep *)w;
  if (p->ended != NULL)
    p->ended(p->arg, p);
}

static const wd_work_ops pp_ops = {
  .name = "pack preparation",
  .lane = WD_LANE_SETUP,
  .run = pp_run,
  .abort = pp_abort,
  .done = pp_done,
};

int wd_prep_submit(wd_packstate *ps, wd_device *d, wd_prep *p,
                   wave_error *err)
{
  p->work.ops = &pp_ops;
  p->states = ps;
  p->dev_index = wd_device_index(d);
  p->prepared = 0;
  p->steps = 0;
  p->steps_total = 0;
  /* queued from now: a job that finds the pack pending waits for this
   * item instead of asking for another (hashjob.c) */
  wd_pack_state old;
  if (wd_packstate_get(ps, p->dev_index, p->index, &old) == 0 &&
      old.state == WD_CHECK_PENDING)
    pp_set(p, WD_CHECK_PENDING, "queued for preparation");
  int rc = wd_device_submit(d, &p->work, err);
  if (rc != 0 && wd_packstate_get(ps, p->dev_index, p->index, &old) == 0 &&
      old.state == WD_CHECK_PENDING) {
    wd_pack_state st = {.state = WD_CHECK_PENDING};
    snprintf(st.detail, sizeof st.detail, "not prepared: %.140s",
             err->message);
    wd_packstate_set(ps, p->dev_index, p->index, &st);
  }
  return rc;
}
