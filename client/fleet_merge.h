/* fleet_merge.h - the exact merge rules of the fleet coordinator, as pure
 * functions (no sockets, no threads) so that tests can hold them against
 * the single-daemon reference (tests/test_fleet.c).
 *
 * docs/fleet.md and docs/reduction.md ("Partials") state the rules; the
 * exact merges themselves are core/partial.c and core/hashmerge.c, shared
 * with the daemon; this file adapts them to the fleet's pieces and cuts
 * the pieces.
 */
#ifndef WV_FLEET_MERGE_H
#define WV_FLEET_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "core/partial.h"
#include "core/segments.h"
#include "wave/client.h"
#include "wave/fleet.h"

/* ---- reductions --------------------------------------------------------- */

/* Merge n pieces (core/partial.h, in job order; argmin/argmax pieces with
 * their offsets set; fsum pieces with their exact partials) of a job of
 * dtype/op into res->bits, n_values, index, count (and fsum's exact,
 * exact_bytes, exact_flags), exactly as one daemon reduces the whole job.  0, or
 * WAVE_ENOMEM. */
int wv_fleet_reduce_merge(wave_dtype dt, wave_op op, const wv_partial *p,
                          size_t n, wave_reduce_result *res,
                          wave_error *err);

/* Does rows [0, rows) of data (float32 or float64: dt), under the mask
 * (NULL: all selected; else mask spans covering the same rows), hold a
 * selected finite float?  (wv_reduce_any_finite over the client's
 * chunks.) */
int wv_fleet_any_finite(wave_dtype dt, const void *data, uint64_t rows,
                        const wave_chunk *mask, size_t n_mask);

/* ---- hash jobs ---------------------------------------------------------- */

/* The answer for one piece [nonce, nonce + count): whole segments. */
typedef struct wv_fleet_hpart {
  uint64_t nonce, count;
  uint64_t *segments;     /* n_segments fingerprints, in nonce order */
  uint64_t n_segments;
  wv_hash_winner *winners;  /* its lowest-nonce winners, in nonce order */
  size_t n_winners;
  uint64_t winner_count;
  uint64_t best_nonce, best_output;
} wv_fleet_hpart;

/* Merge n pieces of segments of 2^s (core/hashmerge.h), in nonce order and
 * covering the job without gaps, each holding wv_seg_count of its range
 * segments, into res (job_fingerprint, segment_count, winners up to
 * max_winners, winner_count, best, hashes; segments too when
 * want_segments).  0, or WAVE_ENOMEM. */
int wv_fleet_hash_merge(const wv_fleet_hpart *p, size_t n, unsigned s,
                        uint32_t max_winners, int want_segments,
                        wave_fleet_hash_result *res, wave_error *err);

/* Pieces of [nonce, nonce + count) cut at multiples of 2^s, each about
 * piece nonces (rounded up to whole segments): writes the i-th piece's
 * start and length, returns how many there are (call with i = 0 first). */
uint64_t wv_fleet_hash_pieces(uint64_t nonce, uint64_t count, unsigned s,
                              uint64_t piece);
void wv_fleet_hash_piece(uint64_t nonce, uint64_t count, unsigned s,
                         uint64_t piece, uint64_t i, uint64_t *p_nonce,
                         uint64_t *p_count);

/* Guided pieces for a fleet of `daemons` (the default cut): in nonce
 * order, each piece a run of whole segments of 2^s (the job's first and
 * last may be partial) of about a 1/(4 daemons) share of what is left,
 * but at least 1/(128 daemons) of the job and one segment, so pieces
 * shrink toward the end and the daemons finish together.  Writes piece i's
 * start to nonces[i] and length to counts[i] (either may be NULL) and
 * returns the number of pieces (call with NULL first to learn it). */
uint64_t wv_fleet_hash_guided(uint64_t nonce, uint64_t count, unsigned s,
                              size_t daemons, uint64_t *nonces,
                              uint64_t *counts);

#endif
