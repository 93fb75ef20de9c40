"""Code generation on a machine without a GPU: golden sources, NVRTC compiles every
kernel the tests generate (all ops x dtypes, all templates), and the structure the
templates promise (vector paths, tiers, grids, parameters)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from fuselab.codegen import CodegenOptions, CompileError, KernelCode, compile_info, generate
from fuselab.codegen import index as ix
from fuselab.codegen.nvrtc import compile_source, numbered
from fuselab.codegen.prelude import prelude_for
from fuselab.ir import GraphBuilder
from fuselab.plan import unfused_plan
from fuselab.plan import Plan, Template, make_kernel

from codegen_util import needs_nvrtc, nvrtc_compile
from graphs import (ALL_DTYPES, FLOAT_DTYPES, all_casts, all_elementwise, all_reductions, layernorm, loc,
                    one_kernel, reduction_plan, rmsnorm, softmax)

GOLDEN = Path(__file__).parent / "golden"


# ---------------------------------------------------------------------------
# Golden sources: a refactor that changes generated code shows up as a diff
# ---------------------------------------------------------------------------

def _bias_relu():
    b = GraphBuilder()
    x = b.input("x", (64, 1000), np.float32)
    bias = b.input("b", (1000,), np.float32)
    t = b.elemwise("add", [x, bias], loc=loc(1, "t = x + b"))
    y = b.elemwise("maximum", [t, b.const(0.0, np.float32)], loc=loc(2, "y = np.maximum(t, 0)"))
    return one_kernel(b.build([("y", y)]), Template.POINTWISE)


def _f16_chain():
    b = GraphBuilder()
    h = b.input("h", (4099,), np.float16)
    e = b.elemwise("exp", [h], loc=loc(1, "y = np.exp(h) * 2 + h"))
    m = b.elemwise("multiply", [e, b.const(2.0, np.float16)], loc=loc(1, "y = np.exp(h) * 2 + h"))
    y = b.elemwise("add", [m, h], loc=loc(1, "y = np.exp(h) * 2 + h"))
    return one_kernel(b.build([("y", y)]), Template.POINTWISE)


def _transpose_slice():
    b = GraphBuilder()
    x = b.input("x", (30, 40), np.float32)
    t = b.transpose(x, (1, 0), loc=loc(1, "y = x.T[::-1, 1::2] * 2 + np.arange(15)"))
    s = b.slice(t, (39, 1), (-1, 2), (40, 15), loc=loc(1, "y = x.T[::-1, 1::2] * 2 + np.arange(15)"))
    m = b.elemwise("multiply", [s, b.const(2.0, np.float32)], loc=loc(1, "y = x.T[::-1, 1::2] * 2 + np.arange(15)"))
    r = b.arange(0, 15, 1, np.int64, loc=loc(1, "y = x.T[::-1, 1::2] * 2 + np.arange(15)"))
    y = b.elemwise("add", [m, r], loc=loc(1, "y = x.T[::-1, 1::2] * 2 + np.arange(15)"))
    return one_kernel(b.build([("y", y)]), Template.POINTWISE)


def _sum_squares():
    b = GraphBuilder()
    x = b.input("x", (1 << 20,), np.float32)
    sq = b.elemwise("multiply", [x, x], loc=loc(1, "s = (x * x).sum()"))
    s = b.reduce("sum", sq, loc=loc(1, "s = (x * x).sum()"))
    return one_kernel(b.build([("s", s)]), Template.REDUCTION)


def _column_mean():
    b = GraphBuilder()
    x = b.input("x", (4096, 256), np.float32)
    s = b.reduce("sum", x, axis=0, loc=loc(1, "m = x.mean(axis=0)"))
    m = b.elemwise("multiply", [s, b.const(1 / 4096, np.float32)], loc=loc(1, "m = x.mean(axis=0)"))
    return one_kernel(b.build([("m", m)]), Template.REDUCTION)


def _row_argmax():
    b = GraphBuilder()
    x = b.input("x", (300, 77), np.int32)
    a = b.reduce("argmax", x, axis=1, loc=loc(1, "a = x.argmax(axis=1)"))
    m = b.reduce("max", x, axis=1, loc=loc(2, "m = x.max(axis=1)"))
    return one_kernel(b.build([("a", a), ("m", m)]), Template.REDUCTION)


def _int_ops():
    b = GraphBuilder()
    x = b.input("x", (1000,), np.int16)
    y = b.input("y", (1000,), np.int16)
    q = b.elemwise("floor_divide", [x, y], loc=loc(1, "q = x // y"))
    r = b.elemwise("remainder", [x, y], loc=loc(2, "r = x % y"))
    s = b.elemwise("left_shift", [q, b.const(3, np.int16)], loc=loc(3, "s = q << 3"))
    return one_kernel(b.build([("r", r), ("s", s)]), Template.POINTWISE)


GOLDEN_CASES = {
    "pointwise_bias_relu": _bias_relu,
    "pointwise_f16_chain": _f16_chain,
    "pointwise_transpose_slice": _transpose_slice,
    "pointwise_int_ops": _int_ops,
    "reduction_sum_squares": _sum_squares,
    "reduction_column_mean": _column_mean,
    "reduction_row_argmax": _row_argmax,
    "row_softmax": lambda: one_kernel(softmax(512, 1000), Template.ROW),
    "row_layernorm_16k": lambda: one_kernel(layernorm(64, 16384), Template.ROW),
}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden_source(case):
    codes = generate(GOLDEN_CASES[case]())
    for code in codes:
        path = GOLDEN / f"{case}.cu" if len(codes) == 1 else GOLDEN / f"{case}_{code.index}.cu"
        if os.environ.get("FUSELAB_UPDATE_GOLDEN") == "1":
            path.parent.mkdir(exist_ok=True)
            path.write_text(code.source)
        assert path.exists(), f"missing {path}; run with FUSELAB_UPDATE_GOLDEN=1 to create it"
        assert code.source == path.read_text(), (
            f"{path.name} changed; if intended, regenerate with FUSELAB_UPDATE_GOLDEN=1 and review the diff")


@needs_nvrtc
def test_golden_sources_compile_without_spills():
    codes = [c for case in GOLDEN_CASES.values() for c in generate(case())]
    infos = [compile_info(c) for c in codes]
    assert len(infos) == len(codes) and all(i.registers > 0 for i in infos)
    spilled = [(i.name, i.registers, i.spill_stores) for i in infos if i.spill_stores]
    assert not spilled, spilled


# ---------------------------------------------------------------------------
# NVRTC compiles every op, cast and reduction for every dtype
# ---------------------------------------------------------------------------

@needs_nvrtc
@pytest.mark.parametrize("fp16", ["numpy", "fast"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_elementwise_op_compiles(dtype, fp16):
    if fp16 == "fast" and dtype is not np.float16:
        pytest.skip("fp16 mode only changes float16 kernels")
    g = all_elementwise(dtype)
    plan = one_kernel(g, Template.POINTWISE)
    codes = generate(plan, CodegenOptions(fp16_math=fp16))
    assert len(g.outputs) > 25
    nvrtc_compile(codes)


@needs_nvrtc
def test_cubin_resources_agree_with_the_ptxas_report():
    """Where NVRTC gives no ptxas report (as an earlier session saw on the H200 machine), the
    registers, stack frame and shared memory come from the cubin: they must equal what
    ptxas reports where it does, for every golden kernel and one that needs a stack."""
    from fuselab.codegen.nvrtc import compile_source, cubin_resources
    stack = ("extern \"C\" __global__ void kstack(float* o, const int* idx) {\n"
             "  float a[256];\n  for (int i = 0; i < 256; ++i) a[i] = o[i + threadIdx.x] * i;\n"
             "  for (int i = 0; i < 256; ++i) a[idx[i]] += o[i];\n"
             "  float s = 0; for (int i = 0; i < 256; ++i) s += a[idx[i] ^ 7];\n  o[threadIdx.x] = s;\n}\n")
    sources = [(c.source, c.name) for case in GOLDEN_CASES.values() for c in generate(case())]
    seen_shared = seen_frame = False
    for source, name in sources + [(stack, "kstack")]:
        info = compile_source(source, name)
        assert info.report == "ptxas" and info.registers > 0
        got = cubin_resources(info.cubin, name)
        assert got == {"registers": info.registers, "stack_frame": info.stack_frame,
                       **({"shared_bytes": info.shared_bytes} if info.shared_bytes else {})}, name
        seen_shared |= info.shared_bytes > 0
        seen_frame |= info.stack_frame > 0
    assert seen_shared and seen_frame


def test_compile_info_html_says_when_spills_are_not_reported():
    from fuselab.codegen.nvrtc import CompileInfo
    from fuselab.explorer.code import compile_info_html
    base = dict(name="k", arch="sm_90", ptx="", cubin=b"", registers=40, spill_stores=0, spill_loads=0,
                stack_frame=0, shared_bytes=0, constant_bytes=0, compile_s=0.1, log="")
    assert "0 + 0 B" in compile_info_html(CompileInfo(**base))
    html = compile_info_html(CompileInfo(**base, report="cubin"))
    assert "not reported by this NVRTC" in html and "0 + 0 B" not in html and "<td>40</td>" in html


@needs_nvrtc
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_unfused_op_kernels_compile(dtype):
    """One kernel per op, the way the unfused plan and eager execution run them."""
    codes = generate(unfused_plan(all_elementwise(dtype, shape=(3, 4), bshape=(1, 4))))
    nvrtc_compile(codes)


@needs_nvrtc
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_cast_compiles(dtype):
    nvrtc_compile(generate(one_kernel(all_casts(dtype), Template.POINTWISE)))


REDUCTION_LAYOUTS = [((1000,), None), ((33, 65), 0), ((33, 65), 1), ((4, 5, 6), 1), ((4, 5, 6), (0, 2)),
                     ((3, 1, 7), 1), ((2, 3, 4, 5), (1, 2)), ((64, 300), 0), ((0, 5), 0), ((5, 0), 1)]


@needs_nvrtc
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_reduction_compiles(dtype):
    codes = []
    for shape, axis in REDUCTION_LAYOUTS:
        g = all_reductions(dtype, shape, axis) if 0 not in shape else _identity_reductions(dtype, shape, axis)
        codes += generate(reduction_plan(g))
    nvrtc_compile(codes)


def _identity_reductions(dtype, shape, axis):
    b = GraphBuilder()
    x = b.input("x", shape, dtype)
    return b.build([(op, b.reduce(op, x, axis=axis)) for op in ("sum", "prod", "any", "all")])


@needs_nvrtc
@pytest.mark.parametrize("cols", [1, 7, 32, 1000, 1024, 1030, 5000, 16384, 100000])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_row_kernels_compile_in_every_tier(cols, dtype):
    rows = 3
    codes = [c for g in (softmax(rows, cols, dtype), layernorm(rows, cols, dtype), rmsnorm(rows, cols, dtype))
             for c in generate(one_kernel(g, Template.ROW))]
    tiers = {c.notes[0].split(" tier")[0] for c in codes}
    itemsize = np.dtype(dtype).itemsize
    per_lane = 32 if itemsize <= 4 else 16        # cached elements a thread holds
    if cols <= 32 * per_lane:
        assert tiers == {"warp"}
    elif cols * itemsize > 200 * 1024:
        assert tiers == {"looped"}
    else:
        assert tiers == {"block"}
    infos = nvrtc_compile(codes, reports=True)
    assert len(infos) == len({c.source for c in codes}) and all(i.spill_stores == 0 for i in infos)


# ---------------------------------------------------------------------------
# Structure
# ---------------------------------------------------------------------------

def _pointwise(fn, *shapes_dtypes):
    b = GraphBuilder()
    ins = [b.input(f"x{k}", s, d) for k, (s, d) in enumerate(shapes_dtypes)]
    y = fn(b, *ins)
    return generate(one_kernel(b.build([("y", y)]), Template.POINTWISE))[0]


def test_contiguous_and_broadcast_loads_take_the_vector_path():
    code = _pointwise(lambda b, x, v, s: b.elemwise("add", [b.elemwise("multiply", [x, v]), s]),
                      ((256, 1024), np.float32), ((1024,), np.float32), ((256, 1), np.float32))
    assert "vector path: 4 elements" in code.notes[0]
    assert code.source.count("fl_load_vec<4>") == 2           # x and v
    assert "in_x2[i / 1024]" in code.source                   # one per-row value per vector


def test_transposed_loads_go_through_shared_memory_tiles():
    """x.T read with threads along x's rows into a padded tile, then computed and stored
    with threads along the output's rows: both sides coalesce. A strided slice of a
    transpose (no unit stride) and short axes keep the strided path."""
    code = _pointwise(lambda b, x: b.elemwise("negative", [b.transpose(x, (1, 0))]), ((64, 48), np.float32))
    assert code.notes[0].startswith("transpose path") and code.block == (256, 1, 1)
    assert "__shared__ float tile_x" in code.source and "[32][33]" in code.source
    assert code.grid[0] == 2 * 2        # 48 x 64 output: 2 x 2 tiles
    strided = _pointwise(lambda b, x: b.elemwise("negative", [b.slice(b.transpose(x, (1, 0)), (0, 0), (2, 1), (24, 64))]),
                         ((64, 48), np.float32))
    assert strided.notes[0].startswith("strided path") and "fl_load_vec" not in strided.source
    short = _pointwise(lambda b, x: b.elemwise("negative", [b.transpose(x, (1, 0))]), ((4, 48), np.float32))
    assert not short.notes[0].startswith("transpose path")


@pytest.mark.parametrize("cols, tile", [(8, (8, 128)), (13, (16, 64)), (16, (16, 64)), (17, (32, 32)), (45, (32, 32))])
def test_a_transpose_of_a_narrow_axis_takes_tiles_as_long_as_that_axis(cols, tile):
    """x.T of an (n, 8) array: tiles of 8 x 128, not 32 x 32 with 3/4 of the threads idle;
    the same 1,024 elements a tile, in a padded shared array."""
    code = _pointwise(lambda b, x: b.elemwise("negative", [b.transpose(x, (1, 0))]), ((1000, cols), np.float16))
    ta, tc = tile
    assert code.notes[0].startswith(f"transpose path: tiles of {ta}x{tc}")
    assert f"[{tc}][{ta + 1}]" in code.source
    assert code.grid[0] == -(-1000 // tc) * -(-cols // ta)


def test_slices_vectorise_aligned_or_shifted_but_not_past_the_array():
    slice4 = _pointwise(lambda b, x: b.elemwise("exp", [b.slice(x, (4,), (1,), (64,))]), ((100,), np.float32))
    assert slice4.notes[0].startswith("vector") and "fl_load_vec<4>(in_x0 + i + 4)" in slice4.source
    # x[1:65] of 100: two aligned vectors around every 4 elements, both inside x
    shifted = _pointwise(lambda b, x: b.elemwise("exp", [b.slice(x, (1,), (1,), (64,))]), ((100,), np.float32))
    assert shifted.notes[0].startswith("vector") and "fl_load_vec_shift<4, 1>(in_x0 + i)" in shifted.source
    # x[1:65] of 65: the last vector's second half would read past x: one by one
    at_end = _pointwise(lambda b, x: b.elemwise("exp", [b.slice(x, (1,), (1,), (64,))]), ((65,), np.float32))
    assert "groups = 15;" in at_end.source and "The last 4 elements" in at_end.source
    # x[1:5] of 5: no pair of 4-vectors fits, pairs of 2-vectors do
    tiny = _pointwise(lambda b, x: b.elemwise("exp", [b.slice(x, (1,), (1,), (4,))]), ((5,), np.float32))
    assert tiny.notes[0].startswith("vector path: 2 elements") and "fl_load_vec_shift<2, 1>" in tiny.source
    stepped = _pointwise(lambda b, x: b.elemwise("exp", [b.slice(x, (1,), (2,), (40,))]), ((100,), np.float32))
    assert stepped.notes[0].startswith("strided")


def test_reshape_of_a_contiguous_input_loads_at_the_flat_index():
    code = _pointwise(lambda b, x, y: b.elemwise("add", [b.reshape(x, (24,)), y]),
                      ((4, 6), np.float32), ((24,), np.float32))
    assert "fl_load_vec<4>(in_x0 + i)" in code.source


def test_one_load_per_input_element_and_stores_only_outputs():
    b = GraphBuilder()
    x = b.input("x", (1000,), np.float32)
    t = b.elemwise("exp", [x])
    u = b.elemwise("multiply", [t, x])
    y = b.elemwise("add", [u, t])
    code = generate(one_kernel(b.build([("y", y)]), Template.POINTWISE))[0]
    assert code.source.count("fl_load_vec<4>(in_x") == 1
    assert code.source.count("fl_store_vec<4>(out_") == 1
    assert [p.role for p in code.params] == ["input", "output"]


def test_multi_output_kernel_stores_each_output_once():
    b = GraphBuilder()
    x = b.input("x", (1001,), np.float64)
    s, c = b.elemwise("sin", [x]), b.elemwise("cos", [x])
    code = generate(one_kernel(b.build([("s", s), ("c", c)]), Template.POINTWISE))[0]
    assert [p.name for p in code.params] == ["in_x", "out_s", "out_c"]
    assert code.source.count("fl_store_vec<2>(out_") == 2
    assert "The last 1 element," in code.source


def test_kernel_is_named_after_its_ops_and_comments_quote_the_source():
    code = generate(_bias_relu())[0]
    assert code.name == "k0_add_max"
    assert 'extern "C" __global__' in code.source
    assert "// line 1: t = x + b" in code.source and "// line 2: y = np.maximum(t, 0)" in code.source


def test_prelude_holds_only_what_the_kernel_uses():
    code = generate(_bias_relu())[0]
    assert "fl_maximum" in code.source and "fl_floor_divide" not in code.source and "fl_half" not in code.source
    assert "fl_floor_divide" in prelude_for("x = fl_floor_divide(a, b);")


def test_fp16_numpy_mode_rounds_every_op_and_fast_mode_does_not():
    plan = _f16_chain()
    exact = generate(plan, CodegenOptions(fp16_math="numpy"))[0].source
    fast = generate(plan, CodegenOptions(fp16_math="fast"))[0].source
    # numpy: each of the three ops ends as a half (exp rounded once, * and + natively)
    assert exact.count("const fl_half v") == 3 and "fl_hmul(" in exact and "fl_hadd(" in exact
    assert exact.count("fl_to_half(exp(") == 1
    # fast: float all the way, one rounding at the store
    assert fast.count("const fl_half v") == 0 and "fl_hmul(" not in fast
    assert fast.count("fl_to_half(") == 1 + prelude_for("fl_to_half").count("fl_to_half(")
    with pytest.raises(ValueError):
        CodegenOptions(fp16_math="sloppy")


def test_grid_follows_the_sm_count_and_empty_arrays_launch_nothing():
    b = GraphBuilder()
    x = b.input("x", (1 << 24,), np.float32)
    plan = one_kernel(b.build([("y", b.elemwise("exp", [x]))]), Template.POINTWISE)
    assert generate(plan, CodegenOptions(sm_count=10))[0].grid[0] == 10 * 256
    assert generate(plan, CodegenOptions(sm_count=132))[0].grid[0] == (1 << 24) // 4 // 256
    b = GraphBuilder()
    x = b.input("x", (0, 5), np.float32)
    code = generate(one_kernel(b.build([("y", b.elemwise("exp", [x]))]), Template.POINTWISE))[0]
    assert code.grid[0] == 0 and code.empty


def test_full_reduction_uses_many_blocks_and_a_self_resetting_scratch():
    code = generate(_sum_squares())[0]
    assert code.grid[0] >= 132 and code.block == (256, 1, 1)
    assert [p.role for p in code.params] == ["input", "output", "scratch"]
    assert code.scratch_bytes >= code.grid[0] * 4
    assert "atomicAdd" in code.source and "= 0;  // ready for the next launch" in code.source


def test_column_reduction_puts_threads_across_the_kept_axis():
    code = generate(_column_mean())[0]
    assert code.notes[0].startswith("column")
    assert code.block == (32, 8, 1)
    assert "fl_load_vec<4>" in code.source


def test_row_sums_use_a_warp_per_row_and_scalar_sums_many_blocks():
    b = GraphBuilder()
    x = b.input("x", (1 << 16, 1024), np.float32)
    code = generate(reduction_plan(b.build([("s", b.reduce("sum", x, axis=1))])))[0]
    assert "32 lanes per output" in code.notes[0] and code.scratch_bytes == 0


def test_int_index_type_grows_past_two_billion_elements():
    b = GraphBuilder()
    x = b.input("x", (1 << 31,), np.int8)
    code = generate(one_kernel(b.build([("y", b.elemwise("negative", [x]))]), Template.POINTWISE))[0]
    assert "typedef unsigned long long index_t;" in code.source
    small = generate(_bias_relu())[0]
    assert "typedef unsigned int index_t;" in small.source


@needs_nvrtc
def test_float32_kernels_do_no_double_arithmetic():
    """Math functions must resolve to their float overloads (expf, not exp(double)).
    (sin, cos, tan are left out: CUDA's own slow path for huge arguments uses doubles.)"""
    b = GraphBuilder()
    x = b.input("x", (1024,), np.float32)
    outs = [(op, b.elemwise(op, [x])) for op in ("exp", "log", "tanh", "sqrt", "expm1", "log1p",
                                                  "arctan", "cbrt", "floor", "rint", "deg2rad", "arcsinh")]
    outs.append(("pow", b.elemwise("power", [x, x])))
    outs.append(("rem", b.elemwise("remainder", [x, x])))
    code = generate(one_kernel(b.build(outs), Template.POINTWISE))[0]
    ptx = compile_source(code.source, code.name, code.nvrtc_options, want_cubin=False).ptx
    double_ops = [line for line in ptx.splitlines() if ".f64" in line and not line.strip().startswith(".reg")]
    assert double_ops == []


@needs_nvrtc
def test_compile_error_shows_numbered_source_and_log():
    src = 'extern "C" __global__ void broken(float* y) {\n    y[0] = undefined_name;\n}\n'
    with pytest.raises(CompileError) as err:
        compile_source(src, "broken")
    msg = str(err.value)
    assert "2 |     y[0] = undefined_name;" in msg and "undefined" in err.value.log
    assert numbered("a\nb").splitlines() == ["1 | a", "2 | b"]


@needs_nvrtc
def test_resource_report_is_parsed():
    info = nvrtc_compile(generate(_column_mean()))
    from fuselab.codegen import compile_info
    info = compile_info(generate(_column_mean())[0])
    assert info.registers > 0 and info.spill_stores == 0 and info.compile_s > 0
    assert info.cubin[:4] == b"\x7fELF"


def test_generate_rejects_a_kernel_outside_its_template():
    from fuselab.codegen import CodegenError
    b = GraphBuilder()
    x = b.input("x", (10, 10), np.float32)
    s = b.reduce("sum", x, axis=1)
    g = b.build([("s", s)])
    with pytest.raises(CodegenError, match="pointwise kernel"):
        generate(Plan(g, (make_kernel(g, [s], Template.POINTWISE),)))
    with pytest.raises(CodegenError, match="a row kernel iterates rows and reduces one axis"):   # legality's reason
        b2 = GraphBuilder()
        x2 = b2.input("x", (10, 10), np.float32)
        g2 = b2.build([("s", b2.reduce("sum", x2, axis=(0, 1)))])
        generate(Plan(g2, (make_kernel(g2, [1], Template.ROW),)))


def test_opaque_kernels_become_library_calls():
    from fuselab.codegen import OpaqueCall
    from fuselab.ops import Aval, OpaqueFn
    b = GraphBuilder()
    x = b.input("x", (8, 8), np.float32)
    fn = OpaqueFn("matmul", lambda xp, a, c: a @ c)
    m = b.opaque(fn, [x, x], Aval((8, 8), np.dtype(np.float32)))
    y = b.elemwise("exp", [m])
    codes = generate(unfused_plan(b.build([("y", y)])))
    assert isinstance(codes[0], OpaqueCall) and codes[0].node == m
    assert isinstance(codes[1], KernelCode)


# ---------------------------------------------------------------------------
# Index algebra
# ---------------------------------------------------------------------------

def test_delinearize_then_linearize_is_the_identity():
    i = ix.var("i", 2 * 3 * 4)
    assert ix.linearize(ix.delinearize(i, (2, 3, 4)), (2, 3, 4)) == i
    assert [str(c) for c in ix.delinearize(i, (2, 3, 4))] == ["i / 12", "(i / 4 % 3)", "i % 4"]


def test_reshape_through_other_shapes_folds_back():
    i = ix.var("i", 24)
    coords = ix.reshape(ix.reshape(ix.delinearize(i, (2, 12)), (2, 12), (4, 6)), (4, 6), (24,))
    assert coords == (i,)


def test_negative_steps_and_broadcasts():
    j = ix.var("j", 10)
    (c,) = ix.slice_((j,), (9,), (-1,))
    assert str(c) == "fl_index(9 - j)" and c.bounds() == (0, 9)   # a negative term: see fl_index
    assert ix.broadcast((j, j), (10, 10), (1, 10)) == (ix.ZERO, j)


def test_unit_axes_come_and_go_without_division():
    row, col = ix.var("row", 100), ix.var("col", 64)
    assert ix.reshape((row, col), (100, 64), (100, 64, 1)) == (row, col, ix.ZERO)
    assert str(ix.linearize(ix.reshape((row, col), (100, 64), (1, 6400)), (1, 6400))) == "row * 64 + col"


# ---------------------------------------------------------------------------
# Plans from the planner (when it is there) generate and compile
# ---------------------------------------------------------------------------

@needs_nvrtc
@pytest.mark.parametrize("strategy", ["auto", "max"])
def test_planner_plans_generate_and_compile(strategy):
    from fuselab.plan import make_plan
    graphs = [softmax(100, 1000), layernorm(64, 1000), rmsnorm(33, 300, np.float16), all_elementwise(np.float32)]
    codes = []
    for g in graphs:
        try:
            plan = make_plan(g, strategy)
        except (ImportError, NotImplementedError) as e:
            pytest.skip(f"planner not available: {e}")
        codes += [c for c in generate(plan)]
    nvrtc_compile(codes)


def test_float_powers_by_2_3_4_are_products_and_others_call_pow():
    """x**3 (tanh-GELU) as x*x*x: CUDA's powf made that kernel compute-bound. A constant
    2.5, an integer power, or an array exponent still go through fl_power."""
    b = GraphBuilder()
    x = b.input("x", (1024,), np.float32)
    outs = [(f"p{k}", b.elemwise("power", [x, b.const(k, np.float32)])) for k in (2, 3, 4)]
    code = generate(one_kernel(b.build(outs), Template.POINTWISE))[0]
    assert "= fl_power(" not in code.source
    assert "= x * x;" in code.source and "= x * x * x;" in code.source and "= (x * x) * (x * x);" in code.source
    b = GraphBuilder()
    x = b.input("x", (1024,), np.float32)
    i = b.input("i", (1024,), np.int32)
    outs = [("f", b.elemwise("power", [x, b.const(2.5, np.float32)])),
            ("a", b.elemwise("power", [x, x])),
            ("n", b.elemwise("power", [i, b.const(3, np.int32)]))]
    code = generate(one_kernel(b.build(outs), Template.POINTWISE))[0]
    assert code.source.count("= fl_power(") == 3


def test_code_is_generated_once_and_keyed_by_what_it_depends_on():
    """One cache: the same kernel, options and configuration give the same object; an
    equal graph traced from other source lines gets its own comments."""
    from fuselab.codegen import generate_kernel, launch_candidates
    plan = _bias_relu()
    assert generate(plan) == generate(plan) and generate(plan)[0] is generate_kernel(plan, 0)
    assert launch_candidates(plan, 0) is launch_candidates(plan, 0)
    total = _sum_squares()           # its grid follows the SM count
    assert generate(total, CodegenOptions(sm_count=2))[0].grid != generate(total)[0].grid
    cfg = launch_candidates(plan, 0)[1]
    assert generate(plan, configs={0: cfg})[0].config == cfg

    def relu(text):
        b = GraphBuilder()
        x = b.input("x", (64,), np.float32)
        return one_kernel(b.build([("y", b.elemwise("maximum", [x, b.const(0.0, np.float32)],
                                                     loc=loc(1, text)))]), Template.POINTWISE)
    first, again, renamed = relu("y = np.maximum(x, 0)"), relu("y = np.maximum(x, 0)"), relu("y = np.maximum(x, 0.0)")
    assert first.graph == renamed.graph                         # Graph's equality ignores source lines
    assert generate(again)[0] is generate(first)[0]             # a cell traced again generates nothing
    assert "np.maximum(x, 0.0)" in generate(renamed)[0].source
    assert "np.maximum(x, 0.0)" not in generate(first)[0].source


def test_indices_with_a_negative_term_go_through_fl_index():
    """x[::-1]-style indices (a negative coefficient) are computed whole before they widen
    to an address: NVVM split their constant out and zero-extended a negative 32-bit rest."""
    i = ix.Var("i", 568)
    reversed_read = ix.Affine.constant(568) + ix.Affine.of(ix.DivMod(ix.Affine.of(i), 1, 4), -142) \
        + ix.Affine.of(ix.DivMod(ix.Affine.of(i), 4, None))
    text = ix.render(reversed_read)
    assert text.startswith("fl_index(") and "142" in text
    assert not ix.render(ix.Affine.of(i) * 3 + 7).startswith("fl_index(")
    assert "fl_index" in prelude_for(f"x[{text}]")


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_a_slab_in_shared_memory_keeps_softmax_exp_in_place_of_x(dtype):
    """Softmax over the middle axis of (300, 1000, 17), a block per slab in shared memory:
    the sum pass writes exp(x - max) over the slab's copy of x (no later pass reads x), so
    the output pass divides it and computes no exp; a cell whose output pass reads x
    again keeps x."""
    import fuselab
    from fuselab.plan import make_plan
    x = np.zeros((300, 1000, 17), dtype)
    soft = "m = x.max(1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(1, keepdims=True)"
    code = generate(make_plan(fuselab.trace_cell(soft, {"np": np, "x": x}).graph))[0]
    assert code.notes[0].startswith("slab tier") and "shared memory" in code.notes[0]
    sum_pass, output_pass = code.source.split("// Pass 2")[1].split("// Output pass")
    assert "exp(" in sum_pass and "x_row[col0 * 17 + il] = " in sum_pass
    assert "exp(" not in output_pass
    again = "m = x.max(1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(1, keepdims=True) + x"
    code = generate(make_plan(fuselab.trace_cell(again, {"np": np, "x": x}).graph))[0]
    assert code.notes[0].startswith("slab tier")
    assert "x_row[col0 * 17 + il] = " not in code.source


def test_many_rows_of_threads_fold_as_a_tree():
    """A column reduction over narrow kept runs (8 columns: 2 lanes a row of threads, 128
    rows) folds its rows in log2 steps, not one after another; 8 rows stay a plain loop."""
    import fuselab
    from fuselab.plan import make_plan
    narrow = np.zeros((2048, 4096, 8), np.float32)
    code = generate(make_plan(fuselab.trace_cell("v = x.var(axis=1)", {"np": np, "x": narrow}).graph))[0]
    assert code.config.lanes == 2
    assert "for (int h = 64; h > 0; h /= 2)" in code.source and "y < 128" not in code.source
    wide = np.zeros((4096, 1024), np.float32)
    code = generate(make_plan(fuselab.trace_cell("v = x.var(axis=0)", {"np": np, "x": wide}).graph))[0]
    assert code.config.lanes == 32 and "for (int h = " not in code.source


def test_broadcast_operands_are_gathered_and_the_rest_moves_as_vectors():
    """A softmax over axis 1 of (n, 1000, 33), unfused: the (n, 1, 33) max and sum follow
    no vector (runs of 33), so they are read element by element while the full-size
    operands and results move as 16-byte vectors; a transposed operand as large as the
    output keeps the strided path."""
    import fuselab
    from fuselab.plan import make_plan
    x = np.zeros((64, 1000, 33), np.float16)
    soft = "m = x.max(axis=1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(axis=1, keepdims=True)"
    codes = generate(make_plan(fuselab.trace_cell(soft, {"np": np, "x": x}).graph, "unfused"))
    pw = [c for c in codes if c.template is Template.POINTWISE]
    assert len(pw) == 3   # x - m, exp, e / s
    for code in (pw[0], pw[2]):
        assert code.notes[0].startswith("vector path: 8 elements") and "1 load gathered" in code.notes[0]
        assert "(i + e) / 33000 * 33 + (i + e) % 33]" in code.source
    assert "fl_store_vec<8>(out_y + i" in pw[2].source
    t = np.zeros((33, 1000), np.float32)
    code = generate(make_plan(fuselab.trace_cell("y = t.T * 2 + 1", {"np": np, "t": t}).graph))[0]
    assert "gathered" not in " ".join(code.notes)


def test_reductions_take_narrower_vectors_where_wide_ones_do_not_fit():
    """Runs of 33540 halves (batch-norm statistics over axes (0, 2, 3)) take 8-byte
    vectors, not single halves; kept runs of 6 floats take pairs."""
    import fuselab
    from fuselab.plan import make_plan
    x = np.zeros((3, 16, 15, 2236), np.float16)
    code = generate(make_plan(fuselab.trace_cell("s = x.sum(axis=(0, 2, 3))", {"np": np, "x": x}).graph))[0]
    assert code.config.width == 4, code.notes
    c = np.zeros((40000, 6), np.float32)
    code = generate(make_plan(fuselab.trace_cell("s = c.sum(axis=0)", {"np": np, "c": c}).graph))[0]
    assert code.config.width == 2, code.notes


@pytest.mark.parametrize("source, dtype", [("v = x.var(axis=0)", np.uint16), ("v = x.var(axis=0)", np.float64),
                                           ("v = (x > 1).var(axis=0, ddof=1)\na = x.argmax(axis=0)", np.int8)])
def test_column_folds_fit_static_shared_memory(source, dtype):
    """A float64 variance's state over a few elements (six doubles a slot) folded by 32
    rows of threads of 32 columns asked 49,153 bytes of static shared memory, which ptxas
    refuses on the H200 (found by the GPU fuzzer, seed 7373): every configuration tuning
    may ask for keeps the fold buffer within FOLD_LIMIT, with fewer rows of warps where it
    must."""
    import re

    from fuselab import trace_cell
    from fuselab.codegen import ColumnConfig, generate_kernel
    from fuselab.codegen.reduction import FOLD_LIMIT
    from fuselab.plan import make_plan
    traced = trace_cell(source, {"np": np, "x": np.zeros((5, 32), dtype)})
    plan = make_plan(traced.graph, "max")
    (k,) = [i for i, kern in enumerate(plan.kernels) if kern.template is Template.REDUCTION]
    for width, lanes in ((1, 32), (4, 8), (2, 16), (1, 8)):
        cfg = ColumnConfig(width=width, rows=8, splits=2, lanes=lanes)
        code = generate_kernel(plan, k, CodegenOptions(), cfg)
        sizes = [int(n) for n in re.findall(r"__shared__ [^;]*fold\[(\d+)\]", code.source)]
        assert sizes and max(sizes) <= FOLD_LIMIT, (cfg, sizes)
        assert code.config.rows <= cfg.rows


@pytest.mark.parametrize("graph, cols, dtype, rows, staged", [
    (layernorm, 5, np.float32, 200_000, True), (rmsnorm, 29, np.float32, 40_000, True),
    (layernorm, 47, np.float16, 40_000, True), (softmax, 3, np.float32, 100_000, True),
    (layernorm, 60, np.float16, 200_000, False),   # longer rows: the warp tier won (0.96x)
    (layernorm, 32, np.float32, 200_000, False),   # rows of whole 16-byte vectors
    (rmsnorm, 29, np.float32, 1_000, False)])      # too few rows for a block of them an SM
def test_short_unaligned_rows_are_staged_by_default(graph, cols, dtype, rows, staged):
    """Contiguous rows of at most 48 columns off 16-byte vectors, enough of them to give
    each SM a block of rows: the heuristic takes the staged tier (16-byte vectors in and
    out of shared memory, a thread a row), and the warp tier's lane counts it would have
    taken stay candidates for the tuner."""
    from fuselab.codegen import launch_candidates
    plan = one_kernel(graph(rows, cols, dtype), Template.ROW)
    opts = CodegenOptions(sm_count=132)
    code = generate(plan, opts)[0]
    assert (code.config.tier == "staged") == staged, code.config
    cands = launch_candidates(plan, 0, opts)
    assert cands[0].key() == code.config.key()
    if staged:
        assert "heuristic" in code.config.why and "staged tier" in code.notes[0]
        assert {c.tier for c in cands[1:]} >= {"warp"} and any(c.tier == "warp" and c.threads >= 4 for c in cands)
    else:
        assert code.config.tier == "warp"
