"""The reduction template's inner loops: a block's sum is computed in the kernel, not
called once per 16 elements (scalar.fl_block_sum is inlined), and column tiles prefetch
the rows ahead; neither changes a result."""
from __future__ import annotations

import platform
import re

import numpy as np
import pytest

from numba_util import SERIAL, numba  # noqa: F401  (skips without Numba)

from fuselab.interp import run_graph
from fuselab.ir import GraphBuilder
from fuselab.numba_backend import reduction
from fuselab.numba_backend.codegen import generate
from fuselab.numba_backend.compile import compile_kernel
from fuselab.numba_backend.run import Executable
from fuselab.plan import make_plan
from fuselab.runtime.verify import compare


def _sum_of_squares(n: int):
    b = GraphBuilder()
    x = b.input("x", (n,), np.float32)
    return b.build([("s", b.reduce("sum", b.elemwise("multiply", [x, x])))])


def _column_sum(rows: int, cols: int, dtype=np.float32):
    b = GraphBuilder()
    x = b.input("x", (rows, cols), dtype)
    return b.build([("m", b.reduce("sum", x, axis=0))])


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="reads x86 assembly")
def test_block_sums_are_not_calls(tmp_path, monkeypatch):
    """Compiled afresh (Numba shows no assembly for a kernel from its disk cache)."""
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    g = _sum_of_squares(50_003)
    exe = Executable(make_plan(g, "auto"), SERIAL)
    (comp,) = [c for c in exe.compiled if c is not None]
    assert "fl_block_sum(" in comp.kernel.source
    asm = comp.cfunc._library.get_asm_str()
    assert not re.search(r"\$_ZN\w*fl_block_sum\w*", asm), "fl_block_sum is called, not inlined"
    x = np.random.default_rng(3).standard_normal(50_003).astype(np.float32)
    check = compare(exe.run({"x": x}), run_graph(g, {"x": x}), 2e-6)
    assert check.ok, check.worst


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_column_prefetches_change_no_result(dtype, monkeypatch):
    g = _column_sum(20_000, 300, dtype)
    plan = make_plan(g, "auto")
    x = (np.random.default_rng(4).standard_normal((20_000, 300)) * 4).astype(dtype)
    exe = Executable(plan, SERIAL)
    assert "fl_prefetch(in_x, ix(r * 300 + o0 + 2400 + pf))" in exe.codes[0].source, exe.codes[0].source
    with_prefetch = exe.run({"x": x})["m"]
    monkeypatch.setattr(reduction, "PREFETCH_ROWS", 0)
    (plain,) = generate(plan)
    assert "fl_prefetch" not in plain.source
    exe.compiled = [compile_kernel(plain)]      # the same kernel without its prefetches
    without = exe.run({"x": x})["m"]
    assert with_prefetch.tobytes() == without.tobytes()
    if dtype != np.float16:   # (NumPy's float16 column sum rounds to half at every add; the backend's once)
        check = compare({"m": with_prefetch}, run_graph(g, {"x": x}))
        assert check.ok, check.worst
