"""_lib.py - libwaveclient, through cffi or ctypes.

The C declarations are written once, in _abi.py; _via_cffi.py and
_via_ctypes.py build their backend from them, and this module picks one:
$WAVEDD_FFI=cffi or ctypes forces it; unset (or empty), cffi when it
imports, else ctypes, so the package runs on the standard library and
NumPy alone.  FFI names the one in use.  Nothing of the wire protocol is
here: every request is made by the library.

The library: $WAVEDD_LIBWAVECLIENT (a path, any soname) when set, else
through the dynamic loader the soname whose ABI the tables describe
(_abi.SONAME), then the other sonames of _abi.SONAMES, with a warning
(their structs may differ from the tables).

The rest of the package reaches C only through the names below: lib (the
table's functions and enum constants), NULL, and the helpers new, array,
out, cstr, cstrs, ptr, addr, text and memory (each backend's docstrings
say what they do).
"""
import os
import warnings

from . import _abi

_CHOICE = os.environ.get("WAVEDD_FFI", "").strip().lower()
if _CHOICE not in ("", "cffi", "ctypes"):
    raise ImportError(f"wavedd: WAVEDD_FFI={_CHOICE!r}: give cffi or "
                      f"ctypes, or leave it unset (cffi when it imports, "
                      f"else ctypes)")
_backend = None
if _CHOICE in ("", "cffi"):
    try:
        from . import _via_cffi as _backend
    except ImportError as e:
        if _CHOICE == "cffi":
            raise ImportError(f"wavedd: WAVEDD_FFI=cffi, but cffi does not "
                              f"import ({e}); install python3-cffi, or "
                              f"unset WAVEDD_FFI to use ctypes") from e
if _backend is None:
    from . import _via_ctypes as _backend

FFI = _backend.NAME


def _open():
    path = os.environ.get("WAVEDD_LIBWAVECLIENT")
    names = [path] if path else list(_abi.SONAMES)
    errs = []
    for name in names:
        try:
            lib = _backend.load(name)
        except OSError as e:
            errs.append(str(e))
            continue
        if not path and name != _abi.SONAME:
            warnings.warn(f"wavedd: loaded {name}; its tables (_abi.py) "
                          f"describe {_abi.SONAME}'s ABI", RuntimeWarning)
        return lib, name
    how = ("$WAVEDD_LIBWAVECLIENT" if path else
           "the installed library; set WAVEDD_LIBWAVECLIENT to a build's "
           "client/libwaveclient.so otherwise")
    raise ImportError(f"wavedd: cannot load libwaveclient from "
                      f"{' or '.join(names)} ({how}): {'; '.join(errs)}")


lib, LIBRARY = _open()

NULL = _backend.NULL
new = _backend.new
array = _backend.array
out = _backend.out
cstr = _backend.cstr
cstrs = _backend.cstrs
ptr = _backend.ptr
addr = _backend.addr
text = _backend.text
memory = _backend.memory
