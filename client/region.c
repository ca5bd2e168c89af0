/* region.c - shared-memory regions in libwaveclient (wave_region_*), for a
 * daemon on the same host, and reductions over them (wave_reduce_region).
 *
 * A region is a memfd (memfd_create with MFD_ALLOW_SEALING, sized, sealed
 * with F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL so its size can never
 * change under the daemon's mapping), mapped here read-write; of huge
 * pages when it is big and the host has them reserved (a shared hugetlb
 * mapping reserves its pages at mmap, so a short pool fails there, never
 * later with SIGBUS, and we fall back to ordinary pages).  nng's ipc
 * cannot pass descriptors, so registration first sends the descriptor by
 * SCM_RIGHTS on the daemon's side socket "<ipc path>.fd" and then names
 * the ticket it got (daemon/fdpass.h); the daemon takes it only for the
 * ipc connection of the same uid and pid.  That works whatever the two
 * uids: the daemon reads what we could open.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "client/client_int.h"
#include "core/base.h"
#include "wave/client.h"

/* ---- regions ----------------------------------------------------------- */

struct wave_region {
  int fd;
  uint8_t *base;
  size_t bytes;
  size_t map_len;    /* bytes rounded up to the memfd's page size */
  uint64_t id;       /* the daemon's, once registered */
  char name[64];
};

#define BK_HUGE_MIN ((size_t)64 << 20)  /* smaller: page tables are cheap */

/* A sealed memfd of `bytes` mapped read-write into r: of huge pages when
 * `huge`, and 0, or -1 with errno (everything undone). */
static int rgn_memfd(wave_region *r, size_t bytes, int huge)
{
  r->fd = memfd_create(r->name, MFD_CLOEXEC | MFD_ALLOW_SEALING |
                                    (huge ? MFD_HUGETLB : 0));
  if (r->fd < 0)
    return -1;
  struct stat st;
  size_t page = 4096;
  if (huge && fstat(r->fd, &st) == 0 && st.st_blksize > 0)
    page = (size_t)st.st_blksize;  /* hugetlbfs: the huge page size */
  r->map_len = (bytes + page - 1) / page * page;
  /* ordinary pages are allocated now (fallocate), charged to us: the
   * daemon refuses a sparse region, whose zero pages it would fault in;
   * huge pages are reserved by the mapping.  The huge one is sealed
   * against writes after we map it (F_SEAL_FUTURE_WRITE: our mapping
   * stays writable, nobody can punch a hole in it) */
  if (ftruncate(r->fd, (off_t)r->map_len) == 0 &&
      (huge || fallocate(r->fd, 0, 0, (off_t)r->map_len) == 0)) {
    r->base = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
                   0);
    if (r->base != MAP_FAILED &&
        fcntl(r->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL |
                                      (huge ? F_SEAL_FUTURE_WRITE : 0)) == 0)
      return 0;
    if (r->base != MAP_FAILED)
      munmap(r->base, r->map_len);
  }
  int e = errno;
  close(r->fd);
  r->fd = -1;
  r->base = NULL;
  errno = e;
  return -1;
}

int wave_region_create(wave_region **out, size_t bytes, const char *name,
                       wave_error *err)
{
  if (out == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_region_create: out is NULL");
  *out = NULL;
  if (bytes == 0)
    return wv_seterr(err, WAVE_EARG, "wave_region_create: 0 bytes");
  wave_region *r = calloc(1, sizeof *r);
  if (r == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  snprintf(r->name, sizeof r->name, "%s", name ? name : "wave");
  const char *hp = getenv("WAVE_REGION_HUGEPAGES");
  int huge = bytes >= BK_HUGE_MIN && !(hp != NULL && strcmp(hp, "off") == 0);
  if ((huge && rgn_memfd(r, bytes, 1) == 0) || rgn_memfd(r, bytes, 0) == 0) {
    r->bytes = bytes;
    *out = r;
    return 0;
  }
  int e = errno;
  free(r);
  return wv_seterr(err, e == ENOMEM || e == ENOSPC ? WAVE_ENOMEM : WAVE_EIO,
                   "region of %zu bytes: %s", bytes, strerror(e));
}

void wave_region_close(wave_region *r)
{
  if (r == NULL)
    return;
  if (r->base != NULL) {  /* not a daemon-side copy */
    munmap(r->base, r->map_len);
    close(r->fd);
  }
  free(r);
}

void *wave_region_data(wave_region *r) { return r ? r->base : NULL; }
size_t wave_region_size(const wave_region *r) { return r ? r->bytes : 0; }
uint64_t wave_region_id(const wave_region *r) { return r ? r->id : 0; }
int wave_region_fd(const wave_region *r) { return r ? r->fd : -1; }

int wave_region_read_fd(wave_region *r, size_t offset, int fd, size_t bytes,
                        size_t *got, wave_error *err)
{
  if (got != NULL)
    *got = 0;
  if (r == NULL || offset > r->bytes || bytes > r->bytes - offset)
    return wv_seterr(err, WAVE_EARG, "wave_region_read_fd: %zu bytes at %zu "
                     "do not fit the region", bytes, offset);
  size_t done = 0;
  /* sendfile moves page-cache pages into the memfd in the kernel (no page
   * faults on our mapping); read() is the fallback for what it refuses */
  off_t dst = (off_t)offset;
  int use_read = lseek(r->fd, dst, SEEK_SET) < 0;
  while (done < bytes) {
    ssize_t n;
    if (!use_read) {
      n = sendfile(r->fd, fd, NULL, bytes - done);
      if (n < 0 && (errno == EINVAL || errno == ENOSYS || errno == EPERM)) {
        use_read = 1;
        continue;
      }
    } else {
      n = read(fd, r->base + offset + done, bytes - done);
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return wv_seterr(err, WAVE_EIO, "reading into the region: %s",
                       strerror(errno));
    if (n == 0)
      break;
    done += (size_t)n;
    if (use_read)
      continue;
  }
  if (got != NULL)
    *got = done;
  return 0;
}

/* Hand fd to the daemon of an ipc:// url: one message of one byte with
 * the descriptor (SCM_RIGHTS) on "<ipc path>.fd"; the reply is a status
 * byte and the 16-byte ticket, or an error code and its message
 * (daemon/fdpass.h).  0, a WAVE_E code, or -1 when the url is not ipc
 * (the daemon then refuses the registration itself) or the daemon has no
 * side socket (an older one, which opens /proc/<pid>/fd/<n>). */
static int rgn_pass_fd(wave_client *c, int fd, uint8_t *ticket,
                      wave_error *err)
{
  if (strncmp(c->url, "ipc://", 6) != 0)
    return -1;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  int w = snprintf(sa.sun_path, sizeof sa.sun_path, "%s.fd", c->url + 6);
  if (w < 0 || (size_t)w >= sizeof sa.sun_path)
    return wv_seterr(err, WAVE_EREGION, "%s: no room for the descriptor "
                     "socket's name (%s.fd)", c->url, c->url + 6);
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0)
    return wv_seterr(err, WAVE_EIO, "descriptor socket: %s", strerror(errno));
  int ms = atomic_load(&c->timeout_ms);
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int rc = 0;
  if (connect(s, (struct sockaddr *)&sa, sizeof sa) != 0) {
    /* no side socket: a daemon older than descriptor passing, which takes
     * a /proc path (rgn_register) */
    rc = errno == ENOENT || errno == ECONNREFUSED
             ? -1
             : errno == EAGAIN || errno == ECONNRESET
             ? wv_seterr(err, WAVE_EBUSY, "%s: the descriptor side socket "
                         "refused the connection: %s", sa.sun_path,
                         strerror(errno))
             : wv_seterr(err, WAVE_EREGION, "%s: cannot pass the region's "
                         "descriptor: %s", sa.sun_path, strerror(errno));
    goto out;
  }
  uint8_t hello = 1;  /* WD_FDPASS_HELLO */
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int))];
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct iovec iov = {&hello, 1};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1,
                     .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
  struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cm), &fd, sizeof fd);
  ssize_t k;
  while ((k = sendmsg(s, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
    ;
  if (k != 1) {  /* reset or closed by a full side socket: EBUSY */
    int busy = k < 0 && (errno == EPIPE || errno == ECONNRESET);
    rc = wv_seterr(err, busy ? WAVE_EBUSY : WAVE_EIO, "%s: descriptor not "
                   "sent: %s", sa.sun_path,
                   k < 0 ? strerror(errno) : "short send");
    goto out;
  }
  uint8_t b[1 + 256];
  while ((k = recv(s, b, sizeof b - 1, 0)) < 0 && errno == EINTR)
    ;
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    rc = wv_seterr(err, WAVE_ETIMEDOUT, "%s: no ticket within %d ms",
                   sa.sun_path, ms);
  } else if (k == 0 || errno == ECONNRESET || errno == EPIPE) {
    rc = wv_seterr(err, WAVE_EBUSY, "%s: no ticket for the descriptor: the "
                   "side socket %s (its connections are full?)", sa.sun_path,
                   k == 0 ? "closed the connection" : strerror(errno));
  } else if (k < 0) {
    rc = wv_seterr(err, WAVE_EIO, "%s: no ticket for the descriptor: %s",
                   sa.sun_path, strerror(errno));
  } else if (b[0] != 0) {
    b[k] = '\0';
    rc = wv_seterr(err, (int)b[0], "%s: %s",
                   sa.sun_path, (char *)b + 1);
  } else if (k != 17) {
    rc = wv_seterr(err, WAVE_EIO, "%s: a ticket of %zd bytes", sa.sun_path,
                   k - 1);
  } else {
    memcpy(ticket, b + 1, 16);
  }
out:
  close(s);
  return rc;
}

/* copy: 0 a memfd, 1 a daemon-side copy, 2 a file read at each job.  The
 * descriptor goes to the daemon first (rgn_pass_fd); the registration names
 * its ticket. */
static int rgn_register(wave_client *c, wave_region *r, int copy,
                       wave_error *err)
{
  uint8_t ticket[16];
  int rv = rgn_pass_fd(c, r->fd, ticket, err);
  if (rv > 0)
    return rv;
  Wave__V1__RegionRegisterRequest rr = WAVE__V1__REGION_REGISTER_REQUEST__INIT;
  char path[64];
  if (rv == 0) {
    rr.fd_ticket.data = ticket;
    rr.fd_ticket.len = sizeof ticket;
  } else {  /* what an older daemon opens; today's refuse it, clearly */
    snprintf(path, sizeof path, "/proc/%ld/fd/%d", (long)getpid(), r->fd);
    rr.path = path;
  }
  rr.bytes = r->bytes;
  rr.name = r->name;
  rr.copy = copy != 0;
  rr.file = copy == 2;
  Wave__V1__Request q = WAVE__V1__REQUEST__INIT;
  q.body_case = WAVE__V1__REQUEST__BODY_REGION_REGISTER;
  q.region_register = &rr;
  Wave__V1__Response *resp;
  rv = wv_client_call(c, &q, WAVE__V1__RESPONSE__BODY_REGION, 0, &resp, err);
  if (rv != 0)
    return rv;
  r->id = resp->region->id;
  r->bytes = resp->region->bytes;
  wave__v1__response__free_unpacked(resp, NULL);
  return 0;
}

int wave_region_register(wave_client *c, wave_region *r, wave_error *err)
{
  if (c == NULL || r == NULL || r->base == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_region_register: NULL argument "
                     "or a daemon-side copy");
  return rgn_register(c, r, 0, err);
}

static int rgn_daemon_side(wave_client *c, int fd, size_t bytes,
                          const char *name, int kind, wave_region **out,
                          wave_error *err)
{
  if (out == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_region_%s_fd: out is NULL",
                     kind == 2 ? "file" : "copy");
  *out = NULL;
  if (c == NULL || fd < 0)
    return wv_seterr(err, WAVE_EARG, "wave_region_%s_fd: bad argument",
                     kind == 2 ? "file" : "copy");
  wave_region *r = calloc(1, sizeof *r);
  if (r == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  r->fd = fd;
  r->bytes = bytes;
  snprintf(r->name, sizeof r->name, "%s",
           name ? name : kind == 2 ? "file" : "copy");
  int rv = rgn_register(c, r, kind, err);
  if (rv != 0) {
    free(r);
    return rv;
  }
  *out = r;
  return 0;
}

int wave_region_copy_fd(wave_client *c, int fd, size_t bytes,
                        const char *name, wave_region **out, wave_error *err)
{
  return rgn_daemon_side(c, fd, bytes, name, 1, out, err);
}

int wave_region_file_fd(wave_client *c, int fd, size_t bytes,
                        const char *name, wave_region **out, wave_error *err)
{
  return rgn_daemon_side(c, fd, bytes, name, 2, out, err);
}

int wave_region_unregister(wave_client *c, wave_region *r, wave_error *err)
{
  if (c == NULL || r == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_region_unregister: NULL argument");
  Wave__V1__RegionUnregisterRequest ur =
      WAVE__V1__REGION_UNREGISTER_REQUEST__INIT;
  ur.region_id = r->id;
  Wave__V1__Request q = WAVE__V1__REQUEST__INIT;
  q.body_case = WAVE__V1__REQUEST__BODY_REGION_UNREGISTER;
  q.region_unregister = &ur;
  Wave__V1__Response *resp;
  int rv = wv_client_call(c, &q, WAVE__V1__RESPONSE__BODY_REGION, 0, &resp,
                          err);
  if (rv != 0)
    return rv;
  r->id = 0;
  wave__v1__response__free_unpacked(resp, NULL);
  return 0;
}

int wave_reduce_region(wave_client *c, const wave_region_reduce *req,
                       wave_reduce_result *res, wave_error *err)
{
  if (c == NULL || req == NULL || res == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_reduce_region: NULL argument");
  size_t n_mask = req->has_mask ? req->n_mask : 0;
  if ((req->n_input > 0 && req->input == NULL) ||
      (n_mask > 0 && req->mask == NULL) ||
      req->n_input > SIZE_MAX / sizeof(Wave__V1__Extent) / 2 - n_mask)
    return wv_seterr(err, WAVE_EARG, "wave_reduce_region: bad extent array");
  size_t n = req->n_input + n_mask;
  Wave__V1__Extent *ex = calloc(n + 1, sizeof *ex);
  Wave__V1__Extent **exp = calloc(n + 1, sizeof *exp);
  if (ex == NULL || exp == NULL) {
    free(ex);
    free(exp);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  int rv = 0;
  for (size_t i = 0; i < n; i++) {
    const wave_extent *e = i < req->n_input ? &req->input[i]
                                            : &req->mask[i - req->n_input];
    if (e->region == NULL || e->region->id == 0) {
      rv = wv_seterr(err, WAVE_EARG, "wave_reduce_region: %s extent %zu has "
                     "no registered region", i < req->n_input ? "input" : "mask",
                     i < req->n_input ? i : i - req->n_input);
      goto out;
    }
    wave__v1__extent__init(&ex[i]);
    ex[i].region = e->region->id;
    ex[i].offset = e->offset;
    ex[i].bytes = e->bytes;
    exp[i] = &ex[i];
  }
  Wave__V1__ReduceRequest rr;
  wv_client_reduce_fill(&rr, req->dtype, req->op, req->has_mask, req->device,
                        exp, req->n_input, n_mask);
  WV_CLIENT_LEVEL(&rr, req);
  Wave__V1__Request q = WAVE__V1__REQUEST__INIT;
  q.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  q.reduce = &rr;
  Wave__V1__Response *resp;
  if ((rv = wv_client_call(c, &q, WAVE__V1__RESPONSE__BODY_REDUCE, 0, &resp,
                           err)) == 0)
    rv = wv_client_reduce_result(c, resp, res, err);
out:
  free(ex);
  free(exp);
  return rv;
}
