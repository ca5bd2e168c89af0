/* filered.h - reductions whose rows lie (partly) in file regions, read as
 * they are reduced (docs/protocol.md "Regions", "File regions").
 *
 * A file region is a client's regular file that the daemon keeps open
 * (daemon/bulk/region.h); its rows are not in memory.  Reading a whole file into
 * a buffer first costs a gigabyte of fresh pages for a gigabyte file, which
 * is several times what `cat` pays for the same bytes: cat reads the page
 * cache into one small buffer that stays in the CPU caches.  So a job over
 * a file region runs on its device thread as a pipeline: the daemon's
 * reader pool (daemon/bulk/readers.h) preads the input (and mask) rows of
 * each slot, in parts that several readers read at once, into the
 * device's ring of staging buffers (pinned once where the device pins),
 * ahead of the device, and the device reduces each slot in place as a
 * one-chunk job of its own, in order; the answers merge as the pieces of
 * docs/reduction.md "Partials" do (core/partial.c, the merge the fleet
 * coordinator uses too), so the result has the bits of the whole job on
 * one device.
 *
 * Regions in memory.  A device that does not read host memory itself (a
 * GPU) stages what it is given with one thread's copy; the readers beat
 * that.  So spans in a copy region, or in a mapped region that no device
 * has pinned whole yet (a memfd filled before it was registered), are
 * copied by the readers into the ring the same way.  A job with nothing
 * to read (a payload, pinned regions, any region on the CPU) runs as one
 * call, as a message does.
 *
 * Pieces.  A slot is the rows [a, a + k) of one input chunk, a a multiple
 * of the slot size counted from the chunk's start; each device call takes
 * P rows of it, P = 256^2 (CPU: 256 KiB, an L2-sized piece that the CPU
 * backend reduces on the calling thread, 16 to a 4 MiB slot read in four
 * parts) or 256^3 (other devices: 64 MiB, one piece per slot, read in
 * eight parts of 8 MiB).  A float sum piece of 256^k rows is exactly the
 * chunk's level-k partial, so the chunk's value is the remaining levels
 * over its pieces' values (an all-masked piece counts as -0.0), and the
 * job's value the levels over the chunk values.  The other ops are
 * order-free: pieces that select no row are skipped, float min/max keep
 * only pieces with a selected finite row.  Spans of the job that lie in
 * memory (a message, a mapped region) are used in place; only file spans
 * are read.
 *
 * Masks on a device that stages them (caps.stages_masks: Vulkan copies a
 * masked job through its staging windows on one thread, applying the mask
 * as it copies).  The readers apply the mask instead, each to the rows of
 * its part (core/reduce.h wv_mask_fill: a neutral constant, or for min,
 * max and extent a copy of the part's first selected row), and the device
 * reduces the slot unmasked, in place.  A part that selects nothing gets
 * a copy of a row of another part from the device thread, and a slot
 * that selects nothing is skipped; the calls count every row, so the
 * job's count is put right from the parts' selected rows.  The integer
 * argmin/argmax is left masked (a copy before the first selected row
 * could take the index).
 *
 * Errors.  A file that is shorter, at the time of the job, than an extent
 * of it fails the job with REGION (pread returns short: no SIGBUS here).
 * A device error ends the job with that error.  Readers stop at the first
 * error.
 *
 * Stalls.  A read that blocks (a file on a hung NFS or FUSE mount) must not
 * hold the device: when the slot the device waits for is not filled within
 * limits.region_read_timeout_ms, the job fails with REGION and the device
 * moves on.  A part in a read holds only the job's state (its dup of each
 * descriptor) and its slot's buffer, and touches the job's memory only
 * outside a read, so the device thread waits for the parts that are not
 * in a read and leaves those that are: their slots' buffers stay lent
 * until the read returns (readers.h), the last one frees the job's state,
 * and the pool starts a reader to stand in for each meanwhile.  Each
 * counts as stuck; at WD_FILE_STUCK_MAX stuck readers, file jobs and
 * copies are refused (REGION) rather than start more threads that block.
 */
#ifndef WD_FILERED_H
#define WD_FILERED_H

#include "daemon/bulk/readers.h"
#include "daemon/bulk/region.h"
#include "workers/wvdev.h"

/* Where a span's rows are: fd >= 0: bytes [off, off + rows * size) of that
 * file (the span's data is NULL); fd < 0: the span's data. */
typedef struct wd_fsrc {
  int fd;
  int fifo;               /* fd is a pipe: read in order, bytes [0, N) */
  uint64_t off;
  uint64_t region;        /* its id, for messages */
  const wd_region *reg;   /* a mapped or copy region (the job holds it):
                             read by the readers too when not pinned */
} wd_fsrc;

/* Device thread: no span of src[0..n) would be read (no file; every
 * region span used in place, as on a device that reads host memory): the
 * job's rows are all in memory, and it may run as a message's would, in
 * slices too (rq/reduce.c). */
int wd_file_reads_nothing(const wv_dev *dev, const wv_caps *caps,
                          const wd_fsrc *src, size_t n);

/* Device thread, as dev opens (limits.staging_rings: startup): its
 * staging ring made now, for jobs of 4-byte rows with masks, so the first
 * file job does not pay for it, and so NVIDIA's Vulkan driver, which
 * refused it in a daemon that had tried regions (readers.h), gives it.
 * Nothing for a device that reads host memory; a refusal is logged and
 * the first job tries again. */
void wd_file_ring_prepare(wd_readers *r, const wv_dev *dev,
                          const wv_caps *caps);

/* wv_reduce_validate for a job whose file spans have data NULL. */
int wd_file_validate(const wv_reduce_job *job, wave_error *err);

#define WD_FILE_STUCK_MAX 16  /* readers left in reads that never returned */

/* Device thread, on r's readers and dev's ring.  job is validated (its
 * file spans have data NULL); src has n_input + n_mask entries;
 * timeout_ms bounds the wait for each slot.  *some_finite (float min/max/extent): whether a selected row is finite,
 * as ReduceResult.finite says.  out->transfer_s: the device's calls', added
 * up (the readers' reads are no part of it). */
int wd_file_reduce(wd_readers *r, const wv_dev *dev, const wv_caps *caps,
                   const wv_reduce_job *job, const wd_fsrc *src,
                   unsigned timeout_ms, wv_reduce_out *out, int *some_finite,
                   wave_error *err);

/* The first bytes of fd into buf (cap bytes, an anonymous mapping) on a
 * reader thread of r, waited for at most timeout_ms plus 1 s per 16 MiB of
 * bytes (a copy region's one read, the whole of it).  Past that:
 * WAVE_EREGION and *gave = 1: the buffer belongs to the reader left
 * behind, which unmaps it when its read returns. */
int wd_file_read_bounded(wd_readers *r, int fd, void *buf, size_t cap,
                         uint64_t bytes, unsigned timeout_ms, int *gave,
                         wave_error *err);

#endif
