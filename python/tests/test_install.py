"""test_install.py - docs/python.md's install, as written there: a venv
that sees Debian's NumPy and cffi, `pip install --no-build-isolation`
(nothing to download: Debian's setuptools builds it, Debian's NumPy and
cffi satisfy it), then the installed package used from outside the source
tree."""
import os
import shutil
import subprocess
import sys

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_pip_install(daemon, tmp_path):
    src = tmp_path / "python"   # pip builds in place: not in the source tree
    shutil.copytree(PKG, src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", "tests"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                    str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install",
                          "--no-build-isolation", str(src)],
                         capture_output=True, text=True)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    code = ("import numpy as np, wavedd, sys\n"
            "assert 'site-packages' in wavedd.__file__, wavedd.__file__\n"
            "with wavedd.Client() as c:\n"
            "    print(c.reduce('sum', np.arange(100, dtype=np.int32)).value)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["WAVE_URL"] = daemon.url
    p = subprocess.run([str(venv / "bin" / "python"), "-c", code], env=env,
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "4950\n"
