/* wdmain.c - wavedd: the command line and the start-up order, as
 * wd_main() in wvdcore: daemon/main.c calls it, and so does wavedd-test
 * (tests/wavedd_test.c) once it has registered the fake backend.
 *
 *   config (validated whole) -> packs (a malformed pack refuses start-up)
 *   -> [detach unless --foreground] -> devices open on their threads
 *   -> sockets listen -> SIGHUP/watchdog/metrics (reload.c) -> loop
 *   (packs prepared: READY) ... SIGTERM -> drain -> exit 0.
 *
 * SIGHUP is ignored from the first line on, so one that arrives while the
 * devices open never kills the daemon; reload.c handles it once the
 * sockets listen.
 *
 * Exit status: 0 after a clean stop (or a good --check-config), 2 for a bad
 * command line, config or pack, 1 when start-up fails (no device opened,
 * an address already in use) or the loop does not close cleanly.
 *
 * Descriptors: the soft RLIMIT_NOFILE is raised to the hard limit before
 * the loop, nng or a device opens anything (mn_raise_files): the default soft limit, 1024, is what
 * 60 clients with 16 file regions each use up, and each connection is one
 * more.  systemd/wavedd.service.in sets the hard limit (LimitNOFILE=);
 * status and the metrics page report the figure (connguard.c).
 *
 * Detaching forks before any thread exists (the device threads, nng's and
 * libuv's come later); the parent waits on a pipe until the child is
 * listening or has failed, so `wavedd --config f && wavectl status` works
 * and a failed start still exits nonzero.  stderr stays open for the log.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include <uv.h>

#include "daemon/token.h"
#include "daemon/net/sockpath.h"
#include "daemon/config.h"
#include "daemon/jobs/hashjob.h"
#include "daemon/log.h"
#include "daemon/reload.h"
#include "daemon/server.h"
#include "daemon/stats.h"
#include "daemon/net/tls.h"
#include "daemon/wdmain.h"
#include "core/base.h"
#include "workers/hash/hash.h"

static void mn_usage(FILE *f)
{
  fprintf(f,
          "usage: wavedd --config FILE [--foreground] [--check-config]\n"
          "       wavedd --version | --help\n"
          "\n"
          "  -c, --config FILE    devices, listen URLs, limits, packs\n"
          "                       (docs/config.md; e.g. config/devices.yaml)\n"
          "  -f, --foreground     do not detach; log to stderr\n"
          "  -n, --check-config   validate FILE and its packs, then exit\n"
          "                       (0 when valid)\n"
          "  -V, --version        print the version\n"
          "  -h, --help           this text\n"
          "\n"
          "Signals: SIGINT/SIGTERM/SIGQUIT stop taking work, finish what is "
          "in flight,\nremove the socket files, then exit 0.  SIGHUP reloads "
          "FILE, all or nothing.\nSIGUSR1 logs a status line (wavedd(8)).\n"
          "Protocol: docs/protocol.md.\n");
}

/* Fork; the parent exits with the status the child reports through the
 * pipe.  Returns the pipe's write end in the child. */
static int mn_detach(void)
{
  int fds[2];
  if (pipe(fds) != 0) {
    fprintf(stderr, "wavedd: pipe: %s\n", strerror(errno));
    exit(1);
  }
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "wavedd: fork: %s\n", strerror(errno));
    exit(1);
  }
  if (pid > 0) {
    close(fds[1]);
    unsigned char status = 1;
    ssize_t n;
    do
      n = read(fds[0], &status, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1) {  /* the child died before it could say */
      int ws = 0;
      waitpid(pid, &ws, 0);
      exit(1);
    }
    if (status == 0)
      fprintf(stderr, "wavedd: running as pid %ld\n", (long)pid);
    exit(status);
  }
  close(fds[0]);
  setsid();
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    if (null > STDERR_FILENO)
      close(null);
  }
  return fds[1];
}

/* Soft RLIMIT_NOFILE up to the hard limit, logged either way. */
static void mn_raise_files(void)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
    wd_warn("getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
    return;
  }
  rlim_t was = rl.rlim_cur;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      wd_warn("open files: cannot raise the soft limit %llu to the hard "
              "limit %llu: %s", (unsigned long long)was,
              (unsigned long long)rl.rlim_max, strerror(errno));
      return;
    }
    wd_info("open files: soft limit raised from %llu to the hard limit %llu",
            (unsigned long long)was, (unsigned long long)rl.rlim_max);
  } else {
    wd_info("open files: limit %llu (the hard limit)",
            (unsigned long long)rl.rlim_cur);
  }
  if (rl.rlim_cur < 4096)
    wd_warn("open files: a limit of %llu is low for a daemon (each "
            "connection and file region holds one; LimitNOFILE= in the unit, "
            "docs/service.md)", (unsigned long long)rl.rlim_cur);
}

static void mn_report(int fd, unsigned char status)
{
  if (fd < 0)
    return;
  ssize_t n = write(fd, &status, 1);
  (void)n;  /* the parent sees EOF either way */
  close(fd);
}

/* The command line: -1 to go on, else the exit status (usage, version). */
static int mn_args(int argc, char **argv, const char **path, int *foreground,
                   int *check)
{
  static const struct option opts[] = {
    {"config", required_argument, NULL, 'c'},
    {"foreground", no_argument, NULL, 'f'},
    {"check-config", no_argument, NULL, 'n'},
    {"version", no_argument, NULL, 'V'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  int o;
  *path = NULL;
  *foreground = *check = 0;
  while ((o = getopt_long(argc, argv, "c:fnVh", opts, NULL)) != -1) {
    switch (o) {
    case 'c': *path = optarg; break;
    case 'f': *foreground = 1; break;
    case 'n': *check = 1; break;
    case 'V': printf("wavedd %s\n", WAVE_VERSION); return 0;
    case 'h': mn_usage(stdout); return 0;
    default: mn_usage(stderr); return 2;
    }
  }
  if (optind < argc || *path == NULL) {
    if (*path == NULL)
      fprintf(stderr, "wavedd: --config FILE is required\n");
    else
      fprintf(stderr, "wavedd: unexpected argument '%s'\n", argv[optind]);
    mn_usage(stderr);
    return 2;
  }
  return -1;
}

/* Config, packs, and with --check-config the TLS dates: -1 to go on with
 * *cfg, *set and *packs, else the exit status (all freed). */
static int mn_load(const char *path, int check, wd_config **cfg,
                   wv_packset **set, wd_packs *packs)
{
  wave_error err = {0};
  *set = NULL;
  if (wd_config_load(path, cfg, &err) != 0) {
    fprintf(stderr, "wavedd: %s\n", err.message);
    return 2;
  }
  wd_log_set_level((*cfg)->log_level);
  int rc = -1;
  if (wd_packs_load(*cfg, set, packs, &err) != 0) {
    fprintf(stderr, "wavedd: %s\n", err.message);
    rc = 2;
  } else if (check && (*cfg)->tls.set) {
    char why[400];
    int dates = wd_tls_dates(&(*cfg)->tls, time(NULL), why, sizeof why);
    if (dates == -1 || dates == -2) {
      fprintf(stderr, "wavedd: %s: tls: %s\n", path, why);
      rc = 2;
    } else if (dates == 1) {
      fprintf(stderr, "wavedd: warning: %s: tls: %s\n", path, why);
    }
  }
  /* the socket folders, as the start checks them (nothing is made) */
  for (size_t i = 0; rc == -1 && check && i < (*cfg)->n_listen; i++) {
    const char *u = (*cfg)->listen[i];
    if (strncmp(u, "ipc://", 6) == 0 && wd_sockpath_check(u + 6, &err) != 0) {
      fprintf(stderr, "wavedd: %s: listen: %s\n", path, err.message);
      rc = 2;
    }
  }
  if (rc == -1 && check) {
    printf("%s: ok: %zu device(s), %zu listen URL(s), %zu pack(s)\n", path,
           (*cfg)->n_devices, (*cfg)->n_listen, packs->n);
    rc = 0;
  }
  if (rc != -1) {
    wd_packs_free(*set, packs);
    wd_config_free(*cfg);
    *cfg = NULL;
  }
  return rc;
}

/* Counters, server, listeners, service, then the loop until the server
 * has closed: 0 after a clean stop, 1 when start-up fails or the loop does
 * not close cleanly.  *ready_fd is reported to once listening (-1 after). */
static int mn_serve(const char *path, const wd_config *cfg,
                    const wd_packs *packs, int *ready_fd)
{
  wave_error err = {0};
  uv_loop_t loop;
  uv_loop_init(&loop);
  wd_server *srv = NULL;
  wd_service *svc = NULL;
  const char *names[64];
  for (size_t i = 0; i < cfg->n_devices && i < 64; i++)
    names[i] = cfg->devices[i].name;
  int rc = wd_stats_init(names, cfg->n_devices < 64 ? cfg->n_devices : 64);
  if (rc != 0)
    rc = wv_seterr(&err, rc, "no memory for the counters");
  if (rc == 0)
    rc = wd_server_init(&loop, cfg, packs, &srv, &err);
  if (rc == 0)
    rc = wd_server_listen(srv, &err);
  if (rc == 0)
    rc = wd_service_start(&loop, path, cfg, srv, &svc, &err);
  if (rc == 0)
    wd_server_serving(srv);  /* READY=1 only once the probes answer */
  if (rc != 0) {
    wd_error("cannot start: %s", err.message);
    char st[300];
    snprintf(st, sizeof st, "STATUS=cannot start: %.250s", err.message);
    wd_notify(st);
    wd_service_close(svc);
    if (srv != NULL)
      wd_server_close(srv);
    uv_run(&loop, UV_RUN_DEFAULT);
    rc = 1;
  } else {
    wd_info("wavedd %s listening: %zu device(s), %zu pack(s)", WAVE_VERSION,
            cfg->n_devices, packs->n);
    /* READY=1 follows from the server once the packs are prepared; the
     * detached parent exits as soon as we listen (status says ready) */
    mn_report(*ready_fd, 0);
    *ready_fd = -1;
    uv_run(&loop, UV_RUN_DEFAULT);
    /* the server has closed (socket files gone); now our handles */
    wd_service_close(svc);
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  wd_server_free(srv);
  wd_service_free(svc);
  wd_stats_fini();
  int lc = uv_loop_close(&loop);
  if (lc != 0) {
    wd_error("uv_loop_close: %s", uv_strerror(lc));
    rc = 1;
  }
  return rc;
}

int wd_main(int argc, char **argv)
{
  const char *path;
  int foreground, check;
  int rc = mn_args(argc, argv, &path, &foreground, &check);
  if (rc >= 0)
    return rc;
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);   /* until reload.c takes it: never a kill */
  signal(SIGUSR1, SIG_IGN);  /* nor these: no stale socket (the server */
  signal(SIGUSR2, SIG_IGN);  /* takes SIGUSR1 and SIGQUIT once it exists) */
  signal(SIGQUIT, SIG_IGN);

  wd_config *cfg = NULL;
  wv_packset *set = NULL;
  wd_packs packs;
  if ((rc = mn_load(path, check, &cfg, &set, &packs)) >= 0)
    return rc;
  mn_raise_files();
  /* auth.tokens[].generate: the absent token files, once, before serving */
  wave_error err = {0};
  if (wd_token_generate(cfg, &err) != 0) {
    fprintf(stderr, "wavedd: %s\n", err.message);
    wd_packs_free(set, &packs);
    wd_config_free(cfg);
    return 2;
  }
  int ready_fd = foreground ? -1 : mn_detach();
  rc = mn_serve(path, cfg, &packs, &ready_fd);
  mn_report(ready_fd, (unsigned char)rc);
  wd_packs_free(set, &packs);
  wd_config_free(cfg);
  if (rc == 0)
    wd_info("exit");
  return rc;
}
