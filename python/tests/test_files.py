"""test_files.py - files and memory maps as file regions: np.memmap and
np.load(..., mmap_mode=...) arrays (and their views) and
Client.reduce_file paths go to the daemon as descriptors (via "file"),
with the answers of every other way: wavectl's bits of the same rows
(the C reference) and NumPy for the integer ops, every dtype, masks,
views at odd offsets; what must stay memory (a copy-on-write map, a file
replaced under its map, a daemon without regions); no descriptor or
registration left behind; the pool made only when needed."""
import gc
import os

import numpy as np
import pytest

import wavedd
from conftest import MAX_REGIONS
from test_reduce64 import ALL, FLOAT_OPS, INT_OPS, data, numpy_ref, \
    wavectl_json

SIZES = [1000, 65537]


def fds():
    return len(os.listdir("/proc/self/fd"))


def daemon_fds(daemon):
    return len(os.listdir(f"/proc/{daemon.pid}/fd"))


def ref_bits(daemon, tmp_path, op, chunks, masks=()):
    out = wavectl_json(daemon, tmp_path, op, chunks, masks)
    return tuple(int(b, 16) for b in out["bits"]), out["count"]


@pytest.mark.parametrize("dt", ALL, ids=lambda d: np.dtype(d).name)
def test_memmap_every_op(daemon, client, tmp_path, dt):
    chunks = [data(dt, n, seed=i + 31) for i, n in enumerate(SIZES)]
    maps = []
    for i, c in enumerate(chunks):
        np.save(tmp_path / f"c{i}.npy", c)
        maps.append(np.load(tmp_path / f"c{i}.npy", mmap_mode="r"))
    whole = np.concatenate(chunks)
    floats = np.dtype(dt).kind == "f"
    for op in (FLOAT_OPS if floats else INT_OPS) + ["argmin", "argmax"]:
        r = client.reduce(op, *maps)
        assert r.via == "file", op
        assert r.rows == whole.size
        ref, count = ref_bits(daemon, tmp_path, op, chunks)
        assert (r.bits, r.count) == (ref, count), op
        if not floats and op in INT_OPS:
            assert r.bits == numpy_ref(op, whole), op
        if op in ("argmin", "argmax"):
            assert r.index == int(getattr(np, op)(whole))
        f = client.reduce_file(op, *(tmp_path / f"c{i}.npy"
                                     for i in range(len(chunks))))
        assert f.via == "file" and f.bits == r.bits, op


def test_views_and_offsets(daemon, client, tmp_path):
    """Views of a memmap, and memmaps at offsets that are not a page (nor
    a row) of the file: extents at the right file offsets; an offset the
    daemon cannot read a file at (not a multiple of 4) stays memory."""
    a = data(np.int64, 70000, seed=4)
    for skip, via in ((12, "file"), (13, "message")):
        p = tmp_path / f"raw{skip}.bin"
        with open(p, "wb") as f:
            f.write(b"x" * skip)
            a.tofile(f)
        m = np.memmap(p, np.int64, "r", offset=skip, shape=(a.size,))
        for sl in (slice(None), slice(5, 6), slice(4097, 69999)):
            r = client.reduce("sum", m[sl])
            assert r.via == via
            assert r.bits == numpy_ref("sum", a[sl])
        m2 = np.memmap(p, np.int64, "r", offset=skip + 8 * 600,
                       shape=(5000,))
        r = client.reduce("xor", m2, m[100:200])
        assert r.via == via
        assert r.bits == numpy_ref("xor", np.concatenate([a[600:5600],
                                                          a[100:200]]))


def test_masks(daemon, client, tmp_path):
    a = data(np.float64, 50000, seed=12)
    rng = np.random.default_rng(13)
    mk = (rng.random(a.size) < 0.3).astype(np.uint32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "m.npy", mk)
    ma = np.load(tmp_path / "a.npy", mmap_mode="r")
    mm = np.load(tmp_path / "m.npy", mmap_mode="r")
    for op in ("sum", "extent", "argmax"):
        ref, count = ref_bits(daemon, tmp_path, op, [a], [mk])
        r = client.reduce(op, ma, mask=mm)
        assert r.via == "file" and (r.bits, r.count) == (ref, count), op
        # a mask of memory beside a file: the mask goes through the pool
        r = client.reduce(op, ma, mask=[mk[:100], mk[100:]])
        assert r.via == "pool" and (r.bits, r.count) == (ref, count), op
        r = client.reduce_file(op, tmp_path / "a.npy",
                               mask=tmp_path / "m.npy")
        assert r.via == "file" and (r.bits, r.count) == (ref, count), op
        r = client.reduce_file(op, tmp_path / "a.npy", mask=mk)
        assert r.via == "pool" and (r.bits, r.count) == (ref, count), op


def test_reduce_file_forms(daemon, client, tmp_path):
    a = data(np.uint32, 4096, seed=2)
    a.tofile(tmp_path / "a.raw")
    np.save(tmp_path / "a.npy", a)
    want = numpy_ref("sum", a)
    assert client.reduce_file("sum", tmp_path / "a.raw",
                              dtype=np.uint32).bits == want
    assert client.reduce_file("sum", str(tmp_path / "a.npy"),
                              dtype="uint32").bits == want
    # a 2-D .npy in C order is its flat rows
    np.save(tmp_path / "b.npy", a.reshape(64, 64))
    assert client.reduce_file("sum", tmp_path / "b.npy").bits == want
    with pytest.raises(wavedd.DtypeError, match="header says uint32"):
        client.reduce_file("sum", tmp_path / "a.npy", dtype=np.int32)
    with pytest.raises(wavedd.ArgError, match="not a .npy file"):
        client.reduce_file("sum", tmp_path / "a.raw")
    (tmp_path / "odd.raw").write_bytes(bytes(12))
    with pytest.raises(wavedd.LengthError, match="whole number"):
        client.reduce_file("sum", tmp_path / "odd.raw", dtype=np.uint64)
    np.save(tmp_path / "f.npy", np.asfortranarray(a.reshape(64, 64)))
    with pytest.raises(wavedd.ArgError, match="Fortran"):
        client.reduce_file("sum", tmp_path / "f.npy")
    np.save(tmp_path / "h.npy", a.astype(np.int16))
    with pytest.raises(wavedd.DtypeError, match="int16"):
        client.reduce_file("sum", tmp_path / "h.npy")
    with open(tmp_path / "a.npy", "rb") as f:
        head = f.read(200)
    with open(tmp_path / "t.npy", "wb") as f:
        f.write(head)               # the header, and too few rows
    with pytest.raises(wavedd.LengthError, match="header says"):
        client.reduce_file("sum", tmp_path / "t.npy")
    with pytest.raises(FileNotFoundError):
        client.reduce_file("sum", tmp_path / "none.npy")
    with pytest.raises(wavedd.ArgError, match="regular file"):
        client.reduce_file("sum", "/dev/null", dtype=np.uint32)


def test_what_stays_memory(daemon, client, tmp_path):
    """A copy-on-write map may hold writes the file lacks; a file replaced
    under its map is another inode: both go as memory, with the map's
    rows."""
    a = np.arange(1000, dtype=np.int32)
    np.save(tmp_path / "a.npy", a)
    client.copy_threshold = 1 << 62
    c = np.load(tmp_path / "a.npy", mmap_mode="c")
    c[0] = 10**6
    r = client.reduce("sum", c)
    assert r.via == "message" and r.value == a.sum() + 10**6
    m = np.load(tmp_path / "a.npy", mmap_mode="r")
    np.save(tmp_path / "b.npy", np.zeros(1000, np.int32))
    os.replace(tmp_path / "b.npy", tmp_path / "a.npy")
    r = client.reduce("sum", m)
    assert r.via == "message" and r.value == a.sum()
    # a writable shared map: the file is the memory
    w = np.load(tmp_path / "a.npy", mmap_mode="r+")
    w[:] = 3
    r = client.reduce("sum", w)
    assert r.via == "file" and r.value == 3000


def test_no_regions_daemon(plain, tmp_path):
    """A daemon without regions: the map's rows go as messages."""
    a = np.arange(5000, dtype=np.float64)
    np.save(tmp_path / "a.npy", a)
    with wavedd.Client(plain.url) as c:
        m = np.load(tmp_path / "a.npy", mmap_mode="r")
        r = c.reduce("sum", m)
        assert r.via == "message" and r.value == a.sum()
        r = c.reduce_file("max", tmp_path / "a.npy")
        assert r.via == "message" and r.value == 4999.0
    with wavedd.Client(plain.tcp, token_file=plain.token_file) as c:
        assert c.reduce_file("sum", tmp_path / "a.npy").via == "message"


def test_no_leak(daemon, client, tmp_path):
    """More calls than the daemon lets one connection hold regions: a
    registration left behind would be refused; no descriptor stays open
    here or in the daemon."""
    a = np.arange(4096, dtype=np.uint32)
    np.save(tmp_path / "a.npy", a)
    m = np.load(tmp_path / "a.npy", mmap_mode="r")
    client.reduce_file("sum", tmp_path / "a.npy")
    f0, d0 = fds(), daemon_fds(daemon)
    for i in range(4 * MAX_REGIONS):
        assert client.reduce("max", m, m[i:]).via == "file"
        assert client.reduce_file("min", tmp_path / "a.npy").value == 0
    with pytest.raises(wavedd.DtypeError):   # refused after the open
        client.reduce_file("sum", tmp_path / "a.npy", dtype=np.int32)
    assert fds() == f0 and client.regions() == 0
    for _ in range(100):   # bounded: the daemon closes off the loop
        if daemon_fds(daemon) <= d0:
            break
        client.status()
    assert daemon_fds(daemon) <= d0


def test_pool_made_when_needed(daemon):
    """The pool is made on the first plain array that needs it, of that
    size (whole 2 MiB), and grows only when a larger one comes."""
    with wavedd.Client(daemon.url) as c:
        assert c.regions() == 0
        c.reduce("sum", np.ones(1000, np.int32))          # a message
        assert c.regions() == 0
        c.copy_threshold = 0
        c.reduce("sum", np.ones(1000, np.int32))
        assert c.regions() == 1 and c._pool[0].nbytes == 2 << 20
        big = np.ones((3 << 20) // 4, np.int32)
        assert c.reduce("sum", big).value == big.size
        assert c.regions() == 1 and c._pool[0].nbytes == 4 << 20
    gc.collect()


def test_first_big_plain_as_memfd(daemon, monkeypatch):
    """A Client's first plain rows of at least _FILE_FIRST go as a file
    region of a fresh memfd (via "file") while the pool is made behind
    it, a call after it is made through that pool; the bits of both, and of
    messages, are the same (the float sums too), masks included; a Client
    closed while its pool is being made leaves no descriptor here."""
    import wavedd.client as wc
    monkeypatch.setattr(wc, "_FILE_FIRST", 1 << 20)
    rng = np.random.default_rng(34)
    a, b = rng.random(3 << 17), rng.random(1001)   # 3 MiB, and an odd end
    m = (rng.random(a.size + b.size) < 0.5).astype(np.uint32)
    plain = a.nbytes + b.nbytes + m.nbytes
    f0 = fds()
    for op in ("sum", "fsum", "argmax", "min"):
        with wavedd.Client(daemon.url) as c:
            r1 = c.reduce(op, a, b, mask=m)
            c._pool_next.result()   # made behind it (a call goes as a
            r2 = c.reduce(op, a, b, mask=m)   # memfd until then)
            assert c.regions() == 1
            assert c._pool[0].nbytes == -(-plain // (2 << 20)) * (2 << 20)
        with wavedd.Client(daemon.url) as c:
            c.copy_threshold = 1 << 62
            r3 = c.reduce(op, a, b, mask=m)
        assert (r1.via, r2.via, r3.via) == ("file", "pool", "message"), op
        assert r1.bits == r2.bits == r3.bits, op
        assert r1.count == r2.count == r3.count == int(np.count_nonzero(m))
        assert r1.index == r2.index == r3.index, op
    with wavedd.Client(daemon.url) as c:   # small rows while it is made
        assert c.reduce("sum", a).via == "file"
        nxt = c._pool_next
        c.copy_threshold = 0
        small = np.ones(1000, np.uint32)
        assert c.reduce("sum", small).via == "pool"   # a pool of their own
        nxt.result()
        assert c.reduce("sum", small).value == 1000
        assert c._pool[0].nbytes == -(-a.nbytes // (2 << 20)) * (2 << 20)
        assert c.regions() == 1
    with wavedd.Client(daemon.url) as c:   # closed with the pool unmade
        assert c.reduce("sum", a).via == "file"
        nxt = c._pool_next
    assert c._pool_next is None and c._pool is None
    nxt.result()   # stopped (or done), not waited for by close()
    assert c.regions() == 0
    gc.collect()
    assert fds() <= f0
