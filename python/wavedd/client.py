"""client.py - wavedd.Client: reductions of NumPy arrays, region-backed
arrays, status.

How the rows of client.reduce travel (docs/python.md "How arrays travel"):
  * a chunk (or mask chunk) in a region of this client (wavedd.empty,
    client.region) is an extent of the region, no copy; over ipc, one on a
    shared map of a file (np.memmap, np.load(mmap_mode=...)), and every
    file of reduce_file, is an extent of a file region (files.py): the
    daemon gets the descriptor and reads the file itself;
  * when every chunk is such an extent, that is the request;
  * one plain float32/float64 array of ring_threshold (64 MiB) or more
    (and copy_threshold), summed unmasked, over ipc to a daemon that
    allows regions, goes through the ring (ring.py): a stream whose
    pieces are copied into the slots of a small region kept by the
    process, which the daemon sums in place as they arrive
    (wave_reduce_ring); the process's first such sum, before the ring
    is made, goes through a pipe (below) and the ring is made after it;
  * one plain array of pipe_threshold (64 MiB) or more, unmasked, that
    would otherwise need fresh memory made in the call (that first
    float sum; any array while no pool holds it), goes through a pipe
    (pipe.py): its pages spliced into a pipe that the daemon reads as a
    pipe region, no page touched fresh on either side;
  * otherwise, over ipc to a daemon that allows regions, the rest are copied (by
    several threads when big) into one pooled region of this client, made
    on first need, of the size needed, and reused, when they are at least
    copy_threshold bytes or files are among the chunks;
  * except while no pool holds them: rows of _FILE_FIRST (64 MiB) or more
    (but the one array a pipe takes) are then written (pwrite, several
    threads) into a fresh memfd sent as
    a file region, and the pool is made on a thread of its own for the
    calls after (_send_memfd): a fresh pool's every 4 KiB page costs a
    first touch here and in the daemon, a memfd's pages none;
  * otherwise they go as messages (libwaveclient streams big ones), read
    in place from the arrays' memory.
A region is a sealed memfd of libwaveclient (wave_region_*), registered as
soon as it is made, so the daemon can pin it while it is being filled.
The NumPy array's memory is the mapping; when the last array (or view) on
it goes, the region is unregistered and unmapped.  Closing the client ends
the connection, which drops every registration in the daemon; the arrays
stay valid memory of this process until they go.
"""
import os
import threading
import weakref
from fractions import Fraction
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import _lib as C
from . import errors, files, pipe, ring
from .pages import Later as _Later, populate
from ._lib import lib, text
from .errors import ArgError, DtypeError, OpError, RegionError

DTYPES = {
    np.dtype("<u4"): lib.WAVE_U32,
    np.dtype("<i4"): lib.WAVE_S32,
    np.dtype("<f4"): lib.WAVE_F32,
    np.dtype("<u8"): lib.WAVE_U64,
    np.dtype("<i8"): lib.WAVE_S64,
    np.dtype("<f8"): lib.WAVE_F64,
}
_NP = {v: k for k, v in DTYPES.items()}

OPS = ("sum", "min", "max", "extent", "and", "or", "xor", "argmin",
       "argmax", "fsum")
_ARG_OPS = ("argmin", "argmax")

# fsum's exact partial (Result.exact_flags): a selected row was NaN, +inf,
# -inf, other than -0.0 (wave/client.h WAVE_EXACT_*)
EXACT_NAN, EXACT_PINF, EXACT_NINF, EXACT_NOT_NEGZERO = 1, 2, 4, 8
_EXACT_UNIT = {4: 149, 8: 1074}   # the accumulator's unit: 2^-149, 2^-1074

# Bound now: a region's finalizer may run inside a cffi call that holds
# cffi's (non-reentrant) lock, where a first lookup of lib.NAME would wait
# on it for ever.
_region_close = lib.wave_region_close
_region_unregister = lib.wave_region_unregister
_NULL = C.NULL

_PAR_MIN = 64 << 20       # bytes from which a pool copy uses threads
_POOL_ALIGN = 2 << 20     # pool sizes: whole huge pages
_FILE_FIRST = 64 << 20    # plain rows from which a first call goes as a
                          # memfd file while the pool is made (_send_memfd)
_STEP = 8 << 20           # the pool's background steps
_GRACE = 0.05             # seconds before it starts: a Client closed by
                          # then (one call) makes no pool


def _fix(dt):
    """What to call instead, for an unsupported dtype: the narrowest
    supported one that holds every value (float16 -> float32, int16 ->
    int32), the widest for wider ones (float128 -> float64)."""
    w = "32" if dt.itemsize < 4 else "64"
    if dt.kind == "f":
        return f"a.astype(np.float{w})"
    if dt.kind == "i":
        return f"a.astype(np.int{w})"
    if dt.kind in "ub":
        return f"a.astype(np.uint{w})"
    return "a.astype(np.float64), a.astype(np.int64) or a.astype(np.uint64)"


def _dtype_of(dt):
    dt = np.dtype(dt)
    wd = DTYPES.get(dt)
    if wd is None:
        if dt.itemsize in (4, 8) and dt.byteorder == ">":
            fix = "a.astype(a.dtype.newbyteorder('<'))"
        else:
            fix = _fix(dt)
        raise DtypeError(f"dtype {dt} is not one wavedd reduces (uint32, "
                         f"int32, float32, uint64, int64, float64, "
                         f"little-endian); convert it yourself, e.g. {fix} "
                         f"(wavedd never converts silently)")
    return wd


def _as_array(x, what):
    """x as a NumPy array on the same memory (no copy)."""
    if isinstance(x, np.ndarray):
        a = x
    else:
        try:
            a = np.asarray(memoryview(x))
        except TypeError:
            raise ArgError(f"{what}: a {type(x).__name__} is neither a NumPy "
                           f"array nor a buffer") from None
    if not a.flags.c_contiguous:
        raise ArgError(f"{what}: the array is not C-contiguous; pass "
                       f"np.ascontiguousarray(a) (wavedd does not copy "
                       f"silently)")
    return a


def _addr(a):
    return a.__array_interface__["data"][0]


def _op_of(op):
    wop = lib.wave_op_parse(op.encode()) if isinstance(op, str) else 0
    if wop == lib.WAVE_OP_NONE:
        raise OpError(f"op {op!r}: one of {', '.join(OPS)}")
    return wop


def _list(mask):
    """A mask argument as a list: None, one, or a list or tuple of them."""
    if mask is None:
        return []
    return list(mask) if isinstance(mask, (list, tuple)) else [mask]


class Result:
    """A reduction's answer.  value: a NumPy scalar of the dtype (a pair
    (min, max) for extent); bits: the raw results as unsigned integers of
    the dtype's width, 32 or 64 bits (a tuple); index: for argmin/argmax
    the row of the value, counted from 0 over all the chunks (-1 when no
    row was selected, or no float was finite), None for the other ops;
    count: rows selected; rows: rows in the input; device; seconds (on
    the device); finite (float min/max/extent: True when a selected row is
    finite, False when none is, None when not said); exact (fsum only,
    else None): the exact sum of the selected finite rows, a
    fractions.Fraction (the daemon's exact partial, docs/protocol.md "The
    exact sum"; value is it rounded once), and exact_flags (fsum: the
    EXACT_* bits of the selected rows, else None); via: "region", "file"
    (a file region: a file, or big plain rows in a memfd), "pool",
    "pipe" (one big plain array through a pipe, pipe.py), "ring" (a big
    plain float sum through the process's ring, ring.py) or "message",
    how the rows travelled."""

    def __init__(self, r, via):
        dt = _NP[r.dtype]
        n = min(r.n_values, 2)
        u = np.uint32 if dt.itemsize == 4 else np.uint64
        mask = (1 << (8 * dt.itemsize)) - 1
        self.bits = tuple(int(r.bits[i]) & mask for i in range(n))
        vals = np.array(self.bits, dtype=u).view(dt)
        self.value = (vals[0], vals[1]) if n == 2 else vals[0]
        self.dtype = dt
        self.op = text(lib.wave_op_name(r.op))
        self.index = int(r.index) if self.op in _ARG_OPS else None
        self.count = int(r.count)
        self.rows = int(r.rows)
        self.device = text(r.device)
        self.seconds = float(r.seconds)
        self.finite = {1: True, 2: False}.get(r.finite)
        self.exact = self.exact_flags = None
        if self.op == "fsum":
            x = bytes(int(r.exact[i]) for i in range(int(r.exact_bytes)))
            self.exact = Fraction(int.from_bytes(x, "little", signed=True),
                                  1 << _EXACT_UNIT[dt.itemsize])
            self.exact_flags = int(r.exact_flags)
        self.via = via

    def __repr__(self):
        ix = "" if self.index is None else f"index={self.index}, "
        return (f"Result(op={self.op!r}, value={self.value!r}, {ix}"
                f"bits={tuple(hex(b) for b in self.bits)}, "
                f"count={self.count}, rows={self.rows}, "
                f"device={self.device!r}, seconds={self.seconds:.6f})")


class _Conn:
    """The wave_client handle, shared by the Client and its regions."""

    def __init__(self, handle):
        self.h = handle
        self.lock = threading.RLock()  # a finalizer may run inside
        self.regions = {}  # id(_Region) -> _Region, registered here

    def close(self):
        with self.lock:
            if self.h is None:
                return
            h, self.h = self.h, None
            for rg in list(self.regions.values()):
                rg.conn = None   # the daemon drops them with the connection
            self.regions.clear()
            lib.wave_client_close(h)


class _Region:
    """One wave_region, registered with conn; freed by its finalizer."""

    def __init__(self, conn, nbytes, name, stop=None):
        err = errors.new_err()
        out = C.out("wave_region *")
        errors.check(lib.wave_region_create(out, nbytes, name.encode(), err),
                     err)
        self.r = out[0]
        self.nbytes = nbytes
        self.addr = C.addr(lib.wave_region_data(self.r))
        populate(self.addr, nbytes, _PAR_MIN, stop)
        if stop is not None and stop.is_set():
            lib.wave_region_close(self.r)
            raise ArgError("the client is closed")
        self.conn = None
        with conn.lock:
            rv = (lib.wave_region_register(conn.h, self.r, err)
                  if conn.h is not None else -1)
            if rv == 0:
                self.conn = conn
                conn.regions[id(self)] = self
        if rv != 0:
            lib.wave_region_close(self.r)
            self.r = None
            if rv == -1:
                raise ArgError("the client is closed")
            errors.check(rv, err)

    def release(self):
        conn, self.conn = self.conn, None
        if conn is not None:
            with conn.lock:
                if conn.h is not None and conn.regions.pop(id(self), None):
                    _region_unregister(conn.h, self.r, _NULL)
        if self.r is not None:
            _region_close(self.r)
            self.r = None

    def array(self, shape, dtype):
        """A NumPy array on the whole mapping; the region goes with it."""
        buf = C.memory(self.addr, self.nbytes, self.release)
        a = np.frombuffer(buf, dtype=dtype)
        return a.reshape(shape)


class Client:
    """A connection to wavedd.

    url: None means $WAVE_URL, then the user's own daemon
    ($XDG_RUNTIME_DIR/wavedd/wavedd.sock, when not root and it exists),
    then ipc:///run/wavedd/wavedd.sock, as wavectl.  token / token_file:
    the bearer token, or a file holding it (mode 0600); None:
    $WAVE_TOKEN_FILE, else none.  timeout: seconds per call (None: 30).
    The connection is made here: no daemon raises TransportError at once.
    A context manager: `with wavedd.Client() as c:` closes it at the end.

    copy_threshold: plain arrays of at least this many bytes are copied
    into a pooled region (over ipc, when the daemon allows regions);
    smaller ones go as messages.  The first 64 MiB or more of them, while
    no pool holds them, go as a memfd file instead, and the pool is made
    in the background for the calls after.

    pipe_threshold: one plain array of at least this many bytes (and
    copy_threshold), with no mask, that would need fresh memory made in
    the call (no pool holds it; a float sum before the ring is made) goes
    through a pipe instead (pipe.py: the daemon reads the array's own
    pages).

    ring_threshold: one plain float32 or float64 array of at least this
    many bytes (and copy_threshold), summed with no mask, goes through the
    process's ring instead (ring.py: four slots of 4 MiB, kept, through
    which the daemon sums the pieces as they arrive), once made.
    """

    copy_threshold = 1 << 20
    pipe_threshold = 64 << 20
    ring_threshold = 64 << 20

    def __init__(self, url=None, token=None, token_file=None, timeout=None):
        opts = C.new("wave_client_options")
        keep = []

        def cstr(s):
            if s is None:
                return C.NULL
            b = C.cstr(os.fsencode(s))
            keep.append(b)
            return b

        opts.dial = 1
        opts.token = cstr(token)
        opts.token_file = cstr(token_file)
        if timeout is not None:
            ms = int(round(float(timeout) * 1000))
            if ms <= 0:
                raise ArgError(f"timeout {timeout!r}: give a number of "
                               f"seconds above 0")
            opts.timeout_ms = ms
        out = C.out("wave_client *")
        err = errors.new_err()
        errors.check(lib.wave_client_open_with(out, cstr(url), opts, err),
                     err)
        self._conn = _Conn(out[0])
        self._final = weakref.finalize(self, self._conn.close)
        # the ring's key (ring.py): this daemon, as this Client reaches it
        self._ring_key = (self.url.encode(),
                          None if token is None else os.fsencode(token),
                          None if token_file is None
                          else os.fsencode(token_file))
        self._ring_ok = True     # False: no ring from this daemon
        self._pipe_ok = pipe.available()  # False: no pipes (this daemon)
        self._timeout_ms = opts.timeout_ms or 30000
        self._pool = None
        self._pool_next = None   # a _Later making the pool
        self._pool_stop = threading.Event()
        self._pool_lock = threading.Lock()
        self._regions_ok = self.url.startswith("ipc://")

    # ---- connection ----------------------------------------------------
    @property
    def url(self):
        return text(lib.wave_client_url(self._handle()))

    def _handle(self):
        h = self._conn.h
        if h is None:
            raise ArgError("the client is closed")
        return h

    def close(self):
        """End the connection; the daemon drops this client's regions."""
        self._pool_stop.set()   # a pool being made is dropped, unused
        with self._pool_lock:
            self._pool = None
            self._pool_next = None
        self._conn.close()

    @property
    def closed(self):
        return self._conn.h is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self.closed else self.url
        return f"<wavedd.Client {state}>"

    # ---- regions ---------------------------------------------------------
    def region(self, nbytes):
        """A uint8 array of nbytes on a fresh region registered with the
        daemon (view it as you need: .view(np.float32))."""
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise ArgError(f"region of {nbytes} bytes: give at least 1")
        return _Region(self._conn, nbytes, "python").array((nbytes,),
                                                           np.uint8)

    def empty(self, shape, dtype=np.float32):
        """As wavedd.empty(shape, dtype, client=self)."""
        dt = np.dtype(dtype)
        _dtype_of(dt)
        shape = (int(shape),) if np.isscalar(shape) else tuple(shape)
        n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        if n <= 0:
            raise ArgError(f"shape {shape}: a region holds at least one row")
        return _Region(self._conn, n, "python").array(shape, dt)

    def regions(self):
        """How many regions this client has registered now (the pool
        included)."""
        return len(self._conn.regions)

    def _find(self, a):
        """(region, offset) when a's memory lies in a region of ours."""
        p, n = _addr(a), a.nbytes
        for rg in list(self._conn.regions.values()):
            if rg.addr <= p and p + n <= rg.addr + rg.nbytes:
                return rg, p - rg.addr
        return None

    def _pool_take(self):
        """The pool made behind a memfd call, once made, becomes the pool
        when it is bigger (under _pool_lock)."""
        nxt = self._pool_next
        if nxt is not None and nxt.done():
            self._pool_next = None
            got = nxt.result()
            if got is not None and (self._pool is None or
                                    got[0].nbytes > self._pool[0].nbytes):
                self._pool = got

    def _pool_get(self, nbytes):
        """The pooled region, at least nbytes (under _pool_lock)."""
        self._pool_take()
        if self._pool is not None and self._pool[0].nbytes >= nbytes:
            return self._pool
        self._pool = None   # the old one goes with its array
        size = -(-nbytes // _POOL_ALIGN) * _POOL_ALIGN
        rg = _Region(self._conn, size, "python-pool")
        self._pool = (rg, rg.array((size,), np.uint8))
        return self._pool

    def _send_pipe(self, h, wdt, wop, a, dev, res, err):
        """One plain array through a pipe (pipe.py): the Result, or None
        when the daemon takes no pipes (nor will: the other ways from
        now on)."""
        def ext(rg, res, err):
            self._reduce_ext(h, wdt, wop, [a], [(rg, 0)], 1, False, dev,
                             res, err)
        if pipe.reduce(h, a, _addr(a), res, err, ext):
            return Result(res, "pipe")
        self._pipe_ok = False
        return None

    def _send_memfd(self, h, wdt, wop, every, found, n_in, has_mask, dev,
                    res, err, fs, plain, piped):
        """Big plain rows that no pool holds yet (a Client's first, and
        those while the pool is being made): one array through a pipe
        (piped: pipe.py), else as a file region of a fresh memfd written
        here (files.memfd_rows); the pool of that size is then made in
        the background for the calls after (none waits for it).  Returns
        the Result, or None when the pool's way is the one (small rows, a
        pool that holds them, no file regions)."""
        with self._pool_lock:
            self._pool_take()
            if plain < _FILE_FIRST or (self._pool is not None and
                                       self._pool[0].nbytes >= plain):
                return None
        if piped:
            r = self._send_pipe(h, wdt, wop, every[0], dev, res, err)
            if r is not None:
                self._pool_later(plain)
                return r
        idx = [i for i, f in enumerate(found) if f is None]
        rows = files.memfd_rows([every[i] for i in idx], _PAR_MIN)
        for fr in rows:
            fs.add(fr)
        try:
            fs.register()
        except (RegionError, errors.UnsupportedError):
            return None   # the rows go through the pool after all
        every = list(every)
        found = list(found)
        for i, fr in zip(idx, rows):
            every[i], found[i] = fr, (fs.region(fr), fr.offset)
        self._reduce_ext(h, wdt, wop, every, found, n_in, has_mask, dev,
                         res, err)
        self._pool_later(plain)
        return Result(res, "file")

    def _pool_later(self, nbytes):
        """Make the pool of nbytes on a thread of its own: made, populated
        and each page first written there, not in a later call's copy,
        from _GRACE after the call that asked for it (a Client closed by
        then makes none).  Big rows go as memfds until it is made; no call
        waits for it (small rows that need a pool meanwhile get one of
        their size, which a bigger pool made here then replaces).  close()
        does not wait either: it stops between steps, and its region,
        registered under the connection's lock, is refused by a closed
        connection or dropped with it."""
        size = -(-nbytes // _POOL_ALIGN) * _POOL_ALIGN
        stop = self._pool_stop

        def build():
            if stop.wait(_GRACE):
                return None   # closed at once: a one-call Client
            try:
                rg = _Region(self._conn, size, "python-pool", stop)
                buf = rg.array((size,), np.uint8)
                for i in range(0, size, _STEP):
                    if stop.is_set():
                        return None
                    buf[i:i + _STEP] = 0
                return rg, buf
            except errors.Error:
                return None   # the next call makes it as before

        with self._pool_lock:
            if self._pool_next is None and not stop.is_set():
                self._pool_next = _Later(build)

    # ---- reductions ----------------------------------------------------
    def reduce(self, op, *chunks, mask=None, device=None, priority=None,
               deadline=None):
        """Reduce the rows of chunks (in order) with op: "sum", "min",
        "max", "extent", "and", "or", "xor", "argmin", "argmax" (the value
        and its first row: Result.index), "fsum" (float32 and float64: the
        float nearest the exact sum, the same bits for any chunking, order
        or device; Result.exact holds the exact sum).  The chunks are arrays of one
        dtype: uint32, int32, float32, uint64, int64 or float64,
        little-endian (never converted).  mask: None, or an array (or
        a list of arrays) of uint32 rows, one per input row, nonzero
        selecting it.  device: a device name, or None for the daemon's
        pick.  priority: "high", "normal" (None: the default) or "low"
        (high only where the daemon allows it, else PermError).
        deadline: seconds the job may wait before it starts (None: the
        daemon's default); past it it never runs: DeadlineError.  Returns
        a Result."""
        wop = _op_of(op)
        if not chunks:
            raise ArgError("reduce: give at least one chunk")
        ins = [_as_array(c, f"chunk {i}") for i, c in enumerate(chunks)]
        masks = [_as_array(m, f"mask {i}") for i, m in enumerate(_list(mask))]
        return self._reduce(wop, ins, masks, mask is not None,
                            (device, priority, deadline))

    def reduce_file(self, op, *paths, mask=None, dtype=None, device=None,
                    priority=None, deadline=None):
        """Reduce the rows of files, in order, as reduce does arrays: each
        a .npy file (the header read here gives the dtype and where the
        rows start; dtype=, when given, must match it) or raw
        little-endian rows of dtype=.  Over ipc the daemon gets each file
        as a descriptor and reads it itself (Result.via "file"); otherwise
        the rows are read here as a memory map.  mask: None, or a path or
        array (or a list of them) of uint32 rows.  priority, deadline: as
        reduce's."""
        wop = _op_of(op)
        if not paths:
            raise ArgError("reduce_file: give at least one path")
        with files.FileSet(self._conn) as fs:
            ins = [fs.add(files.path_rows(p, dtype, _dtype_of, f"input {i}"))
                   for i, p in enumerate(paths)]
            masks = []
            for i, m in enumerate(_list(mask)):
                if isinstance(m, (str, bytes, os.PathLike)):
                    m = fs.add(files.path_rows(m, np.uint32, _dtype_of,
                                               f"mask {i}"))
                else:
                    m = _as_array(m, f"mask {i}")
                masks.append(m)
            return self._reduce(wop, ins, masks, mask is not None,
                                (device, priority, deadline), fs)

    def _reduce(self, wop, ins, masks, has_mask, device, fs=None):
        """ins and masks: arrays or files.FileRows (of fs)."""
        wdt = _dtype_of(ins[0].dtype)
        for i, a in enumerate(ins):
            if a.dtype != ins[0].dtype:
                raise DtypeError(f"chunk {i} is {a.dtype}, chunk 0 "
                                 f"{ins[0].dtype}: give one dtype")
        for i, m in enumerate(masks):
            if m.dtype != np.dtype("<u4"):
                raise DtypeError(f"mask {i} is {m.dtype}: a mask holds uint32 "
                                 f"rows, e.g. m.astype(np.uint32)")
        if fs is None:
            with files.FileSet(self._conn) as fs:
                return self._send(wop, wdt, ins, masks, has_mask, device, fs)
        return self._send(wop, wdt, ins, masks, has_mask, device, fs)

    def _send(self, wop, wdt, ins, masks, has_mask, where, fs):
        """where: (device, priority, deadline) as reduce takes them."""
        h = self._handle()
        device, priority, deadline = where
        lv = level_of(priority, deadline)
        dev = (C.cstr(device.encode()) if device else C.NULL, lv)
        res = C.new("wave_reduce_result")
        err = errors.new_err()
        every = ins + masks
        # where each lies: (wave_region *, offset), or None (memory of ours)
        found = [None] * len(every)
        for i, a in enumerate(every):
            if isinstance(a, np.ndarray):
                rg = self._find(a)
                found[i] = (rg[0].r, rg[1]) if rg else None
                if rg is None and self._regions_ok:
                    fr = files.mapped_rows(a, _addr(a))
                    if fr is not None:
                        every[i] = fs.add(fr)
        if self._regions_ok and any(isinstance(a, files.FileRows)
                                    for a in every):
            try:
                fs.register()
            except (RegionError, errors.UnsupportedError):
                pass   # no file regions: the rows go as memory
        for i, a in enumerate(every):
            if isinstance(a, files.FileRows):
                if a.key in fs.regions:
                    found[i] = (fs.region(a), a.offset)
                else:
                    every[i] = a.array()
        via = "file" if fs.regions else "region"
        plain = sum(a.nbytes for a, f in zip(every, found) if f is None)
        if all(f is not None for f in found):
            self._reduce_ext(h, wdt, wop, every, found, len(ins), has_mask,
                             dev, res, err)
            return Result(res, via)
        # one big plain array (pipe: the call would otherwise make fresh
        # memory: the ring, a memfd, the pool)
        one = (self._regions_ok and len(every) == 1 and not has_mask and
               isinstance(every[0], np.ndarray))
        piped = (one and self._pipe_ok and
                 plain >= max(self.copy_threshold, self.pipe_threshold))
        # one big plain float array, summed: through the ring, once made
        # (a process's first such sum goes by pipe; the ring is made after)
        if (one and self._ring_ok and wop == lib.WAVE_SUM and
                wdt in (lib.WAVE_F32, lib.WAVE_F64) and
                plain >= max(self.copy_threshold, self.ring_threshold)):
            if piped and not ring.ready(self._ring_key):
                r = self._send_pipe(h, wdt, wop, every[0], dev, res, err)
                if r is not None:
                    ring.prepare(self._ring_key)   # after: 2 CPUs are few
                    return r
            ok = ring.reduce(self._ring_key, self._timeout_ms, (wdt, wop),
                             every[0], dev, res, err)
            if ok is not None:
                if ok:
                    return Result(res, "ring")
                self._ring_ok = False   # the other ways from now on
        # extents and memory in one request: the memory goes to the pool,
        # or, the first time it would have to be made this big, to a memfd
        if self._regions_ok and (plain >= self.copy_threshold or
                                 fs.regions):
            r = self._send_memfd(h, wdt, wop, every, found, len(ins),
                                 has_mask, dev, res, err, fs, plain,
                                 piped)
            if r is not None:
                return r
            with self._pool_lock:
                try:
                    pool = self._pool_get(plain)
                except errors.Error as e:
                    if not isinstance(e, (RegionError,
                                          errors.UnsupportedError)):
                        raise
                    self._regions_ok = False  # the daemon takes none
                    pool = None
                if pool is not None:
                    rg, buf = pool
                    off = 0
                    for i, (a, f) in enumerate(zip(every, found)):
                        if f is None:
                            _copy(buf[off:off + a.nbytes], a)
                            found[i] = (rg.r, off)
                            off += a.nbytes
                    self._reduce_ext(h, wdt, wop, every, found, len(ins),
                                     has_mask, dev, res, err)
                    return Result(res, "pool")
        # every array stays referenced (every) while the call reads it
        every = [a.array() if isinstance(a, files.FileRows) else a
                 for a in every]
        ch, mk = C.array("wave_chunk", len(ins)), C.array("wave_chunk",
                                                         len(masks))
        for i, a in enumerate(every):
            c = ch[i] if i < len(ins) else mk[i - len(ins)]
            c.data = C.ptr(_addr(a))
            c.bytes = a.nbytes
        q = C.new("wave_reduce_request")
        q.dtype, q.op = wdt, wop
        q.input, q.n_input = ch, len(ins)
        q.mask, q.n_mask = mk, len(masks)
        q.has_mask = int(has_mask)
        q.device, (q.priority, q.deadline_ms) = dev
        errors.check(lib.wave_reduce(h, q, res, err), err)
        return Result(res, "message")

    @staticmethod
    def _reduce_ext(h, wdt, wop, every, found, n_in, has_mask, dev, res,
                    err):
        ex = C.array("wave_extent", n_in)
        mx = C.array("wave_extent", len(every) - n_in)
        for i, (a, (r, off)) in enumerate(zip(every, found)):
            e = ex[i] if i < n_in else mx[i - n_in]
            e.region = r
            e.offset = off
            e.bytes = a.nbytes
        q = C.new("wave_region_reduce")
        q.dtype, q.op = wdt, wop
        q.input, q.n_input = ex, n_in
        q.mask, q.n_mask = mx, len(every) - n_in
        q.has_mask = int(has_mask)
        q.device, (q.priority, q.deadline_ms) = dev
        errors.check(lib.wave_reduce_region(h, q, res, err), err)

    # ---- status ----------------------------------------------------------
    def status(self):
        """The daemon's status: a dict (version, ready, uptime_ms,
        jobs_served, jobs_failed, listen, listen_connections (the
        connections open on each listen URL now; None from a daemon that
        does not say), devices: a list of dicts (each with hashes, the
        nonces hashed there since the daemon started, and hash_rate, their
        rate over its last 10 s; None from a daemon that does not say),
        shares: the asker's share of regions, streams, file-region
        descriptors and descriptor side connections, root's over ipc
        every principal's, a list of dicts;
        fd_conns, fd_limit: the side connections open, every uid's, and
        the most on one side socket)."""
        out = C.out("wave_status *")
        err = errors.new_err()
        errors.check(lib.wave_status_get(self._handle(), out, err), err)
        s = out[0][0]
        try:
            devs = []
            for i in range(s.n_devices):
                d = s.devices[i]
                devs.append({
                    "name": text(d.name), "backend": text(d.backend),
                    "description": text(d.description),
                    "queue_depth": d.queue_depth,
                    "queue_capacity": d.queue_capacity,
                    "jobs_done": d.jobs_done, "jobs_failed": d.jobs_failed,
                    "jobs_cancelled": d.jobs_cancelled,
                    "busy_ms": d.busy_ms,
                    "faulted": bool(d.faulted), "running": bool(d.running),
                    "fault": text(d.fault),
                    "guard": text(d.guard) or "off",
                    "guard_reason": text(d.guard_reason),
                    "watchdog_restarts": d.watchdog_restarts,
                    "hashes": (s.device_hashes[i] if s.device_hashes
                               else None),
                    "hash_rate": (s.device_hash_rate[i]
                                  if s.device_hash_rate else None),
                    "packs": {text(d.packs[j].pack): text(d.packs[j].state)
                              for j in range(d.n_packs)},
                })
            return {
                "version": text(s.version), "ready": bool(s.ready),
                "uptime_ms": s.uptime_ms, "jobs_served": s.jobs_served,
                "jobs_failed": s.jobs_failed,
                "jobs_cancelled": s.jobs_cancelled, "instance": s.instance,
                "listen": [text(s.listen[i]) for i in range(s.n_listen)],
                "listen_connections": (
                    [s.listen_connections[i] for i in range(s.n_listen)]
                    if s.listen_connections else None),
                "devices": devs,
                "fd_conns": s.fd_conns, "fd_limit": s.fd_limit,
                "shares": [{
                    "principal": text(h.principal),
                    "region_bytes": h.region_bytes,
                    "region_limit": h.region_limit,
                    "stream_bytes": h.stream_bytes,
                    "stream_limit": h.stream_limit,
                    "fd_conns": h.fd_conns, "fd_limit": h.fd_limit,
                    "file_fds": h.file_fds,
                    "file_fd_limit": h.file_fd_limit,
                } for h in (s.shares[i] for i in range(s.n_shares))],
            }
        finally:
            lib.wave_status_free(out[0])

    # ---- hash jobs (jobs.py) -------------------------------------------
    def hash(self, pack, nonce, count, target=0, devices=None,
             segments=False, device=None, max_winners=16, segment_log2=0,
             detach=False, priority=None, deadline=None):
        """Submit a hash job; returns a wavedd.Job (see jobs.py).
        priority, deadline: as reduce's (the deadline is on its first
        piece)."""
        from .jobs import submit
        return submit(self, pack, nonce, count, target, devices, segments,
                      device, max_winners, segment_log2, detach,
                      level_of(priority, deadline))

    def jobs(self):
        """The hash jobs the daemon knows of ours, as JobInfo, in submit
        order."""
        from .jobs import list_jobs
        return list_jobs(self)

    def job(self, job_id):
        """The Job of that id (NoJobError when the daemon knows none)."""
        from .jobs import find_job
        return find_job(self, job_id)


def _copy(dst, a):
    """Copy a's bytes into dst (uint8), by several threads when big: one
    thread's memcpy is far from what the memory can do."""
    src = a.reshape(-1).view(np.uint8)
    n = src.nbytes
    if n < _PAR_MIN:
        np.copyto(dst, src)
        return
    k = min(os.cpu_count() or 1, 16)
    step = -(-n // k)
    step = -(-step // 4096) * 4096

    def part(i):
        np.copyto(dst[i:i + step], src[i:i + step])

    with ThreadPoolExecutor(k) as ex:
        list(ex.map(part, range(0, n, step)))


_LEVELS = {"normal": 0, "high": 1, "low": 2}


def level_of(priority, deadline):
    """(wave_priority, deadline_ms) of reduce's priority= and deadline=."""
    if priority is None:
        p = 0
    elif priority in _LEVELS:
        p = _LEVELS[priority]
    else:
        raise ArgError(f"priority {priority!r}: give 'high', 'normal' or "
                       f"'low'")
    ms = 0
    if deadline is not None:
        try:
            ms = int(round(float(deadline) * 1000))
        except (TypeError, ValueError):
            ms = -1
        if not 1 <= ms <= 86400000:
            raise ArgError(f"deadline {deadline!r}: give seconds, 0.001 to "
                           f"86400")
    return p, ms


def empty(shape, dtype=np.float32, client=None):
    """A NumPy array of shape and dtype on a region registered with
    client's daemon (registered before you fill it).  Its memory starts
    zeroed.  client.reduce(op, arr) then sends extents, not bytes."""
    if client is None:
        raise ArgError("wavedd.empty: give client=, the wavedd.Client whose "
                       "daemon the region is registered with")
    return client.empty(shape, dtype)
