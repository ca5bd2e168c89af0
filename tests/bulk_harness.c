/* bulk_harness.c - see bulk_harness.h. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "bulk_harness.h"

/* A daemon with regions on (or off), big enough limits, and the devices
 * given (YAML list items); limits: more limits' lines (indented), or NULL. */
void bh_prepare_with(td_daemon *d, int shm, const char *devices,
                     const char *limits)
{
  td_prepare(d, NULL);
  char text[2048];
  snprintf(text, sizeof text,
           "listen: [\"%s\", \"%s\"]\n"
           "ipc_mode: 0666\n"
           "log_level: debug\n"
           "allow_client_shm: %s\n"
           "limits:\n"
           "  max_request_bytes: 65536\n"
           "  max_job_rows: %u\n"
           "  max_client_regions: 3\n"
           "  max_stream_bytes: 67108864\n"
           "  max_client_stream_bytes: 67108864\n"  /* one client: all */
           "%s"
           "packs:\n"
           "  load: []\n"
           "auth: none\n"
           "devices:\n%s",
           d->ipc, d->tcp, shm ? "true" : "false", BH_ROWS_MAX,
           limits ? limits : "",
           devices ? devices : "  - {name: cpu0, backend: cpu, threads: 1}\n");
  td_write(d->cfg, text);
  chmod(d->dir, 0755);  /* the nobody test connects too */
}

void bh_prepare(td_daemon *d, int shm, const char *devices)
{
  bh_prepare_with(d, shm, devices, NULL);
}

void bh_start(td_daemon *d, int shm, const char *devices)
{
  bh_prepare(d, shm, devices);
  if (td_start(d) != 0) {
    fprintf(stderr, "wavedd did not start:\n%s\n", td_stderr(d));
    ck_abort_msg("wavedd did not start");
  }
}

wave_client *bh_client(const char *url)
{
  wave_client *c;
  wave_error e;
  ck_assert_int_eq(wave_client_open(&c, url, &e), 0);
  wave_client_set_timeout(c, 60000);
  return c;
}

void bh_fill(uint32_t *rows, size_t n, uint32_t seed, int floats)
{
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    if (floats) {
      float f = (float)((int64_t)(x % 2000001) - 1000000) / 1024.0f;
      memcpy(&rows[i], &f, 4);
    } else {
      rows[i] = (uint32_t)(x >> 20);
    }
  }
}

/* Status over raw nng: the regions listed. */
size_t bh_regions(nng_socket s, uint64_t *bytes)
{
  Wave__V1__Response *r = td_status(s, 5);
  size_t n = r->status->n_regions;
  if (bytes)
    *bytes = r->status->region_bytes;
  wave__v1__response__free_unpacked(r, NULL);
  return n;
}

/* Status over raw nng: pinned_devices of the only region. */
unsigned bh_pinned(nng_socket s)
{
  Wave__V1__Response *r = td_status(s, 5);
  ck_assert_uint_eq(r->status->n_regions, 1);
  unsigned n = r->status->regions[0]->pinned_devices;
  wave__v1__response__free_unpacked(r, NULL);
  return n;
}

int bh_pass_fd(const char *ipc_url, int fd, int n_fds, uint8_t ticket[16],
               char *msg, size_t n)
{
  ck_assert(strncmp(ipc_url, "ipc://", 6) == 0);
  ck_assert(n_fds >= 0 && n_fds <= 4);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s.fd", ipc_url + 6);
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(s, 0);
  struct timeval tv = {10, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ck_assert_msg(connect(s, (struct sockaddr *)&sa, sizeof sa) == 0,
                "connect %s: %s", sa.sun_path, strerror(errno));
  uint8_t hello = 1;
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(4 * sizeof(int))];
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct iovec iov = {&hello, 1};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  if (n_fds > 0) {
    m.msg_control = ctl.buf;
    m.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
    for (int i = 0; i < n_fds; i++)
      memcpy(CMSG_DATA(cm) + i * sizeof(int), &fd, sizeof fd);
  }
  ck_assert_int_eq(sendmsg(s, &m, MSG_NOSIGNAL), 1);
  uint8_t b[300];
  ssize_t k = recv(s, b, sizeof b - 1, 0);
  close(s);
  ck_assert_msg(k >= 1, "no reply on the descriptor socket: %s",
                k < 0 ? strerror(errno) : "closed");
  if (b[0] == 0) {
    ck_assert_int_eq(k, 17);
    memcpy(ticket, b + 1, 16);
    return 0;
  }
  b[k] = '\0';
  if (msg != NULL && n > 0) {  /* the reply's words, cut to fit */
    size_t len = strlen((char *)b + 1);
    len = len < n - 1 ? len : n - 1;
    memcpy(msg, b + 1, len);
    msg[len] = '\0';
  }
  return b[0];
}

Wave__V1__Response *bh_register(nng_socket s, const uint8_t *ticket,
                                const char *path, uint64_t bytes, int copy,
                                int file)
{
  Wave__V1__RegionRegisterRequest rr = WAVE__V1__REGION_REGISTER_REQUEST__INIT;
  if (ticket != NULL) {
    rr.fd_ticket.data = (uint8_t *)ticket;
    rr.fd_ticket.len = 16;
  }
  rr.path = (char *)(path ? path : "");
  rr.bytes = bytes;
  rr.copy = copy != 0;
  rr.file = file != 0;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 1;
  rq.id = 9;
  rq.body_case = WAVE__V1__REQUEST__BODY_REGION_REGISTER;
  rq.region_register = &rr;
  return td_call(s, &rq);
}

Wave__V1__Response *bh_register_fd(const char *ipc_url, nng_socket s, int fd,
                                   uint64_t bytes, int copy, int file)
{
  uint8_t t[16];
  char msg[256] = "";
  int rc = bh_pass_fd(ipc_url, fd, 1, t, msg, sizeof msg);
  ck_assert_msg(rc == 0, "descriptor refused: %d %s", rc, msg);
  return bh_register(s, t, NULL, bytes, copy, file);
}

void bh_expect(Wave__V1__Response *r, int code, const char *needle)
{
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_ERROR);
  if ((int)r->error->code != code || strstr(r->error->message, needle) == NULL)
    ck_abort_msg("expected %s with '%s', got %s: %s", wave_errname(code),
                 needle, r->error->name, r->error->message);
  wave__v1__response__free_unpacked(r, NULL);
}

int bh_theirs(int fd, uint32_t head[16])
{
  int t;
  if (getuid() == 0) {
    struct passwd *pw = getpwnam("nobody");
    ck_assert_msg(pw != NULL, "no user nobody to give the file to");
    ck_assert_int_eq(fchown(fd, pw->pw_uid, pw->pw_gid), 0);
    t = dup(fd);
  } else {
    t = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
  }
  ck_assert_int_ge(t, 0);
  struct stat st;
  ck_assert_int_eq(fstat(t, &st), 0);
  ck_assert_uint_ne(st.st_uid, getuid());
  ck_assert_int_eq(pread(t, head, 64, 0), 64);
  return t;
}
