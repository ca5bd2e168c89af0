"""test_fsum.py - the exact float sum, op "fsum" (issue 39), through the
package on every way the rows travel (messages, the pooled region,
region-backed arrays, files by reduce_file) and through wavectl:

  * the value against the exact rational sum of the selected rows
    (fractions.Fraction), rounded to nearest, ties to even, by this file's
    own code (not math.fsum, which rounds float32 rows twice), with the
    edge rules of docs/reduction.md: NaN, infinities, overflow, signed
    zeros, subnormals, nothing selected;
  * the same bits for other chunkings of the same rows and mask;
  * Result.exact, the exact sum itself, equal to the Fraction, and
    Result.exact_flags; wavectl's JSON "exact" gives the same number;
  * fsum on an integer dtype: OpDtypeError."""
from fractions import Fraction

import numpy as np
import pytest

import wavedd
from test_reduce64 import place, wavectl_json

# precision p (significand bits), smallest normal exponent, largest
# exponent (of the binade), unsigned view, canonical NaN
FMT = {np.float32: (24, -126, 127, np.uint32, 0x7fc00000),
       np.float64: (53, -1022, 1023, np.uint64, 0x7ff8000000000000)}
UNIT = {np.float32: 149, np.float64: 1074}


def round_even(q, dt):
    """The float of dtype dt nearest the rational q, ties to even, as raw
    bits (+-inf past the largest finite); q == 0 gives +0.0."""
    p, emin, emax, u, _ = FMT[dt]
    if q == 0:
        return 0
    sign, a = (1, -q) if q < 0 else (0, q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:      # 2^e <= a < 2^(e+1)
        e -= 1
    step = Fraction(2) ** (max(e, emin) - (p - 1))   # the ulp at a
    m = round(a / step)           # Fraction rounds half to even
    v = m * step
    if v >= Fraction(2) ** (emax + 1):
        f = np.array([np.inf], dt)
    else:
        f = np.array([float(v)], dt)   # exact: m fits p bits
        assert Fraction(float(f[0])) == v
    bits = int(f.view(u)[0])
    return bits | (1 << (8 * np.dtype(dt).itemsize - 1)) if sign else bits


def reference(dt, rows, mask=None):
    """docs/reduction.md's fsum of rows (under mask): (bits, exact
    Fraction of the finite rows, flags)."""
    sel = rows if mask is None else rows[mask != 0]
    p, _, _, u, nan = FMT[dt]
    # the finite rows as integers in units of 2^-UNIT, added exactly
    unit, x = UNIT[dt], 0
    for f in sel[np.isfinite(sel)].tolist():
        n, d = f.as_integer_ratio()
        x += n << (unit - d.bit_length() + 1)
    exact = Fraction(x, 1 << unit)
    negzero = (sel == 0) & np.signbit(sel)
    flags = ((wavedd.EXACT_NAN if np.isnan(sel).any() else 0) |
             (wavedd.EXACT_PINF if (sel == np.inf).any() else 0) |
             (wavedd.EXACT_NINF if (sel == -np.inf).any() else 0) |
             (wavedd.EXACT_NOT_NEGZERO if not negzero.all() else 0))
    sign = 1 << (8 * np.dtype(dt).itemsize - 1)
    if flags & wavedd.EXACT_NAN or (flags & 6) == 6:
        bits = nan
    elif flags & wavedd.EXACT_PINF:
        bits = int(np.array([np.inf], dt).view(u)[0])
    elif flags & wavedd.EXACT_NINF:
        bits = int(np.array([-np.inf], dt).view(u)[0])
    elif exact == 0:
        bits = sign if sel.size and not flags & wavedd.EXACT_NOT_NEGZERO \
            else 0
    else:
        bits = round_even(exact, dt)
    return bits, exact, flags


def rows(dt, n, seed):
    """Full significands over a wide range of exponents, random signs, a
    cancelling pair, -0.0 and the smallest subnormal."""
    rng = np.random.default_rng(seed)
    span = 40 if dt == np.float32 else 200
    a = (rng.random(n) + 1) * np.exp2(rng.integers(-span, span, n))
    a = np.where(rng.random(n) < 0.5, -a, a).astype(dt)
    a[3] = -0.0
    a[5] = np.finfo(dt).smallest_subnormal
    if n > 300:
        a[100], a[300] = np.finfo(dt).max / 4, -np.finfo(dt).max / 4
    return a


@pytest.mark.parametrize("path", ["message", "pool", "region"])
@pytest.mark.parametrize("dt", [np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_fsum_exact(daemon, client, tmp_path, dt, path):
    a = rows(dt, 70000, seed=3)
    m = (np.random.default_rng(4).random(a.size) < 0.7).astype(np.uint32)
    bits, exact, flags = reference(dt, a)
    mbits, mexact, mflags = reference(dt, a, m)
    # the float sum is not it: a way that answered the float sum fails
    assert client.reduce("sum", a).bits != (bits,)
    for cuts in ([a.size], [1, 65536, 0, 3, a.size - 65540], [5000]):
        edges = np.cumsum([0] + cuts)
        chunks = [a[x:y] for x, y in zip(edges, edges[1:])]
        if edges[-1] < a.size:
            chunks.append(a[edges[-1]:])
        if path == "region":    # a region holds at least one row
            chunks = [c for c in chunks if c.size]
        sent = place(client, path, chunks)
        r = client.reduce("fsum", *sent)
        assert r.via == path
        assert (r.bits, r.count, r.rows) == ((bits,), a.size, a.size), cuts
        assert r.exact == exact and r.exact_flags == flags
        assert r.op == "fsum" and r.index is None
        assert r.value.dtype == np.dtype(dt)
        mk = place(client, path, [m[:777], m[777:]])
        r = client.reduce("fsum", *sent, mask=mk)
        assert (r.bits, r.count) == ((mbits,), np.count_nonzero(m))
        assert r.exact == mexact and r.exact_flags == mflags
    # wavectl (files, as file regions): the same bits and exact sum
    ref = wavectl_json(daemon, tmp_path, "fsum", [a[:1000], a[1000:]])
    assert tuple(int(b, 16) for b in ref["bits"]) == (bits,)
    assert Fraction(int(ref["exact"], 16), 1 << UNIT[dt]) == exact
    assert ref["exact_flags"] == flags


@pytest.mark.parametrize("dt", [np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_fsum_edges(client, tmp_path, dt):
    fi = np.finfo(dt)
    cases = [
        [1e30, 1, -1e30],                       # heavy cancellation
        [np.nan, 1],
        [np.inf, 1, 5],
        [np.inf, -np.inf],
        [-np.inf, 2],
        [fi.max, fi.max],                       # past the largest: inf
        [-fi.max, -fi.max / 2],
        [fi.max, fi.max, -fi.max],              # back below it: exact
        [-0.0, -0.0],                           # -0.0
        [-0.0, 0.0],
        [1.0, -1.0],                            # exact zero: +0.0
        [fi.smallest_subnormal] * 3,            # subnormals, no flush
        [fi.smallest_normal, -fi.smallest_subnormal],
        [1.0, float(fi.eps) / 2],               # a tie: to even (1.0)
        [1.0 + float(fi.eps), float(fi.eps) / 2],   # a tie: to even (up)
        [],
    ]
    for c in cases:
        a = np.array(c, dt)
        r = client.reduce("fsum", a)
        bits, exact, flags = reference(dt, a)
        assert r.bits == (bits,), (c, hex(r.bits[0]), hex(bits))
        assert (r.exact, r.exact_flags, r.count) == (exact, flags, a.size)
        if a.size:
            f = tmp_path / "e.raw"
            a.tofile(f)
            r = client.reduce_file("fsum", str(f), dtype=dt)
            assert r.via == "file" and r.bits == (bits,)
    # nothing selected: +0.0, even over -0.0 rows
    a = np.array([-0.0, -0.0], dt)
    r = client.reduce("fsum", a, mask=np.zeros(2, np.uint32))
    assert (r.bits, r.count, r.exact, r.exact_flags) == ((0,), 0, 0, 0)
    with pytest.raises(wavedd.OpDtypeError):
        client.reduce("fsum", np.ones(4, np.uint32))
