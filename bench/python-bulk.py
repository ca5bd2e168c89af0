#!/usr/bin/env python3
"""bench/python-bulk.py - issue 24's comparison: 1 GiB of float32 summed
from Python, in one run, against a pinned host->device copy of the same
run.

    bench/python-bulk.py [BUILD_DIR]     (default: build)

It starts wavedd from BUILD_DIR (regions allowed, max_job_rows 2^28) with
the device WAVE_BENCH_DEVICE (default cuda0, backend cuda; cpu0 and vk0,
backend vulkan, are known too) and measures, each from the same host
array of 2^WAVE_BENCH_LOG2 (28) float32 rows, WAVE_BENCH_REPS (5) times,
median wall time of the whole call:

  region    a region-backed array (wavedd.empty, registered, then filled):
            the first reduction (the daemon meets and pins it) and repeats
  numpy     a plain NumPy array: copied into the client's pooled region
            (parallel copy) and reduced there, every time
  torch     torch.from_numpy(a).cuda().sum()            (torch with CUDA)
  pinned    torch from pinned memory: p.cuda(non_blocking=True).sum()
  cupy      cupy.asarray(a).sum()                       (CuPy)

each skipped with a line saying why when absent.  The baseline is a
pinned host->device copy of the 1 GiB (torch's pinned tensor, else
CuPy's pinned buffer); with neither, a host memcpy of it (np.copyto),
said so in the table.  Ratios are speeds: baseline time / its time.
The wavedd rows must give the same bits every time (exit 1 otherwise).
bench/device-run.sh runs it as its step "python".
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
    print("python-bulk: skipped: no NumPy for", sys.executable)
    sys.exit(0)

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
lib = os.path.join(BUILD, "client", "libwaveclient.so.1")
if "WAVEDD_LIBWAVECLIENT" not in os.environ and os.path.exists(lib):
    os.environ["WAVEDD_LIBWAVECLIENT"] = lib
try:
    import wavedd
except ImportError as e:
    print(f"python-bulk: skipped: the wavedd package does not load: {e}")
    sys.exit(0)

LOG2 = int(os.environ.get("WAVE_BENCH_LOG2", "28"))
REPS = int(os.environ.get("WAVE_BENCH_REPS", "5"))
DEVICE = os.environ.get("WAVE_BENCH_DEVICE", "cuda0")
BACKEND = {"cuda": "cuda", "cpu": "cpu", "vk": "vulkan"}[
    DEVICE.rstrip("0123456789")]
ROWS = 1 << LOG2
NBYTES = ROWS * 4


def timed(fn, reps=REPS):
    """(median seconds, first seconds, last value) of reps calls."""
    ts, v = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        v = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), ts[0], v


def start_daemon(tmp):
    sock = os.path.join(tmp, "w.sock")
    cfg = os.path.join(tmp, "bench.yaml")
    idx = "\n    index: 0" if BACKEND != "cpu" else ""
    with open(cfg, "w") as f:
        f.write(f"""listen:
  - ipc://{sock}
log_level: info
allow_client_shm: true
limits:
  max_job_rows: {max(ROWS, 1 << 20)}
packs:
  load: []
devices:
  - name: {DEVICE}
    backend: {BACKEND}{idx}
""")
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
    log.close()
    sys.exit("python-bulk: wavedd did not start: " +
             open(os.path.join(tmp, "wavedd.log")).read()[-2000:])


def main():
    rng = np.random.default_rng(24)
    a = rng.random(ROWS, dtype=np.float32)
    rows, notes = [], []   # (what, median s, note)
    base = None            # (name, seconds)

    torch = cupy = None
    try:
        import torch as _t
        if _t.cuda.is_available():
            torch = _t
        else:
            notes.append("torch: installed, but no CUDA device")
    except ImportError:
        notes.append("torch: not installed (torch, pinned rows skipped)")
    try:
        import cupy as _c
        _c.cuda.runtime.getDeviceCount()
        cupy = _c
    except Exception as e:  # ImportError, or no CUDA driver
        notes.append(f"cupy: skipped ({type(e).__name__}: {e})")

    # the baseline: a pinned host->device copy of the same bytes
    if torch is not None:
        pin = torch.from_numpy(a).pin_memory()
        dev = torch.empty_like(pin, device="cuda")

        def pinned_copy():
            dev.copy_(pin, non_blocking=True)
            torch.cuda.synchronize()
        pinned_copy()
        base = ("torch pinned copy, host->device", timed(pinned_copy)[0])
    elif cupy is not None:
        import cupyx
        pin = cupyx.empty_pinned(a.shape, a.dtype)
        pin[:] = a
        dev = cupy.empty(a.shape, a.dtype)

        def pinned_copy():
            dev.set(pin)
            cupy.cuda.runtime.deviceSynchronize()
        pinned_copy()
        base = ("CuPy pinned copy, host->device", timed(pinned_copy)[0])
    else:
        dst = np.empty_like(a)
        base = ("host memcpy (np.copyto; no torch or CuPy for a pinned "
                "copy)", timed(lambda: np.copyto(dst, a))[0])

    with tempfile.TemporaryDirectory(prefix="wavedd-pybench.") as tmp:
        proc, url = start_daemon(tmp)
        try:
            with wavedd.Client(url, timeout=600) as c:
                bits = set()
                r = wavedd.empty(ROWS, np.float32, client=c)  # registered,
                r[:] = a                                      # then filled
                t0 = time.perf_counter()
                res = c.reduce("sum", r, device=DEVICE)
                first = time.perf_counter() - t0
                bits.add(res.bits)
                med, _, res = timed(lambda: c.reduce("sum", r, device=DEVICE))
                bits.add(res.bits)
                assert res.via == "region", res.via
                rows.append(("wavedd region-backed array, first", first, ""))
                rows.append(("wavedd region-backed array, repeats", med, ""))
                med, first, res = timed(lambda: c.reduce("sum", a,
                                                         device=DEVICE))
                bits.add(res.bits)
                rows.append((f"wavedd plain NumPy array (via {res.via})", med,
                             f"first {first:.4f} s"))
                r = None   # the region goes before the daemon
        finally:
            proc.terminate()
            proc.wait(60)
        if len(bits) != 1:
            print(f"python-bulk: FAIL: wavedd gave different bits: {bits}")
            return 1

    if torch is not None:
        med, first, _ = timed(lambda: float(torch.from_numpy(a).cuda().sum()))
        rows.append(("torch.from_numpy(a).cuda().sum()", med,
                     f"first {first:.4f} s"))
        pin = torch.from_numpy(a).pin_memory()
        med, first, _ = timed(lambda: float(pin.cuda(non_blocking=True).sum()))
        rows.append(("torch pinned: p.cuda(non_blocking=True).sum()", med,
                     f"first {first:.4f} s"))
    if cupy is not None:
        med, first, _ = timed(lambda: float(cupy.asarray(a).sum()))
        rows.append(("cupy.asarray(a).sum()", med, f"first {first:.4f} s"))

    gib = NBYTES / 2**30
    print(f"python-bulk: {ROWS} float32 rows ({gib:g} GiB), device {DEVICE}, "
          f"median of {REPS}; sum bits "
          f"{' '.join('0x%08x' % b for b in sorted(bits)[0])}")
    for n in notes:
        print("note:", n)
    print(f"baseline: {base[0]}: {base[1]:.4f} s, "
          f"{NBYTES / base[1] / 1e9:.2f} GB/s")
    print()
    print("| what | seconds | GB/s | x baseline (speed) | |")
    print("|---|---:|---:|---:|---|")
    print(f"| baseline: {base[0]} | {base[1]:.4f} | "
          f"{NBYTES / base[1] / 1e9:.2f} | 1.00 | |")
    for what, s, note in rows:
        print(f"| {what} | {s:.4f} | {NBYTES / s / 1e9:.2f} | "
              f"{base[1] / s:.2f} | {note} |")
    by = {w: s for w, s, _ in rows}
    reg = by["wavedd region-backed array, repeats"]
    plain = [s for w, s, _ in rows if w.startswith("wavedd plain")][0]
    print()
    if torch is not None:
        print(f"target region repeats >= 0.9x the pinned copy: "
              f"{base[1] / reg:.2f}x")
        tn = by["torch.from_numpy(a).cuda().sum()"]
        print(f"target plain NumPy >= 2x torch.from_numpy(a).cuda().sum(): "
              f"{tn / plain:.2f}x")
    else:
        print("targets: need torch with CUDA (the pinned-copy baseline and "
              "torch.from_numpy) in the same run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
