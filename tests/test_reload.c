/* test_reload.c - what a SIGHUP reload changes while wavedd serves
 * (daemon/reload.c, listen.c's wd_listeners_update, the packs swap): the
 * listeners added and removed, a listener that cannot bind changing
 * nothing, a pack added and then servable with the CPU reference's bits,
 * a broken pack changing nothing, and a hash job that runs across a pack
 * reload finishing with the old pack's bits.  The real daemon
 * (daemon_harness.h), raw nng + protobuf-c.
 *
 * A reload is awaited on the daemon's own log line ("reloaded " or
 * "reload failed", counted), never on a sleep.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdint.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "daemon_harness.h"
#include "wave/error.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"

static void trl_nap(void)
{
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

static size_t trl_count(const char *hay, const char *needle)
{
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

/* SIGHUP, then wait for its outcome line: it must be "reloaded " (ok) or
 * "reload failed" (!ok). */
static void trl_reload(td_daemon *d, int ok)
{
  const char *log = td_stderr(d);
  size_t n_ok = trl_count(log, "reloaded "), n_bad = trl_count(log, "reload failed");
  kill(d->pid, SIGHUP);
  for (int i = 0; i < 2400; i++) {
    log = td_stderr(d);
    size_t a = trl_count(log, "reloaded "), b = trl_count(log, "reload failed");
    if (a + b > n_ok + n_bad) {
      ck_assert_msg(ok ? a > n_ok : b > n_bad, "the reload %s:\n%s",
                    ok ? "failed" : "succeeded", log);
      return;
    }
    trl_nap();
  }
  ck_abort_msg("the reload never ended:\n%s", log);
}

static char *trl_read(const char *path)
{
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "%s", path);
  static char text[65536];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  return strdup(text);
}

/* text with `from` replaced by `to` (the first one), malloc'd. */
static char *trl_replace(const char *text, const char *from, const char *to)
{
  const char *at = strstr(text, from);
  ck_assert_msg(at != NULL, "'%s' not in the text", from);
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  return out;
}

static void trl_edit(td_daemon *d, const char *from, const char *to)
{
  char *text = trl_read(d->cfg);
  char *out = trl_replace(text, from, to);
  td_write(d->cfg, out);
  free(text);
  free(out);
}

/* A REQ socket dialled to url without retrying: nng's rv (0: connected). */
static int trl_try_dial(const char *url, nng_socket *out)
{
  nng_socket s;
  ck_assert_int_eq(nng_req0_open(&s), 0);
  nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 60000);
  int rv = nng_dial(s, url, NULL, 0);
  if (rv != 0)
    nng_close(s);
  else
    *out = s;
  return rv;
}

/* url is among StatusReply.listen. */
static int trl_status_lists(nng_socket s, const char *url)
{
  Wave__V1__Response *r = td_status(s, 5);
  int found = 0;
  for (size_t i = 0; i < r->status->n_listen; i++)
    found |= strcmp(r->status->listen[i], url) == 0;
  wave__v1__response__free_unpacked(r, NULL);
  return found;
}

/* The packs folder of d: copies of the shipped closed.yaml and small.yaml
 * in d->dir/packs, which the config then names. */
static void trl_own_packs(td_daemon *d, char *dir, size_t n)
{
  const char *src = getenv("WAVE_SOURCE_DIR");
  snprintf(dir, n, "%s/packs", d->dir);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  const char *names[] = {"closed", "small"};
  for (int i = 0; i < 2; i++) {
    char from[512], to[512];
    snprintf(from, sizeof from, "%s/config/packs/%s.yaml", src ? src : ".",
             names[i]);
    snprintf(to, sizeof to, "%s/%s.yaml", dir, names[i]);
    char *text = trl_read(from);
    td_write(to, text);
    free(text);
  }
  char from[600], to[600];
  snprintf(from, sizeof from, "dir: %s/config/packs", src ? src : ".");
  snprintf(to, sizeof to, "dir: %s", dir);
  trl_edit(d, from, to);
}

/* Outputs of nonces [0, count) on pack, from the daemon (want_outputs),
 * checked against the hash library's CPU reference of file. */
static void trl_hash_matches(nng_socket s, const char *pack, const char *file,
                            uint64_t count)
{
  Wave__V1__Response *r = td_hash(s, 300, pack, 0, count, 0, 0, 1, 0, NULL);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_JOB, "%s",
                r->body_case == WAVE__V1__RESPONSE__BODY_ERROR
                    ? r->error->message : "not a JobInfo");
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  r = td_wait_job(s, job);
  ck_assert_int_eq(r->job->state, WAVE__V1__JOB_STATE__DONE);
  Wave__V1__HashResult *hr = r->job->result;
  ck_assert_uint_eq(hr->n_outputs, count);
  wv_pack *p;
  wave_error err;
  ck_assert_int_eq(wv_pack_load_file(file, &p, &err), 0);
  for (uint64_t n = 0; n < count; n++) {
    uint64_t want;
    ck_assert_int_eq(wv_hash_verify(p, n, &want, &err), 0);
    ck_assert_uint_eq(hr->outputs[n], want);
  }
  wv_pack_free(p);
  wave__v1__response__free_unpacked(r, NULL);
}

/* Connections a client socket lost (nng's pipe events, its threads). */
static _Atomic int trl_lost[2];

static void trl_pipe_gone(nng_pipe p, nng_pipe_ev ev, void *arg)
{
  (void)p;
  (void)ev;
  atomic_fetch_add(&trl_lost[(intptr_t)arg], 1);
}

START_TEST(reload_adds_and_removes_listeners)
{
  td_daemon d;
  td_prepare(&d, NULL);
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket si = td_dial(d.ipc);
  nng_socket s1 = td_dial(d.tcp);
  /* from now on, a connection the daemon closes is counted */
  ck_assert_int_eq(nng_pipe_notify(si, NNG_PIPE_EV_REM_POST, trl_pipe_gone,
                                   (void *)(intptr_t)0), 0);
  ck_assert_int_eq(nng_pipe_notify(s1, NNG_PIPE_EV_REM_POST, trl_pipe_gone,
                                   (void *)(intptr_t)1), 0);
  td_good(si);
  td_good(s1);
  char tcp2[64], ipc2[300];
  snprintf(tcp2, sizeof tcp2, "tcp://127.0.0.1:%d", td_free_port());
  snprintf(ipc2, sizeof ipc2, "ipc://%s/second.sock", d.dir);
  nng_socket x;
  ck_assert_int_ne(trl_try_dial(tcp2, &x), 0);

  /* add listeners: clients connect to them; the others keep serving */
  char from[700], to[700];
  snprintf(from, sizeof from, "\"%s\"]", d.tcp);
  snprintf(to, sizeof to, "\"%s\", \"%s\", \"%s\"]", d.tcp, tcp2, ipc2);
  trl_edit(&d, from, to);
  trl_reload(&d, 1);
  nng_socket s2, s3;
  ck_assert_int_eq(trl_try_dial(tcp2, &s2), 0);
  td_good(s2);
  ck_assert_int_eq(trl_try_dial(ipc2, &s3), 0);
  td_good(s3);
  nng_close(s3);
  ck_assert(trl_status_lists(s2, tcp2));
  ck_assert(trl_status_lists(s2, ipc2));
  ck_assert(trl_status_lists(s2, d.tcp));
  td_good(s1);
  td_good(si);
  /* the listeners that stayed kept their connections */
  ck_assert_int_eq(atomic_load(&trl_lost[0]), 0);
  ck_assert_int_eq(atomic_load(&trl_lost[1]), 0);

  /* remove the first tcp listener and the new ipc one: they refuse
   * connections, the rest serve */
  snprintf(from, sizeof from, "\"%s\", \"%s\", \"%s\"]", d.tcp, tcp2, ipc2);
  snprintf(to, sizeof to, "\"%s\"]", tcp2);
  trl_edit(&d, from, to);
  trl_reload(&d, 1);
  ck_assert_int_ne(trl_try_dial(d.tcp, &x), 0);
  ck_assert_int_ne(trl_try_dial(ipc2, &x), 0);
  ck_assert(!trl_status_lists(s2, d.tcp));
  ck_assert(!trl_status_lists(s2, ipc2));
  ck_assert(trl_status_lists(s2, tcp2));
  td_good(s2);
  td_good(si);
  /* the removed listener's connection was closed; the ipc one stayed */
  for (int i = 0; i < 1200 && atomic_load(&trl_lost[1]) == 0; i++)
    trl_nap();
  ck_assert_int_gt(atomic_load(&trl_lost[1]), 0);
  ck_assert_int_eq(atomic_load(&trl_lost[0]), 0);
  nng_close(s1);
  nng_close(s2);
  nng_close(si);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

START_TEST(reload_with_a_listener_that_cannot_bind_changes_nothing)
{
  td_daemon d;
  td_prepare(&d, NULL);
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket si = td_dial(d.ipc);
  /* a port held by a plain socket: nng cannot bind it */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  ck_assert_int_eq(listen(fd, 1), 0);
  socklen_t len = sizeof sa;
  ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
  char held[64], fresh[64];
  snprintf(held, sizeof held, "tcp://127.0.0.1:%d", ntohs(sa.sin_port));
  snprintf(fresh, sizeof fresh, "tcp://127.0.0.1:%d", td_free_port());

  /* a new free port first, the held one last, and a new limit: the whole
   * reload fails, the free port is closed again, the limit is not applied */
  char from[400], to[400];
  snprintf(from, sizeof from, "\"%s\"]", d.tcp);
  snprintf(to, sizeof to, "\"%s\", \"%s\", \"%s\"]", d.tcp, fresh, held);
  trl_edit(&d, from, to);
  trl_edit(&d, "max_job_rows: 8192", "max_job_rows: 8");
  trl_reload(&d, 0);
  char where[400];
  snprintf(where, sizeof where, "%s:1:", d.cfg);
  const char *log = td_stderr(&d);
  const char *at = strstr(log, where);
  ck_assert_msg(at != NULL, "no '%s' in:\n%s", where, log);
  ck_assert_msg(strstr(at, "listen[3]") != NULL && strstr(at, held) != NULL,
                "the held URL is not named:\n%s", log);
  nng_socket x;
  ck_assert_int_ne(trl_try_dial(fresh, &x), 0);
  ck_assert(!trl_status_lists(si, fresh));
  ck_assert(trl_status_lists(si, d.tcp));
  td_good(si);  /* 16 rows: max_job_rows 8 was not applied */
  nng_socket s1 = td_dial(d.tcp);
  td_good(s1);
  nng_close(s1);

  /* the port freed, the same file applies whole */
  close(fd);
  trl_reload(&d, 1);
  ck_assert_int_eq(trl_try_dial(held, &x), 0);
  ck_assert(trl_status_lists(x, held));
  ck_assert(trl_status_lists(x, fresh));
  nng_close(x);
  nng_close(si);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

START_TEST(reload_adds_a_pack)
{
  td_daemon d;
  td_prepare(&d, NULL);
  trl_edit(&d, "load: [closed, small]", "load: [closed]");
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket s = td_dial(d.ipc);
  td_expect_error(td_hash(s, 300, "small", 0, 64, 0, 0, 1, 0, NULL),
                  WAVE_EPACK, 300);
  trl_edit(&d, "load: [closed]", "load: [closed, small]");
  trl_reload(&d, 1);
  char file[512];
  snprintf(file, sizeof file, "%s/config/packs/small.yaml",
           getenv("WAVE_SOURCE_DIR"));
  trl_hash_matches(s, "small", file, 256);
  snprintf(file, sizeof file, "%s/config/packs/closed.yaml",
           getenv("WAVE_SOURCE_DIR"));
  trl_hash_matches(s, "closed", file, 64);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

START_TEST(reload_with_a_broken_pack_changes_nothing)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char dir[256];
  trl_own_packs(&d, dir, sizeof dir);
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket s = td_dial(d.ipc);
  char small[300], bad[300];
  snprintf(small, sizeof small, "%s/small.yaml", dir);
  snprintf(bad, sizeof bad, "%s/bad.yaml", dir);
  char *orig = trl_read(small);

  /* a pack whose known answers are wrong: it loads, but no device
   * reproduces them, so the reload fails and "bad" never serves */
  char *t1 = trl_replace(orig, "name: small", "name: bad");
  char *t2 = trl_replace(t1, "0xc38567f77cf250f2", "0xc38567f77cf250f3");
  td_write(bad, t2);
  trl_edit(&d, "load: [closed, small]", "load: [closed, small, bad]");
  trl_reload(&d, 0);
  ck_assert_msg(strstr(td_stderr(&d), "pack bad") != NULL &&
                strstr(td_stderr(&d), "failed on device") != NULL,
                "%s", td_stderr(&d));
  td_expect_error(td_hash(s, 300, "bad", 0, 64, 0, 0, 1, 0, NULL),
                  WAVE_EPACK, 300);

  /* a pack file that does not parse: file:line:column, nothing changes */
  td_write(bad, "name: bad\nversion: [\n");
  trl_reload(&d, 0);
  ck_assert_msg(strstr(td_stderr(&d), bad) != NULL, "%s", td_stderr(&d));
  td_expect_error(td_hash(s, 300, "bad", 0, 64, 0, 0, 1, 0, NULL),
                  WAVE_EPACK, 300);

  /* the old packs kept serving, with their bits */
  trl_hash_matches(s, "small", small, 128);
  free(orig);
  free(t1);
  free(t2);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

/* A job's JobInfo once it ended, its result's fingerprint and best. */
static void trl_job_result(nng_socket s, uint64_t job, uint64_t *fp,
                          uint64_t *best_nonce, uint64_t *best)
{
  Wave__V1__Response *r = td_wait_job(s, job);
  ck_assert_msg(r->job->state == WAVE__V1__JOB_STATE__DONE, "state %d: %s",
                r->job->state, r->job->error ? r->job->error->message : "");
  *fp = r->job->result->job_fingerprint;
  *best_nonce = r->job->result->best_nonce;
  *best = r->job->result->best_output;
  wave__v1__response__free_unpacked(r, NULL);
}

static uint64_t trl_submit(nng_socket s, uint64_t id, const char *pack,
                          uint64_t count)
{
  Wave__V1__Response *r = td_hash(s, id, pack, 0, count, 0, 0, 0, 0, NULL);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_JOB, "%s",
                r->body_case == WAVE__V1__RESPONSE__BODY_ERROR
                    ? r->error->message : "not a JobInfo");
  uint64_t job = r->job->job_id;
  wave__v1__response__free_unpacked(r, NULL);
  return job;
}

START_TEST(job_across_a_pack_reload_keeps_its_pack)
{
  td_daemon d;
  td_prepare(&d, NULL);
  char dir[256];
  trl_own_packs(&d, dir, sizeof dir);
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket s = td_dial(d.ipc);
  char small[300], old[300], closed[300];
  snprintf(small, sizeof small, "%s/small.yaml", dir);
  snprintf(old, sizeof old, "%s/small-old.yaml", dir);
  snprintf(closed, sizeof closed, "%s/closed.yaml", dir);
  char *orig = trl_read(small);
  char *ctext = trl_read(closed);
  /* a job long enough to be running when the reload has happened (the
   * test checks that it was) */
  const uint64_t count = 1ull << 21;
  uint64_t job = trl_submit(s, 400, "small", count);

  /* "small" becomes another pack (closed's program, version 2); the old
   * one stays loadable as "small-old" (the same pack under a new name) */
  char *t1 = trl_replace(orig, "name: small", "name: small-old");
  td_write(old, t1);
  char *t2 = trl_replace(ctext, "name: closed", "name: small");
  char *t3 = trl_replace(t2, "version: 1", "version: 2");
  td_write(small, t3);
  trl_edit(&d, "load: [closed, small]", "load: [closed, small, small-old]");
  trl_reload(&d, 1);
  Wave__V1__Response *r = td_job(s, job, 0, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
  ck_assert_msg(r->job->state == WAVE__V1__JOB_STATE__RUNNING ||
                r->job->state == WAVE__V1__JOB_STATE__QUEUED,
                "the job ended before the reload (state %d): make it longer",
                r->job->state);
  wave__v1__response__free_unpacked(r, NULL);

  uint64_t fp, bn, best;
  trl_job_result(s, job, &fp, &bn, &best);
  /* the same nonces on the old pack under its new name: the same bits */
  uint64_t fp_old, bn_old, best_old;
  trl_job_result(s, trl_submit(s, 401, "small-old", count), &fp_old, &bn_old,
                &best_old);
  ck_assert_uint_eq(fp, fp_old);
  ck_assert_uint_eq(bn, bn_old);
  ck_assert_uint_eq(best, best_old);
  /* and the CPU reference agrees on the best */
  wv_pack *p;
  wave_error err;
  ck_assert_int_eq(wv_pack_load_file(old, &p, &err), 0);
  uint64_t want;
  ck_assert_int_eq(wv_hash_verify(p, bn, &want, &err), 0);
  ck_assert_uint_eq(best, want);
  wv_pack_free(p);
  /* new jobs on "small" get the new pack's bits */
  uint64_t fp_new, bn_new, best_new;
  trl_job_result(s, trl_submit(s, 402, "small", count), &fp_new, &bn_new,
                &best_new);
  ck_assert_uint_ne(fp_new, fp);
  trl_hash_matches(s, "small", small, 128);

  /* undone: the first "small" serves again as it was, not prepared anew */
  td_write(small, orig);
  unlink(old);
  trl_edit(&d, "load: [closed, small, small-old]", "load: [closed, small]");
  trl_reload(&d, 1);
  ck_assert_uint_eq(trl_count(td_stderr(&d), "preparing pack small version 1"),
                    0);
  ck_assert_uint_eq(trl_count(td_stderr(&d), "preparing pack small version 2"),
                    2);  /* one per device */
  trl_hash_matches(s, "small", small, 128);
  free(orig);
  free(ctext);
  free(t1);
  free(t2);
  free(t3);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

/* The counts in the last reload's log line. */
static void trl_kept(td_daemon *d, size_t *configs, size_t *packs)
{
  const char *log = td_stderr(d), *p, *last = NULL;
  for (p = log; (p = strstr(p, "configs kept: ")) != NULL; p++)
    last = p;
  ck_assert_msg(last != NULL, "no reload says what it keeps:\n%s", log);
  ck_assert_int_eq(sscanf(last, "configs kept: %zu, pack sets kept: %zu",
                          configs, packs), 2);
}

/* Reloading an unchanged file keeps nothing (it used to keep a config,
 * about 24 KB, each time); a changed one keeps its config, and the next
 * unchanged reload keeps nothing more. */
START_TEST(reload_of_an_unchanged_file_keeps_nothing)
{
  td_daemon d;
  td_prepare(&d, NULL);
  ck_assert_int_eq(td_start(&d), 0);
  nng_socket s = td_dial(d.ipc);
  size_t configs, packs;
  for (int i = 0; i < 20; i++) {
    trl_reload(&d, 1);
    trl_kept(&d, &configs, &packs);
    ck_assert_uint_eq(configs, 1);  /* the start-up one */
    ck_assert_uint_eq(packs, 1);
  }
  td_good(s);
  trl_edit(&d, "max_job_rows: 8192", "max_job_rows: 16");
  trl_reload(&d, 1);
  trl_kept(&d, &configs, &packs);
  ck_assert_uint_eq(configs, 2);
  ck_assert_uint_eq(packs, 1);  /* the packs did not change */
  for (int i = 0; i < 5; i++) {
    trl_reload(&d, 1);
    trl_kept(&d, &configs, &packs);
    ck_assert_uint_eq(configs, 2);
  }
  /* the kept config is the changed one: 17 rows are too many now */
  uint32_t v[17] = {0};
  td_chunk c = {v, sizeof v};
  td_expect_error(td_reduce(s, 5, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM, &c,
                            1, NULL, 0, NULL),
                  WAVE_EJOBSIZE, 5);
  nng_close(s);
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

/* A reload whose packs.load names no pack fails with the name's position. */
START_TEST(reload_of_a_missing_pack_says_where)
{
  td_daemon d;
  td_prepare(&d, NULL);
  ck_assert_int_eq(td_start(&d), 0);
  trl_edit(&d, "load: [closed, small]", "load: [closed, nosuch]");
  trl_reload(&d, 0);
  /* line and column of "nosuch" in the file as written */
  char *text = trl_read(d.cfg);
  const char *at = strstr(text, "nosuch");
  size_t line = 1, col = 1;
  for (const char *p = text; p < at; p++, col++)
    if (*p == '\n') {
      line++;
      col = 0;
    }
  free(text);
  char want[600];
  snprintf(want, sizeof want, "%s:%zu:%zu: packs.load[1]: no pack named "
           "'nosuch'", d.cfg, line, col);
  ck_assert_msg(strstr(td_stderr(&d), want) != NULL, "no '%s' in:\n%s", want,
                td_stderr(&d));
  ck_assert_int_eq(td_stop(&d), 0);
  td_cleanup(&d);
}
END_TEST

int main(void)
{
  Suite *su = suite_create("reload");
  TCase *tc = tcase_create("reload");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, reload_adds_and_removes_listeners);
  tcase_add_test(tc, reload_with_a_listener_that_cannot_bind_changes_nothing);
  tcase_add_test(tc, reload_adds_a_pack);
  tcase_add_test(tc, reload_with_a_broken_pack_changes_nothing);
  tcase_add_test(tc, job_across_a_pack_reload_keeps_its_pack);
  tcase_add_test(tc, reload_of_an_unchanged_file_keeps_nothing);
  tcase_add_test(tc, reload_of_a_missing_pack_says_where);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
