"""test_backend.py - the choice of backend (WAVEDD_FFI, else cffi when it
imports, else ctypes) and of the library (both sonames), and the package
on the standard library and NumPy alone, as on a GPU host without cffi: a
fresh interpreter run with -S and a path holding only NumPy and wavedd."""
import os
import subprocess
import sys

import numpy as np
import pytest

import wavedd
from conftest import LIB

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ffi_env():
    """The backend the run asked for is the one in use (ctest runs the
    suite with WAVEDD_FFI=cffi and with WAVEDD_FFI=ctypes)."""
    want = os.environ.get("WAVEDD_FFI")
    if not want:
        pytest.skip("WAVEDD_FFI not set")
    assert wavedd.FFI == want


@pytest.fixture
def numpy_only(tmp_path):
    """A sys.path folder with NumPy and wavedd only (links), for -S."""
    d = tmp_path / "path"
    d.mkdir()
    (d / "numpy").symlink_to(os.path.dirname(np.__file__))
    (d / "wavedd").symlink_to(os.path.join(PKG, "wavedd"))
    return d


def run_isolated(path, code, **env_extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "WAVEDD_FFI")}
    env.update(PYTHONPATH=str(path), **env_extra)
    return subprocess.run([sys.executable, "-S", "-c", code], env=env,
                          capture_output=True, text=True)


def test_numpy_only(daemon, numpy_only):
    """No cffi: ctypes is picked, and regions, the pool and messages
    work."""
    code = f"""
import sys
import numpy as np, wavedd
assert wavedd.FFI == "ctypes", wavedd.FFI
assert "cffi" not in sys.modules
try:
    import cffi
    sys.exit("cffi imports")
except ImportError:
    pass
with wavedd.Client({daemon.url!r}) as c:
    x = wavedd.empty(1 << 16, np.float32, client=c)
    x[:] = 0.25
    r = c.reduce("sum", x)
    c.copy_threshold = 0
    p = c.reduce("max", np.arange(1000, dtype=np.int32))
    c.copy_threshold = 1 << 62
    m = c.reduce("xor", np.arange(1000, dtype=np.uint32))
    print(r.via, r.value, p.via, p.value, m.via, m.value)
    del x
    print(c.regions())
"""
    p = run_isolated(numpy_only, code)
    assert p.returncode == 0, p.stderr
    xor = np.bitwise_xor.reduce(np.arange(1000, dtype=np.uint32))
    assert p.stdout.split() == [
        "region", str(np.float32(0.25) * (1 << 16)), "pool", "999",
        "message", str(xor), "1"]   # the pool stays


def test_no_cffi_asked(numpy_only):
    p = run_isolated(numpy_only, "import wavedd", WAVEDD_FFI="cffi")
    assert p.returncode != 0
    assert "WAVEDD_FFI=cffi, but cffi does not import" in p.stderr
    assert "python3-cffi" in p.stderr


def test_bad_choice(numpy_only):
    p = run_isolated(numpy_only, "import wavedd", WAVEDD_FFI="swig")
    assert p.returncode != 0
    assert "WAVEDD_FFI='swig': give cffi or ctypes" in p.stderr


@pytest.mark.parametrize("soname,warns", [("libwaveclient.so.4", False)])
def test_sonames(tmp_path, soname, warns):
    """Without WAVEDD_LIBWAVECLIENT the loader finds the soname the tables
    describe (through this run's backend), with no warning."""
    from wavedd import _abi
    full = dict(os.environ)
    full.pop("WAVEDD_LIBWAVECLIENT", None)
    if subprocess.run([sys.executable, "-S", "-c",
                       f"import ctypes; ctypes.CDLL({_abi.SONAME!r})"],
                      env=full, capture_output=True).returncode == 0:
        pytest.skip(f"an installed {_abi.SONAME} is found first")
    libdir = tmp_path / "lib"
    libdir.mkdir()
    (libdir / soname).symlink_to(os.path.realpath(LIB))
    env = {"LD_LIBRARY_PATH": str(libdir)}
    code = ("import warnings; warnings.simplefilter('always')\n"
            "import wavedd; print(wavedd.LIBRARY)")
    full.update(env)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, env=dict(full, PYTHONPATH=PKG))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == soname
    assert ("RuntimeWarning" in p.stderr) == warns == (soname != _abi.SONAME)


def test_no_library(numpy_only, tmp_path):
    p = run_isolated(numpy_only, "import wavedd",
                     WAVEDD_LIBWAVECLIENT=str(tmp_path / "nothing.so"))
    assert p.returncode != 0
    assert "cannot load libwaveclient from" in p.stderr
    assert "nothing.so" in p.stderr
