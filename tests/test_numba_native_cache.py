"""fuselab's object cache of compiled kernels (numba_backend/compile.py, `_load_native`): a
kernel compiled in one process is loaded by the next from its object file (no Numba
CFunc, no LLVM bitcode parsed), gives the same bits, and anything wrong with the cached
file (truncated, another format, a symbol the process lacks) falls back to Numba's own
disk cache."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba", reason="the Numba backend's tests need numba (pip install '.[cpu]')")

from fuselab.ir import GraphBuilder  # noqa: E402
from fuselab.numba_backend import NumbaOptions  # noqa: E402
from fuselab.plan import make_plan  # noqa: E402

# a shape and constant no other test uses, so that the kernel is compiled afresh here
_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from fuselab.ir import GraphBuilder
    from fuselab.plan import make_plan
    from fuselab.numba_backend.run import Executable
    from fuselab.numba_backend import NumbaOptions
    b = GraphBuilder()
    x = b.input("x", (4099,), np.float32)
    g = b.build([("y", b.elemwise("tanh", [b.elemwise("multiply", [x, b.const(float(sys.argv[1]), np.float32)])]))])
    exe = Executable(make_plan(g), NumbaOptions(parallel=True))
    xs = np.linspace(-6, 6, 4099, dtype=np.float32)
    y = exe.run({"x": xs})["y"]
    print(json.dumps({"kind": type(exe.compiled[0].cfunc).__name__, "hits": exe.compiled[0].cfunc.cache_hits,
                      "bits": y.view(np.uint32).tolist()}))
""")


def _graph(c: float):
    b = GraphBuilder()
    x = b.input("x", (4099,), np.float32)
    return b.build([("y", b.elemwise("tanh", [b.elemwise("multiply", [x, b.const(c, np.float32)])]))])


def _run_in_new_process(tmp_path, c: float) -> dict:
    env = {**os.environ, "FUSELAB_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", _SCRIPT, repr(c)], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _compile_here(tmp_path, monkeypatch, c: float):
    """Compiled in this process (a constant of its own: a kernel this process has not
    compiled before, so that its object file lands in `tmp_path`)."""
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    from fuselab.numba_backend.run import Executable
    exe = Executable(make_plan(_graph(c)), NumbaOptions(parallel=True))
    xs = np.linspace(-6, 6, 4099, dtype=np.float32)
    return exe.run({"x": xs})["y"].view(np.uint32).tolist()


def test_a_kernel_compiled_here_is_loaded_from_its_object_file_by_the_next_process(tmp_path, monkeypatch):
    want = _compile_here(tmp_path, monkeypatch, 0.731)
    objects = list(tmp_path.glob("numba/native/*.o"))
    assert len(objects) == 1
    got = _run_in_new_process(tmp_path, 0.731)
    assert got["kind"] == "NativeKernel" and got["hits"] == 1
    assert got["bits"] == want
    # and again (the file is read, not rewritten)
    assert _run_in_new_process(tmp_path, 0.731)["bits"] == want


@pytest.mark.parametrize("k, damage", list(enumerate(["truncated", "flipped byte", "other format", "unknown symbol"])))
def test_a_damaged_object_file_falls_back_to_numbas_cache(tmp_path, monkeypatch, k, damage):
    c = 0.6 + 0.01 * k
    want = _compile_here(tmp_path, monkeypatch, c)
    (obj,) = tmp_path.glob("numba/native/*.o")
    data = obj.read_bytes()
    if damage == "truncated":
        data = data[: len(data) // 3]
    elif damage == "flipped byte":
        data = data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:]
    elif damage == "other format":
        data = b"something else\n" + data
    else:   # the process has no such symbol: the JIT would abort on it, so it is never loaded
        head, digest, symbol, undefined, rest = data.split(b"\n", 4)
        data = b"\n".join([head, digest, symbol, undefined + b" fuselab_no_such_symbol_anywhere", rest])
    obj.write_bytes(data)
    got = _run_in_new_process(tmp_path, c)
    assert got["kind"] == "CFunc" and got["hits"] == 1 and got["bits"] == want
