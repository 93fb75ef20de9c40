"""The Numba row template's lanes and row buffers: a row's max/min folded in vector lanes
gives the serial fold's bits (the first NaN, the first of equal zeros), sums in lanes are
NumPy-accurate and the same on any number of threads, values a later pass needs again
are kept in a row buffer (softmax computes exp once per element), and the loops
vectorize."""
from __future__ import annotations

import functools
import re

import numpy as np
import pytest

from numba_util import PARALLEL, SERIAL, numba, run_numba

from fuselab.interp import run_graph
from fuselab.ir import GraphBuilder
from fuselab.plan.model import Template
from fuselab.runtime.verify import compare

from graphs import layernorm, one_kernel, softmax


def _serial_extreme(row: np.ndarray, op: str) -> np.floating:
    """The backend's documented max/min: elements folded in order, a NaN wins (the first
    one), and of equal values the first is kept (which zero, -0.0 or 0.0)."""
    def step(acc, x):
        if op == "max":
            return acc if (acc >= x or acc != acc) else x
        return acc if (acc <= x or acc != acc) else x
    start = row.dtype.type(-np.inf if op == "max" else np.inf)
    return functools.reduce(step, row.tolist(), start)


def _extreme_graph(op: str, rows: int, cols: int, dtype):
    b = GraphBuilder()
    x = b.input("x", (rows, cols), dtype)
    m = b.reduce(op, x, axis=-1, keepdims=True)
    full = "logical_xor" if np.dtype(dtype) == np.bool_ else "subtract"
    return b.build([("m", m), ("y", b.elemwise(full, [x, m]))])


def _nan(bits: int) -> np.float32:
    return np.array([bits], np.uint32).view(np.float32)[0]


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("cols", [1, 7, 64, 100, 1030])
def test_lane_max_min_are_the_serial_folds_bits(op, cols):
    rng = np.random.default_rng(cols)
    rows = 12
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    sign = 1 if op == "max" else -1
    x[1] = -sign * np.abs(x[1])                          # all on the far side of zero...
    x[1, ::3] = -0.0                                      # ...and the extreme is a zero of either sign
    x[1, 1::3] = 0.0
    x[2] = -sign * np.abs(x[2])
    x[2, cols // 2] = 0.0
    x[2, cols - 1] = -0.0
    x[3, cols // 3] = _nan(0x7FC12345)                   # two NaNs of different payloads: the first one
    x[3, cols - 1] = _nan(0xFFC00001)
    x[4] = -sign * np.inf                                 # every element the identity's value
    x[5, cols - 1] = np.nan                               # a NaN last
    x[6, :] = 2.5                                         # all equal
    x[7, cols - 1] = sign * 1e30                          # the extreme in the last (tail) lane
    g = _extreme_graph(op, rows, cols, np.float32)
    got = run_numba(one_kernel(g, Template.ROW), {"x": x}, PARALLEL)
    want = np.array([_serial_extreme(r, op) for r in x], np.float32)
    np.testing.assert_array_equal(got["m"].reshape(-1).view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(got["y"], x - want[:, None])


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int64, np.float16, np.float64])
def test_lane_max_min_of_other_dtypes(dtype):
    rng = np.random.default_rng(2)
    if np.dtype(dtype).kind == "b":
        x = rng.random((9, 301)) < 0.01
        x[2] = False
        x[3] = True
    elif np.dtype(dtype).kind == "f":
        x = rng.standard_normal((9, 301)).astype(dtype)
        x[3, 200] = np.nan
        x[4] = -np.abs(x[4])
        x[4, 7] = 0.0
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (9, 301), dtype=dtype, endpoint=True)
    for op in ("max", "min"):
        g = _extreme_graph(op, 9, 301, np.dtype(dtype))
        got = run_numba(one_kernel(g, Template.ROW), {"x": x}, SERIAL)
        want = run_graph(g, {"x": x})
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got["m"], want["m"])
            np.testing.assert_array_equal(got["y"], want["y"])


@pytest.mark.parametrize("cols", [3, 64, 65, 1000, 20000])
def test_lane_sums_are_accurate_and_thread_independent(cols):
    """Row sums in lanes: within float32 rounding of the exact sum (relative to the sum of
    magnitudes), and the same bits on one thread and on all of them."""
    rng = np.random.default_rng(cols)
    x = (rng.standard_normal((17, cols)) * np.exp(rng.uniform(-8, 8, (17, cols)))).astype(np.float32)
    x[3] = 1e30
    x[3, 1::2] = -1e30                                    # cancellation
    x[4, 5 % cols] = np.inf
    x[5, 0] = np.nan
    b = GraphBuilder()
    xi = b.input("x", (17, cols), np.float32)
    s = b.reduce("sum", xi, axis=-1, keepdims=True)
    g = b.build([("s", s), ("y", b.elemwise("true_divide", [xi, s]))])
    plan = one_kernel(g, Template.ROW)
    serial = run_numba(plan, {"x": x}, SERIAL)
    exact = x.astype(np.float64).sum(-1)
    mag = np.abs(x.astype(np.float64)).sum(-1)
    got = serial["s"].reshape(-1).astype(np.float64)
    fin = np.isfinite(exact)
    assert (np.abs(got[fin] - exact[fin]) <= 2 * np.finfo(np.float32).eps * mag[fin] + 1e-45).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x.sum(-1)))
    _same_bits_on_any_threads(plan, {"x": x}, serial)


def _same_bits_on_any_threads(plan, inputs, serial) -> None:
    """The parallel run gives the serial run's bits on one thread and on all of them."""
    threads = numba.get_num_threads()
    try:
        for n in sorted({1, threads}):
            numba.set_num_threads(n)
            par = run_numba(plan, inputs, PARALLEL)
            for name in serial:
                np.testing.assert_array_equal(par[name], serial[name], err_msg=f"{name}, {n} thread(s)")
    finally:
        numba.set_num_threads(threads)


def test_softmax_computes_exp_once_per_element():
    from fuselab.numba_backend import generate
    g = softmax(33, 1030)
    plan = one_kernel(g, Template.ROW)
    (code,) = generate(plan)
    assert code.source.count("fl_exp_f32(") == 1 and "row buffers for %3 exp" in code.notes[0]
    x = np.random.default_rng(4).standard_normal((33, 1030)).astype(np.float32) * 30
    x[5, 17] = np.nan
    x[6, :] = -np.inf
    x[7, 3] = np.inf
    got = run_numba(plan, {"x": x}, PARALLEL)
    with np.errstate(all="ignore"):
        check = compare(got, run_graph(g, {"x": x}), 1e-5)
    assert check.ok, check.worst


def test_a_value_two_passes_need_is_kept_for_both():
    """tanh(x) feeds the first pass's sum, the second pass's max and the output: one
    tanh per element, kept in a row buffer."""
    from fuselab.numba_backend import generate
    b = GraphBuilder()
    x = b.input("x", (20, 300), np.float32)
    t = b.elemwise("tanh", [x])
    s = b.reduce("sum", t, axis=-1, keepdims=True)
    d = b.elemwise("subtract", [t, s])
    m = b.reduce("max", d, axis=-1, keepdims=True)
    g = b.build([("y", b.elemwise("multiply", [d, m]))])
    plan = one_kernel(g, Template.ROW)
    (code,) = generate(plan)
    assert code.source.count("fl_tanh_f32(") == 1, code.source
    xs = np.random.default_rng(6).standard_normal((20, 300)).astype(np.float32)
    check = compare(run_numba(plan, {"x": xs}, SERIAL), run_graph(g, {"x": xs}), 1e-5)
    assert check.ok, check.worst


def test_row_loops_vectorize(tmp_path, monkeypatch):
    """The exp and the lane folds of softmax's passes and its output division are vector
    instructions in the compiled kernel (LLVM vector types in its IR), all in float32
    lanes, and the max's lanes are stored whole, not by masked stores (which x86's back
    end makes of a select between a lane and a new value: vmaskmovps, tens of cycles on
    AMD's cores). Compiled afresh (Numba shows no IR for a kernel loaded from its disk
    cache): a cache folder of its own and a shape no other test uses."""
    import platform
    from fuselab.numba_backend.run import Executable
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    g = softmax(61, 1021)
    exe = Executable(one_kernel(g, Template.ROW), SERIAL)
    ir = exe.compiled[0].cfunc.inspect_llvm()
    assert re.search(r"fmul <\d+ x float>", ir)      # the exp, in float32 lanes
    assert "x double>" not in ir                     # (nothing in float64 lanes)
    assert "fdiv <" in ir                            # e / sum
    assert re.search(r"llvm\.maximum\.v\d+f32", ir)  # the max's lanes
    library = getattr(exe.compiled[0].cfunc, "_library", None)
    if library is not None and platform.machine().lower() in ("x86_64", "amd64"):
        assert "vmaskmov" not in library.get_asm_str()
    x = np.random.default_rng(1).standard_normal((61, 1021)).astype(np.float32)
    check = compare(exe.run({"x": x}), run_graph(g, {"x": x}), 1e-5)
    assert check.ok, check.worst


def test_layernorm_row_kernel_matches_numpy_across_shapes():
    rng = np.random.default_rng(9)
    for rows, cols in [(5, 1), (3, 63), (7, 64), (2, 129), (4, 5000)]:
        g = layernorm(rows, cols)
        inputs = {n: rng.standard_normal(g.nodes[i].shape).astype(np.float32)
                  for n, i in zip(g.input_names(), g.input_ids)}
        check = compare(run_numba(one_kernel(g, Template.ROW), inputs, SERIAL), run_graph(g, inputs), 1e-4)
        assert check.ok, (rows, cols, check.worst)


def test_rows_along_axis_0_on_the_cpu_are_planned_where_they_stream():
    """On the CPU's parameters a thread walking a strided row streams while the row has
    up to 16 columns (one stream per column for the prefetchers): x - x.mean(0) with 2
    rows of 40000 is one row kernel, with 32 rows a column mean and a subtraction; both
    give NumPy's results through the Numba backend."""
    from fuselab.plan import make_plan
    from fuselab.plan.device import DeviceParams
    from fuselab.trace.run import trace_cell

    cpu = DeviceParams.from_dict({"sm_count": 2, "bandwidth_GBps": 20, "launch_us": 2, "eff_row_strided": 0.2,
                                  "strided_cols": 16, "run_s": 0.0})
    rng = np.random.default_rng(5)
    for rows, kernels in ((2, ["row"]), (32, ["reduction", "pointwise"])):
        x = rng.standard_normal((rows, 40000)).astype(np.float32)
        g = trace_cell("y = x - x.mean(axis=0)", {"np": np, "x": x}).graph
        plan = make_plan(g, "auto", params=cpu)
        assert [k.template.value for k in plan.kernels] == kernels
        check = compare(run_numba(plan, {"x": x}, PARALLEL), run_graph(g, {"x": x}), 1e-5)
        assert check.ok, check.worst
    # slabs of adjacent strided rows are a GPU block's; the CPU walks them row by row, one
    # stream per column (eff_row_slab): a softmax over (300, 1000, 17) stays apart there
    src = "m = x.max(1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(1, keepdims=True)"
    g = trace_cell(src, {"np": np, "x": np.zeros((300, 1000, 17), np.float32)}).graph
    assert [k.template.value for k in make_plan(g, "auto").kernels] == ["row"]   # the GPU's
    slow = DeviceParams.from_dict({"sm_count": 2, "bandwidth_GBps": 20, "launch_us": 2, "eff_row_slab": 0.2, "eff_row_slab_smem": 0.2,
                                   "run_s": 0.0})
    assert "row" not in [k.template.value for k in make_plan(g, "auto", params=slow).kernels]


STRIDED_CELLS = [
    "y = x - x.mean(axis=0)",
    "m = x.max(axis=0, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(axis=0, keepdims=True)",
    "v = x.var(axis=0)\ny = (x - x.mean(axis=0)) / np.sqrt(v + 1e-5)",
    "i = x.argmax(axis=0)\ny = x - x.min(axis=0)",
]
STRIDED_SHAPES = [((40, 300), np.float32), ((17, 5, 70), np.float32), ((33, 600), np.float16),
                  ((300, 3, 21), np.float64)]


@pytest.mark.parametrize("src", STRIDED_CELLS + [
    "y = x - x.mean(axis=1, keepdims=True)\ns = x.sum(axis=1)",
    "m = x.max(axis=1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(axis=1, keepdims=True)",
    "v = x.std(axis=1, keepdims=True)\ny = x / (v + 1)"])
@pytest.mark.parametrize("shape,dtype", STRIDED_SHAPES)
def test_strided_rows_walk_in_tiles(src, shape, dtype):
    """Rows along a strided axis of more than 16 columns run in tiles of adjacent rows
    (row.py's _generate_tiled): NumPy's results, NaN and inf included, the same bits on
    one thread and on all, a tile that ends past the last row, and a softmax's exp kept
    in a tile buffer (computed once per element)."""
    if "axis=1" in src:   # the middle axis of 3-D shapes, as long as the first
        shape = (shape[1], shape[0], 3) if len(shape) == 2 else (shape[1], shape[0], shape[2])
    from fuselab.numba_backend import generate
    from fuselab.trace.run import trace_cell
    rng = np.random.default_rng(len(src) + shape[0])
    x = rng.standard_normal(shape).astype(dtype)
    x.flat[7] = np.nan
    x.flat[shape[-1] + 3] = np.inf
    g = trace_cell(src, {"np": np, "x": x}).graph
    plan = one_kernel(g, Template.ROW)
    (code,) = generate(plan)
    assert "tiles of" in code.notes[0], code.notes
    if "np.exp" in src:
        exps = sum(len(re.findall(r"(?:fl_exp\w*|np\.exp)\(", line.split("#")[0])) for line in code.source.splitlines())
        assert "tile buffers for" in code.notes[0] and exps == 1, code.source
    serial = run_numba(plan, {"x": x}, SERIAL)
    with np.errstate(all="ignore"):
        check = compare(serial, run_graph(g, {"x": x}), 2e-3 if dtype == np.float16 else 1e-5)
    assert check.ok, check.worst
    _same_bits_on_any_threads(plan, {"x": x}, serial)


@pytest.mark.parametrize("n", [1, 5, 17, 40, 64 + 3])
def test_a_short_block_starting_with_inf_sums_to_inf(n):
    """A computed value folded through the chunk buffer adds a short last block in order;
    it started from buf[lo] - buf[lo], a NaN when the block's first value is inf (a
    float16 variance whose squared deviations overflow gave NaN, NumPy inf: the fidelity
    corpus through the Numba backend). Sums of blocks that start with inf, or -inf, or
    hold a NaN, in float32 and float16, row by row and whole."""
    from fuselab.plan import make_plan
    from fuselab.trace.run import trace_cell
    for dtype in (np.float32, np.float16):
        x = np.ones((3, n), dtype)
        x[0, (n - 1) // 16 * 16] = np.inf        # the first value of the last (short) block
        x[1, (n - 1) // 16 * 16] = -np.inf
        x[2, n - 1] = np.nan
        for src in ("y = (x * 2).sum(axis=1)", "y = (x * 2).sum()", "y = np.square(x * 300).sum(axis=1)"):
            g = trace_cell(src, {"np": np, "x": x}).graph
            got = run_numba(make_plan(g, "auto"), {"x": x}, SERIAL)
            with np.errstate(all="ignore"):
                want = run_graph(g, {"x": x})
            np.testing.assert_array_equal(got["y"], want["y"], err_msg=f"{src} {dtype.__name__} n={n}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_row_sum_whose_first_lane_is_infinite_is_inf(dtype):
    """The lanes' total started from lanes[0] - lanes[0], a NaN when lane 0 (columns 0,
    16, 32, 48 of each 64) held an infinity after the lanes were folded: x / x.sum(...)
    of a row with inf at column 0, or of finite values whose sum overflows, was NaN
    everywhere where NumPy gives 0 (red team, 2026-12-04). Serial and parallel, NumPy's
    bits."""
    big = 3e37 if dtype == np.float32 else 6e4
    x = np.ones((6, 200), dtype)
    x[0, 0] = np.inf
    x[1, 16] = -np.inf
    x[2, 48] = np.inf
    x[3] = big                                            # finite, the sum overflows
    x[4, :64] = big
    b = GraphBuilder()
    xi = b.input("x", x.shape, dtype)
    s = b.reduce("sum", xi, axis=-1, keepdims=True)
    g = b.build([("s", s), ("y", b.elemwise("true_divide", [xi, s]))])
    plan = one_kernel(g, Template.ROW)
    serial = run_numba(plan, {"x": x}, SERIAL)
    with np.errstate(all="ignore"):
        want = run_graph(g, {"x": x})
    for name in want:
        np.testing.assert_array_equal(serial[name], want[name], err_msg=name)
    _same_bits_on_any_threads(plan, {"x": x}, serial)
