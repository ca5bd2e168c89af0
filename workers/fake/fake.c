/* fake.c - the fake backend: the CPU backend that faults on purpose, for
 * tests only (docs/config.md "Testing").
 *
 * It is registered only by test programs (wavedd-test, tests/
 * wavedd_test.c, through wv_backend_add), never by wavedd, so no product
 * config can ask a device to fail.  A fake device is a CPU device (the same
 * threads, batch and exchange keys, bit-exact results) that counts its
 * steps, a reduction or a hash batch each (pack preparation does not
 * count), and once it has run `fault_after` of them every later step
 * fails with WAVE_EDEVICE, as a GPU that died would.  The count comes from
 * the device entry's `device` string: "fault_after=N" (N = 0 or no string:
 * never).  That replaces the product's former `fault_after` key.
 *
 * "hold_prepare=DIR" (alone, or after the count: "fault_after=N,
 * hold_prepare=DIR") holds a pack's preparation while the file DIR/<pack
 * name> exists: the step waits inside (the device thread sleeps in 5 ms
 * naps), so a test sees a pack being prepared for as long as it likes and
 * lets it go by removing the file.  No timing is involved.  A reduction
 * waits the same way while DIR/.reduce exists (a dot name is no pack's),
 * saying "fake NAME: reduction held (N rows)" on stderr as it starts to
 * wait, so a test keeps the device busy with a reduction for as long as
 * it likes, and sees which one the device took first.
 *
 * "slow_hash=FILE": while FILE exists, each hash batch naps 19 times as
 * long as its work took (the bits are the same), so the device hashes at
 * a twentieth of its rate whatever else the machine does, as a GPU that
 * lost its clocks: the daemon's rate watchdog (daemon/exec/health.h)
 * sees it.  Removing the file restores the rate.
 *
 * "wrong_bits=FILE": while FILE exists, every hash batch's first segment
 * fingerprint and every reduction's first value have their lowest bit
 * flipped, as a device that computes wrong answers: what `wavectl bench`
 * must catch (its mismatch test).  The pack checks ran at startup, so
 * only the jobs run while the file exists are wrong.
 *
 * "lacks=fsum": the device's caps say no fsum (caps.fsum 0, with a
 * reason), as a GPU without 64-bit integers: the daemon's refusal and
 * its pick past such a device are tested with it.
 *
 * "telemetry=FILE" feeds the health slot (workers/health.h): each read
 * parses FILE's "key value" lines (wv_health_parse_feed), so a test drives
 * every health path (fields present or absent, throttling, a bad line, no
 * file) by writing the file.  Without it the device has no health source.
 *
 * It also takes the pinning slots (worker.h host_register) without
 * pinning anything: it keeps the ranges, refuses overlapping ones, and
 * says on stderr what each host_unregister released, so that tests see
 * the daemon keep the slots' contract (pieces pinned once each, all of
 * them released before the mapping goes) with no GPU.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/base.h"
#include "workers/fake/fake.h"
#include "workers/health.h"
#include "workers/hash/hash.h"

extern const wv_backend wv_cpu_backend;  /* workers/cpu/cpu.c */

struct wv_device {
  wv_device *cpu;        /* the CPU device that does the work */
  uint64_t fault_after;  /* 0 = never */
  uint64_t steps;        /* device thread only */
  char hold[200];        /* hold_prepare=DIR, or "" */
  char slow[200];        /* slow_hash=FILE, or "" */
  char wrong[200];       /* wrong_bits=FILE, or "" */
  int lacks_fsum;        /* lacks=fsum */
  char name[64];
  struct fk_range { uintptr_t lo, hi; } pins[256];  /* host_register'd */
  size_t npins;
};

/* The device string: "key=value" entries joined by ',' (fault_after=N,
 * hold_prepare=DIR, telemetry=FILE, slow_hash=FILE, wrong_bits=FILE,
 * lacks=fsum; each at most once, any order) into *out and the strings of f ("" when not
 * given).  0, or -1 for anything else. */
typedef struct fk_files {
  char hold[200], tele[200], slow[200], wrong[200];
  int lacks_fsum;
} fk_files;

static int fk_parse(const char *s, uint64_t *out, fk_files *f)
{
  const size_t n = sizeof f->hold;
  *out = 0;
  f->hold[0] = f->tele[0] = f->slow[0] = f->wrong[0] = '\0';
  f->lacks_fsum = 0;
  while (s != NULL && *s != '\0') {
    size_t len = strcspn(s, ",");
    const char *eq = memchr(s, '=', len);
    if (eq == NULL || eq == s || eq + 1 == s + len)
      return -1;
    size_t klen = (size_t)(eq - s), vlen = len - klen - 1;
    const char *v = eq + 1;
    if (klen == 11 && strncmp(s, "fault_after", klen) == 0) {
      if (*v < '0' || *v > '9')
        return -1;
      errno = 0;
      char *end;
      unsigned long long x = strtoull(v, &end, 10);
      if (errno != 0 || end != v + vlen)
        return -1;
      *out = x;
    } else if ((klen == 12 && strncmp(s, "hold_prepare", klen) == 0) ||
               (klen == 9 && strncmp(s, "telemetry", klen) == 0) ||
               (klen == 9 && strncmp(s, "slow_hash", klen) == 0) ||
               (klen == 10 && strncmp(s, "wrong_bits", klen) == 0)) {
      char *dst = klen == 12 ? f->hold : klen == 10 ? f->wrong
                  : s[0] == 't' ? f->tele : f->slow;
      if (dst[0] != '\0' || vlen >= n)
        return -1;
      memcpy(dst, v, vlen);
      dst[vlen] = '\0';
    } else if (klen == 5 && strncmp(s, "lacks", klen) == 0 && vlen == 4 &&
               strncmp(v, "fsum", vlen) == 0 && !f->lacks_fsum) {
      f->lacks_fsum = 1;
    } else {
      return -1;
    }
    s += len;
    if (*s == ',' && *++s == '\0')
      return -1;
  }
  return 0;
}

static int fk_open(const wv_device_config *cfg, wv_device **out,
                   wave_error *err)
{
  *out = NULL;
  uint64_t n;
  fk_files fl;
  if (fk_parse(cfg->device_match, &n, &fl) != 0)
    return wv_seterr(err, WAVE_ECONFIG, "device %s: the fake backend's "
                     "device string is \"fault_after=N\", "
                     "\"hold_prepare=DIR\", \"telemetry=FILE\", "
                     "\"slow_hash=FILE\", \"wrong_bits=FILE\", "
                     "\"lacks=fsum\" or some of them (comma between), not "
                     "\"%s\"", cfg->name,
                     cfg->device_match);
  wv_device *d = calloc(1, sizeof *d);
  if (d == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  int rc = wv_cpu_backend.open(cfg, &d->cpu, err);
  if (rc != 0) {
    free(d);
    return rc;
  }
  d->fault_after = n;
  snprintf(d->hold, sizeof d->hold, "%s", fl.hold);
  snprintf(d->slow, sizeof d->slow, "%s", fl.slow);
  snprintf(d->wrong, sizeof d->wrong, "%s", fl.wrong);
  d->lacks_fsum = fl.lacks_fsum;
  snprintf(d->name, sizeof d->name, "%s", cfg->name);
  *out = d;
  return 0;
}

/* The health slot: the feed file the device string names (health.h's
 * format), read whole each time; no telemetry= key: no source. */
static void fk_health(const wv_device_config *cfg, const wv_caps *caps,
                      wv_health *out)
{
  (void)caps;
  uint64_t n;
  fk_files fl;
  const char *tele = fl.tele;
  if (fk_parse(cfg->device_match, &n, &fl) != 0 || tele[0] == '\0') {
    snprintf(out->why, sizeof out->why, "no health source: a fake device "
             "without telemetry=FILE");
    return;
  }
  char text[4096];
  FILE *f = fopen(tele, "r");
  if (f == NULL) {
    snprintf(out->why, sizeof out->why, "no health source: telemetry %.100s:"
             " %s", tele, strerror(errno));
    return;
  }
  size_t got = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[got] = '\0';
  wv_health_parse_feed(text, out);
}

static void fk_close(wv_device *d)
{
  if (d == NULL)
    return;
  wv_cpu_backend.close(d->cpu);
  free(d);
}

static void fk_caps(wv_device *d, wv_caps *caps)
{
  wv_cpu_backend.caps(d->cpu, caps);
  char desc[sizeof caps->description];
  snprintf(desc, sizeof desc, "fake (faults after %llu steps), %.100s",
           (unsigned long long)d->fault_after, caps->description);
  memcpy(caps->description, desc, sizeof desc);
  /* it stands in for a GPU backend: none of those runs them yet */
  caps->dtypes64 = 0;
  caps->argminmax = 0;
  /* fsum stays the CPU's: device splits over fake devices run it; but
   * for a device told lacks=fsum, which stands for one without it */
  if (d->lacks_fsum) {
    caps->fsum = 0;
    snprintf(caps->fsum_why, sizeof caps->fsum_why, "this fake device "
             "stands for one without it (lacks=fsum)");
  }
}

/* One step: 0, or the fault once fault_after steps have run. */
static int fk_step(wv_device *d, wave_error *err)
{
  if (d->fault_after == 0 || d->steps < d->fault_after) {
    d->steps++;
    return 0;
  }
  return wv_seterr(err, WAVE_EDEVICE, "injected fault after %llu steps "
                   "(fake backend, fault_after=%llu)",
                   (unsigned long long)d->steps,
                   (unsigned long long)d->fault_after);
}

/* hold_prepare: wait while DIR/<name> exists (see the top), saying
 * "fake NAME: <what> held<note>" once as it starts to wait when what is
 * set. */
static void fk_hold(const wv_device *d, const char *name, const char *what,
                    const char *note)
{
  if (d->hold[0] == '\0')
    return;
  char path[320];
  snprintf(path, sizeof path, "%s/%s", d->hold, name);
  struct timespec nap = {0, 5 * 1000 * 1000};
  for (int held = 0; access(path, F_OK) == 0; held = 1) {
    if (!held && what != NULL)
      fprintf(stderr, "fake %s: %s held%s\n", d->name, what, note);
    nanosleep(&nap, NULL);
  }
}

static int fk_reduce(wv_device *d, const wv_reduce_job *job,
                     wv_reduce_out *out, wave_error *err)
{
  int rc = fk_step(d, err);
  char note[40];
  snprintf(note, sizeof note, " (%llu rows)", (unsigned long long)job->rows);
  fk_hold(d, ".reduce", "reduction", note);
  if (rc == 0 && (rc = wv_cpu_backend.reduce(d->cpu, job, out, err)) == 0 &&
      d->wrong[0] != '\0' && access(d->wrong, F_OK) == 0)
    out->bits[0] ^= 1;  /* wrong_bits: see the top */
  return rc;
}

static int fk_prepare(wv_device *d, const struct wv_pack *p, wave_error *err)
{
  return wv_cpu_backend.hash_prepare(d->cpu, p, err);
}

static int fk_prepare_step(wv_device *d, const struct wv_pack *p, int *done,
                           wave_error *err)
{
  fk_hold(d, wv_pack_name(p), NULL, "");
  return wv_cpu_backend.hash_prepare_step(d->cpu, p, done, err);
}

static unsigned fk_prepare_steps(wv_device *d, const struct wv_pack *p)
{
  return wv_cpu_backend.hash_prepare_steps(d->cpu, p);
}

static int fk_hash(wv_device *d, const struct wv_pack *p, uint64_t nonce,
                   uint64_t count, uint64_t *out, wave_error *err)
{
  return wv_cpu_backend.hash(d->cpu, p, nonce, count, out, err);
}

static int fk_hash_batch(wv_device *d, const struct wv_pack *p,
                         struct wv_hash_batch *b, wave_error *err)
{
  int rc = fk_step(d, err);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (rc == 0)
    rc = wv_cpu_backend.hash_batch(d->cpu, p, b, err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (rc == 0 && d->wrong[0] != '\0' && access(d->wrong, F_OK) == 0)
    b->seg_fp[0] ^= 1;  /* wrong_bits: see the top */
  if (rc == 0 && d->slow[0] != '\0' && access(d->slow, F_OK) == 0) {
    /* slow_hash: see the top */
    uint64_t ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
                  (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
    ns *= 19;
    struct timespec nap = {(time_t)(ns / 1000000000u),
                           (long)(ns % 1000000000u)};
    nanosleep(&nap, NULL);
  }
  return rc;
}

static int fk_host_register(wv_device *d, const void *ptr, size_t bytes,
                            wave_error *err)
{
  uintptr_t lo = (uintptr_t)ptr, hi = lo + bytes;
  for (size_t i = 0; i < d->npins; i++)
    if (d->pins[i].lo < hi && lo < d->pins[i].hi)
      return wv_seterr(err, WAVE_EARG, "fake %s: [%#lx, %#lx) is pinned "
                       "already", d->name, (unsigned long)lo,
                       (unsigned long)hi);
  if (bytes == 0 || d->npins == sizeof d->pins / sizeof d->pins[0])
    return wv_seterr(err, WAVE_EUNSUPPORTED, "fake %s: no room to pin",
                     d->name);
  d->pins[d->npins].lo = lo;
  d->pins[d->npins].hi = hi;
  d->npins++;
  return 0;
}

static void fk_host_unregister(wv_device *d, const void *ptr, size_t bytes)
{
  uintptr_t lo = (uintptr_t)ptr, hi = lo + bytes;
  size_t kept = 0, pieces = 0;
  uint64_t freed = 0;
  for (size_t i = 0; i < d->npins; i++) {
    if (d->pins[i].lo >= lo && d->pins[i].hi <= hi) {
      pieces++;
      freed += d->pins[i].hi - d->pins[i].lo;
    } else {
      d->pins[kept++] = d->pins[i];
    }
  }
  d->npins = kept;
  fprintf(stderr, "fake %s: unpinned %zu pieces, %llu bytes; %zu left\n",
          d->name, pieces, (unsigned long long)freed, kept);
}

const wv_backend wv_fake_backend = {
  .name = "fake",
  .open = fk_open,
  .close = fk_close,
  .caps = fk_caps,
  .reduce = fk_reduce,
  .hash_prepare = fk_prepare,
  .hash_prepare_step = fk_prepare_step,
  .hash_prepare_steps = fk_prepare_steps,
  .hash = fk_hash,
  .hash_batch = fk_hash_batch,
  .host_register = fk_host_register,
  .host_unregister = fk_host_unregister,
  .health = fk_health,
};
