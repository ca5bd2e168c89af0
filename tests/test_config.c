/* test_config.c - wavedd's config loader (daemon/config.c).
 *
 * Every case writes a YAML text into a temporary file and loads it.  Good
 * files are checked against the defaults and bounds documented in
 * docs/config.md; bad ones against the exact "file:line:column: key: what"
 * message, with the line and column counted by hand from the text here.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sockdir.h"
#include "core/yamlconf.h"
#include "daemon/config.h"
#include "daemon/config_keys.h"
#include "daemon/log.h"
#include "daemon/reload.h"
#include "workers/worker.h"
#include "wave/client.h"
#include "workers/worker.h"

static char tcg_dir[256];
static char tcg_path[512];

static void tcg_setup(void)
{
  snprintf(tcg_dir, sizeof tcg_dir, "/tmp/wave-config.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tcg_dir));
  snprintf(tcg_path, sizeof tcg_path, "%s/c.yaml", tcg_dir);
}

static void tcg_teardown(void)
{
  unlink(tcg_path);
  char sub[600];
  snprintf(sub, sizeof sub, "%s/sub/c.yaml", tcg_dir);
  unlink(sub);
  snprintf(sub, sizeof sub, "%s/sub", tcg_dir);
  rmdir(sub);
  rmdir(tcg_dir);
}

static void tcg_write(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fputs(text, f) >= 0, 1);
  ck_assert_int_eq(fclose(f), 0);
}

static wd_config *tcg_load_ok(const char *text)
{
  tcg_write(tcg_path, text);
  wd_config *c = NULL;
  wave_error err = {0};
  int rc = wd_config_load(tcg_path, &c, &err);
  ck_assert_msg(rc == 0, "unexpected error: %s", err.message);
  ck_assert_ptr_nonnull(c);
  return c;
}

/* The load must fail with "<file>:<where>: <key>: <what...>". */
static void tcg_load_bad(const char *text, const char *where, const char *key,
                        const char *what)
{
  tcg_write(tcg_path, text);
  wd_config *c = (wd_config *)1;
  wave_error err = {0};
  int rc = wd_config_load(tcg_path, &c, &err);
  ck_assert_int_eq(rc, WAVE_ECONFIG);
  ck_assert_int_eq(err.code, WAVE_ECONFIG);
  ck_assert_ptr_null(c);
  char want[1024];
  snprintf(want, sizeof want, "%s:%s: %s: ", tcg_path, where, key);
  ck_assert_msg(strncmp(err.message, want, strlen(want)) == 0,
                "message '%s' does not start with '%s'", err.message, want);
  ck_assert_msg(strstr(err.message + strlen(want), what) != NULL,
                "message '%s' does not say '%s'", err.message, what);
}

#define ONE_DEVICE "devices:\n  - name: cpu0\n    backend: cpu\n"

START_TEST(defaults)
{
  wd_config *c = tcg_load_ok(ONE_DEVICE);
  /* docs/config.md's defaults */
  ck_assert_uint_eq(c->n_listen, 1);
  /* the default socket's rule (core/sockdir.h; test_sockdir pins it): the
   * system socket as root, a user's own place otherwise */
  char url[160];
  ck_assert_str_eq(c->listen[0], wv_default_url(url, sizeof url, 0));
  if (geteuid() == 0)
    ck_assert_str_eq(c->listen[0], WAVE_DEFAULT_URL);
  ck_assert_uint_eq(c->ipc_mode, 0660);
  ck_assert_int_eq(c->log_level, WD_LOG_INFO);
  ck_assert_uint_eq(c->limits.max_request_bytes, 64ull << 20);
  ck_assert_uint_eq(c->limits.max_job_rows, 1ull << 28);
  ck_assert_uint_eq(c->limits.jobs_in_flight, 64);
  ck_assert_uint_eq(c->limits.contexts, 64);
  ck_assert_uint_eq(c->limits.max_outputs, 65536);
  ck_assert_uint_eq(c->limits.max_winners, 4096);
  ck_assert_uint_eq(c->limits.max_wait_ms, 10000);
  ck_assert_uint_eq(c->limits.keep_jobs, 256);
  ck_assert_uint_eq(c->limits.keep_seconds, 600);
  ck_assert_uint_eq(c->limits.file_readers, 0);  /* min(12, cores) */
  char dir[600];
  snprintf(dir, sizeof dir, "%s/packs", tcg_dir);
  ck_assert_str_eq(c->packs_dir, dir);
  ck_assert_int_eq(c->packs_dir_set, 0);
  ck_assert_int_eq(c->packs_all, 1);
  ck_assert_int_eq(c->packs_prepare, WD_PREPARE_STARTUP);
  ck_assert_uint_eq(c->n_devices, 1);
  const wd_device_cfg *d = &c->devices[0];
  ck_assert_str_eq(d->name, "cpu0");
  ck_assert_str_eq(d->backend, "cpu");
  ck_assert_uint_eq(d->index, 0);
  ck_assert_uint_eq(d->threads, 0);
  ck_assert_uint_eq(d->queue_depth, 64);
  ck_assert_int_eq(d->exchange, WV_EXCHANGE_AUTO);
  ck_assert_uint_eq(d->group_units, 0);
  ck_assert_uint_eq(d->batch, 0);
  wd_config_free(c);
}
END_TEST

START_TEST(every_key)
{
  wd_config *c = tcg_load_ok(
      "listen: [ipc:///tmp/x.sock, \"tcp://127.0.0.1:7000\"]\n"
      "auth: none\n"
      "ipc_mode: 0640\n"
      "log_level: debug\n"
      "limits:\n"
      "  max_request_bytes: 0x100000\n"
      "  max_job_rows: 1000\n"
      "  jobs_in_flight: 3\n"
      "  contexts: 7\n"
      "  max_outputs: 10\n"
      "  max_winners: 11\n"
      "  max_wait_ms: 12\n"
      "  keep_jobs: 13\n"
      "  keep_seconds: 14\n"
      "packs:\n"
      "  dir: /opt/packs\n"
      "  load: [small, closed]\n"
      "  prepare: first-use\n"
      "devices:\n"
      "  - name: a\n"
      "    backend: cpu\n"
      "    index: 2\n"
      "    threads: 3\n"
      "    queue_depth: 4\n"
      "    exchange: local\n"
      "    group_units: 5\n"
      "    batch: 4294967296\n"
      "    platform: 1\n"
      "    device: NVIDIA H200\n"
      "  - {name: b.2_x-y, backend: cpu}\n");
  ck_assert_uint_eq(c->n_listen, 2);
  ck_assert_str_eq(c->listen[0], "ipc:///tmp/x.sock");
  ck_assert_str_eq(c->listen[1], "tcp://127.0.0.1:7000");
  ck_assert_uint_eq(c->ipc_mode, 0640);
  ck_assert_int_eq(c->log_level, WD_LOG_DEBUG);
  ck_assert_uint_eq(c->limits.max_request_bytes, 1u << 20);
  ck_assert_uint_eq(c->limits.max_job_rows, 1000);
  ck_assert_uint_eq(c->limits.jobs_in_flight, 3);
  ck_assert_uint_eq(c->limits.contexts, 7);
  ck_assert_uint_eq(c->limits.max_outputs, 10);
  ck_assert_uint_eq(c->limits.max_winners, 11);
  ck_assert_uint_eq(c->limits.max_wait_ms, 12);
  ck_assert_uint_eq(c->limits.keep_jobs, 13);
  ck_assert_uint_eq(c->limits.keep_seconds, 14);
  ck_assert_str_eq(c->packs_dir, "/opt/packs");
  ck_assert_int_eq(c->packs_dir_set, 1);
  ck_assert_int_eq(c->packs_all, 0);
  ck_assert_uint_eq(c->n_packs_load, 2);
  ck_assert_str_eq(c->packs_load[0], "small");
  ck_assert_str_eq(c->packs_load[1], "closed");
  ck_assert_int_eq(c->packs_prepare, WD_PREPARE_FIRST_USE);
  ck_assert_uint_eq(c->n_devices, 2);
  ck_assert_str_eq(c->devices[0].name, "a");
  ck_assert_uint_eq(c->devices[0].index, 2);
  ck_assert_uint_eq(c->devices[0].threads, 3);
  ck_assert_uint_eq(c->devices[0].queue_depth, 4);
  ck_assert_int_eq(c->devices[0].exchange, WV_EXCHANGE_LOCAL);
  ck_assert_uint_eq(c->devices[0].group_units, 5);
  ck_assert_uint_eq(c->devices[0].batch, 1ull << 32);
  ck_assert_uint_eq(c->devices[0].platform, 1);
  ck_assert_str_eq(c->devices[0].device, "NVIDIA H200");
  ck_assert_str_eq(c->devices[1].device, "");
  ck_assert_str_eq(c->devices[1].name, "b.2_x-y");
  ck_assert_uint_eq(c->devices[1].queue_depth, 64);
  wd_config_free(c);
}
END_TEST

START_TEST(shipped_default)
{
  const char *src = getenv("WAVE_SOURCE_DIR");
  ck_assert_ptr_nonnull(src);
  char path[600];
  snprintf(path, sizeof path, "%s/config/devices.yaml", src);
  wd_config *c = NULL;
  wave_error err = {0};
  ck_assert_msg(wd_config_load(path, &c, &err) == 0, "%s", err.message);
  /* one CPU device, ipc only, on the client's default URL: the system
   * socket as root, the user's own in $XDG_RUNTIME_DIR otherwise (the
   * README's first command as a user: no /run/wavedd to create) */
  ck_assert_uint_eq(c->n_devices, 1);
  ck_assert_str_eq(c->devices[0].backend, "cpu");
  ck_assert_uint_eq(c->n_listen, 1);
  char def[160];
  ck_assert_str_eq(c->listen[0], wv_default_url(def, sizeof def, 0));
  if (geteuid() == 0)
    ck_assert_str_eq(c->listen[0], WAVE_DEFAULT_URL);
  char packs[700];
  snprintf(packs, sizeof packs, "%s/config/packs", src);
  ck_assert_str_eq(c->packs_dir, packs);
  /* packs on first use: the idle daemon holds no 1 GiB dataset */
  ck_assert_int_eq(c->packs_prepare, WD_PREPARE_FIRST_USE);
  wd_config_free(c);
}
END_TEST

START_TEST(relative_packs_dir)
{
  char sub[600], path[700];
  snprintf(sub, sizeof sub, "%s/sub", tcg_dir);
  ck_assert_int_eq(mkdir(sub, 0700), 0);
  snprintf(path, sizeof path, "%s/c.yaml", sub);
  tcg_write(path, "packs: {dir: mine}\n" ONE_DEVICE);
  wd_config *c = NULL;
  wave_error err = {0};
  ck_assert_msg(wd_config_load(path, &c, &err) == 0, "%s", err.message);
  char want[700];
  snprintf(want, sizeof want, "%s/mine", sub);
  ck_assert_str_eq(c->packs_dir, want);
  wd_config_free(c);
}
END_TEST

START_TEST(empty_sections_and_all)
{
  wd_config *c = tcg_load_ok("limits:\npacks:\n  load: all\n" ONE_DEVICE);
  ck_assert_uint_eq(c->limits.contexts, 64);
  ck_assert_int_eq(c->packs_all, 1);
  wd_config_free(c);
  c = tcg_load_ok("packs: {load: []}\n" ONE_DEVICE);
  ck_assert_int_eq(c->packs_all, 0);
  ck_assert_uint_eq(c->n_packs_load, 0);
  wd_config_free(c);
}
END_TEST

START_TEST(missing_file)
{
  wd_config *c = NULL;
  wave_error err = {0};
  ck_assert_int_eq(wd_config_load("/nonexistent/wave.yaml", &c, &err),
                   WAVE_ECONFIG);
  ck_assert_ptr_null(c);
  ck_assert_ptr_nonnull(strstr(err.message, "/nonexistent/wave.yaml"));
}
END_TEST

START_TEST(bad_integers)
{
  tcg_load_bad("devices:\n"
              "  - name: cpu0\n"
              "    backend: cpu\n"
              "    threads: 2000\n",
              "4:14", "devices[0].threads", "expected an integer 0..1024");
  tcg_load_bad("devices:\n"
              "  - name: cpu0\n"
              "    backend: cpu\n"
              "    queue_depth: 0\n",
              "4:18", "devices[0].queue_depth", "expected an integer 1..65536");
  tcg_load_bad("devices:\n"
              "  - name: cpu0\n"
              "    backend: cpu\n"
              "    index: -1\n",
              "4:12", "devices[0].index", "expected an integer 0..255");
  tcg_load_bad("devices:\n  - {name: c, backend: cpu, max_temperature_c: "
              "80, resume_temperature_c: 80}\n", "2:74", "devices[0]",
              "resume_temperature_c 80 must be below max_temperature_c 80");
  tcg_load_bad("devices:\n  - {name: c, backend: cpu, resume_temperature_c: "
              "70}\n", "2:51", "devices[0]", "resume_temperature_c needs "
              "max_temperature_c");
  tcg_load_bad("limits:\n"
              "  contexts: many\n" ONE_DEVICE,
              "2:13", "limits.contexts", "expected an integer 1..4096");
  tcg_load_bad("limits:\n"
              "  max_request_bytes: 12.5\n" ONE_DEVICE,
              "2:22", "limits.max_request_bytes", "expected an integer");
  tcg_load_bad("limits:\n"
              "  max_wait_ms: 60000\n" ONE_DEVICE,
              "2:16", "limits.max_wait_ms", "expected an integer 0..50000");
  tcg_load_bad("limits:\n"
              "  keep_jobs: [1]\n" ONE_DEVICE,
              "2:14", "limits.keep_jobs", "expected an integer");
}
END_TEST

/* limits.file_readers: the reader pool's size (daemon/bulk/readers.h) */
START_TEST(file_readers_key)
{
  wd_config *c = tcg_load_ok("limits:\n  file_readers: 12\n" ONE_DEVICE);
  ck_assert_uint_eq(c->limits.file_readers, 12);
  wd_config_free(c);
  c = tcg_load_ok("limits:\n  file_readers: 64\n" ONE_DEVICE);
  ck_assert_uint_eq(c->limits.file_readers, 64);
  wd_config_free(c);
  tcg_load_bad("limits:\n"
              "  file_readers: 65\n" ONE_DEVICE,
              "2:17", "limits.file_readers", "expected an integer 0..64");
  tcg_load_bad("limits:\n"
              "  jobs_in_flight: 4\n"
              "  file_readers: -1\n" ONE_DEVICE,
              "3:17", "limits.file_readers", "expected an integer 0..64");
  tcg_load_bad("limits:\n"
              "  file_readers: eight\n" ONE_DEVICE,
              "2:17", "limits.file_readers", "expected an integer 0..64");
}
END_TEST

/* limits.staging_rings: the devices' rings made as they open (the
 * default) or at their first file job (daemon/bulk/filered.h) */
START_TEST(staging_rings_key)
{
  wd_config *c = tcg_load_ok(ONE_DEVICE);
  ck_assert_int_eq(c->limits.staging_rings, WD_PREPARE_STARTUP);
  wd_config_free(c);
  c = tcg_load_ok("limits:\n  staging_rings: first-use\n" ONE_DEVICE);
  ck_assert_int_eq(c->limits.staging_rings, WD_PREPARE_FIRST_USE);
  wd_config_free(c);
  tcg_load_bad("limits:\n"
              "  staging_rings: never\n" ONE_DEVICE,
              "2:18", "limits.staging_rings",
              "expected one of: startup, first-use");
}
END_TEST

START_TEST(bad_enums_and_modes)
{
  tcg_load_bad("log_level: loud\n" ONE_DEVICE, "1:12", "log_level",
              "expected one of: error, warn, info, debug");
  tcg_load_bad("ipc_mode: 0999\n" ONE_DEVICE, "1:11", "ipc_mode",
              "expected an octal file mode");
  tcg_load_bad("ipc_mode: 01777\n" ONE_DEVICE, "1:11", "ipc_mode",
              "expected an octal file mode");
  tcg_load_bad("devices:\n"
              "  - name: cpu0\n"
              "    backend: cpu\n"
              "    exchange: warp\n",
              "4:15", "devices[0].exchange",
              "expected one of: auto, shuffle, local");
  tcg_load_bad("packs:\n"
              "  prepare: lazily\n" ONE_DEVICE,
              "2:12", "packs.prepare", "expected one of: startup, first-use");
}
END_TEST

START_TEST(unknown_and_duplicate_keys)
{
  tcg_load_bad("colour: blue\n" ONE_DEVICE, "1:1", "colour", "unknown key");
  tcg_load_bad("limits:\n  max_rows: 5\n" ONE_DEVICE, "2:3", "limits.max_rows",
              "unknown key");
  tcg_load_bad("devices:\n"
              "  - name: cpu0\n"
              "    backend: cpu\n"
              "    colour: blue\n",
              "4:5", "devices[0].colour", "unknown key");
  tcg_load_bad("log_level: info\n"
              "log_level: debug\n" ONE_DEVICE,
              "2:1", "log_level", "duplicate key");
  tcg_load_bad("devices:\n"
              "  - name: cpu0\n"
              "    backend: cpu\n"
              "    name: cpu1\n",
              "4:5", "devices[0].name", "duplicate key");
}
END_TEST

START_TEST(devices)
{
  tcg_load_bad("log_level: info\n", "1:1", "devices", "missing key 'devices'");
  tcg_load_bad("", "1:1", "devices", "at least one device");
  tcg_load_bad("devices: []\n", "1:10", "devices", "at least one device");
  tcg_load_bad("devices: cpu\n", "1:10", "devices", "expected a list of devices or 'auto'");
  tcg_load_bad("devices:\n  - cpu0\n", "2:5", "devices[0]",
              "expected a mapping");
  tcg_load_bad("devices:\n"
              "  - name: cpu0\n",
              "2:5", "devices[0]", "missing key 'backend'");
  tcg_load_bad("devices:\n"
              "  - backend: cpu\n",
              "2:5", "devices[0]", "missing key 'name'");
  tcg_load_bad("devices:\n"
              "  - name: cpu0\n"
              "    backend: cpu\n"
              "  - name: cpu0\n"
              "    backend: cpu\n",
              "4:11", "devices[1].name", "already used by devices[0]");
  tcg_load_bad("devices:\n"
              "  - name: \"cpu 0\"\n"
              "    backend: cpu\n",
              "2:11", "devices[0].name", "letters, digits");
  tcg_load_bad("devices:\n"
              "  - name: cpu0\n"
              "    backend: abacus\n",
              "3:14", "devices[0].backend", "unknown backend 'abacus'");
  /* A known backend that this build does not compile in (which one
   * depends on the build options; all of them built in: nothing to try). */
  static const char *const known[] = {"opencl", "hip", "vulkan", "cuda"};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    if (wv_backend_find(known[i]) != NULL)
      continue;
    char yaml[128], want[96];
    snprintf(yaml, sizeof yaml, "devices:\n  - name: cl0\n    backend: %s\n",
             known[i]);
    snprintf(want, sizeof want, "backend '%s' not built into this wavedd",
             known[i]);
    tcg_load_bad(yaml, "3:14", "devices[0].backend", want);
    break;
  }
}
END_TEST

START_TEST(listen_urls)
{
  tcg_load_bad("listen: ipc:///tmp/a.sock\n" ONE_DEVICE, "1:9", "listen",
              "expected a list of URLs");
  tcg_load_bad("listen: []\n" ONE_DEVICE, "1:9", "listen",
              "at least one URL");
  tcg_load_bad("listen:\n"
              "  - ipc:///tmp/a.sock\n"
              "  - http://127.0.0.1:80\n" ONE_DEVICE,
              "3:5", "listen[1]",
              "the scheme must be ipc://, tcp:// or tls+tcp://");
  tcg_load_bad("listen:\n"
              "  - tcp://127.0.0.1\n" ONE_DEVICE,
              "2:5", "listen[0]", "needs a port");
  tcg_load_bad("listen:\n"
              "  - ipc:///tmp/a.sock\n"
              "  - ipc:///tmp/a.sock\n" ONE_DEVICE,
              "3:5", "listen[1]", "listed twice");
  char long_url[300] = "listen: [ipc:///tmp/";
  for (int i = 0; i < 120; i++)
    strcat(long_url, "x");
  strcat(long_url, "]\n" ONE_DEVICE);
  tcg_load_bad(long_url, "1:10", "listen[0]", "1..107 bytes");
}
END_TEST

START_TEST(metrics_url)
{
  wd_config *c = tcg_load_ok(ONE_DEVICE);
  ck_assert_str_eq(c->metrics, "");  /* off by default */
  wd_config_free(c);
  c = tcg_load_ok("metrics: http://127.0.0.1:9464\n" ONE_DEVICE);
  ck_assert_str_eq(c->metrics, "http://127.0.0.1:9464");
  wd_config_free(c);
  c = tcg_load_ok("metrics: http://0.0.0.0:0/metrics\n" ONE_DEVICE);
  wd_config_free(c);
  tcg_load_bad("metrics: tcp://127.0.0.1:9464\n" ONE_DEVICE, "1:10", "metrics",
              "the scheme must be http://");
  tcg_load_bad("metrics: http://127.0.0.1\n" ONE_DEVICE, "1:10", "metrics",
              "needs a port");
  tcg_load_bad("metrics: http://127.0.0.1:9464/stats\n" ONE_DEVICE, "1:10",
              "metrics", "the endpoint is /metrics");
  tcg_load_bad("metrics: [a]\n" ONE_DEVICE, "1:10", "metrics",
              "expected a string");
}
END_TEST

START_TEST(packs_keys)
{
  tcg_load_bad("packs:\n"
              "  load: [small, small]\n" ONE_DEVICE,
              "2:17", "packs.load[1]", "listed twice");
  tcg_load_bad("packs:\n"
              "  load: some\n" ONE_DEVICE,
              "2:9", "packs.load", "expected a list of pack names or 'all'");
  tcg_load_bad("packs: [a]\n" ONE_DEVICE, "1:8", "packs",
              "expected a mapping");
}
END_TEST

/* The product has no testing keys: fault_after (a device that fails on
 * purpose) moved to wavedd-test's fake backend, which wavedd lacks. */
START_TEST(no_testing_aids)
{
  tcg_load_bad("devices:\n"
              "  - name: cpu0\n"
              "    backend: cpu\n"
              "    fault_after: 3\n",
              "4:5", "devices[0].fault_after", "unknown key");
  tcg_load_bad("devices:\n"
              "  - name: cpu0\n"
              "    backend: fake\n",
              "3:14", "devices[0].backend", "unknown backend 'fake'");
}
END_TEST

/* 50,000 devices load, and the duplicate-name check is O(n log n): the
 * quadratic one made n^2/2 = 1.25e9 comparisons here (100k devices did
 * not finish in 120 s, issue 12).  A duplicate at the end is still found,
 * at its own node. */
START_TEST(many_devices)
{
  enum { N = 50000 };
  size_t cap = (size_t)N * 48 + 64;
  char *text = malloc(cap);
  ck_assert_ptr_nonnull(text);
  size_t k = (size_t)snprintf(text, cap, "devices:\n");
  for (unsigned i = 0; i < N; i++)
    k += (size_t)snprintf(text + k, cap - k,
                          "  - {name: d%u, backend: cpu}\n", i);
  uint64_t before = wd_config_compares;
  wd_config *c = tcg_load_ok(text);
  uint64_t made = wd_config_compares - before;
  ck_assert_uint_eq(c->n_devices, N);
  ck_assert_str_eq(c->devices[N - 1].name, "d49999");
  wd_config_free(c);
  /* n log2 n is 780k; qsort's merge sort stays below 2 n log2 n */
  ck_assert_msg(made < 2000000, "%llu comparisons for %d names",
                (unsigned long long)made, N);
  /* the last device repeats d17 */
  k += (size_t)snprintf(text + k, cap - k, "  - {name: d17, backend: cpu}\n");
  char where[32];
  snprintf(where, sizeof where, "%d:12", N + 2);
  tcg_load_bad(text, where, "devices[50000].name",
              "'d17' is already used by devices[17]");
  free(text);
}
END_TEST

/* Among several duplicates, the first device (in file order) that repeats
 * an earlier name is the one named, with the earliest it repeats. */
START_TEST(duplicates_first_in_order)
{
  tcg_load_bad("devices:\n"
              "  - {name: b, backend: cpu}\n"
              "  - {name: a, backend: cpu}\n"
              "  - {name: c, backend: cpu}\n"
              "  - {name: a, backend: cpu}\n"
              "  - {name: b, backend: cpu}\n",
              "5:12", "devices[3].name", "'a' is already used by devices[1]");
  tcg_load_bad("listen: [\"ipc:///tmp/a\", \"ipc:///tmp/b\", \"ipc:///tmp/b\","
              " \"ipc:///tmp/a\"]\n" ONE_DEVICE,
              "1:42", "listen[2]", "listed twice");
}
END_TEST

/* packs.dir that is not a folder: the message names its line:column. */
START_TEST(packs_dir_not_a_folder)
{
  wd_config *c = tcg_load_ok("log_level: info\n"
                            "packs:\n"
                            "  dir: /nonexistent/wave-packs\n" ONE_DEVICE);
  wv_packset *set = NULL;
  wd_packs packs;
  wave_error err = {0};
  ck_assert_int_eq(wd_packs_load(c, &set, &packs, &err), WAVE_ECONFIG);
  char want[600];
  snprintf(want, sizeof want, "%s:3:8: packs.dir: /nonexistent/wave-packs is "
           "not a folder", tcg_path);
  ck_assert_str_eq(err.message, want);
  wd_config_free(c);
  c = tcg_load_ok("packs:\n"
                 "  load: [small]\n" ONE_DEVICE);  /* packs/ beside c.yaml */
  ck_assert_int_eq(wd_packs_load(c, &set, &packs, &err), WAVE_ECONFIG);
  snprintf(want, sizeof want, "%s:2:9: packs.load: ", tcg_path);
  ck_assert_msg(strncmp(err.message, want, strlen(want)) == 0, "%s",
                err.message);
  wd_config_free(c);
}
END_TEST

/* A packs.load name with no pack: the error points at the name, as every
 * other config error points at its node. */
START_TEST(packs_load_missing_pack)
{
  char text[1200];
  snprintf(text, sizeof text, "packs:\n  dir: %s/config/packs\n"
           "  load:\n    - closed\n    - nosuch\n" ONE_DEVICE,
           getenv("WAVE_SOURCE_DIR"));
  wd_config *c = tcg_load_ok(text);
  wv_packset *set = NULL;
  wd_packs packs;
  wave_error err = {0};
  ck_assert_int_eq(wd_packs_load(c, &set, &packs, &err), WAVE_ECONFIG);
  char want[1200];
  snprintf(want, sizeof want, "%s:5:7: packs.load[1]: no pack named 'nosuch' "
           "in %s/config/packs", tcg_path, getenv("WAVE_SOURCE_DIR"));
  ck_assert_str_eq(err.message, want);
  wd_packs_free(set, &packs);
  wd_config_free(c);
  /* flow style: the column of the name inside the brackets */
  snprintf(text, sizeof text, "packs: {dir: %s/config/packs, "
           "load: [nosuch, closed]}\n" ONE_DEVICE, getenv("WAVE_SOURCE_DIR"));
  c = tcg_load_ok(text);
  ck_assert_int_eq(wd_packs_load(c, &set, &packs, &err), WAVE_ECONFIG);
  size_t col = strlen("packs: {dir: ") + strlen(getenv("WAVE_SOURCE_DIR")) +
               strlen("/config/packs, load: [") + 1;
  snprintf(want, sizeof want, "%s:1:%zu: packs.load[0]: no pack named "
           "'nosuch' in ", tcg_path, col);
  ck_assert_msg(strncmp(err.message, want, strlen(want)) == 0, "%s",
                err.message);
  wd_packs_free(set, &packs);
  wd_config_free(c);
}
END_TEST

/* wd_config_same: one file read twice is the same config; any key that
 * differs, a device's included, makes them differ. */
START_TEST(same_config)
{
  static const char base[] = "listen: [\"ipc:///tmp/x.sock\"]\n"
                             "limits: {max_job_rows: 100}\n" ONE_DEVICE;
  wd_config *a = tcg_load_ok(base), *b = tcg_load_ok(base);
  ck_assert_int_eq(wd_config_same(a, b), 1);
  wd_config_free(b);
  static const char *const other[] = {
      "listen: [\"ipc:///tmp/y.sock\"]\nlimits: {max_job_rows: 100}\n"
      ONE_DEVICE,
      "listen: [\"ipc:///tmp/x.sock\"]\nlimits: {max_job_rows: 101}\n"
      ONE_DEVICE,
      "listen: [\"ipc:///tmp/x.sock\"]\nlimits: {max_job_rows: 100}\n"
      ONE_DEVICE "    queue_depth: 3\n",
      "listen: [\"ipc:///tmp/x.sock\"]\nlimits: {max_job_rows: 100}\n"
      "log_level: debug\n" ONE_DEVICE,
      "listen: [\"ipc:///tmp/x.sock\"]\nlimits: {max_job_rows: 100}\n"
      "packs: {load: [small]}\n" ONE_DEVICE,
  };
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    b = tcg_load_ok(other[i]);
    ck_assert_msg(!wd_config_same(a, b), "the same as: %s", other[i]);
    wd_config_free(b);
  }
  wd_config_free(a);
}
END_TEST

/* The reload column (config_keys.h): every key names what a reload does
 * with it, and a refused or start-only one says why. */
START_TEST(every_key_has_a_reload_rule)
{
  size_t refused = 0, later = 0;
  for (size_t i = 0; i < wd_cf_nkeys; i++) {
    const cf_key *e = &wd_cf_keys[i];
    ck_assert_msg(e->reload == CF_RL_LIVE || e->reload == CF_RL_START ||
                  e->reload == CF_RL_REFUSE, "%s: no reload rule", e->name);
    ck_assert_msg((e->reload == CF_RL_LIVE) == (e->why == NULL),
                  "%s: a reason goes with START and REFUSE only", e->name);
    refused += e->reload == CF_RL_REFUSE;
    later += e->reload == CF_RL_START;
  }
  ck_assert_uint_gt(refused, 0);
  ck_assert_uint_gt(later, 0);
}
END_TEST

static void tcg_later(void *arg, const char *key, const char *why)
{
  (void)why;
  snprintf(arg, 64, "%s", key);
}

/* wd_config_reload_check: a live key passes, a start-only one passes and
 * is told, a refused one fails with its message (docs/config.md). */
START_TEST(reload_rules)
{
  static const char base[] = "limits: {max_job_rows: 100}\n" ONE_DEVICE;
  static const struct {
    const char *text, *later, *msg;
  } cases[] = {
    {"limits: {max_job_rows: 5}\n" ONE_DEVICE, "", NULL},
    {"limits: {max_job_rows: 100, decode_threads: 3}\n" ONE_DEVICE,
     "limits.decode_threads", NULL},
    {"limits: {max_job_rows: 100, contexts: 9}\n" ONE_DEVICE, "",
     "limits.contexts changed; a reload cannot resize the socket (restart "
     "wavedd)"},
    {"ipc_mode: 0600\nlimits: {max_job_rows: 100}\n" ONE_DEVICE, "",
     "ipc_mode changed; a reload cannot change the socket file (restart "
     "wavedd)"},
    {"limits: {max_job_rows: 100}\n" ONE_DEVICE "    queue_depth: 3\n", "",
     "devices[0] (cpu0) changed; a reload cannot change devices (restart "
     "wavedd; docs/service.md says why)"},
    {"limits: {max_job_rows: 100}\n" ONE_DEVICE
     "  - {name: cpu1, backend: cpu}\n", "",
     "devices: 2 devices instead of 1; a reload cannot add or remove "
     "devices"},
  };
  wd_config *a = tcg_load_ok(base);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wd_config *b = tcg_load_ok(cases[i].text);
    char told[64] = "";
    wave_error err = {0};
    int rc = wd_config_reload_check(a, b, tcg_later, told, &err);
    if (cases[i].msg == NULL) {
      ck_assert_msg(rc == 0, "%s: %s", cases[i].text, err.message);
    } else {
      ck_assert_int_eq(rc, WAVE_ECONFIG);
      ck_assert_msg(strstr(err.message, cases[i].msg) != NULL &&
                    strncmp(err.message, tcg_path, strlen(tcg_path)) == 0,
                    "'%s' does not say '%s'", err.message, cases[i].msg);
    }
    ck_assert_str_eq(told, cases[i].later);
    wd_config_free(b);
  }
  wd_config_free(a);
}
END_TEST

/* ... and as the loader applies it: separators and hex in any integer key,
 * quoted or plain; the bounds after the rule; the message names the value. */
START_TEST(numbers_in_config)
{
  wd_config *c = tcg_load_ok("limits:\n"
                            "  max_request_bytes: 67_108_864\n"
                            "  max_job_rows: \"0x1000\"\n"
                            "  contexts: 007\n" ONE_DEVICE);
  ck_assert_uint_eq(c->limits.max_request_bytes, 64u << 20);
  ck_assert_uint_eq(c->limits.max_job_rows, 4096);
  ck_assert_uint_eq(c->limits.contexts, 7);
  wd_config_free(c);
  tcg_load_bad("limits:\n"
              "  keep_result_bytes: 18446744073709551616\n" ONE_DEVICE,
              "2:22", "limits.keep_result_bytes",
              "expected an integer 0..1099511627776, not "
              "'18446744073709551616'");
  tcg_load_bad("limits:\n"
              "  contexts: 64k\n" ONE_DEVICE,
              "2:13", "limits.contexts", "expected an integer 1..4096, not '64k'");
  tcg_load_bad("limits:\n"
              "  contexts: +5\n" ONE_DEVICE,
              "2:13", "limits.contexts", "not '+5'");
  tcg_load_bad("limits:\n"
              "  contexts:\n"
              "  keep_jobs: 1\n" ONE_DEVICE,
              "2:12", "limits.contexts", "expected an integer 1..4096");
}
END_TEST

START_TEST(yaml_syntax)
{
  tcg_load_bad("devices:\n"
              "  - name: [cpu0\n"
              "    backend: cpu\n",
              "3:12", "YAML syntax", "");
}
END_TEST

static Suite *config_suite(void)
{
  Suite *s = suite_create("config");
  TCase *t = tcase_create("load");
  tcase_add_checked_fixture(t, tcg_setup, tcg_teardown);
  tcase_add_test(t, defaults);
  tcase_add_test(t, every_key);
  tcase_add_test(t, shipped_default);
  tcase_add_test(t, relative_packs_dir);
  tcase_add_test(t, empty_sections_and_all);
  tcase_add_test(t, missing_file);
  tcase_add_test(t, bad_integers);
  tcase_add_test(t, file_readers_key);
  tcase_add_test(t, staging_rings_key);
  tcase_add_test(t, bad_enums_and_modes);
  tcase_add_test(t, unknown_and_duplicate_keys);
  tcase_add_test(t, devices);
  tcase_add_test(t, listen_urls);
  tcase_add_test(t, metrics_url);
  tcase_add_test(t, packs_keys);
  tcase_add_test(t, yaml_syntax);
  tcase_add_test(t, numbers_in_config);
  tcase_add_test(t, no_testing_aids);
  tcase_add_test(t, many_devices);
  tcase_add_test(t, duplicates_first_in_order);
  tcase_add_test(t, packs_dir_not_a_folder);
  tcase_add_test(t, packs_load_missing_pack);
  tcase_add_test(t, same_config);
  tcase_add_test(t, every_key_has_a_reload_rule);
  tcase_add_test(t, reload_rules);
  suite_add_tcase(s, t);
  return s;
}

int main(void)
{
  SRunner *r = srunner_create(config_suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
