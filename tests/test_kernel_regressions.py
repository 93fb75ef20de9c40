"""Golden cells: each once gave a wrong result or a crash in generated kernels (found by
hand on an H200 or by the differential fuzzer, tests/fuzz). Every plan (unfused, auto,
max) runs through the CPU emulator of CUDA and is compared with NumPy on the same inputs;
integers and booleans bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

import fuselab
from fuselab.codegen import KernelCode, generate
from fuselab.codegen.nvrtc import compile_source
from fuselab.codegen.prelude import prelude_for
from fuselab.plan import make_plan, unfused_plan

from codegen_util import needs_nvrtc
from cuda_host import HostRunner, needs_cxx


def _check(source: str, inputs: dict[str, np.ndarray], rtol: float = 1e-6) -> None:
    want = {"np": np, **inputs}
    with np.errstate(all="ignore"):
        exec(source, want)
    traced = fuselab.trace_cell(source, {"np": np, **inputs})
    plans = [unfused_plan(traced.graph), make_plan(traced.graph, "auto"), make_plan(traced.graph, "max")]
    runner = HostRunner(plans)
    for plan in plans:
        got = runner.run(plan, traced.inputs)
        for name in traced.results:
            g, w = np.asarray(got[name]), np.asarray(want[name])
            assert (g.dtype, g.shape) == (w.dtype, w.shape), (plan.strategy, name)
            if w.dtype.kind == "f":
                np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * float(np.nanmax(np.abs(w), initial=0)),
                                           equal_nan=True, err_msg=f"{plan.strategy} plan, {name}\n{plan}")
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"{plan.strategy} plan, {name}\n{plan}")


RNG = np.random.default_rng(11)


@needs_cxx
def test_sibling_reductions_of_different_accumulator_types():
    """A float sum and an integer count in one kernel: each combines in its own type (the
    shared `sum_op` functor once truncated the float partials to integers: 1.5% off)."""
    x = RNG.random((64, 300)).astype(np.float32)
    _check("mask = x > 0.5\ncnt = mask.sum(axis=1)\ns = np.where(mask, x, 0.0).sum(axis=1)\n"
           "mm = s / np.maximum(cnt, 1)", {"x": x})
    _check("c = (x > 0.5).sum()\nt = x.sum()\nm = x.max()\nk = np.argmax(x)", {"x": RNG.random(70_000).astype(np.float32)})


@needs_cxx
@pytest.mark.parametrize("shape", [(2, 3), (3, 5, 2), (7,)])
def test_negative_step_slice_after_reshape(shape):
    """(start - i) % extent once went below zero in unsigned index arithmetic."""
    x = np.arange(int(np.prod(shape))).reshape(shape)
    _check("y = x.reshape(-1)[::-1] * 1\nz = x.reshape(-1)[::-2][1:] + 1", {"x": x})
    _check("y = x[::-1].reshape(-1)[::-1][1:] * 2", {"x": x})


@needs_cxx
def test_signed_and_unsigned_64_bit_comparisons_are_exact():
    a = np.array([-5, 3, 5, -1, 2 ** 62, -2 ** 63, 0], np.int64)
    b = np.array([2 ** 64 - 1, 2, 5, 0, 2 ** 63, 0, 2 ** 63], np.uint64)
    for op in ("<", "<=", ">", ">=", "==", "!="):
        _check(f"y = a {op} b\nz = b {op} a\nw = a.astype(np.int8) {op} b", {"a": a, "b": b})


@needs_cxx
def test_float16_value_read_again_after_a_reduction_over_a_unit_axis():
    """The epilogue once recomputed a stored float16 input from its producers."""
    x = RNG.random((1, 5)).astype(np.float16)
    _check("v = x + x\nw = v + v.sum(axis=0, keepdims=True)", {"x": x}, rtol=1e-3)


@needs_cxx
def test_opaque_call_reading_a_view():
    x = RNG.standard_normal((4, 10)).astype(np.float32)
    _check("y = np.sort(x[:, ::2], axis=1) * 2", {"x": x})


@needs_nvrtc
def test_a_combine_of_another_type_does_not_compile():
    """The typed combines refuse operands of another type: a reduction can no longer
    convert its running value silently (the sibling-reduction bug fails to compile)."""
    body = ('extern "C" __global__ void k(float* out, const float* x) {\n'
            "    float v = x[threadIdx.x];\n"
            "    v = fl_warp_allreduce(v, fl_add_op<long long>(), 32);\n"
            "    out[0] = fl_add_op<long long>()(v, v);\n}\n")
    with pytest.raises(Exception, match="differ in type|deleted"):
        compile_source(prelude_for(body) + body, "k", ("-std=c++17",), arch="sm_90", want_cubin=False)
    ok = body.replace("long long", "float")
    compile_source(prelude_for(ok) + ok, "k", ("-std=c++17",), arch="sm_90", want_cubin=False)


def test_each_reduction_kernel_names_the_combine_of_its_accumulator_type():
    x = RNG.random((8, 40)).astype(np.float32)
    traced = fuselab.trace_cell("cnt = (x > 0.5).sum(axis=1)\ns = x.sum(axis=1)\nh = x.astype(np.float16).max(axis=1)",
                                {"np": np, "x": x})
    plan = make_plan(traced.graph, "max")
    sources = [c.source for c in generate(plan) if isinstance(c, KernelCode)]
    text = "\n".join(sources)
    assert "fl_add_op<long long>()" in text and "fl_add_op<float>()" in text
    assert "fl_maximum_op<float>()" in text   # float16 accumulates in float


@needs_cxx
def test_row_kernel_reading_one_row_of_its_own_input():
    """`x[0]` read by a row kernel that also caches rows of `x`: the cached row held
    x[r, c] and was served for x[0, c] (found by the fuzzer)."""
    x = (RNG.integers(1, 9, (2, 2960))).astype(np.uint16)
    _check("m = x.min(axis=1)\nv = np.divide(x[0], x)\nb = v <= x", {"x": x})
    f = RNG.standard_normal((5, 64)).astype(np.float32)
    _check("y = (f - f.max(axis=-1, keepdims=True)) / (np.abs(f[0]) + 1)\nz = f[1] * f", {"f": f})


@needs_cxx
def test_powers_by_one_half_and_minus_one_round_as_numpy():
    """CUDA's pow(121.0, 0.5) is 10.999999999999998 (H200, fuzzer): x ** 0.5 and
    np.power(x, 0.5) are square roots, with pow's results at -0 and -inf."""
    u = np.array([121, 144, 2, 0, 65535, 10000], np.uint16)
    _check("r = (u ** 0.5).astype(np.int32)\ns = np.power(u, 0.5)\nt = u ** -1.0", {"u": u})
    f = np.array([-0.0, 0.0, -np.inf, np.inf, 4.0, -4.0, 2.0, np.nan, 1e-40], np.float32)
    _check("a = np.power(f, 0.5)\nb = np.power(f, -1.0)\nc = f ** 0.5", {"f": f})   # contiguous: sqrt's -0.0, NaN


@needs_cxx
def test_a_row_kernel_over_rows_of_no_columns():
    """A row of zero columns once declared register caches of size zero (NVRTC refuses;
    g++ accepted them until the emulator checked)."""
    x = np.zeros((3, 4, 0), np.int32)
    _check("v0 = x.any(axis=2)\nv1 = np.rad2deg(x)\nv3 = np.mean(v0, axis=1, keepdims=True)", {"x": x})


@needs_cxx
def test_minus_zero_and_zero_are_different_constants():
    """Shared constants compared -0.0 == 0.0: np.float64(-0.0) stood in for a later 0 and
    arctan2(0, 0) gave pi (found by the fuzzer)."""
    x = np.array([[0, 1, -1, 0]], np.int64)
    _check("a = np.arctan2(x, np.float64(-0.0))\nb = np.arctan2(x, 0)\nc = np.copysign(1.0, x * 0.0 - 0.0)", {"x": x})


def test_plans_of_cells_differing_in_the_sign_of_a_zero_are_different():
    """The runtime caches code by plan: two cells that differ only in -0.0 / 0.0 must not
    share it."""
    x = np.ones(3)
    g1 = fuselab.trace_cell("y = np.copysign(x, -0.0)", {"np": np, "x": x}).graph
    g2 = fuselab.trace_cell("y = np.copysign(x, 0.0)", {"np": np, "x": x}).graph
    assert g1 != g2 and make_plan(g1) != make_plan(g2)


@needs_cxx
def test_numpy_scalars_take_scalar_math_for_powers():
    """`a ** 2` is np.square(a) for arrays (bool ** 2 is int8) but NumPy scalars take scalar
    math (np.True_ ** 2 is int64): full reductions, integer indexing and ufuncs of scalars
    give scalars (found by the GPU fuzzer, seeds 41006350, 41006713, 41009802)."""
    x = np.array([1.5, -0.0], np.float16)
    u = np.ones((1234, 65), np.uint32)
    _check("v0 = x[-1]\nv1 = np.logical_or(v0, -1.5)\nv3 = np.cbrt(v1)\nv6 = v1 ** 2\nv7 = np.array(True) ** 2",
           {"x": x})
    _check("v0 = np.all(u, axis=0)\nv1 = v0.all(axis=-1)\nv2 = v1.min()\nv3 = v2 ** 2\nv4 = np.log1p(v3)\n"
           "v5 = v3 // v3\nv6 = np.fmax(v4, v1)\nv7 = (u > 0) ** 2", {"u": u})


@needs_cxx
def test_row_reduction_over_rows_of_one_column():
    """Rows of one column: a per-row value and an element have the same shape, and a row
    kernel computed np.sqrt(x) once per row without reading x (an undefined name in the
    CUDA; found by the emulator fuzzer). Such reductions are no row kernels now."""
    x = np.random.default_rng(5).integers(0, 65535, (29, 1)).astype(np.uint16)
    _check("v0 = x.any(axis=1)\nv1 = np.sqrt(x)\nv2 = v1.squeeze()\nv3 = np.asarray(x, dtype=np.uint32)\n"
           "v5 = np.isinf(v2)", {"x": x})


@needs_cxx
@pytest.mark.parametrize("dtype, cols, width", [("float16", 4316, 4), ("float16", 4318, 2), ("float32", 446, 2),
                                                ("float16", 4317, 1), ("float16", 4320, 8)])
def test_rows_off_a_16_byte_boundary_take_narrower_vectors(dtype, cols, width):
    """A broadcast along rows whose length is no multiple of a 16-byte vector: the widest
    vector the rows' alignment allows (rows of 4316 halves start 8 bytes off: 4 halves a
    load), not the strided path's element loads; rows of an odd length (width 1 here)
    gather the broadcast operand element by element and move x and y as 16-byte vectors.
    Results as NumPy's."""
    x = RNG.standard_normal((37, cols)).astype(dtype)
    w = RNG.standard_normal(37).astype(dtype)
    source = "y = np.maximum(x * w[:, None] + 1.0, 0.0)"
    traced = fuselab.trace_cell(source, {"np": np, "x": x, "w": w})
    code = generate(make_plan(traced.graph, "auto"))[0]
    want = f"{width} elements per thread step" if width > 1 else "8 elements per thread step, 16-byte accesses; 1 load gathered"
    assert any(want in note for note in code.notes), code.notes
    assert width == 1 or not any("gathered" in note for note in code.notes)
    _check(source, {"x": x, "w": w})


@needs_cxx
@pytest.mark.parametrize("dtype, cols, tier", [("float16", 1030, "warp"), ("float16", 4318, "block"),
                                               ("float16", 1028, "warp"), ("float32", 1030, "warp"),
                                               ("float16", 1031, "warp"), ("float16", 9014, "smem"),
                                               ("float16", 2054, "looped")])
def test_row_kernels_move_the_widest_packs_their_rows_allow(dtype, cols, tier):
    """A softmax and a layernorm over rows whose length is no multiple of a 16-byte pack:
    each thread moves whole 16-byte packs aligned to memory (a row starting inside its
    first pack; before 8bbb222, the widest power of two dividing the row: rows of 1030
    halves in pairs), in every tier the kernel fits (a forced tier it does not fit falls
    back to the next), with NumPy's results."""
    from dataclasses import replace
    from cuda_host import EMULATED
    x = (RNG.standard_normal((9, cols)) * 3).astype(dtype)
    g = RNG.standard_normal(cols).astype(dtype)
    source = ("e = np.exp(x - x.max(axis=-1, keepdims=True))\ns = e / e.sum(axis=-1, keepdims=True)\n"
              "mu = x.mean(axis=-1, keepdims=True)\nxc = x - mu\n"
              "y = xc / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + 1e-5) * g")
    want = {"np": np, "x": x, "g": g}
    exec(source, want)
    traced = fuselab.trace_cell(source, {"np": np, "x": x, "g": g})
    plan = make_plan(traced.graph, "auto")
    options = replace(EMULATED, row_tier=tier)
    rows = [c for c in generate(plan, options) if isinstance(c, KernelCode) and "tier" in c.notes[0]]
    pack = 16 // np.dtype(dtype).itemsize
    assert rows and all(any(n.startswith(f"packs of {pack} columns, aligned to memory") for n in c.notes)
                        for c in rows), [c.notes for c in rows]
    got = HostRunner([plan], options).run(plan, traced.inputs)
    rtol = 2e-3 if dtype == "float16" else 1e-5
    for name in ("s", "y"):
        np.testing.assert_allclose(np.asarray(got[name], np.float64), np.asarray(want[name], np.float64),
                                   rtol=rtol, atol=rtol * float(np.abs(want[name]).max()), err_msg=name)


@needs_cxx
def test_a_per_row_output_reads_its_input_itself_after_the_passes():
    """Rows of one column: a one-per-row output (all(...) & x0) reads x0 at the offset a
    pass's pack of x0 had; it must load it, not name the pack declared inside the pass
    (NVRTC: identifier undefined; GPU fuzzer seed 5353027310)."""
    x0 = RNG.integers(0, 3, (33, 1)).astype(np.uint16)
    x1 = np.array([1], np.uint16)
    _check("v0 = x0[:, None]\nv1 = np.logical_and(v0, x1)\nv2 = np.rad2deg(v0)\nv3 = np.all(v1, axis=2)\n"
           "v4 = np.logical_and(v3, x0)", {"x0": x0, "x1": x1})



@needs_cxx
@pytest.mark.parametrize("rows", [2, 3])
def test_variance_keeps_numpys_rounded_mean(rows):
    """z-scores over an axis of 2 or 3 whose elements sit a few ulps apart: NumPy's
    variance sums squared deviations from its own rounded mean (sum / n), and (x - mean) /
    std keeps NumPy's digits only where the one-pass variance adds n (mean - m)^2 for it
    (2e-3 off before, on the H200 sweep's (2, 922, 4862))."""
    base = RNG.uniform(0.5, 4.0, 3000).astype(np.float32)
    steps = RNG.integers(1, 5, (rows - 1, 3000)).astype(np.float32)
    x = np.empty((rows, 3000), np.float32)
    x[0] = base
    for k in range(1, rows):   # each row a few ulps above the one before
        x[k] = x[k - 1] + steps[k - 1] * np.spacing(x[k - 1])
    x[:, ::7] = RNG.standard_normal((rows, len(range(0, 3000, 7)))).astype(np.float32)   # and ordinary columns
    _check("y = (x - x.mean(axis=0, keepdims=True)) / x.std(axis=0, keepdims=True)\nv = x.var(axis=0)",
           {"x": x}, rtol=2e-6)


@needs_cxx
def test_float16_norm_over_every_axis_is_numpys_dot_product():
    """Found by the fuzzer's audit: NumPy's norm over every axis of float16 is HALF_dot
    (float32 products summed in float32, one rounding); the lowering squared in float16,
    so small squares rounded to zero: 1,000 halves of 1e-4 have the norm 0.003164, every
    plan gave 0.0 (fuselab/trace/reductions.py `norm`)."""
    _check("r = np.linalg.norm(a)\nq = np.linalg.norm(b)",
           {"a": np.full(1000, 1e-4, np.float16), "b": (RNG.standard_normal((40, 50)) * 1e-3).astype(np.float16)},
           rtol=2e-3)
