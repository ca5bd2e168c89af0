#!/usr/bin/env python3
"""fsum_ref.py - fsum (issue 39, docs/reduction.md "fsum") against an exact
rational reference, bit for bit.

The reference here is Python's own: every row is turned into an exact
fraction (float.as_integer_ratio; a float32 row is read as the double it
equals exactly), the selected rows are summed exactly as integers over
the common denominator 2^1074, and the sum is rounded to float32 or
float64 by this file's own round-to-nearest-even (never math.fsum, which
rounds float32 rows twice, nor float(), whose rounding is the library's).
The edge rules (NaN, infinities, the sign of zero, empty) are the page's.

tests/wvnp runs the C reference (core/reduce.c, row by row through
core/xsum.c) and the CPU backend (3 threads) on the same file and exits 1
unless both give the same bits, count and exact partial; this script then
holds those bits to its own.  The cases:

  * a dynamic-range sweep, both dtypes: rows at every exponent from the
    smallest subnormal to the largest finite; the same with every big row
    cancelled by its negation, leaving subnormal and tiny results; and
    windows of 40 exponents sliding over the whole range, so that the
    answer lands in every binade;
  * the rules: NaN, both infinities, one infinity, overflow to +-inf, ties
    both ways, signed zeros, empty and all-masked;
  * 10^6 random rows of each dtype (mixed ranges, some cancellation) under
    random input chunkings, a random permutation, and random mask
    chunkings: the same bits every time, and this file's.

Takes a few seconds.  Usage: fsum_ref.py PATH/TO/wvnp
"""
import os
import random
import struct
import subprocess
import sys
import tempfile
from fractions import Fraction
from math import gcd

UNITS = 1074          # every float64 (and float32) is k / 2^1074


class Fmt:
    def __init__(self, name, size, p, ebits):
        self.name, self.size, self.p, self.ebits = name, size, p, ebits
        self.emax = (1 << ebits) - 1          # the all-ones exponent
        self.bias = (1 << (ebits - 1)) - 1
        self.sign = 1 << (8 * size - 1)
        self.inf = self.emax << (p - 1)
        self.nan = self.inf | (1 << (p - 2))
        # the smallest subnormal is 2^emin_sub
        self.emin_sub = 1 - self.bias - (p - 1)

    def value(self, bits):
        """The exact Fraction of finite bits, or None for NaN / inf."""
        e = (bits >> (self.p - 1)) & self.emax
        if e == self.emax:
            return None
        fmt = "<f" if self.size == 4 else "<d"
        x = struct.unpack(fmt, bits.to_bytes(self.size, "little"))[0]
        return Fraction(*x.as_integer_ratio())

    def units(self, bits):
        """value(bits) * 2^UNITS, a whole number (finite bits): the
        same exact ratio, its power-of-two denominator divided out."""
        fmt = "<f" if self.size == 4 else "<d"
        n, d = struct.unpack(fmt, bits.to_bytes(self.size, "little"))[0] \
            .as_integer_ratio()
        return n * ((1 << UNITS) // d)

    def round(self, num):
        """The bits of the float nearest num / 2^UNITS, ties to even; None
        for a zero (the caller's sign rule)."""
        if num == 0:
            return None
        neg, a = num < 0, abs(num)
        # a in units of the smallest subnormal 2^emin_sub
        shift = UNITS + self.emin_sub
        if shift < 0:
            raise ValueError("units")
        # a / 2^shift units: keep the quotient and the remainder exact
        q, r = divmod(a, 1 << shift)
        # q.r units; the answer is m * 2^s units, m < 2^p
        s = max(q.bit_length() - self.p, 0)
        m, low = divmod(q, 1 << s)
        rem = Fraction(low * (1 << shift) + r, 1 << (s + shift))  # in ulps
        if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and m & 1):
            m += 1
        if m == 1 << self.p:
            m >>= 1
            s += 1
        if m == 0:
            return self.sign if neg else 0  # rounded to zero: +-0.0
        if m < 1 << (self.p - 1):
            bits = m                       # subnormal (s is 0)
        else:
            e = s + 1                      # biased exponent
            bits = (e << (self.p - 1)) | (m - (1 << (self.p - 1)))
            if e >= self.emax:
                bits = self.inf
        return bits | (self.sign if neg else 0)


F32 = Fmt("float32", 4, 24, 8)
F64 = Fmt("float64", 8, 53, 11)


def expect(fmt, rows, sel=None, units=None):
    """fsum of the rows (bits) selected by sel (None: all): bits, count.
    units: the rows' fmt.units where known (finite rows)."""
    total, count, nan, pinf, ninf, notnz = 0, 0, False, False, False, False
    for i, b in enumerate(rows):
        if sel is not None and not sel[i]:
            continue
        count += 1
        notnz |= b != fmt.sign
        if units is not None:
            total += units[i]
            continue
        v = fmt.value(b)
        if v is None:
            if b & ((1 << (fmt.p - 1)) - 1):
                nan = True
            elif b & fmt.sign:
                ninf = True
            else:
                pinf = True
            continue
        total += int(v * (1 << UNITS))
    if nan or (pinf and ninf):
        return fmt.nan, count
    if pinf or ninf:
        return fmt.inf | (fmt.sign if ninf else 0), count
    bits = fmt.round(total)
    if bits is None:
        bits = fmt.sign if count > 0 and not notnz else 0
    return bits, count


class Runner:
    def __init__(self, wvnp, tmp):
        self.wvnp, self.tmp, self.runs, self.n = wvnp, tmp, 0, 0

    def files(self, fmt, rows, sel):
        """The rows (and the mask) as files."""
        self.n += 1
        path = os.path.join(self.tmp, f"rows{self.n}")
        with open(path, "wb") as f:
            f.write(struct.pack(f"<{len(rows)}{'I' if fmt is F32 else 'Q'}",
                                *rows))
        mpath = None
        if sel is not None:
            mpath = path + ".mask"
            with open(mpath, "wb") as f:
                f.write(struct.pack(f"<{len(sel)}I", *sel))
        return path, mpath

    def run(self, fmt, rows, what, sel=None, cuts=(), mask_cuts=None,
            order=None, want=None, files=None):
        """wvnp over rows (in `order`, a permutation, if given) and sel;
        its bits must be this file's (want, where the caller knows it).
        files: the rows' (and mask's) files, where written already."""
        if want is None:
            want = expect(fmt, rows, sel)
        if order is not None:
            rows = [rows[i] for i in order]
            sel = None if sel is None else [sel[i] for i in order]
        path, mpath = files or self.files(fmt, rows, sel)
        args = [self.wvnp, fmt.name, "fsum", path]
        if sel is not None:
            args.append("--mask=" + mpath)
            if mask_cuts:
                args.append("--mask-cuts=" + ",".join(map(str, mask_cuts)))
        args += [str(c) for c in cuts]
        p = subprocess.run(args, capture_output=True, text=True)
        self.runs += 1
        if p.returncode != 0:
            sys.exit(f"fsum_ref: {what}: wvnp exit {p.returncode}: "
                     f"{p.stderr.strip()}")
        bits, _, count, _ = p.stdout.split()
        got = (int(bits, 16), int(count))
        if got != want:
            sys.exit(f"fsum_ref: {what} ({fmt.name}, {len(rows)} rows): "
                     f"got {got[0]:#x} count {got[1]}, want {want[0]:#x} "
                     f"count {want[1]}")
        return got


def row(fmt, rng, e, sign=None):
    """A row of biased exponent e, a random fraction and sign."""
    s = rng.getrandbits(1) if sign is None else sign
    f = rng.getrandbits(fmt.p - 1)
    return (s * fmt.sign) | (e << (fmt.p - 1)) | f


def sweep(r, fmt, rng):
    every = [row(fmt, rng, e) for e in range(fmt.emax) for _ in range(2)]
    r.run(fmt, every, "every exponent")
    # every big row cancelled by its negation; a few tiny ones stay
    canc = []
    for e in range(fmt.emax):
        x = row(fmt, rng, e)
        canc += [x, x ^ fmt.sign]
    canc += [rng.getrandbits(fmt.p - 1) | (rng.getrandbits(1) * fmt.sign)
             for _ in range(5)]
    rng.shuffle(canc)
    r.run(fmt, canc, "every exponent, cancelled")
    # the bottom: subnormals only, then with the smallest normals
    r.run(fmt, [row(fmt, rng, 0) for _ in range(1000)], "subnormals")
    r.run(fmt, [row(fmt, rng, rng.randrange(3)) for _ in range(1000)],
          "subnormals and the smallest normals")
    # windows of 40 exponents, the answer in every binade
    for lo in range(0, fmt.emax - 1, 24 if fmt is F32 else 64):
        hi = min(lo + 40, fmt.emax)
        w = [row(fmt, rng, rng.randrange(lo, hi)) for _ in range(300)]
        r.run(fmt, w, f"exponents {lo}..{hi - 1}")
        # mostly one sign: the answer near the window's top
        w = [row(fmt, rng, rng.randrange(lo, hi), int(rng.random() < .1))
             for _ in range(300)]
        r.run(fmt, w, f"exponents {lo}..{hi - 1}, one sign")


def rules(r, fmt):
    S, I, N = fmt.sign, fmt.inf, fmt.nan
    mx = I - 1
    one = fmt.bias << (fmt.p - 1)
    half_ulp1 = (fmt.bias - fmt.p) << (fmt.p - 1)  # 2^-p: half of 1's ulp
    cases = [
        ([N | 5], "a NaN"), ([I, I | S], "both infinities"),
        ([I, mx | S, one], "one infinity"), ([one, I | S], "minus inf"),
        ([mx, mx], "overflow"), ([mx | S, mx | S], "overflow down"),
        ([mx, (2 * fmt.bias - fmt.p) << (fmt.p - 1)],
         "largest + half its ulp"),
        ([mx, (2 * fmt.bias - fmt.p - 1) << (fmt.p - 1)],
         "largest + a quarter ulp"),
        ([one, half_ulp1], "tie to even (down)"),
        ([one + 1, half_ulp1], "tie to even (up)"),
        ([one | S, half_ulp1 | S], "negative tie"),
        ([one, half_ulp1, 1], "tie and a sticky bit"),
        ([S], "-0.0"), ([S, S, S], "-0.0 thrice"), ([S, 0], "-0.0 and +0.0"),
        ([one, one | S], "exact zero"), ([1, 1 | S, S], "subnormal zero"),
        ([3, 1 | S], "subnormal"), ([1 << (fmt.p - 1), 1 | S], "to subnormal"),
        ([], "empty"),
    ]
    for rows, what in cases:
        r.run(fmt, rows, what)
    r.run(fmt, [one, mx, S], "all masked", sel=[0, 0, 0])
    r.run(fmt, [S, one, S], "masked to -0.0", sel=[1, 0, 1])


def cuts(rng, n, k):
    c = sorted(rng.randrange(0, n + 1) for _ in range(k))
    return [b - a for a, b in zip([0] + c, c)]


def big(r, fmt, rng, n):
    """n random rows: 60% near 1, 30% of any exponent, 10% of the largest
    exponents, and 5% of the rows replaced by another negated."""
    p1, fmask = fmt.p - 1, (1 << (fmt.p - 1)) - 1
    gb, emax, sign = rng.getrandbits, fmt.emax, fmt.sign
    rows = []
    for _ in range(n):
        x = gb(fmt.p + 40)
        k = x & 1023
        if k < 614:
            e = fmt.bias - 8 + ((x >> 10) & 15)
        elif k < 922:
            e = (x >> 10) % emax
        else:
            e = emax - 1 - ((x >> 10) & 3)
        rows.append(((x >> 30) & 1) * sign | e << p1 | (x >> 40) & fmask)
    for _ in range(n // 20):
        rows[gb(30) % n] = rows[gb(30) % n] ^ sign
    sel = list(map(int, format(gb(n), f"0{n}b")))
    files = r.files(fmt, rows, sel)
    with open(files[0], "rb") as f:
        vals = struct.unpack(f"<{n}{'f' if fmt is F32 else 'd'}", f.read())
    # the exact ratio a / b of each row, b a power of two: a * 2^UNITS / b
    units = [a << (UNITS + 1 - b.bit_length())
             for a, b in map(float.as_integer_ratio, vals)]
    want = expect(fmt, rows, None, units)
    wmask = expect(fmt, rows, sel, units)
    r.run(fmt, rows, "random rows, one chunk", want=want, files=files)
    for t in range(2):
        r.run(fmt, rows, "random rows, chunks", want=want, files=files,
              cuts=cuts(rng, n, 1 + rng.randrange(40)))
    # a permutation: i -> (a i + b) mod n, a prime to n
    a = rng.randrange(n // 3, n) | 1
    while gcd(a, n) != 1:
        a += 2
    b = rng.randrange(n)
    order = [(a * i + b) % n for i in range(n)]
    r.run(fmt, rows, "random rows, permuted", order=order, want=want,
          cuts=cuts(rng, n, 7))
    r.run(fmt, rows, "random rows, masked", sel=sel, want=wmask, files=files)
    for t in range(2):
        r.run(fmt, rows, "random rows, masked, chunks", sel=sel, want=wmask,
              files=files, cuts=cuts(rng, n, 1 + rng.randrange(30)),
              mask_cuts=cuts(rng, n, 1 + rng.randrange(30))[:-1])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fsum_ref.py PATH/TO/wvnp")
    rng = random.Random(39)
    with tempfile.TemporaryDirectory() as tmp:
        r = Runner(sys.argv[1], tmp)
        for fmt in (F32, F64):
            rules(r, fmt)
            sweep(r, fmt, rng)
            big(r, fmt, rng, 10 ** 6)
    print(f"fsum_ref: {r.runs} jobs, every answer this file's bits")


if __name__ == "__main__":
    main()
