"""test_abi.py - the cffi declarations of wavedd/_lib.py against the C
header: every struct's size and every field's offset, as the compiler
lays them out, so the ABI-mode declarations cannot drift from
include/wave/client.h unseen."""
import os
import shutil
import subprocess

import pytest

from conftest import SOURCE
from wavedd._lib import STRUCTS, ffi


def test_layout(tmp_path):
    cc = os.environ.get("CC") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler")
    lines = ["#include <stddef.h>", "#include <stdio.h>",
             '#include "wave/client.h"', "int main(void) {"]
    want = []
    for name in STRUCTS:
        t = ffi.typeof(name)
        lines.append(f'  printf("%zu\\n", sizeof({name}));')
        want.append(ffi.sizeof(t))
        for field, f in t.fields:
            lines.append(f'  printf("%zu\\n", offsetof({name}, {field}));')
            want.append(f.offset)
    lines += ["  return 0;", "}"]
    src = tmp_path / "abi.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "abi"
    subprocess.run([cc, "-std=c11", "-I", os.path.join(SOURCE, "include"),
                    str(src), "-o", str(exe)], check=True)
    got = [int(x) for x in subprocess.run([str(exe)], check=True,
                                          capture_output=True,
                                          text=True).stdout.split()]
    labels = []
    for name in STRUCTS:
        labels.append(f"sizeof {name}")
        labels += [f"{name}.{fl}" for fl, _ in ffi.typeof(name).fields]
    bad = [(lab, w, g) for lab, w, g in zip(labels, want, got) if w != g]
    assert not bad and len(got) == len(want)


def test_enums():
    """The enum values of types.h and client.h as cffi has them."""
    import re
    text = ""
    for h in ("types.h", "client.h"):
        with open(os.path.join(SOURCE, "include", "wave", h)) as f:
            text += f.read()
    from wavedd._lib import lib
    found = re.findall(r"\b(WAVE_(?:U32|S32|F32|SUM|MIN|MAX|EXTENT|AND|OR|XOR"
                       r"|JOB_\w+))\s*=\s*(\d+)", text)
    assert len(found) >= 15
    for name, num in found:
        assert getattr(lib, name) == int(num), name
