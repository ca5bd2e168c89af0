/* test_sockdir.c - the default socket's rule (core/sockdir.h), shared by
 * wavedd and its clients, and --check-config refusing what the start
 * refuses (daemon/net/sockpath.c).
 *
 * The rule takes the uid and XDG_RUNTIME_DIR as arguments, so the cases
 * run alike as root and as a user: a made-up uid (SD_FAKE + pid) names
 * private folders no real user has, and as root the folders are given to
 * it with chown; as a user the folders are the user's own and the uid is
 * the user's.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/sockdir.h"

#define SD_FAKE 3000000000u

static char tsk_tmp[64];   /* a scratch folder (mkdtemp) */
static uid_t tsk_uid;      /* the uid the cases are about */
static char tsk_priv[64];  /* /tmp/wavedd-<tsk_uid>, for the fake uid only */

static void tsk_setup(void)
{
  snprintf(tsk_tmp, sizeof tsk_tmp, "/tmp/wave-sockdir.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tsk_tmp));
  tsk_uid = geteuid() == 0 ? SD_FAKE + (uid_t)getpid() : geteuid();
  if (geteuid() == 0)
    ck_assert_int_eq(chown(tsk_tmp, tsk_uid, (gid_t)-1), 0);
  wv_private_dir(tsk_priv, sizeof tsk_priv, SD_FAKE + (uid_t)getpid());
}

static void tsk_teardown(void)
{
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", tsk_tmp, tsk_priv);
  ck_assert_int_eq(system(cmd), 0);
}

/* a listening unix socket at path (closed: the file stays) */
static void tsk_socket(const char *path)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  ck_assert_msg(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "bind %s: %s",
                path, strerror(errno));
  close(fd);
}

/* what a user's daemon takes when neither XDG nor /run/wavedd serve */
static const char *tsk_fallback(char *want, size_t n, uid_t uid)
{
  char dir[64];
  if (access("/run/wavedd", W_OK | X_OK) == 0)
    snprintf(want, n, "ipc://%s", WV_SYSTEM_SOCKET);
  else
    snprintf(want, n, "ipc://%s/wavedd.sock",
             wv_private_dir(dir, sizeof dir, uid));
  return want;
}

START_TEST(root_takes_the_system_socket)
{
  char url[160];
  ck_assert_str_eq(wv_sockdir_url(url, sizeof url, 0, tsk_tmp, 0),
                   "ipc://" WV_SYSTEM_SOCKET);
  ck_assert_str_eq(wv_sockdir_url(url, sizeof url, 0, tsk_tmp, 1),
                   "ipc://" WV_SYSTEM_SOCKET);
}
END_TEST

START_TEST(user_daemon_takes_xdg_when_it_is_ours)
{
  char url[160], want[160];
  snprintf(want, sizeof want, "ipc://%s/wavedd/wavedd.sock", tsk_tmp);
  ck_assert_str_eq(wv_sockdir_url(url, sizeof url, tsk_uid, tsk_tmp, 0), want);
  /* su keeps the caller's XDG_RUNTIME_DIR: a folder of another uid */
  ck_assert_str_eq(wv_sockdir_url(url, sizeof url, tsk_uid + 1, tsk_tmp, 0),
                   tsk_fallback(want, sizeof want, tsk_uid + 1));
  /* unset, relative, missing: the same fallback */
  tsk_fallback(want, sizeof want, tsk_uid);
  ck_assert_str_eq(wv_sockdir_url(url, sizeof url, tsk_uid, NULL, 0), want);
  ck_assert_str_eq(wv_sockdir_url(url, sizeof url, tsk_uid, "run/user", 0),
                   want);
  char gone[100];
  snprintf(gone, sizeof gone, "%s/none", tsk_tmp);
  ck_assert_str_eq(wv_sockdir_url(url, sizeof url, tsk_uid, gone, 0), want);
}
END_TEST

START_TEST(user_daemon_without_session_takes_the_private_folder)
{
  char url[160], want[160];
  uid_t u = SD_FAKE + (uid_t)getpid();
  /* where /run/wavedd is writable by this process (root, the unit's
   * User=wavedd) the system socket is the user's: tsk_fallback says so */
  snprintf(want, sizeof want, "ipc:///tmp/wavedd-%lu/wavedd.sock",
           (unsigned long)u);
  if (access("/run/wavedd", W_OK | X_OK) == 0)
    snprintf(want, sizeof want, "ipc://" WV_SYSTEM_SOCKET);
  ck_assert_str_eq(wv_sockdir_url(url, sizeof url, u, NULL, 0), want);
}
END_TEST

START_TEST(client_finds_the_users_daemon)
{
  char url[160], want[160], xdir[100], xsock[140], psock[100];
  uid_t u = SD_FAKE + (uid_t)getpid();  /* no real user's folders */
  /* nothing there: the system socket */
  ck_assert_str_eq(wv_sockdir_url(url, sizeof url, u, NULL, 1),
                   "ipc://" WV_SYSTEM_SOCKET);
  /* the private folder's socket (a daemon without a session) */
  ck_assert_int_eq(mkdir(tsk_priv, 0700), 0);
  snprintf(psock, sizeof psock, "%s/wavedd.sock", tsk_priv);
  tsk_socket(psock);
  snprintf(want, sizeof want, "ipc://%s", psock);
  ck_assert_str_eq(wv_sockdir_url(url, sizeof url, u, NULL, 1), want);
  /* a session's socket comes first (tsk_tmp is tsk_uid's) */
  snprintf(xdir, sizeof xdir, "%s/wavedd", tsk_tmp);
  ck_assert_int_eq(mkdir(xdir, 0700), 0);
  snprintf(xsock, sizeof xsock, "%s/wavedd.sock", xdir);
  ck_assert_str_ne(wv_sockdir_url(url, sizeof url, tsk_uid, tsk_tmp, 1) + 6,
                   xsock);
  tsk_socket(xsock);
  ck_assert_str_eq(wv_sockdir_url(url, sizeof url, tsk_uid, tsk_tmp, 1) + 6,
                   xsock);
  /* a file that is not a socket is no daemon */
  ck_assert_int_eq(unlink(xsock), 0);
  FILE *f = fopen(xsock, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  ck_assert_str_ne(wv_sockdir_url(url, sizeof url, tsk_uid, tsk_tmp, 1) + 6,
                   xsock);
}
END_TEST

START_TEST(private_folder_checks)
{
  char dir[100], why[400], other[120];
  snprintf(dir, sizeof dir, "%s/wavedd-x", tsk_tmp);
  uid_t me = geteuid();
  /* missing: ENOENT unless made; made 0700 */
  errno = 0;
  ck_assert_int_eq(wv_private_dir_check(dir, me, 0, why, sizeof why), -1);
  ck_assert_int_eq(errno, ENOENT);
  ck_assert_int_eq(wv_private_dir_check(dir, me, 1, why, sizeof why), 0);
  struct stat st;
  ck_assert_int_eq(lstat(dir, &st), 0);
  ck_assert_uint_eq(st.st_mode & 07777, 0700);
  ck_assert_int_eq(wv_private_dir_check(dir, me, 1, why, sizeof why), 0);
  /* another user's */
  ck_assert_int_eq(wv_private_dir_check(dir, me + 1, 1, why, sizeof why), -1);
  ck_assert_ptr_nonnull(strstr(why, "belongs to uid"));
  /* open to group, or to others */
  ck_assert_int_eq(chmod(dir, 0750), 0);
  ck_assert_int_eq(wv_private_dir_check(dir, me, 1, why, sizeof why), -1);
  ck_assert_ptr_nonnull(strstr(why, "chmod 700"));
  ck_assert_int_eq(chmod(dir, 0701), 0);
  ck_assert_int_eq(wv_private_dir_check(dir, me, 1, why, sizeof why), -1);
  ck_assert_int_eq(chmod(dir, 0700), 0);
  /* a link to our folder, a file: not followed, not taken */
  snprintf(other, sizeof other, "%s/link", tsk_tmp);
  ck_assert_int_eq(symlink(dir, other), 0);
  ck_assert_int_eq(wv_private_dir_check(other, me, 1, why, sizeof why), -1);
  ck_assert_ptr_nonnull(strstr(why, "not a folder"));
  snprintf(other, sizeof other, "%s/file", tsk_tmp);
  FILE *f = fopen(other, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  ck_assert_int_eq(wv_private_dir_check(other, me, 1, why, sizeof why), -1);
}
END_TEST

/* wavedd --check-config on a config that listens on url: its exit status,
 * its stderr in out */
static int tsk_check_config(const char *url, char *out, size_t n)
{
  char cfg[120], cmd[600];
  snprintf(cfg, sizeof cfg, "%s/c.yaml", tsk_tmp);
  FILE *f = fopen(cfg, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "listen: [\"%s\"]\npacks: {dir: %s/config/packs}\n"
          "devices: [{name: cpu0, backend: cpu}]\n", url,
          getenv("WAVE_SOURCE_DIR"));
  fclose(f);
  snprintf(cmd, sizeof cmd, "'%s/wavedd' --config %s --check-config 2>&1",
           getenv("WAVE_BINARY_DIR"), cfg);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t got = fread(out, 1, n - 1, p);
  out[got] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(check_config_refuses_what_the_start_refuses)
{
  char out[2000], url[160];
  /* /tmp is writable by everyone: the start refuses it, so must this */
  ck_assert_int_eq(tsk_check_config("ipc:///tmp/x.sock", out, sizeof out), 2);
  ck_assert_msg(strstr(out, "writable by every user") != NULL, "%s", out);
  /* a folder we may not write (a user's check of a root folder) */
  if (geteuid() != 0) {
    ck_assert_int_eq(tsk_check_config("ipc:///wv-sockdir.sock", out,
                                     sizeof out), 2);
    ck_assert_msg(strstr(out, "may not make a socket there") != NULL, "%s",
                  out);
  }
  /* a folder of ours: fine, and nothing is made for a missing one */
  snprintf(url, sizeof url, "ipc://%s/sub/w.sock", tsk_tmp);
  if (geteuid() == 0)
    ck_assert_int_eq(chown(tsk_tmp, 0, (gid_t)-1), 0);
  ck_assert_msg(tsk_check_config(url, out, sizeof out) == 0, "%s", out);
  char sub[100];
  snprintf(sub, sizeof sub, "%s/sub", tsk_tmp);
  ck_assert_int_ne(access(sub, F_OK), 0);
  /* an existing file that is not a socket */
  ck_assert_int_eq(mkdir(sub, 0700), 0);
  char file[120];
  snprintf(file, sizeof file, "%s/w.sock", sub);
  FILE *f = fopen(file, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  ck_assert_int_eq(tsk_check_config(url, out, sizeof out), 2);
  ck_assert_msg(strstr(out, "is not a socket") != NULL, "%s", out);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("sockdir");
  TCase *t = tcase_create("rule");
  tcase_add_checked_fixture(t, tsk_setup, tsk_teardown);
  tcase_add_test(t, root_takes_the_system_socket);
  tcase_add_test(t, user_daemon_takes_xdg_when_it_is_ours);
  tcase_add_test(t, user_daemon_without_session_takes_the_private_folder);
  tcase_add_test(t, client_finds_the_users_daemon);
  tcase_add_test(t, private_folder_checks);
  tcase_add_test(t, check_config_refuses_what_the_start_refuses);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
