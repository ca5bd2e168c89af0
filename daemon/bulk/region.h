/* region.h - shared-memory regions that same-host clients register, so that
 * reductions read their rows in place (docs/protocol.md "Regions").
 *
 * In the manner of Triton's system shared-memory extension, a client
 * registers a region once and then names (region, offset, bytes) in its
 * requests.  The client hands the object over as a descriptor (SCM_RIGHTS
 * on the side socket "<ipc path>.fd", daemon/net/fdpass.h) and names the
 * ticket it got for it; the daemon claims it only for the ipc connection
 * whose peer credentials (SO_PEERCRED, which nng reports as
 * NNG_OPT_IPC_PEER_PID/UID) passed it, and never opens a path a client
 * names.  What the descriptor may be (docs/security.md "Regions"): a
 * regular file or memfd (fstat), open for reading.  A mapped region must
 * be a memfd sealed against shrinking, because a mapping whose file
 * shrinks raises SIGBUS in whoever reads past the new end, and the reader
 * here is the daemon; one of huge pages must also be sealed against
 * writes (F_SEAL_FUTURE_WRITE), since a punched hole refaults only while
 * free huge pages last; an ordinary one must have no holes (the daemon
 * would fault in, and be charged for, its zero pages).  It is mapped
 * read-only once and the descriptor closed.
 *
 * Regions belong to the connection (nng pipe) that registered them: only
 * it can use or unregister them, and they are dropped when it goes away.
 * A region is reference-counted: the table holds one reference, each
 * reduction using it one more, so an unregister or a disconnect mid-job
 * unmaps only after the job.  A *file region* (copy + file) maps nothing:
 * the daemon keeps the client's descriptor (no seals, since pread of a
 * shrunk file returns short instead of raising SIGBUS) and each job reads
 * it then, in pieces (daemon/bulk/filered.h), each read bounded by
 * limits.region_read_timeout_ms.  A copy region is read once, at
 * registration, under the same bound.
 *
 * Devices that pin host memory for DMA (backend slot host_register) pin a
 * mapped region from its registration on (once the reply is on its way),
 * WD_PIN_PIECE bytes at a time, on their own thread and between other
 * work (a setup item, exec/work.h), and each piece after the reductions
 * another pinning device has queued, up to a bound (a pin stalls other
 * devices' copies: bulk/regionpin.c).  Pinning 1 GiB costs
 * about twice its copy on the H200 host, so a job never waits for it: a
 * client that registers before it fills finds the region pinned (it was
 * pinned while the client wrote), and a job that comes before the end
 * sends the pinned pieces directly and stages the rest (measured there:
 * 0.39-0.46x the DMA rate for a region never touched, where pinning it
 * first gave 0.18x).  The final release asks each device that pinned
 * pieces (the unpin callback) to unregister them before the mapping
 * goes.
 * The table is locked by one mutex: decode threads register and look up,
 * nng's pipe callback drops.
 */
#ifndef WD_REGION_H
#define WD_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/config.h"
#include "daemon/net/fdpass.h"
#include "daemon/bulk/share.h"
#include "wave/error.h"
#include "workers/wvdev.h"

#define WD_REGION_SLOTS 32  /* devices that can pin one region */
#define WD_PIN_PIECE ((uint64_t)32 << 20)  /* about 1.2 ms to pin there */

typedef struct wd_region wd_region;
typedef struct wd_regions wd_regions;
typedef struct wd_readers wd_readers;  /* bulk/readers.h */

/* Called when a region with pieces pinned on device slot `slot` is
 * released; the callee must make that device's thread call
 * wd_region_unpin(). */
typedef void (*wd_unpin_fn)(void *arg, wd_region *r, unsigned slot);

/* sh: the clients' shares (share.h); rd: the server's reader pool, which
 * reads copies (wd_file_read_bounded); both kept by the caller. */
int wd_regions_new(const wd_config *cfg, wd_shares *sh, wd_readers *rd,
                   wd_unpin_fn unpin, void *arg, wd_regions **out,
                   wave_error *err);
/* Unmap everything (devices already closed). */
void wd_regions_free(wd_regions *t);
/* Where the side sockets keep passed descriptors for registrations. */
wd_fdpass *wd_regions_fdpass(wd_regions *t);

/* A registration, as RegionRegisterRequest says it (bulk/decode.c reads the
 * message; this table knows no protobuf). */
typedef struct wd_region_spec {
  const uint8_t *ticket;   /* fd_ticket: the descriptor passed (fdpass.h) */
  size_t ticket_len;       /* 0: an older client that named a path */
  uint64_t bytes;          /* 0: the whole file */
  const char *name;        /* may be NULL */
  int copy, file;
} wd_region_spec;

/* What RegionInfo says of a region, copied. */
typedef struct wd_region_info {
  uint64_t id, bytes;
  char name[64];
  uint32_t owner_uid, owner_pid;
  uint32_t jobs;           /* jobs reading it now */
  uint32_t pinned_devices;
  int copied, file;
} wd_region_info;

/* A registration from pipe of principal who, whose key is key
 * (wd_peer_key: its shares, share.h), peer credentials uid/pid (have_cred
 * 0 on a transport that has none).  On success *info is filled, and *pin
 * (when not NULL) is the region, with a reference, if it is mapped and so
 * can be pinned. */
int wd_regions_add(wd_regions *t, uint32_t pipe, uint64_t key,
                   const char *who, int have_cred, uint32_t uid, uint32_t pid,
                   const wd_region_spec *rq,
                   wd_region_info *info, wd_region **pin, wave_error *err);
int wd_regions_remove(wd_regions *t, uint32_t pipe, uint64_t id,
                      wd_region_info *info, wave_error *err);
/* Every region of a connection that went away. */
void wd_regions_drop_pipe(wd_regions *t, uint32_t pipe);
/* How many regions pipe has registered (the idle sweep keeps it). */
unsigned wd_regions_held(wd_regions *t, uint32_t pipe);

/* The region id of pipe, with a reference (release: wd_region_put). */
int wd_regions_get(wd_regions *t, uint32_t pipe, uint64_t id,
                   wd_region **out, wave_error *err);
void wd_region_ref(wd_region *r);
void wd_region_put(wd_region *r);
const uint8_t *wd_region_base(const wd_region *r);
uint64_t wd_region_bytes(const wd_region *r);
uint64_t wd_region_id(const wd_region *r);
/* A file region (RegionRegisterRequest copy + file): its descriptor, which
 * jobs pread (daemon/bulk/filered.h), and its base is NULL; -1 otherwise. */
int wd_region_file(const wd_region *r);
/* A copy region: its rows are the daemon's own memory. */
int wd_region_copied(const wd_region *r);
/* A pipe region (a file region whose descriptor is a pipe's read end, of
 * the bytes its registration stated): one job reads it, once, in order
 * (daemon/bulk/filered.h). */
int wd_region_fifo(const wd_region *r);
/* The one job of a pipe region takes it: 1 for the first caller, 0 for
 * every later one (the pipe is spent or being read). */
int wd_region_claim(wd_region *r);
/* A device of dev's backend has all of r pinned (bulk/filered.c: its rows
 * are then sent as they lie, not read through the staging rings).  The
 * backend, not the device: a CUDA registration is the whole process's,
 * while a Vulkan device can use no CUDA pin (vk0 beside cuda0). */
int wd_region_pinned_for(const wd_region *r, const wv_dev *dev);

/* Device thread of slot: pin r's next piece with the backend's
 * host_register; 1 while pieces remain, 0 once the region is pinned, or
 * cannot be (a refusal leaves the rest unpinned, a region unregistered
 * meanwhile stops), or the backend does not pin.  Unpin it when asked
 * through the unpin hook (dev NULL: a device that cannot run it; only
 * the bookkeeping, then the unmap). */
int wd_region_pin_step(wd_region *r, unsigned slot, const wv_dev *dev);
/* Device thread of slot: would wd_region_pin_step pin a piece? */
int wd_region_pin_left(const wd_region *r, unsigned slot, const wv_dev *dev);
void wd_region_unpin(wd_region *r, unsigned slot, const wv_dev *dev);

/* For status: copies of the regions principal who may see (its own; root's
 * over ipc: all; docs/security.md "Status"), and the total of all. */
typedef struct wd_region_snap {
  wd_region_info *infos;
  size_t n;
  uint64_t bytes;
} wd_region_snap;
int wd_regions_snapshot(wd_regions *t, const char *who, wd_region_snap *s);
void wd_region_snap_free(wd_region_snap *s);

#endif
