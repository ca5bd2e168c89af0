"""files.py - rows that lie in a file, sent to the daemon as file regions
(wave_region_file_fd): the descriptor, not the bytes, as wavectl sends
`--input`.

Two ways in:
  * an array whose memory is a shared mapping of a regular file (np.memmap,
    np.load(..., mmap_mode="r" or "r+"), and their views): mapped_rows()
    finds the mapping in /proc/self/maps (its file offset, device and
    inode), opens the file the memmap names (or the mapping's path) and
    checks that it is the same inode, so a file replaced since the mapping
    is never read in its place.  A private mapping (mmap_mode="c") may hold
    writes the file lacks: it stays memory.
  * a path (Client.reduce_file): path_rows() reads the .npy header itself
    (NumPy's own reader) or takes raw rows of a given dtype.
The daemon dups the descriptor and reads the file at each reduction, in
pieces that it reduces as they arrive (docs/python.md "Files and memory
maps"); FileSet registers each file once per call and drops them all at
its end.
"""
import mmap
import os
import stat
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import _lib as C
from . import errors
from ._lib import lib
from .errors import ArgError, DtypeError

_NPY_MAGIC = b"\x93NUMPY"


class FileRows:
    """Rows of one open file: fd (ours until FileSet closes it), st (its
    fstat), offset and nbytes of the rows, dtype, path (for messages and
    for reading them as memory when no file region can be had)."""

    def __init__(self, fd, st, offset, nbytes, dtype, path):
        self.fd, self.st = fd, st
        self.offset, self.nbytes = offset, nbytes
        self.dtype, self.path = np.dtype(dtype), path

    @property
    def key(self):
        return (self.st.st_dev, self.st.st_ino)

    def array(self):
        """The rows as memory (a read-only memmap), for the other ways."""
        rows = self.nbytes // self.dtype.itemsize
        if rows == 0:
            return np.empty(0, self.dtype)
        with os.fdopen(os.dup(self.fd), "rb") as f:
            return np.memmap(f, self.dtype, "r", self.offset, (rows,))


def _mmap_of(a):
    """(the mmap.mmap under a, the file name its np.memmap gives, or None)
    when a's memory is an mmap of Python's, else None."""
    name, b = None, a
    for _ in range(64):
        if isinstance(b, mmap.mmap):
            return b, name
        if isinstance(b, np.memmap) and name is None:
            name = b.filename
        b = b.obj if isinstance(b, memoryview) else getattr(b, "base", None)
        if b is None:
            return None
    return None


def _mapping(p, n):
    """The /proc/self/maps line holding [p, p + n): (start, perms, file
    offset, (major, minor), inode, path), or None."""
    with open("/proc/self/maps", "rb") as f:
        for line in f:
            parts = line.split(None, 5)
            lo, hi = (int(x, 16) for x in parts[0].split(b"-"))
            if lo <= p < hi:
                if p + n > hi or len(parts) < 5:
                    return None
                maj, mnr = (int(x, 16) for x in parts[3].split(b":"))
                path = os.fsdecode(parts[5].rstrip(b"\n")) \
                    if len(parts) > 5 else ""
                return (lo, parts[1].decode(), int(parts[2], 16),
                        (maj, mnr), int(parts[4]), path)
    return None


def mapped_rows(a, addr):
    """FileRows of the array a (at address addr) when its memory is a
    shared mapping of a regular file that is still that file, at an
    offset that is a multiple of 4 (as the daemon reads files); else
    None."""
    got = _mmap_of(a)
    if got is None or a.nbytes == 0:
        return None
    m = _mapping(addr, a.nbytes)
    if m is None:
        return None
    lo, perms, moff, dev, ino, mpath = m
    if perms[3] != "s" or ino == 0:
        return None   # private (copy-on-write) or anonymous
    path = got[1] or mpath
    if not path or not isinstance(path, (str, bytes, os.PathLike)):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    off = moff + (addr - lo)
    same = st.st_ino == ino and (
        (os.major(st.st_dev), os.minor(st.st_dev)) == dev or
        os.path.realpath(path) == mpath)   # stacked file systems
    if not stat.S_ISREG(st.st_mode) or not same or off % 4 or \
            off + a.nbytes > st.st_size:   # the daemon reads 4-aligned
        os.close(fd)
        return None
    return FileRows(fd, st, off, a.nbytes, a.dtype, os.fsdecode(path))


def memfd_rows(arrays, par_min):
    """FileRows of each array, written one after another into one fresh
    memfd with pwrite (by several threads when at least par_min bytes in
    all): the kernel copies the rows into its pages, with no mapping of
    them here, and the daemon reads them as a file into its staging rings
    (docs/python.md "What each way costs").  Each FileRows holds a dup of
    the descriptor; offsets are multiples of 4 (rows of 4 or 8 bytes)."""
    fd = os.memfd_create("wavedd-rows", os.MFD_CLOEXEC)
    try:
        spans, off = [], 0
        for a in arrays:
            spans.append((memoryview(a.reshape(-1)).cast("B"), off))
            off += a.nbytes
        k = min(os.cpu_count() or 1, 16) if off >= par_min else 1
        step = -(-(-(-off // k)) // 4096) * 4096

        def part(lo):
            hi = min(lo + step, off)
            for mv, at in spans:   # the pieces of [lo, hi) in each array
                a0, a1 = max(lo, at), min(hi, at + len(mv))
                while a0 < a1:
                    a0 += os.pwrite(fd, mv[a0 - at:a1 - at], a0)

        if k == 1:
            part(0)
        else:
            with ThreadPoolExecutor(k) as ex:
                list(ex.map(part, range(0, off, step)))
        st = os.fstat(fd)
        out = []
        try:
            for a, (mv, at) in zip(arrays, spans):
                out.append(FileRows(os.dup(fd), st, at, a.nbytes, a.dtype,
                                    "a memfd of the rows"))
        except BaseException:
            for fr in out:
                os.close(fr.fd)
            raise
        return out
    finally:
        os.close(fd)


def _npy_header(path, fd):
    """(dtype, shape, fortran_order, offset of the rows) of a .npy file."""
    with os.fdopen(os.dup(fd), "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dt = np.lib.format.read_array_header_1_0(f)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dt = np.lib.format.read_array_header_2_0(f)
            else:
                raise ValueError(f"version {version[0]}.{version[1]}")
        except (ValueError, SyntaxError, KeyError, TypeError) as e:
            raise ArgError(f"{path}: not a .npy file NumPy can read: {e}") \
                from None
        return dt, shape, fortran, f.tell()


def path_rows(path, dtype, dtype_of, what):
    """FileRows of the file at path: a .npy file (its header gives the
    dtype; a dtype given must match it) or raw little-endian rows of
    dtype.  dtype_of(dt) raises for a dtype wavedd does not reduce."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)   # OSError as it is
    try:
        st = os.fstat(fd)
        name = os.fsdecode(path)
        if not stat.S_ISREG(st.st_mode):
            raise ArgError(f"{what} {name}: not a regular file; read it "
                           f"yourself (np.fromfile) and call reduce")
        want = None if dtype is None else np.dtype(dtype)
        if os.pread(fd, 6, 0) == _NPY_MAGIC:
            dt, shape, fortran, off = _npy_header(name, fd)
            if want is not None and want != dt:
                raise DtypeError(f"{what} {name}: its header says {dt}, "
                                 f"dtype= says {want}")
            if fortran and len(shape) > 1:
                raise ArgError(f"{what} {name}: a Fortran-ordered array; "
                               f"save np.ascontiguousarray(a) instead")
            nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
            if off + nbytes > st.st_size:
                raise errors.LengthError(
                    f"{what} {name}: the header says {nbytes} bytes of rows, "
                    f"the file has {st.st_size - off} after it")
        else:
            if want is None:
                raise ArgError(f"{what} {name}: not a .npy file; give "
                               f"dtype= for raw rows")
            dt, off, nbytes = want, 0, st.st_size
            if nbytes % dt.itemsize:
                raise errors.LengthError(
                    f"{what} {name}: {nbytes} bytes are not a whole number "
                    f"of {dt.itemsize}-byte rows")
        try:
            dtype_of(dt)
        except DtypeError as e:
            raise DtypeError(f"{what} {name}: {e.message}") from None
        return FileRows(fd, st, off, nbytes, dt, name)
    except BaseException:
        os.close(fd)
        raise


class FileSet:
    """The files of one reduction: each file (by device and inode)
    registered once, and all of them unregistered and closed at the end
    (a context manager)."""

    def __init__(self, conn):
        self.conn = conn
        self.rows = []       # every FileRows added (their fds are ours)
        self.regions = {}    # key -> wave_region *

    def add(self, fr):
        self.rows.append(fr)
        return fr

    def register(self):
        """Register every file not yet registered; RegionError or
        UnsupportedError when the daemon takes no file region."""
        for fr in self.rows:
            if fr.key in self.regions:
                continue
            out = C.out("wave_region *")
            err = errors.new_err()
            with self.conn.lock:
                if self.conn.h is None:
                    raise ArgError("the client is closed")
                rv = lib.wave_region_file_fd(self.conn.h, fr.fd,
                                             fr.st.st_size, b"python-file",
                                             out, err)
            errors.check(rv, err)
            self.regions[fr.key] = out[0]

    def region(self, fr):
        return self.regions[fr.key]

    def close(self):
        regions, self.regions = self.regions, {}
        with self.conn.lock:
            for r in regions.values():
                if self.conn.h is not None:
                    lib.wave_region_unregister(self.conn.h, r, C.NULL)
                lib.wave_region_close(r)
        rows, self.rows = self.rows, []
        for fr in rows:
            os.close(fr.fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
