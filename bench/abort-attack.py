#!/usr/bin/env python3
"""bench/abort-attack.py - the nng 1.5.2 aborted-handshake attack on wavedd's
ipc listener (nanomsg/nng#1518, daemon/net/listen.c), measured.

    python3 bench/abort-attack.py [--seconds 20] WAVEDD [WAVEDD ...]

For each wavedd binary given (e.g. main's and this branch's, in the same run):
start it on a private socket folder with one CPU device; an attacker connects
and closes before the SP handshake every 0.5 s; a prober opens a new
connection every 50 ms, sends a StatusRequest and waits up to 1 s for the
reply; a client connected from the start sends a StatusRequest every 200 ms
on its one connection and counts the times the daemon dropped it.

Prints, per binary: probes answered / sent (new clients let in), the outage
share, and the connected client's answers and drops.  Plain SP framing over
a unix socket, no nng on this side.
"""
import argparse
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HELLO = bytes([0, ord('S'), ord('P'), 0, 0x00, 0x30, 0, 0])


def status_frame(rid):
    # Request{version: 2, id: rid, status: {}}
    body = bytes([0x08, 0x02, 0x10]) + varint(rid) + bytes([0x5a, 0x00])
    msg = struct.pack(">I", rid | 0x80000000) + body
    # nng's ipc framing: a message-type byte (1), then a 64-bit length
    return b"\x01" + struct.pack(">Q", len(msg)) + msg


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def sp_connect(path, timeout):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    s.sendall(HELLO)
    recv_exact(s, 8)
    return s


def sp_status(s, rid):
    s.sendall(status_frame(rid))
    (n,) = struct.unpack(">Q", recv_exact(s, 9)[1:])
    recv_exact(s, n)


def run_one(wavedd, seconds, src):
    d = tempfile.mkdtemp(prefix="wavedd-attack.")
    os.chmod(d, 0o700)
    path = os.path.join(d, "w.sock")
    cfg = os.path.join(d, "w.yaml")
    with open(cfg, "w") as f:
        f.write('listen: ["ipc://%s"]\nipc_mode: 0600\nlog_level: warn\n'
                "packs: {dir: %s/config/packs, load: [closed]}\n"
                "devices:\n  - {name: cpu0, backend: cpu, threads: 1}\n"
                % (path, src))
    log = open(os.path.join(d, "log"), "w")
    p = subprocess.Popen([wavedd, "--config", cfg, "--foreground"],
                         stdout=log, stderr=log)
    try:
        for _ in range(600):
            try:
                s = sp_connect(path, 1.0)
                sp_status(s, 1)
                s.close()
                break
            except OSError:
                time.sleep(0.1)
        stop = time.time() + seconds
        res = {"probes": 0, "answered": 0, "kept_ok": 0, "kept_fail": 0,
               "drops": 0}
        done = threading.Event()

        def attacker():
            while not done.is_set():
                try:
                    a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    a.connect(path)
                    a.close()
                except OSError:
                    pass
                done.wait(0.5)

        def keeper():
            s = None
            rid = 1 << 20
            while not done.is_set():
                try:
                    if s is None:
                        s = sp_connect(path, 1.0)
                    rid += 1
                    sp_status(s, rid)
                    res["kept_ok"] += 1
                except (OSError, ConnectionError) as e:
                    res["kept_fail"] += 1
                    if not isinstance(e, socket.timeout):
                        res["drops"] += 1
                    if s is not None:
                        s.close()
                    s = None
                done.wait(0.2)
            if s is not None:
                s.close()

        ts = [threading.Thread(target=attacker), threading.Thread(target=keeper)]
        for t in ts:
            t.start()
        rid = 1000
        while time.time() < stop:
            t0 = time.time()
            rid += 1
            res["probes"] += 1
            try:
                s = sp_connect(path, 1.0)
                sp_status(s, rid)
                s.close()
                res["answered"] += 1
            except OSError:
                pass
            dt = time.time() - t0
            if dt < 0.05:
                time.sleep(0.05 - dt)
        done.set()
        for t in ts:
            t.join()
        return res
    finally:
        p.terminate()
        try:
            rc = p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        res_rc = rc
        log.close()
        if os.environ.get("ATTACK_LOG"):
            shutil.copy(os.path.join(d, "log"), os.environ["ATTACK_LOG"])
        shutil.rmtree(d, ignore_errors=True)
        print("  (%s exited %d)" % (wavedd, res_rc), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("wavedd", nargs="+")
    a = ap.parse_args()
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for w in a.wavedd:
        r = run_one(w, a.seconds, src)
        share = r["answered"] / r["probes"] if r["probes"] else 0
        print("%s: new clients answered %d/%d (%.1f%%, outage %.1f%%); "
              "connected client: %d answered, %d failed, %d drops"
              % (w, r["answered"], r["probes"], 100 * share,
                 100 * (1 - share), r["kept_ok"], r["kept_fail"], r["drops"]))


if __name__ == "__main__":
    main()
