"""ring.py - the ring: a small region of a few slots through which a big
plain float sum travels as a stream (wave_reduce_ring), with no fresh
memory per call.

The first reduce of a big plain array on a new Client used to write it
into a fresh memfd (files.memfd_rows) or a fresh pool: every 4 KiB page of
the array's size allocated, zeroed and touched on both sides, several
times the sum itself.  In this project's VM each page costs its first
touch in each mapping (about 6 us a fresh page, 2.5 us a page that exists
but is new to a mapping: docs/performance.md), whatever was populated
before.  So the ring is made once per process and daemon, and kept:
RING_SLOTS (4) slots of SLOT (4 MiB: the stream asks pieces of a quarter
of the ring, client/reduce.c), every page written once, registered once
on a connection of its own to the Client's daemon (same URL and token),
so that both mappings stay warm across Clients.  libwaveclient copies piece k into slot k mod n while the daemon
sums the piece before it in place, as it arrives (an unmasked float sum
of one chunk: daemon/bulk/stream.h): the copy and the sum overlap, and
the answer to a put frees its slot.

What it holds: RING_SLOTS x SLOT (16 MiB) of this process's memory, one
connection and one region (of that size, in the principal's region share)
in the daemon, per daemon URL used, until the process ends or drop().
One call uses a ring at a time; another call meanwhile (another thread,
another Client) takes the other ways (client.py).  A forked child starts
with no ring (nng's threads do not survive fork).
"""
import atexit
import ctypes
import os
import threading

from . import _lib as C
from . import errors
from ._lib import lib
from .pages import populate

RING_SLOTS = 4                # libwaveclient's contexts in flight
SLOT = 4 << 20                # 4 x 4 MiB beat 2 x 16 MiB here, kept and
                              # made in the call: fewer fresh pages, and
                              # a round trip per piece still small beside
                              # its copy (docs/performance.md)

_rings = {}                   # (url, token, token_file) -> _Ring
_lock = threading.Lock()


class _Ring:
    """One daemon's ring: the region (made, every page written) and the
    connection it is registered on (opened on first use, and again after
    a failure dropped it).  lock: one call at a time."""

    def __init__(self, key):
        self.key = key
        self.lock = threading.Lock()
        self.r = None
        self.h = None

    def _make(self):
        err = errors.new_err()
        out = C.out("wave_region *")
        n = RING_SLOTS * SLOT
        errors.check(lib.wave_region_create(out, n, b"wavedd-ring", err),
                     err)
        addr = C.addr(lib.wave_region_data(out[0]))
        # populated in the kernel, then written: in a VM a populated page
        # may still cost the host's fault at its first write
        populate(addr, n, 1 << 62)
        ctypes.memset(addr, 0, n)
        return out[0]

    def open(self):
        """The connection, with the ring registered (under lock)."""
        if self.r is None:
            self.r = self._make()
        if self.h is not None:
            return
        url, token, token_file = self.key
        opts = C.new("wave_client_options")
        keep = [C.cstr(s) if s is not None else C.NULL
                for s in (url, token, token_file)]
        opts.dial = 1
        opts.token, opts.token_file = keep[1], keep[2]
        out = C.out("wave_client *")
        err = errors.new_err()
        errors.check(lib.wave_client_open_with(out, keep[0], opts, err), err)
        if lib.wave_region_register(out[0], self.r, err) != 0:
            lib.wave_client_close(out[0])
            errors.check(-1, err)
        self.h = out[0]

    def reset(self):
        """Drop the connection (the daemon drops the registration); the
        region stays for the next one (under lock)."""
        if self.h is not None:
            lib.wave_client_close(self.h)
            self.h = None

    def free(self):
        self.reset()
        if self.r is not None:
            lib.wave_region_close(self.r)
            self.r = None


def reduce(key, timeout_ms, what, a, dev, res, err):
    """The unmasked sum (what: (wave_dtype, wave_op)) of one big plain
    array a through the ring of key (url, token, token_file: the Client's
    daemon), into res.  True: done; None: the ring is busy (another call)
    or lost (the daemon dropped its registration: a restart), or the job
    has more rows than a stream may (JOBSIZE): the other ways; False: it
    cannot be had (no regions for us, or a daemon before
    StreamPutRequest.from, which reads each piece as 0 bytes: RANGE), so
    the Client takes the other ways from now on.  Other errors are the
    job's, raised as the other ways raise them."""
    with _lock:
        rg = _rings.get(key)
        if rg is None:
            rg = _rings[key] = _Ring(key)
    if not rg.lock.acquire(blocking=False):
        return None
    try:
        try:
            rg.open()
        except (errors.RegionError, errors.UnsupportedError, errors.BusyError):
            rg.reset()
            return False
        lib.wave_client_set_timeout(rg.h, timeout_ms)
        ch = C.array("wave_chunk", 1)
        ch[0].data = C.ptr(a.__array_interface__["data"][0])
        ch[0].bytes = a.nbytes
        q = C.new("wave_reduce_request")
        q.dtype, q.op = what
        q.input, q.n_input = ch, 1
        q.device, (q.priority, q.deadline_ms) = dev
        try:
            errors.check(lib.wave_reduce_ring(rg.h, q, rg.r, res, err), err)
        except errors.RangeError:
            rg.reset()
            return False
        except errors.RegionError:
            rg.reset()
            return None
        except errors.JobSizeError:
            return None   # above limits.max_job_rows: a region's rows
                          # are not bounded by it, the other ways go
        except (errors.TransportError, errors.TimedOutError):
            rg.reset()
            raise
    finally:
        rg.lock.release()
    return True


def ready(key):
    """Whether key's ring is made and registered (a call would use it)."""
    with _lock:
        rg = _rings.get(key)
    return rg is not None and rg.r is not None and rg.h is not None


def prepare(key):
    """Make key's ring on a thread of its own, for the calls after this
    one (which goes another way: the pipe); nothing when it is made or
    being made.  A failure leaves it unmade: the next call makes it."""
    with _lock:
        rg = _rings.get(key)
        if rg is None:
            rg = _rings[key] = _Ring(key)
    if not rg.lock.acquire(blocking=False):
        return

    def make():
        try:
            rg.open()
        except Exception:   # noqa: BLE001 - any failure: made in a call
            rg.reset()
        finally:
            rg.lock.release()
    threading.Thread(target=make, name="wavedd-ring", daemon=True).start()


def drop():
    """Close every ring's connection and free its memory (the next big
    float sum makes one again); rings in use are left alone."""
    with _lock:
        rings = list(_rings.values())
    for rg in rings:
        if rg.lock.acquire(blocking=False):
            try:
                rg.free()
            finally:
                rg.lock.release()


def _forget():
    """In a forked child: the parent's rings are not ours to use."""
    global _lock
    _rings.clear()
    _lock = threading.Lock()


atexit.register(drop)
os.register_at_fork(after_in_child=_forget)
