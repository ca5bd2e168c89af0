"""test_docs.py - docs/python.md's first example, run as it stands in a
fresh interpreter against the test daemon, prints what the page says."""
import os
import re
import subprocess
import sys

from conftest import SOURCE

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def blocks(lang):
    with open(os.path.join(SOURCE, "docs", "python.md")) as f:
        return re.findall(rf"```{lang}\n(.*?)```", f.read(), re.S)


def test_first_example(daemon, tmp_path):
    code, want = blocks("python")[0], blocks("text")[0]
    script = tmp_path / "first.py"
    script.write_text(code)
    env = dict(os.environ, WAVE_URL=daemon.url,
               PYTHONPATH=PKG + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, str(script)], env=env,
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == want
