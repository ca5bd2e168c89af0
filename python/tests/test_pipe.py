"""test_pipe.py - the pipe (wavedd/pipe.py): one big plain array's pages
spliced into a pipe that the daemon reads as a pipe region, where a call
would otherwise make fresh memory (a Client's first big array, no pool
yet; a process's first big float sum, no ring yet, which is then made
for the calls after).  Its bits are the message way's for every dtype
and op, over sizes of one piece and of many; a job the daemon refuses
raises as the other ways do and leaves no writer behind; a daemon that
takes no pipe regions (none of any kind here) gets the rows the other
ways, with the same bits.
"""
import threading

import numpy as np
import pytest

import wavedd
from wavedd import client as wclient, pipe, ring
from conftest import MAX_ROWS, Daemon

pytestmark = pytest.mark.skipif(not pipe.available(),
                                reason="no vmsplice in this C library")


def daemon(tmp, name, shm):
    return Daemon(tmp, name, f"""auth: none
allow_client_shm: {"true" if shm else "false"}
log_level: info
limits:
  max_job_rows: {MAX_ROWS}
packs:
  load: []
devices:
  - {{name: cpu0, backend: cpu, threads: 2}}
""")


@pytest.fixture(scope="module")
def piped(tmpdir_session):
    d = daemon(tmpdir_session, "pipe", True)
    yield d
    assert d.stop() == 0


def rows(dt, n, seed):
    """Rows whose float sum depends on the order: signs, 40 binades."""
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "f":
        return (rng.standard_normal(n) *
                2.0 ** rng.integers(-20, 20, n)).astype(dt)
    return rng.integers(-2**30, 2**30, n).astype(dt)


@pytest.fixture
def first(monkeypatch):
    """Every plain array big enough for the first-call ways."""
    monkeypatch.setattr(wclient, "_FILE_FIRST", 0)


def piped_client(url):
    """A Client whose first plain array goes by pipe (no pool yet; no
    ring for float sums)."""
    c = wavedd.Client(url)
    c.copy_threshold = c.pipe_threshold = 0
    c.ring_threshold = 1 << 62
    return c


def both(url, op, a):
    """The Results of a through a pipe and as messages."""
    with piped_client(url) as c:
        p = c.reduce(op, a)
    with wavedd.Client(url) as c:
        c.copy_threshold = c.pipe_threshold = 1 << 62
        m = c.reduce(op, a)
    return p, m


@pytest.mark.parametrize("dt,op", [
    (np.float64, "sum"), (np.float32, "sum"), (np.float64, "fsum"),
    (np.float32, "max"), (np.int64, "sum"), (np.uint32, "xor"),
    (np.int32, "argmin")])
def test_pipe_bits(piped, first, dt, op):
    # one piece, and many pieces read in turn through four slots
    for n in (1000, 300001, MAX_ROWS):
        a = rows(dt, n, n)
        p, m = both(piped.url, op, a)
        assert (p.via, m.via) == ("pipe", "message"), n
        assert p.bits == m.bits and p.count == m.count == n, (dt, op, n)
        assert p.index == m.index
    with wavedd.Client(piped.url) as c:   # each pipe region went
        assert [s["region_bytes"] for s in c.status()["shares"]] == [0]


def test_pipe_refused_job(piped, first):
    """A job the daemon refuses raises as the message way does; its
    writer ends, and the next pipe works."""
    a = rows(np.float64, 300001, 5)
    before = threading.active_count()
    with piped_client(piped.url) as c:
        with pytest.raises(wavedd.NoDeviceError) as e:
            c.reduce("sum", a, device="gpu9")
        assert "gpu9" in str(e.value)
    with wavedd.Client(piped.url) as c:
        c.copy_threshold = c.pipe_threshold = 1 << 62
        with pytest.raises(wavedd.NoDeviceError) as m:
            c.reduce("sum", a, device="gpu9")
        assert str(m.value) == str(e.value)
    with piped_client(piped.url) as c:
        assert c.reduce("sum", a).via == "pipe"
    for _ in range(100):
        if threading.active_count() <= before:
            break
        threading.Event().wait(0.05)
    assert threading.active_count() <= before


def test_pipe_then_ring(piped, first):
    """A process's first big float sum goes by pipe while the ring is
    made for the calls after, which go through it; same bits."""
    ring.drop()
    a = rows(np.float64, 300001, 7)
    try:
        with wavedd.Client(piped.url) as c:
            c.copy_threshold = c.pipe_threshold = c.ring_threshold = 0
            p = c.reduce("sum", a)
            assert p.via == "pipe"
            for _ in range(200):
                if ring.ready(c._ring_key):
                    break
                threading.Event().wait(0.05)
            r = c.reduce("sum", a)
            assert r.via == "ring" and r.bits == p.bits
    finally:
        ring.drop()


def test_pipe_not_taken(tmpdir_session, first):
    """No regions in the daemon: the pipe is refused, and the rows go as
    messages, with the same bits."""
    d = daemon(tmpdir_session, "nopipe", False)
    try:
        a = rows(np.float64, 300001, 6)
        with piped_client(d.url) as c:
            r = c.reduce("sum", a)
            assert r.via == "message" and not c._pipe_ok
            c.copy_threshold = c.pipe_threshold = 1 << 62
            assert c.reduce("sum", a).bits == r.bits
    finally:
        assert d.stop() == 0
