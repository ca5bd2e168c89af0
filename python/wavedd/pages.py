"""pages.py - the pages under regions and the pool: populate() maps a
fresh region's pages in the kernel, by several threads when big, and
Later makes a value on a thread of its own (the pool made behind a
Client's first big call, client.py _pool_later)."""
import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

_ALIGN = 2 << 20          # steps of whole huge pages
_STEP = 8 << 20           # populate's steps when it may be stopped


class Later:
    """fn() on a thread of its own (a daemon thread: never holds up the
    interpreter's exit); result() waits for its value."""

    def __init__(self, fn):
        self._done = threading.Event()
        self._value = None

        def run():
            try:
                self._value = fn()
            finally:
                self._done.set()

        threading.Thread(target=run, name="wavedd-pool", daemon=True).start()

    def done(self):
        return self._done.is_set()

    def result(self):
        self._done.wait()
        return self._value


_MADV_POPULATE_WRITE = 23   # Linux 5.14
_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


def populate(addr, nbytes, par_min, stop=None):
    """Map every page of a fresh region here now, by several threads when
    big (madvise MADV_POPULATE_WRITE, in the kernel), rather than one
    fault per 4 KiB page as it is filled: a region is a memfd of ordinary
    pages (shmem, which gets no transparent huge pages unless the host
    allows them), where NumPy's own arrays get huge pages; each first
    touch of a 4 KiB page costs a fault, several microseconds in a VM
    (docs/python.md "What each way costs").  A kernel without it: the
    faults as before.  stop: None, or a threading.Event: then one thread
    does it in steps, and returns once stop is set."""
    if nbytes < _ALIGN:
        return
    n = -(-nbytes // 4096) * 4096
    if stop is not None:   # the background pool: one thread, in steps
        for i in range(0, n, _STEP):
            if stop.is_set():
                return
            _libc.madvise(addr + i, min(_STEP, n - i), _MADV_POPULATE_WRITE)
        return
    k = min(os.cpu_count() or 1, 16) if n >= par_min else 1
    step = -(-(-(-n // k)) // _ALIGN) * _ALIGN

    def part(i):
        _libc.madvise(addr + i, min(step, n - i), _MADV_POPULATE_WRITE)

    if k == 1:
        part(0)
        return
    with ThreadPoolExecutor(k) as ex:
        list(ex.map(part, range(0, n, step)))
