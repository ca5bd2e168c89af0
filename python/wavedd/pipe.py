"""pipe.py - one big plain array to a same-host daemon through a pipe: its
pages spliced into the pipe (vmsplice), which the daemon reads as a pipe
region (docs/protocol.md "Pipe regions") into buffers it keeps warm.

Every other way of sending a plain array's rows puts them in memory the
daemon can read: a region, the pool, a memfd, the ring.  The first use
of such memory touches every 4 KiB page of it fresh, here and in the
daemon, and in a VM that costs microseconds a page (docs/performance.md):
a process's first big sum paid several times NumPy's own sum for it.  A
pipe needs none: vmsplice hands the kernel references to the array's own
pages (already touched: NumPy wrote them), and the daemon's readers
read() them straight into the staging rings they made at start-up.  One
copy in all, and it overlaps the device's reduction of the piece before.

The array must stay as it is until the answer comes (the pipe holds its
pages, not a copy): the call waits for the answer, so only another thread
writing the array meanwhile could change what is summed, as with any
region.  Linux only (vmsplice, F_SETPIPE_SZ).
"""
import ctypes
import errno
import fcntl
import os
import threading

from . import _lib as C
from . import errors
from ._lib import lib

PIPE_BYTES = 1 << 20   # the pipe's buffer (an unprivileged process's most
                       # by default, /proc/sys/fs/pipe-max-size)


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


_libc = ctypes.CDLL(None, use_errno=True)
try:
    _vmsplice = _libc.vmsplice
    _vmsplice.argtypes = (ctypes.c_int, ctypes.POINTER(_Iovec),
                          ctypes.c_size_t, ctypes.c_uint)
    _vmsplice.restype = ctypes.c_ssize_t
except AttributeError:   # not Linux's C library
    _vmsplice = None


def available():
    return _vmsplice is not None and hasattr(os, "pipe2")


def _feed(fd, addr, n, a):
    """The n bytes at addr (array a's, which this keeps alive) into pipe
    fd, by reference, then fd closed; stops at an error (EPIPE: the daemon
    dropped its end, the job having failed)."""
    iov = _Iovec()
    off = 0
    try:
        while off < n:
            iov.base = addr + off
            iov.len = n - off
            k = _vmsplice(fd, ctypes.byref(iov), 1, 0)
            if k < 0:
                if ctypes.get_errno() == errno.EINTR:
                    continue
                return
            off += k
    finally:
        os.close(fd)


def reduce(h, a, addr, res, err, reduce_ext):
    """The reduction of one plain array a (at addr) on connection h
    through a pipe region: reduce_ext(region, res, err) asks for it, over
    the region's one extent, into res.  False: this daemon takes no pipe
    regions (it refused the descriptor: an older one), and nothing was
    sent; the job's own errors are raised."""
    rfd, wfd = os.pipe2(os.O_CLOEXEC)
    try:
        try:
            fcntl.fcntl(wfd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass   # a smaller pipe is slower, not wrong
        out = C.out("wave_region *")
        errors.check(lib.wave_region_file_fd(h, rfd, a.nbytes,
                                             b"wavedd-pipe", out, err), err)
    except (errors.RegionError, errors.UnsupportedError):
        os.close(wfd)
        return False
    except BaseException:
        os.close(wfd)
        raise
    finally:
        os.close(rfd)   # the daemon has its own
    rg = out[0]
    t = threading.Thread(target=_feed, args=(wfd, addr, a.nbytes, a),
                         name="wavedd-pipe", daemon=True)
    t.start()
    done = False
    try:
        reduce_ext(rg, res, err)
        done = True
    finally:
        # the daemon drops its end: a writer still waiting ends (EPIPE),
        # unless a job that never ran holds it (a timeout): then the
        # writer ends with that job, on its own
        lib.wave_region_unregister(h, rg, errors.new_err())
        t.join(None if done else 1.0)
        lib.wave_region_close(rg)
    return True
