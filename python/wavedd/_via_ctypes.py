"""_via_ctypes.py - the ctypes backend (the standard library alone): ctypes
Structures, restypes and argtypes made from the tables of _abi.py, and
the helpers the package calls through _lib.py (the same names as
_via_cffi.py's).

The C types map as the x86-64 and aarch64 ABIs lay them out: an enum is
an int (all of wavedd's are small and non-negative), a char * a
c_char_p (bytes in, bytes out), a void * and an opaque handle a
c_void_p (an int).  Only the functions of the table are reachable
through lib: an undeclared one would be called with ctypes' guess of int
arguments, so lib has no fallback to the CDLL's attributes.
"""
import ctypes
import weakref

from . import _abi

NAME = "ctypes"
NULL = None

_SCALARS = {
    "int": ctypes.c_int, "unsigned": ctypes.c_uint,
    "unsigned int": ctypes.c_uint, "char": ctypes.c_char,
    "uint8_t": ctypes.c_uint8, "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64,
    "int64_t": ctypes.c_int64,
    "size_t": ctypes.c_size_t, "double": ctypes.c_double,
}
for _name, _ in _abi.ENUMS:
    _SCALARS[_name] = ctypes.c_int

STRUCTS = {name: type(name, (ctypes.Structure,), {})
           for name, _ in _abi.STRUCTS}


def ctype(d):
    """The ctypes type of an _abi.Decl (None for a void return)."""
    base, depth = d.base, d.depth
    if base in _abi.OPAQUE or base == "void":
        if depth == 0:
            if base == "void":
                return None
            raise TypeError(f"_abi: {d.c()}: an opaque type by value")
        t, depth = ctypes.c_void_p, depth - 1
    elif base == "char" and depth > 0:
        t, depth = ctypes.c_char_p, depth - 1
    elif base in _SCALARS:
        t = _SCALARS[base]
    elif base in STRUCTS:
        t = STRUCTS[base]
    else:
        raise TypeError(f"_abi: {d.c()}: type {base!r} is not in the tables")
    for _ in range(depth):
        t = ctypes.POINTER(t)
    if d.dim is not None:
        t = t * d.dim
    return t


# in table order: a struct held by value is complete before it is used
for _name, _fields in _abi.struct_fields():
    STRUCTS[_name]._fields_ = [(f.name, ctype(f)) for f in _fields]


class _Lib:
    """The table's functions and enum constants, as cffi's lib has them."""

    def __init__(self, dll):
        for name, consts in _abi.ENUMS:
            for c, v in consts:
                setattr(self, c, v)
        for fn, params in _abi.functions():
            f = dll[fn.name]
            f.restype = ctype(fn)
            f.argtypes = [ctype(p) for p in params]
            setattr(self, fn.name, f)


def load(path):
    """The library at path (a file or a soname); OSError when it does not
    load (or lacks a function of the table: AttributeError as OSError)."""
    dll = ctypes.CDLL(path)
    try:
        return _Lib(dll)
    except AttributeError as e:
        raise OSError(f"{path}: {e}") from None


def new(struct):
    """A zeroed struct, passed where the C call takes a pointer to one
    (ctypes passes it by reference)."""
    return STRUCTS[struct]()


def array(struct, n):
    """n zeroed structs (at least one), for a pointer field."""
    return (STRUCTS[struct] * max(int(n), 1))()


def out(ctype_text):
    """An out-parameter of ctype_text ("uint64_t", "wave_status *"):
    o[0]."""
    return (ctype(_abi.decl(ctype_text + " out")) * 1)()


def cstr(b):
    """bytes for a char * struct field (the struct keeps a reference)."""
    return bytes(b)


def cstrs(items):
    """bytes values as a const char *const * field."""
    items = list(items)
    return (ctypes.c_char_p * max(len(items), 1))(*items)


def ptr(address):
    """An address (int) for a void * field."""
    return int(address)


def addr(p):
    """A pointer's address as an int (0 for NULL)."""
    return int(p or 0)


def text(x):
    """A char[N] field, or a const char * that a call returned, as str."""
    if x is None:
        return ""
    return bytes(x).decode("utf-8", "replace")


def memory(address, nbytes, on_free):
    """nbytes of writable memory at address, as a buffer for NumPy;
    on_free() runs when the buffer (and every array on it) is gone."""
    buf = (ctypes.c_ubyte * nbytes).from_address(address)
    weakref.finalize(buf, on_free).atexit = False
    return buf


def layout(struct):
    """(size, [(field, offset, size), ...]) as ctypes lays struct out."""
    s = STRUCTS[struct]
    return ctypes.sizeof(s), [(n, getattr(s, n).offset, getattr(s, n).size)
                              for n, _ in s._fields_]
