"""_via_cffi.py - the cffi backend (ABI mode: nothing compiled): cffi's cdef
text made from the tables of _abi.py, and the few helpers the package
calls through _lib.py (the same names as _via_ctypes.py's)."""
import cffi

from . import _abi

NAME = "cffi"


def cdef():
    """The tables of _abi.py as cffi's cdef text."""
    out = []
    for name, consts in _abi.ENUMS:
        body = ", ".join(f"{c} = {v}" for c, v in consts)
        out.append(f"typedef enum {name} {{ {body} }} {name};")
    for name in _abi.OPAQUE:
        out.append(f"typedef struct {name} {name};")
    for name, fields in _abi.struct_fields():
        body = " ".join(d.c() + ";" for d in fields)
        out.append(f"typedef struct {name} {{ {body} }} {name};")
    for fn, params in _abi.functions():
        out.append(f"{fn.c()}({', '.join(p.c() for p in params) or 'void'});")
    return "\n".join(out) + "\n"


ffi = cffi.FFI()
ffi.cdef(cdef())
NULL = ffi.NULL


def load(path):
    """The library at path (a file or a soname); OSError when it does not
    load."""
    return ffi.dlopen(path)


def new(struct):
    """A zeroed struct, passed where the C call takes a pointer to one."""
    return ffi.new(struct + " *")


def array(struct, n):
    """n zeroed structs (at least one), for a pointer field."""
    return ffi.new(struct + "[]", max(int(n), 1))


def out(ctype):
    """An out-parameter of ctype ("uint64_t", "wave_status *"): o[0]."""
    return ffi.new(ctype + "[1]")


def cstr(b):
    """bytes as a char * for a struct field (keep it while the call
    runs)."""
    return ffi.new("char[]", b)


def cstrs(items):
    """char * values (from cstr) as a const char *const * field."""
    return ffi.new("char *[]", list(items))


def ptr(address):
    """An address (int) for a void * field."""
    return ffi.cast("void *", address)


def addr(p):
    """A pointer's address as an int (0 for NULL)."""
    return int(ffi.cast("uintptr_t", p))


def text(x):
    """A char[N] field, or a const char * that a call returned, as str."""
    if isinstance(x, bytes):
        return x.decode("utf-8", "replace")
    if x == ffi.NULL:
        return ""
    return ffi.string(x).decode("utf-8", "replace")


def memory(address, nbytes, on_free):
    """nbytes of writable memory at address, as a buffer for NumPy;
    on_free() runs when the buffer (and every array on it) is gone."""
    data = ffi.gc(ffi.cast("char *", address), lambda _: on_free())
    return ffi.buffer(data, nbytes)


def layout(struct):
    """(size, [(field, offset, size), ...]) as cffi lays struct out."""
    t = ffi.typeof(struct)
    return ffi.sizeof(t), [(n, f.offset, ffi.sizeof(f.type))
                           for n, f in t.fields]
