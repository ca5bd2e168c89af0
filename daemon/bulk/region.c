/* region.c - the shared-memory region table (see region.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "daemon/bulk/filered.h"
#include "daemon/log.h"
#include "daemon/net/principal.h"
#include "daemon/bulk/region.h"
#include "core/base.h"
#include "core/queue.h"
#include "workers/wvdev.h"

struct wd_region {
  wd_regions *t;
  wv_qnode link;            /* wd_regions.all, while registered */
  uint64_t id;
  uint32_t pipe, uid, pid;
  uint64_t key;             /* the principal's share (share.h) */
  char name[64];
  uint8_t *base;
  uint64_t bytes;           /* mapped */
  int copied;               /* base is a buffer of ours (copy = true) */
  int fd;                   /* a file region (copy + file): base NULL, the
                               jobs pread it (daemon/bulk/filered.c); else -1 */
  int fifo;                 /* ... a pipe's read end: read once, in order,
                               by the one job that claims it */
  _Atomic int claimed;      /* a pipe region: a job has named it */
  size_t cap;               /* ... of this size; or the mapping's length
                               (bytes, in whole pages of a hugetlbfs memfd) */
  _Atomic unsigned refs;    /* the table's + one per job */
  _Atomic uint32_t pinned;  /* device slots with pieces pinned */
  _Atomic uint32_t whole;   /* device slots with all of it pinned */
  const wv_backend *whole_be[WD_REGION_SLOTS]; /* each one's backend, set
                                                  before its whole bit */
  _Atomic int gone;         /* unregistered: stop pinning */
  uint64_t pin_at[WD_REGION_SLOTS]; /* bytes pinned from base, by the slot's
                                       device thread only */
};

struct wd_regions {
  pthread_mutex_t mu;
  wv_qnode all;             /* wd_region.link, newest first */
  uint64_t next_id;
  uint64_t bytes;           /* mapped, registered or still in use */
  int allow;
  unsigned per_client;
  uint64_t max_bytes;
  wd_unpin_fn unpin;
  void *unpin_arg;
  /* Buffers of freed copy regions, kept faulted in for the next copy: a
   * fresh gigabyte costs its page faults, several times a page-cache read */
  wv_qnode cache;           /* rg_buf.q, newest first */
  uint64_t cached, cache_max;
  wd_shares *sh;            /* each client's share; copies count with
                               streams there (limits.max_stream_bytes) */
  wd_readers *rd;           /* the server's: a copy's bounded read */
  unsigned read_ms;         /* limits.region_read_timeout_ms */
  wd_fdpass *fp;            /* descriptors passed, waiting for their
                               registration (fdpass.h) */
};

struct rg_buf {
  wv_qnode q;               /* wd_regions.cache */
  void *p;
  size_t cap;
};

#define RG_OF(n) WV_Q_ENTRY(n, wd_region, link)
#define RG_BUF(n) WV_Q_ENTRY(n, struct rg_buf, q)

/* A buffer of at least bytes (under no lock): a cached one, or new. */
static void *rg_buf_get(wd_regions *t, size_t bytes, size_t *cap)
{
  struct rg_buf *best = NULL;
  wv_qnode *n;
  pthread_mutex_lock(&t->mu);
  WV_Q_EACH(n, &t->cache)
    if (RG_BUF(n)->cap >= bytes &&
        (best == NULL || RG_BUF(n)->cap < best->cap))
      best = RG_BUF(n);
  if (best != NULL) {
    wv_q_remove(&best->q);
    t->cached -= best->cap;
  }
  pthread_mutex_unlock(&t->mu);
  if (best != NULL) {
    void *p = best->p;
    *cap = best->cap;
    free(best);
    return p;
  }
  size_t c = (bytes + 4095) & ~(size_t)4095;
  void *p = mmap(NULL, c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  *cap = c;
  return p;
}

static void rg_buf_put(wd_regions *t, void *p, size_t cap)
{
  struct rg_buf *b = malloc(sizeof *b);
  wv_qnode drop, *n;
  wv_q_init(&drop);
  pthread_mutex_lock(&t->mu);
  int keep = b != NULL && cap <= t->cache_max;
  /* the newest buffer stays; older ones go to make room for it */
  while (keep && t->cached > t->cache_max - cap &&
         (n = wv_q_pop(&t->cache)) != NULL) {
    t->cached -= RG_BUF(n)->cap;
    wv_q_push(&drop, n);
  }
  if (keep) {
    b->p = p;
    b->cap = cap;
    wv_q_push_head(&t->cache, &b->q);
    t->cached += cap;
  }
  pthread_mutex_unlock(&t->mu);
  if (!keep) {
    free(b);
    munmap(p, cap);
  }
  while ((n = wv_q_pop(&drop)) != NULL) {
    munmap(RG_BUF(n)->p, RG_BUF(n)->cap);
    free(RG_BUF(n));
  }
}

int wd_regions_new(const wd_config *cfg, wd_shares *sh, wd_readers *rd,
                   wd_unpin_fn unpin, void *arg, wd_regions **out,
                   wave_error *err)
{
  wd_regions *t = calloc(1, sizeof *t);
  if ((*out = t) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  pthread_mutex_init(&t->mu, NULL);
  wv_q_init(&t->all);
  wv_q_init(&t->cache);
  t->next_id = 1;
  t->allow = cfg->allow_client_shm;
  t->per_client = cfg->limits.max_client_regions;
  t->max_bytes = cfg->limits.max_region_bytes;
  t->unpin = unpin;
  t->unpin_arg = arg;
  t->cache_max = cfg->limits.region_cache_bytes;
  t->sh = sh;
  t->rd = rd;
  t->read_ms = cfg->limits.region_read_timeout_ms;
  return wd_fdpass_new(&t->fp, err);
}

wd_fdpass *wd_regions_fdpass(wd_regions *t) { return t ? t->fp : NULL; }

static void rg_unmap(wd_region *r)
{
  wd_regions *t = r->t;
  if (r->fd >= 0)
    close(r->fd);
  else if (r->copied)
    rg_buf_put(t, r->base, r->cap);
  else
    munmap(r->base, r->cap);
  pthread_mutex_lock(&t->mu);
  t->bytes -= r->bytes;
  pthread_mutex_unlock(&t->mu);
  wd_share_give(t->sh, r->key, WD_SHARE_REGION, r->bytes);
  if (r->copied)
    wd_share_give(t->sh, r->key, WD_SHARE_BUF, r->bytes);
  if (r->fd >= 0)  /* closed above: the descriptor's share back */
    wd_share_give(t->sh, r->key, WD_SHARE_FILES, 1);
  wd_debug("region %" PRIu64 " (%s) unmapped", r->id, r->name);
  free(r);
}

void wd_regions_free(wd_regions *t)
{
  if (t == NULL)
    return;
  /* the devices are closed: whatever they pinned went with their context */
  wv_qnode *n;
  while ((n = wv_q_pop(&t->all)) != NULL) {
    wd_region *r = RG_OF(n);
    if (r->fd >= 0)
      close(r->fd);
    else
      munmap(r->base, r->cap);
    free(r);
  }
  while ((n = wv_q_pop(&t->cache)) != NULL) {
    munmap(RG_BUF(n)->p, RG_BUF(n)->cap);
    free(RG_BUF(n));
  }
  wd_fdpass_free(t->fp);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

static void rg_info(const wd_region *r, wd_region_info *info)
{
  memset(info, 0, sizeof *info);
  info->id = r->id;
  info->bytes = r->bytes;
  snprintf(info->name, sizeof info->name, "%s", r->name);
  info->owner_uid = r->uid;
  info->owner_pid = r->pid;
  unsigned refs = atomic_load(&r->refs);
  info->jobs = refs > 0 ? refs - 1 : 0;
  info->copied = r->copied;
  info->file = r->fd >= 0;
  info->pinned_devices = (uint32_t)__builtin_popcount(atomic_load(&r->whole));
}

/* What a non-regular descriptor is, for the refusal. */
static const char *rg_kind(mode_t m)
{
  return S_ISFIFO(m) ? "a FIFO (pipe)" : S_ISCHR(m) ? "a character device "
         "(a terminal?)" : S_ISSOCK(m) ? "a socket" : S_ISDIR(m) ?
         "a directory" : S_ISBLK(m) ? "a block device" : S_ISLNK(m) ?
         "a symbolic link" : "not a regular file";
}

/* A mapped region's object is checked once, here, so that no later read of
 * the mapping can fault (docs/security.md "Regions"): sealed against
 * shrinking; a hugetlbfs memfd also against hole punching (F_SEAL_WRITE or
 * F_SEAL_FUTURE_WRITE: a punched huge page refaults only while free huge
 * pages last, then SIGBUS); a shmem memfd with no hole in [0, bytes) (its
 * zero pages would be faulted in, and charged, in the daemon). */
static int rg_check_mapped(int fd, uint64_t bytes, int huge,
                           wave_error *err)
{
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0)
    return wv_seterr(err, WAVE_EREGION, "the region is not a sealable memfd "
                     "(%s); create it with memfd_create(MFD_ALLOW_SEALING), "
                     "or register the file as a file region", strerror(errno));
  if (!(seals & F_SEAL_SHRINK))
    return wv_seterr(err, WAVE_EREGION, "the region is not sealed against "
                     "shrinking: add F_SEAL_SHRINK (a shrunk mapping would "
                     "crash its reader)");
  /* The size again, now that it cannot change: the caller's fstat came
   * before the seal was looked at, and a client that shrinks the object
   * and then seals it in between would have the daemon read past its end
   * (SIGBUS, in the registration's touch or a job). */
  struct stat now;
  if (fstat(fd, &now) != 0 || (uint64_t)now.st_size < bytes)
    return wv_seterr(err, WAVE_EREGION, "the region shrank below the %"
                     PRIu64 " bytes asked before it was sealed", bytes);
  if (huge && !(seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)))
    return wv_seterr(err, WAVE_EREGION, "the region is a memfd of huge pages "
                     "not sealed against writes: add F_SEAL_FUTURE_WRITE "
                     "(after mapping it for writing) or F_SEAL_WRITE, so that "
                     "no hole can be punched in it under the daemon's mapping");
  if (huge)
    return 0;  /* the daemon's mmap reserves huge pages for any hole */
  /* st_blocks counts the pages there: dense objects need no seek (which
   * moves the client's file offset, shared with this descriptor) */
  uint64_t have = (uint64_t)now.st_blocks * 512;
  if (have >= bytes)
    return 0;
  off_t hole = lseek(fd, 0, SEEK_HOLE);
  if (hole >= 0 && (uint64_t)hole < bytes)
    return wv_seterr(err, WAVE_EREGION, "the region is sparse (a hole at "
                     "byte %lld, %" PRIu64 " of %" PRIu64 " bytes there): "
                     "write or fallocate(2) all of it before registering, "
                     "or register it as a file region", (long long)hole,
                     have, bytes);
  return 0;
}

/* A registration that failed after its reservation: give it all back. */
static void rg_untake(wd_regions *t, uint64_t key, int took, uint64_t bytes)
{
  pthread_mutex_lock(&t->mu);
  t->bytes -= bytes;
  pthread_mutex_unlock(&t->mu);
  if (took & 1)
    wd_share_give(t->sh, key, WD_SHARE_REGION, bytes);
  if (took & 2)
    wd_share_give(t->sh, key, WD_SHARE_BUF, bytes);
  if (took & 4)
    wd_share_give(t->sh, key, WD_SHARE_FILES, 1);
}

/* The registration's descriptor: a regular file or memfd open for reading
 * (*huge: on hugetlbfs), or, for a file region of stated bytes (pipe_ok),
 * a pipe's read end. */
static int rg_check_fd(int fd, struct stat *st, int pipe_ok, int *huge,
                       wave_error *err)
{
  const char *path = "the region";  /* for messages: no path any more */
  if (fstat(fd, st) != 0)
    return wv_seterr(err, WAVE_EREGION, "cannot stat %s: %s", path,
                     strerror(errno));
  if (S_ISFIFO(st->st_mode) && !pipe_ok)
    return wv_seterr(err, WAVE_EREGION, "the region's descriptor is a FIFO "
                     "(pipe): a pipe is registered as a file region (copy "
                     "and file) of its stated bytes, which one job reads "
                     "once");
  if (!S_ISREG(st->st_mode) && !S_ISFIFO(st->st_mode))
    return wv_seterr(err, WAVE_EREGION, "the region's descriptor is %s: "
                     "regions are regular files, memfds and pipes only",
                     rg_kind(st->st_mode));
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY)
    return wv_seterr(err, WAVE_EREGION, "the region's descriptor is not open "
                     "for reading (%s): open it O_RDONLY or O_RDWR",
                     fl < 0 ? strerror(errno) : (fl & O_PATH) ? "O_PATH"
                                                              : "O_WRONLY");
  struct statfs sf;
  *huge = fstatfs(fd, &sf) == 0 && sf.f_type == HUGETLBFS_MAGIC;
  return 0;
}

/* Reserve bytes in the table's total, then the client's shares (share.h:
 * one client cannot fill the caps); *took says which shares for
 * rg_untake.  Nothing stays reserved on an error. */
static int rg_reserve(wd_regions *t, uint64_t key, const char *who,
                      uint64_t bytes, int copy,
                      int file, int *took, wave_error *err)
{
  pthread_mutex_lock(&t->mu);
  int over = bytes > t->max_bytes || t->bytes > t->max_bytes - bytes;
  uint64_t have = t->bytes;
  if (!over)
    t->bytes += bytes;  /* reserved before the map, so racing adds count */
  pthread_mutex_unlock(&t->mu);
  if (over)
    return wv_seterr(err, WAVE_EREGION, "%" PRIu64 " more bytes of regions "
                     "would pass the daemon's %" PRIu64 " (limits."
                     "max_region_bytes; %" PRIu64 " mapped)", bytes,
                     t->max_bytes, have);
  int rc;
  *took = 0;  /* shares taken: 1 region bytes, 2 + buffered, 4 + file */
  if ((rc = wd_share_take(t->sh, key, who, WD_SHARE_REGION, bytes,
                          WAVE_EREGION, err)) == 0)
    *took |= 1;
  if (rc == 0 && copy && !file &&
      (rc = wd_share_take(t->sh, key, who, WD_SHARE_BUF, bytes,
                          WAVE_EREGION, err)) == 0)
    *took |= 2;
  if (rc == 0 && file &&
      (rc = wd_share_take(t->sh, key, who, WD_SHARE_FILES, 1,
                          WAVE_EREGION, err)) == 0)
    *took |= 4;
  if (rc != 0)
    rg_untake(t, key, *took, bytes);
  return rc;
}

/* A small mapping (a client's ring: python/wavedd/ring.py) is read here, a
 * byte a page, so that its first job does not pay the first touch of each
 * page in this process: 2.5-3.4 us a page in this project's 2-core VM,
 * MAP_POPULATE or not (docs/performance.md), 12 ms for a ring of 16 MiB
 * whose whole first sum takes 25.  Bigger regions are left to their
 * jobs: this holds a decode thread for the time of the touch. */
#define RG_WARM_BYTES ((size_t)16 << 20)

static void rg_warm(const uint8_t *p, size_t n)
{
  uint8_t x = 0;
  for (size_t at = 0; at < n; at += 4096)
    x ^= ((const volatile uint8_t *)p)[at];
  (void)x;
}

/* Where the region's rows will be: nowhere for a file region (*base NULL:
 * the jobs read the descriptor), a buffer of ours for a copy, else the
 * mapping.  *base MAP_FAILED when out of memory (errno says why); on an
 * error of the copy's read the buffer is already given back. */
static int rg_place(wd_regions *t, int fd, const struct stat *st, int huge,
                    uint64_t bytes, int copy, int file, void **base,
                    size_t *cap, wave_error *err)
{
  *cap = 0;
  if (file) {
    *base = NULL;  /* the descriptor stays open: the jobs read it */
  } else if (copy) {
    /* one read out of the page cache into a buffer of ours: no seals
     * needed, the client's file may change afterwards.  Read on a reader
     * thread under limits.region_read_timeout_ms (a hung mount fails this
     * registration, not the decode thread); a stalled reader keeps the
     * buffer until its read returns. */
    *base = rg_buf_get(t, (size_t)bytes, cap);
    if (*base == NULL)
      *base = MAP_FAILED;
    int gave = 0, rc;
    if (*base != MAP_FAILED &&
        (rc = wd_file_read_bounded(t->rd, fd, *base, *cap, bytes,
                                   t->read_ms, &gave, err)) != 0) {
      if (!gave)
        rg_buf_put(t, *base, *cap);
      return rc;
    }
  } else {
    /* a memfd of huge pages (client/bulk.c) maps, and must be unmapped,
     * in whole huge pages */
    size_t page = huge && st->st_blksize > 0 ? (size_t)st->st_blksize : 1;
    *cap = ((size_t)bytes + page - 1) / page * page;
    *base = mmap(NULL, *cap, PROT_READ, MAP_SHARED, fd, 0);
    if (*base != MAP_FAILED && *cap <= RG_WARM_BYTES)
      rg_warm(*base, *cap);
  }
  return 0;
}

/* A new region over base (the table's own from here), linked in. */
static wd_region *rg_link(wd_regions *t, uint32_t pipe, uint64_t key,
                          uint32_t uid, uint32_t pid, const char *name,
                          void *base, uint64_t bytes, size_t cap, int copied,
                          int fd)
{
  wd_region *r = calloc(1, sizeof *r);
  if (r == NULL)
    return NULL;
  r->t = t;
  r->pipe = pipe;
  r->uid = uid;
  r->pid = pid;
  r->key = key;
  snprintf(r->name, sizeof r->name, "%s", name ? name : "");
  r->base = base;
  r->bytes = bytes;
  r->copied = copied;
  r->fd = fd;
  r->cap = cap;
  atomic_init(&r->refs, 1);
  pthread_mutex_lock(&t->mu);
  r->id = t->next_id++;
  wv_q_push_head(&t->all, &r->link);
  pthread_mutex_unlock(&t->mu);
  return r;
}

int wd_regions_add(wd_regions *t, uint32_t pipe, uint64_t key,
                   const char *who, int have_cred, uint32_t uid, uint32_t pid,
                   const wd_region_spec *rq, wd_region_info *info,
                   wd_region **pin, wave_error *err)
{
  const char *path = "the region";  /* for messages: no path any more */
  if (!t->allow)
    return wv_seterr(err, WAVE_EREGION, "shared-memory regions are off in "
                     "this daemon (allow_client_shm: false)");
  if (!have_cred)
    return wv_seterr(err, WAVE_EREGION, "shared-memory regions are served "
                     "on ipc connections only (no peer credentials here)");
  if (rq->ticket_len == 0)  /* an older client: it named a path */
    return wv_seterr(err, WAVE_EREGION, "this daemon takes region "
                     "descriptors, not /proc paths: update libwaveclient (it "
                     "passes the descriptor on \"<ipc path>.fd\" and "
                     "registers its fd_ticket; docs/protocol.md \"Regions\")");
  pthread_mutex_lock(&t->mu);
  unsigned mine = 0;
  wv_qnode *n;
  WV_Q_EACH(n, &t->all)
    mine += RG_OF(n)->pipe == pipe;
  pthread_mutex_unlock(&t->mu);
  int fd, rc = 0;
  /* claimed first: a refused registration still spends (closes) it */
  if ((rc = wd_fdpass_claim(t->fp, rq->ticket, rq->ticket_len,
                            uid, pid, &fd, err)) != 0)
    return rc;
  if (mine >= t->per_client) {
    rc = wv_seterr(err, WAVE_EREGION, "this connection has %u regions; "
                   "the daemon allows %u (limits.max_client_regions)", mine,
                   t->per_client);
    goto out;
  }
  struct stat st;
  int huge = 0;
  if ((rc = rg_check_fd(fd, &st, rq->copy && rq->file && rq->bytes > 0, &huge,
                        err)) != 0)
    goto out;
  /* a pipe has no size: its stated bytes are what its one job reads, and
   * its reads wait for bytes without blocking a reader (fileio.h) */
  const int fifo = S_ISFIFO(st.st_mode);
  if (fifo && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
    rc = wv_seterr(err, WAVE_EREGION, "the pipe's descriptor: %s",
                   strerror(errno));
    goto out;
  }
  uint64_t size = fifo ? rq->bytes : (uint64_t)st.st_size;
  uint64_t bytes = rq->bytes ? rq->bytes : size;
  if (bytes > size) {
    rc = wv_seterr(err, WAVE_ERANGE, "%s is %" PRIu64 " bytes; "
                   "%" PRIu64 " asked", path, size, bytes);
    goto out;
  }
  if (bytes == 0) {
    rc = wv_seterr(err, WAVE_EREGION, "%s is empty", path);
    goto out;
  }
  if (!rq->copy && (rc = rg_check_mapped(fd, bytes, huge, err)) != 0)
    goto out;
  int file = rq->copy && rq->file;  /* read by the jobs: none of our memory */
  int took = 0;
  if ((rc = rg_reserve(t, key, who, bytes, rq->copy, file, &took,
                       err)) != 0)
    goto out;
  size_t cap;
  void *base;
  if ((rc = rg_place(t, fd, &st, huge, bytes, rq->copy, file, &base, &cap,
                     err)) != 0) {
    rg_untake(t, key, took, bytes);
    goto out;
  }
  wd_region *r = base == MAP_FAILED ? NULL
                 : rg_link(t, pipe, key, uid, pid, rq->name, base, bytes, cap,
                           rq->copy && !file, file ? fd : -1);
  if (r == NULL) {
    int e = errno;
    if (!file && base != MAP_FAILED && rq->copy)
      rg_buf_put(t, base, cap);
    else if (!file && base != MAP_FAILED)
      munmap(base, cap);
    rg_untake(t, key, took, bytes);
    rc = wv_seterr(err, WAVE_ENOMEM, "cannot map %s: %s", path,
                   strerror(e));
    goto out;
  }
  if (file)
    fd = -1;  /* the region's now */
  r->fifo = fifo;
  rg_info(r, info);
  wd_info("region %" PRIu64 " (%s): %" PRIu64 " bytes of pid %" PRIu32
          " uid %" PRIu32 " %s", r->id, r->name, bytes, pid, uid,
          fifo ? "a pipe, read once by the job that names it"
          : r->fd >= 0 ? "kept open, read by its jobs"
                       : r->copied ? "read into a copy" : "mapped");
  if (pin != NULL && r->base != NULL) {
    atomic_fetch_add(&r->refs, 1);
    *pin = r;
  }
out:
  if (fd >= 0)
    close(fd);
  return rc;
}

void wd_region_ref(wd_region *r) { atomic_fetch_add(&r->refs, 1); }

void wd_region_put(wd_region *r)
{
  if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
    return;
  uint32_t pins = atomic_load(&r->pinned);
  if (pins == 0) {
    rg_unmap(r);
    return;
  }
  /* each pinning device unpins on its thread; the last one unmaps */
  for (unsigned s = 0; s < WD_REGION_SLOTS; s++)
    if (pins & (1u << s))
      r->t->unpin(r->t->unpin_arg, r, s);
}

/* Unlink (under mu) every region matching onto out, the last first;
 * they are put after unlocking. */
static void rg_unlink(wd_regions *t, uint32_t pipe, int all, uint64_t id,
                      wv_qnode *out)
{
  wv_qnode *n, *nx;
  WV_Q_EACH_SAFE(n, nx, &t->all) {
    wd_region *r = RG_OF(n);
    if (r->pipe == pipe && (all || r->id == id)) {
      atomic_store(&r->gone, 1);
      wv_q_remove(n);
      wv_q_push_head(out, n);
    }
  }
}

int wd_regions_remove(wd_regions *t, uint32_t pipe, uint64_t id,
                      wd_region_info *info, wave_error *err)
{
  wv_qnode out, *n;
  wv_q_init(&out);
  pthread_mutex_lock(&t->mu);
  rg_unlink(t, pipe, 0, id, &out);  /* ids are unique: one at most */
  pthread_mutex_unlock(&t->mu);
  wd_region *r = (n = wv_q_pop(&out)) != NULL ? RG_OF(n) : NULL;
  if (r == NULL)
    return wv_seterr(err, WAVE_EREGION, "no region %" PRIu64 " registered by "
                     "this connection", id);
  rg_info(r, info);
  wd_info("region %" PRIu64 " (%s) unregistered", r->id, r->name);
  wd_region_put(r);
  return 0;
}

unsigned wd_regions_held(wd_regions *t, uint32_t pipe)
{
  unsigned n = 0;
  wv_qnode *q;
  pthread_mutex_lock(&t->mu);
  WV_Q_EACH(q, &t->all)
    n += RG_OF(q)->pipe == pipe;
  pthread_mutex_unlock(&t->mu);
  return n;
}

void wd_regions_drop_pipe(wd_regions *t, uint32_t pipe)
{
  wv_qnode out, *n;
  wv_q_init(&out);
  pthread_mutex_lock(&t->mu);
  rg_unlink(t, pipe, 1, 0, &out);
  pthread_mutex_unlock(&t->mu);
  while ((n = wv_q_pop(&out)) != NULL) {
    wd_region *r = RG_OF(n);
    wd_info("region %" PRIu64 " (%s) released: its client disconnected",
            r->id, r->name);
    wd_region_put(r);
  }
}

int wd_regions_get(wd_regions *t, uint32_t pipe, uint64_t id,
                   wd_region **out, wave_error *err)
{
  *out = NULL;
  wv_qnode *n;
  pthread_mutex_lock(&t->mu);
  WV_Q_EACH(n, &t->all)
    if (RG_OF(n)->id == id && RG_OF(n)->pipe == pipe) {
      atomic_fetch_add(&RG_OF(n)->refs, 1);
      *out = RG_OF(n);
      break;
    }
  pthread_mutex_unlock(&t->mu);
  if (*out == NULL)
    return wv_seterr(err, WAVE_EREGION, "no region %" PRIu64 " registered by "
                     "this connection", id);
  return 0;
}

const uint8_t *wd_region_base(const wd_region *r) { return r->base; }
uint64_t wd_region_bytes(const wd_region *r) { return r->bytes; }
uint64_t wd_region_id(const wd_region *r) { return r->id; }
int wd_region_file(const wd_region *r) { return r->fd; }
int wd_region_copied(const wd_region *r) { return r->copied; }
int wd_region_fifo(const wd_region *r) { return r->fifo; }

int wd_region_claim(wd_region *r)
{
  return atomic_exchange(&r->claimed, 1) == 0;
}

int wd_region_pinned_for(const wd_region *r, const wv_dev *dev)
{
  uint32_t whole = atomic_load(&((wd_region *)r)->whole);
  for (unsigned s = 0; s < WD_REGION_SLOTS; s++)
    if ((whole & (1u << s)) && r->whole_be[s] == dev->be)
      return 1;
  return 0;
}

int wd_region_pin_left(const wd_region *r, unsigned slot, const wv_dev *dev)
{
  return r->base != NULL && wv_dev_can_pin(dev) && slot < WD_REGION_SLOTS &&
         !atomic_load(&((wd_region *)r)->gone) && r->pin_at[slot] < r->bytes;
}

int wd_region_pin_step(wd_region *r, unsigned slot, const wv_dev *dev)
{
  if (!wd_region_pin_left(r, slot, dev))
    return 0;
  uint64_t at = r->pin_at[slot];
  uint64_t n = r->bytes - at < WD_PIN_PIECE ? r->bytes - at : WD_PIN_PIECE;
  wave_error e = {0};
  if (wv_dev_host_register(dev, r->base + at, (size_t)n, &e) != 0) {
    /* said once per device at warn level: a driver that refuses one
     * region refuses them all */
    static _Atomic uint32_t warned;
    int first = !(atomic_fetch_or(&warned, 1u << slot) & (1u << slot));
    wd_log(first ? WD_LOG_WARN : WD_LOG_DEBUG, "region %" PRIu64 ": %s cannot "
           "pin it from byte %" PRIu64 " (%s); that part is copied through "
           "staging", r->id, dev->be->name, at, e.message);
    r->pin_at[slot] = r->bytes;  /* no more tries */
    return 0;
  }
  atomic_fetch_or(&r->pinned, 1u << slot);
  r->pin_at[slot] = at + n;
  if (at + n < r->bytes)
    return 1;
  r->whole_be[slot] = dev->be;
  atomic_fetch_or(&r->whole, 1u << slot);
  wd_debug("region %" PRIu64 " (%s) pinned on device slot %u", r->id, r->name,
           slot);
  return 0;
}

void wd_region_unpin(wd_region *r, unsigned slot, const wv_dev *dev)
{
  wv_dev_host_unregister(dev, r->base, (size_t)r->bytes);
  wd_debug("region %" PRIu64 " (%s) unpinned on device slot %u", r->id,
           r->name, slot);
  uint32_t left = atomic_fetch_and(&r->pinned, ~(1u << slot)) & ~(1u << slot);
  if (left == 0)
    rg_unmap(r);
}

/* May principal who see r (its name, pid, uid)?  Its owner, or root over
 * ipc, as with jobs (wd_peer_may); tcp principals own no regions. */
static int rg_visible(const wd_region *r, const char *who)
{
  char owner[32];
  snprintf(owner, sizeof owner, "uid:%" PRIu32, r->uid);
  return who != NULL && wd_peer_may(who, owner);
}

int wd_regions_snapshot(wd_regions *t, const char *who, wd_region_snap *s)
{
  memset(s, 0, sizeof *s);
  pthread_mutex_lock(&t->mu);
  size_t n = 0;
  wv_qnode *q;
  WV_Q_EACH(q, &t->all)
    n++;
  s->infos = calloc(n + 1, sizeof *s->infos);
  if (s->infos == NULL) {
    pthread_mutex_unlock(&t->mu);
    wd_region_snap_free(s);
    return WAVE_ENOMEM;
  }
  WV_Q_EACH(q, &t->all) {
    wd_region *r = RG_OF(q);
    if (!rg_visible(r, who))
      continue;
    rg_info(r, &s->infos[s->n]);
    s->n++;
  }
  s->bytes = t->bytes;
  pthread_mutex_unlock(&t->mu);
  return 0;
}

void wd_region_snap_free(wd_region_snap *s)
{
  free(s->infos);
  memset(s, 0, sizeof *s);
}
