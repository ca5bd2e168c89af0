/* park.c - parked polls (see park.h).  A parked poll gives its place in the
 * receive pool to a fresh context (wd_front_add), so that waiting clients
 * do not stall the others; limits.max_parked and max_peer_parked bound
 * them. */
#include <stddef.h>

#include "daemon/log.h"
#include "daemon/net/front.h"
#include "daemon/rq/park.h"
#include "daemon/server_int.h"
#include "daemon/stats.h"
#include "core/base.h"

void wd_unpark(wd_req *c)
{
  wv_q_remove(&c->call->wait.q);  /* off its job's list */
  uv_timer_stop(&c->timer);
  c->call->wait.job = NULL;
  c->parked_ns += wd_req_now_ns() - c->park_ns;  /* not the daemon's time */
  c->call->srv->fe->n_parked--;
  wd_peers_unpark(c->call->srv->fe->peers, c->pipe);
}

/* Unpark c and answer it. */
static void pa_answer(wd_req *c)
{
  wd_hjob *j = c->call->wait.job;
  wd_unpark(c);
  c->call->wait.answer(c, j, c->call->wait.seg_offset, c->call->wait.seg_limit);
}

static void pa_timeout(uv_timer_t *t)
{
  pa_answer(t->data);
}

int wd_park(wd_req *c, wd_hjob *j, unsigned wait_ms, uint64_t seg_offset,
            uint32_t seg_limit, wd_park_answer_fn *answer)
{
  wd_server *s = c->call->srv;
  if (wd_hjob_is_ended(j) || s->state >= WD_SV_STOPPING ||
      s->fe->n_parked >= s->cfg->limits.max_parked ||
      wd_peers_park(s->fe->peers, c->pipe, s->cfg->limits.max_peer_parked) != 0)
    return -1;
  /* a fresh context takes this one's place in the receive pool */
  wave_error err = {0};
  if (wd_front_add(s->fe, &err) != 0) {
    wd_peers_unpark(s->fe->peers, c->pipe);
    wd_warn("cannot open a context for a parked poll: %s", err.message);
    return -1;
  }
  c->call->wait.job = j;
  c->call->wait.seg_offset = seg_offset;
  c->call->wait.seg_limit = seg_limit;
  c->call->wait.answer = answer;
  wv_q_push_head(wd_hjob_waiters(j), &c->call->wait.q);
  s->fe->n_parked++;
  c->park_ns = wd_req_now_ns();
  uv_timer_start(&c->timer, pa_timeout, wait_ms, 0);
  return 0;
}

void wd_park_job_ended(void *arg, wd_hjob *j)
{
  wd_server *s = arg;
  wd_job_view v;
  wd_hjob_view(j, 0, 0, &v);
  /* a hash job moves no input to its devices: no transfer phase */
  double ph[WD_PH_N] = {
    [WD_PH_QUEUE] = v.queued,
    [WD_PH_TRANSFER] = -1.0,
    [WD_PH_COMPUTE] = v.queued >= 0 ? v.seconds : -1.0,
    [WD_PH_TOTAL] = v.queued >= 0 ? v.queued + v.seconds : -1.0,
  };
  wd_stats_job(WD_KIND_HASH, v.id, v.device, ph, v.rc, 0, 0);
  wv_qnode *head = wd_hjob_waiters(j);
  while (!wv_q_empty(head))
    pa_answer(WV_Q_ENTRY(head->next, wd_call, wait.q)->ctx);
  if (wd_hjob_state(j) == WD_JOB_DONE)
    s->served++;
  else if (wd_hjob_state(j) == WD_JOB_CANCELLED)
    s->cancelled++;  /* a user's cancel (or the stop's) is no failure */
  else
    s->failed++;
}

void wd_park_answer_all(wd_server *s)
{
  for (wv_qnode *n = s->fe->reqs.next; n != &s->fe->reqs; n = n->next)
    if (WD_REQ_OF(n)->call->wait.job != NULL)
      pa_answer(WD_REQ_OF(n));
}
