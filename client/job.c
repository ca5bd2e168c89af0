/* job.c - hash jobs in libwaveclient: submit, poll, cancel, and wave_hash()
 * which strings them together.
 *
 * A hash job can outlast any reasonable reply timeout, so it is never
 * answered in the exchange that submits it (wave.proto): the submit returns
 * a job id, and polls wait up to wait_ms on the daemon for the job to end.
 * Each poll's reply timeout is the client's timeout plus wait_ms, so a long
 * wait is never mistaken for a dead daemon.  HashRequest.client carries the
 * client's random tag, so if nng resends a submit after a reconnect the
 * daemon returns the job it already has instead of starting a second one.
 * A job key (wave_job_key: what the daemon gives an anonymous tcp
 * submitter) travels with the *_key variants' requests, so the job can be
 * reached from another connection.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_int.h"
#include "core/base.h"
#include "wave/client.h"

/* ji into dst, its names the client's (wv_client_name). */
static int job_info(wave_client *c, wave_job_info *dst,
                    const Wave__V1__JobInfo *ji, wave_error *err)
{
  memset(dst, 0, sizeof *dst);
  dst->job_id = ji->job_id;
  dst->state = (wave_job_state)ji->state;
  dst->done = ji->done;
  dst->total = ji->total;
  dst->seconds = ji->seconds;
  dst->instance = ji->instance;
  dst->n_devices = ji->n_devices;
  dst->prepare_steps = ji->prepare_steps;
  dst->prepare_steps_total = ji->prepare_steps_total;
  if (ji->error != NULL) {
    dst->error.code = (int)ji->error->code;
    wv_client_copy(dst->error.message, sizeof dst->error.message,
                   ji->error->message);
  }
  wv_client_copy(dst->held, sizeof dst->held, ji->held);
  if (dst->state == WAVE_JOB_CANCELLED && dst->error.code == 0)
    wv_seterr(&dst->error, WAVE_ECANCELLED, NULL);
  if (dst->state == WAVE_JOB_FAILED && dst->error.code == 0)
    wv_seterr(&dst->error, WAVE_EINTERNAL, "job failed without an error");
  int rv = wv_client_name(c, ji->device, &dst->device, err);
  if (rv == 0)
    rv = wv_client_name(c, ji->waiting_pack, &dst->waiting_pack, err);
  if (rv == 0)
    rv = wv_client_name(c, ji->waiting_device, &dst->waiting_device, err);
  if (rv == 0)
    rv = wv_client_name(c, ji->owner, &dst->owner, err);
  return rv;
}

static int job_result(wave_client *c, wave_hash_result *dst,
                      const Wave__V1__HashResult *hr, wave_error *err)
{
  memset(dst, 0, sizeof *dst);
  dst->job_fingerprint = hr->job_fingerprint;
  dst->segment_log2 = hr->segment_log2;
  dst->segment_count = hr->segment_count;
  dst->winner_count = hr->winner_count;
  dst->best_nonce = hr->best_nonce;
  dst->best_output = hr->best_output;
  dst->hashes = hr->hashes;
  dst->seconds = hr->seconds;
  int rv = wv_client_name(c, hr->device, &dst->device, err);
  if (rv == 0)
    rv = wv_client_name(c, hr->exchange, &dst->exchange, err);
  if (rv != 0)
    return rv;
  if (hr->n_winners > 0) {
    dst->winners = calloc(hr->n_winners, sizeof *dst->winners);
    if (dst->winners == NULL)
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    for (size_t i = 0; i < hr->n_winners; i++) {
      if (hr->winners[i] == NULL)
        continue;
      dst->winners[dst->n_winners].nonce = hr->winners[i]->nonce;
      dst->winners[dst->n_winners].output = hr->winners[i]->output;
      dst->n_winners++;
    }
  }
  if (hr->n_shares > 0) {
    dst->shares = calloc(hr->n_shares, sizeof *dst->shares);
    if (dst->shares == NULL) {
      wave_hash_result_free(dst);
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    }
    for (size_t i = 0; i < hr->n_shares; i++) {
      if (hr->shares[i] == NULL)
        continue;
      wave_device_share *d = &dst->shares[dst->n_shares++];
      if ((rv = wv_client_name(c, hr->shares[i]->device, &d->device,
                               err)) != 0) {
        wave_hash_result_free(dst);
        return rv;
      }
      d->hashes = hr->shares[i]->hashes;
      d->seconds = hr->shares[i]->seconds;
      d->faulted = hr->shares[i]->faulted;
    }
  }
  if (hr->n_segments > 0 && hr->segment_offset == 0 &&
      hr->segment_count <= SIZE_MAX / sizeof *dst->segments) {
    dst->segments = malloc((size_t)hr->segment_count * sizeof *dst->segments);
    if (dst->segments == NULL) {
      wave_hash_result_free(dst);
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    }
    size_t n = hr->n_segments < hr->segment_count ? hr->n_segments
                                                  : (size_t)hr->segment_count;
    memcpy(dst->segments, hr->segments, n * sizeof *dst->segments);
    dst->n_segments = n;
  }
  if (hr->n_outputs > 0) {
    dst->outputs = malloc(hr->n_outputs * sizeof *dst->outputs);
    if (dst->outputs == NULL) {
      wave_hash_result_free(dst);
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    }
    memcpy(dst->outputs, hr->outputs, hr->n_outputs * sizeof *dst->outputs);
    dst->n_outputs = hr->n_outputs;
  }
  return 0;
}

void wave_hash_result_free(wave_hash_result *res)
{
  if (res == NULL)
    return;
  free(res->winners);
  free(res->outputs);
  free(res->segments);
  free(res->shares);
  res->winners = NULL;
  res->outputs = NULL;
  res->segments = NULL;
  res->shares = NULL;
  res->n_winners = res->n_outputs = res->n_segments = res->n_shares = 0;
}

int wave_hash_submit(wave_client *c, const wave_hash_request *req,
                     uint64_t *job_id, wave_error *err)
{
  return wave_hash_submit_key(c, req, job_id, NULL, err);
}

int wave_hash_submit_key(wave_client *c, const wave_hash_request *req,
                         uint64_t *job_id, wave_job_key *key, wave_error *err)
{
  if (key != NULL)
    memset(key, 0, sizeof *key);
  if (c == NULL || req == NULL || job_id == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_hash_submit: NULL argument");
  Wave__V1__HashRequest hr = WAVE__V1__HASH_REQUEST__INIT;
  hr.pack = (char *)(req->pack ? req->pack : "");
  hr.nonce = req->nonce;
  hr.count = req->count;
  hr.target = req->target;
  hr.max_winners = req->max_winners;
  hr.want_outputs = req->want_outputs != 0;
  hr.device = (char *)(req->device ? req->device : "");
  hr.client = c->tag;
  hr.n_devices = req->n_devices;
  hr.devices = (char **)req->devices;
  hr.segment_log2 = req->segment_log2;
  hr.want_segments = req->want_segments != 0;
  hr.detach = req->detach != 0;
  WV_CLIENT_LEVEL(&hr, req);

  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_HASH;
  r.hash = &hr;
  Wave__V1__Response *resp;
  int rv = wv_client_call(c, &r, WAVE__V1__RESPONSE__BODY_JOB, 0, &resp, err);
  if (rv != 0)
    return rv;
  if (resp->job == NULL || resp->job->job_id == 0) {
    wave__v1__response__free_unpacked(resp, NULL);
    return wv_seterr(err, WAVE_EIO, "%s: hash submit reply without a job id",
                     c->url);
  }
  *job_id = resp->job->job_id;
  /* a key of another length is not one this library can present back */
  if (key != NULL && resp->job->key.len == WAVE_JOB_KEY_BYTES) {
    memcpy(key->bytes, resp->job->key.data, WAVE_JOB_KEY_BYTES);
    key->set = 1;
  }
  atomic_store(&c->instance, resp->job->instance);
  wave__v1__response__free_unpacked(resp, NULL);
  return 0;
}

/* Convert a JobInfo reply; the result too when DONE and res is wanted. */
static int job_reply(wave_client *c, Wave__V1__Response *resp,
                     wave_job_info *info, wave_hash_result *res,
                     wave_error *err)
{
  const Wave__V1__JobInfo *ji = resp->job;
  if (ji == NULL)
    return wv_seterr(err, WAVE_EIO, "%s: empty job reply", c->url);
  wave_job_info tmp;
  int rv = job_info(c, info ? info : &tmp, ji, err);
  if (rv != 0)
    return rv;
  if (res != NULL && ji->state == WAVE__V1__JOB_STATE__DONE) {
    if (ji->result == NULL)
      return wv_seterr(err, WAVE_EIO, "%s: job %llu is done but the reply "
                       "has no result", c->url,
                       (unsigned long long)ji->job_id);
    return job_result(c, res, ji->result, err);
  }
  return 0;
}

/* The key as a protobuf bytes field: empty when there is none. */
static ProtobufCBinaryData job_key_bytes(const wave_job_key *key)
{
  ProtobufCBinaryData b = {0, NULL};
  if (key != NULL && key->set) {
    b.len = WAVE_JOB_KEY_BYTES;
    b.data = (uint8_t *)key->bytes;
  }
  return b;
}

int wave_job_poll(wave_client *c, uint64_t job_id, unsigned wait_ms,
                  wave_job_info *info, wave_hash_result *res, wave_error *err)
{
  return wave_job_poll_key(c, job_id, NULL, wait_ms, info, res, err);
}

int wave_job_poll_key(wave_client *c, uint64_t job_id,
                      const wave_job_key *key, unsigned wait_ms,
                      wave_job_info *info, wave_hash_result *res,
                      wave_error *err)
{
  if (c == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_job_poll: NULL client");
  Wave__V1__JobRequest jr = WAVE__V1__JOB_REQUEST__INIT;
  jr.job_id = job_id;
  jr.wait_ms = wait_ms;
  jr.instance = atomic_load(&c->instance);
  jr.key = job_key_bytes(key);
  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_JOB;
  r.job = &jr;
  Wave__V1__Response *resp;
  int rv = wv_client_call(c, &r, WAVE__V1__RESPONSE__BODY_JOB, wait_ms, &resp,
                          err);
  if (rv != 0)
    return rv;
  rv = job_reply(c, resp, info, res, err);
  /* res was filled only for a DONE job */
  int filled = rv == 0 && res != NULL && resp->job != NULL &&
               resp->job->state == WAVE__V1__JOB_STATE__DONE;
  if (filled && resp->job->outputs_delivered) {
    /* an earlier answer (lost to us) carried them: docs/protocol.md */
    wave_hash_result_free(res);
    filled = 0;
    rv = wv_seterr(err, WAVE_ENOJOB, "%s: job %" PRIu64 "'s outputs were "
                   "delivered in an earlier reply and are no longer kept",
                   c->url, job_id);
  }
  wave__v1__response__free_unpacked(resp, NULL);
  /* the rest of the segment list, page by page */
  while (filled && res->segments != NULL &&
         res->n_segments < res->segment_count) {
    jr.wait_ms = 0;
    jr.segment_offset = res->n_segments;
    if ((rv = wv_client_call(c, &r, WAVE__V1__RESPONSE__BODY_JOB, 0, &resp,
                             err)) != 0) {
      wave_hash_result_free(res);
      break;
    }
    const Wave__V1__HashResult *hr = resp->job ? resp->job->result : NULL;
    if (hr == NULL || hr->segment_offset != res->n_segments ||
        hr->n_segments == 0 ||
        hr->n_segments > res->segment_count - res->n_segments) {
      rv = wv_seterr(err, WAVE_EIO, "%s: bad segment page at %zu", c->url,
                     res->n_segments);
      wave_hash_result_free(res);
    } else {
      memcpy(res->segments + res->n_segments, hr->segments,
             hr->n_segments * sizeof *res->segments);
      res->n_segments += hr->n_segments;
    }
    wave__v1__response__free_unpacked(resp, NULL);
  }
  return rv;
}

int wave_job_cancel(wave_client *c, uint64_t job_id, wave_job_info *info,
                    wave_error *err)
{
  return wave_job_cancel_key(c, job_id, NULL, info, err);
}

int wave_job_cancel_key(wave_client *c, uint64_t job_id,
                        const wave_job_key *key, wave_job_info *info,
                        wave_error *err)
{
  if (c == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_job_cancel: NULL client");
  Wave__V1__CancelRequest cr = WAVE__V1__CANCEL_REQUEST__INIT;
  cr.job_id = job_id;
  cr.instance = atomic_load(&c->instance);
  cr.key = job_key_bytes(key);
  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_CANCEL;
  r.cancel = &cr;
  Wave__V1__Response *resp;
  int rv = wv_client_call(c, &r, WAVE__V1__RESPONSE__BODY_JOB, 0, &resp, err);
  if (rv != 0)
    return rv;
  rv = job_reply(c, resp, info, NULL, err);
  wave__v1__response__free_unpacked(resp, NULL);
  return rv;
}

static double job_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int wave_hash(wave_client *c, const wave_hash_request *req,
              wave_hash_result *res, wave_progress_fn progress, void *arg,
              wave_error *err)
{
  if (res == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_hash: NULL result");
  memset(res, 0, sizeof *res);
  uint64_t id;
  int rv = wave_hash_submit(c, req, &id, err);
  if (rv != 0)
    return rv;
  for (;;) {
    wave_job_info info;
    double t0 = job_now();
    if ((rv = wave_job_poll(c, id, 1000, &info, res, err)) != 0)
      return rv;
    if (progress != NULL)
      progress(&info, arg);
    switch (info.state) {
    case WAVE_JOB_DONE:
      return 0;
    case WAVE_JOB_FAILED:
    case WAVE_JOB_CANCELLED:
      return wv_seterr(err, info.error.code, "%s", info.error.message);
    default:
      break;
    }
    /* A daemon that answers polls at once (no waiting) must not be spun
     * on: pace such polls at 20 per second. */
    double dt = job_now() - t0;
    if (dt < 0.05) {
      struct timespec ts = {0, (long)((0.05 - dt) * 1e9)};
      nanosleep(&ts, NULL);
    }
  }
}

int wave_jobs_get(wave_client *c, wave_job_info **jobs, size_t *n_jobs,
                  wave_error *err)
{
  return wave_jobs_get_key(c, NULL, jobs, n_jobs, err);
}

int wave_jobs_get_key(wave_client *c, const wave_job_key *key,
                      wave_job_info **jobs, size_t *n_jobs, wave_error *err)
{
  if (c == NULL || jobs == NULL || n_jobs == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_jobs_get: NULL argument");
  *jobs = NULL;
  *n_jobs = 0;
  Wave__V1__JobsRequest jq = WAVE__V1__JOBS_REQUEST__INIT;
  jq.key = job_key_bytes(key);
  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_JOBS;
  r.jobs = &jq;
  Wave__V1__Response *resp;
  int rv = wv_client_call(c, &r, WAVE__V1__RESPONSE__BODY_JOBS, 0, &resp, err);
  if (rv != 0)
    return rv;
  const Wave__V1__JobsReply *jr = resp->jobs;
  size_t n = jr ? jr->n_jobs : 0;
  wave_job_info *v = calloc(n + 1, sizeof *v);
  if (v == NULL) {
    wave__v1__response__free_unpacked(resp, NULL);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  size_t k = 0;
  for (size_t i = 0; i < n && rv == 0; i++)
    if (jr->jobs[i] != NULL)
      rv = job_info(c, &v[k++], jr->jobs[i], err);
  wave__v1__response__free_unpacked(resp, NULL);
  if (rv != 0) {
    free(v);
    return rv;
  }
  *jobs = v;
  *n_jobs = k;
  return 0;
}

void wave_jobs_free(wave_job_info *jobs) { free(jobs); }

void wave_job_key_format(const wave_job_key *key, char *buf, size_t n)
{
  static const char hex[] = "0123456789abcdef";
  if (buf == NULL || n == 0)
    return;
  buf[0] = '\0';
  if (key == NULL || !key->set || n < WAVE_JOB_KEY_HEX)
    return;
  for (size_t i = 0; i < WAVE_JOB_KEY_BYTES; i++) {
    buf[2 * i] = hex[key->bytes[i] >> 4];
    buf[2 * i + 1] = hex[key->bytes[i] & 15];
  }
  buf[2 * WAVE_JOB_KEY_BYTES] = '\0';
}

static int job_hexval(char ch)
{
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

int wave_job_key_parse(const char *s, wave_job_key *key, wave_error *err)
{
  if (key == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_job_key_parse: NULL key");
  memset(key, 0, sizeof *key);
  if (s == NULL || strlen(s) != 2 * WAVE_JOB_KEY_BYTES)
    return wv_seterr(err, WAVE_EARG, "a job key is %d hex digits",
                     2 * WAVE_JOB_KEY_BYTES);
  for (size_t i = 0; i < WAVE_JOB_KEY_BYTES; i++) {
    int hi = job_hexval(s[2 * i]), lo = job_hexval(s[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      memset(key, 0, sizeof *key);
      return wv_seterr(err, WAVE_EARG, "a job key is %d hex digits; "
                       "'%.40s' is not", 2 * WAVE_JOB_KEY_BYTES, s);
    }
    key->bytes[i] = (unsigned char)(hi << 4 | lo);
  }
  key->set = 1;
  return 0;
}
