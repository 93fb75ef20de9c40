"""What the Numba row template does for speed changes no bit of its results: a row's sums
in lanes (element k of each 64-element chunk into lane k's block sum, the blocks and lanes
combined as README's "Reduction order" says) give the bits of that order computed with
Neumaier's compensation
(scalar.fl_lane_add adds by Knuth's TwoSum, which has the same error term), when the values
are computed in one loop and folded by another; and the prefetches of the next row (row.py)
are emitted where a row's elements are contiguous, and only there."""
from __future__ import annotations

import numpy as np
import pytest

from numba_util import PARALLEL, SERIAL, numba, run_numba

from fuselab.interp import run_graph
from fuselab.ir import GraphBuilder
from fuselab.numba_backend import generate
from fuselab.plan.model import Template

from graphs import layernorm, one_kernel, softmax

f32 = np.float32


@numba.njit(error_model="numpy")
def _neumaier(s, c, x):
    t = s + x
    c = c + (((s - t) + x) if np.abs(s) >= np.abs(x) else ((x - t) + s))
    return t, c


@numba.njit(error_model="numpy")
def _documented_row_sums(x):
    """README's lane order, with Neumaier's compensated adds: lane k adds element k of
    each 64-element chunk plainly into its block sum, which goes into lane k (compensated)
    after every 16 chunks and after the last; lanes k + 16, k + 32, k + 48 are added into
    lane k (their compensations too), then lanes 0..15 into the total, every lane's
    compensation into the total's; the sum is total + compensation unless the total is inf
    or NaN."""
    out = np.empty(x.shape[0], np.float32)
    lanes = np.empty(64, np.float32)
    comps = np.empty(64, np.float32)
    blocks = np.empty(64, np.float32)
    n = x.shape[1]
    for r in range(x.shape[0]):
        lanes[:] = 0
        comps[:] = 0
        blocks[:] = 0
        for col in range(n):
            k = col % 64
            blocks[k] += x[r, col]
            if col == n - 1 or (k == 63 and (col // 64) % 16 == 15):
                for j in range(64):
                    lanes[j], comps[j] = _neumaier(lanes[j], comps[j], blocks[j])
                    blocks[j] = 0
        for j in range(16, 64, 16):
            for k in range(16):
                lanes[k], comps[k] = _neumaier(lanes[k], comps[k], lanes[k + j])
                comps[k] = comps[k] + comps[k + j]
        v = np.float32(0.0)
        c = np.float32(0.0)
        for k in range(16):
            v, c = _neumaier(v, c, lanes[k])
            c = c + comps[k]
        out[r] = v + c if np.isfinite(v) else v
    return out


def _sum_graph(rows: int, cols: int, exp: bool):
    b = GraphBuilder()
    x = b.input("x", (rows, cols), np.float32)
    v = b.elemwise("exp", [x]) if exp else x
    s = b.reduce("sum", v, axis=-1, keepdims=True)
    return b.build([("s", s), ("y", b.elemwise("true_divide", [v, s]))])


@pytest.mark.parametrize("cols", [64, 100, 1030, 20000])
@pytest.mark.parametrize("exp", [False, True])
def test_lane_sums_have_the_documented_orders_bits(cols, exp):
    rng = np.random.default_rng(cols + exp)
    x = (rng.standard_normal((9, cols)) * np.exp(rng.uniform(-20, 20, (9, cols)))).astype(np.float32)
    if exp:
        x = np.clip(x, -80, 80)
    x[1, ::2] = 3e38                        # overflow to inf in a lane
    x[2] = 1e30
    x[2, 1::2] = -1e30                      # cancellation
    x[3] = rng.standard_normal(cols).astype(np.float32) * 1e-40    # subnormals
    x[4, 3 % cols] = np.nan
    x[5] = -0.0
    g = _sum_graph(9, cols, exp)
    plan = one_kernel(g, Template.ROW)
    got = run_numba(plan, {"x": x}, SERIAL)["s"].reshape(-1)
    with np.errstate(all="ignore"):
        values = np.exp(x) if exp else x
    want = _documented_row_sums(values)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    par = run_numba(plan, {"x": x}, PARALLEL)["s"].reshape(-1)
    np.testing.assert_array_equal(par.view(np.uint32), got.view(np.uint32))


def test_lane_add_is_neumaiers():
    """fl_lane_add (TwoSum) leaves lane and compensation as Neumaier's select does, for
    every finite sum, on values of every scale."""
    from fuselab.numba_backend.scalar import fl_lane_add

    @numba.njit(error_model="numpy")
    def both(xs, ys):
        lanes = np.zeros(1, np.float32)
        comps = np.zeros(1, np.float32)
        bad = 0
        for i in range(xs.shape[0]):
            lanes[0] = xs[i]
            comps[0] = 0
            fl_lane_add(lanes, comps, np.uint64(0), ys[i])
            t, c = _neumaier(xs[i], np.float32(0.0), ys[i])
            if np.isfinite(t) and (lanes[0] != t or comps[0] != c):
                bad += 1
        return bad
    rng = np.random.default_rng(0)
    n = 1 << 20
    bits = rng.integers(0, 2 ** 32, (2, n), dtype=np.uint64).astype(np.uint32)
    xs, ys = bits.view(np.float32)
    xs2 = (rng.standard_normal(n) * 1e3).astype(np.float32)
    ys2 = (xs2 * (1 + rng.standard_normal(n).astype(np.float32) * 1e-6)).astype(np.float32) * -1
    assert both(xs, ys) == 0
    assert both(xs2, ys2) == 0 and both(ys2, xs2) == 0


def _source(g) -> str:
    (code,) = generate(one_kernel(g, Template.ROW))
    return code.source


def _pass_of(src: str, line: str) -> str:
    """The `# pass ...` / `# output pass` comment that last precedes `line` in `src`."""
    head = src[:src.index(line)]
    return [l.strip() for l in head.splitlines() if l.strip().startswith(("# pass", "# output pass"))][-1]


def test_prefetches_where_rows_are_contiguous():
    """In the pass with the most arithmetic a column: softmax's exp pass fetches the next
    row (inputs, and outputs for writing); layernorm's output pass, pipelined with the next
    row's pass 1, the inputs of the row after that and the next row's outputs."""
    src = _source(softmax(300, 1024))
    assert "fl_prefetch(in_x, ix(row * 1024 + col_c + 1024 + 0))" in src     # the next row
    assert "fl_prefetchw(out_y, ix(row * 1024 + col_c + 1024 + 0))" in src   # the next row's output
    assert src.count("fl_prefetch(") == 4 and src.count("fl_prefetchw(") == 4   # a chunk's 4 lines each
    assert _pass_of(src, "fl_prefetch(in_x") == "# pass 2: %4 sum"
    # layernorm: x is read along the rows, gamma and beta along no row
    ln = _source(layernorm(100, 4096))
    assert "fl_prefetch(in_x, ix(row_n * 4096 + col_c + 4096 + 0))" in ln    # the row after the next
    assert "fl_prefetchw(out_y, ix(row * 4096 + col_c + 4096 + 0))" in ln    # the next row's output
    assert _pass_of(ln, "fl_prefetch(in_x").endswith("(of row row_n)")
    assert "fl_prefetch(in_gamma" not in ln and "fl_prefetch(in_beta" not in ln
    # rows shorter than a chunk, and rows along a strided axis: none
    assert "fl_prefetch" not in _source(softmax(300, 40))
    b = GraphBuilder()
    x = b.input("x", (300, 500), np.float32)
    g = b.build([("y", b.elemwise("subtract", [x, b.reduce("max", x, axis=0, keepdims=True)]))])
    assert "fl_prefetch" not in _source(g)


@pytest.mark.parametrize("rows, cols", [(3, 1024), (5, 16384), (17, 100)])
def test_prefetching_kernels_give_numpys_bits_where_numpy_is_exact(rows, cols):
    """A max and a subtraction (no rounding freedom): NumPy's bits, next-row prefetches
    past the last row included."""
    b = GraphBuilder()
    x = b.input("x", (rows, cols), np.float32)
    m = b.reduce("max", x, axis=-1, keepdims=True)
    d = b.elemwise("subtract", [x, m])
    g = b.build([("y", b.elemwise("multiply", [d, b.reduce("min", d, axis=-1, keepdims=True)]))])
    plan = one_kernel(g, Template.ROW)
    assert "fl_prefetch" in generate(plan)[0].source
    xs = np.random.default_rng(rows).standard_normal((rows, cols)).astype(np.float32)
    want = run_graph(g, {"x": xs})["y"]
    for opts in (SERIAL, PARALLEL):
        np.testing.assert_array_equal(run_numba(plan, {"x": xs}, opts)["y"], want)


def _max_rows_graph(rows: int, cols: int):
    """y = (x - max) * min(x - max) with the max and the sum as per-row outputs too: pass 1
    (the max) feeds the output pass and a per-row output."""
    b = GraphBuilder()
    x = b.input("x", (rows, cols), np.float32)
    m = b.reduce("max", x, axis=-1, keepdims=True)
    d = b.elemwise("subtract", [x, m])
    lo = b.reduce("min", d, axis=-1, keepdims=True)
    return b.build([("m", m), ("y", b.elemwise("multiply", [d, lo])), ("lo", lo)])


def test_output_pass_is_the_next_rows_pass_1():
    """Rows of a chunk or more with full-shape outputs: the output pass of a row and
    pass 1 of the next are one loop, the first row of a call does its own pass 1, the last
    folds itself again; pass 1's results of the next row are assigned after this row's
    per-row outputs are stored. Not where rows are shorter than a chunk, or pass 1 keeps a
    row buffer."""
    src = _source(_max_rows_graph(40, 256))
    assert "if row == lo:" in src and "row_n = row + 1 if row + 1 < hi else row" in src
    merged = src[src.index("row_n = row + 1"):]
    assert "in_x[ix(row_n * 256 + col)]" in merged and "out_y[ix(row * 256 + col)]" in merged
    assert merged.index("out_m[ix(row)] = v1") < merged.index("v1 = acc1")
    assert "row_n" not in _source(_max_rows_graph(40, 48))
    kept = _source(_exp_in_pass_1(40, 256))
    assert "row_v1[ix(col)] = " in kept and "row_n" not in kept


def _exp_in_pass_1(rows: int, cols: int):
    """e = exp(x) summed in pass 1 and divided by the sum in the output pass: pass 1 keeps
    e in a row buffer, which the next row's pass 1 would overwrite."""
    b = GraphBuilder()
    x = b.input("x", (rows, cols), np.float32)
    e = b.elemwise("exp", [x])
    return b.build([("y", b.elemwise("true_divide", [e, b.reduce("sum", e, axis=-1, keepdims=True)]))])


@pytest.mark.parametrize("rows, cols", [(2, 64), (7, 1000), (33, 4100)])
def test_pipelined_rows_give_numpys_bits(rows, cols):
    """Max, min and subtract/multiply are exact: NumPy's bits, per-row outputs included,
    whatever the threads' chunks of rows (a call's first and last row), with rows whose
    max is a NaN or a zero (redone in order inside the merged loop)."""
    g = _max_rows_graph(rows, cols)
    plan = one_kernel(g, Template.ROW)
    assert "row_n = row + 1" in generate(plan)[0].source
    xs = np.random.default_rng(rows).standard_normal((rows, cols)).astype(np.float32)
    xs[-1] = -np.abs(xs[-1])
    xs[rows // 2, cols // 3] = np.nan
    xs[-1, -1] = 0.0
    xs[0, 1] = -0.0
    with np.errstate(invalid="ignore"):
        want = run_graph(g, {"x": xs})
    for opts in (SERIAL, PARALLEL):
        got = run_numba(plan, {"x": xs}, opts)
        for k in ("m", "y", "lo"):
            a, b = np.asarray(got[k], np.float32), np.asarray(want[k], np.float32)
            nan = np.isnan(b)      # (a NaN's sign: NumPy's SIMD max gives +NaN for a -NaN input)
            np.testing.assert_array_equal(np.isnan(a), nan)
            np.testing.assert_array_equal(a[~nan].view(np.uint32), b[~nan].view(np.uint32))
