/* test_fdpass.c - region descriptors passed by SCM_RIGHTS (daemon/
 * fdpass.h, docs/protocol.md "Regions", docs/security.md "Regions"),
 * against the real wavedd: what a region may be (FIFOs, ptys, sockets,
 * directories and unreadable descriptors refused, the daemon never getting
 * a controlling terminal), the tickets' rules (one use, by the uid and pid
 * that passed the descriptor, capped, expiring), a client of another uid
 * keeping the file-region fast path, and a 4 GiB file reduced through
 * wavectl under the shipped configs' limits.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>

#include "bulk_harness.h"
#include "daemon_harness.h"
#include "skip.h"
#include "wave/client.h"

/* A memfd of n bytes, written (no holes), sealed with seals. */
static int tfp_memfd(const char *name, size_t n, int seals)
{
  int fd = memfd_create(name, MFD_ALLOW_SEALING | MFD_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)n), 0);
  char *b = calloc(1, n);
  memset(b, 7, n);
  ck_assert_int_eq(pwrite(fd, b, n, 0), (ssize_t)n);
  free(b);
  if (seals)
    ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
  return fd;
}

/* The tty field (7th) of /proc/<pid>/stat. */
static long tfp_tty_nr(pid_t pid)
{
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  ck_assert_ptr_nonnull(p);
  char state;
  long ppid, pgrp, session, tty;
  ck_assert_int_eq(sscanf(p + 1, " %c %ld %ld %ld %ld", &state, &ppid, &pgrp,
                          &session, &tty), 5);
  return tty;
}

/* What a region may be (issue 22): a FIFO with no writer, a pty slave, a
 * socket, a directory, a descriptor not open for reading, and side-socket
 * messages with no or two descriptors are all refused with REGION naming
 * what they are; the daemon never gets a controlling terminal and serves
 * on. */
START_TEST(region_not_files)
{
  td_daemon d;
  bh_start(&d, 1, NULL);
  nng_socket s = td_dial(d.ipc);
  char fifo[256];
  snprintf(fifo, sizeof fifo, "%s/fifo", d.dir);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  int ff = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);  /* no writer */
  ck_assert_int_ge(ff, 0);
  for (int kind = 0; kind < 3; kind++)  /* mapped, copy, file */
    bh_expect(bh_register_fd(d.ipc, s, ff, 0, kind > 0, kind == 2),
              WAVE_EREGION, "a FIFO");
  int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ck_assert_int_ge(m, 0);
  ck_assert_int_eq(grantpt(m), 0);
  ck_assert_int_eq(unlockpt(m), 0);
  int pts = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
  ck_assert_int_ge(pts, 0);
  bh_expect(bh_register_fd(d.ipc, s, pts, 0, 1, 1), WAVE_EREGION,
            "character device");
  ck_assert_int_eq(tfp_tty_nr(d.pid), 0);
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  bh_expect(bh_register_fd(d.ipc, s, sv[0], 0, 1, 1), WAVE_EREGION,
            "a socket");
  int dir = open(d.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ck_assert_int_ge(dir, 0);
  bh_expect(bh_register_fd(d.ipc, s, dir, 0, 1, 1), WAVE_EREGION,
            "a directory");
  char file[256];
  snprintf(file, sizeof file, "%s/rows", d.dir);
  int fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ck_assert_int_eq(write(fd, "abcdefgh", 8), 8);
  int wr = open(file, O_WRONLY | O_CLOEXEC);
  bh_expect(bh_register_fd(d.ipc, s, wr, 0, 1, 1), WAVE_EREGION,
            "O_WRONLY");
  int op = open(file, O_PATH | O_CLOEXEC);
  bh_expect(bh_register_fd(d.ipc, s, op, 0, 1, 1), WAVE_EREGION, "O_PATH");
  /* the side socket takes exactly one descriptor a message */
  uint8_t t[16];
  char msg[256];
  ck_assert_int_eq(bh_pass_fd(d.ipc, fd, 2, t, msg, sizeof msg),
                   WAVE_EREGION);
  ck_assert_ptr_nonnull(strstr(msg, "exactly one descriptor"));
  ck_assert_int_eq(bh_pass_fd(d.ipc, fd, 0, t, msg, sizeof msg),
                   WAVE_EREGION);
  ck_assert_ptr_nonnull(strstr(msg, "exactly one descriptor"));
  /* and it serves on: a file region of the same file */
  Wave__V1__Response *r = bh_register_fd(d.ipc, s, fd, 0, 1, 1);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REGION);
  ck_assert(r->region->file);
  wave__v1__response__free_unpacked(r, NULL);
  ck_assert_int_eq(tfp_tty_nr(d.pid), 0);
  td_good(s);
  nng_close(s);
  close(ff);
  close(pts);
  close(m);
  close(sv[0]);
  close(sv[1]);
  close(dir);
  close(wr);
  close(op);
  close(fd);
  td_stop_ok(&d);
}
END_TEST

/* Tickets: one use, only by the uid and pid that passed the descriptor,
 * a bounded number waiting per uid, and the unclaimed ones closed after
 * WD_FDPASS_TTL_MS (5 s). */
START_TEST(region_tickets)
{
  td_daemon d;
  bh_start(&d, 1, NULL);
  int fd = tfp_memfd("ticket", 4096, F_SEAL_SHRINK | F_SEAL_GROW);
  uint8_t t[16], bogus[16] = {1, 2, 3};
  ck_assert_int_eq(bh_pass_fd(d.ipc, fd, 1, t, NULL, 0), 0);
  /* another process (same uid) cannot spend it (forked before this one
   * uses nng: a child of a process with nng's threads has none) */
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    nng_socket cs = td_dial(d.ipc);
    Wave__V1__Response *r = bh_register(cs, t, NULL, 0, 0, 0);
    int ok = r->body_case == WAVE__V1__RESPONSE__BODY_ERROR &&
             r->error->code == WAVE_EREGION &&
             strstr(r->error->message, "was passed by uid") != NULL;
    if (!ok)
      fprintf(stderr, "child got: %s\n",
              r->body_case == WAVE__V1__RESPONSE__BODY_ERROR
                  ? r->error->message : "a region");
    _exit(ok ? 0 : 1);
  }
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "another pid took "
                "the ticket");
  nng_socket s = td_dial(d.ipc);
  bh_expect(bh_register(s, bogus, NULL, 0, 0, 0), WAVE_EREGION,
            "no descriptor waits");
  Wave__V1__Response *r = bh_register(s, t, NULL, 0, 0, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REGION);
  wave__v1__response__free_unpacked(r, NULL);
  bh_expect(bh_register(s, t, NULL, 0, 0, 0), WAVE_EREGION,
            "no descriptor waits");  /* once */
  /* an unclaimed descriptor is closed: the write end of a pipe, whose read
   * end sees EOF once the daemon lets go of it */
  int pp[2];
  ck_assert_int_eq(pipe2(pp, O_CLOEXEC | O_NONBLOCK), 0);
  ck_assert_int_eq(bh_pass_fd(d.ipc, pp[1], 1, t, NULL, 0), 0);
  close(pp[1]);
  char c;
  ck_assert_int_eq(read(pp[0], &c, 1), -1);  /* the daemon holds it */
  ck_assert_int_eq(errno, EAGAIN);
  /* at most 32 waiting per uid (the pipe's is one) */
  int k, rc = 0;
  char msg[256];
  uint8_t t2[16];
  for (k = 1; k < 40 && rc == 0; k++)
    rc = bh_pass_fd(d.ipc, fd, 1, t2, msg, sizeof msg);
  ck_assert_int_eq(rc, WAVE_EBUSY);
  ck_assert_int_eq(k, 33);
  ck_assert_ptr_nonnull(strstr(msg, "not yet registered"));
  struct pollfd pf = {.fd = pp[0], .events = POLLIN};
  ck_assert_int_eq(poll(&pf, 1, 60000), 1);  /* closed: POLLHUP */
  ck_assert_int_eq(read(pp[0], &c, 1), 0);
  /* the others expire with it: room again */
  for (k = 0; k < 600 && (rc = bh_pass_fd(d.ipc, fd, 1, t2, NULL, 0)) != 0;
       k++)
    usleep(10000);
  ck_assert_int_eq(rc, 0);
  bh_expect(bh_register(s, t, NULL, 0, 0, 0), WAVE_EREGION,
            "no descriptor waits");
  close(pp[0]);
  td_good(s);
  nng_close(s);
  close(fd);
  td_stop_ok(&d);
}
END_TEST

/* Another uid (the systemd unit's arrangement: daemon and client are
 * different users): a process running as nobody registers a file it can
 * read (root's, mode 0644) and gets a *file region* (the fast path, not a
 * copy) with the bits root computes; root cannot spend its ticket. */
START_TEST(region_other_uid)
{
  struct passwd *pw = getpwnam("nobody");
  if (getuid() != 0 || pw == NULL)
    WVS_SKIP("region_other_uid: needs root and user nobody to drop "
             "privileges");
  td_daemon d;
  bh_start(&d, 1, NULL);
  char file[256];
  snprintf(file, sizeof file, "%s/rows.raw", d.dir);
  size_t rows = 300000;
  uint32_t *p = malloc(rows * 4);
  bh_fill(p, rows, 17, 0);
  uint32_t want = 0;
  for (size_t i = 0; i < rows; i++)
    want += p[i];
  int w = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ck_assert_int_eq(write(w, p, rows * 4), (ssize_t)(rows * 4));
  close(w);
  int pfd[2], go[2];
  ck_assert_int_eq(pipe(pfd), 0);
  ck_assert_int_eq(pipe(go), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(pfd[0]);
    if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 ||
        setuid(pw->pw_uid) != 0)
      _exit(10);
    wave_client *c;
    wave_error e;
    if (wave_client_open(&c, d.ipc, &e) != 0)
      _exit(11);
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    wave_region *rg;
    if (fd < 0 || wave_region_file_fd(c, fd, 0, "nobody", &rg, &e) != 0) {
      fprintf(stderr, "nobody: %s\n", e.message);
      _exit(12);
    }
    wave_extent x = {rg, 0, rows * 4};
    wave_region_reduce q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &x,
                            .n_input = 1};
    wave_reduce_result res;
    if (wave_reduce_region(c, &q, &res, &e) != 0)
      _exit(13);
    nng_socket ss = td_dial(d.ipc);
    Wave__V1__Response *st = td_status(ss, 3);
    int one = st->status->n_regions == 1;
    uint8_t t[16];
    int passed = bh_pass_fd(d.ipc, fd, 1, t, NULL, 0);
    char out[200];
    int n = snprintf(out, sizeof out, "%u %d %d %d ", (unsigned)res.bits[0],
                     one && st->status->regions[0]->file,
                     one && st->status->regions[0]->copied, passed);
    for (int i = 0; i < 16; i++)
      n += snprintf(out + n, sizeof out - (size_t)n, "%02x", t[i]);
    wave__v1__response__free_unpacked(st, NULL);
    if (write(pfd[1], out, (size_t)n) != n)
      _exit(15);
    close(pfd[1]);
    /* stay (the ticket's pid) until root has tried the ticket */
    char c1;
    close(go[1]);
    if (read(go[0], &c1, 1) < 0)
      _exit(16);
    nng_close(ss);
    wave_client_close(c);
    _exit(0);
  }
  close(pfd[1]);
  close(go[0]);
  char got[256] = {0};
  size_t n = 0;
  ssize_t k;
  while ((k = read(pfd[0], got + n, sizeof got - 1 - n)) > 0)
    n += (size_t)k;
  close(pfd[0]);
  unsigned bits, file_rg, copied;
  int passed;
  char hex[40] = "";
  ck_assert_msg(sscanf(got, "%u %u %u %d %32s", &bits, &file_rg, &copied,
                       &passed, hex) == 5, "child said '%s'", got);
  ck_assert_uint_eq(bits, want);
  ck_assert_msg(file_rg == 1 && copied == 0, "nobody's region is not a file "
                "region (file %u, copied %u)", file_rg, copied);
  ck_assert_int_eq(passed, 0);
  uint8_t t[16];
  for (int i = 0; i < 16; i++)
    ck_assert_int_eq(sscanf(hex + 2 * i, "%2hhx", &t[i]), 1);
  nng_socket s = td_dial(d.ipc);
  char needle[64];
  snprintf(needle, sizeof needle, "passed by uid %u", (unsigned)pw->pw_uid);
  bh_expect(bh_register(s, t, NULL, 0, 1, 1), WAVE_EREGION, needle);
  close(go[1]);  /* the child may go */
  int st;
  waitpid(pid, &st, 0);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed: %d",
                WEXITSTATUS(st));
  nng_close(s);
  free(p);
  td_stop_ok(&d);
}
END_TEST


/* The limits: block of a shipped config file (under the source tree). */
static void tfp_limits(const char *rel, char *out, size_t n)
{
  const char *src = getenv("WAVE_SOURCE_DIR");
  char path[512], line[512];
  snprintf(path, sizeof path, "%s/%s", src ? src : "..", rel);
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
  size_t k = 0;
  int in = 0;
  out[0] = '\0';
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "limits:", 7) == 0)
      in = 1;
    else if (in && line[0] != ' ' && line[0] != '#' && line[0] != '\n')
      break;
    if (in)
      k += (size_t)snprintf(out + k, n - k, "%s", line);
  }
  fclose(f);
  ck_assert_msg(strstr(out, "max_job_rows") != NULL, "%s: no limits.max_job_"
                "rows found", path);
}

/* A file of 4 GiB and one row (sparse: it is a file region, read with
 * pread, which costs the daemon no memory for the holes) reduces through
 * wavectl under the limits of config/devices.yaml and of the installed
 * config: max_job_rows bounds the rows held in the daemon's memory, not
 * those it reads from a file (issue 19). */
START_TEST(wavectl_4gib_file)
{
  static const char *const cfgs[] = {"config/devices.yaml",
                                     "config/devices.installed.yaml.in"};
  const char *bin = getenv("WAVE_BINARY_DIR");
  for (int k = 0; k < 2; k++) {
    td_daemon d;
    td_prepare(&d, NULL);
    char lim[2048], text[4096];
    tfp_limits(cfgs[k], lim, sizeof lim);
    snprintf(text, sizeof text,
             "listen: [\"%s\"]\n%s"
             "packs:\n  load: []\n"
             "devices:\n  - {name: cpu0, backend: cpu, threads: 0}\n",
             d.ipc, lim);
    td_write(d.cfg, text);
    if (td_start(&d) != 0)
      ck_abort_msg("wavedd did not start:\n%s", td_stderr(&d));
    char file[300];
    snprintf(file, sizeof file, "%s/big.raw", d.dir);
    uint64_t bytes = (4ull << 30) + 4, rows = bytes / 4;
    int fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert_int_eq(ftruncate(fd, (off_t)bytes), 0);
    uint32_t want = 0;
    for (int i = 0; i < 64; i++) {  /* rows here and there, the last too */
      uint64_t row = i == 63 ? rows - 1 : (uint64_t)i * 16777259u % rows;
      uint32_t v = 0x9e3779b9u * (uint32_t)(i + 1);
      uint32_t had;
      ck_assert_int_eq(pread(fd, &had, 4, (off_t)(row * 4)), 4);
      ck_assert_int_eq(pwrite(fd, &v, 4, (off_t)(row * 4)), 4);
      want += v - had;
    }
    close(fd);
    char cmd[1024], out[2048];
    snprintf(cmd, sizeof cmd, "%s/wavectl --url %s submit reduce --op sum "
             "--dtype uint32 --input %s 2>&1", bin ? bin : ".", d.ipc, file);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t m = fread(out, 1, sizeof out - 1, p);
    out[m] = '\0';
    int st = pclose(p);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s (%s): exit %d: "
                  "%s", cfgs[k], cmd, WEXITSTATUS(st), out);
    char need[128];
    snprintf(need, sizeof need, "sum uint32 = %u ", want);
    ck_assert_msg(strstr(out, need) != NULL, "%s: want '%s', got %s",
                  cfgs[k], need, out);
    snprintf(need, sizeof need, "rows selected: %llu of %llu",
             (unsigned long long)rows, (unsigned long long)rows);
    ck_assert_msg(strstr(out, need) != NULL, "%s: %s", cfgs[k], out);
    /* a file region, read by the job: no copy in the daemon */
    ck_assert_msg(strstr(td_stderr(&d), "kept open, read by its jobs") !=
                  NULL, "%s: not a file region", cfgs[k]);
    unlink(file);
    td_stop_ok(&d);
  }
}
END_TEST

/* ---- issue 35 finding 1: the silent cannot hold the side socket -------- */

/* A child that keeps n silent connections to the side socket of ipc_url
 * open, as uid (-1: ours), re-opening each the daemon closes, until its
 * parent closes *stop.  Returns once the first n were tried. */
static pid_t tfp_flood(const char *ipc_url, int n, uid_t uid, gid_t gid,
                      int *stop)
{
  int st[2], rd[2];
  ck_assert_int_eq(pipe(st), 0);
  ck_assert_int_eq(pipe(rd), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(st[1]);
    close(rd[0]);
    if (uid != (uid_t)-1 &&
        (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0))
      _exit(10);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (snprintf(sa.sun_path, sizeof sa.sun_path, "%s.fd", ipc_url + 6) >=
        (int)sizeof sa.sun_path)
      _exit(11);  /* a path too long for a socket */
    struct pollfd pf[129];
    for (int i = 0; i < n; i++)
      pf[i] = (struct pollfd){.fd = -1, .events = POLLIN};
    pf[n] = (struct pollfd){.fd = st[0], .events = POLLIN};
    for (int said = 0;; said = 1) {
      for (int i = 0; i < n; i++)
        if (pf[i].fd < 0) {
          pf[i].fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
          if (connect(pf[i].fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            close(pf[i].fd);
            pf[i].fd = -1;
          }
        }
      if (!said) {
        (void)!write(rd[1], "r", 1);
        close(rd[1]);
      }
      poll(pf, (nfds_t)n + 1, 20);
      if (pf[n].revents)
        _exit(0);
      for (int i = 0; i < n; i++)
        if (pf[i].fd >= 0 && pf[i].revents) {
          close(pf[i].fd);
          pf[i].fd = -1;
        }
      usleep(20000);  /* re-open as an attacker would, not a busy loop */
    }
  }
  close(st[0]);
  close(rd[1]);
  char c;
  ck_assert_int_eq(read(rd[0], &c, 1), 1);
  close(rd[0]);
  *stop = st[1];
  return pid;
}

static void tfp_flood_end(pid_t pid, int stop)
{
  close(stop);
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "flood child: %d",
                WEXITSTATUS(st));
}

/* wavectl's sum of file; its output into out. */
static int tfp_wavectl(const td_daemon *d, const char *file, char *out,
                      size_t n)
{
  const char *bin = getenv("WAVE_BINARY_DIR");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s/wavectl --url %s submit reduce --op sum "
           "--dtype uint32 --input %s 2>&1", bin ? bin : ".", d->ipc, file);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t m = fread(out, 1, n - 1, p);
  out[m] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 200;
}

/* A file of 100000 random uint32 rows in the daemon's folder; need gets
 * the line wavectl prints for its sum. */
static void tfp_rows_file(td_daemon *d, char *file, size_t nf, char *need,
                         size_t nn)
{
  snprintf(file, nf, "%s/rows.raw", d->dir);
  size_t rows = 100000;
  uint32_t *p = malloc(rows * 4), want = 0;
  bh_fill(p, rows, 35, 0);
  for (size_t i = 0; i < rows; i++)
    want += p[i];
  int w = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ck_assert_int_eq(write(w, p, rows * 4), (ssize_t)(rows * 4));
  close(w);
  free(p);
  snprintf(need, nn, "sum uint32 = %u ", want);
}

/* 80 silent side connections of our own uid, re-opened as they close:
 * wavectl sends the rows instead, says so, and gets the same sum. */
START_TEST(side_socket_silent)
{
  td_daemon d;
  bh_start(&d, 1, NULL);
  char file[300], out[4096], need[128];
  tfp_rows_file(&d, file, sizeof file, need, sizeof need);
  int stop;
  pid_t fl = tfp_flood(d.ipc, 80, (uid_t)-1, 0, &stop);
  int rc = tfp_wavectl(&d, file, out, sizeof out);
  ck_assert_msg(rc == 0 && strstr(out, need), "exit %d: %s", rc, out);
  ck_assert_msg(strstr(out, "sending the rows instead") &&
                strstr(out, "path: rows (fallback: "), "no fallback said: %s",
                out);
  tfp_flood_end(fl, stop);
  td_stop_ok(&d);
}
END_TEST

/* The same flood as nobody (root drops to it): root's descriptor passes
 * and its file region are untouched (one uid at its bound cannot refuse
 * another). */
START_TEST(side_socket_other_uid)
{
  struct passwd *pw = getpwnam("nobody");
  if (getuid() != 0 || pw == NULL)
    WVS_SKIP("side_socket_other_uid: needs root and user nobody for the "
             "other uid's flood");
  td_daemon d;
  bh_start(&d, 1, NULL);
  char file[300], out[4096], need[128];
  tfp_rows_file(&d, file, sizeof file, need, sizeof need);
  int stop;
  pid_t fl = tfp_flood(d.ipc, 80, pw->pw_uid, pw->pw_gid, &stop);
  int fd = tfp_memfd("other", 4096, F_SEAL_SHRINK | F_SEAL_GROW), ok = 0;
  char msg[256] = "";
  for (int i = 0; i < 20; i++) {
    uint8_t t[16];
    if (bh_pass_fd(d.ipc, fd, 1, t, msg, sizeof msg) == 0)
      ok++;
  }
  ck_assert_msg(ok >= 19, "%d of 20 passes (%s)", ok, msg);
  int rc = tfp_wavectl(&d, file, out, sizeof out);
  ck_assert_msg(rc == 0 && strstr(out, need), "exit %d: %s", rc, out);
  ck_assert_msg(strstr(out, "path: rows") == NULL, "root fell back: %s",
                out);
  tfp_flood_end(fl, stop);
  close(fd);
  td_stop_ok(&d);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("fdpass");
  TCase *tc = tcase_create("fdpass");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, region_not_files);
  tcase_add_test(tc, region_tickets);
  tcase_add_test(tc, wavectl_4gib_file);
  tcase_add_test(tc, side_socket_silent);
  suite_add_tcase(s, tc);
  /* entry test_fdpass_other_uid: root drops to nobody */
  TCase *uid = wvs_tcase("other_uid", 300);
  tcase_add_test(uid, region_other_uid);
  tcase_add_test(uid, side_socket_other_uid);
  suite_add_tcase(s, uid);
  return wvs_run(s, CK_NORMAL);
}
