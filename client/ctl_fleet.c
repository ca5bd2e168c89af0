/* ctl_fleet.c - wavectl's fleet side: --fleet SPEC to URLs (a list, or the
 * Slurm job's nodes), the readiness verdict of `status --probe`, and the
 * `submit hash|reduce --fleet` commands over wave/fleet.h.
 *
 * Slurm: the node names come from `scontrol show hostnames
 * $SLURM_JOB_NODELIST` and each node's address from `scontrol show node
 * -o NAME` (NodeAddr, which is the name itself on most clusters and
 * 127.0.0.1 on the loopback test cluster), run with posix_spawnp and an
 * argv, never through a shell.  The port is the one every node's daemon
 * listens on; "PORT+" gives node i port PORT + i, for several daemons on
 * one host (contrib/slurm/wavedd.sbatch computes the same).
 *
 * Output: the merged result on stdout (JSON or text), who did what on
 * stderr in text mode and under "fleet" in JSON, so a fleet's stdout
 * compares with one daemon's field by field.
 *
 * The coordinator's hash.  A fleet hash job re-hashes every winner, every
 * best and one segment per piece here (wave_fleet_set_rehash), with the
 * CPU reference of workers/hash/ (wvhash, linked into wavectl only: it
 * brings libyaml, which libwaveclient does not need).  The pack is loaded
 * by name from the packs folder, $WAVE_PACKS_DIR or the installed one
 * (WAVE_PACKS_DEFAULT): it must be the daemons' pack, or every honest
 * daemon looks like a liar.  Asking a daemon for the pack definition
 * would let a lying daemon choose the pack that checks its own lies.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/ctl.h"
#include "core/base.h"
#include "wave/fleet.h"
#include "workers/hash/hash.h"
#include "workers/hash/ref.h"

#ifndef WAVE_PACKS_DEFAULT
#define WAVE_PACKS_DEFAULT "/usr/share/wavedd/packs"
#endif

extern char **environ;

void wv_fleet_urls_free(char **urls, size_t n)
{
  for (size_t i = 0; urls && i < n; i++)
    free(urls[i]);
  free(urls);
}

/* Run argv, return its standard output (allocated, NUL-terminated). */
static int cfl_capture(char *const argv[], char **out, wave_error *err)
{
  int fd[2];
  *out = NULL;
  if (pipe(fd) != 0)
    return wv_seterr(err, WAVE_EIO, "pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fd[0]);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fd[1]);
  if (rc != 0) {
    close(fd[0]);
    return wv_seterr(err, WAVE_EARG, "--fleet slurm: cannot run %s: %s",
                     argv[0], strerror(rc));
  }
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  ssize_t r = 0;
  while (buf != NULL && (r = read(fd[0], buf + len, cap - len - 1)) > 0) {
    len += (size_t)r;
    if (cap - len < 2) {
      char *nb = realloc(buf, cap * 2);
      if (nb == NULL) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (buf == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  buf[len] = '\0';
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    free(buf);
    return wv_seterr(err, WAVE_EARG, "--fleet slurm: %s %s failed (status "
                     "%d)", argv[0], argv[1], st);
  }
  *out = buf;
  return 0;
}

static int cfl_push(char ***urls, size_t *n, const char *s, size_t len,
                   wave_error *err)
{
  char **nu = realloc(*urls, (*n + 1) * sizeof *nu);
  if (nu == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  *urls = nu;
  if ((nu[*n] = strndup(s, len)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  (*n)++;
  return 0;
}

static int cfl_slurm(const char *spec, char ***urls, size_t *n,
                    wave_error *err)
{
  uint64_t port = 5555;
  int step = 0;
  const char *ps = spec[5] == ':' ? spec + 6 : getenv("WAVE_FLEET_PORT");
  if (spec[5] != '\0' && spec[5] != ':')
    return wv_seterr(err, WAVE_EARG, "--fleet: '%s' is neither a URL list "
                     "nor slurm[:PORT[+]]", spec);
  if (ps != NULL && ps[0] != '\0') {
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%s", ps);
    size_t l = strlen(tmp);
    if (l > 0 && tmp[l - 1] == '+') {
      step = 1;
      tmp[l - 1] = '\0';
    }
    if (wv_parse_u64(tmp, &port) != 0 || port == 0 || port > 65535)
      return wv_seterr(err, WAVE_EARG, "--fleet slurm: port '%s' is not "
                       "1..65535 (optionally with '+')", ps);
  }
  const char *nodelist = getenv("SLURM_JOB_NODELIST");
  if (nodelist == NULL || nodelist[0] == '\0')
    return wv_seterr(err, WAVE_EARG, "--fleet slurm: SLURM_JOB_NODELIST is "
                     "not set (run inside a Slurm job)");
  char *names;
  char *av[] = {"scontrol", "show", "hostnames", (char *)nodelist, NULL};
  int rc = cfl_capture(av, &names, err);
  if (rc != 0)
    return rc;
  size_t idx = 0;
  for (char *save = NULL, *name = strtok_r(names, " \t\r\n", &save);
       name != NULL; name = strtok_r(NULL, " \t\r\n", &save), idx++) {
    char *info;
    char *bv[] = {"scontrol", "-o", "show", "node", name, NULL};
    if ((rc = cfl_capture(bv, &info, err)) != 0)
      break;
    const char *addr = strstr(info, "NodeAddr=");
    size_t alen = 0;
    if (addr != NULL) {
      addr += 9;
      alen = strcspn(addr, " \t\r\n");
    }
    if (alen == 0) {
      addr = name;
      alen = strlen(name);
    }
    if (port + (step ? idx : 0) > 65535) {
      free(info);
      rc = wv_seterr(err, WAVE_EARG, "--fleet slurm: port %" PRIu64 " + %zu "
                     "passes 65535", port, idx);
      break;
    }
    char url[300];
    int ul = snprintf(url, sizeof url, "tcp://%.*s:%" PRIu64, (int)alen, addr,
                      port + (step ? idx : 0));
    free(info);
    if (ul < 0 || (size_t)ul >= sizeof url) {
      rc = wv_seterr(err, WAVE_EARG, "--fleet slurm: node address too long");
      break;
    }
    if ((rc = cfl_push(urls, n, url, (size_t)ul, err)) != 0)
      break;
  }
  free(names);
  if (rc == 0 && *n == 0)
    rc = wv_seterr(err, WAVE_EARG, "--fleet slurm: the job has no nodes");
  return rc;
}

int wv_fleet_urls(const char *spec, char ***urls, size_t *n, wave_error *err)
{
  *urls = NULL;
  *n = 0;
  int rc;
  if (spec == NULL || spec[0] == '\0')
    return wv_seterr(err, WAVE_EARG, "--fleet: empty");
  if (strncmp(spec, "slurm", 5) == 0 && (spec[5] == '\0' || spec[5] == ':'))
    rc = cfl_slurm(spec, urls, n, err);
  else {
    rc = 0;
    for (const char *p = spec; rc == 0;) {
      size_t len = strcspn(p, ",");
      if (len == 0) {
        rc = wv_seterr(err, WAVE_EARG, "--fleet: empty URL in '%s'", spec);
        break;
      }
      rc = cfl_push(urls, n, p, len, err);
      if (p[len] == '\0')
        break;
      p += len + 1;
    }
  }
  if (rc != 0) {
    wv_fleet_urls_free(*urls, *n);
    *urls = NULL;
    *n = 0;
  }
  return rc;
}

int wv_status_ready(const wave_status *s)
{
  if (s->instance != 0)
    return s->ready;
  int any = 0;
  for (size_t i = 0; i < s->n_devices; i++) {
    const wave_device_status *d = &s->devices[i];
    if (d->faulted)
      continue;
    any = 1;
    for (size_t k = 0; k < d->n_packs; k++)
      if (strcmp(d->packs[k].state, "pending") == 0)
        return 0;
  }
  return any;
}

/* ---- the commands ------------------------------------------------------- */

static wave_fleet *volatile cfl_active;
static volatile sig_atomic_t cfl_tty;

static void cfl_on_sigint(int sig)
{
  (void)sig;
  if (cfl_active != NULL)
    wave_fleet_cancel(cfl_active);
  signal(SIGINT, SIG_DFL);  /* a second Ctrl-C kills at once */
}

static void cfl_progress(const wave_fleet_progress *p, void *arg)
{
  (void)arg;
  if (!cfl_tty)
    return;
  double frac = p->total ? (double)p->done / (double)p->total : 0.0;
  fprintf(stderr, "\r%5.1f%%  %.3g/s  %zu daemons%s%zu failed  %.1f s\033[K",
          frac * 100.0, p->seconds > 0 ? (double)p->done / p->seconds : 0.0,
          p->alive, ", ", p->failed, p->seconds);
  fflush(stderr);
}

/* ---- the coordinator's hash -------------------------------------------- */

const char *wv_fleet_packs_dir(void)
{
  const char *d = getenv("WAVE_PACKS_DIR");
  return d && d[0] ? d : WAVE_PACKS_DEFAULT;
}

int wv_fleet_pack_open(const char *dir, const char *name, wv_fleet_pack *out,
                       wave_error *err)
{
  memset(out, 0, sizeof *out);
  if (name == NULL || name[0] == '\0')
    return wv_seterr(err, WAVE_EARG, "a fleet hash job needs --pack");
  /* NAME.yaml first (the usual file name), else the whole folder */
  char path[4096];
  wave_error e1 = {0};
  if ((size_t)snprintf(path, sizeof path, "%s/%s.yaml", dir, name) <
          sizeof path &&
      access(path, F_OK) == 0 &&
      wv_pack_load_file(path, &out->own, &e1) == 0) {
    if (strcmp(wv_pack_name(out->own), name) == 0) {
      out->pack = out->own;
      return 0;
    }
    wv_pack_free(out->own);
    out->own = NULL;
  }
  wave_error e2 = {0};
  if (wv_packset_load(dir, &out->set, &e2) == 0 &&
      (out->pack = wv_packset_find(out->set, name)) != NULL)
    return 0;
  wv_fleet_pack_close(out);
  return wv_seterr(err, WAVE_EPACK, "the fleet re-hashes the daemons' "
                   "winners here, with pack '%s' from %s, and cannot load "
                   "it (%s); set WAVE_PACKS_DIR to the daemons' packs folder",
                   name, dir, e1.code ? e1.message
                              : e2.code ? e2.message : "no such pack");
}

void wv_fleet_pack_close(wv_fleet_pack *p)
{
  if (p->own)
    wv_pack_free(p->own);
  if (p->set)
    wv_packset_free(p->set);
  memset(p, 0, sizeof *p);
}

int wv_fleet_rehash(void *arg, const char *pack, uint64_t nonce,
                    uint64_t count, uint64_t *outputs, wave_error *err)
{
  const wv_fleet_pack *fp = arg;
  const wv_pack *p = fp->pack;
  if (strcmp(pack, wv_pack_name(p)) != 0)
    return wv_seterr(err, WAVE_EPACK, "asked to re-hash pack '%s' with "
                     "'%s' loaded", pack, wv_pack_name(p));
  if (count == 1)
    return wv_hash_verify(p, nonce, outputs, err);
  wv_hash_mem m = {.pack = p};
  int rc;
  if (!p->closed && (rc = wv_pack_cache_get(p, &m.cache, err)) != 0)
    return rc;
  wv_ref_range(&m, nonce, count, outputs);
  return 0;
}

static void cfl_members(const wave_fleet *fl, FILE *f,
                       const wave_fleet_member *m, size_t n, int json)
{
  for (size_t i = 0; i < n; i++) {
    const char *why = wave_fleet_drop_name(wave_fleet_member_why(fl, i));
    if (json) {
      fprintf(f, "%s{\"url\": ", i ? ", " : "");
      wv_json_str(f, m[i].url);
      fprintf(f, ", \"pieces\": %" PRIu64 ", \"work\": %" PRIu64
              ", \"seconds\": %.6f, \"failed\": %s", m[i].pieces, m[i].work,
              m[i].seconds, m[i].failed ? "true" : "false");
      if (m[i].failed) {
        fputs(", \"error\": ", f);
        wv_json_str(f, wave_errname(m[i].error.code));
        fputs(", \"message\": ", f);
        wv_json_str(f, m[i].error.message);
        fputs(", \"dropped\": ", f);
        wv_json_str(f, why);
      }
      fputc('}', f);
    } else {
      fprintf(f, "fleet: %s: %" PRIu64 " pieces, %" PRIu64 " done, %.3f s",
              m[i].url, m[i].pieces, m[i].work, m[i].seconds);
      if (m[i].failed)
        fprintf(f, ", DROPPED (%s: %s)", why, m[i].error.message);
      fputc('\n', f);
    }
  }
}

static int cfl_open(const wv_args *a, wave_fleet **f, wave_error *err)
{
  char **urls;
  size_t n;
  int rc = wv_fleet_urls(a->fleet, &urls, &n, err);
  if (rc != 0)
    return rc;
  rc = wave_fleet_open(f, (const char *const *)urls, n, err);
  wv_fleet_urls_free(urls, n);
  wave_client_options o;  /* the same token and CA for every daemon */
  wv_args_client_options(a, 0, &o);
  if (rc == 0 && (rc = wave_fleet_set_client_options(*f, &o, err)) != 0) {
    wave_fleet_close(*f);
    *f = NULL;
  }
  if (rc == 0 && a->timeout_ms > 0)
    wave_fleet_set_timeout(*f, a->timeout_ms);
  if (rc == 0 && a->stall_s > 0)
    wave_fleet_set_stall(*f, (int)(a->stall_s * 1000u));
  return rc;
}

int wv_ctl_fleet_hash(const wv_args *a, wave_error *err)
{
  wave_fleet *f;
  int rc = cfl_open(a, &f, err);
  if (rc != 0)
    return rc;
  if (a->outputs) {
    wave_fleet_close(f);
    return wv_seterr(err, WAVE_EARG, "--outputs: ask one daemon, not a "
                     "fleet");
  }
  wave_hash_request q = {
    .pack = a->pack, .nonce = a->nonce, .count = a->count,
    .target = a->target, .max_winners = a->max_winners, .device = a->device,
    .priority = a->priority, .deadline_ms = a->deadline_ms,
  };
  wv_fleet_pack pk;
  if ((rc = wv_fleet_pack_open(wv_fleet_packs_dir(), a->pack, &pk, err))) {
    wave_fleet_close(f);
    return rc;
  }
  wave_fleet_set_rehash(f, wv_fleet_rehash, &pk);
  wave_fleet_options o = {.piece = a->piece, .segment_log2 = a->segment_log2,
                          .want_segments = a->segments};
  wave_fleet_hash_result r;
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = cfl_on_sigint;
  sigemptyset(&sa.sa_mask);
  cfl_tty = isatty(STDERR_FILENO);
  cfl_active = f;
  sigaction(SIGINT, &sa, &old);
  rc = wave_fleet_hash(f, &q, &o, &r, cfl_progress, NULL, err);
  sigaction(SIGINT, &old, NULL);
  cfl_active = NULL;
  if (cfl_tty)
    fputs("\r\033[K", stderr);
  if (rc == 0) {
    double rate = r.seconds > 0 ? (double)r.hashes / r.seconds : 0.0;
    if (a->json) {
      printf("{\"pack\": ");
      wv_json_str(stdout, q.pack);
      printf(", \"nonce\": %" PRIu64 ", \"count\": %" PRIu64 ", \"target\": "
             "\"%016" PRIx64 "\", \"job_fingerprint\": \"%016" PRIx64 "\", "
             "\"segment_log2\": %u, \"segment_count\": %" PRIu64 ", "
             "\"best\": {\"nonce\": %" PRIu64 ", \"output\": \"%016" PRIx64
             "\"}, \"winners\": [", q.nonce, q.count, q.target,
             r.job_fingerprint, r.segment_log2, r.segment_count, r.best_nonce,
             r.best_output);
      for (size_t i = 0; i < r.n_winners; i++)
        printf("%s{\"nonce\": %" PRIu64 ", \"output\": \"%016" PRIx64 "\"}",
               i ? ", " : "", r.winners[i].nonce, r.winners[i].output);
      printf("], \"winner_count\": %" PRIu64 ", \"hashes\": %" PRIu64
             ", \"seconds\": %.6f, \"rate\": %.6g, \"fleet\": {\"pieces\": %"
             PRIu64 ", \"retried\": %" PRIu64 ", \"failed\": %zu, "
             "\"daemons\": [", r.winner_count, r.hashes, r.seconds, rate,
             r.pieces, r.retried, r.n_failed);
      cfl_members(f, stdout, r.members, r.n_members, 1);
      printf("]}");
      if (r.segments != NULL) {
        printf(", \"segments\": [");
        for (uint64_t i = 0; i < r.segment_count; i++)
          printf("%s\"%016" PRIx64 "\"", i ? ", " : "", r.segments[i]);
        printf("]");
      }
      printf("}\n");
    } else {
      printf("fleet job: pack %s, nonces %" PRIu64 " + %" PRIu64 " over %zu "
             "daemons\n", q.pack, q.nonce, q.count, r.n_members);
      printf("fingerprint  %016" PRIx64 " (%" PRIu64 " segments of 2^%u)\n",
             r.job_fingerprint, r.segment_count, r.segment_log2);
      printf("best         nonce %" PRIu64 " output %016" PRIx64 "\n",
             r.best_nonce, r.best_output);
      printf("winners      %" PRIu64 " below %016" PRIx64 "\n",
             r.winner_count, q.target);
      for (size_t i = 0; i < r.n_winners; i++)
        printf("  nonce %" PRIu64 " output %016" PRIx64 "\n",
               r.winners[i].nonce, r.winners[i].output);
      printf("hashes       %" PRIu64 " in %.3f s (%.3g hashes/s), %" PRIu64
             " pieces, %" PRIu64 " retried\n", r.hashes, r.seconds, rate,
             r.pieces, r.retried);
      for (uint64_t i = 0; r.segments != NULL && i < r.segment_count; i++)
        printf("segment %" PRIu64 " %016" PRIx64 "\n",
               (q.nonce >> r.segment_log2) + i, r.segments[i]);
      cfl_members(f, stderr, r.members, r.n_members, 0);
    }
  } else if (r.members != NULL) {
    cfl_members(f, stderr, r.members, r.n_members, 0);
  }
  wave_fleet_hash_result_free(&r);
  wave_fleet_close(f);
  wv_fleet_pack_close(&pk);
  return rc;
}

int wv_ctl_fleet_reduce(const wv_args *a, const wave_chunk *chunks,
                        wave_error *err)
{
  wave_fleet *f;
  int rc = cfl_open(a, &f, err);
  if (rc != 0)
    return rc;
  wave_reduce_request q = {
    .dtype = a->dtype, .op = a->op,
    .input = chunks, .n_input = a->n_inputs,
    .mask = chunks + a->n_inputs, .n_mask = a->n_masks,
    .has_mask = a->n_masks > 0, .device = a->device,
    .priority = a->priority, .deadline_ms = a->deadline_ms,
  };
  wave_fleet_options o = {.piece = a->piece};
  wave_fleet_reduce_result r;
  rc = wave_fleet_reduce(f, &q, &o, &r, err);
  if (rc == 0)
    wv_print_reduce(stdout, &r.value, a->json);
  if (r.members != NULL) {
    fprintf(stderr, "fleet: %" PRIu64 " pieces, %" PRIu64 " retried, %zu "
            "daemons dropped\n", r.pieces, r.retried, r.n_failed);
    cfl_members(f, stderr, r.members, r.n_members, 0);
  }
  wave_fleet_reduce_result_free(&r);
  wave_fleet_close(f);
  return rc;
}

int wv_ctl_fleet_status(const wv_args *a)
{
  char **urls;
  size_t n;
  wave_error err = {0};
  if (wv_fleet_urls(a->fleet, &urls, &n, &err) != 0) {
    fprintf(stderr, "wavectl: %s: %s\n", wave_errname(err.code), err.message);
    return 2;
  }
  int status = 0;
  for (size_t i = 0; i < n; i++) {
    wave_client *c;
    wave_status *s;
    wave_client_options o;
    wv_args_client_options(a, 0, &o);
    if (wave_client_open_with(&c, urls[i], &o, &err) != 0) {
      fprintf(stderr, "wavectl: %s: %s\n", wave_errname(err.code),
              err.message);
      status = 2;
      break;
    }
    if (a->timeout_ms > 0)
      wave_client_set_timeout(c, a->timeout_ms);
    if (wave_status_get(c, &s, &err) != 0) {
      if (!a->probe)
        fprintf(stderr, "wavectl: %s: %s\n", wave_errname(err.code),
                err.message);
      status = 3;
    } else {
      if (!wv_status_ready(s) && status == 0)
        status = 1;
      if (!a->probe)
        wv_print_status(stdout, s, urls[i], a->json);
      wave_status_free(s);
    }
    wave_client_close(c);
  }
  wv_fleet_urls_free(urls, n);
  return status;
}
