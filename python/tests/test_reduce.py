"""test_reduce.py - every op and dtype, on every device and every way the
rows travel (messages, the pooled region, region-backed arrays); masks,
chunks, buffers, dtypes refused.

The oracles are independent of the daemon: every result is compared with
the C reference, wv_reduce_reference, run outside any daemon by the tests'
own wvnp helper (tests/wvnp.c, in the build tree) over the same chunks and
mask, which is the only oracle for float sums (their bits depend on the
documented tree); integer ops are also compared with NumPy, and float min,
max and extent (finite data, exact values) with NumPy's.  wavectl's answer
from the same daemon is compared too, but only as another way in, not as
an oracle."""
import array
import json
import os
import subprocess

import numpy as np
import pytest

import wavedd
from conftest import BUILD, MAX_ROWS, device_names

WVNP = os.path.join(BUILD, "tests", "wvnp")

DTYPES = [np.uint32, np.int32, np.float32]
INT_OPS = ["sum", "min", "max", "extent", "and", "or", "xor"]
FLOAT_OPS = ["sum", "min", "max", "extent"]
PATHS = ["message", "pool", "region"]
SIZES = [1, 1000, 65537]   # three chunks of these rows


def data(dt, rows, seed):
    rng = np.random.default_rng(seed)
    if dt == np.float32:
        return (rng.standard_normal(rows) * 1000).astype(np.float32)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, rows, dtype=dt,
                        endpoint=True)


def numpy_ref(op, a):
    """NumPy's answer for an integer op, as the daemon's bits."""
    if op == "sum":
        v = [np.sum(a, dtype=a.dtype)]   # wraps, as 32-bit adds do
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
    return tuple(int(x) for x in np.array(v, dtype=a.dtype).view(np.uint32))


def numpy_float_ref(op, a):
    """NumPy's float min, max or extent of finite rows, as the bits."""
    v = {"min": [a.min()], "max": [a.max()],
         "extent": [a.min(), a.max()]}[op]
    return tuple(int(x) for x in np.array(v, dtype=np.float32).view(np.uint32))


def c_ref(tmp_path, op, chunks, mask=None):
    """The C reference's bits and count (wvnp: the reference and a CPU
    device that must agree), over the same chunk boundaries."""
    p = tmp_path / "ref.raw"
    np.concatenate(chunks).tofile(p)
    args = [WVNP, np.dtype(chunks[0].dtype).name, op, str(p)]
    if mask is not None:
        mp = tmp_path / "ref_mask.raw"
        np.asarray(mask, dtype=np.uint32).tofile(mp)
        args.append(f"--mask={mp}")
    args += [str(len(c)) for c in chunks[:-1]]
    out = subprocess.run(args, capture_output=True, text=True)
    assert out.returncode == 0, (args, out.stderr)
    b0, b1, count, _ = out.stdout.split()
    bits = (int(b0, 16), int(b1, 16)) if op == "extent" else (int(b0, 16),)
    return bits, int(count)


def wavectl_bits(daemon, tmp_path, op, chunks, masks=(), device=None):
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
    if device:
        args += ["--device", device]
    out = json.loads(daemon.wavectl(*args).stdout)
    return tuple(int(b, 16) for b in out["bits"]), out["count"]


@pytest.fixture(params=["cpu0", "vk0"])
def device(request, daemon):
    if request.param not in device_names(daemon):
        pytest.skip(f"no {request.param} (lavapipe: WAVEDD_TEST_VULKAN=1)")
    return request.param


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
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_op(daemon, client, tmp_path, device, dt, path):
    chunks = [data(dt, n, seed=i + 7) for i, n in enumerate(SIZES)]
    whole = np.concatenate(chunks)
    ops = FLOAT_OPS if dt == np.float32 else INT_OPS
    sent = place(client, path, chunks)
    for op in ops:
        r = client.reduce(op, *sent, device=device)
        assert r.via == path
        assert r.device == device
        assert r.rows == r.count == whole.size
        assert (r.bits, r.count) == c_ref(tmp_path, op, chunks), (op, r)
        ctl = wavectl_bits(daemon, tmp_path, op, chunks, device=device)
        assert ctl == (r.bits, r.count), (op, r)
        if dt != np.float32:
            assert r.bits == numpy_ref(op, whole), op
        elif op != "sum":
            assert r.bits == numpy_float_ref(op, whole), op
        vals = r.value if op == "extent" else (r.value,)
        assert len(vals) == len(r.bits)
        for v, b in zip(vals, r.bits):
            assert v.dtype == np.dtype(dt)
            assert int(np.array(v).view(np.uint32)) == b


@pytest.mark.parametrize("path", PATHS)
def test_mask(daemon, client, tmp_path, path):
    a = data(np.int32, 50000, seed=3)
    rng = np.random.default_rng(4)
    m = (rng.random(a.size) < 0.3).astype(np.uint32) * rng.integers(
        1, 1 << 31, a.size, dtype=np.uint32)
    mparts = [m[:123], m[123:40000], m[40000:]]   # its own boundaries
    sent = place(client, path, [a[:20000], a[20000:]] + mparts)
    for op in INT_OPS:
        r = client.reduce(op, *sent[:2], mask=sent[2:])
        assert r.via == path
        assert r.count == int(np.count_nonzero(m))
        assert r.rows == a.size
        assert r.bits == numpy_ref(op, a[m != 0]), op
        assert (r.bits, r.count) == c_ref(tmp_path, op,
                                          [a[:20000], a[20000:]], m), op
        ref, count = wavectl_bits(daemon, tmp_path, op, [a[:20000], a[20000:]],
                                  mparts)
        assert (r.bits, r.count) == (ref, count)
    # one mask array, not a list
    r = client.reduce("sum", sent[0], sent[1], mask=m)
    assert r.bits == numpy_ref("sum", a[m != 0])
    # a mask selecting nothing: count 0
    r = client.reduce("max", a, mask=np.zeros(a.size, np.uint32))
    assert r.count == 0 and r.rows == a.size


def test_shapes_and_buffers(client):
    a = np.arange(24, dtype=np.uint32).reshape(2, 3, 4)
    assert client.reduce("sum", a).value == 276
    assert client.reduce("sum", array.array("f", [1.5, 2.5])).value == 4.0
    assert client.reduce("sum", array.array("i", [-3, 1])).value == -2
    mv = memoryview(bytearray(b"\x01\x00\x00\x00\x02\x00\x00\x00")).cast("I")
    r = client.reduce("or", mv)
    assert r.value == 3 and r.value.dtype == np.uint32
    # a read-only array, and a C-contiguous slice
    b = np.arange(100, dtype=np.int32)
    b.flags.writeable = False
    assert client.reduce("max", b[10:20]).value == 19


@pytest.mark.parametrize("bad,fix", [
    (np.arange(4, dtype=np.int16), "a.astype(np.int32)"),
    (np.ones(4, np.longdouble), "a.astype(np.float64)"),
    (np.ones(4, np.float16), "a.astype(np.float32)"),
    (np.ones(4, np.complex64), "a.astype(np.float64)"),
    (np.ones(4, bool), "a.astype(np.uint32)"),
    (b"\x00" * 16, "a.astype"),                       # bytes: uint8
    (np.ones(4, ">f4"), "newbyteorder"),
    (np.ones(4, ">i8"), "newbyteorder"),
])
def test_dtype_refused(client, bad, fix):
    with pytest.raises(wavedd.DtypeError) as e:
        client.reduce("sum", bad)
    dt = np.asarray(memoryview(bad)).dtype if isinstance(bad, bytes) else \
        bad.dtype
    assert str(dt) in str(e.value)
    assert fix in str(e.value)
    assert e.value.code == 4 and isinstance(e.value, TypeError)


def test_refused_before_sending(client):
    a = np.ones(10, np.float32)
    with pytest.raises(wavedd.DtypeError, match="give one dtype"):
        client.reduce("sum", a, a.astype(np.int32))
    with pytest.raises(wavedd.DtypeError, match="uint32"):
        client.reduce("sum", a, mask=np.ones(10, bool))
    with pytest.raises(wavedd.ArgError, match="ascontiguousarray"):
        client.reduce("sum", np.ones((4, 4), np.float32)[:, 1])
    with pytest.raises(wavedd.OpError, match="sum, min"):
        client.reduce("mean", a)
    with pytest.raises(wavedd.ArgError, match="neither"):
        client.reduce("sum", [1.0, 2.0])


def test_big_pool_copy(client):
    """A plain array above the parallel-copy size through the pool."""
    rows = MAX_ROWS
    a = np.arange(rows, dtype=np.uint32)
    client.copy_threshold = 0
    import wavedd.client as wc
    old, wc._PAR_MIN = wc._PAR_MIN, 1 << 16   # threads on a small input
    try:
        r = client.reduce("xor", a[:rows // 2], a[rows // 2:])
    finally:
        wc._PAR_MIN = old
    assert r.via == "pool"
    assert r.bits == numpy_ref("xor", a)


def test_result_fields(client):
    r = client.reduce("extent", np.array([3, -1, 7], np.int32))
    assert r.value == (-1, 7)
    assert r.bits == (0xffffffff, 7)
    assert r.seconds >= 0 and r.device == "cpu0" or r.device
    assert "extent" in repr(r)
    f = client.reduce("min", np.array([np.nan, np.inf], np.float32))
    assert f.finite is False
