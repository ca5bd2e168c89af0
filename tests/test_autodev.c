/* test_autodev.c - `devices: auto` and `${VAR}` in listen URLs
 * (daemon/autodev.c), through the config loader as a daemon meets them.
 *
 * The environment is a table (wd_config_getenv points at tad_getenv), so
 * the cases set exactly the variables Slurm would and nothing leaks from
 * the process that runs the test.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/autodev.h"
#include "daemon/config.h"
#include "workers/worker.h"

static const char *tad_env[16][2];
static size_t tad_nenv;

static const char *tad_getenv(const char *name)
{
  for (size_t i = 0; i < tad_nenv; i++)
    if (strcmp(tad_env[i][0], name) == 0)
      return tad_env[i][1];
  return NULL;
}

static void tad_set(const char *name, const char *value)
{
  ck_assert_uint_lt(tad_nenv, 16);
  tad_env[tad_nenv][0] = name;
  tad_env[tad_nenv][1] = value;
  tad_nenv++;
}

static char tad_path[64];
static wd_getenv_fn tad_saved;
static wd_exists_fn tad_saved_exists;
static int tad_nvidia, tad_amd;  /* which driver nodes "exist" */

static int tad_exists(const char *path)
{
  return (strcmp(path, "/dev/nvidiactl") == 0 && tad_nvidia) ||
         (strcmp(path, "/dev/kfd") == 0 && tad_amd);
}

static void tad_setup(void)
{
  tad_nenv = 0;
  tad_saved = wd_config_getenv;
  wd_config_getenv = tad_getenv;
  tad_saved_exists = wd_autodev_exists;
  wd_autodev_exists = tad_exists;
  tad_nvidia = tad_amd = 1;
  snprintf(tad_path, sizeof tad_path, "/tmp/wave-autodev.XXXXXX");
  int fd = mkstemp(tad_path);
  ck_assert_int_ge(fd, 0);
  close(fd);
}

static void tad_teardown(void)
{
  unlink(tad_path);
  wd_config_getenv = tad_saved;
  wd_autodev_exists = tad_saved_exists;
}

/* Load text; returns the config (rc 0) or NULL with the message in msg. */
static wd_config *tad_load(const char *text, char *msg, size_t n)
{
  FILE *f = fopen(tad_path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  wd_config *c = NULL;
  wave_error err = {0};
  int rc = wd_config_load(tad_path, &c, &err);
  snprintf(msg, n, "%s", rc ? err.message : "");
  return rc ? NULL : c;
}

START_TEST(auto_without_gpus_is_one_cpu)
{
  char msg[512];
  wd_config *c = tad_load("devices: auto\n", msg, sizeof msg);
  ck_assert_msg(c != NULL, "%s", msg);
  ck_assert_uint_eq(c->n_devices, 1);
  ck_assert_str_eq(c->devices[0].name, "cpu0");
  ck_assert_str_eq(c->devices[0].backend, "cpu");
  ck_assert_uint_eq(c->devices[0].queue_depth, 64);  /* table default */
  ck_assert_uint_eq(c->devices[0].threads, 0);
  wd_config_free(c);
  /* Slurm's "no device files" and -1 grant nothing either */
  tad_set("CUDA_VISIBLE_DEVICES", "NoDevFiles");
  tad_set("ROCR_VISIBLE_DEVICES", "-1");
  c = tad_load("devices: auto\n", msg, sizeof msg);
  ck_assert_msg(c != NULL, "%s", msg);
  ck_assert_uint_eq(c->n_devices, 1);
  ck_assert_str_eq(c->devices[0].backend, "cpu");
  wd_config_free(c);
}
END_TEST

START_TEST(auto_with_granted_gpus)
{
  tad_set("CUDA_VISIBLE_DEVICES", "2,3,GPU-8a6f0e1c");
  char msg[512];
  wd_config *c = tad_load("devices: auto\n", msg, sizeof msg);
  const char *gpu = wv_backend_find("cuda") ? "cuda"
                  : wv_backend_find("hip")  ? "hip" : NULL;
  ck_assert_msg(c != NULL, "%s", msg);
  if (gpu == NULL) {  /* a build without GPU backends: the CPU serves */
    ck_assert_uint_eq(c->n_devices, 1);
    ck_assert_str_eq(c->devices[0].backend, "cpu");
  } else {            /* entry i is device index i (the runtime renumbers) */
    ck_assert_uint_eq(c->n_devices, 3);
    for (unsigned i = 0; i < 3; i++) {
      char name[16];
      snprintf(name, sizeof name, "%s%u", gpu, i);
      ck_assert_str_eq(c->devices[i].name, name);
      ck_assert_str_eq(c->devices[i].backend, gpu);
      ck_assert_uint_eq(c->devices[i].index, i);
    }
  }
  wd_config_free(c);
  /* no driver node for the built backends: the CPU serves (Slurm sets
   * every vendor's variable for any GPU GRES) */
  tad_nvidia = tad_amd = 0;
  c = tad_load("devices: auto\n", msg, sizeof msg);
  ck_assert_msg(c != NULL, "%s", msg);
  ck_assert_uint_eq(c->n_devices, 1);
  ck_assert_str_eq(c->devices[0].backend, "cpu");
  wd_config_free(c);
  /* only the ROCm driver: hip (when built) from ROCR_VISIBLE_DEVICES */
  tad_amd = 1;
  tad_set("ROCR_VISIBLE_DEVICES", "5");
  c = tad_load("devices: auto\n", msg, sizeof msg);
  ck_assert_msg(c != NULL, "%s", msg);
  ck_assert_uint_eq(c->n_devices, 1);
  ck_assert_str_eq(c->devices[0].backend, wv_backend_find("hip") ? "hip"
                                                                 : "cpu");
  wd_config_free(c);
}
END_TEST

START_TEST(auto_malformed_list)
{
  char msg[512];
  tad_set("CUDA_VISIBLE_DEVICES", "0,,1");
  tad_set("ROCR_VISIBLE_DEVICES", "0,,1");
  wd_config *c = tad_load("devices: auto\n", msg, sizeof msg);
  if (wv_backend_find("cuda") || wv_backend_find("hip") ||
      wv_backend_find("vulkan")) {
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(msg, ":1:10: devices: devices: auto:") &&
                  strstr(msg, "'0,,1' is not a comma list"), "%s", msg);
  } else {
    ck_assert_ptr_nonnull(c);  /* nothing reads the GPU lists */
    wd_config_free(c);
  }
  c = tad_load("devices: automatic\n", msg, sizeof msg);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(msg, "expected a list of devices or 'auto'"), "%s", msg);
}
END_TEST

/* ---- Vulkan devices by UUID ---------------------------------------------- */

static char tad_uuid[48];  /* the first Vulkan device's, as GPU-8-4-4-4-12 */

/* The real probe (a forked child asks the Vulkan loader): lavapipe here.
 * 0 when this build or machine has no Vulkan device. */
static int tad_vulkan_uuid(void)
{
  if (!wv_backend_find("vulkan"))
    return 0;
  unsigned char u[64][16];
  char why[200] = "";
  int n = wd_autodev_uuids("vulkan", u, 64, why, sizeof why);
  ck_assert_msg(n >= 0, "%s", why);
  if (n == 0)
    return 0;
  char *p = tad_uuid + snprintf(tad_uuid, sizeof tad_uuid, "GPU-");
  for (int i = 0; i < 16; i++)
    p += snprintf(p, sizeof tad_uuid - (size_t)(p - tad_uuid), "%02x%s",
                  u[0][i], i == 3 || i == 5 || i == 7 || i == 9 ? "-" : "");
  return n;
}

START_TEST(auto_vulkan_by_uuid)
{
  int nvk = tad_vulkan_uuid();
  if (nvk == 0)
    return;  /* built without vulkan, or no Vulkan driver (CI has lavapipe) */
  /* the first device's UUID (lavapipe's in CI) names it alone */
  char msg[512];
  int cuda = wv_backend_find("cuda") != NULL;
  /* the granted GPU is lavapipe's UUID: vk0, after cuda0 when cuda is
   * built (the CUDA runtime finds no device here, so the entry's own
   * UUID is what matches).  An NVIDIA node: no /dev/kfd, else a build
   * with HIP and without CUDA would take the list for hip0 */
  tad_amd = 0;
  tad_set("CUDA_VISIBLE_DEVICES", tad_uuid);
  wd_config *c = tad_load("devices: auto\n", msg, sizeof msg);
  ck_assert_msg(c != NULL, "%s", msg);
  ck_assert_uint_eq(c->n_devices, (size_t)(cuda ? 2 : 1));
  const wd_device_cfg *v = &c->devices[cuda ? 1 : 0];
  ck_assert_str_eq(v->name, "vk0");
  ck_assert_str_eq(v->backend, "vulkan");
  ck_assert_uint_eq(v->index, 0);
  ck_assert_uint_eq(v->queue_depth, 64);  /* table default */
  if (cuda)
    ck_assert_str_eq(c->devices[0].name, "cuda0");
  wd_config_free(c);

  /* a Vulkan-only node (no NVIDIA driver node): vk0 alone, and the
   * second entry's match is named after its place in the list; an upper
   * case prefix of 12 hex digits is enough */
  tad_nvidia = tad_amd = 0;
  char list[128], pre[20];
  snprintf(pre, sizeof pre, "%.13s", tad_uuid);  /* GPU-xxxxxxxx-x */
  for (char *q = pre + 4; *q; q++)
    if (*q >= 'a' && *q <= 'f')
      *q = (char)(*q - 'a' + 'A');
  snprintf(list, sizeof list, "GPU-00000000-0000-0000-0000-000000000000,%s",
           pre);
  tad_nenv = 0;
  tad_set("CUDA_VISIBLE_DEVICES", list);
  c = tad_load("devices: auto\n", msg, sizeof msg);
  ck_assert_msg(c != NULL, "%s", msg);
  ck_assert_uint_eq(c->n_devices, 1);
  ck_assert_str_eq(c->devices[0].name, "vk1");
  ck_assert_str_eq(c->devices[0].backend, "vulkan");
  ck_assert_uint_eq(c->devices[0].index, 0);
  wd_config_free(c);

  /* no entry matches: no Vulkan device, and the CPU serves */
  tad_nenv = 0;
  tad_set("CUDA_VISIBLE_DEVICES", "GPU-00000000-0000-0000-0000-000000000000,0");
  c = tad_load("devices: auto\n", msg, sizeof msg);
  ck_assert_msg(c != NULL, "%s", msg);
  ck_assert_uint_eq(c->n_devices, 1);
  ck_assert_str_eq(c->devices[0].backend, "cpu");
  wd_config_free(c);
  /* nothing granted: cpu0, as ever */
  tad_nenv = 0;
  c = tad_load("devices: auto\n", msg, sizeof msg);
  ck_assert_msg(c != NULL, "%s", msg);
  ck_assert_uint_eq(c->n_devices, 1);
  ck_assert_str_eq(c->devices[0].name, "cpu0");
  wd_config_free(c);
}
END_TEST

/* An index entry is matched through CUDA's UUID of that visible device.
 * No CUDA runs here, so this case gives autodev a table for both
 * backends (the Vulkan side is the real probe's job, above). */
static int tad_fake_uuids(const char *backend, unsigned char (*out)[16],
                         size_t max, char *why, size_t why_n)
{
  (void)why;
  (void)why_n;
  ck_assert_uint_ge(max, 3);
  memset(out, 0, 3 * 16);
  if (strcmp(backend, "vulkan") == 0) {  /* two GPUs, in another order */
    out[0][0] = 0xbb;
    out[1][0] = 0xaa;
    out[2][0] = 0xcc;                    /* a third, not granted */
    return 3;
  }
  out[0][0] = 0xaa;  /* cuda: visible device 0 and 1 */
  out[1][0] = 0xbb;
  return 2;
}

START_TEST(auto_vulkan_by_cuda_index)
{
  if (!wv_backend_find("vulkan") || !wv_backend_find("cuda"))
    return;  /* needs both backends built */
  wd_uuids_fn saved = wd_autodev_uuids;
  wd_autodev_uuids = tad_fake_uuids;
  tad_set("CUDA_VISIBLE_DEVICES", "4,7");
  char msg[512];
  wd_config *c = tad_load("devices: auto\n", msg, sizeof msg);
  wd_autodev_uuids = saved;
  ck_assert_msg(c != NULL, "%s", msg);
  ck_assert_uint_eq(c->n_devices, 4);
  ck_assert_str_eq(c->devices[0].name, "cuda0");
  ck_assert_str_eq(c->devices[1].name, "cuda1");
  ck_assert_str_eq(c->devices[2].name, "vk0");  /* cuda0's UUID 0xaa.. */
  ck_assert_uint_eq(c->devices[2].index, 1);
  ck_assert_str_eq(c->devices[3].name, "vk1");
  ck_assert_uint_eq(c->devices[3].index, 0);
  wd_config_free(c);
}
END_TEST

START_TEST(listen_vars)
{
  char msg[512];
  tad_set("WAVE_PORT", "26901");
  tad_set("EMPTY", "");
  wd_config *c = tad_load("listen:\n"
                         "  - tcp://127.0.0.1:${WAVE_PORT}\n"
                         "  - ipc:///tmp/w-${NODE:-n0}-$$.sock\n"
                         "  - tcp://127.0.0.1:${EMPTY:-7}\n"
                         "auth: none\n"
                         "devices: auto\n", msg, sizeof msg);
  ck_assert_msg(c != NULL, "%s", msg);
  ck_assert_uint_eq(c->n_listen, 3);
  ck_assert_str_eq(c->listen[0], "tcp://127.0.0.1:26901");
  ck_assert_str_eq(c->listen[1], "ipc:///tmp/w-n0-$.sock");
  ck_assert_str_eq(c->listen[2], "tcp://127.0.0.1:7");
  wd_config_free(c);

  c = tad_load("listen: [\"tcp://127.0.0.1:${NOPE}\"]\ndevices: auto\n", msg,
              sizeof msg);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(msg, ":1:10: listen[0]: ") &&
                strstr(msg, "environment variable NOPE is not set"), "%s", msg);
  c = tad_load("listen: [\"tcp://127.0.0.1:${WAVE_PORT\"]\ndevices: auto\n",
              msg, sizeof msg);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(msg, "malformed ${NAME}"), "%s", msg);
  c = tad_load("listen: [\"tcp://127.0.0.1:$WAVE_PORT\"]\ndevices: auto\n",
              msg, sizeof msg);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(msg, "a literal '$' is '$$'"), "%s", msg);
  /* the expansion is checked as a URL like any other */
  tad_set("BAD", "80x");
  c = tad_load("listen: [\"tcp://127.0.0.1:${BAD}\", \"tcp://${X:-}\"]\n"
              "devices: auto\n", msg, sizeof msg);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(msg, "listen[") != NULL, "%s", msg);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("autodev");
  TCase *t = tcase_create("autodev");
  tcase_add_checked_fixture(t, tad_setup, tad_teardown);
  tcase_add_test(t, auto_without_gpus_is_one_cpu);
  tcase_add_test(t, auto_with_granted_gpus);
  tcase_add_test(t, auto_malformed_list);
  tcase_add_test(t, auto_vulkan_by_uuid);
  tcase_add_test(t, auto_vulkan_by_cuda_index);
  tcase_add_test(t, listen_vars);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
