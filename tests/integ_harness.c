/* integ_harness.c - the daemon under test and the wavectl runs of the
 * integration tests (integ.h says what each does). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "integ.h"

char wv_it_dir[200];
char wv_it_urls[2][300];
static pid_t ih_daemon = -1;
static unsigned ih_seq;

/* ---- files and processes ------------------------------------------------ */

void wv_it_path(char *out, size_t n, const char *name)
{
  snprintf(out, n, "%s/%s", wv_it_dir, name);
}

void wv_it_write(const char *path, const void *data, size_t n)
{
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
  ck_assert_uint_eq(fwrite(data, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
}

char *wv_it_slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  size_t got = fread(b, 1, (size_t)n, f);
  b[got] = '\0';
  fclose(f);
  return b;
}

void wv_it_out_free(wv_it_out *o)
{
  free(o->out);
  free(o->err);
  o->out = o->err = NULL;
}

void wv_it_spawn(wv_it_proc *p, const char *const *args)
{
  const char *argv[64];
  int argc = 0;
  argv[argc++] = WAVECTL_PATH;
  for (; *args != NULL && argc < 62; args++)
    argv[argc++] = *args;
  argv[argc] = NULL;

  char name[64];
  unsigned k = ih_seq++;
  snprintf(name, sizeof name, "ctl-%d-%u.out", (int)getpid(), k);
  wv_it_path(p->po, sizeof p->po, name);
  snprintf(name, sizeof name, "ctl-%d-%u.err", (int)getpid(), k);
  wv_it_path(p->pe, sizeof p->pe, name);
  p->pid = fork();
  if (p->pid == 0) {
    int fo = open(p->po, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(p->pe, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fi = open("/dev/null", O_RDONLY);
    if (fo < 0 || fe < 0 || fi < 0)
      _exit(126);
    dup2(fi, 0);
    dup2(fo, 1);
    dup2(fe, 2);
    unsetenv("WAVE_URL");
    execv(WAVECTL_PATH, (char **)argv);
    _exit(127);
  }
}

void wv_it_collect(wv_it_proc *p, wv_it_out *o)
{
  int st;
  o->status = -1;
  if (p->pid > 0 && waitpid(p->pid, &st, 0) == p->pid)
    o->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  o->out = wv_it_slurp(p->po);
  o->err = wv_it_slurp(p->pe);
  unlink(p->po);
  unlink(p->pe);
}

void wv_it_ctlv(wv_it_out *o, const char *const *args)
{
  wv_it_proc p;
  wv_it_spawn(&p, args);
  wv_it_collect(&p, o);
}

/* The same with the arguments as a NULL-terminated list. */
void wv_it_ctl(wv_it_out *o, const char *arg, ...)
{
  const char *args[64];
  int n = 0;
  va_list ap;
  va_start(ap, arg);
  for (const char *a = arg; a != NULL; a = va_arg(ap, const char *)) {
    ck_assert_int_lt(n, 62);
    args[n++] = a;
  }
  va_end(ap);
  args[n] = NULL;
  wv_it_ctlv(o, args);
}

wave_client *wv_it_open(int t)
{
  wave_client *c;
  wave_error e = {0};
  ck_assert_int_eq(wave_client_open(&c, wv_it_urls[t], &e), 0);
  wave_client_set_timeout(c, 60000);
  return c;
}

/* The daemon still answers: a status call and a small sum succeed. */
void wv_it_alive(void)
{
  for (int t = 0; t < 2; t++) {
    wave_client *c = wv_it_open(t);
    wave_error e = {0};
    wave_status *s;
    ck_assert_msg(wave_status_get(c, &s, &e) == 0, "status: %s", e.message);
    wave_status_free(s);
    uint32_t v[3] = {1, 2, 39};
    wave_chunk ch = {v, sizeof v};
    wave_reduce_request q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &ch,
                             .n_input = 1};
    wave_reduce_result r;
    ck_assert_msg(wave_reduce(c, &q, &r, &e) == 0, "reduce: %s", e.message);
    ck_assert_uint_eq(r.bits[0], 42);
    wave_client_close(c);
  }
}

/* A bad job through wavectl: the exit status, NAME on stderr, nothing on
 * stdout, and the daemon still answering afterwards. */
void wv_it_ctl_bad(const wv_it_out *o, int status, const char *name)
{
  ck_assert_msg(o->status == status, "exit %d (want %d): %s", o->status,
                status, o->err);
  char want[64];
  snprintf(want, sizeof want, "wavectl: %s: ", name);
  ck_assert_msg(strncmp(o->err, want, strlen(want)) == 0, "stderr '%s' does "
                "not start with '%s'", o->err, want);
  ck_assert_str_eq(o->out, "");
}

/* Wait (bounded) until some device reports running == want. */
int wv_it_wait_running(wave_client *c, int want)
{
  for (int i = 0; i < 600; i++) {
    wave_status *s;
    wave_error e = {0};
    int running = 0;
    if (wave_status_get(c, &s, &e) == 0) {
      for (size_t d = 0; d < s->n_devices; d++)
        running |= s->devices[d].running;
      wave_status_free(s);
      if (running == want)
        return 1;
    }
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* ---- the daemon --------------------------------------------------------- */

static int ih_free_port(void)
{
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(s, (struct sockaddr *)&a, &len) != 0)
    return -1;
  int port = ntohs(a.sin_port);
  close(s);
  return port;
}

void wv_it_dump_log(void)
{
  char p[300];
  wv_it_path(p, sizeof p, "wavedd.log");
  char *log = wv_it_slurp(p);
  fprintf(stderr, "---- wavedd.log ----\n%s--------------------\n", log);
  free(log);
}

int wv_it_daemon_start(void)
{
  const char *src = getenv("WAVE_SOURCE_DIR");
  snprintf(wv_it_dir, sizeof wv_it_dir, "/tmp/wv-integ-XXXXXX");
  if (mkdtemp(wv_it_dir) == NULL) {
    perror("mkdtemp");
    return -1;
  }
  int port = ih_free_port();
  if (port < 0)
    return -1;
  snprintf(wv_it_urls[0], sizeof wv_it_urls[0], "ipc://%s/wavedd.sock", wv_it_dir);
  snprintf(wv_it_urls[1], sizeof wv_it_urls[1], "tcp://127.0.0.1:%d", port);

  char cfg[300], log[300];
  wv_it_path(cfg, sizeof cfg, "devices.yaml");
  wv_it_path(log, sizeof log, "wavedd.log");
  FILE *f = fopen(cfg, "w");
  if (f == NULL)
    return -1;
  fprintf(f,
          "# written by test_integration\n"
          "listen:\n  - %s\n  - %s\n"
          "auth: none\n"
          "log_level: debug\n"
          "packs:\n  dir: %s/config/packs\n  load: [small, closed]\n"
          "devices:\n"
          "  - name: cpu0\n    backend: cpu\n    threads: 2\n"
          "  - name: cpu1\n    backend: cpu\n    threads: 1\n",
          wv_it_urls[0], wv_it_urls[1], src ? src : ".");
  fclose(f);

  ih_daemon = fork();
  if (ih_daemon < 0)
    return -1;
  if (ih_daemon == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execl(WAVEDD_PATH, WAVEDD_PATH, "--config", cfg, "--foreground",
          (char *)NULL);
    _exit(127);
  }
  /* Wait until it answers on both URLs (or dies): a bound on start-up, not
   * a performance check.  Asked through wavectl, because this process must
   * not touch nng before Check forks the tests (nng is not fork-safe). */
  for (int t = 0; t < 2; t++) {
    int up = 0;
    wv_it_out o = {0};
    for (int i = 0; i < 600 && !up; i++) {
      int st;
      if (waitpid(ih_daemon, &st, WNOHANG) == ih_daemon) {
        fprintf(stderr, "wavedd exited during start-up (status 0x%x)\n", st);
        ih_daemon = -1;
        wv_it_out_free(&o);
        return -1;
      }
      wv_it_out_free(&o);
      const char *args[] = {"--timeout", "250", "status", "--url",
                            wv_it_urls[t], NULL};
      wv_it_ctlv(&o, args);
      up = o.status == 0;
    }
    if (!up)
      fprintf(stderr, "wavedd does not answer on %s: %s\n", wv_it_urls[t],
              o.err);
    wv_it_out_free(&o);
    if (!up) {
      kill(ih_daemon, SIGKILL);
      waitpid(ih_daemon, NULL, 0);
      ih_daemon = -1;
      return -1;
    }
  }
  return 0;
}

/* SIGTERM, then the daemon must exit 0 (graceful shutdown). */
int wv_it_daemon_stop(void)
{
  if (ih_daemon <= 0)
    return -1;
  kill(ih_daemon, SIGTERM);
  int st = 0;
  for (int i = 0; i < 600; i++) {
    if (waitpid(ih_daemon, &st, WNOHANG) == ih_daemon) {
      ih_daemon = -1;
      if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
      fprintf(stderr, "wavedd exit status 0x%x after SIGTERM\n", st);
      return -1;
    }
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "wavedd did not exit within 60 s of SIGTERM; killing it\n");
  kill(ih_daemon, SIGKILL);
  waitpid(ih_daemon, &st, 0);
  ih_daemon = -1;
  return -1;
}

/* Remove the temporary folder and whatever the tests left in it. */
void wv_it_cleanup_dir(void)
{
  DIR *d = opendir(wv_it_dir);
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    char p[600];
    snprintf(p, sizeof p, "%s/%s", wv_it_dir, de->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(wv_it_dir);
}

