"""test_ring.py - the ring (wavedd/ring.py): one big plain float sum
streamed through a few slots of a region the process keeps, which the
daemon sums in place.  Its bits are those of the message way and of the
memfd way; arrays smaller and larger than the ring, and many Clients,
reuse one ring (one mapping here and in the daemon); other jobs, and a
call while the ring is busy, take the other ways.  A daemon of its own
with pieces of 32 KiB (max_request_bytes 64 KiB) and a ring of four
32 KiB slots, so that small arrays take many pieces.
"""
import threading

import numpy as np
import pytest

import wavedd
from wavedd import client as wclient, ring
from conftest import MAX_ROWS, Daemon

PIECE = 32768


@pytest.fixture(scope="module")
def small(tmpdir_session):
    d = Daemon(tmpdir_session, "ring", f"""auth: none
allow_client_shm: true
log_level: info
limits:
  max_request_bytes: {2 * PIECE}
  max_job_rows: {MAX_ROWS}
packs:
  load: []
devices:
  - {{name: cpu0, backend: cpu, threads: 2}}
""")
    yield d
    assert d.stop() == 0


@pytest.fixture
def slots(monkeypatch):
    ring.drop()   # no ring of 16 MiB slots from another test
    monkeypatch.setattr(ring, "SLOT", PIECE)
    yield
    ring.drop()


def floats(dt, n, seed):
    """Rows whose sum depends on the order: signs, 40 binades."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) *
            2.0 ** rng.integers(-20, 20, n)).astype(dt)


def maps(pid, name="wavedd-ring"):
    with open(f"/proc/{pid}/maps") as f:
        return sum(1 for line in f if f"/memfd:{name}" in line)


def ways(c, a, monkeypatch):
    """The Results of a by the ring, as messages, and by a memfd."""
    c.copy_threshold = c.ring_threshold = 0
    r = c.reduce("sum", a)
    c.copy_threshold = 1 << 62
    m = c.reduce("sum", a)
    c.copy_threshold, c.ring_threshold = 0, 1 << 62
    monkeypatch.setattr(wclient, "_FILE_FIRST", 0)
    with wavedd.Client(c.url) as fresh:   # no pool yet: the memfd way
        fresh.copy_threshold, fresh.ring_threshold = 0, 1 << 62
        f = fresh.reduce("sum", a)
    monkeypatch.setattr(wclient, "_FILE_FIRST", 64 << 20)
    c.copy_threshold, c.ring_threshold = 0, 0
    return r, m, f


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_ring_bits(small, slots, monkeypatch, dt):
    # smaller than one slot, than the ring (2 slots), and many rings' worth
    for n in (1000, 20000, 300001, MAX_ROWS):
        a = floats(dt, n, n)
        with wavedd.Client(small.url) as c:
            r, m, f = ways(c, a, monkeypatch)
        assert (r.via, m.via, f.via) == ("ring", "message", "file"), n
        assert r.bits == m.bits == f.bits, (dt, n, r.bits, m.bits, f.bits)
        assert r.rows == r.count == n and r.dtype == np.dtype(dt)


def test_ring_reused(small, slots):
    """Many arrays and Clients, one ring: one mapping of it here and one
    in the daemon, one registration."""
    a = floats(np.float64, 200000, 1)
    want = None
    for k in range(4):
        with wavedd.Client(small.url) as c:
            c.copy_threshold = c.ring_threshold = 0
            for b in (a, a[:5000], a[7:]):   # a view at an odd offset too
                r = c.reduce("sum", b)
                assert r.via == "ring" and r.rows == b.size
            r = c.reduce("sum", a)
            want = want or r.bits
            assert r.bits == want
            assert c.regions() == 0   # the ring is not the Client's
    assert maps("self") == 1 and maps(small.pid) == 1
    with wavedd.Client(small.url) as c:   # in this uid's region share
        assert [s["region_bytes"] for s in c.status()["shares"]] == \
            [ring.RING_SLOTS * PIECE]
    ring.drop()   # the connection closes: the daemon unmaps it
    for _ in range(100):
        if maps(small.pid) == 0:
            break
        threading.Event().wait(0.05)
    assert maps("self") == 0 and maps(small.pid) == 0


def test_ring_other_ways(small, slots):
    a = floats(np.float64, 100000, 2)
    mk = np.ones(a.size, np.uint32)
    with wavedd.Client(small.url) as c:
        c.copy_threshold = c.ring_threshold = 0
        assert c.reduce("max", a).via == "pool"            # not a sum
        assert c.reduce("sum", a, mask=mk).via == "pool"   # masked
        assert c.reduce("sum", a[:10], a[10:]).via == "pool"  # two chunks
        assert c.reduce("sum", a.astype(np.int64)).via == "pool"
        r = c.reduce("sum", a)
        assert r.via == "ring"
        # the ring busy (another thread's call): the other ways, same bits
        rg = ring._rings[c._ring_key]
        with rg.lock:
            b = c.reduce("sum", a)
        assert b.via == "pool" and b.bits == r.bits
        c.ring_threshold = a.nbytes + 1
        assert c.reduce("sum", a).via == "pool"
        # more rows than a stream may hold (limits.max_job_rows, which
        # bounds no region): the other ways
        c.ring_threshold = 0
        big = floats(np.float64, MAX_ROWS + 1, 3)
        r = c.reduce("sum", big)
        assert r.via == "pool" and r.rows == big.size
        assert c.reduce("sum", a).via == "ring"   # and the ring after


def resident(pid, name="wavedd-ring"):
    """(pages present, pages) of pid's mapping of memfd:NAME, from
    /proc/PID/pagemap (bit 63: the page is in the page table)."""
    with open(f"/proc/{pid}/maps") as f:
        spans = [line.split()[0] for line in f if f"/memfd:{name}" in line]
    assert len(spans) == 1, spans
    lo, hi = (int(x, 16) for x in spans[0].split("-"))
    page = 4096
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        f.seek(lo // page * 8)
        raw = f.read((hi - lo) // page * 8)
    ents = np.frombuffer(raw, np.uint64)
    return int(np.count_nonzero(ents >> np.uint64(63))), ents.size


def test_ring_touched_at_registration(small, slots):
    # the daemon reads a small region's pages when it registers it, so a
    # ring's first sum does not pay their first touch (daemon/bulk/region.c
    # rg_warm): every page of its mapping is there before any job
    with wavedd.Client(small.url) as c:
        ring.prepare(c._ring_key)
        for _ in range(600):
            if ring.ready(c._ring_key):
                break
            threading.Event().wait(0.05)
        assert ring.ready(c._ring_key)
        have, pages = resident(small.pid)
        assert pages == ring.RING_SLOTS * PIECE // 4096, pages
        assert have == pages, f"{have} of {pages} pages there"
