/* readers.h - the daemon's reader pool and the devices' staging rings
 * (daemon/bulk/filered.h uses both), one wd_readers that the server owns:
 * made as it starts (wd_readers_new), handed to those who post to it (the
 * file jobs through rq/reduce.c, the regions' bounded reads through
 * bulk/decode.c) and to its devices' open and close hooks, stopped as it
 * is freed (wd_readers_free).  No pool lives for the process, and none is
 * started on first use.
 *
 * One thread cannot move a page-cache file faster than about 4 GB/s (one
 * core's memcpy out of the page cache), where the H200 host's pinned copy
 * runs at 54 GB/s and 8 threads reading the same file reach 25 GB/s.  So
 * the reads of file regions (and the copies of regions that are not
 * pinned) are cut into parts that a pool of reader threads runs, started
 * once with the daemon (limits.file_readers; 0 = min(12, cores)); a job
 * never starts a thread.  A copy region's one bounded read (bulk/fileio.c
 * wd_file_read_bounded) is a task of the same pool.  The pool is a FIFO
 * of tasks: parts of several jobs (several devices) interleave, so no job
 * waits for another to end.
 *
 * A task that blocks in a read (a hung NFS or FUSE mount) keeps its
 * thread.  Its job gives up on it (limits.region_read_timeout_ms) and asks
 * for a replacement (wd_readers_grow), so the pool keeps its size for the
 * other jobs; when the read returns, the task says so (wd_readers_shrink)
 * and a thread over the size ends after its task.
 *
 * Rings.  Each device keeps the staging buffers its file jobs read into,
 * made on its thread as it opens (limits.staging_rings: startup, the
 * default; first-use: at its first such job) and kept: memory of the
 * device's own where the backend gives it (host_alloc: NVIDIA's Vulkan,
 * which refuses to import any host memory), else our pages pinned once
 * with the backend's host_register (DMA without a staging copy), plain
 * memory where the backend reads host memory itself or refuses.  Pinning costs about
 * twice a copy of the same bytes, so a buffer pinned per job would cost
 * more than it saves, and made at start-up it costs no job anything.
 * In the daemon, NVIDIA's Vulkan driver refused the ring's host-visible
 * memory (OUT_OF_DEVICE_MEMORY, H200 host) once regions had been tried,
 * though a bare process (wvbench-vkhost) is given it before and after a
 * refused import: the cause is not known, and a ring made as the device
 * opens was never refused.  A larger free buffer serves a smaller
 * request, so jobs of 4- and 8-byte rows share one ring.  A buffer a stuck
 * read still writes into is lent: the ring makes another and takes the
 * lent one back when the read returns (wd_ring_return).  A device gives
 * its ring back as it closes (wd_ring_forget); what is left goes with the
 * pool.
 */
#ifndef WD_BULK_READERS_H
#define WD_BULK_READERS_H

#include <stddef.h>
#include <stdint.h>

#include "core/queue.h"
#include "wave/error.h"
#include "workers/worker.h"
#include "workers/wvdev.h"

#define WD_READERS_MAX 64

/* A unit of work; run on a reader thread, which owns t until run returns
 * (run may free it). */
typedef struct wd_rtask {
  wv_qnode q;               /* the pool's FIFO */
  void (*run)(struct wd_rtask *t);
} wd_rtask;

typedef struct wd_readers wd_readers;

/* min(12, online cores): limits.file_readers 0 (12 reached the H200
 * host's page-cache rate; 16 did no better). */
unsigned wd_readers_default(void);
/* A pool of n threads (0: the default; at most WD_READERS_MAX), started
 * now.  Returns 0 or an error (no thread started). */
int wd_readers_new(unsigned n, wd_readers **out, wave_error *err);
/* Stop r: its idle threads end and are waited for (threads in a read that
 * never returned are left, and free r as the last one ends); the rings'
 * buffers go but those lent.  Devices are closed by then.  NULL: nothing. */
void wd_readers_free(wd_readers *r);
/* Threads the pool keeps (its size plus replacements). */
unsigned wd_readers_size(wd_readers *r);
/* Reads left stuck: replacements outstanding (grow minus shrink). */
unsigned wd_readers_stuck(wd_readers *r);
/* Queue t; any thread. */
void wd_readers_post(wd_readers *r, wd_rtask *t);
/* k tasks are left in reads that did not return: start k more threads;
 * and, as each such read returns, wd_readers_shrink(r, 1). */
void wd_readers_grow(wd_readers *r, unsigned k);
void wd_readers_shrink(wd_readers *r, unsigned k);

/* Device thread of dev: n buffers of bytes each into bufs, from its ring
 * (made and pinned here when there are not enough free ones). */
int wd_ring_take(wd_readers *r, const wv_dev *dev, size_t bytes,
                 unsigned n, uint8_t **bufs, wave_error *err);
/* Device thread: buffers taken back; lent[i] nonzero: a read still writes
 * into bufs[i] (it comes back through wd_ring_return). */
void wd_ring_give(wd_readers *r, wv_device *bdev, uint8_t *const *bufs,
                  const int *lent, unsigned n);
/* Any thread: a lent buffer is free again. */
void wd_ring_return(wd_readers *r, uint8_t *buf);
/* Device thread, before its device closes: its ring goes (a lent buffer
 * of our pages stays, unpinned, until its read returns and the pool
 * goes). */
void wd_ring_forget(wd_readers *r, const wv_dev *dev);

#endif
