"""errors.py - one exception class per row of include/wave/error.h.

The classes are made at import from the library's own table: every code
from 1 up to the first that wave_errname() does not know (the table is
dense, WAVE_ERR_COUNT_ ends it), so a code added in C gets a class here
without a change.  NAMES only spells the class names nicely (JOBSIZE is
JobSizeError); a code missing from it still gets a class, named from its
symbol (FOO: FooError).  tests/test_errors.py checks NAMES against the
header's table.

Every class derives from wavedd.Error (.code: the number, .name: the
symbol, .message: the daemon's message, or a local one for argument and
transport errors); a few derive also from the builtin exception that says
the same, so that `except TimeoutError` works.
"""
from ._lib import lib, new, text

NAMES = {
    "BADREQUEST": "BadRequestError",
    "VERSION": "VersionError",
    "UNSUPPORTED": "UnsupportedError",
    "DTYPE": "DtypeError",
    "OP": "OpError",
    "OPDTYPE": "OpDtypeError",
    "LENGTH": "LengthError",
    "MASKLEN": "MaskLengthError",
    "TOOBIG": "TooBigError",
    "JOBSIZE": "JobSizeError",
    "BUSY": "BusyError",
    "NODEV": "NoDeviceError",
    "DEVFAULT": "DeviceFaultError",
    "DEVICE": "DeviceError",
    "PACK": "PackError",
    "PACKFILE": "PackFileError",
    "SELFCHECK": "SelfCheckError",
    "RANGE": "RangeError",
    "NOJOB": "NoJobError",
    "CANCELLED": "CancelledError",
    "MISMATCH": "MismatchError",
    "CONFIG": "ConfigError",
    "NOMEM": "NoMemoryError",
    "IO": "TransportError",
    "TIMEDOUT": "TimedOutError",
    "SHUTDOWN": "ShutdownError",
    "INTERNAL": "InternalError",
    "ARG": "ArgError",
    "REGION": "RegionError",
    "INCOMPLETE": "IncompleteError",
    "AUTH": "AuthError",
    "DEADLINE": "DeadlineError",
    "PERM": "PermError",
}

# builtin bases for the codes that mean the same
_ALSO = {
    "DTYPE": TypeError,
    "ARG": ValueError,
    "RANGE": ValueError,
    "TIMEDOUT": TimeoutError,
    "NOMEM": MemoryError,
    "AUTH": PermissionError,
    "DEADLINE": TimeoutError,
    "PERM": PermissionError,
}


class Error(Exception):
    """An error of wavedd: .code (include/wave/error.h), .name, .message."""
    code = -1
    name = "UNKNOWN"

    def __init__(self, message=None, code=None):
        if code is not None:
            self.code = code
            self.name = text(lib.wave_errname(code))
        self.message = message or text(lib.wave_strerror(self.code))
        super().__init__(f"{self.name}: {self.message}")


BY_CODE = {}


def _make():
    out = {}
    code = 1
    while True:
        sym = text(lib.wave_errname(code))
        if sym == "UNKNOWN":
            break
        cname = NAMES.get(sym) or sym.capitalize() + "Error"
        bases = (Error, _ALSO[sym]) if sym in _ALSO else (Error,)
        doc = f"{sym} ({code}): {text(lib.wave_strerror(code))}"
        cls = type(cname, bases, {"code": code, "name": sym, "__doc__": doc,
                                  "__module__": "wavedd"})
        BY_CODE[code] = cls
        out[cname] = cls
        code += 1
    return out


CLASSES = _make()
globals().update(CLASSES)


def error(code, message=None):
    """The exception for code (Error itself for a code not in the table)."""
    cls = BY_CODE.get(code)
    if cls is None:
        return Error(message, code)
    return cls(message)


def check(rv, err):
    """Raise the error that a call returning rv filled into err."""
    if rv == 0:
        return
    code = err.code if err.code else rv
    msg = text(err.message) or None
    raise error(code, msg)


def new_err():
    return new("wave_error")
