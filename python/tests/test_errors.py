"""test_errors.py - one class per row of include/wave/error.h, and each
one that a client can provoke, provoked for real."""
import os
import re

import numpy as np
import pytest

import wavedd
from conftest import MAX_ROWS, SOURCE
from wavedd import errors


def header_table():
    with open(os.path.join(SOURCE, "include", "wave", "error.h")) as f:
        text = f.read()
    rows = re.findall(r'X\((\w+),\s*(\d+),\s*"([^"]*)"\)', text)
    assert len(rows) > 30
    return [(sym, int(num), msg) for sym, num, msg in rows]


def test_classes_match_header():
    table = header_table()
    syms = {sym for sym, num, _ in table if num != 0}
    assert set(errors.NAMES) == syms   # no name missing, none stale
    for sym, num, msg in table:
        if num == 0:
            continue
        cls = getattr(wavedd, errors.NAMES[sym])
        assert issubclass(cls, wavedd.Error)
        assert cls.code == num and cls.name == sym
        assert errors.BY_CODE[num] is cls
        e = cls()
        assert e.message == msg and e.code == num
    assert len(errors.CLASSES) == len(syms)


def test_unknown_code():
    e = errors.error(9999, "from a newer daemon")
    assert type(e) is wavedd.Error and e.code == 9999


def test_opdtype(client):
    with pytest.raises(wavedd.OpDtypeError) as e:
        client.reduce("xor", np.ones(4, np.float32))
    assert "xor" in e.value.message and e.value.code == 6


def test_jobsize(client):
    """max_job_rows bounds the rows the daemon holds in its memory
    (messages); a region's rows are the client's memory, so the pool and
    a region-backed array reduce past it (docs/config.md)."""
    a = np.zeros(MAX_ROWS + 1, np.uint32)
    a[-1] = 7
    client.copy_threshold = 1 << 62   # messages
    with pytest.raises(wavedd.JobSizeError) as e:
        client.reduce("sum", a)
    assert "max_job_rows" in e.value.message
    client.copy_threshold = 0         # the pool: a region
    r = client.reduce("sum", a)
    assert r.via == "pool" and int(r.value) == 7 and r.rows == MAX_ROWS + 1
    x = wavedd.empty(MAX_ROWS + 1, np.uint32, client=client)
    x[:] = a
    r = client.reduce("sum", x)
    assert r.via == "region" and int(r.value) == 7


def test_masklen(client):
    with pytest.raises(wavedd.MaskLengthError):
        client.reduce("sum", np.ones(8, np.int32),
                      mask=np.ones(7, np.uint32))


def test_nodev(client):
    with pytest.raises(wavedd.NoDeviceError) as e:
        client.reduce("sum", np.ones(8, np.int32), device="nosuch")
    assert "nosuch" in str(e.value)


def test_pack(client):
    with pytest.raises(wavedd.PackError):
        client.hash("nosuch", 0, 100)


def test_badrequest(client):
    with pytest.raises(wavedd.BadRequestError, match="segment_log2"):
        client.hash("small", 0, 100, segment_log2=40)


def test_range(client):
    with pytest.raises(wavedd.RangeError):
        client.hash("small", (1 << 64) - 10, 100)


def test_nojob(client):
    with pytest.raises(wavedd.NoJobError):
        client.job(12345)
    with pytest.raises(wavedd.NoJobError):
        wavedd.Job(client, 12345).status()


def test_busy(client):
    """client_jobs: 2 in the test config: a third long job is BUSY."""
    jobs = [client.hash("small", 0, 1 << 40) for _ in range(2)]
    try:
        with pytest.raises(wavedd.BusyError):
            client.hash("small", 0, 1 << 40)
    finally:
        for j in jobs:
            j.cancel()
    for j in jobs:
        with pytest.raises(wavedd.CancelledError):
            j.wait(progress=False)


def test_transport(tmpdir_session):
    with pytest.raises(wavedd.TransportError) as e:
        wavedd.Client("ipc://" + os.path.join(tmpdir_session, "nobody.sock"))
    assert "refused" in str(e.value) or e.value.code == 24


def test_arg():
    with pytest.raises(wavedd.ArgError):
        wavedd.Client(timeout=-1)
    with pytest.raises(wavedd.ArgError) as e:
        wavedd.Client("nonsense://x")
    assert isinstance(e.value, ValueError)


def test_closed(daemon):
    c = wavedd.Client(daemon.url)
    c.close()
    c.close()   # twice is fine
    with pytest.raises(wavedd.ArgError, match="closed"):
        c.reduce("sum", np.ones(4, np.float32))


def test_auth(plain):
    with pytest.raises(wavedd.AuthError) as e:
        with wavedd.Client(plain.tcp) as c:
            c.status()
    assert isinstance(e.value, PermissionError)
    with pytest.raises(wavedd.AuthError):
        with wavedd.Client(plain.tcp, token="wrong-token-0123456789") as c:
            c.status()
    with wavedd.Client(plain.tcp, token_file=plain.token_file) as c:
        assert c.reduce("sum", np.ones(5, np.int32)).value == 5
    with open(plain.token_file) as f:
        tok = f.read().strip()
    with wavedd.Client(plain.tcp, token=tok) as c:
        assert c.status()["ready"]


def test_token_file_env(plain, monkeypatch):
    """WAVE_URL and WAVE_TOKEN_FILE, as wavectl."""
    monkeypatch.setenv("WAVE_URL", plain.tcp)
    monkeypatch.setenv("WAVE_TOKEN_FILE", plain.token_file)
    with wavedd.Client() as c:
        assert c.url == plain.tcp
        assert c.reduce("max", np.arange(9, dtype=np.uint32)).value == 8


def test_region_refused(plain):
    """A daemon without allow_client_shm: regions are refused, plain
    arrays go as messages."""
    with wavedd.Client(plain.url) as c:
        with pytest.raises(wavedd.RegionError) as e:
            wavedd.empty(16, np.float32, client=c)
        assert "allow_client_shm" in str(e.value)
        c.copy_threshold = 0
        r = c.reduce("sum", np.ones(1 << 16, np.float32))
        assert r.via == "message" and r.value == 65536.0
        assert c.regions() == 0


def test_timedout(client):
    j = client.hash("small", 0, 1 << 40)
    try:
        with pytest.raises(wavedd.TimedOutError) as e:
            j.wait(progress=False, timeout=0.2)
        assert isinstance(e.value, TimeoutError)
        assert j.status().state in ("queued", "running")
    finally:
        j.cancel()
        # ended before the next test (client_jobs counts it until then)
        with pytest.raises(wavedd.CancelledError):
            j.wait(progress=False)


def test_priority(client, plain, tmp_path):
    """priority= and deadline= every way in: the rows by message, a file,
    a hash job; high from a token the daemon does not allow is PermError
    (a PermissionError), never lowered."""
    a = np.arange(1, 5, dtype=np.uint32)
    assert client.reduce("sum", a, priority="low", deadline=5).value == 10
    f = tmp_path / "rows.u32"
    a.tofile(f)
    assert client.reduce_file("sum", str(f), dtype=np.uint32,
                              priority="low").value == 10
    with pytest.raises(wavedd.ArgError, match="priority"):
        client.reduce("sum", a, priority="urgent")
    with pytest.raises(wavedd.ArgError, match="deadline"):
        client.reduce("sum", a, deadline=0)
    with wavedd.Client(plain.tcp, token_file=plain.token_file) as c:
        with pytest.raises(wavedd.PermError) as e:
            c.reduce("sum", a, priority="high")
        assert isinstance(e.value, PermissionError)
        assert "token:client" in str(e.value)
        with pytest.raises(wavedd.PermError):
            c.hash("small", 0, 100, priority="high")
        job = c.hash("small", 0, 100, priority="low", deadline=60)
        assert job.result().hashes == 100
