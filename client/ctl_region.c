/* ctl_region.c - wavectl's files read straight into a shared-memory region
 * (for a daemon on this host, over ipc).
 *
 * Every --input and --mask file that is a regular file in raw or .npy form
 * is read into one memfd region (wave_region_read_fd: sendfile, i.e. one
 * copy out of the page cache, like `cat`), each at a 64-byte-aligned
 * offset; a .npy header is parsed in place and its extent starts after it.
 * The region is then registered and reduced where it lies, so the daemon
 * reads the rows without another copy or a message of their size.  Text,
 * standard input and other non-regular files are not handled here (the
 * caller loads them as before).  A bool .npy mask (one byte a row) is
 * widened to uint32 rows on the way in, here as on every other path: in
 * the memfd region, and for file and copy regions in a memfd region of
 * its own, since the daemon takes uint32 masks only.
 */
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/ctl.h"
#include "core/base.h"

#define RG_ALIGN 64

/* n bool mask rows at [off, off + n) of fd, widened to uint32 rows at
 * dst (wv_mask_widen), a block at a time. */
static int crg_widen_fd(const char *path, int fd, size_t off, size_t n,
                       unsigned char *dst, wave_error *err)
{
  unsigned char buf[16384];
  for (size_t done = 0; done < n;) {
    size_t want = n - done < sizeof buf ? n - done : sizeof buf;
    ssize_t got = pread(fd, buf, want, (off_t)(off + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return wv_seterr(err, WAVE_EIO, "%s: %s", path,
                       got < 0 ? strerror(errno) : "changed while read");
    wv_mask_widen(dst + 4 * done, buf, (size_t)got);
    done += (size_t)got;
  }
  return 0;
}

/* The layout of one open file of size bytes, decided from its head. */
static int crg_decide(const char *path, int fd, size_t size, wv_format fmt,
                     wave_dtype dt, wv_layout *lay, wave_error *err)
{
  unsigned char head[WV_FORMAT_HEAD];
  size_t k = size < sizeof head ? size : sizeof head;
  ssize_t got = pread(fd, head, k, 0);
  if (got != (ssize_t)k)
    return wv_seterr(err, WAVE_EIO, "%s: %s", path,
                     got < 0 ? strerror(errno) : "changed while read");
  return wv_format_decide(path, head, k, size, fmt, dt, lay, err);
}

int wv_region_load(const char *const *paths, size_t n, size_t n_inputs,
                   wv_format fmt, wave_dtype dtype, wave_region **out,
                   wave_extent *ext, wave_error *err)
{
  *out = NULL;
  if (fmt == WV_FMT_TEXT || n == 0)
    return 1;
  int *fds = calloc(n, sizeof *fds);
  size_t *sizes = calloc(n, sizeof *sizes), *offs = calloc(n, sizeof *offs);
  wv_layout *lays = calloc(n, sizeof *lays);
  int rc = 1;
  size_t total = 0, opened = 0;
  if (fds == NULL || sizes == NULL || offs == NULL || lays == NULL) {
    rc = wv_seterr(err, WAVE_ENOMEM, NULL);
    goto out;
  }
  for (; opened < n; opened++) {
    const char *p = paths[opened];
    if (strcmp(p, "-") == 0)
      goto out;  /* rc 1: not for a region */
    fds[opened] = open(p, O_RDONLY | O_CLOEXEC);
    if (fds[opened] < 0) {
      rc = wv_seterr(err, WAVE_EIO, "%s: %s", p, strerror(errno));
      goto out;
    }
    struct stat st;
    if (fstat(fds[opened], &st) != 0 || !S_ISREG(st.st_mode)) {
      opened++;
      goto out;
    }
    sizes[opened] = (size_t)st.st_size;
    /* a bool mask is decided now, for the room its uint32 rows take */
    wv_layout *lay = &lays[opened];
    if (opened >= n_inputs &&
        (rc = crg_decide(p, fds[opened], sizes[opened], fmt, WV_DTYPE_MASK,
                        lay, err)) != 0) {
      opened++;
      goto out;
    }
    rc = 1;
    total = (total + RG_ALIGN - 1) / RG_ALIGN * RG_ALIGN;
    offs[opened] = total;
    total += lay->row == 1 ? (size_t)lay->bytes * 4 : sizes[opened];
  }
  if ((rc = wave_region_create(out, total ? total : RG_ALIGN, "wavectl",
                               err)) != 0)
    goto out;
  unsigned char *base = wave_region_data(*out);
  for (size_t i = 0; i < n; i++) {
    if (lays[i].row == 1) {
      if ((rc = crg_widen_fd(paths[i], fds[i], lays[i].offset,
                            (size_t)lays[i].bytes, base + offs[i], err)) != 0)
        goto fail;
      ext[i] = (wave_extent){*out, offs[i], (size_t)lays[i].bytes * 4};
      continue;
    }
    size_t got;
    if ((rc = wave_region_read_fd(*out, offs[i], fds[i], sizes[i], &got,
                                  err)) != 0)
      goto fail;
    if (got != sizes[i]) {
      rc = wv_seterr(err, WAVE_EIO, "%s: changed while read (%zu of %zu "
                     "bytes)", paths[i], got, sizes[i]);
      goto fail;
    }
    wave_dtype dt = i < n_inputs ? dtype : WV_DTYPE_MASK;
    wv_layout lay;
    if ((rc = wv_format_decide(paths[i], base + offs[i],
                               sizes[i] < WV_FORMAT_HEAD ? sizes[i]
                                                         : WV_FORMAT_HEAD,
                               sizes[i], fmt, dt, &lay, err)) != 0)
      goto fail;
    if (lay.format == WV_FMT_TEXT || lay.row == 1) {
      rc = 1;  /* text, or the file became a bool mask while read */
      goto fail;
    }
    ext[i] = (wave_extent){*out, offs[i] + lay.offset, (size_t)lay.bytes};
  }
  rc = 0;
  goto out;
fail:
  wave_region_close(*out);
  *out = NULL;
out:
  for (size_t i = 0; i < opened; i++)
    if (fds[i] > 0)
      close(fds[i]);
  free(fds);
  free(sizes);
  free(offs);
  free(lays);
  return rc;
}

/* ---- daemon-side files ---------------------------------------------------- */
/* wv_copy_load registers each file as a *file region*: the daemon gets our
 * descriptor (SCM_RIGHTS, client/region.c), so it reads what we could open
 * whatever its uid, and the job reads it in pieces
 * through a small ring of buffers that it reduces as they fill
 * (daemon/filered.c), so the rows cross memory once, as with `cat`.  A
 * daemon without file regions makes a copy region of it instead. */

/* A bool mask file (lay->row 1) as a memfd region of its rows widened to
 * uint32, registered: the daemon's regions take uint32 masks only. */
static int crg_mask_region(wave_client *c, const char *path, int fd,
                          const wv_layout *lay, wave_region **out,
                          wave_error *err)
{
  size_t n = (size_t)lay->bytes;
  int rc = wave_region_create(out, n ? n * 4 : RG_ALIGN, "wavectl", err);
  if (rc == 0)
    rc = crg_widen_fd(path, fd, lay->offset, n, wave_region_data(*out), err);
  if (rc == 0)
    rc = wave_region_register(c, *out, err);
  return rc;
}

int wv_copy_load(wave_client *c, const char *const *paths, size_t n,
                 size_t n_inputs, wv_format fmt, wave_dtype dtype, int copy,
                 wave_region **regions, wave_extent *ext, wave_error *err)
{
  if (fmt == WV_FMT_TEXT)
    return 1;
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    if (strcmp(paths[i], "-") == 0)
      return 1;
    int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return wv_seterr(err, WAVE_EIO, "%s: %s", paths[i], strerror(errno));
    struct stat st;
    wv_layout lay = {0};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
      rc = 1;
    else  /* decided first: an empty file is refused or not as elsewhere */
      rc = crg_decide(paths[i], fd, (size_t)st.st_size, fmt,
                     i < n_inputs ? dtype : WV_DTYPE_MASK, &lay, err);
    if (rc == 0 && (st.st_size == 0 || lay.format == WV_FMT_TEXT))
      rc = 1;  /* the daemon takes no empty region; text is parsed here */
    if (rc == 0) {
      int e = lay.row == 1
                  ? crg_mask_region(c, paths[i], fd, &lay, &regions[i], err)
              : copy ? wave_region_copy_fd(c, fd, (size_t)st.st_size,
                                           "wavectl", &regions[i], err)
                     : wave_region_file_fd(c, fd, (size_t)st.st_size,
                                           "wavectl", &regions[i], err);
      if (e == WAVE_EREGION || e == WAVE_EUNSUPPORTED || e == WAVE_EBUSY)
        rc = 2;  /* EBUSY: the side socket refused or reset (full) */
      else
        rc = e;
    }
    close(fd);  /* the daemon has its own descriptor (or its copy) */
    if (rc == 0)
      ext[i] = lay.row == 1
                   ? (wave_extent){regions[i], 0, (size_t)lay.bytes * 4}
                   : (wave_extent){regions[i], lay.offset, (size_t)lay.bytes};
  }
  if (rc != 0)
    for (size_t i = 0; i < n; i++)
      if (regions[i] != NULL) {
        wave_error e2;
        wave_region_unregister(c, regions[i], &e2);
        wave_region_close(regions[i]);
        regions[i] = NULL;
      }
  return rc;
}
