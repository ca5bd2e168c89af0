"""test_reduce64.py - the 64-bit dtypes (uint64, int64, float64) and
argmin/argmax (issue 23) through the package, on every way the rows
travel (messages, the pooled region, region-backed arrays of 8-byte rows):

  * every op of every 64-bit dtype against the C reference through
    wavectl's bits, and for the integers against NumPy (sums against
    np.sum in the array's own dtype, which wraps as docs/reduction.md
    says; and/or/xor against the ufuncs' reduce);
  * float64 min/max/extent against np.min/np.max;
  * argmin/argmax of all six dtypes against np.argmin/np.argmax on
    NaN-free data without zeros (NumPy orders -0.0 and +0.0 as equal,
    wavedd does not), with many ties, over chunks (the index is global)
    and under a mask;
  * Result: value of the dtype from bits of its width, index (None for
    the other ops, -1 when no row is selected)."""
import json

import numpy as np
import pytest

import wavedd

WIDE = [np.uint64, np.int64, np.float64]
ALL = [np.uint32, np.int32, np.float32] + WIDE
INT_OPS = ["sum", "min", "max", "extent", "and", "or", "xor"]
FLOAT_OPS = ["sum", "min", "max", "extent"]
PATHS = ["message", "pool", "region"]
SIZES = [1, 1000, 65537]   # three chunks of these rows


def data(dt, rows, seed, ties=False):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "f":
        if ties:
            return (rng.integers(1, 5, rows) * 0.25).astype(dt)
        a = (rng.standard_normal(rows) * 1000).astype(dt)
        a[a == 0] = 1
        return a
    if ties:
        return rng.integers(0, 7, rows).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, rows, dtype=dt, endpoint=True)


def ubits(values, dt):
    """The raw bits of values of dtype dt, as the daemon reports them."""
    u = np.uint32 if np.dtype(dt).itemsize == 4 else np.uint64
    return tuple(int(x) for x in np.array(values, dtype=dt).view(u))


def numpy_ref(op, a):
    """NumPy's answer for op on a (integer ops; min/max for floats)."""
    if op == "sum":
        v = [np.sum(a, dtype=a.dtype)]   # wraps at the dtype's width
    elif op == "min":
        v = [a.min()]
    elif op == "max":
        v = [a.max()]
    elif op == "extent":
        v = [a.min(), a.max()]
    else:
        ufunc = {"and": np.bitwise_and, "or": np.bitwise_or,
                 "xor": np.bitwise_xor}[op]
        v = [ufunc.reduce(a)]
    return ubits(v, a.dtype)


def wavectl_json(daemon, tmp_path, op, chunks, masks=()):
    args = ["--json", "submit", "reduce", "--op", op, "--dtype",
            str(chunks[0].dtype)]
    for i, c in enumerate(chunks):
        p = tmp_path / f"in{i}.raw"
        c.tofile(p)
        args += ["--input", str(p)]
    for i, m in enumerate(masks):
        p = tmp_path / f"mask{i}.raw"
        m.tofile(p)
        args += ["--mask", str(p)]
    return json.loads(daemon.wavectl(*args).stdout)


def place(client, path, arrays):
    """The arrays as that path takes them."""
    if path == "message":
        client.copy_threshold = 1 << 62
        return list(arrays)
    if path == "pool":
        client.copy_threshold = 0
        return list(arrays)
    out = []
    for a in arrays:
        r = wavedd.empty(a.shape, a.dtype, client=client)
        r[...] = a
        out.append(r)
    return out


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dt", WIDE, ids=lambda d: np.dtype(d).name)
def test_every_op_64(daemon, client, tmp_path, dt, path):
    chunks = [data(dt, n, seed=i + 11) for i, n in enumerate(SIZES)]
    whole = np.concatenate(chunks)
    floats = np.dtype(dt).kind == "f"
    sent = place(client, path, chunks)
    for op in (FLOAT_OPS if floats else INT_OPS):
        r = client.reduce(op, *sent)
        assert r.via == path
        assert r.rows == r.count == whole.size
        assert r.index is None
        ref = wavectl_json(daemon, tmp_path, op, chunks)
        assert r.bits == tuple(int(b, 16) for b in ref["bits"]), (op, r)
        assert "index" not in ref
        if not floats or op != "sum":   # float sums: the fixed tree's
            assert r.bits == numpy_ref(op, whole), op
        vals = r.value if op == "extent" else (r.value,)
        assert len(vals) == len(r.bits)
        for v, b in zip(vals, r.bits):
            assert v.dtype == np.dtype(dt)
            assert ubits([v], dt) == (b,)


def test_integer_sums_wrap(client):
    """Sums that pass 2^64 (uint64) and 2^63 (int64) wrap as NumPy's."""
    u = np.array([2**64 - 1, 2, 2**53 + 1], np.uint64)
    assert client.reduce("sum", u).value == np.uint64(2**53 + 2)
    s = np.array([2**63 - 1, 1, 2**62], np.int64)
    r = client.reduce("sum", s)
    assert r.value == np.sum(s, dtype=np.int64) == -(2**63) + 2**62
    assert r.bits == (0xc000000000000000,)
    big = data(np.uint64, 100000, seed=5)
    assert client.reduce("sum", big).bits == numpy_ref("sum", big)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dt", ALL, ids=lambda d: np.dtype(d).name)
def test_argmin_argmax(daemon, client, tmp_path, dt, path):
    for ties in (False, True):
        chunks = [data(dt, n, seed=i + 3 + ties, ties=ties)
                  for i, n in enumerate(SIZES)]
        whole = np.concatenate(chunks)
        sent = place(client, path, chunks)
        for op, f in (("argmin", np.argmin), ("argmax", np.argmax)):
            r = client.reduce(op, *sent)
            i = int(f(whole))
            assert r.via == path
            assert (r.index, r.count, r.rows) == (i, whole.size, whole.size)
            assert r.value == whole[i] and r.value.dtype == np.dtype(dt)
            assert r.bits == ubits([whole[i]], dt)
            ref = wavectl_json(daemon, tmp_path, op, chunks)
            assert ref["index"] == i
            assert tuple(int(b, 16) for b in ref["bits"]) == r.bits
            assert f"index={i}" in repr(r)


@pytest.mark.parametrize("path", PATHS)
def test_argmax_mask(client, path):
    a = data(np.float64, 50000, seed=8, ties=True)
    rng = np.random.default_rng(9)
    m = (rng.random(a.size) < 0.3).astype(np.uint32)
    sent = place(client, path, [a[:20000], a[20000:], m[:77], m[77:]])
    sel = np.flatnonzero(m)
    for op, f in (("argmin", np.argmin), ("argmax", np.argmax)):
        r = client.reduce(op, *sent[:2], mask=sent[2:])
        want = int(sel[f(a[sel])])   # the global index, not the selected one
        assert (r.index, r.count) == (want, sel.size)
        assert r.value == a[want]
    # no row selected: index -1, value 0, count 0
    r = client.reduce("argmax", a, mask=np.zeros(a.size, np.uint32))
    assert (r.index, r.count, r.value, r.bits) == (-1, 0, 0.0, (0,))
    # no finite float: the same
    r = client.reduce("argmin", np.array([np.nan, np.inf, -np.inf]))
    assert (r.index, r.count, r.bits) == (-1, 0, (0,))


def test_float64_values(client):
    """Values come from all 64 bits: a float32 view would be wrong."""
    a = np.array([0.1, 1e300, -2.5e-300, 3.0])
    r = client.reduce("extent", a)
    assert r.value == (a.min(), a.max())
    assert r.bits == ubits([a.min(), a.max()], np.float64)
    r = client.reduce("min", np.array([np.nan, 5.0, np.inf]))
    assert r.value == 5.0 and r.finite is True
    assert client.reduce("xor", np.ones(4, np.uint64)).value == 0
    with pytest.raises(wavedd.OpDtypeError):
        client.reduce("xor", np.ones(4, np.float64))


def test_region_rows_of_8(client):
    x = wavedd.empty((3, 5), np.int64, client=client)
    x[...] = np.arange(-7, 8).reshape(3, 5)
    assert x.nbytes == 15 * 8
    r = client.reduce("argmin", x)
    assert r.via == "region" and (r.index, r.value) == (0, -7)
    r = client.reduce("sum", x[1:])             # an extent inside it
    assert r.via == "region" and r.value == int(np.arange(-2, 8).sum())
