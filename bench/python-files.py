#!/usr/bin/env python3
"""bench/python-files.py - issue 34's Python targets on the CPU device, in
one run, against wavectl and NumPy of the same run.

    bench/python-files.py [BUILD_DIR]     (default: build)

It needs NumPy and the wavedd package of python/ (on BUILD_DIR's
client/libwaveclient.so), starts wavedd from BUILD_DIR with one device
cpu0 (regions allowed), writes a .npy of 2^WAVE_BENCH_LOG2 (27: 1 GiB)
float64 rows to a temporary folder (WAVE_BENCH_DIR, default $TMPDIR; its
pages stay in the page cache), and times each way WAVE_BENCH_REPS (3)
times, wall time of the whole call:

  wavectl      wavectl submit reduce --op sum --input big.npy (a process)
  numpy map    np.load(big.npy, mmap_mode="r").sum(), in this process
  py map       c.reduce("sum", that memmap): first on a new Client each
               time, then repeats on one Client
  py file      c.reduce_file("sum", big.npy) on a new Client
  plain        a plain 256 MiB float64 array (2^25 rows): np.sum, and
               c.reduce("sum", a) first on a new Client (through the
               process's ring, python/wavedd/ring.py, made by the first
               such call), the second call of a new Client at once (the
               ring), with ring_threshold above it: its first call through
               the pool once made, and the first on a new Client with the
               pool made for it (the way before the memfd); repeats on
               one Client (the ring), and as messages (copy_threshold
               above it); the bits of every way must be equal
  fill         wavedd.empty of the file's shape filled from the memmap,
               np.empty filled the same way, and the region's first
               reduce

Medians are printed, with the ratios of the targets: py map first and
repeats against wavectl (<= 1.2x), plain first against np.sum (<= 2x).
Every wavedd way must give wavectl's bits (exit 1 otherwise).
"""
import json
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
    print("python-files: skipped: no NumPy for", sys.executable)
    sys.exit(0)
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
os.environ.setdefault("WAVEDD_LIBWAVECLIENT",
                      os.path.join(BUILD, "client", "libwaveclient.so"))
import wavedd  # noqa: E402

LOG2 = int(os.environ.get("WAVE_BENCH_LOG2", "27"))
REPS = int(os.environ.get("WAVE_BENCH_REPS", "3"))
PLAIN_ROWS = 1 << 25


def timed(fn, reps=REPS):
    """(median seconds, every time, last value) of reps calls."""
    ts, v = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        v = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), ts, v


def start_daemon(tmp):
    sock = os.path.join(tmp, "w.sock")
    cfg = os.path.join(tmp, "bench.yaml")
    with open(cfg, "w") as f:
        f.write(f"listen:\n  - ipc://{sock}\nallow_client_shm: true\n"
                f"log_level: info\nlimits:\n  max_job_rows: {1 << 30}\n"
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
    sys.exit("python-files: wavedd did not start")


def main():
    load0 = os.getloadavg()
    rows = []
    bits = {}

    def row(what, med, ts, note=""):
        rows.append((what, med, " ".join(f"{t:.3f}" for t in ts), note))

    with tempfile.TemporaryDirectory(
            prefix="wavedd-pyfiles.",
            dir=os.environ.get("WAVE_BENCH_DIR")) as tmp:
        npy = os.path.join(tmp, "big.npy")
        np.save(npy, np.random.default_rng(34).random(1 << LOG2))
        proc, url = start_daemon(tmp)
        try:
            env = dict(os.environ, WAVE_URL=url)
            cmd = [os.path.join(BUILD, "wavectl"), "--json", "submit",
                   "reduce", "--op", "sum", "--dtype", "float64",
                   "--input", npy]

            def ctl():
                out = subprocess.run(cmd, env=env, capture_output=True,
                                     text=True, check=True).stdout
                return tuple(int(b, 16) for b in json.loads(out)["bits"])
            ctl()   # the file's pages read once
            med_ctl, ts, bits["wavectl"] = timed(ctl)
            row("wavectl submit reduce --input big.npy", med_ctl, ts)
            m = np.load(npy, mmap_mode="r")
            med, ts, _ = timed(lambda: m.sum())
            row("NumPy: np.load(mmap_mode='r').sum()", med, ts)

            def first(fn):
                def call():
                    with wavedd.Client(url, timeout=600) as c:
                        r = fn(c)
                    return r
                return call
            med_first, ts, r = timed(first(lambda c: c.reduce("sum", m)))
            bits["py map first"] = r.bits
            row(f"Python c.reduce(memmap), first of a Client (via {r.via})",
                med_first, ts, f"{med_first / med_ctl:.2f}x wavectl")
            with wavedd.Client(url, timeout=600) as c:
                c.reduce("sum", m)
                med_rep, ts, r = timed(lambda: c.reduce("sum", m))
            bits["py map repeat"] = r.bits
            row("Python c.reduce(memmap), repeats", med_rep, ts,
                f"{med_rep / med_ctl:.2f}x wavectl")
            med, ts, r = timed(first(lambda c: c.reduce_file("sum", npy)))
            bits["py file"] = r.bits
            row(f"Python c.reduce_file(path), first of a Client "
                f"(via {r.via})", med, ts, f"{med / med_ctl:.2f}x wavectl")

            a = np.random.default_rng(35).random(PLAIN_ROWS)
            med_np, ts, _ = timed(lambda: a.sum())
            row("NumPy: a.sum(), plain 256 MiB", med_np, ts)
            plain = {}
            med, ts, r = timed(first(lambda c: c.reduce("sum", a)))
            row(f"Python c.reduce(plain 256 MiB), first of a Client "
                f"(via {r.via})", med, ts, f"{med / med_np:.2f}x np.sum")
            plain["first"] = r.bits

            def later(wait):
                """The call after a Client's first: at once (wait False),
                or once its pool is made (the pool's first use)."""
                with wavedd.Client(url, timeout=600) as c:
                    if wait:   # the pool's way, not the ring's
                        c.ring_threshold = 1 << 62
                    c.reduce("sum", a)
                    if wait and c._pool_next is not None:
                        c._pool_next.result()
                    t0 = time.perf_counter()
                    r = c.reduce("sum", a)
                    dt = time.perf_counter() - t0
                return dt, r
            for wait, what in ((False, "second call of a Client, at once"),
                               (True, "first call through the pool, once "
                                      "made")):
                ts, r = [], None
                for _ in range(REPS):
                    dt, r = later(wait)
                    ts.append(dt)
                med = statistics.median(ts)
                row(f"Python c.reduce(plain 256 MiB), {what} (via {r.via})",
                    med, ts, f"{med / med_np:.2f}x np.sum")
                plain[what] = r.bits
            with wavedd.Client(url, timeout=600) as c:
                c.reduce("sum", a)
                if c._pool_next is not None:
                    c._pool_next.result()
                c.reduce("sum", a)
                med, ts, r = timed(lambda: c.reduce("sum", a))
            row(f"Python c.reduce(plain 256 MiB), repeats (via {r.via})",
                med, ts, f"{med / med_np:.2f}x np.sum")
            plain["repeat"] = r.bits

            def pool_first(c):   # the way before: the pool made first
                c.ring_threshold = 1 << 62
                old, wavedd.client._FILE_FIRST = \
                    wavedd.client._FILE_FIRST, 1 << 62
                try:
                    return c.reduce("sum", a)
                finally:
                    wavedd.client._FILE_FIRST = old
            med, ts, r = timed(first(pool_first))
            row(f"Python c.reduce(plain 256 MiB), first of a Client, the "
                f"pool made for it (via {r.via})", med, ts,
                f"{med / med_np:.2f}x np.sum")
            plain["pool first"] = r.bits

            def message(c):
                c.copy_threshold = 1 << 62
                return c.reduce("sum", a)
            med, ts, r = timed(first(message))
            row(f"Python c.reduce(plain 256 MiB), first of a Client, "
                f"copy_threshold above it (via {r.via})", med, ts,
                f"{med / med_np:.2f}x np.sum")
            plain["message"] = r.bits
            if len(set(plain.values())) != 1:
                bits["plain"] = plain

            med, ts, _ = timed(lambda: np.copyto(np.empty(m.shape, m.dtype),
                                                 m))
            row("NumPy: np.empty + fill from the memmap", med, ts)
            with wavedd.Client(url, timeout=600) as c:
                def fill():
                    e = wavedd.empty(m.shape, m.dtype, client=c)
                    np.copyto(e, m)
                    return e
                med_f, ts, e = timed(fill)
                row("wavedd.empty + fill from the memmap", med_f, ts)
                t0 = time.perf_counter()
                r = c.reduce("sum", e)
                row(f"  its first reduce (via {r.via})",
                    time.perf_counter() - t0, [])
                bits["region"] = r.bits
                del e
        finally:
            proc.terminate()
            proc.wait(60)

    print(f"python-files: {1 << LOG2} float64 rows ({(8 << LOG2) >> 20} "
          f"MiB .npy), cpu0, {REPS} runs each, wavedd.FFI={wavedd.FFI}, "
          f"{os.cpu_count()} CPUs, load average at the start "
          f"{load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, at the end "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| what | median s | each run | ratio |")
    print("|---|---:|---|---|")
    for what, med, ts, note in rows:
        print(f"| {what} | {med:.3f} | {ts} | {note} |")
    if len(set(v for k, v in bits.items() if k != "plain")) != 1 or \
            "plain" in bits:
        print(f"python-files: FAIL: different bits: {bits}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
