/* wavectl.c - the command line client of wavedd: main(), and the commands
 * run over libwaveclient (parsing, loading and printing live in ctl_*.c).
 *
 * Exit status says who was at fault, for scripts (docs/cli.md's table,
 * checked row by row by tests/ctl_exit_test.sh): 0 ok, 1 the job or the
 * daemon refused (bad or missing input file, unknown pack, device fault), 2
 * the command line was wrong, 3 the daemon could not be reached or did not
 * answer within --timeout (which bounds the dial too), 130 a hash job
 * cancelled by Ctrl-C (top: a second Ctrl-C, ctl_top.c).  Errors print
 * one line on stderr, `wavectl: NAME: message`, NAME being the error's
 * symbol.
 *
 * status --probe exits 0 ready, 1 not ready, 3 unreachable (quietly: a
 * daemon not up yet is a probe's normal answer), 4 when the daemon answers
 * AUTH (a tcp listener and no or a wrong token; one line on stderr, so a
 * misconfigured probe is not taken for a dead daemon).  --fleet runs
 * a job over several daemons (ctl_fleet.c); top is ctl_top.c's; bench
 * (ctl_bench.c) exits 1 when a device fails a check.
 *
 * Ctrl-C during a hash job: the handler only sets a flag; the poll loop
 * (short waits, so it notices soon) sends CancelRequest and waits for the
 * daemon to report the job ended, then exits 130.  A second Ctrl-C kills
 * wavectl at once (the handler is reset to the default after the first).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/ctl.h"
#include "core/sockdir.h"
#include "core/base.h"
#include "wave/client.h"

enum { EXIT_JOB = 1, EXIT_USAGE = 2, EXIT_UNREACHABLE = 3, EXIT_AUTH = 4,
       EXIT_INTERRUPTED = 130 };

static volatile sig_atomic_t ctl_interrupted;

static void ctl_on_sigint(int sig)
{
  (void)sig;
  ctl_interrupted = 1;
  signal(SIGINT, SIG_DFL);
}

static int ctl_fail(const wave_error *e, int status)
{
  fprintf(stderr, "wavectl: %s: %s\n", wave_errname(e->code),
          e->message[0] ? e->message : wave_strerror(e->code));
  return status;
}

/* After a transport failure the connection is abandoned, not closed:
 * nng 1.5's nng_close can wait forever for a REQ pipe that keeps resending
 * a request a peer drops (the TIMEDOUT hang of issue 10), and the process
 * exits right after anyway. */
static int ctl_abandoned;

static void ctl_close(wave_client *c)
{
  if (!ctl_abandoned)
    wave_client_close(c);
}

/* The exit status for an error returned by a libwaveclient call. */
static int ctl_call_fail(const wave_error *e)
{
  if (e->code == WAVE_ETIMEDOUT || e->code == WAVE_EIO)
    ctl_abandoned = 1;
  if (e->code == WAVE_ETIMEDOUT || e->code == WAVE_EIO)
    return ctl_fail(e, EXIT_UNREACHABLE);
  return ctl_fail(e, EXIT_JOB);
}

/* Open the client: only once the command is ready to send, so that a bad
 * input file never starts a connection only to drop it mid-handshake (which
 * costs the daemon work, and nng 1.5's ipc listener worse). */
static int ctl_connect(const wv_args *a, wave_client **c)
{
  wave_error err = {0};
  wave_client_options o;
  wv_args_client_options(a, 1, &o);
  if (wave_client_open_with(c, a->url, &o, &err) != 0) {
    if (a->probe && err.code != WAVE_EARG)
      return EXIT_UNREACHABLE;  /* not up (yet): the probe's quiet answer */
    return ctl_fail(&err, err.code == WAVE_EARG ? EXIT_USAGE
                                                : EXIT_UNREACHABLE);
  }
  if (a->timeout_ms > 0)
    wave_client_set_timeout(*c, a->timeout_ms);
  return 0;
}

/* ---- submit reduce ------------------------------------------------------ */

static int ctl_load_all(const char *const *paths, size_t n, wv_format fmt,
                        wave_dtype dtype, wv_chunk_buf *bufs,
                        wave_chunk *chunks, wave_error *err)
{
  for (size_t i = 0; i < n; i++) {
    int rv = wv_load_file(paths[i], fmt, dtype, &bufs[i], err);
    if (rv != 0)
      return rv;
    chunks[i].data = bufs[i].data;
    chunks[i].bytes = bufs[i].bytes;
  }
  return 0;
}

static int ctl_is_ipc(const wv_args *a)
{
  const char *u = a->url;
  char def[160];
  if (u == NULL || u[0] == '\0')
    u = getenv("WAVE_URL");
  if (u == NULL || u[0] == '\0')
    u = wv_default_url(def, sizeof def, 1);
  return strncmp(u, "ipc://", 6) == 0;
}

/* How the rows travel.  WAVECTL_PATH (for tests, docs/cli.md) forces one
 * way so that each can be checked to give the same answer; wavectl then
 * says on stderr which way it took ("wavectl: via file").  A forced way
 * that an input cannot take (text and "-" are always parsed here; the
 * daemon takes no empty region) falls to the next, as without it. */
typedef enum ctl_path {
  CTL_AUTO = 0, CTL_MESSAGE, CTL_STREAM, CTL_MEMFD, CTL_COPY, CTL_FILE,
} ctl_path;

static const char *const ctl_path_names[] = {
  "auto", "message", "stream", "memfd", "copy", "file",
};

static int ctl_path_get(ctl_path *p)
{
  const char *v = getenv("WAVECTL_PATH");
  *p = CTL_AUTO;
  if (v == NULL || v[0] == '\0')
    return 0;
  for (size_t i = 0; i < sizeof ctl_path_names / sizeof *ctl_path_names; i++)
    if (strcmp(v, ctl_path_names[i]) == 0) {
      *p = (ctl_path)i;
      return 0;
    }
  return -1;
}

static void ctl_via(ctl_path took)
{
  if (getenv("WAVECTL_PATH") != NULL)
    fprintf(stderr, "wavectl: via %s\n", ctl_path_names[took]);
}

/* A daemon on this host: the files go into one shared-memory region, read
 * once, and the daemon reduces them where they lie.  1 when not possible
 * (text, stdin), so the caller loads and sends them; a daemon that refuses
 * regions (allow_client_shm off) gets the region's rows as messages. */
/* The job of a's inputs and masks at ext (in a region each). */
static wave_region_reduce ctl_region_job(const wv_args *a,
                                         const wave_extent *ext)
{
  return (wave_region_reduce){
    .dtype = a->dtype, .op = a->op,
    .input = ext, .n_input = a->n_inputs,
    .mask = ext + a->n_inputs, .n_mask = a->n_masks,
    .has_mask = a->n_masks > 0, .device = a->device,
    .priority = a->priority, .deadline_ms = a->deadline_ms,
  };
}

static int ctl_reduce_region(const wv_args *a, ctl_path path, int *status)
{
  wave_error err = {0};
  size_t n = a->n_inputs + a->n_masks;
  const char **paths = calloc(n + 1, sizeof *paths);
  wave_extent *ext = calloc(n + 1, sizeof *ext);
  wave_chunk *chunks = calloc(n + 1, sizeof *chunks);
  wave_region **copies = calloc(n + 1, sizeof *copies);
  wave_region *rg = NULL;
  wave_client *c = NULL;
  int rv = 1;
  if (paths == NULL || ext == NULL || chunks == NULL || copies == NULL ||
      a->format == WV_FMT_TEXT)
    goto out;
  for (size_t i = 0; i < n; i++) {
    paths[i] = i < a->n_inputs ? a->inputs[i] : a->masks[i - a->n_inputs];
    if (strcmp(paths[i], "-") == 0)
      goto out;
  }
  rv = 0;
  if ((*status = ctl_connect(a, &c)) != 0)
    goto out;
  wave_reduce_result r;
  /* 1. the daemon reads each file into its own memory: one read, like cat */
  int rc = path == CTL_MEMFD ? 1
           : wv_copy_load(c, paths, n, a->n_inputs, a->format, a->dtype,
                          path == CTL_COPY, copies, ext, &err);
  if (rc == 2 && (path == CTL_COPY || path == CTL_FILE)) {
    *status = ctl_fail(&err, EXIT_JOB);  /* forced: no other way */
    goto out;
  }
  /* The side socket refused or reset (issue 35: its connections full):
   * no region can be registered now, so the rows go as messages (or a
   * stream), said once here and in the result; the answer is the same. */
  char side[300] = "";
  if (rc == 2 && err.code == WAVE_EBUSY && path == CTL_AUTO) {
    snprintf(side, sizeof side, "%s", err.message);
    fprintf(stderr, "wavectl: %s; sending the rows instead\n", side);
  }
  if (rc == 0) {
    ctl_via(path == CTL_COPY ? CTL_COPY : CTL_FILE);
    wave_region_reduce q = ctl_region_job(a, ext);
    if (wave_reduce_region(c, &q, &r, &err) != 0)
      *status = ctl_call_fail(&err);
    else
      wv_print_reduce(stdout, &r, a->json);
    goto out;
  }
  if (rc != 1 && rc != 2) {
    *status = rc == WAVE_ETIMEDOUT || rc == WAVE_EIO ? ctl_call_fail(&err)
                                                     : ctl_fail(&err, EXIT_JOB);
    goto out;
  }
  /* 2. a memfd of ours, filled from the files and shared */
  memset(&err, 0, sizeof err);
  rc = wv_region_load(paths, n, a->n_inputs, a->format, a->dtype, &rg, ext,
                      &err);
  if (rc == 1) {
    rv = 1;  /* 3. the caller loads and sends them */
    goto out;
  }
  if (rc != 0) {
    *status = ctl_fail(&err, EXIT_JOB);
    goto out;
  }
  if (side[0] == '\0' && wave_region_register(c, rg, &err) == 0) {
    ctl_via(CTL_MEMFD);
    wave_region_reduce q = ctl_region_job(a, ext);
    if (wave_reduce_region(c, &q, &r, &err) != 0) {
      *status = ctl_call_fail(&err);
      goto out;
    }
  } else if (path == CTL_AUTO &&
             (side[0] != '\0' || err.code == WAVE_EREGION ||
              err.code == WAVE_EUNSUPPORTED || err.code == WAVE_EBUSY)) {
    if (side[0] == '\0' && err.code == WAVE_EBUSY) {
      snprintf(side, sizeof side, "%s", err.message);
      fprintf(stderr, "wavectl: %s; sending the rows instead\n", side);
    }
    ctl_via(CTL_MESSAGE);
    unsigned char *base = wave_region_data(rg);
    for (size_t i = 0; i < n; i++)
      chunks[i] = (wave_chunk){base + ext[i].offset, ext[i].bytes};
    wave_reduce_request q = {
      .dtype = a->dtype, .op = a->op,
      .input = chunks, .n_input = a->n_inputs,
      .mask = chunks + a->n_inputs, .n_mask = a->n_masks,
      .has_mask = a->n_masks > 0, .device = a->device,
      .priority = a->priority, .deadline_ms = a->deadline_ms,
    };
    if (wave_reduce(c, &q, &r, &err) != 0) {
      *status = ctl_call_fail(&err);
      goto out;
    }
  } else {
    *status = ctl_call_fail(&err);
    goto out;
  }
  wv_print_reduce_path(stdout, &r, a->json, side[0] ? "rows" : NULL, side);
out:
  ctl_close(c);  /* the daemon drops the regions with the connection */
  for (size_t i = 0; copies != NULL && i < n; i++)
    wave_region_close(copies[i]);
  wave_region_close(rg);
  free(copies);
  free(paths);
  free(ext);
  free(chunks);
  return rv;
}

/* Every input and mask file can be opened: a missing or unreadable file is
 * the job's fault (exit 1), found before any connection (the region paths
 * open the files only once connected, where an IO error would read as the
 * daemon's). */
static int ctl_inputs_readable(const wv_args *a)
{
  wave_error err = {0};
  for (size_t i = 0; i < a->n_inputs + a->n_masks; i++) {
    const char *p = i < a->n_inputs ? a->inputs[i] : a->masks[i - a->n_inputs];
    if (strcmp(p, "-") == 0)
      continue;
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);  /* a FIFO: no wait */
    if (fd < 0) {
      wv_seterr(&err, WAVE_EIO, "%s: %s", p, strerror(errno));
      return ctl_fail(&err, EXIT_JOB);
    }
    close(fd);
  }
  return 0;
}

static int ctl_reduce(wv_args *a)
{
  int rstatus = ctl_inputs_readable(a);
  if (rstatus != 0)
    return rstatus;
  wave_error derr = {0};
  if (a->dtype == WAVE_DTYPE_NONE &&  /* the .npy headers name it */
      wv_inputs_dtype(a->inputs, a->n_inputs, a->format, &a->dtype,
                      &derr) != 0)
    return ctl_fail(&derr, derr.code == WAVE_EARG ? EXIT_USAGE : EXIT_JOB);
  ctl_path path;
  if (ctl_path_get(&path) != 0) {
    fprintf(stderr, "wavectl: ARG: WAVECTL_PATH must be one of auto, "
            "message, stream, memfd, copy, file\n");
    return EXIT_USAGE;
  }
  if (path == CTL_STREAM)
    setenv("WAVE_CLIENT_STREAM", "1", 1);  /* client/client.c */
  if (!a->fleet && (path == CTL_AUTO ? ctl_is_ipc(a) : path >= CTL_MEMFD) &&
      ctl_reduce_region(a, path, &rstatus) == 0)
    return rstatus;

  wave_error err = {0};
  wave_client *c = NULL;
  int status = 0;
  size_t n = a->n_inputs + a->n_masks;
  wv_chunk_buf *bufs = calloc(n, sizeof *bufs);
  wave_chunk *chunks = calloc(n, sizeof *chunks);
  if (bufs == NULL || chunks == NULL) {
    wv_seterr(&err, WAVE_ENOMEM, NULL);
    status = ctl_fail(&err, EXIT_JOB);
    goto out;
  }
  /* Masks are uint32 rows whatever the input's dtype (or a bool .npy). */
  if (ctl_load_all(a->inputs, a->n_inputs, a->format, a->dtype, bufs, chunks,
                   &err) != 0 ||
      ctl_load_all(a->masks, a->n_masks, a->format, WV_DTYPE_MASK,
                   bufs + a->n_inputs, chunks + a->n_inputs, &err) != 0) {
    status = ctl_fail(&err, EXIT_JOB);
    goto out;
  }
  if (a->fleet) {  /* ctl_fleet.c */
    if (wv_ctl_fleet_reduce(a, chunks, &err) != 0)
      status = ctl_call_fail(&err);
    goto out;
  }
  if ((status = ctl_connect(a, &c)) != 0)
    goto out;
  ctl_via(path == CTL_STREAM ? CTL_STREAM : CTL_MESSAGE);
  wave_reduce_request q = {
    .dtype = a->dtype, .op = a->op,
    .input = chunks, .n_input = a->n_inputs,
    .mask = chunks + a->n_inputs, .n_mask = a->n_masks,
    .has_mask = a->n_masks > 0, .device = a->device,
    .priority = a->priority, .deadline_ms = a->deadline_ms,
  };
  wave_reduce_result r;
  if (wave_reduce(c, &q, &r, &err) != 0) {
    status = ctl_call_fail(&err);
    goto out;
  }
  wv_print_reduce(stdout, &r, a->json);
out:
  ctl_close(c);
  for (size_t i = 0; bufs != NULL && i < n; i++)
    wv_chunk_buf_free(&bufs[i]);
  free(bufs);
  free(chunks);
  return status;
}

/* ---- submit hash -------------------------------------------------------- */

/* Progress on stderr: on a terminal the bar, redrawn at every poll; with
 * --progress elsewhere (a log, a CI job) a plain line at the first poll and
 * then every CTL_PLAIN_MS.  The lines come from ctl_jobs.c. */
#define CTL_PLAIN_MS 5000

typedef struct ctl_prog {
  int tty, plain;
  uint64_t next_ms;
} ctl_prog;

static uint64_t ctl_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void ctl_prog_init(ctl_prog *p, const wv_args *a)
{
  p->tty = isatty(STDERR_FILENO);
  p->plain = !p->tty && a->progress;
  p->next_ms = 0;
}

static void ctl_prog_show(ctl_prog *p, const wave_job_info *info)
{
  char line[256];
  if (p->tty) {
    wv_progress_line(line, sizeof line, info, 1);
    fprintf(stderr, "\r%s\033[K", line);
    fflush(stderr);
    return;
  }
  uint64_t now = ctl_now_ms();
  if (!p->plain || now < p->next_ms)
    return;
  p->next_ms = now + CTL_PLAIN_MS;
  wv_progress_line(line, sizeof line, info, 0);
  fprintf(stderr, "%s\n", line);
}

/* Before the result (erase the bar) or an error (keep it, end its line). */
static void ctl_prog_end(const ctl_prog *p, int keep)
{
  if (p->tty)
    fputs(keep ? "\n" : "\r\033[K", stderr);
}

/* After Ctrl-C: ask the daemon to cancel, then wait until it says the job
 * has ended (it may finish or fail in the meantime: that ends it too). */
static int ctl_cancel(wave_client *c, uint64_t id, const ctl_prog *prog)
{
  wave_error err = {0};
  wave_job_info info;
  ctl_prog_end(prog, 0);
  if (wave_job_cancel(c, id, &info, &err) != 0)
    return ctl_call_fail(&err);
  while (wv_job_live(info.state)) {
    if (wave_job_poll(c, id, 1000, &info, NULL, &err) != 0)
      return ctl_call_fail(&err);
  }
  wv_seterr(&err, WAVE_ECANCELLED, "job %" PRIu64 " %s after %" PRIu64
            " of %" PRIu64 " nonces", id,
            info.state == WAVE_JOB_CANCELLED ? "cancelled" : "ended",
            info.done, info.total);
  return ctl_fail(&err, EXIT_INTERRUPTED);
}

static int ctl_hash(wave_client *c, const wv_args *a)
{
  wave_error err = {0};
  wave_hash_request q = {
    .pack = a->pack, .nonce = a->nonce, .count = a->count,
    .target = a->target, .max_winners = a->max_winners,
    .want_outputs = a->outputs, .device = a->device,
    .priority = a->priority, .deadline_ms = a->deadline_ms,
    .devices = a->devs, .n_devices = a->n_devs,
    .segment_log2 = a->segment_log2, .want_segments = a->segments,
    .detach = a->detach,
  };
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = ctl_on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);

  ctl_prog prog;
  ctl_prog_init(&prog, a);
  int status = 0;
  uint64_t id;
  wave_job_key key;
  if (wave_hash_submit_key(c, &q, &id, &key, &err) != 0) {
    status = ctl_call_fail(&err);
    goto out;
  }
  if (a->detach) {
    wv_print_detached(stdout, a, wave_client_url(c), id, &key, a->json);
    goto out;
  }
  for (;;) {
    if (ctl_interrupted) {
      status = ctl_cancel(c, id, &prog);
      goto out;
    }
    wave_job_info info;
    wave_hash_result res;
    /* Short waits, so that Ctrl-C is acted on promptly. */
    if (wave_job_poll(c, id, 250, &info, &res, &err) != 0) {
      ctl_prog_end(&prog, 1);
      status = ctl_call_fail(&err);
      goto out;
    }
    if (info.state != WAVE_JOB_DONE)
      ctl_prog_show(&prog, &info);
    if (info.state == WAVE_JOB_DONE) {
      ctl_prog_end(&prog, 0);
      wv_print_hash(stdout, &q, &res, id, a->json);
      wave_hash_result_free(&res);
      goto out;
    }
    if (info.state == WAVE_JOB_FAILED || info.state == WAVE_JOB_CANCELLED) {
      ctl_prog_end(&prog, 1);
      status = ctl_fail(&info.error, EXIT_JOB);
      goto out;
    }
  }
out:
  sigaction(SIGINT, &old, NULL);
  return status;
}

/* ---- jobs, wait, cancel ---------------------------------------------------- */

static int ctl_jobs(wave_client *c, const wv_args *a)
{
  wave_error err = {0};
  wave_job_info *jobs;
  size_t n;
  if (wave_jobs_get_key(c, &a->key, &jobs, &n, &err) != 0)
    return ctl_call_fail(&err);
  wv_print_jobs(stdout, jobs, n, a->json);
  wave_jobs_free(jobs);
  return 0;
}

/* Wait for the job to end (Ctrl-C stops waiting; the job runs on). */
static int ctl_wait(wave_client *c, const wv_args *a)
{
  wave_error err = {0};
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = ctl_on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  ctl_prog prog;
  ctl_prog_init(&prog, a);
  int status = 0;
  for (;;) {
    if (ctl_interrupted) {
      ctl_prog_end(&prog, 0);
      wv_seterr(&err, WAVE_ECANCELLED, "stopped waiting; job %" PRIu64
                " runs on", a->job_id);
      status = ctl_fail(&err, EXIT_INTERRUPTED);
      break;
    }
    wave_job_info info;
    wave_hash_result res;
    if (wave_job_poll_key(c, a->job_id, &a->key, 250, &info, &res,
                          &err) != 0) {
      ctl_prog_end(&prog, 1);
      status = ctl_call_fail(&err);
      break;
    }
    if (wv_job_live(info.state)) {
      ctl_prog_show(&prog, &info);
      continue;
    }
    ctl_prog_end(&prog, 0);
    if (info.state == WAVE_JOB_DONE) {
      wv_print_job(stdout, &info, &res, a->json);
      wave_hash_result_free(&res);
    } else {
      status = ctl_fail(&info.error, EXIT_JOB);
    }
    break;
  }
  sigaction(SIGINT, &old, NULL);
  return status;
}

/* cancel ID [ID...]: every job is asked to stop first, so that they stop
 * together, then each is waited for (a running job stops at its next
 * batch) and printed.  An id that fails (NOJOB) is reported and the others
 * go on; the exit status is the worst. */
static int ctl_cancel_cmd(wave_client *c, const wv_args *a)
{
  size_t n = a->n_job_ids, ok = 0;
  wave_job_info *infos = calloc(n, sizeof *infos);
  int *live = calloc(n, sizeof *live), status = 0;
  if (infos == NULL || live == NULL) {
    wave_error err = {0};
    wv_seterr(&err, WAVE_ENOMEM, NULL);
    status = ctl_fail(&err, EXIT_JOB);
    goto out;
  }
  for (size_t i = 0; i < n && status != EXIT_UNREACHABLE; i++) {
    wave_error err = {0};
    if (wave_job_cancel_key(c, a->job_ids[i], &a->key, &infos[i], &err) != 0)
      status = ctl_call_fail(&err);
    else
      live[i] = 1;
  }
  for (size_t i = 0; i < n && status != EXIT_UNREACHABLE; i++) {
    wave_error err = {0};
    while (live[i] && wv_job_live(infos[i].state))
      if (wave_job_poll_key(c, a->job_ids[i], &a->key, 1000, &infos[i], NULL,
                            &err) != 0) {
        status = ctl_call_fail(&err);
        live[i] = 0;
      }
    if (!live[i])
      continue;
    if (n == 1 || !a->json)
      wv_print_job(stdout, &infos[i], NULL, a->json);
    infos[ok++] = infos[i];  /* ok <= i: the ended ones, for --json */
  }
  if (n > 1 && a->json)
    wv_print_jobs(stdout, infos, ok, 1);
out:
  free(infos);
  free(live);
  return status;
}

/* ---- status, packs ------------------------------------------------------ */

static int ctl_status(wave_client *c, const wv_args *a)
{
  wave_error err = {0};
  wave_status *s;
  if (wave_status_get(c, &s, &err) != 0) {
    if (!a->probe)
      return ctl_call_fail(&err);
    if (err.code == WAVE_EAUTH)  /* it answers: the probe lacks the token */
      return ctl_fail(&err, EXIT_AUTH);
    if (err.code == WAVE_ETIMEDOUT || err.code == WAVE_EIO)
      ctl_abandoned = 1;
    return EXIT_UNREACHABLE;
  }
  if (a->probe) {  /* readiness: 0 ready, 1 not yet, 3 unreachable, 4 AUTH */
    int ready = wv_status_ready(s);
    wave_status_free(s);
    return ready ? 0 : EXIT_JOB;
  }
  wv_print_status(stdout, s, wave_client_url(c), a->json);
  wave_status_free(s);
  return 0;
}

static int ctl_packs(wave_client *c, const wv_args *a)
{
  wave_error err = {0};
  wave_pack_info *p;
  size_t n;
  if (wave_packs_get(c, &p, &n, &err) != 0)
    return ctl_call_fail(&err);
  wv_print_packs(stdout, p, n, a->json);
  wave_packs_free(p);
  return 0;
}

int main(int argc, char **argv)
{
  wv_args a;
  wave_error err = {0};
  int status;
  if (wv_args_parse(argc, argv, &a, &err) != 0) {
    status = ctl_fail(&err, EXIT_USAGE);
    wv_args_fini(&a);
    return status;
  }
  if (a.help || a.version) {
    if (a.help && a.help_submit) {
      wv_usage(stdout, WV_CMD_REDUCE);
      fputc('\n', stdout);
      wv_usage(stdout, WV_CMD_HASH);
    } else if (a.help) {
      wv_usage(stdout, a.cmd);
    }
    else
      printf("wavectl %s\n", WAVE_VERSION);
    wv_args_fini(&a);
    return 0;
  }

  wave_client *c = NULL;
  if (a.cmd == WV_CMD_REDUCE)
    status = ctl_reduce(&a); /* reads its inputs, then connects */
  else if (a.cmd == WV_CMD_STATUS && a.fleet)
    status = wv_ctl_fleet_status(&a);
  else if (a.cmd == WV_CMD_HASH && a.fleet) {
    if (wv_ctl_fleet_hash(&a, &err) != 0)
      status = err.code == WAVE_ECANCELLED ? ctl_fail(&err, EXIT_INTERRUPTED)
               : err.code == WAVE_EARG     ? ctl_fail(&err, EXIT_USAGE)
                                           : ctl_call_fail(&err);
    else
      status = 0;
  } else if ((status = ctl_connect(&a, &c)) == 0) {
    switch (a.cmd) {
    case WV_CMD_HASH: status = ctl_hash(c, &a); break;
    case WV_CMD_STATUS: status = ctl_status(c, &a); break;
    case WV_CMD_PACKS: status = ctl_packs(c, &a); break;
    case WV_CMD_JOBS: status = ctl_jobs(c, &a); break;
    case WV_CMD_WAIT: status = ctl_wait(c, &a); break;
    case WV_CMD_CANCEL: status = ctl_cancel_cmd(c, &a); break;
    case WV_CMD_TOP:
      status = wv_ctl_top(&a, c, &err) != 0 ? ctl_call_fail(&err) : 0;
      break;
    case WV_CMD_BENCH: {
      int failed;
      status = wv_ctl_bench(&a, c, &failed, &err) != 0 ? ctl_call_fail(&err)
               : failed ? EXIT_JOB : 0;
      break;
    }
    default: status = EXIT_USAGE; break;
    }
  }
  if (fflush(stdout) != 0 && status == 0) {
    wv_seterr(&err, WAVE_EIO, "writing standard output failed");
    status = ctl_fail(&err, EXIT_JOB);
  }
  ctl_close(c);
  wv_args_fini(&a);
  return status;
}
