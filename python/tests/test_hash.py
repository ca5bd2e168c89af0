"""test_hash.py - hash jobs: the result equals wavectl's, segments,
progress, listing, cancel, and Ctrl-C cancelling an attached job."""
import json
import os
import signal
import threading

import pytest

import wavedd
from conftest import device_names


def wavectl_hash(daemon, *args):
    out = daemon.wavectl("--json", "submit", "hash", *args).stdout
    return json.loads(out)


def test_result_as_wavectl(daemon, client):
    j = client.hash("small", 1000, 50000, target=1 << 56, max_winners=4)
    r = j.wait(progress=False)
    ref = wavectl_hash(daemon, "--pack", "small", "--nonce", "1000",
                       "--count", "50000", "--target", "%x" % (1 << 56),
                       "--max-winners", "4")
    assert r.hashes == ref["hashes"] == 50000
    assert r.fingerprint == int(ref["job_fingerprint"], 16)
    assert r.best_nonce == ref["best"]["nonce"]
    assert r.best_output == int(ref["best"]["output"], 16)
    assert r.winner_count == ref["winner_count"]
    assert r.winners == [(w["nonce"], int(w["output"], 16))
                         for w in ref["winners"]]
    assert len(r.winners) == min(4, r.winner_count)
    assert all(out < (1 << 56) for _, out in r.winners)
    assert j.result() is r                       # kept
    assert j.status().state == "done"


def device_hashes(client):
    return {d["name"]: d["hashes"] for d in client.status()["devices"]}


def test_segments_and_devices(daemon, client):
    devs = device_names(daemon)
    before = device_hashes(client)
    j = client.hash("small", 0, 1 << 15, devices="all", segments=True,
                    segment_log2=10)
    r = j.wait(progress=False)
    assert r.segment_log2 == 10 and r.segment_count == 32
    assert len(r.segments) == 32
    assert {s["device"] for s in r.shares} <= set(devs)
    assert sum(s["hashes"] for s in r.shares) == 1 << 15
    # each device's count in status grew by its share of the job
    after = device_hashes(client)
    share = {d: sum(s["hashes"] for s in r.shares if s["device"] == d)
             for d in devs}
    assert {d: after[d] - before[d] for d in devs} == share
    # the same nonces on one device: the same fingerprint
    one = client.hash("small", 0, 1 << 15, device=devs[0],
                      segment_log2=10).result()
    assert one.fingerprint == r.fingerprint and one.segments is None


def test_progress_line(client, capsys, monkeypatch):
    import builtins
    real = builtins.__import__

    def no_tqdm(name, *a, **k):       # the plain line, tqdm or not
        if name == "tqdm":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    j = client.hash("small", 0, 1 << 16)
    j.wait(progress=True)
    err = capsys.readouterr().err
    assert f"job {j.id}: done 100.0%" in err and err.endswith("\n")


def test_jobs_and_job(client):
    j = client.hash("small", 0, 1 << 12)
    j.result()
    mine = [ji for ji in client.jobs() if ji.id == j.id]
    assert len(mine) == 1
    assert mine[0].owner == f"uid:{os.getuid()}"
    again = client.job(j.id)
    assert again.id == j.id and again.status().state == "done"


def test_cancel(client):
    j = client.hash("small", 0, 1 << 40)
    info = j.cancel()
    assert info.id == j.id
    with pytest.raises(wavedd.CancelledError):
        j.wait(progress=False)
    assert j.status().state == "cancelled"


def test_ctrl_c_cancels(client):
    j = client.hash("small", 0, 1 << 40)
    # SIGINT once the wait is polling; the handler raises between polls
    t = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            j.wait(progress=False)
    finally:
        t.cancel()
    # cancelled: it ends as such (the device stops it at its next piece)
    with pytest.raises(wavedd.CancelledError):
        j.wait(progress=False)


def test_ctrl_c_leaves_detached(client):
    j = client.hash("small", 0, 1 << 40, detach=True)
    t = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            j.wait(progress=False)
        assert j.status().state in ("queued", "running")
    finally:
        t.cancel()
        j.cancel()
        # ended before the next test (client_jobs counts it until then)
        with pytest.raises(wavedd.CancelledError):
            j.wait(progress=False)
