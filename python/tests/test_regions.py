"""test_regions.py - region-backed arrays: extents, not bytes; views and
offsets; release with the array and with the client; status shows the
share they draw on; no leak after many create/release cycles (in this
process, and in the daemon's mappings)."""
import gc
import os
import time

import numpy as np
import pytest

import wavedd
from conftest import MAX_REGIONS, MAX_ROWS


def fds():
    return len(os.listdir("/proc/self/fd"))


def our_maps():
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if "/memfd:python" in line)


def test_empty_is_region(client, daemon):
    a = wavedd.empty((256, 4), np.float32, client=client)
    assert a.shape == (256, 4) and a.dtype == np.float32
    assert not a.any()                       # a fresh memfd: zeroed
    a[:] = np.arange(1024, dtype=np.float32).reshape(256, 4)
    r = client.reduce("sum", a)
    assert r.via == "region" and r.value == np.float32(523776.0)
    # a view at an offset is an extent at that offset
    r = client.reduce("max", a[10:20])
    assert r.via == "region" and r.value == 79.0 and r.rows == 40
    # two views of one region, and a mask in another region
    m = wavedd.empty(1024, np.uint32, client=client)
    m[::2] = 1
    r = client.reduce("extent", a[:128], a[128:], mask=m)
    assert r.via == "region" and r.count == 512
    assert r.value == (0.0, 1022.0)
    assert daemon.memfd_maps() >= 2


def test_status_shares(client):
    """status() shows this uid's share: a region of ours counts in it;
    the descriptor shares and their limits are there too."""
    me = f"uid:{os.getuid()}"

    def mine():
        sh = [s for s in client.status()["shares"] if s["principal"] == me]
        assert len(sh) == 1, client.status()["shares"]
        return sh[0]
    before = mine()
    assert before["region_limit"] > 0 and before["stream_limit"] > 0
    # the descriptor shares: file regions' descriptors, side connections
    assert before["file_fd_limit"] == 64 and before["fd_limit"] == 8
    assert before["fd_conns"] == 0 and client.status()["fd_limit"] == 64
    raw = client.region(1 << 20)
    assert mine()["region_bytes"] == before["region_bytes"] + (1 << 20)
    del raw


def test_region_bytes(client):
    raw = client.region(4096)
    assert raw.dtype == np.uint8 and raw.size == 4096
    v = raw.view(np.int32)
    v[:] = -1
    r = client.reduce("sum", v)
    assert r.via == "region" and r.value == -1024


def test_mixed_chunks(client):
    """A region chunk with a plain one: the plain one goes through the
    pool, the region stays an extent."""
    a = wavedd.empty(1000, np.uint32, client=client)
    a[:] = 3
    b = np.full(1000, 5, np.uint32)
    client.copy_threshold = 0
    r = client.reduce("sum", a, b)
    assert r.via == "pool" and r.value == 8000
    client.copy_threshold = 1 << 62
    r = client.reduce("sum", a, b)
    assert r.via == "message" and r.value == 8000


def test_other_clients_region(daemon, client):
    """A region of another client is plain memory here."""
    with wavedd.Client(daemon.url) as other:
        a = wavedd.empty(100, np.int32, client=other)
        a[:] = 2
        client.copy_threshold = 1 << 62
        r = client.reduce("sum", a)
        assert r.via == "message" and r.value == 200
        assert other.reduce("sum", a).via == "region"


def test_release_with_array(client, daemon):
    base = client.regions()
    a = wavedd.empty(1 << 16, np.float32, client=client)
    v = a[100:200]
    del a
    assert client.regions() == base + 1     # the view keeps it
    assert client.reduce("sum", v).via == "region"
    del v
    gc.collect()
    assert client.regions() == base
    assert daemon.memfd_maps() == 0


def test_close_releases(daemon):
    c = wavedd.Client(daemon.url)
    a = wavedd.empty(1000, np.float32, client=c)
    a[:] = 1.5
    assert daemon.memfd_maps() == 1
    c.close()
    # the daemon dropped it with the connection; the memory stays ours
    assert a.sum() == 1500.0
    with wavedd.Client(daemon.url) as c2:
        for _ in range(100):   # bounded: the daemon unmaps off the loop
            if daemon.memfd_maps() == 0:
                break
            c2.status()
        assert daemon.memfd_maps() == 0
        c2.copy_threshold = 0
        r = c2.reduce("sum", a)
        assert r.via == "pool" and r.value == 1500.0
    del a
    gc.collect()
    assert our_maps() == 0


def test_no_leak(client, daemon):
    """More cycles than the daemon lets one connection hold at once
    (max_client_regions): a leaked registration would be refused."""
    f0, m0 = fds(), our_maps()
    for i in range(20 * MAX_REGIONS):
        a = wavedd.empty(1024 + i, np.uint32, client=client)
        a[:] = i
        assert client.reduce("max", a).value == i
        b = client.region(4096)
        del a, b
    gc.collect()
    assert client.regions() == 0
    assert fds() == f0 and our_maps() == m0
    assert daemon.memfd_maps() == 0


def test_pool_reused(client, daemon):
    client.copy_threshold = 0
    for n in (1000, 500, 1000):
        assert client.reduce("sum", np.ones(n, np.int32)).via == "pool"
    assert client.regions() == 1                  # one pool
    big = np.ones(MAX_ROWS, np.int32)             # grows it: one again
    assert client.reduce("sum", big).value == MAX_ROWS
    assert client.regions() == 1
    assert daemon.memfd_maps("python-pool") == 1


def test_empty_args(client):
    with pytest.raises(wavedd.DtypeError):
        wavedd.empty(4, np.float16, client=client)
    with pytest.raises(wavedd.ArgError, match="client="):
        wavedd.empty(4, np.float32)
    with pytest.raises(wavedd.ArgError):
        wavedd.empty((0, 4), np.float32, client=client)
    with pytest.raises(wavedd.ArgError):
        client.region(0)


def rss_of(addr):
    """Resident kB of the mapping of ours that holds addr."""
    with open("/proc/self/smaps") as f:
        hit = False
        for line in f:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                lo, hi = (int(x, 16) for x in head.split("-"))
                hit = lo <= addr < hi
            elif hit and head == "Rss:":
                return int(line.split()[1])
    return None


def test_empty_populated(client):
    """A fresh region is mapped here as it is made (populated in the
    kernel), not faulted in page by page as it is filled."""
    a = wavedd.empty((8 << 20) // 4, np.float32, client=client)
    assert rss_of(a.__array_interface__["data"][0]) == 8 << 10
    assert not a.any()


def test_status_listen_connections(plain):
    """status() counts connections per listen URL: a second client on the
    tcp listener shows there, and is gone again once it closes."""
    with wavedd.Client(plain.url) as client:
        def per_url():
            st = client.status()
            assert len(st["listen_connections"]) == len(st["listen"])
            return dict(zip(st["listen"], st["listen_connections"]))
        before = per_url()
        assert before[plain.url] >= 1  # client itself
        with wavedd.Client(plain.tcp, token_file=plain.token_file) as other:
            other.status()
            assert per_url()[plain.tcp] == before[plain.tcp] + 1
        for _ in range(1000):  # the daemon sees the close soon after
            if per_url()[plain.tcp] == before[plain.tcp]:
                break
            time.sleep(0.01)
        assert per_url()[plain.tcp] == before[plain.tcp]
