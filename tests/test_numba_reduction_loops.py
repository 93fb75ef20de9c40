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


def _lanes_fold(op: str):
    from fuselab.numba_backend import scalar
    fold = getattr(scalar, f"fl_lanes_{op}")

    @numba.njit
    def run(lanes):
        return fold(lanes)
    return lambda a: run(a.copy())


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("n", [64, 48, 16, 5, 1])
def test_a_lane_fold_is_the_in_order_fold_but_for_nans_and_zeros(op, n):
    """scalar.fl_lanes_max / min fold the lanes in a halving tree: the in-order fold's
    value for every result that is neither a NaN nor a zero (those rows the kernel folds
    again in order), a NaN where a lane is one, and integers whatever they hold."""
    fold = _lanes_fold(op)
    pick = np.max if op == "max" else np.min
    rng = np.random.default_rng(n)
    for dtype in (np.float32, np.float64):
        for _ in range(50):
            a = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30)).astype(dtype)
            a[rng.random(n) < 0.2] = rng.choice([np.inf, -np.inf])
            want = pick(a)
            got = fold(a)
            if want != 0 and not np.isnan(want):
                assert np.float64(got).tobytes() == np.float64(want).tobytes(), (a, got, want)
        for k in range(n):
            a = rng.standard_normal(n).astype(dtype)
            a[k] = np.nan
            assert np.isnan(fold(a)), (dtype, k)
        zeros = np.array([0.0, -0.0] * n, dtype)[:n]
        assert fold(zeros) == 0
    for dtype in (np.int8, np.uint16, np.int64):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        assert fold(a) == pick(a)


def test_the_power_of_two_scaling_rounds_once():
    """scalar._scale_pow2 (exp's and expm1's 2^k, one vscalefps on AVX-512, two exact
    factors elsewhere): u * 2^k rounded once to float32, subnormal results and overflow
    to inf included, for every k of -150..128 and u in [0.5, 2)."""
    from fuselab.numba_backend import scalar

    @numba.njit
    def scale(u, k):
        out = np.empty(u.shape[0], np.float32)
        for i in range(u.shape[0]):
            out[i] = scalar._scale_pow2(u[i], np.float32(k[i]) + scalar._MAGIC)
        return out
    rng = np.random.default_rng(3)
    u = np.concatenate([rng.uniform(0.5, 2.0, 30).astype(np.float32),
                        np.array([0.5, 1.0, np.nextafter(np.float32(2), np.float32(0)), 1.5, 0.75], np.float32)])
    uu, kk = (a.ravel() for a in np.meshgrid(u, np.arange(-150, 129, dtype=np.int32)))
    got = scale(uu, kk)
    with np.errstate(over="ignore"):
        want = np.ldexp(uu.astype(np.float64), kk).astype(np.float32)   # exact, then one rounding
    assert (got.view(np.uint32) == want.view(np.uint32)).all()
    assert np.isinf(got).any() and (got[(got > 0) & (got < np.finfo(np.float32).tiny)]).size > 0
