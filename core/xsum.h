/* xsum.h - the exact float sum, op fsum (issue 39; docs/reduction.md
 * "fsum"): a fixed-point accumulator that holds any sum of float32 or
 * float64 rows exactly, merged by integer addition, rounded once.
 *
 * The accumulator is a signed two's complement integer X of n_limbs 64-bit
 * limbs (limb 0 the lowest) in units of the dtype's smallest subnormal,
 * 2^-149 (float32) or 2^-1074 (float64): the rows' exact sum is X * unit.
 * A finite row with biased exponent e and fraction f is M * 2^b units, with
 * M = f | (e ? 2^23 or 2^52 : 0) and b = e ? e - 1 : 0 (wv_xsum_row_*).
 * Float32 needs bits [0, 277), float64 [0, 2098); 64 bits of carry room
 * above and the sign make 6 and 34 limbs.  Beside X: flags (a NaN row, a
 * +inf row, a -inf row, a selected row other than -0.0), merged by OR.
 * Every merge is exact and associative, so the answer depends on no
 * chunking, order, device split or fleet: only on the multiset of rows.
 *
 * A device need not add rows one by one: it adds signed int64 "bins" at
 * bit offsets it chooses (wv_xsum_add_bins: bins[i] weighs 2^(i * width)
 * units), as long as no bin overflowed on the device.
 */
#ifndef WV_XSUM_H
#define WV_XSUM_H

#include <stddef.h>
#include <stdint.h>

#include "wave/error.h"
#include "wave/types.h"

#define WV_XSUM_LIMBS 34         /* float64: 2176 bits */
#define WV_XSUM_F32_LIMBS 6      /* float32: 384 bits */

#define WV_XSUM_NAN 1u           /* a selected NaN row */
#define WV_XSUM_PINF 2u          /* a selected +inf row */
#define WV_XSUM_NINF 4u          /* a selected -inf row */
#define WV_XSUM_NOT_NEGZERO 8u   /* a selected row other than -0.0 */

typedef struct wv_xsum {
  uint64_t limb[WV_XSUM_LIMBS];  /* limbs past n_limbs stay 0 */
  uint32_t n_limbs;              /* WV_XSUM_F32_LIMBS or WV_XSUM_LIMBS */
  uint32_t flags;                /* WV_XSUM_* */
} wv_xsum;

/* An empty sum of dtype dt (WAVE_F32 or WAVE_F64). */
void wv_xsum_init(wv_xsum *x, wave_dtype dt);

/* X += v * 2^bit, modulo 2^(64 * n_limbs); bit < 64 * n_limbs.  Two's
 * complement arithmetic, so X ends exact whenever its true total fits
 * (|X| < 2^(64 * n_limbs - 1)), whatever the order of the additions and
 * whatever their partial sums: a caller may add a sum of rows at any bit,
 * the carry room and the top limb included (a backend's top bins). */
void wv_xsum_add_i64(wv_xsum *x, int64_t v, unsigned bit);

/* X += sum of bins[i] * 2^(i * width), i < n (each bit as above). */
void wv_xsum_add_bins(wv_xsum *x, const int64_t *bins, size_t n,
                      unsigned width);

/* One selected row's bits (float32: the low 32 bits), flags included:
 * the reference's way, row by row. */
void wv_xsum_add_row(wv_xsum *x, uint64_t row);

/* x += y (the same dtype). */
void wv_xsum_merge(wv_xsum *x, const wv_xsum *y);

/* The answer's bits (float32 in the low 32): the float nearest X * unit,
 * ties to even, with the rules of docs/reduction.md (NaN or both
 * infinities: the canonical NaN; one infinity: it; past the largest
 * finite: +-inf; an exact zero: -0.0 when count > 0 and no selected row
 * was other than -0.0, else +0.0).  count: the selected rows. */
uint64_t wv_xsum_round(const wv_xsum *x, uint64_t count);

/* The wire form (docs/protocol.md, ReduceResult.exact): n_limbs * 8 bytes,
 * X little-endian; the flags travel beside it (ReduceResult.exact_flags). */
size_t wv_xsum_wire_bytes(wave_dtype dt);
void wv_xsum_pack(const wv_xsum *x, uint8_t *out);
/* 0, or WAVE_EBADREQUEST (wrong length for dt, unknown flag bits) with a
 * message. */
int wv_xsum_unpack(wv_xsum *x, wave_dtype dt, const uint8_t *in, size_t n,
                   uint32_t flags, wave_error *err);

#endif
