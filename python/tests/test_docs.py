"""test_docs.py - the pages' Python examples, run as they stand in a
fresh interpreter against the test daemon: docs/python.md's first example
prints what the page says; the README tour's Python lines (the here-document
of its `python3 - <<'EOF'` command, the README test runs the whole block in
its container) print the values NumPy gives."""
import os
import re
import subprocess
import sys

import numpy as np

from conftest import SOURCE

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def page(name):
    with open(os.path.join(SOURCE, name)) as f:
        return f.read()


def blocks(lang, name="docs/python.md"):
    return re.findall(rf"```{lang}\n(.*?)```", page(name), re.S)


def run(daemon, tmp_path, code):
    script = tmp_path / "example.py"
    script.write_text(code)
    env = dict(os.environ, WAVE_URL=daemon.url,
               PYTHONPATH=PKG + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, str(script)], env=env,
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_first_example(daemon, tmp_path):
    code, want = blocks("python")[0], blocks("text")[0]
    assert run(daemon, tmp_path, code) == want


def test_readme_tour(daemon, tmp_path):
    heredocs = [m for b in blocks("sh", "README.md")
                for m in re.findall(r"python3 - <<'EOF'[^\n]*\n(.*?\n)EOF\n",
                                    b, re.S)]
    assert len(heredocs) == 1, "the README's tour has one Python example"
    x = np.full(1 << 20, 0.5, np.float32)
    b = np.arange(-5, 5, dtype=np.int32)
    want = f"{x.sum(dtype=np.float64)} {b.min()} {b.max()}\n"
    assert run(daemon, tmp_path, heredocs[0]) == want
