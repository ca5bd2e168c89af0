/* test_jobs.c - hash jobs over several devices, and the daemon's lifecycle
 * promises (docs/protocol.md), against the real wavedd over raw nng +
 * protobuf-c (tests/daemon_harness.h).
 *
 *  - one job over two CPU devices, and over cpu + vulkan (lavapipe) when
 *    the build has Vulkan, equals the job on one device bit for bit: job
 *    fingerprint, every segment, winners, winner count, best;
 *  - a device that faults mid-job loses no piece: the job completes on the
 *    other one, with the same bits, and status/shares record the fault;
 *  - a reduction sent while a pack is being prepared is answered while
 *    status still says the pack is pending;
 *  - job ids and instances never repeat across restarts, and a poll that
 *    names another instance gets NOJOB;
 *  - 100 parked polls do not stop a status request: its reply arrives
 *    while all 100 are still waiting.
 * None of them measures time.
 */
#include <check.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "daemon_harness.h"
#include "skip.h"
#include "core/base.h"
#include "workers/hash/hash.h"

/* ---- helpers ---------------------------------------------------------- */

typedef struct tj_job {
  uint64_t nonce, count, target;
  uint32_t max_winners;
  unsigned seg_log2;
  const char *pack;
} tj_job;

/* Submit j on `device` (one name), or on `devices` (comma list), wait for
 * it, and return the DONE JobInfo's response (caller frees). */
static Wave__V1__Response *tj_run(nng_socket s, const tj_job *j,
                                  const char *device, const char *devices,
                                  uint64_t id)
{
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = (char *)j->pack;
  hq.nonce = j->nonce;
  hq.count = j->count;
  hq.target = j->target;
  hq.max_winners = j->max_winners;
  hq.segment_log2 = j->seg_log2;
  hq.want_segments = 1;
  hq.device = (char *)(device ? device : "");
  char list[128], *names[8];
  size_t n = 0;
  if (devices != NULL) {
    snprintf(list, sizeof list, "%s", devices);
    for (char *sv = NULL, *t = strtok_r(list, ",", &sv); t && n < 8;
         t = strtok_r(NULL, ",", &sv))
      names[n++] = t;
    hq.n_devices = n;
    hq.devices = names;
  }
  Wave__V1__Response *r = td_hash_req(s, id, &hq);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_JOB, "submit: %s",
                r->error ? r->error->message : "?");
  uint64_t job = r->job->job_id;
  if (devices == NULL || strcmp(devices, "all") != 0)
    ck_assert_uint_eq(r->job->n_devices, devices ? n : 1);
  wave__v1__response__free_unpacked(r, NULL);
  r = td_wait_job(s, job);
  ck_assert_msg(r->job->state == WAVE__V1__JOB_STATE__DONE, "state %d: %s",
                r->job->state, r->job->error ? r->job->error->message : "");
  ck_assert_ptr_nonnull(r->job->result);
  return r;
}

/* The two results agree bit for bit. */
static void tj_same(const Wave__V1__HashResult *a,
                    const Wave__V1__HashResult *b)
{
  ck_assert_uint_eq(a->job_fingerprint, b->job_fingerprint);
  ck_assert_uint_eq(a->segment_log2, b->segment_log2);
  ck_assert_uint_eq(a->segment_count, b->segment_count);
  ck_assert_uint_eq(a->n_segments, b->n_segments);
  ck_assert_uint_eq(a->n_segments, a->segment_count);
  for (size_t i = 0; i < a->n_segments; i++)
    ck_assert_msg(a->segments[i] == b->segments[i], "segment %zu", i);
  ck_assert_uint_eq(a->winner_count, b->winner_count);
  ck_assert_uint_eq(a->n_winners, b->n_winners);
  for (size_t i = 0; i < a->n_winners; i++) {
    ck_assert_uint_eq(a->winners[i]->nonce, b->winners[i]->nonce);
    ck_assert_uint_eq(a->winners[i]->output, b->winners[i]->output);
  }
  ck_assert_uint_eq(a->best_nonce, b->best_nonce);
  ck_assert_uint_eq(a->best_output, b->best_output);
  ck_assert_uint_eq(a->hashes, b->hashes);
}

/* The job fingerprint is FNV-1a-64 over the segments (docs/hash.md). */
static void tj_fold_ok(const Wave__V1__HashResult *r)
{
  ck_assert_uint_eq(r->job_fingerprint,
                    wv_fnv1a64_u64(WV_FNV_OFFSET, r->segments,
                                   r->n_segments));
}

static uint64_t tj_share_hashes(const Wave__V1__HashResult *r)
{
  uint64_t sum = 0;
  for (size_t i = 0; i < r->n_shares; i++)
    sum += r->shares[i]->hashes;
  return sum;
}

static void tj_config(td_daemon *d, const char *devices, const char *limits)
{
  char text[2048];
  snprintf(text, sizeof text, "listen: [\"%s\"]\nlog_level: info\n"
           "limits: {contexts: 8%s%s}\n"
           "packs: {dir: %s/config/packs, load: [closed, small]}\n"
           "devices:\n%s", d->ipc, limits ? ", " : "", limits ? limits : "",
           getenv("WAVE_SOURCE_DIR"), devices);
  td_write(d->cfg, text);
}

/* A ragged job: unaligned start and end, winners, many pieces. */
static const tj_job tj_ragged = {
  .nonce = (1ull << 20) - 777, .count = 40000, .target = 1ull << 58,
  .max_winners = 9, .seg_log2 = 10, .pack = "small",
};

/* ---- several devices ---------------------------------------------------- */

START_TEST(two_cpus_equal_one)
{
  td_daemon d;
  td_prepare(&d, NULL);
  tj_config(&d, "  - {name: cpu0, backend: cpu, threads: 1, batch: 2048}\n"
                "  - {name: cpu1, backend: cpu, threads: 1, batch: 1024}\n",
            NULL);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  Wave__V1__Response *one = tj_run(s, &tj_ragged, "cpu0", NULL, 1);
  Wave__V1__Response *two = tj_run(s, &tj_ragged, NULL, "cpu0,cpu1", 2);
  Wave__V1__Response *all = tj_run(s, &tj_ragged, NULL, "all", 3);
  tj_fold_ok(one->job->result);
  tj_same(one->job->result, two->job->result);
  tj_same(one->job->result, all->job->result);
  ck_assert_uint_gt(one->job->result->winner_count, 0);
  ck_assert_uint_eq(two->job->result->n_shares, 2);
  ck_assert_uint_eq(tj_share_hashes(two->job->result), tj_ragged.count);
  ck_assert_uint_eq(all->job->n_devices, 2);
  /* the default segment size: 2^13, and one job on two devices again */
  tj_job j13 = tj_ragged;
  j13.seg_log2 = 0;
  Wave__V1__Response *a = tj_run(s, &j13, "cpu1", NULL, 4);
  Wave__V1__Response *b = tj_run(s, &j13, NULL, "cpu1,cpu0", 5);
  ck_assert_uint_eq(a->job->result->segment_log2, 13);
  tj_same(a->job->result, b->job->result);
  ck_assert_uint_ne(a->job->result->job_fingerprint,
                    one->job->result->job_fingerprint);
  wave__v1__response__free_unpacked(one, NULL);
  wave__v1__response__free_unpacked(two, NULL);
  wave__v1__response__free_unpacked(all, NULL);
  wave__v1__response__free_unpacked(a, NULL);
  wave__v1__response__free_unpacked(b, NULL);
  /* bad device lists */
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = (char *)"small";
  hq.count = 64;
  char *dup[] = {(char *)"cpu0", (char *)"cpu0"};
  hq.n_devices = 2;
  hq.devices = dup;
  td_expect_error(td_hash_req(s, 6, &hq), WAVE_EBADREQUEST, 6);
  char *nope[] = {(char *)"cpu0", (char *)"gpu9"};
  hq.devices = nope;
  td_expect_error(td_hash_req(s, 7, &hq), WAVE_ENODEV, 7);
  hq.n_devices = 1;
  hq.device = (char *)"cpu1";
  td_expect_error(td_hash_req(s, 8, &hq), WAVE_EBADREQUEST, 8);
  hq.n_devices = 0;
  hq.segment_log2 = 21;
  td_expect_error(td_hash_req(s, 9, &hq), WAVE_EBADREQUEST, 9);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

START_TEST(cpu_and_vulkan_equal_one)
{
  td_daemon d;
  td_prepare(&d, NULL);
  tj_config(&d, "  - {name: vk0, backend: vulkan}\n", NULL);
  const char *check[] = {"--config", d.cfg, "--check-config", NULL};
  td_spawn(&d, check, 0);
  if (!WIFEXITED(d.status) || WEXITSTATUS(d.status) != 0) {
    td_cleanup(&d);
    WVS_SKIP("cpu_and_vulkan_equal_one: no vulkan backend built in");
  }
  /* the Vulkan loader's own allocations are not ours to leak-check */
  const char *asan = getenv("ASAN_OPTIONS");
  char opts[512];
  snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", asan ? asan : "",
           asan ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
  /* vk1 is vk0's device again: one physical GPU (one UUID), which a job
   * over several devices uses once. */
  tj_config(&d, "  - {name: cpu0, backend: cpu, threads: 1, batch: 4096}\n"
                "  - {name: vk0, backend: vulkan, batch: 2048}\n"
                "  - {name: vk1, backend: vulkan, batch: 2048}\n", NULL);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  Wave__V1__Response *st = td_status(s, 1);
  int vk_ok = st->status->n_devices == 3 && !st->status->devices[1]->faulted &&
              !st->status->devices[2]->faulted;
  wave__v1__response__free_unpacked(st, NULL);
  if (!vk_ok) {
    wvs_note("cpu_and_vulkan_equal_one: no Vulkan device here (vk0 or vk1 "
             "did not open)");
  } else {
    Wave__V1__Response *c = tj_run(s, &tj_ragged, "cpu0", NULL, 2);
    Wave__V1__Response *v = tj_run(s, &tj_ragged, "vk0", NULL, 3);
    Wave__V1__Response *b = tj_run(s, &tj_ragged, NULL, "cpu0,vk0", 4);
    tj_fold_ok(c->job->result);
    tj_same(c->job->result, v->job->result);
    tj_same(c->job->result, b->job->result);
    ck_assert_uint_eq(tj_share_hashes(b->job->result), tj_ragged.count);
    Wave__V1__Response *a = tj_run(s, &tj_ragged, NULL, "all", 5);
    tj_same(c->job->result, a->job->result);
    ck_assert_uint_eq(a->job->result->n_shares, 2);  /* cpu0, one of vk0/1 */
    ck_assert_uint_eq(a->job->n_devices, 2);
    ck_assert_str_eq(a->job->result->shares[0]->device, "cpu0");
    ck_assert_uint_eq(tj_share_hashes(a->job->result), tj_ragged.count);
    wave__v1__response__free_unpacked(a, NULL);
    wave__v1__response__free_unpacked(c, NULL);
    wave__v1__response__free_unpacked(v, NULL);
    wave__v1__response__free_unpacked(b, NULL);
  }
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
  if (asan != NULL)
    setenv("ASAN_OPTIONS", asan, 1);
  else
    unsetenv("ASAN_OPTIONS");
}
END_TEST

/* cpu0 faults on its first hash piece (the fake backend, fault_after=1:
 * after one reduction): that piece goes back to the job, cpu1 hashes everything, the
 * bits are those of the job on cpu1 alone, and the fault is on record. */
START_TEST(fault_loses_no_piece)
{
  td_daemon d;
  td_prepare(&d, NULL);
  tj_config(&d, "  - {name: cpu0, backend: fake, device: \"fault_after=1\","
                " threads: 1, batch: 1024}\n"
                "  - {name: cpu1, backend: cpu, threads: 1, batch: 1024}\n",
            NULL);
  d.fake = 1;
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  uint32_t v[2] = {1, 2};
  td_chunk c = {v, sizeof v};
  Wave__V1__Response *r = td_reduce(s, 1, WAVE__V1__DTYPE__U32,
                                    WAVE__V1__OP__SUM, &c, 1, NULL, 0, "cpu0");
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  wave__v1__response__free_unpacked(r, NULL);
  tj_job j = tj_ragged;
  /* ~4096 pieces (about a second of cpu1's time): cpu0's thread, woken
   * with cpu1's, takes its first piece long before they run out, even on a
   * loaded machine. */
  j.count = 1u << 22;
  Wave__V1__Response *both = tj_run(s, &j, NULL, "cpu0,cpu1", 2);
  Wave__V1__HashResult *hb = both->job->result;
  ck_assert_uint_eq(hb->n_shares, 2);
  ck_assert_str_eq(hb->shares[0]->device, "cpu0");
  ck_assert_int_eq(hb->shares[0]->faulted, 1);
  ck_assert_uint_eq(hb->shares[0]->hashes, 0);
  ck_assert_uint_eq(hb->shares[1]->hashes, j.count);
  r = td_status(s, 3);
  ck_assert_int_eq(r->status->devices[0]->faulted, 1);
  ck_assert_ptr_nonnull(strstr(r->status->devices[0]->fault, "injected"));
  wave__v1__response__free_unpacked(r, NULL);
  Wave__V1__Response *one = tj_run(s, &j, "cpu1", NULL, 4);
  tj_same(one->job->result, hb);
  tj_fold_ok(hb);
  wave__v1__response__free_unpacked(one, NULL);
  wave__v1__response__free_unpacked(both, NULL);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

/* Progress and cancel across devices: a 2^40-nonce job over both CPUs
 * makes progress, is cancelled, and ends CANCELLED on both. */
START_TEST(cancel_across_devices)
{
  td_daemon d;
  td_prepare(&d, NULL);
  tj_config(&d, "  - {name: cpu0, backend: cpu, threads: 1, batch: 1024}\n"
                "  - {name: cpu1, backend: cpu, threads: 1, batch: 1024}\n",
            NULL);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = (char *)"closed";
  hq.count = 1ull << 40;
  char *all[] = {(char *)"all"};
  hq.n_devices = 1;
  hq.devices = all;
  Wave__V1__Response *r = td_hash_req(s, 1, &hq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t job = r->job->job_id;
  ck_assert_uint_eq(r->job->n_devices, 2);
  wave__v1__response__free_unpacked(r, NULL);
  /* progress: polls until some pieces are done */
  uint64_t done = 0;
  while (done == 0) {
    r = td_job(s, job, 0, 0);
    ck_assert(r->job->state == WAVE__V1__JOB_STATE__QUEUED ||
              r->job->state == WAVE__V1__JOB_STATE__RUNNING);
    done = r->job->done;
    wave__v1__response__free_unpacked(r, NULL);
  }
  r = td_job(s, job, 0, 1);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  wave__v1__response__free_unpacked(r, NULL);
  r = td_wait_job(s, job);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__CANCELLED);
  ck_assert_int_eq(r->job->error->code, WAVE_ECANCELLED);
  ck_assert_uint_ge(r->job->done, done);
  wave__v1__response__free_unpacked(r, NULL);
  /* both devices are free again: a job on each completes */
  tj_job j = {.nonce = 0, .count = 4096, .seg_log2 = 10, .pack = "closed"};
  Wave__V1__Response *a = tj_run(s, &j, "cpu0", NULL, 2);
  Wave__V1__Response *b = tj_run(s, &j, "cpu1", NULL, 3);
  tj_same(a->job->result, b->job->result);
  wave__v1__response__free_unpacked(a, NULL);
  wave__v1__response__free_unpacked(b, NULL);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

/* JobRequest.segment_offset/segment_limit page the segment list; the pages
 * put together are the whole list; want_segments beyond
 * limits.max_segments is TOOBIG at submit. */
START_TEST(segment_pages)
{
  td_daemon d;
  td_prepare(&d, NULL);
  tj_config(&d, "  - {name: cpu0, backend: cpu, threads: 1}\n",
            "max_segments: 100");
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  tj_job j = {.nonce = 7, .count = 3000, .seg_log2 = 5, .pack = "closed"};
  Wave__V1__Response *all = tj_run(s, &j, "cpu0", NULL, 1);
  const Wave__V1__HashResult *ha = all->job->result;
  ck_assert_uint_eq(ha->segment_count, wv_seg_count(7, 3000, 5));
  ck_assert_uint_eq(ha->n_segments, ha->segment_count);
  tj_fold_ok(ha);
  uint64_t job = all->job->job_id;
  size_t got = 0;
  for (uint64_t off = 0; off < ha->segment_count; off += 10) {
    Wave__V1__JobRequest jr = WAVE__V1__JOB_REQUEST__INIT;
    jr.job_id = job;
    jr.segment_offset = off;
    jr.segment_limit = 10;
    Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
    rq.version = 2;
    rq.id = 2;
    rq.body_case = WAVE__V1__REQUEST__BODY_JOB;
    rq.job = &jr;
    Wave__V1__Response *r = td_call(s, &rq);
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
    const Wave__V1__HashResult *h = r->job->result;
    ck_assert_uint_eq(h->segment_offset, off);
    size_t want = ha->segment_count - off < 10 ? ha->segment_count - off : 10;
    ck_assert_uint_eq(h->n_segments, want);
    for (size_t i = 0; i < h->n_segments; i++)
      ck_assert_uint_eq(h->segments[i], ha->segments[off + i]);
    got += h->n_segments;
    wave__v1__response__free_unpacked(r, NULL);
  }
  ck_assert_uint_eq(got, ha->segment_count);
  wave__v1__response__free_unpacked(all, NULL);
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = (char *)"closed";
  hq.count = 101 * 32;
  hq.segment_log2 = 5;
  hq.want_segments = 1;
  td_expect_error(td_hash_req(s, 3, &hq), WAVE_ETOOBIG, 3);
  hq.want_segments = 0;  /* without the list, any size */
  Wave__V1__Response *r = td_hash_req(s, 4, &hq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

/* ---- lifecycle ------------------------------------------------------------ */

static const char *tj_pack_state(const Wave__V1__StatusReply *st, size_t dev,
                                 const char *pack)
{
  const Wave__V1__DeviceStatus *ds = st->devices[dev];
  for (size_t k = 0; k < ds->n_packs; k++)
    if (strcmp(ds->packs[k]->pack, pack) == 0)
      return ds->packs[k]->state;
  return "absent";
}

/* The main pack's 1 GiB dataset takes seconds to build on one CPU thread;
 * a reduction sent meanwhile comes back while the pack is still pending. */
START_TEST(reduce_during_prepare)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char text[1024];
  snprintf(text, sizeof text, "listen: [\"%s\"]\nlog_level: info\n"
           "packs: {dir: %s/config/packs, load: [main]}\n"
           "devices: [{name: cpu0, backend: cpu, threads: 1}]\n", d.ipc,
           getenv("WAVE_SOURCE_DIR"));
  td_write(d.cfg, text);
  ck_assert_msg(td_start_listening(&d) == 0, "did not start:\n%s",
                td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  Wave__V1__Response *r = td_status(s, 1);
  ck_assert_str_eq(tj_pack_state(r->status, 0, "main"), "pending");
  ck_assert_int_eq(r->status->ready, 0);
  wave__v1__response__free_unpacked(r, NULL);
  uint32_t v[4] = {1, 2, 3, 4};
  td_chunk c = {v, sizeof v};
  r = td_reduce(s, 2, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM, &c, 1, NULL, 0,
                NULL);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  ck_assert_uint_eq(r->reduce->bits[0], 10);
  wave__v1__response__free_unpacked(r, NULL);
  /* the reply came while the pack's dataset is still being built: its
   * check is pending, and not yet "prepared" */
  r = td_status(s, 3);
  ck_assert_str_eq(tj_pack_state(r->status, 0, "main"), "pending");
  const char *detail = r->status->devices[0]->packs[0]->detail;
  ck_assert_msg(strstr(detail, "prepared") == NULL, "detail: %s", detail);
  ck_assert_int_eq(r->status->ready, 0);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);  /* mid-preparation: a clean stop */
  td_cleanup(&d);
}
END_TEST

/* Ready means ready: READY=1 (td_start) comes with status.ready, and
 * every pack's check has run. */
START_TEST(ready_after_prepare)
{
  td_daemon d;
  td_prepare(&d, NULL);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  Wave__V1__Response *r = td_status(s, 1);
  ck_assert_int_eq(r->status->ready, 1);
  ck_assert_uint_ne(r->status->instance, 0);
  for (size_t i = 0; i < r->status->n_devices; i++) {
    ck_assert_str_eq(tj_pack_state(r->status, i, "small"), "ok");
    ck_assert_str_eq(tj_pack_state(r->status, i, "closed"), "ok");
  }
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

START_TEST(ids_never_repeat)
{
  td_daemon d;
  td_prepare(&d, NULL);
  uint64_t ids[2][4], inst[2];
  for (int run = 0; run < 2; run++) {
    ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
    nng_socket s = td_dial(d.ipc);
    for (int k = 0; k < 4; k++) {
      Wave__V1__Response *r = td_hash(s, 10 + k, "closed", 0, 64, 0, 0, 0, 0,
                                      NULL);
      ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
      ids[run][k] = r->job->job_id;
      inst[run] = r->job->instance;
      ck_assert_uint_ne(inst[run], 0);
      wave__v1__response__free_unpacked(r, NULL);
    }
    Wave__V1__Response *r = td_status(s, 20);
    ck_assert_uint_eq(r->status->instance, inst[run]);
    wave__v1__response__free_unpacked(r, NULL);
    if (run == 1) {
      /* the first run's job, with its instance: NOJOB, never another's */
      Wave__V1__JobRequest jr = WAVE__V1__JOB_REQUEST__INIT;
      jr.job_id = ids[1][0];
      jr.instance = inst[0];
      Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
      rq.version = 2;
      rq.id = 21;
      rq.body_case = WAVE__V1__REQUEST__BODY_JOB;
      rq.job = &jr;
      td_expect_error(td_call(s, &rq), WAVE_ENOJOB, 21);
      Wave__V1__CancelRequest cr = WAVE__V1__CANCEL_REQUEST__INIT;
      cr.job_id = ids[1][0];
      cr.instance = inst[0];
      rq.id = 22;
      rq.body_case = WAVE__V1__REQUEST__BODY_CANCEL;
      rq.cancel = &cr;
      td_expect_error(td_call(s, &rq), WAVE_ENOJOB, 22);
      /* with its own instance it is found */
      jr.instance = inst[1];
      rq.id = 23;
      rq.body_case = WAVE__V1__REQUEST__BODY_JOB;
      rq.job = &jr;
      r = td_call(s, &rq);
      ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
      wave__v1__response__free_unpacked(r, NULL);
    }
    nng_close(s);
    ck_assert_int_eq(td_stop(&d), 0);
  }
  ck_assert_uint_ne(inst[0], inst[1]);
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++)
      ck_assert_uint_ne(ids[0][a], ids[1][b]);
  td_cleanup(&d);
}
END_TEST

enum { TJ_POLLS = 100 };

typedef struct tj_poll {
  nng_aio *aio;
  nng_ctx ctx;
  _Atomic int phase;    /* 1 sent, 2 reply arrived */
} tj_poll;

static void tj_poll_cb(void *arg)
{
  tj_poll *p = arg;
  if (atomic_load(&p->phase) == 0) {  /* sent: now receive */
    atomic_store(&p->phase, 1);
    if (nng_aio_result(p->aio) == 0)
      nng_ctx_recv(p->ctx, p->aio);
    return;
  }
  atomic_store(&p->phase, 2);
}

/* limits.contexts 8, and 100 polls parked on a job that will not end by
 * itself: a status request is still answered, while all 100 wait. */
START_TEST(parked_polls_leave_room)
{
  td_daemon d;
  td_prepare(&d, NULL);
  tj_config(&d, "  - {name: cpu0, backend: cpu, threads: 1}\n",
            "max_wait_ms: 50000");
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  /* a job of 2^40 nonces: it runs until cancelled */
  Wave__V1__Response *r = td_hash(s, 1, "closed", 0, 1ull << 40, 0, 0, 0, 0,
                                  NULL);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  static tj_poll polls[TJ_POLLS];
  for (int i = 0; i < TJ_POLLS; i++) {
    tj_poll *p = &polls[i];
    atomic_store(&p->phase, 0);
    ck_assert_int_eq(nng_ctx_open(&p->ctx, s), 0);
    ck_assert_int_eq(nng_aio_alloc(&p->aio, tj_poll_cb, p), 0);
    nng_aio_set_timeout(p->aio, 120000);
    Wave__V1__JobRequest jr = WAVE__V1__JOB_REQUEST__INIT;
    jr.job_id = job;
    jr.wait_ms = 50000;
    Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
    rq.version = 2;
    rq.id = 100 + (uint64_t)i;
    rq.body_case = WAVE__V1__REQUEST__BODY_JOB;
    rq.job = &jr;
    size_t len = wave__v1__request__get_packed_size(&rq);
    nng_msg *m;
    ck_assert_int_eq(nng_msg_alloc(&m, len), 0);
    wave__v1__request__pack(&rq, nng_msg_body(m));
    nng_aio_set_msg(p->aio, m);
    nng_ctx_send(p->ctx, p->aio);
  }
  /* status on yet another context: answered while the polls wait */
  r = td_status(s, 2);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STATUS);
  wave__v1__response__free_unpacked(r, NULL);
  int answered = 0;
  for (int i = 0; i < TJ_POLLS; i++)
    answered += atomic_load(&polls[i].phase) == 2;
  ck_assert_int_eq(answered, 0);
  /* cancelling the job answers every parked poll */
  r = td_job(s, job, 0, 1);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  wave__v1__response__free_unpacked(r, NULL);
  for (int i = 0; i < TJ_POLLS; i++) {
    nng_aio_wait(polls[i].aio);
    while (atomic_load(&polls[i].phase) != 2)
      nng_aio_wait(polls[i].aio);
    ck_assert_int_eq(nng_aio_result(polls[i].aio), 0);
    nng_msg *m = nng_aio_get_msg(polls[i].aio);
    Wave__V1__Response *pr =
        wave__v1__response__unpack(NULL, nng_msg_len(m), nng_msg_body(m));
    nng_msg_free(m);
    ck_assert_ptr_nonnull(pr);
    ck_assert_int_eq(pr->body_case, WAVE__V1__RESPONSE__BODY_JOB);
    ck_assert_int_eq(pr->job->state, WAVE__V1__JOB_STATE__CANCELLED);
    wave__v1__response__free_unpacked(pr, NULL);
    nng_aio_free(polls[i].aio);
    nng_ctx_close(polls[i].ctx);
  }
  /* the pool is back to its size: requests still flow */
  td_good(s);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

static Suite *jobs_suite(void)
{
  Suite *s = suite_create("jobs");
  TCase *multi = tcase_create("multi");
  tcase_set_timeout(multi, 600);
  tcase_add_test(multi, two_cpus_equal_one);
  tcase_add_test(multi, fault_loses_no_piece);
  tcase_add_test(multi, segment_pages);
  tcase_add_test(multi, cancel_across_devices);
  suite_add_tcase(s, multi);
  TCase *life = tcase_create("lifecycle");
  tcase_set_timeout(life, 600);
  tcase_add_test(life, reduce_during_prepare);
  tcase_add_test(life, ready_after_prepare);
  tcase_add_test(life, ids_never_repeat);
  tcase_add_test(life, parked_polls_leave_room);
  suite_add_tcase(s, life);
  /* entry test_jobs_vulkan, on lavapipe (VK_DRIVER_FILES) */
  TCase *vk = wvs_tcase("vulkan", 600);
  tcase_add_test(vk, cpu_and_vulkan_equal_one);
  suite_add_tcase(s, vk);
  return s;
}

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  return wvs_run(jobs_suite(), CK_ENV);
}
