#!/usr/bin/python3
"""numpy_check.py - the held-in NumPy cross-check of issue 23 (part 1):
the reduction reference and the CPU backend (through tests/wvnp.c) against
NumPy on the same rows.

 - integer sums (uint32, int32, uint64, int64) against np.sum in the
   array's own dtype, which wraps as docs/reduction.md says;
 - integer min/max/extent against np.min/np.max, and/or/xor against
   np.bitwise_and/or/xor.reduce;
 - float min/max/extent (float32, float64) against np.min/np.max on
   zero-free data, and with NaN and +-inf rows mixed in against the
   min/max of the finite rows (wavedd ignores the others);
 - under a mask (wvnp --mask=): sums, argmin and argmax of every dtype
   against NumPy on the selected rows, the index still the global row.
 - argmin/argmax of every dtype against np.argmin/np.argmax (the first
   occurrence, as docs/reduction.md), on NaN- and inf-free data without
   zeros (NumPy orders -0.0 and +0.0 as equal, wavedd does not), with many
   ties for the integers, and over chunks (the index is global).

usage: numpy_check.py WVNP   (exit 0: all agree)
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

WVNP = sys.argv[1]
rng = np.random.default_rng(23)
failures = 0
checks = 0


def tofile(arr):
    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
        f.write(arr.astype(arr.dtype.newbyteorder("<")).tobytes())
        return f.name


def run(dtype, op, arr, chunks=(), mask=None):
    path = tofile(arr)
    mpath = tofile(mask) if mask is not None else None
    opt = [f"--mask={mpath}"] if mpath else []
    try:
        out = subprocess.run([WVNP, dtype, op, path] + opt +
                             [str(c) for c in chunks],
                             capture_output=True, text=True)
    finally:
        os.unlink(path)
        if mpath:
            os.unlink(mpath)
    if out.returncode != 0:
        raise SystemExit(f"wvnp {dtype} {op}: {out.stderr.strip()}")
    b0, b1, count, index = out.stdout.split()
    if op == "extent":
        return (int(b0, 16), int(b1, 16)), int(count)
    return int(b0, 16), int(count), int(index)


def bits(x):
    """The raw bits of one NumPy scalar, as an unsigned integer."""
    a = np.array([x])
    return int(a.view({4: np.uint32, 8: np.uint64}[a.itemsize])[0])


def check(what, got, want):
    global failures, checks
    checks += 1
    if got != want:
        failures += 1
        print(f"MISMATCH {what}: wavedd {got}, numpy {want}")


INTS = {"uint32": np.uint32, "sint32": np.int32, "uint64": np.uint64,
        "sint64": np.int64}
FLOATS = {"float32": np.float32, "float64": np.float64}

for n in (1, 255, 257, 65537, 200003):
    chunks = (n // 3, 0, n // 5) if n > 5 else ()
    for name, t in INTS.items():
        info = np.iinfo(t)
        wide = rng.integers(info.min, info.max, size=n, dtype=t,
                            endpoint=True)
        ties = rng.integers(0, 7, size=n).astype(t)  # many ties
        for kind, a in (("wide", wide), ("ties", ties)):
            what = f"{name} n={n} {kind}"
            with np.errstate(over="ignore"):
                s = np.sum(a, dtype=t)  # wraps in the array's dtype
            check(f"{what} sum", run(name, "sum", a, chunks)[0], bits(s))
            check(f"{what} min", run(name, "min", a, chunks)[0],
                  bits(np.min(a)))
            check(f"{what} max", run(name, "max", a, chunks)[0],
                  bits(np.max(a)))
            check(f"{what} extent", run(name, "extent", a, chunks),
                  ((bits(np.min(a)), bits(np.max(a))), n))
            for op, uf in (("and", np.bitwise_and), ("or", np.bitwise_or),
                           ("xor", np.bitwise_xor)):
                check(f"{what} {op}", run(name, op, a, chunks)[0],
                      bits(uf.reduce(a)))
            for op, f in (("argmin", np.argmin), ("argmax", np.argmax)):
                i = int(f(a))
                check(f"{what} {op}", run(name, op, a, chunks),
                      (bits(a[i]), n, i))
    for name, t in FLOATS.items():
        a = rng.standard_normal(n).astype(t)
        a[a == 0] = 1  # NumPy orders -0.0 == +0.0; wavedd -0.0 < +0.0
        ties = (rng.integers(1, 5, size=n) * 0.25).astype(t)
        for kind, x in (("normal", a), ("ties", ties)):
            what = f"{name} n={n} {kind}"
            check(f"{what} min", run(name, "min", x, chunks)[0],
                  bits(np.min(x)))
            check(f"{what} max", run(name, "max", x, chunks)[0],
                  bits(np.max(x)))
            check(f"{what} extent", run(name, "extent", x, chunks),
                  ((bits(np.min(x)), bits(np.max(x))), n))
            for op, f in (("argmin", np.argmin), ("argmax", np.argmax)):
                i = int(f(x))
                check(f"{what} {op}", run(name, op, x, chunks),
                      (bits(x[i]), n, i))

        # NaN and infinities among the rows: the finite rows decide
        s = a.copy()
        s[rng.integers(0, n, size=max(1, n // 7))] = np.nan
        s[rng.integers(0, n, size=max(1, n // 11))] = np.inf
        s[rng.integers(0, n, size=max(1, n // 13))] = -np.inf
        fin = s[np.isfinite(s)]
        if fin.size:
            what = f"{name} n={n} specials"
            check(f"{what} min", run(name, "min", s, chunks)[0],
                  bits(np.min(fin)))
            check(f"{what} max", run(name, "max", s, chunks)[0],
                  bits(np.max(fin)))
            for op, f in (("argmin", np.argmin), ("argmax", np.argmax)):
                i = int(np.flatnonzero(np.isfinite(s))[f(fin)])
                check(f"{what} {op}", run(name, op, s, chunks),
                      (bits(s[i]), fin.size, i))

    # a mask selecting about a third of the rows (at least one)
    m = (rng.random(n) < 0.3).astype(np.uint32) * rng.integers(
        1, 1 << 32, size=n, dtype=np.uint32)
    m[rng.integers(0, n)] = 1
    sel = np.flatnonzero(m)
    for name, t in list(INTS.items()) + list(FLOATS.items()):
        if name in INTS:
            a = rng.integers(0, 9, size=n).astype(t)  # ties
        else:
            a = (rng.integers(1, 9, size=n) * 0.5).astype(t)
        what = f"{name} n={n} masked"
        if name in INTS:
            with np.errstate(over="ignore"):
                s = np.sum(a[sel], dtype=t)
            check(f"{what} sum", run(name, "sum", a, chunks, m)[0:2],
                  (bits(s), sel.size))
        for op, f in (("argmin", np.argmin), ("argmax", np.argmax)):
            i = int(sel[f(a[sel])])
            check(f"{what} {op}", run(name, op, a, chunks, m),
                  (bits(a[i]), sel.size, i))

print(f"numpy_check: {checks} checks, {failures} mismatches")
sys.exit(1 if failures or checks == 0 else 0)
