"""wavedd - exact reductions of NumPy arrays and hash jobs on a wavedd
daemon, through libwaveclient (docs/python.md).

    import numpy as np, wavedd
    with wavedd.Client() as c:
        print(c.reduce("sum", np.arange(10, dtype=np.float32)).value)

It reaches libwaveclient through cffi when cffi imports, else through
ctypes ($WAVEDD_FFI=cffi or ctypes forces one); wavedd.FFI says which.
"""
from ._lib import FFI, LIBRARY
from .client import (EXACT_NAN, EXACT_NINF, EXACT_NOT_NEGZERO, EXACT_PINF,
                     OPS, Client, Result, empty)
from .errors import CLASSES as _CLASSES
from .errors import Error
from .jobs import HashResult, Job, JobInfo

globals().update(_CLASSES)

__version__ = "0.1.0"
__all__ = ["Client", "Result", "empty", "Error", "Job", "JobInfo",
           "HashResult", "OPS", "LIBRARY", "FFI", "EXACT_NAN", "EXACT_PINF",
           "EXACT_NINF", "EXACT_NOT_NEGZERO"] + sorted(_CLASSES)
