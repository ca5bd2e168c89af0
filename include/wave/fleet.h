/* wave/fleet.h - libwaveclient's fleet coordinator: one hash job or one
 * reduction over many wavedd daemons, with the bits of a single daemon.
 *
 * A wave_fleet holds one wave_client (its own nng REQ socket) per daemon,
 * never one REQ socket dialing several: nng would balance requests, not
 * jobs, and a poll could reach a daemon that does not own the job.  A job
 * is cut into pieces that sit in one queue; each daemon's threads (two by
 * default) pull the next piece when theirs is answered, so a faster daemon
 * takes more.  Pieces are merged exactly (docs/fleet.md):
 *   - hash: pieces are whole segments of 2^s nonces (the job's first and
 *     last may be partial), each asked with want_segments; the segment
 *     lists are laid end to end in nonce order and the job fingerprint is
 *     FNV-1a-64 over them; winners are the lowest-nonce max_winners of the
 *     union, winner_count the sum, best the min (output, nonce);
 *   - reduce: pieces are runs of 256^k rows of one chunk, and the
 *     coordinator runs the float-sum tree's upper levels over the pieces'
 *     values (docs/reduction.md, "Partials"); an argmin/argmax piece's
 *     index is moved by the job row of the piece's first row, so the
 *     index is global, and the 64-bit dtypes merge their 64-bit values;
 *     fsum pieces merge their exact partials (wave_reduce_result.exact) by
 *     integer addition, so any cut gives the bits of one daemon, and the
 *     fleet's result carries the merged exact partial too.
 * A daemon that stops answering, or whose job fails with a device error,
 * is dropped: its piece goes back in the queue for the others, and the
 * result names it (members[i].failed, wave_fleet_member_why).  So is one
 * whose hash answer fails the coordinator's checks (its nonces outside the
 * piece, counts that do not add up, a winner or best that does not re-hash
 * to its output: wave_fleet_set_rehash), one that makes no progress for
 * the stall deadline, one that answers AUTH, and one whose connection
 * closes while it holds a hash piece.  An error of the job itself (a bad
 * pack, a mask of the wrong length) fails the whole call.
 *
 * Threads: a wave_fleet runs one call at a time; wave_fleet_cancel() may be
 * called from any thread or a signal handler while a call runs.
 */
#ifndef WAVE_FLEET_H
#define WAVE_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "wave/client.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wave_fleet wave_fleet;

/* Connect to n daemons (n >= 1, URLs distinct).  Connections are lazy, as
 * with wave_client_open(). */
WAVE_API int wave_fleet_open(wave_fleet **out, const char *const *urls,
                             size_t n, wave_error *err);
WAVE_API void wave_fleet_close(wave_fleet *f);
/* Credentials for every daemon of the fleet (the same token, CA and server
 * name for all; wave/client.h).  Call before the first job: the strings
 * are copied.  Without it each connection uses wave_client_open's
 * defaults ($WAVE_TOKEN_FILE, $WAVE_TLS_CA). */
WAVE_API int wave_fleet_set_client_options(wave_fleet *f,
                                           const wave_client_options *opts,
                                           wave_error *err);
WAVE_API size_t wave_fleet_size(const wave_fleet *f);
WAVE_API const char *wave_fleet_url(const wave_fleet *f, size_t i);
/* Per-exchange reply timeout (default 30000 ms): a daemon silent for
 * longer is taken as dead. */
WAVE_API void wave_fleet_set_timeout(wave_fleet *f, int timeout_ms);
/* Stop the running call: every daemon's current piece is cancelled and the
 * call returns WAVE_ECANCELLED.  Async-signal-safe (one atomic store). */
WAVE_API void wave_fleet_cancel(wave_fleet *f);

/* Progress deadline (default 120000 ms; 0 or less: the default): a daemon
 * whose hash piece reports no new `done` nonces for this long is dropped
 * as stalled and its piece runs elsewhere (docs/fleet.md). */
#define WAVE_FLEET_STALL_MS 120000
WAVE_API void wave_fleet_set_stall(wave_fleet *f, int stall_ms);

/* The coordinator's own hash: outputs[0..count) of nonces [nonce, nonce +
 * count) under the named pack, computed on this host (wavectl loads the
 * pack from its packs folder and runs the CPU reference).  0, or a WAVE_E*
 * code with err filled (the call then fails with it: a pack the
 * coordinator cannot hash is the caller's problem, not a daemon's).
 * Called from the fleet's threads, several at once. */
typedef int (*wave_fleet_rehash_fn)(void *arg, const char *pack,
                                    uint64_t nonce, uint64_t count,
                                    uint64_t *outputs, wave_error *err);
/* With a rehash function set, wave_fleet_hash re-hashes every winner and
 * the best of every piece, and one random segment of each piece whose
 * segments are at most 2^13 nonces and 1/64 of the piece (its fingerprint
 * re-folded); a daemon whose
 * answer differs is dropped as lying (WAVE_FLEET_LIED) and every piece it
 * answered runs again elsewhere.  Without one, only what needs no hash is
 * checked: ranges, counts, order, output < target, best <= winners. */
WAVE_API void wave_fleet_set_rehash(wave_fleet *f, wave_fleet_rehash_fn fn,
                                    void *arg);

typedef struct wave_fleet_options {
  unsigned segment_log2;  /* hash: 2^s nonces per segment (0: 13), 5..20 */
  uint64_t piece;         /* hash: nonces per piece, rounded up to whole
                             segments (0: guided pieces, about 1/(4
                             daemons) of what is left, shrinking to
                             count / (128 daemons), so the daemons finish
                             together);
                             reduce: rows per piece, 256, 65536 or 2^24
                             (0: 65536) */
  int want_segments;      /* hash: return the job's segment list */
  unsigned depth;         /* pieces in flight per daemon (0: 2), so that a
                             daemon has the next piece queued while the
                             last one's answer travels back */
} wave_fleet_options;

/* What one daemon did in the last call. */
typedef struct wave_fleet_member {
  const char *url;        /* the fleet's copy */
  uint64_t pieces;        /* pieces it completed */
  uint64_t work;          /* nonces hashed / rows reduced in them */
  double seconds;         /* wall time of its pieces */
  int failed;             /* dropped: error says why */
  wave_error error;
} wave_fleet_member;

/* Why a daemon was dropped (wave_fleet_member.why). */
typedef enum wave_fleet_drop {
  WAVE_FLEET_KEPT = 0,
  WAVE_FLEET_FAILED = 1,   /* silent, transport error, or a daemon error
                              (shutdown, restart, pack, device fault) */
  WAVE_FLEET_LIED = 2,     /* an answer failed the coordinator's checks */
  WAVE_FLEET_STALLED = 3,  /* no progress within the stall deadline */
  WAVE_FLEET_AUTH = 4,     /* refused the fleet's token (AUTH) */
  WAVE_FLEET_CLOSED = 5,   /* its connection closed while it held a piece */
} wave_fleet_drop;
/* Why daemon i was dropped in the fleet's last call (wave_fleet_drop;
 * WAVE_FLEET_KEPT when it was not).  A function, not a member field, so
 * that wave_fleet_member keeps its size for programs built before it. */
WAVE_API int wave_fleet_member_why(const wave_fleet *f, size_t i);
/* "kept", "failed", "lied", "stalled", "auth", "closed" (else "?"). */
WAVE_API const char *wave_fleet_drop_name(int why);

typedef struct wave_fleet_progress {
  uint64_t done, total;   /* nonces (hash) or rows (reduce) */
  size_t alive, failed;   /* daemons */
  double seconds;
} wave_fleet_progress;
/* Called from the calling thread about every 200 ms and once at the end. */
typedef void (*wave_fleet_progress_fn)(const wave_fleet_progress *p,
                                       void *arg);

typedef struct wave_fleet_hash_result {
  uint64_t job_fingerprint;
  unsigned segment_log2;
  uint64_t segment_count;
  uint64_t *segments;     /* segment_count entries when want_segments */
  size_t n_winners;
  wave_winner *winners;   /* the lowest-nonce max_winners, allocated */
  uint64_t winner_count;  /* exact */
  uint64_t best_nonce, best_output;
  uint64_t hashes;
  double seconds;         /* wall time of the call */
  uint64_t pieces, retried;  /* pieces in the job, pieces run again */
  size_t n_members;       /* = wave_fleet_size() */
  wave_fleet_member *members;
  size_t n_failed;
} wave_fleet_hash_result;

/* req->device empty/NULL runs each piece over all of its daemon's devices
 * (HashRequest.devices = ["all"]); want_outputs is refused (WAVE_EARG).
 * Needs daemons that serve protocol 2 (segments). */
WAVE_API int wave_fleet_hash(wave_fleet *f, const wave_hash_request *req,
                             const wave_fleet_options *opt,
                             wave_fleet_hash_result *res,
                             wave_fleet_progress_fn progress, void *arg,
                             wave_error *err);
WAVE_API void wave_fleet_hash_result_free(wave_fleet_hash_result *res);

typedef struct wave_fleet_reduce_result {
  wave_reduce_result value;   /* as one daemon would answer (device: "") */
  uint64_t pieces, retried;
  size_t n_members;
  wave_fleet_member *members; /* allocated; free with the call below */
  size_t n_failed;
} wave_fleet_reduce_result;

/* One reduction, its chunks cut into pieces spread over the fleet.  Works
 * with protocol-1 daemons (32-bit dtypes, sum..xor: the 64-bit dtypes and
 * argmin/argmax need daemons that carry them, others refuse); float
 * min/max/extent pieces whose answer is +0.0 are checked for a finite row
 * on the coordinator (docs/reduction.md, "Partials").  Input chunks are
 * whole rows (4 bytes, 8 for the 64-bit dtypes), else WAVE_ELENGTH, as a
 * daemon says. */
WAVE_API int wave_fleet_reduce(wave_fleet *f, const wave_reduce_request *req,
                               const wave_fleet_options *opt,
                               wave_fleet_reduce_result *res,
                               wave_error *err);
/* A stream of independent reductions, each sent whole to the daemon that
 * is free first.  results[i] / errors[i] (errors may be NULL) get each
 * job's answer (results[i].device is the name kept by the fleet's client
 * of the daemon that ran it: valid until wave_fleet_close); returns 0 when
 * every job succeeded, else the first failed job's code.  run (may be
 * NULL) receives the per-daemon counts. */
WAVE_API int wave_fleet_reduce_many(wave_fleet *f,
                                    const wave_reduce_request *reqs, size_t n,
                                    wave_reduce_result *results,
                                    wave_error *errors,
                                    wave_fleet_reduce_result *run,
                                    wave_error *err);
WAVE_API void wave_fleet_reduce_result_free(wave_fleet_reduce_result *res);

#ifdef __cplusplus
}
#endif
#endif
