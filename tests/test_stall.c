/* test_stall.c - a read of a file region that never returns fails its own
 * job after limits.region_read_timeout_ms, and the device and the decode
 * threads move on (daemon/bulk/filered.h "Stalls").
 *
 * The stalled file is real: a FUSE mount served by this test straight on
 * /dev/fuse (the kernel protocol of <linux/fuse.h>; no libfuse, no
 * fusermount), whose file answers every request but READ.  That is what a
 * hung network or FUSE file looks like to the daemon: pread blocks in the
 * kernel.  Without /dev/fuse or the right to mount (root), the test says
 * so and skips (exit 77, tests/skip.h; its ctest entry carries the label
 * root).  At the end the server goes, which aborts the connection
 * and fails the blocked reads, and the daemon must stop cleanly.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>

#include "bulk_harness.h"
#include "daemon_harness.h"
#include "skip.h"
#include "wave/client.h"

#define TS_SIZE (4u << 20)   /* the stalled file's size */

typedef struct tst_fuse {
  int fd;
  char mnt[256];
  pid_t server;          /* the process serving the mount */
  _Atomic int *reads;    /* READ requests seen (never answered), shared */
} tst_fuse;

static void tst_reply(int fd, uint64_t unique, int error, const void *p,
                     size_t n)
{
  char buf[512];
  struct fuse_out_header *h = (struct fuse_out_header *)buf;
  h->len = (uint32_t)(sizeof *h + n);
  h->error = error;
  h->unique = unique;
  if (n > 0)
    memcpy(buf + sizeof *h, p, n);
  if (write(fd, buf, h->len) < 0 && errno != ENOENT)
    fprintf(stderr, "fuse reply: %s\n", strerror(errno));
}

static void tst_attr(struct fuse_attr *a, uint64_t node)
{
  memset(a, 0, sizeof *a);
  a->ino = node;
  a->nlink = 1;
  a->blksize = 4096;
  if (node == FUSE_ROOT_ID) {
    a->mode = S_IFDIR | 0755;
  } else {
    a->mode = S_IFREG | 0644;
    a->size = TS_SIZE;
    a->blocks = TS_SIZE / 512;
  }
}

/* The file system: "/f", TS_SIZE bytes, whose reads never come back. */
static void *tst_serve(void *arg)
{
  tst_fuse *f = arg;
  static char buf[FUSE_MIN_READ_BUFFER + (1 << 20)];
  for (;;) {
    ssize_t n = read(f->fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == ENOENT))
      continue;
    if (n < (ssize_t)sizeof(struct fuse_in_header))
      return NULL;  /* aborted: the test is over */
    struct fuse_in_header *in = (struct fuse_in_header *)buf;
    void *body = buf + sizeof *in;
    switch (in->opcode) {
    case FUSE_INIT: {
      struct fuse_init_in *ii = body;
      struct fuse_init_out o = {.major = FUSE_KERNEL_VERSION,
                                .minor = FUSE_KERNEL_MINOR_VERSION,
                                .max_readahead = ii->max_readahead,
                                .max_write = 65536, .max_pages = 32};
      tst_reply(f->fd, in->unique, 0, &o, sizeof o);
      break;
    }
    case FUSE_LOOKUP: {
      if (strcmp((char *)body, "f") != 0) {
        tst_reply(f->fd, in->unique, -ENOENT, NULL, 0);
        break;
      }
      struct fuse_entry_out o = {.nodeid = 2, .entry_valid = 60,
                                 .attr_valid = 60};
      tst_attr(&o.attr, 2);
      tst_reply(f->fd, in->unique, 0, &o, sizeof o);
      break;
    }
    case FUSE_GETATTR: {
      struct fuse_attr_out o = {.attr_valid = 60};
      tst_attr(&o.attr, in->nodeid);
      tst_reply(f->fd, in->unique, 0, &o, sizeof o);
      break;
    }
    case FUSE_OPEN: {
      struct fuse_open_out o = {.fh = 1, .open_flags = FOPEN_DIRECT_IO};
      tst_reply(f->fd, in->unique, 0, &o, sizeof o);
      break;
    }
    case FUSE_STATFS: {
      struct fuse_statfs_out o = {.st = {.bsize = 4096, .namelen = 255,
                                         .frsize = 4096}};
      tst_reply(f->fd, in->unique, 0, &o, sizeof o);
      break;
    }
    case FUSE_READ:
      atomic_fetch_add(f->reads, 1);  /* the hang: no answer, ever */
      break;
    case FUSE_FLUSH:
    case FUSE_RELEASE:
      tst_reply(f->fd, in->unique, 0, NULL, 0);
      break;
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
    case FUSE_INTERRUPT:
      break;  /* no replies to these */
    default:
      tst_reply(f->fd, in->unique, -ENOSYS, NULL, 0);
      break;
    }
  }
}

/* Mount the stalling file system at dir/mnt, served by a child process
 * (which dies with us: PR_SET_PDEATHSIG), so that however this test ends
 * the last /dev/fuse descriptor closes, which aborts the connection and
 * fails the daemon's blocked reads (a request already read by the server
 * is waited for even by a killed process).  0, or -1 (said why) where
 * this host cannot. */
static int tst_mount(tst_fuse *f, const char *dir)
{
  memset(f, 0, sizeof *f);
  snprintf(f->mnt, sizeof f->mnt, "%s/mnt", dir);
  if (mkdir(f->mnt, 0755) != 0) {
    wvs_note("mkdir %s: %s", f->mnt, strerror(errno));
    return -1;
  }
  f->reads = mmap(NULL, sizeof *f->reads, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ck_assert(f->reads != MAP_FAILED);
  f->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (f->fd < 0) {
    wvs_note("/dev/fuse: %s", strerror(errno));
    return -1;
  }
  char opts[128];
  snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0,"
           "allow_other", f->fd);
  if (mount("wavetest", f->mnt, "fuse.wavetest", MS_NOSUID | MS_NODEV,
            opts) != 0) {
    wvs_note("cannot mount FUSE here (%s; root and /dev/fuse needed)",
             strerror(errno));
    close(f->fd);
    return -1;
  }
  pid_t parent = getpid();
  f->server = fork();
  ck_assert_int_ge(f->server, 0);
  if (f->server == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(0);
    tst_serve(f);
    _exit(0);
  }
  close(f->fd);  /* the server's alone now */
  return 0;
}

static void tst_umount(tst_fuse *f)
{
  kill(f->server, SIGKILL);
  waitpid(f->server, NULL, 0);
  umount2(f->mnt, MNT_DETACH);
  munmap(f->reads, sizeof *f->reads);
}

/* A file region on the stalling mount: the job fails with REGION after the
 * bound, the same (only) device then answers a message job, a copy region
 * of the same file fails its registration the same way, the decode
 * threads answer status, and the daemon stops cleanly once the mount goes. */
START_TEST(file_read_stalls)
{
  td_daemon d;
  td_prepare(&d, NULL);
  tst_fuse f;
  if (tst_mount(&f, d.dir) != 0) {
    td_cleanup(&d);
    return;
  }
  char text[1024];
  snprintf(text, sizeof text,
           "listen: [\"%s\"]\n"
           "log_level: debug\n"
           "limits:\n"
           "  region_read_timeout_ms: 300\n"
           "  decode_threads: 1\n"
           "  file_readers: 2\n"
           "packs:\n"
           "  load: []\n"
           "devices:\n"
           "  - {name: cpu0, backend: cpu, threads: 1}\n", d.ipc);
  td_write(d.cfg, text);  /* allow_client_shm: its default, true */
  if (td_start(&d) != 0)
    ck_abort_msg("wavedd did not start:\n%s", td_stderr(&d));
  wave_client *c = bh_client(d.ipc);
  char path[300];
  snprintf(path, sizeof path, "%s/f", f.mnt);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
  wave_error e = {0};
  wave_region *rg;
  ck_assert_int_eq(wave_region_file_fd(c, fd, 0, "stalls", &rg, &e), 0);
  wave_extent x = {rg, 0, TS_SIZE};
  wave_region_reduce q = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &x,
                          .n_input = 1};
  wave_reduce_result res;
  ck_assert_int_eq(wave_reduce_region(c, &q, &res, &e), WAVE_EREGION);
  ck_assert_msg(strstr(e.message, "region_read_timeout_ms") != NULL, "%s",
                e.message);
  ck_assert_int_ge(atomic_load(f.reads), 1);  /* it did block in a read */
  /* the device moved on */
  uint32_t rows[1000];
  bh_fill(rows, 1000, 3, 0);
  uint32_t want = 0;
  for (int i = 0; i < 1000; i++)
    want += rows[i];
  wave_chunk ch = {rows, sizeof rows};
  wave_reduce_request m = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &ch,
                           .n_input = 1};
  ck_assert_int_eq(wave_reduce(c, &m, &res, &e), 0);
  ck_assert_uint_eq(res.bits[0], want);
  /* both readers of the pool (file_readers: 2) are still blocked in the
   * stalled file: the pool stands others in for them, so a file job on a
   * live file is served (without them it would stall too) */
  char live[300];
  snprintf(live, sizeof live, "%s/live.raw", d.dir);
  int lfd = open(live, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ck_assert_int_ge(lfd, 0);
  ck_assert_int_eq(write(lfd, rows, sizeof rows), (ssize_t)sizeof rows);
  wave_region *lr;
  ck_assert_int_eq(wave_region_file_fd(c, lfd, 0, "live", &lr, &e), 0);
  wave_extent lx = {lr, 0, sizeof rows};
  wave_region_reduce lq = {.dtype = WAVE_U32, .op = WAVE_SUM, .input = &lx,
                           .n_input = 1};
  ck_assert_msg(wave_reduce_region(c, &lq, &res, &e) == 0, "%s", e.message);
  ck_assert_uint_eq(res.bits[0], want);
  ck_assert_int_eq(wave_region_unregister(c, lr, &e), 0);
  wave_region_close(lr);
  close(lfd);
  /* a copy region's read: bounded too, and the one decode thread goes on */
  wave_region *cp;
  ck_assert_int_eq(wave_region_copy_fd(c, fd, 0, "stalls", &cp, &e),
                   WAVE_EREGION);
  ck_assert_msg(strstr(e.message, "region_read_timeout_ms") != NULL, "%s",
                e.message);
  nng_socket s = td_dial(d.ipc);
  td_good(s);
  ck_assert_int_eq(wave_reduce(c, &m, &res, &e), 0);
  ck_assert_ptr_nonnull(strstr(td_stderr(&d), "left blocked in a read"));
  nng_close(s);
  ck_assert_int_eq(wave_region_unregister(c, rg, &e), 0);
  wave_region_close(rg);
  close(fd);
  wave_client_close(c);
  tst_umount(&f);
  td_stop_ok(&d);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("stall");
  TCase *tc = tcase_create("stall");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, file_read_stalls);
  suite_add_tcase(s, tc);
  return wvs_run(s, CK_NORMAL);
}
