/* test_front.c - hostile and careless clients against the real wavedd
 * (issue 12, daemon/net/front.c, peer.c, listen.c, sockpath.c): a peer that
 * never reads its replies, a peer stalled inside a partial message, 200
 * parked polls from one connection, the nng 1.5.2 aborted-handshake attack
 * on the ipc listener, another user squatting the socket path, the socket's
 * mode and folder, and the signals.
 *
 * Peers that misbehave are raw unix sockets speaking the SP framing by hand
 * (8-byte handshake, then per message nng's ipc framing: a type byte 1, an
 * 8-byte big-endian length, the 4-byte request id and the body); the well-behaved clients are nng REQ sockets.  "Answered" means
 * before the probe's timeout (TF_PROBE_MS, below libwaveclient's default
 * 30 s), never a measured time.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "daemon_harness.h"
#include "skip.h"
#include "wave/error.h"

#define TF_PROBE_MS 20000
#define TF_WAIT_TRIES 600  /* x 100 ms: bounded waits for a log line */

static const uint8_t tft_hello[8] = {0, 'S', 'P', 0, 0x00, 0x30, 0, 0};

static void tft_sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static const char *tft_path(const td_daemon *d)
{
  return d->ipc + strlen("ipc://");
}

/* A raw unix connection to path; with hello, the SP handshake done. */
static int tft_raw(const char *path, int hello)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  if (!hello)
    return fd;
  ck_assert_int_eq(write(fd, tft_hello, 8), 8);
  uint8_t b[8];
  size_t got = 0;
  while (got < 8) {
    ssize_t r = read(fd, b + got, 8 - got);
    ck_assert_int_gt(r, 0);
    got += (size_t)r;
  }
  ck_assert_int_eq(b[1], 'S');
  return fd;
}

/* One SP frame holding a StatusRequest with request id rid. */
static size_t tft_status_frame(uint8_t *out, size_t n, uint32_t rid)
{
  Wave__V1__StatusRequest st = WAVE__V1__STATUS_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = rid;
  rq.body_case = WAVE__V1__REQUEST__BODY_STATUS;
  rq.status = &st;
  size_t len = wave__v1__request__get_packed_size(&rq);
  ck_assert_uint_le(13 + len, n);
  uint64_t total = 4 + len;
  out[0] = 1;  /* nng ipc: a message */
  for (int i = 0; i < 8; i++)
    out[1 + i] = (uint8_t)(total >> (56 - 8 * i));
  uint32_t id = rid | 0x80000000u;
  for (int i = 0; i < 4; i++)
    out[9 + i] = (uint8_t)(id >> (24 - 8 * i));
  wave__v1__request__pack(&rq, out + 13);
  return 13 + len;
}

/* A status request on a fresh REQ socket: 1 when answered within
 * TF_PROBE_MS; the reply's pipe id in *pipe when asked. */
static int tft_probe_on(nng_socket s, uint64_t id, uint32_t *pipe)
{
  Wave__V1__StatusRequest st = WAVE__V1__STATUS_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = id;
  rq.body_case = WAVE__V1__REQUEST__BODY_STATUS;
  rq.status = &st;
  size_t len = wave__v1__request__get_packed_size(&rq);
  nng_ctx ctx;
  nng_aio *aio;
  nng_msg *m;
  ck_assert_int_eq(nng_ctx_open(&ctx, s), 0);
  ck_assert_int_eq(nng_aio_alloc(&aio, NULL, NULL), 0);
  ck_assert_int_eq(nng_msg_alloc(&m, len), 0);
  wave__v1__request__pack(&rq, nng_msg_body(m));
  nng_aio_set_timeout(aio, TF_PROBE_MS);
  nng_aio_set_msg(aio, m);
  nng_ctx_send(ctx, aio);
  nng_aio_wait(aio);
  int ok = 0;
  if (nng_aio_result(aio) != 0) {
    nng_msg_free(nng_aio_get_msg(aio));
  } else {
    nng_ctx_recv(ctx, aio);
    nng_aio_wait(aio);
    if (nng_aio_result(aio) == 0) {
      m = nng_aio_get_msg(aio);
      Wave__V1__Response *r =
          wave__v1__response__unpack(NULL, nng_msg_len(m), nng_msg_body(m));
      ok = r != NULL && r->body_case == WAVE__V1__RESPONSE__BODY_STATUS &&
           r->id == id;
      if (pipe != NULL)
        *pipe = nng_pipe_id(nng_msg_get_pipe(m));
      if (r != NULL)
        wave__v1__response__free_unpacked(r, NULL);
      nng_msg_free(m);
    }
  }
  nng_aio_free(aio);
  nng_ctx_close(ctx);
  return ok;
}

static int tft_probe(const char *url, uint64_t id)
{
  nng_socket s;
  ck_assert_int_eq(nng_req0_open(&s), 0);
  ck_assert_int_eq(nng_dial(s, url, NULL, NNG_FLAG_NONBLOCK), 0);
  int ok = tft_probe_on(s, id, NULL);
  nng_close(s);
  return ok;
}

/* How often the daemon's log holds needle. */
static int tft_count(const td_daemon *d, const char *needle)
{
  int n = 0;
  for (const char *p = td_stderr(d); (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

/* Wait (bounded: tries x 100 ms) until the log holds needle n times. */
static int tft_await_n(const td_daemon *d, const char *needle, int n,
                      int tries)
{
  for (int i = 0; i < tries; i++) {
    if (tft_count(d, needle) >= n)
      return 1;
    tft_sleep_ms(100);
  }
  return 0;
}

static int tft_await(const td_daemon *d, const char *needle, int n)
{
  return tft_await_n(d, needle, n, TF_WAIT_TRIES);
}

/* 1 when the peer closed fd (EOF or reset) within the bounded wait. */
static int tft_closed_by_peer(int fd)
{
  for (int i = 0; i < TF_WAIT_TRIES; i++) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) == 1) {
      char b[4096];
      ssize_t r = read(fd, b, sizeof b);
      if (r == 0 || (r < 0 && errno == ECONNRESET))
        return 1;
    }
  }
  return 0;
}

/* A poll's aio: phase 1 once its request is sent, 2 once answered. */
typedef struct tft_poll {
  atomic_int phase;
} tft_poll;

static void tft_poll_cb(void *arg)
{
  tft_poll *p = arg;
  int one = 1;
  atomic_compare_exchange_strong(&p->phase, &one, 2);
}

/* ---- per connection ------------------------------------------------------ */

/* A peer pipelines status requests and never reads a reply: its replies
 * fill the socket buffers and its contexts wait.  Others are answered. */
START_TEST(never_reading_peer)
{
  td_daemon d;
  td_prepare(&d, NULL);
  /* nng 1.5.2 may lose a reply of this peer's as it closes: suppressed for
   * this daemon only (tests/lsan-nng152.supp says why) */
  const char *src = getenv("WAVE_SOURCE_DIR");
  char supp[512];
  snprintf(supp, sizeof supp, "suppressions=%s/tests/lsan-nng152.supp",
           src != NULL ? src : ".");
  setenv("LSAN_OPTIONS", supp, 1);
  int started = td_start(&d);
  unsetenv("LSAN_OPTIONS");
  ck_assert_msg(started == 0, "did not start:\n%s", td_stderr(&d));
  int fd = tft_raw(tft_path(&d), 1);
  fcntl(fd, F_SETFL, O_NONBLOCK);
  uint8_t fr[256];
  size_t sent = 0;
  int stuck = 0;
  for (uint32_t i = 1; i < 200000 && stuck < 20; i++) {
    size_t n = tft_status_frame(fr, sizeof fr, i);
    size_t off = 0;
    while (off < n && stuck < 20) {
      ssize_t w = write(fd, fr + off, n - off);
      if (w > 0) {
        off += (size_t)w;
        stuck = 0;
      } else if (w < 0 && errno == EAGAIN) {
        stuck++;
        tft_sleep_ms(50);
      } else {
        stuck = 99;  /* closed by the daemon: fine too */
      }
    }
    sent++;
  }
  ck_assert_uint_gt(sent, 64);
  for (int i = 0; i < 10; i++)
    ck_assert_msg(tft_probe(d.ipc, 1000 + (uint64_t)i),
                  "status probe %d not answered while a peer does not "
                  "read:\n%s", i, td_stderr(&d));
  close(fd);
  ck_assert_msg(td_stop(&d) == 0, "%s", td_stderr(&d));
  td_cleanup(&d);
}
END_TEST

/* nng 1.5.2 can hang in nng_close (daemon/net/front.c): the daemon gives
 * it 5 s, says so, and still stops with status 0.  The hook delays the
 * close past that bound, as a hung one would be. */
START_TEST(stop_stuck)
{
  td_daemon d;
  td_prepare(&d, NULL);
  setenv("WAVED_CLOSE_STALL_MS", "60000", 1);
  int started = td_start(&d);
  unsetenv("WAVED_CLOSE_STALL_MS");
  ck_assert_msg(started == 0, "did not start:\n%s", td_stderr(&d));
  ck_assert(tft_probe(d.ipc, 1));
  ck_assert_msg(td_stop(&d) == 0, "%s", td_stderr(&d));
  ck_assert_msg(tft_count(&d, "did not close within") == 1, "%s",
                td_stderr(&d));
  td_cleanup(&d);
}
END_TEST

/* A peer announces a message below the cap, sends part of it and stalls:
 * the daemon closes that connection (limits.idle_timeout_ms), and others
 * are served meanwhile. */
START_TEST(stalled_partial_message)
{
  td_daemon d;
  td_prepare(&d, "  idle_timeout_ms: 1000\n");
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  int fds[8];
  static uint8_t part[30000];
  for (int k = 0; k < 8; k++) {
    fds[k] = tft_raw(tft_path(&d), 1);
    uint8_t h[9] = {1, 0, 0, 0, 0, 0, 0, 0xea, 0x60};  /* 60000 bytes */
    ck_assert_int_eq(write(fds[k], h, 9), 9);
    ck_assert_int_eq(write(fds[k], part, sizeof part), (ssize_t)sizeof part);
  }
  ck_assert(tft_probe(d.ipc, 7));
  for (int k = 0; k < 8; k++) {
    ck_assert_msg(tft_closed_by_peer(fds[k]), "stalled connection %d still "
                  "open:\n%s", k, td_stderr(&d));
    close(fds[k]);
  }
  ck_assert_msg(tft_count(&d, "(limits.idle_timeout_ms)") >= 8, "%s",
                td_stderr(&d));
  ck_assert(tft_probe(d.ipc, 8));
  ck_assert_msg(td_stop(&d) == 0, "%s", td_stderr(&d));
  td_cleanup(&d);
}
END_TEST

/* 200 parked polls from one connection: limits.max_peer_parked of them
 * park, the rest are answered at once (the job still running), and other
 * clients are served. */
START_TEST(parked_polls_per_peer)
{
  td_daemon d;
  td_prepare(&d, "  max_peer_parked: 50\n  max_wait_ms: 50000\n");
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.ipc);
  /* detached: 200 polls at once on one connection may get it closed (and
   * nng redials and resends them), which would cancel an attached job
   * (docs/protocol.md "Job ownership") */
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  hq.pack = "closed";
  hq.count = 1ull << 40;
  hq.detach = 1;
  Wave__V1__Response *r = td_hash_req(s, 1, &hq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  enum { N = 200 };
  static nng_ctx ctx[N];
  static nng_aio *aio[N];
  static tft_poll pl[N];
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(nng_ctx_open(&ctx[i], s), 0);
    atomic_store(&pl[i].phase, 0);
    ck_assert_int_eq(nng_aio_alloc(&aio[i], tft_poll_cb, &pl[i]), 0);
    nng_aio_set_timeout(aio[i], 120000);
    Wave__V1__JobRequest jr = WAVE__V1__JOB_REQUEST__INIT;
    jr.job_id = job;
    jr.wait_ms = 50000;
    Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
    rq.version = 2;
    rq.id = 100 + (uint64_t)i;
    rq.body_case = WAVE__V1__REQUEST__BODY_JOB;
    rq.job = &jr;
    nng_msg *m;
    ck_assert_int_eq(nng_msg_alloc(&m, wave__v1__request__get_packed_size(&rq)),
                     0);
    wave__v1__request__pack(&rq, nng_msg_body(m));
    nng_aio_set_msg(aio[i], m);
    nng_ctx_send(ctx[i], aio[i]);
  }
  for (int i = 0; i < N; i++) {  /* sends complete at once */
    nng_aio_wait(aio[i]);
    ck_assert_int_eq(nng_aio_result(aio[i]), 0);
    atomic_store(&pl[i].phase, 1);
    nng_ctx_recv(ctx[i], aio[i]);
  }
  ck_assert(tft_probe(d.ipc, 9));
  /* 150 answered before the job ends (it runs until cancelled) */
  int answered = 0;
  for (int t = 0; t < TF_WAIT_TRIES && answered < N - 50; t++) {
    answered = 0;
    for (int i = 0; i < N; i++)
      answered += atomic_load(&pl[i].phase) == 2;
    if (answered < N - 50)
      tft_sleep_ms(100);
  }
  ck_assert_int_eq(answered, N - 50);
  r = td_job(s, job, 0, 1);  /* cancel: the parked 50 are answered */
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  wave__v1__response__free_unpacked(r, NULL);
  int cancelled = 0;
  for (int i = 0; i < N; i++) {
    nng_aio_wait(aio[i]);
    while (atomic_load(&pl[i].phase) != 2)
      nng_aio_wait(aio[i]);
    ck_assert_int_eq(nng_aio_result(aio[i]), 0);
    nng_msg *m = nng_aio_get_msg(aio[i]);
    Wave__V1__Response *pr =
        wave__v1__response__unpack(NULL, nng_msg_len(m), nng_msg_body(m));
    nng_msg_free(m);
    ck_assert_ptr_nonnull(pr);
    ck_assert_int_eq(pr->body_case, WAVE__V1__RESPONSE__BODY_JOB);
    cancelled += pr->job->state == WAVE__V1__JOB_STATE__CANCELLED;
    wave__v1__response__free_unpacked(pr, NULL);
    nng_aio_free(aio[i]);
    nng_ctx_close(ctx[i]);
  }
  ck_assert_int_eq(cancelled, 50);
  td_good(s);
  nng_close(s);
  ck_assert_msg(td_stop(&d) == 0, "%s", td_stderr(&d));
  td_cleanup(&d);
}
END_TEST

/* ---- the ipc listener ---------------------------------------------------- */

/* A status request on a fresh raw connection (no redial, unlike a REQ
 * socket, so a connection the daemon drops counts): 1 when answered on it
 * within TF_PROBE_MS. */
static int tft_raw_status(const char *path, uint32_t rid)
{
  int fd = tft_raw(path, 1);
  uint8_t f[256];
  size_t n = tft_status_frame(f, sizeof f, rid);
  ck_assert_int_eq(write(fd, f, n), (ssize_t)n);
  size_t got = 0;
  uint8_t r[13];  /* type, length, request id: enough to know it answered */
  while (got < sizeof r) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ssize_t k = poll(&p, 1, TF_PROBE_MS) == 1
                    ? read(fd, r + got, sizeof r - got) : 0;
    if (k <= 0)
      break;
    got += (size_t)k;
  }
  close(fd);
  uint32_t id = (uint32_t)r[9] << 24 | (uint32_t)r[10] << 16 |
                (uint32_t)r[11] << 8 | r[12];
  return got == sizeof r && r[0] == 1 && id == (rid | 0x80000000u);
}

/* Aborted handshakes (nng 1.5.2's bug, nng#1518; daemon/net/nngfix.c),
 * each followed at once by a new client on a raw connection: every new
 * client is answered on its first connection, the connected client keeps
 * its pipe, and no listener had to be recovered (a recovery is what cost
 * new clients and leaked, issue 22 finding 11).  The ASan build's
 * LeakSanitizer checks the stop (td_stop: exit 0). */
#define TF_ABORTS 40
START_TEST(aborted_handshake_attack)
{
  td_daemon d;
  td_prepare(&d, NULL);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket keep = td_dial(d.ipc);
  uint32_t pipe0 = 0, pipe = 0;
  ck_assert(tft_probe_on(keep, 1, &pipe0));
  int failed = 0;
  for (uint32_t round = 1; round <= TF_ABORTS; round++) {
    close(tft_raw(tft_path(&d), 0));  /* connect, close before the handshake */
    failed += !tft_raw_status(tft_path(&d), 100 + round);
  }
  ck_assert(tft_probe_on(keep, 2, &pipe));
  ck_assert_msg(pipe == pipe0, "the connected client was dropped (pipe %u, "
                "then %u)", pipe0, pipe);
  kill(d.pid, SIGUSR1);
  ck_assert(tft_await(&d, "info: status: up", 1));
  const char *line = strstr(td_stderr(&d), "info: status: up");
  const char *rec = strstr(line, "ipc listener recovery(ies)");
  ck_assert_ptr_nonnull(rec);
  while (rec > line && rec[-1] == ' ')
    rec--;
  while (rec > line && rec[-1] >= '0' && rec[-1] <= '9')
    rec--;
  fprintf(stderr, "aborted_handshake_attack: %d of %d new clients failed; "
          "%.80s\n", failed, TF_ABORTS, rec);
  ck_assert_msg(failed == 0, "%d of %d new clients right after an aborted "
                "handshake were not answered", failed, TF_ABORTS);
  ck_assert_msg(strncmp(rec, "0 ipc listener", 14) == 0, "a listener was "
                "recovered: %.80s", rec);
  nng_close(keep);
  int rc = td_stop(&d);
  if (rc != 0)  /* a LeakSanitizer report is longer than check's message */
    fputs(td_stderr(&d), stderr);
  ck_assert_msg(rc == 0, "wavedd did not stop cleanly (its log above)");
  struct stat st;
  ck_assert_msg(lstat(tft_path(&d), &st) != 0, "socket file left behind");
  td_cleanup(&d);
}
END_TEST

/* ---- the socket path ----------------------------------------------------- */

static uid_t tft_nobody(gid_t *gid)
{
  struct passwd *pw = getpwnam("nobody");
  ck_assert_ptr_nonnull(pw);
  *gid = pw->pw_gid;
  return pw->pw_uid;
}

/* Another user binds the socket path first: wavedd refuses to start on
 * it, and wavectl refuses to trust it. */
START_TEST(squatted_socket)
{
  if (geteuid() != 0)
    WVS_SKIP("squatted_socket: not root, cannot drop to nobody");
  td_daemon d;
  td_prepare(&d, NULL);
  gid_t gid;
  uid_t nobody = tft_nobody(&gid);
  /* the folder: root's, the group nobody's may create there (not
   * world-writable) */
  ck_assert_int_eq(chown(d.dir, 0, gid), 0);
  ck_assert_int_eq(chmod(d.dir, 0770), 0);
  int ready[2];
  ck_assert_int_eq(pipe(ready), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (setgid(gid) != 0 || setuid(nobody) != 0)
      _exit(3);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", tft_path(&d));
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 8) != 0)
      _exit(4);
    if (write(ready[1], "x", 1) != 1)
      _exit(5);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char b;
  ck_assert_int_eq(read(ready[0], &b, 1), 1);
  close(ready[0]);
  struct stat st;
  ck_assert_int_eq(lstat(tft_path(&d), &st), 0);
  ck_assert_uint_eq(st.st_uid, nobody);

  const char *const args[] = {"--config", d.cfg, "--foreground", NULL};
  ck_assert_int_eq(td_spawn(&d, args, 1), -1);
  ck_assert(WIFEXITED(d.status) && WEXITSTATUS(d.status) == 1);
  ck_assert_msg(strstr(td_stderr(&d), "belongs to uid") != NULL, "%s",
                td_stderr(&d));

  /* wavectl: the socket is not root's nor ours */
  char ctl[600], out[700];
  snprintf(ctl, sizeof ctl, "%s", td_wavedd());
  char *slash = strrchr(ctl, '/');
  snprintf(slash + 1, sizeof ctl - (size_t)(slash + 1 - ctl), "wavectl");
  snprintf(out, sizeof out, "%s/ctl.txt", d.dir);
  pid_t c = fork();
  ck_assert_int_ge(c, 0);
  if (c == 0) {
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    unsetenv("WAVE_DAEMON_UID");
    execl(ctl, ctl, "--url", d.ipc, "--timeout", "3000", "status", NULL);
    _exit(127);
  }
  int ws;
  ck_assert_int_eq(waitpid(c, &ws, 0), c);
  ck_assert(WIFEXITED(ws) && WEXITSTATUS(ws) != 0);
  FILE *f = fopen(out, "r");
  char text[2048] = "";
  ck_assert_ptr_nonnull(f);
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  ck_assert_msg(strstr(text, "belongs to uid") != NULL, "%s", text);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  td_cleanup(&d);
}
END_TEST

/* ipc_mode unset: the socket is 0660 whatever the umask; a world-writable
 * folder is refused; a missing folder is made private. */
START_TEST(socket_mode_and_folder)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char text[2048];
  char sub[200];
  snprintf(sub, sizeof sub, "%s/run", d.dir);  /* missing: created */
  snprintf(d.ipc, sizeof d.ipc, "ipc://%s/w.sock", sub);
  snprintf(text, sizeof text,
           "listen: [\"%s\"]\n"
           "packs: {dir: %s/config/packs, load: [closed]}\n"
           "devices:\n  - {name: cpu0, backend: cpu, threads: 1}\n",
           d.ipc, getenv("WAVE_SOURCE_DIR"));
  td_write(d.cfg, text);
  mode_t old = umask(0);
  int rc = td_start(&d);
  umask(old);
  ck_assert_msg(rc == 0, "did not start:\n%s", td_stderr(&d));
  struct stat st;
  ck_assert_int_eq(lstat(tft_path(&d), &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0660);
  ck_assert_int_eq(lstat(sub, &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, geteuid() == 0 ? 0750 : 0700);
  ck_assert(tft_probe(d.ipc, 3));
  ck_assert_msg(td_stop(&d) == 0, "%s", td_stderr(&d));
  ck_assert_int_ne(lstat(tft_path(&d), &st), 0);

  ck_assert_int_eq(chmod(sub, 01777), 0);  /* like /tmp */
  const char *const args[] = {"--config", d.cfg, "--foreground", NULL};
  ck_assert_int_eq(td_spawn(&d, args, 1), -1);
  ck_assert(WIFEXITED(d.status) && WEXITSTATUS(d.status) == 1);
  ck_assert_msg(strstr(td_stderr(&d), "writable by every user") != NULL,
                "%s", td_stderr(&d));
  rmdir(sub);
  td_cleanup(&d);
}
END_TEST

/* ---- signals ------------------------------------------------------------- */

/* SIGUSR1 logs a status line and the daemon keeps serving; SIGQUIT and
 * SIGTERM stop it cleanly (exit 0) and leave no socket file. */
START_TEST(signals)
{
  static const int stops[] = {SIGQUIT, SIGTERM, SIGINT};
  for (size_t k = 0; k < 3; k++) {
    td_daemon d;
    td_prepare(&d, NULL);
    ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
    kill(d.pid, SIGUSR1);
    ck_assert_msg(tft_await(&d, "info: status: up", 1), "no status line:\n%s",
                  td_stderr(&d));
    ck_assert(tft_probe(d.ipc, 4));
    kill(d.pid, stops[k]);
    int ws;
    ck_assert_int_eq(waitpid(d.pid, &ws, 0), d.pid);
    d.pid = 0;
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "signal %d: status "
                  "%d\n%s", stops[k], ws, td_stderr(&d));
    struct stat st;
    ck_assert_msg(lstat(tft_path(&d), &st) != 0, "signal %d left the socket",
                  stops[k]);
    td_cleanup(&d);
  }
}
END_TEST

static Suite *front_suite(void)
{
  Suite *s = suite_create("front");
  TCase *peer = tcase_create("peer");
  tcase_set_timeout(peer, 300);
  tcase_add_test(peer, never_reading_peer);
  tcase_add_test(peer, stalled_partial_message);
  tcase_add_test(peer, stop_stuck);
  tcase_add_test(peer, parked_polls_per_peer);
  suite_add_tcase(s, peer);
  TCase *lst = tcase_create("listener");
  tcase_set_timeout(lst, 300);
  tcase_add_test(lst, aborted_handshake_attack);
  suite_add_tcase(s, lst);
  TCase *path = tcase_create("socket");
  tcase_set_timeout(path, 300);
  tcase_add_test(path, socket_mode_and_folder);
  tcase_add_test(path, signals);
  suite_add_tcase(s, path);
  /* entry test_front_squatted: root drops to nobody */
  TCase *squat = wvs_tcase("squatted", 300);
  tcase_add_test(squat, squatted_socket);
  suite_add_tcase(s, squat);
  return s;
}

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  return wvs_run(front_suite(), CK_NORMAL);
}
