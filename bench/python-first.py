#!/usr/bin/env python3
"""bench/python-first.py - issue 34's last Python target alone: the first
reduce of a plain 256 MiB float64 array on a new Client, each way it can
travel, against NumPy's own sum of the same array in the same run.

    bench/python-first.py [BUILD_DIR]     (default: build)

It needs NumPy and the wavedd package of python/ (on BUILD_DIR's
client/libwaveclient.so) and starts wavedd from BUILD_DIR with one device
cpu0 (regions allowed, the default limits: pieces of 16 MiB).  Each of
WAVE_BENCH_ROUNDS (5) rounds times, in turn, on a new Client each:

  np.sum       a.sum() (the median of 3, the round's baseline)
  ring         c.reduce("sum", a), the package's choice for a big plain
               float sum once the process has its ring: a stream whose
               pieces go through the slots of the process's ring
               (python/wavedd/ring.py: 4 x 4 MiB, kept, with its own
               connection), which the daemon sums in place as they arrive
               (StreamPutRequest.from); the ring is made by an untimed
               call before the rounds (and again after each first)
  first        the same after wavedd.ring.drop(), as the first big sum of
               a process: it goes through a pipe (python/wavedd/pipe.py:
               the array's pages spliced into a pipe that the daemon
               reads as a pipe region) while the ring is made on a thread
               for the calls after
  pipe         the same with ring_threshold above it: the package's way
               for a Client's first big plain array of any op (no pool
               yet), through a pipe
  memfd        the same with pipe_threshold above it too, the way before
               the pipe: the rows pwrite-n into a fresh memfd, sent as a
               file region (the pool made behind it is not waited for)
  stream       the same with copy_threshold above it: libwaveclient
               streams it in pieces, which the daemon reduces as they
               arrive (daemon/bulk/stream.h)
  buffered     the same stream of the array as two chunks (its halves):
               a float sum of several chunks is still copied into one
               buffer of the job's size, as every float-sum stream was
               before; its own tree, so its bits are not compared

and prints each round's times, the load average before and after, and the
medians' ratios to np.sum's.  Every way must give the same bits (exit 1
otherwise).  WAVE_BENCH_LOG2 (25) sets the rows, WAVE_BENCH_REQUEST the
daemon's limits.max_request_bytes (64 MiB, its default: pieces of half of
it, 16 MiB at most).
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
try:
    import numpy as np
except ImportError:
    print("python-first: skipped: no NumPy for", sys.executable)
    sys.exit(0)
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
os.environ.setdefault("WAVEDD_LIBWAVECLIENT",
                      os.path.join(BUILD, "client", "libwaveclient.so"))
import wavedd  # noqa: E402

ROWS = 1 << int(os.environ.get("WAVE_BENCH_LOG2", "25"))
ROUNDS = int(os.environ.get("WAVE_BENCH_ROUNDS", "5"))
# the daemon's limits.max_request_bytes: pieces of half of it, 16 MiB at most
REQUEST = int(os.environ.get("WAVE_BENCH_REQUEST", str(64 << 20)))


def start_daemon(tmp):
    sock = os.path.join(tmp, "w.sock")
    cfg = os.path.join(tmp, "bench.yaml")
    with open(cfg, "w") as f:
        f.write(f"listen:\n  - ipc://{sock}\nallow_client_shm: true\n"
                f"log_level: info\nlimits:\n  max_job_rows: {1 << 30}\n"
                f"  max_request_bytes: {REQUEST}\n"
                f"packs:\n  load: []\ndevices:\n"
                f"  - {{name: cpu0, backend: cpu}}\n")
    log = open(os.path.join(tmp, "wavedd.log"), "w")
    p = subprocess.Popen([os.path.join(BUILD, "wavedd"), "--config", cfg,
                          "--foreground"], stderr=log)
    url = "ipc://" + sock
    for _ in range(600):   # bounded: a daemon that never gets ready
        if p.poll() is not None:
            break
        try:
            with wavedd.Client(url, timeout=5) as c:
                if c.status()["ready"]:
                    return p, url
        except wavedd.Error:
            pass
        time.sleep(0.1)
    p.kill()
    sys.exit("python-first: wavedd did not start")


def first(url, a, way):
    """Seconds of a new Client's first reduce of a, and its result."""
    with wavedd.Client(url, timeout=600) as c:
        if way in ("pipe", "memfd"):
            c.ring_threshold = 1 << 62
        if way == "memfd":
            c.pipe_threshold = 1 << 62
        if way in ("stream", "buffered"):
            c.copy_threshold = 1 << 62
        if way == "first":
            wavedd.ring.drop()
        chunks = (a,) if way != "buffered" else (a[:len(a) // 2],
                                                 a[len(a) // 2:])
        t0 = time.perf_counter()
        r = c.reduce("sum", *chunks)
        dt = time.perf_counter() - t0
        for _ in range(200):   # untimed: the ring made for the next calls
            if way not in ("ring", "first") or wavedd.ring.ready(c._ring_key):
                break
            time.sleep(0.05)
        return dt, r


def main():
    a = np.random.default_rng(35).random(ROWS)
    load0 = os.getloadavg()
    ways = ("ring", "first", "pipe", "memfd", "stream", "buffered")
    times = {"np.sum": [], **{w: [] for w in ways}}
    bits = set()
    with tempfile.TemporaryDirectory() as tmp:
        p, url = start_daemon(tmp)
        try:
            first(url, a, "ring")   # the process's ring, made untimed
            for k in range(ROUNDS):
                ts = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    a.sum()
                    ts.append(time.perf_counter() - t0)
                times["np.sum"].append(statistics.median(ts))
                line = [f"round {k + 1}: np.sum {times['np.sum'][-1]:.4f}"]
                for way in ways:
                    dt, r = first(url, a, way)
                    times[way].append(dt)
                    if way != "buffered":
                        bits.add(r.bits)
                    line.append(f"{way} {dt:.4f} (via {r.via})")
                print(", ".join(line), flush=True)
        finally:
            p.terminate()
            p.wait()
    load1 = os.getloadavg()
    print(f"load average {load0[0]:.2f} -> {load1[0]:.2f}; "
          f"{ROWS * 8 >> 20} MiB float64, {ROUNDS} rounds")
    med_np = statistics.median(times["np.sum"])
    for way, ts in times.items():
        med = statistics.median(ts)
        print(f"{way:8s} median {med:.4f} s  {med / med_np:6.2f}x np.sum  "
              f"({' '.join(f'{t:.4f}' for t in ts)})")
    if len(bits) != 1:
        print("python-first: the ways gave different bits:", bits)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
