/* test_lifecycle.c - the real wavedd binary's start and stop, each test
 * with a daemon of its own (daemon_harness.h): SIGTERM exits 0, bad
 * configs and packs refuse the start with a nonzero exit, --detach, a
 * device that faults at start-up or mid-job (the fake backend of
 * wavedd-test), an aborted ipc handshake, --version and --help.  The wire
 * protocol against one shared daemon is test_daemon.c.
 */
#include <check.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon_harness.h"
#include "skip.h"
#include "wave/error.h"
#include "workers/hash/hash.h"

START_TEST(sigterm_exits_zero)
{
  td_daemon d;
  td_prepare(&d, NULL);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.tcp);
  td_good(s);
  /* a long hash job in flight: the stop cancels it */
  Wave__V1__Response *r = td_hash(s, 1, "closed", 0, 1ull << 40, 0, 0, 0, 0,
                                  NULL);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  int rc = td_stop(&d);
  ck_assert_msg(rc == 0, "exit %d:\n%s", rc, td_stderr(&d));
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "SIGTERM"));
  struct stat st;
  ck_assert_int_ne(stat(d.ipc + strlen("ipc://"), &st), 0);  /* removed */
  td_cleanup(&d);
}
END_TEST

START_TEST(bad_config_exits_nonzero)
{
  td_daemon d;
  td_prepare(&d, NULL);
  td_write(d.cfg, "listen: [\"ipc:///tmp/never.sock\"]\n"
                  "devices:\n"
                  "  - name: cpu0\n"
                  "    backend: cpu\n"
                  "    threads: lots\n");
  ck_assert_int_ne(td_start(&d), 0);
  ck_assert(WIFEXITED(d.status));
  ck_assert_int_eq(WEXITSTATUS(d.status), 2);
  char want[400];
  snprintf(want, sizeof want, "%s:5:14: devices[0].threads: expected an "
           "integer 0..1024", d.cfg);
  ck_assert_msg(strstr(td_stderr(&d), want) != NULL, "stderr: %s",
                td_stderr(&d));
  /* --check-config says the same, and 0 for a good file */
  const char *check[] = {"--config", d.cfg, "--check-config", NULL};
  td_spawn(&d, check, 0);
  ck_assert_int_eq(WEXITSTATUS(d.status), 2);
  td_cleanup(&d);
  td_prepare(&d, NULL);
  const char *check2[] = {"--config", d.cfg, "--check-config", NULL};
  td_spawn(&d, check2, 0);
  ck_assert_msg(WEXITSTATUS(d.status) == 0, "%s", td_stderr(&d));
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), ": ok: 2 device(s)"));
  td_cleanup(&d);
}
END_TEST

START_TEST(bad_pack_refuses_start)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char pdir[300], bad[400], text[1024];
  snprintf(pdir, sizeof pdir, "%s/packs", d.dir);
  ck_assert_int_eq(mkdir(pdir, 0700), 0);
  snprintf(bad, sizeof bad, "%s/broken.yaml", pdir);
  td_write(bad, "name: broken\nversion: [\n");
  snprintf(text, sizeof text, "listen: [\"%s\"]\n"
           "packs: {dir: %s}\n"
           "devices: [{name: cpu0, backend: cpu}]\n", d.ipc, pdir);
  td_write(d.cfg, text);
  ck_assert_int_ne(td_start(&d), 0);
  ck_assert_int_eq(WEXITSTATUS(d.status), 2);
  ck_assert_msg(strstr(td_stderr(&d), "broken.yaml:") != NULL, "stderr: %s",
                td_stderr(&d));
  td_cleanup(&d);
}
END_TEST

/* Is pid a process that has not exited?  Its state in /proc/PID/stat (the
 * field after the last ')': the name may hold anything): a zombie (Z) or
 * a dead one (X) has exited.  Not kill(pid, 0), which succeeds on a
 * zombie, and the detached daemon is one until its parent reaps it:
 * nobody does when PID 1 is a shell or a container's bare process. */
static int tlc_running(pid_t pid)
{
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  return p != NULL && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

START_TEST(detach)
{
  td_daemon d;
  td_prepare(&d, NULL);
  const char *args[] = {"--config", d.cfg, NULL};
  td_spawn(&d, args, 0);  /* the parent returns once the child listens */
  ck_assert_msg(WIFEXITED(d.status) && WEXITSTATUS(d.status) == 0, "%s",
                td_stderr(&d));
  long pid = 0;
  const char *at = strstr(td_stderr(&d), "running as pid ");
  ck_assert_ptr_nonnull(at);
  pid = strtol(at + strlen("running as pid "), NULL, 10);
  ck_assert_int_gt(pid, 1);
  nng_socket s = td_dial(d.ipc);
  td_good(s);
  nng_close(s);
  ck_assert_int_eq(kill((pid_t)pid, SIGTERM), 0);
  for (int i = 0; i < 600 && tlc_running((pid_t)pid); i++) {
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  ck_assert_msg(!tlc_running((pid_t)pid), "wavedd (pid %ld) did not exit",
                pid);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "exit"));
  td_cleanup(&d);
}
END_TEST

/* A peer that connects and leaves before the SP handshake must not make
 * the ipc listener deaf for good (nng 1.5's bug, nng#1518;
 * daemon/net/nngfix.c).  LeakSanitizer stays on: with the fix no listener
 * is recovered, and nothing of a stuck one is left to leak. */
START_TEST(aborted_handshake)
{
  td_daemon d;
  td_prepare(&d, NULL);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%.100s",
           d.ipc + strlen("ipc://"));
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 8; i++) {
      int fd = socket(AF_UNIX, SOCK_STREAM, 0);
      ck_assert_int_ge(fd, 0);
      ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
      close(fd);
    }
    nng_socket s = td_dial(d.ipc);  /* a new connection must be served */
    td_good(s);
    nng_close(s);
  }
  int rc = td_stop(&d);
  if (rc != 0)  /* a LeakSanitizer report is longer than check's message */
    fputs(td_stderr(&d), stderr);
  ck_assert_msg(rc == 0, "wavedd did not stop cleanly (its log above)");
  td_cleanup(&d);
}
END_TEST

/* A device that fails to open is reported faulted; the others serve.  Needs
 * a backend besides cpu (vulkan, cuda, hip) compiled in: index 250 exists
 * nowhere, so its open() fails on any machine.  In a CPU-only build there is
 * nothing to fault and the test has nothing to check. */
START_TEST(faulted_device)
{
  static const char *const gpus[] = {"vulkan", "cuda", "hip"};
  td_daemon d;
  td_prepare(&d, NULL);
  const char *gpu = NULL;
  char text[1024];
  for (size_t i = 0; gpu == NULL && i < 3; i++) {
    snprintf(text, sizeof text, "listen: [\"%s\"]\npacks: {load: []}\n"
             "devices: [{name: bad0, backend: %s, index: 250}]\n", d.ipc,
             gpus[i]);
    td_write(d.cfg, text);
    const char *check[] = {"--config", d.cfg, "--check-config", NULL};
    td_spawn(&d, check, 0);
    if (WIFEXITED(d.status) && WEXITSTATUS(d.status) == 0)
      gpu = gpus[i];
  }
  if (gpu == NULL) {
    td_cleanup(&d);
    WVS_SKIP("faulted_device: no GPU backend built in: nothing to fault");
  }
  fprintf(stderr, "faulted_device: using backend %s\n", gpu);
  /* the GPU drivers' own allocations (e.g. mesa's Vulkan loader) are not
   * ours to leak-check; every other test runs the daemon with LSan on */
  const char *asan = getenv("ASAN_OPTIONS");
  char opts[512];
  snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", asan ? asan : "",
           asan && asan[0] ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
  /* only the bad device: nothing opened, no start (exit 1) */
  ck_assert_int_ne(td_start(&d), 0);
  ck_assert_int_eq(WEXITSTATUS(d.status), 1);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "no device opened"));
  /* with a CPU device beside it: starts, serves, reports the fault */
  snprintf(text, sizeof text, "listen: [\"%s\"]\n"
           "packs: {dir: %s/config/packs, load: [closed]}\n"
           "devices:\n  - {name: cpu0, backend: cpu, threads: 1}\n"
           "  - {name: bad0, backend: %s, index: 250}\n", d.ipc,
           getenv("WAVE_SOURCE_DIR"), gpu);
  td_write(d.cfg, text);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  Wave__V1__Response *r = td_status(s, 3);
  ck_assert_uint_eq(r->status->n_devices, 2);
  ck_assert_int_eq(r->status->devices[0]->faulted, 0);
  ck_assert_int_eq(r->status->devices[1]->faulted, 1);
  ck_assert_ptr_nonnull(strstr(r->status->devices[1]->fault, "open failed"));
  wave__v1__response__free_unpacked(r, NULL);
  uint32_t v[4] = {5, 6, 7, 8};
  td_chunk c = {v, sizeof v};
  td_expect_error(td_reduce(s, 4, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM, &c,
                            1, NULL, 0, "bad0"), WAVE_EDEVFAULT, 4);
  td_expect_error(td_hash(s, 5, "closed", 0, 1, 0, 0, 0, 0, "bad0"),
                  WAVE_EDEVFAULT, 5);
  r = td_reduce(s, 6, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM, &c, 1, NULL, 0,
                NULL);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  ck_assert_uint_eq(r->reduce->bits[0], 26);
  ck_assert_str_eq(r->reduce->device, "cpu0");
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

/* A device that fails in the middle of its work (the fake backend of
 * wavedd-test with fault_after=4, the stand-in for a GPU that dies): the job it was running fails
 * with DEVFAULT after some of its batches, later work for it fails fast,
 * status names the fault, and the other device keeps serving. */
START_TEST(fault_mid_job)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char text[1024];
  snprintf(text, sizeof text, "listen: [\"%s\"]\n"
           "packs: {dir: %s/config/packs, load: [closed]}\n"
           "devices:\n"
           "  - {name: cpu0, backend: fake, device: \"fault_after=4\","
           " threads: 1, batch: 1024}\n"
           "  - {name: cpu1, backend: cpu, threads: 1}\n", d.ipc,
           getenv("WAVE_SOURCE_DIR"));
  td_write(d.cfg, text);
  d.fake = 1;
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  uint32_t v[4] = {5, 6, 7, 8};
  td_chunk c = {v, sizeof v};
  /* steps 1 and 2: reductions */
  for (uint64_t id = 1; id <= 2; id++) {
    Wave__V1__Response *r = td_reduce(s, id, WAVE__V1__DTYPE__U32,
                                      WAVE__V1__OP__SUM, &c, 1, NULL, 0,
                                      "cpu0");
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
    ck_assert_uint_eq(r->reduce->bits[0], 26);
    wave__v1__response__free_unpacked(r, NULL);
  }
  /* steps 3 and 4: two batches of 1024 nonces (segments of 2^10, so a
   * piece is one batch); the third batch faults */
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = (char *)"closed";
  hq.count = 8192;
  hq.client = 0x77;
  hq.device = (char *)"cpu0";
  hq.segment_log2 = 10;
  Wave__V1__Response *r = td_hash_req(s, 3, &hq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  r = td_wait_job(s, job);
  Wave__V1__JobInfo *ji = r->job;
  ck_assert_int_eq(ji->state, WAVE__V1__JOB_STATE__FAILED);
  ck_assert_uint_eq(ji->done, 2048);
  ck_assert_ptr_nonnull(ji->error);
  ck_assert_int_eq(ji->error->code, WAVE_EDEVFAULT);
  ck_assert_ptr_nonnull(strstr(ji->error->message, "cpu0"));
  wave__v1__response__free_unpacked(r, NULL);
  /* later work for cpu0 fails at once */
  td_expect_error(td_reduce(s, 4, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM, &c,
                            1, NULL, 0, "cpu0"), WAVE_EDEVFAULT, 4);
  td_expect_error(td_hash(s, 5, "closed", 0, 64, 0, 0, 0, 0x78, "cpu0"),
                  WAVE_EDEVFAULT, 5);
  /* status: cpu0 faulted, with the reason; cpu1 not */
  r = td_status(s, 6);
  ck_assert_uint_eq(r->status->n_devices, 2);
  ck_assert_int_eq(r->status->devices[0]->faulted, 1);
  ck_assert_ptr_nonnull(strstr(r->status->devices[0]->fault,
                               "injected fault"));
  ck_assert_int_eq(r->status->devices[1]->faulted, 0);
  wave__v1__response__free_unpacked(r, NULL);
  /* cpu1 serves, also when the daemon picks (it must not pick cpu0) */
  for (uint64_t id = 7; id <= 9; id++) {
    r = td_reduce(s, id, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM, &c, 1, NULL,
                  0, id == 7 ? "cpu1" : NULL);
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
    ck_assert_uint_eq(r->reduce->bits[0], 26);
    ck_assert_str_eq(r->reduce->device, "cpu1");
    wave__v1__response__free_unpacked(r, NULL);
  }
  r = td_hash(s, 10, "closed", 0, 8192, 0, 0, 0, 0x79, NULL);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  r = td_wait_job(s, job);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__DONE);
  /* docs/hash.md: the batch fingerprint of [0, 2^13) under "closed" */
  const uint64_t seg0 = 0x57a520b5d26aa046ull;
  ck_assert_uint_eq(r->job->result->job_fingerprint,
                    wv_fnv1a64_u64(WV_FNV_OFFSET, &seg0, 1));
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

START_TEST(version_and_help)
{
  td_daemon d;
  td_prepare(&d, NULL);
  const char *v[] = {"--version", NULL};
  td_spawn(&d, v, 0);
  ck_assert_int_eq(WEXITSTATUS(d.status), 0);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "wavedd " WAVE_VERSION));
  const char *h[] = {"--help", NULL};
  td_spawn(&d, h, 0);
  ck_assert_int_eq(WEXITSTATUS(d.status), 0);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "--check-config"));
  const char *none[] = {NULL};
  td_spawn(&d, none, 0);
  ck_assert_int_eq(WEXITSTATUS(d.status), 2);
  td_cleanup(&d);
}
END_TEST

static Suite *lifecycle_suite(void)
{
  Suite *s = suite_create("lifecycle");
  TCase *life = tcase_create("lifecycle");
  tcase_add_test(life, sigterm_exits_zero);
  tcase_add_test(life, bad_config_exits_nonzero);
  tcase_add_test(life, bad_pack_refuses_start);
  tcase_add_test(life, detach);
  tcase_add_test(life, fault_mid_job);
  tcase_add_test(life, aborted_handshake);
  tcase_add_test(life, version_and_help);
  suite_add_tcase(s, life);
  /* entry test_lifecycle_faulted: needs a GPU backend built in */
  TCase *fault = wvs_tcase("faulted", 600);
  tcase_add_test(fault, faulted_device);
  suite_add_tcase(s, fault);
  return s;
}

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  return wvs_run(lifecycle_suite(), CK_NORMAL);
}
