"""test_abi.py - the one description of the C API (wavedd/_abi.py) against
the C header, through a probe compiled with include/wave/client.h:

  * every prototype, as a function pointer of the table's type
    initialised with the header's function (-Werror: a parameter or
    return type that differs, const included, fails the build);
  * every enum constant's value, and every field's type (_Generic on the
    field's address: char[64] is not char[32], const char * not char *);
  * every struct's size and every field's offset and size, as the
    compiler lays them out, against both backends' layouts (ctypes
    always, cffi where it imports), so neither can drift unseen.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import SOURCE
from wavedd import _abi, _via_ctypes as _ctypes

try:
    from wavedd import _via_cffi as _cffi
except ImportError:
    _cffi = None


def _ptr_to(d):
    """The type name of a pointer to field d: "char (*)[64]"."""
    dim = f"[{d.dim}]" if d.dim is not None else ""
    return f"{d.type} (*){dim}"


def probe_source():
    lines = ["#include <stddef.h>", "#include <stdio.h>",
             '#include "wave/client.h"', "", "#ifdef PROTOTYPES"]
    for fn, params in _abi.functions():
        args = ", ".join(p.c() for p in params) or "void"
        lines.append(f"static {fn.c('(*const fp_' + fn.name + ')')}({args})"
                     f" = {fn.name};")
    lines.append("#endif")
    for name, consts in _abi.ENUMS:
        lines.append(f"_Static_assert(sizeof({name}) == sizeof(int), "
                     f'"{name}");')
        for c, v in consts:
            lines.append(f'_Static_assert({c} == {v}, "{c}");')
    for name, fields in _abi.struct_fields():
        for d in fields:
            lines.append(f"_Static_assert(_Generic(&((({name} *)0)->{d.name}"
                         f"), {_ptr_to(d)}: 1, default: 0), "
                         f'"{name}.{d.name} is {d.c()}");')
    lines.append("int main(void) {")
    for name, fields in _abi.struct_fields():
        lines.append(f'  printf("%zu\\n", sizeof({name}));')
        for d in fields:
            lines.append(f'  printf("%zu %zu\\n", offsetof({name}, {d.name}),'
                         f' sizeof((({name} *)0)->{d.name}));')
    lines += ["  return 0;", "}", ""]
    return "\n".join(lines)


def compile_cmd(cc, src):
    return [cc, "-std=c11", "-Werror", "-I", os.path.join(SOURCE, "include"),
            str(src)]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    cc = os.environ.get("CC") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler")
    tmp = tmp_path_factory.mktemp("abi")
    src = tmp / "abi.c"
    src.write_text(probe_source())
    exe = tmp / "abi"
    # the prototypes checked at compile time only: no library to link
    p = subprocess.run(compile_cmd(cc, src) + ["-DPROTOTYPES",
                                               "-fsyntax-only"],
                       capture_output=True, text=True)
    assert p.returncode == 0, (
        "wavedd/_abi.py differs from include/wave/*.h:\n" + p.stderr)
    subprocess.run(compile_cmd(cc, src) + ["-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True,
                         text=True).stdout.split("\n")
    got, i = {}, 0
    for name, fields in _abi.struct_fields():
        size = int(out[i])
        i += 1
        rows = []
        for d in fields:
            off, sz = out[i].split()
            rows.append((d.name, int(off), int(sz)))
            i += 1
        got[name] = (size, rows)
    return got


BACKENDS = [_ctypes] + ([_cffi] if _cffi is not None else [])


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.NAME)
def test_layout(compiled, backend):
    bad = []
    for name, _ in _abi.STRUCTS:
        want = compiled[name]
        have = backend.layout(name)
        if have != want:
            bad.append(f"{name}: the header {want}, {backend.NAME} {have}")
    assert not bad, "\n".join(bad)


def test_every_struct_checked(compiled):
    assert set(compiled) == {n for n, _ in _abi.STRUCTS} and len(compiled) > 10


def test_probe_catches_drift(tmp_path):
    """The probe fails for a table that is wrong: a field's array length
    and a parameter's const changed (so the checks above can fail)."""
    cc = os.environ.get("CC") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler")
    good = probe_source()
    for old, new in (("char (*)[256]", "char (*)[255]"),
                     ("const wave_reduce_request *req",
                      "wave_reduce_request *req")):
        assert old in good
        src = tmp_path / "bad.c"
        src.write_text(good.replace(old, new, 1))
        p = subprocess.run(compile_cmd(cc, src) + ["-DPROTOTYPES",
                                                   "-fsyntax-only"],
                           capture_output=True, text=True)
        assert p.returncode != 0, f"{old} -> {new} passed the probe"


def test_cdef_is_the_table():
    """cffi's declarations are the table's text, nothing added by hand."""
    if _cffi is None:
        pytest.skip("cffi does not import")
    text = _cffi.cdef()
    for fn, _ in _abi.functions():
        assert f"{fn.name}(" in text
    assert text.count("typedef struct") == len(_abi.STRUCTS) + len(
        _abi.OPAQUE)


def test_enums():
    """The enum values of types.h and client.h as the library module has
    them (a constant added to the header and missing here fails)."""
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
