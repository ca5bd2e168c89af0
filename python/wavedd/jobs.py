"""jobs.py - hash jobs: submit, wait with progress, cancel, list.

A job is submitted attached (unless detach=True): the daemon cancels it when
this client's connection closes.  Job.wait polls with short waits (the
daemon parks each poll up to half a second), so that Ctrl-C is seen between
two polls: it cancels an attached job, as wavectl does, then raises
KeyboardInterrupt.  A detached job is left running.
"""
import sys
import time

from . import errors
from . import _lib as C
from ._lib import lib, text

STATES = {1: "queued", 2: "running", 3: "done", 4: "failed",
          5: "cancelled", 6: "preparing"}

_STEP_MS = 500


class JobInfo:
    """A job's progress: id, state ("queued", "preparing", "running",
    "done", "failed", "cancelled"), done and total (nonces), seconds,
    device, devices (how many it runs on), owner (the submitter's
    principal, e.g. "uid:1000" or "token:NAME"; None from an older
    daemon), error (a wavedd.Error when it
    failed or was cancelled, else None); held (queued or running: the
    job's devices a guard or the rate watchdog holds now, with why, e.g.
    "fk0 throttled: temperature 85.0 C, max_temperature_c 80"; else None);
    while "preparing", waiting (the
    pack, the device preparing it, steps done, steps in all; else
    None)."""

    def __init__(self, ji):
        self.id = int(ji.job_id)
        self.state = STATES.get(ji.state, "?")
        self.done = int(ji.done)
        self.total = int(ji.total)
        self.seconds = float(ji.seconds)
        self.device = text(ji.device)
        self.devices = int(ji.n_devices)
        self.owner = text(ji.owner) or None
        self.held = text(ji.held) or None
        self.waiting = ((text(ji.waiting_pack), text(ji.waiting_device),
                         int(ji.prepare_steps), int(ji.prepare_steps_total))
                        if ji.state == 6 else None)
        self.error = (errors.error(ji.error.code, text(ji.error.message)
                                   or None)
                      if ji.state in (4, 5) and ji.error.code else None)

    @property
    def ended(self):
        return self.state in ("done", "failed", "cancelled")

    def __repr__(self):
        return (f"JobInfo(id={self.id}, state={self.state!r}, "
                f"done={self.done}, total={self.total}, "
                f"device={self.device!r})")


class HashResult:
    """A finished hash job: winners (a list of (nonce, output) pairs with
    output < target, at most max_winners), winner_count (all of them),
    best_nonce, best_output, hashes, seconds, device, fingerprint (FNV-1a-64
    over the segment fingerprints), segment_log2, segment_count, segments
    (the list, when asked for), shares (per device: dicts of device,
    hashes, seconds, faulted)."""

    def __init__(self, r):
        self.fingerprint = int(r.job_fingerprint)
        self.segment_log2 = int(r.segment_log2)
        self.segment_count = int(r.segment_count)
        self.segments = ([int(r.segments[i]) for i in range(r.n_segments)]
                         if r.segments else None)
        self.shares = [{"device": text(r.shares[i].device),
                        "hashes": int(r.shares[i].hashes),
                        "seconds": float(r.shares[i].seconds),
                        "faulted": bool(r.shares[i].faulted)}
                       for i in range(r.n_shares)]
        self.winners = [(int(r.winners[i].nonce), int(r.winners[i].output))
                        for i in range(r.n_winners)]
        self.winner_count = int(r.winner_count)
        self.best_nonce = int(r.best_nonce)
        self.best_output = int(r.best_output)
        self.hashes = int(r.hashes)
        self.seconds = float(r.seconds)
        self.device = text(r.device)

    def __repr__(self):
        return (f"HashResult(best_nonce={self.best_nonce}, "
                f"best_output={self.best_output:#018x}, "
                f"winner_count={self.winner_count}, hashes={self.hashes}, "
                f"device={self.device!r}, "
                f"fingerprint={self.fingerprint:#018x})")


class _Bar:
    """tqdm when it is installed, else one line rewritten on stderr."""

    def __init__(self, job_id):
        self.job_id = job_id
        self.t0 = time.monotonic()
        self.last = 0
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        self.tq = None
        if tqdm is not None:
            self.tq = tqdm(desc=f"job {job_id}", unit="hash",
                           unit_scale=True, file=sys.stderr)

    def update(self, info):
        if self.tq is not None:
            if info.total and self.tq.total != info.total:
                self.tq.total = info.total
            self.tq.update(info.done - self.last)
            self.last = info.done
            return
        dt = time.monotonic() - self.t0
        rate = info.done / dt if dt > 0 else 0.0
        pct = 100.0 * info.done / info.total if info.total else 0.0
        eta = ((info.total - info.done) / rate if rate > 0 else float("nan"))
        sys.stderr.write(f"\rjob {self.job_id}: {info.state} {pct:5.1f}% "
                         f"{info.done}/{info.total} {rate:.3g} hash/s "
                         f"eta {eta:.0f} s   ")
        sys.stderr.flush()

    def close(self):
        if self.tq is not None:
            self.tq.close()
        else:
            sys.stderr.write("\n")
            sys.stderr.flush()


class Job:
    """A hash job of a client: .id, .detached; .status(), .wait(),
    .result(), .cancel()."""

    def __init__(self, client, job_id, detached=False):
        self.client = client
        self.id = int(job_id)
        self.detached = detached
        self._result = None

    def __repr__(self):
        return f"<wavedd.Job {self.id}>"

    def _poll(self, wait_ms):
        info = C.new("wave_job_info")
        res = C.new("wave_hash_result")
        err = errors.new_err()
        errors.check(lib.wave_job_poll(self.client._handle(), self.id,
                                       wait_ms, info, res, err), err)
        ji = JobInfo(info)
        if ji.state == "done":
            try:
                self._result = HashResult(res)
            finally:
                lib.wave_hash_result_free(res)
        return ji

    def status(self):
        """The job's JobInfo now."""
        if self._result is not None:
            return self._done_info
        ji = self._poll(0)
        if ji.state == "done":
            self._done_info = ji
        return ji

    def wait(self, progress=True, timeout=None):
        """Wait for the job to end; its HashResult.  A failed or
        cancelled job raises its error (CancelledError, ...); timeout
        (seconds) passed raises TimedOutError, the job running on.
        progress: a bar (tqdm, else a line on stderr).  Ctrl-C cancels an
        attached job and raises KeyboardInterrupt."""
        if self._result is not None:
            return self._result
        end = None if timeout is None else time.monotonic() + timeout
        bar = _Bar(self.id) if progress else None
        try:
            while True:
                step = _STEP_MS
                if end is not None:
                    left = end - time.monotonic()
                    if left <= 0:
                        raise errors.TimedOutError(
                            f"job {self.id} did not end within {timeout} s")
                    step = max(1, min(step, int(left * 1000)))
                ji = self._poll(step)
                if bar is not None:
                    bar.update(ji)
                if ji.state == "done":
                    self._done_info = ji
                    return self._result
                if ji.ended:
                    raise ji.error or errors.error(
                        20 if ji.state == "cancelled" else 14)
        except KeyboardInterrupt:
            if not self.detached:
                try:
                    self.cancel()
                except errors.Error:
                    pass
            raise
        finally:
            if bar is not None:
                bar.close()

    def result(self):
        """wait(progress=False)."""
        return self.wait(progress=False)

    def cancel(self):
        """Cancel the job; its JobInfo after."""
        info = C.new("wave_job_info")
        err = errors.new_err()
        errors.check(lib.wave_job_cancel(self.client._handle(), self.id, info,
                                         err), err)
        return JobInfo(info)


def submit(client, pack, nonce, count, target, devices, segments, device,
           max_winners, segment_log2, detach, level=(0, 0)):
    keep = []

    def cstr(s):
        b = C.cstr(str(s).encode())
        keep.append(b)
        return b

    q = C.new("wave_hash_request")
    q.pack = cstr(pack)
    q.nonce = int(nonce)
    q.count = int(count)
    q.target = int(target)
    q.max_winners = int(max_winners)
    q.device = cstr(device) if device else C.NULL
    if devices is not None:
        if isinstance(devices, str):
            devices = [devices]
        arr = C.cstrs([cstr(d) for d in devices])
        keep.append(arr)
        q.devices = arr
        q.n_devices = len(devices)
    q.segment_log2 = int(segment_log2)
    q.want_segments = int(bool(segments))
    q.detach = int(bool(detach))
    q.priority, q.deadline_ms = level
    job_id = C.out("uint64_t")
    err = errors.new_err()
    errors.check(lib.wave_hash_submit(client._handle(), q, job_id, err), err)
    return Job(client, job_id[0], detached=bool(detach))


def list_jobs(client):
    out = C.out("wave_job_info *")
    n = C.out("size_t")
    err = errors.new_err()
    errors.check(lib.wave_jobs_get(client._handle(), out, n, err), err)
    try:
        return [JobInfo(out[0][i]) for i in range(n[0])]
    finally:
        lib.wave_jobs_free(out[0])


def find_job(client, job_id):
    for ji in list_jobs(client):
        if ji.id == int(job_id):
            return Job(client, ji.id)
    raise errors.NoJobError(f"no job {job_id} of this client's")
