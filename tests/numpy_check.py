#!/usr/bin/python3
"""numpy_check.py - the held-in NumPy cross-check of issue 23 (part 1):
the reduction reference and the CPU backend (through tests/wvnp.c) against
NumPy on the same rows.

 - integer sums (uint32, int32, uint64, int64) against np.sum in the
   array's own dtype, which wraps as docs/reduction.md says;
 - integer min/max against np.min/np.max;
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


def run(dtype, op, arr, chunks=()):
    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
        f.write(arr.astype(arr.dtype.newbyteorder("<")).tobytes())
        path = f.name
    try:
        out = subprocess.run([WVNP, dtype, op, path] + [str(c) for c in chunks],
                             capture_output=True, text=True)
    finally:
        os.unlink(path)
    if out.returncode != 0:
        raise SystemExit(f"wvnp {dtype} {op}: {out.stderr.strip()}")
    b0, _, count, index = out.stdout.split()
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
            for op, f in (("argmin", np.argmin), ("argmax", np.argmax)):
                i = int(f(x))
                check(f"{what} {op}", run(name, op, x, chunks),
                      (bits(x[i]), n, i))

print(f"numpy_check: {checks} checks, {failures} mismatches")
sys.exit(1 if failures or checks == 0 else 0)
