"""Every op, dtype and template on the GPU against NumPy: the cases of the emulated
tests run for real, plus sizes that only a GPU makes quick (split reductions over
millions of elements, long rows, misaligned and strided views)."""
from __future__ import annotations

import numpy as np
import pytest

from fuselab.ir import GraphBuilder
from fuselab.plan import unfused_plan
from fuselab.plan.model import Template

from cases import (CONTIGUOUS_STAGED, STAGED_ROWS, Case, all_cases, elementwise_cases, reduction_cases, row_cases)
from gpu_util import check_plan
from graphs import layernorm, one_kernel, rmsnorm, softmax

pytestmark = pytest.mark.gpu

BIG = (elementwise_cases(shape=(1001, 257), bshape=(257,), seed=10)
       + reduction_cases(layouts=[((1 << 22,), None), ((1 << 16, 96), 0), ((96, 1 << 16), 1),
                                  ((16, 5000, 40), 1), ((7, 3000, 64), (0, 2))], seed=11)
       + row_cases(cols_list=(1024, 4096, 16384, 70000), rows=300, seed=12))


@pytest.mark.parametrize("case", all_cases() + BIG, ids=lambda c: c.id)
def test_case_matches_numpy(case: Case):
    for plan in case.plans:
        check_plan(plan, case.inputs, case.rtol, tune=not case.untuned)


def test_float16_modes():
    """numpy mode equals NumPy's op-by-op half rounding (but where CUDA's and glibc's float
    libm round a half differently); fast mode keeps float32 inside the kernel, so it is
    closer to the exact result than NumPy is."""
    from fuselab import runtime
    from fuselab.codegen import CodegenOptions
    from fuselab.interp import run_graph
    b = GraphBuilder()
    h = b.input("h", (1 << 20,), np.float16)
    y = h
    for op in ("exp", "sin", "sqrt", "log1p"):
        y = b.elemwise("multiply", [b.elemwise(op, [b.elemwise("absolute", [y])]), b.const(1.5, np.float16)])
    g = b.build([("y", y)])
    x = np.random.default_rng(0).uniform(-2, 2, 1 << 20).astype(np.float16)
    plan = one_kernel(g, Template.POINTWISE)
    exact = runtime.execute(plan, {"h": x}, options=CodegenOptions(fp16_math="numpy"))["y"].get()
    fast = runtime.execute(plan, {"h": x}, options=CodegenOptions(fp16_math="fast"))["y"].get()
    want = run_graph(g, {"h": x})["y"]
    assert np.mean(exact == want) > 0.99
    z = x.astype(np.float64)
    for op in (np.exp, np.sin, np.sqrt, np.log1p):
        z = op(np.abs(z)) * 1.5
    err_fast = np.abs(fast.astype(np.float64) - z).mean()
    err_numpy = np.abs(want.astype(np.float64) - z).mean()
    assert err_fast < err_numpy


def test_float16_native_arithmetic_is_bit_exact():
    """numpy mode computes float16 + - * neg abs in half (PTX .rn ops): over every bit
    pattern (subnormals, infinities, NaNs) they equal NumPy's float32-then-round, and a
    product followed by a sum is not contracted into one fma."""
    from fuselab import runtime
    from fuselab.interp import run_graph
    b = GraphBuilder()
    n = 1 << 20
    x, y = b.input("x", (n,), np.float16), b.input("y", (n,), np.float16)
    prod = b.elemwise("multiply", [x, y])
    outs = [("add", b.elemwise("add", [x, y])), ("sub", b.elemwise("subtract", [x, y])), ("mul", prod),
            ("neg", b.elemwise("negative", [x])), ("abs", b.elemwise("absolute", [y])),
            ("sq", b.elemwise("square", [x])), ("muladd", b.elemwise("add", [prod, x])),
            ("mulc", b.elemwise("add", [b.elemwise("multiply", [x, b.const(0.1, np.float16)]),
                                        b.const(3.3, np.float16)]))]
    g = b.build(outs)
    rng = np.random.default_rng(7)
    bits = np.concatenate([np.arange(1 << 16, dtype=np.uint16)] * (n >> 16))
    xs = bits.view(np.float16)
    ys = rng.integers(0, 1 << 16, n, dtype=np.uint16).view(np.float16)
    got = runtime.execute(one_kernel(g, Template.POINTWISE), {"x": xs, "y": ys})
    with np.errstate(all="ignore"):
        want = run_graph(g, {"x": xs, "y": ys})
    for name, _ in outs:
        a, w = got[name].get(), want[name]
        same = (a.view(np.uint16) == w.view(np.uint16)) | (np.isnan(a) & np.isnan(w))
        assert same.all(), f"{name}: {np.count_nonzero(~same)} of {n} differ, e.g. at {np.flatnonzero(~same)[:5]}"


def test_float16_division_is_ieee_division_rounded_for_every_pair():
    """fl_hdiv (float16 quotients through the approximate reciprocal and one correction)
    against IEEE float division rounded to float16, NumPy's float16 divide: all 2^32 pairs
    of bit patterns (subnormals, zeros, infinities, NaNs) on the GPU."""
    import cupy as cp
    from fuselab.codegen import CodegenOptions
    from fuselab.codegen.prelude import prelude_for
    body = r"""
extern "C" __global__ void check(unsigned long long* bad, unsigned int* example) {
    const unsigned int a_bits = blockIdx.x * blockDim.x + threadIdx.x;
    const float a = fl_from_half(fl_half_bits((unsigned short)a_bits));
    unsigned long long n = 0;
    for (unsigned int b_bits = 0; b_bits < 65536; ++b_bits) {
        const float b = fl_from_half(fl_half_bits((unsigned short)b_bits));
        const unsigned short got = fl_to_half(fl_hdiv(a, b)).bits, want = fl_to_half(a / b).bits;
        if (got != want && !((got & 0x7fff) > 0x7c00 && (want & 0x7fff) > 0x7c00)) {
            ++n;
            *example = (a_bits << 16) | b_bits;
        }
    }
    atomicAdd(bad, n);
}
"""
    kernel = cp.RawModule(code=prelude_for(body) + body, options=CodegenOptions().nvrtc_options()).get_function("check")
    bad, example = cp.zeros(1, cp.uint64), cp.zeros(1, cp.uint32)
    kernel((256,), (256,), (bad, example))
    e = int(example.get()[0])
    assert int(bad.get()[0]) == 0, f"{int(bad.get()[0])} pairs differ, e.g. a=0x{e >> 16:04x} b=0x{e & 0xffff:04x}"


def test_misaligned_and_strided_inputs():
    import cupy as cp
    b = GraphBuilder()
    x = b.input("x", (100_000,), np.float32)
    y = b.elemwise("add", [x, b.const(1.0, np.float32)])
    g = b.build([("y", y)])
    base = cp.arange(100_001, dtype=cp.float32)
    from fuselab import runtime
    got = runtime.execute(one_kernel(g, Template.POINTWISE), {"x": base[1:]})["y"]   # 4-byte misaligned
    cp.testing.assert_array_equal(got, base[1:] + 1)
    strided = cp.arange(200_000, dtype=cp.float32)[::2]
    got = runtime.execute(one_kernel(g, Template.POINTWISE), {"x": strided})["y"]
    cp.testing.assert_array_equal(got, strided + 1)


def test_argmax_nan_and_ties_follow_numpy():
    b = GraphBuilder()
    x = b.input("x", (64, 3000), np.float32)
    g = b.build([("amax", b.reduce("argmax", x, axis=1)), ("amin", b.reduce("argmin", x, axis=0)),
                 ("flat", b.reduce("argmax", x))])
    v = np.random.default_rng(3).integers(0, 4, (64, 3000)).astype(np.float32)   # many ties
    v[5, 17] = v[5, 2000] = np.nan
    v[9, 2999] = np.nan
    check_plan(unfused_plan(g), {"x": v})


@pytest.mark.parametrize("make", [softmax, layernorm, rmsnorm], ids=lambda f: f.__name__)
def test_row_kernels_at_benchmark_shapes(make):
    g = make(1 << 12, 1024)
    rng = np.random.default_rng(0)
    inputs = {g.nodes[i].args["name"]: rng.standard_normal(g.nodes[i].shape).astype(np.float32) * 3
              for i in g.input_ids}
    check_plan(one_kernel(g, Template.ROW), inputs, 1e-4)
    check_plan(unfused_plan(g), inputs, 1e-4)


def test_int_semantics_division_shift_overflow():
    rng = np.random.default_rng(1)
    av = rng.integers(-2 ** 31, 2 ** 31, 4096).astype(np.int32)
    av[:4] = [-2 ** 31, 7, -7, 0]
    for ops, cv in [(("floor_divide", "remainder", "multiply", "add", "subtract"),
                     rng.integers(-40, 40, 4096).astype(np.int32)),
                    (("left_shift", "right_shift", "power"), rng.integers(0, 40, 4096).astype(np.int32))]:
        cv[:4] = [-1, 0, 2, 0] if ops[0] == "floor_divide" else [1, 0, 33, 31]
        b = GraphBuilder()
        a, c = b.input("a", (4096,), np.int32), b.input("c", (4096,), np.int32)
        g = b.build([(op, b.elemwise(op, [a, c])) for op in ops])
        check_plan(one_kernel(g, Template.POINTWISE), {"a": av, "c": cv})


def test_float_to_int_casts_out_of_range_follow_x86():
    """NumPy leaves them undefined; on x86 (where NumPy runs) they give INT_MIN."""
    b = GraphBuilder()
    x = b.input("x", (6,), np.float64)
    g = b.build([("i32", b.astype(x, np.int32)), ("i64", b.astype(x, np.int64))])
    v = np.array([np.nan, np.inf, -np.inf, 3e10, -3e10, 2.7])
    with np.errstate(invalid="ignore"):
        check_plan(one_kernel(g, Template.POINTWISE), {"x": v}, twice=False)


@pytest.mark.parametrize("tier", ["warp", "block", "smem", "looped"])
@pytest.mark.parametrize("cols", [1000, 16384, 1031, 4318])   # rows of odd length and 8 bytes off 16
def test_every_row_tier_on_the_gpu(tier, cols):
    from fuselab import runtime
    from fuselab.codegen import CodegenOptions
    from fuselab.interp import run_graph
    rng = np.random.default_rng(8)
    for make in (softmax, layernorm, rmsnorm):
        g = make(257, cols)
        plan = one_kernel(g, Template.ROW)
        inputs = {n: rng.uniform(-2, 2, g.nodes[i].shape).astype(np.float32)
                  for n, i in zip(g.input_names(), g.input_ids)}
        got = runtime.execute(plan, inputs, options=CodegenOptions(row_tier=tier))
        check = runtime.compare(got, run_graph(g, inputs), 1e-4)
        assert check.ok, check.worst


@pytest.mark.parametrize("tier", ["warp", "thread", "slab", "slab-smem"])
def test_every_strided_row_tier_on_the_gpu(tier):
    """Rows along a strided axis in each of their tiers, forced (odd strides, partial
    slab chunks, argmin and std among the reductions), against NumPy."""
    from fuselab import runtime
    from fuselab.codegen import CodegenOptions

    from cases import strided_row_cases
    for case in strided_row_cases():
        got = runtime.execute(case.plans[0], case.inputs, options=CodegenOptions(row_tier=tier))
        check = runtime.compare(got, run_graph_of(case), case.rtol)
        assert check.ok, f"{case.id}, {tier} tier: {check.worst}"


@pytest.mark.parametrize("source, shape, dtype",
                         [(src, (shape[0] * 97, *shape[1:]), dt) for src, shape, dt in STAGED_ROWS]
                         + [(src, (shape[0] * 97, *shape[1:]), dt) for src, shape, dt, _ in CONTIGUOUS_STAGED],
                         ids=lambda v: str(v).split("\n")[0][:12])
def test_staged_strided_rows_on_the_gpu(source, shape, dtype):
    """The staged tier (a thread a row along a strided axis, or a contiguous row, the
    block's rows through shared memory, in 16-byte vectors), forced, at sizes of many
    blocks and a partial last one, against NumPy."""
    import fuselab
    from fuselab import runtime
    from fuselab.codegen import CodegenOptions, generate
    from fuselab.interp import run_graph
    rng = np.random.default_rng(22)
    ns = {"np": np, "x": rng.uniform(-2, 2, shape).astype(dtype), "g": rng.uniform(-1, 1, shape[1]).astype(dtype)}
    traced = fuselab.trace_cell(source, ns)
    plan = one_kernel(traced.graph, Template.ROW)
    options = CodegenOptions(row_tier="staged")
    assert generate(plan, options)[0].config.tier == "staged"
    inputs = {n: ns[n] for n in traced.graph.input_names()}
    got = runtime.execute(plan, inputs, options=options)
    check = runtime.compare(got, run_graph(traced.graph, inputs), 1e-2 if dtype == np.float16 else 1e-5)
    assert check.ok, check.worst


@pytest.mark.parametrize("shape,axis", [((300, 1000, 17), 1), ((400, 3000, 3), 1), ((1251, 600, 17), 1),
                                        ((8, 700, 1000), 1), ((700, 9000), 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_slab_rows_chosen_automatically(shape, axis, dtype):
    """Shapes whose strided rows are too few for a thread each but make slabs: the plan
    puts softmax in one row kernel of a slab tier, and it matches NumPy."""
    import fuselab
    from fuselab import runtime
    from fuselab.codegen import CodegenOptions, generate
    from fuselab.plan import make_plan
    from fuselab.interp import run_graph
    src = (f"m = x.max({axis}, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum({axis}, keepdims=True)\n"
           f"v = x.var({axis})")
    x = np.random.default_rng(3).uniform(-3, 3, shape).astype(dtype)
    g = fuselab.trace_cell(src, {"np": np, "x": x}).graph
    plan = make_plan(g, "auto")
    codes = generate(plan, CodegenOptions())
    assert len(plan.kernels) == 1 and codes[0].notes[0].startswith("slab tier"), [c.notes[0] for c in codes]
    got = runtime.execute(plan, {"x": x})
    # float16: against float32's results rounded, as NumPy's float16 sums along a strided
    # axis add in half at every step (of 3000 values, several percent off)
    x32 = x.astype(np.float32)
    g32 = fuselab.trace_cell(src, {"np": np, "x": x32}).graph
    want = {k: v.astype(dtype) for k, v in run_graph(g32, {"x": x32}).items()}
    check = runtime.compare(got, want, 1e-2 if dtype == np.float16 else 1e-4)
    assert check.ok, check.worst


def run_graph_of(case: Case):
    from fuselab.interp import run_graph
    return run_graph(case.graph, case.inputs)


@pytest.mark.parametrize("tier", ["auto", "warp", "block", "smem", "looped"])
@pytest.mark.parametrize("cols", [8, 16, 1000, 4096, 32768])
def test_float16_row_max_and_min_of_packed_halves(tier, cols):
    """A float16 row's max and min of a cached input fold whole packs of halves
    (fl_hpick_pack: max.NaN.f16x2 on sm_80+): exactly NumPy's, with NaN winning, infinities,
    subnormals and the largest halves placed in every lane of a pack."""
    from fuselab import runtime
    from fuselab.codegen import CodegenOptions
    from fuselab.interp import run_graph
    b = GraphBuilder()
    x = b.input("x", (67, cols), np.float16)
    mx = b.reduce("max", x, axis=1, keepdims=True)
    mn = b.reduce("min", x, axis=1)
    g = b.build([("mx", mx), ("mn", mn), ("d", b.elemwise("subtract", [x, mx]))])
    rng = np.random.default_rng(cols)
    v = (rng.standard_normal((67, cols)) * 100).astype(np.float16)
    specials = [np.nan, np.inf, -np.inf, 65504, -65504, 6e-8, -6e-8]
    for r in range(1, 64):
        v[r, rng.integers(0, cols)] = specials[r % len(specials)]
    v[64, :] = np.nan
    v[65, :] = -np.inf
    v[66, :] = 5e-8   # subnormal rows
    plan = one_kernel(g, Template.ROW)
    got = runtime.execute(plan, {"x": v}, options=CodegenOptions(row_tier=tier))
    want = run_graph(g, {"x": v})
    for name in ("mx", "mn", "d"):
        np.testing.assert_array_equal(got[name].get(), want[name], err_msg=f"{name}, {tier} tier, {cols} columns")


def _planned_and_run(source: str, inputs: dict):
    """The cell planned `auto` for this GPU, its heuristics' codes, its inputs on the GPU
    and the results of those codes: what a variant of one kernel is compared with."""
    import cupy as cp
    from fuselab import runtime, trace_cell
    from fuselab.codegen import generate
    from fuselab.plan import make_plan
    from fuselab.runtime.device import device_options
    traced = trace_cell(source, {"np": np, **inputs})
    plan = make_plan(traced.graph, "auto")
    opts = device_options(None)
    plain = generate(plan, opts)
    on_gpu = {n: cp.asarray(v) for n, v in traced.inputs.items()}
    return plan, opts, plain, on_gpu, runtime.execute(plan, on_gpu, codes=plain)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int8])
def test_gathered_operands_under_wider_vectors_on_the_gpu(dtype):
    """The `gather` candidate (vectors wider than the runs of small operands, those
    gathered element by element), with and without tables, gives the bits of the plain
    kernel at sizes with many blocks: per-channel operands over runs of 18 elements."""
    import cupy as cp
    from fuselab import runtime
    from fuselab.codegen import generate_kernel, launch_candidates
    rng = np.random.default_rng(7)
    inputs = {"x": (rng.standard_normal((301, 114, 2, 9)) * 8).astype(dtype),
              "m": (rng.standard_normal((1, 114, 1, 1)) * 8).astype(dtype),
              "s": rng.uniform(1, 3, (1, 114, 1, 1)).astype(dtype)}
    source = "y = (x - m) * s" if dtype == np.int8 else "y = (x - m) / np.sqrt(s * s + 1)"
    plan, opts, plain, on_gpu, want = _planned_and_run(source, inputs)
    wide = [c for c in launch_candidates(plan, 0, opts) if c.gather]
    assert wide
    for cfg in wide:
        code = generate_kernel(plan, 0, opts, cfg)
        assert code.config.key() == cfg.key() and "gathered" in code.notes[0]
        got = runtime.execute(plan, on_gpu, codes=[code])
        cp.testing.assert_array_equal(got["y"], want["y"])


@pytest.mark.parametrize("source, shape", [("y = x.std(axis=1)", (22588, 231, 2)),
                                           ("m = x.mean(axis=1)\nv = x.var(axis=1)", (4100, 70, 3)),
                                           ("y = x.sum(axis=1)", (3000, 517, 4))])
def test_inner_candidates_of_short_kept_run_reductions_on_the_gpu(source, shape):
    """A column-layout reduction whose kept run is shorter than a warp also offers the
    inner strategy (lanes along the strided reduced axis); every candidate agrees with
    NumPy within the reduction-order tolerance, at sizes with many blocks."""
    import cupy as cp
    from fuselab import runtime
    from fuselab.codegen import generate_kernel, launch_candidates
    from fuselab.codegen.config import InnerConfig
    from fuselab.interp import run_graph
    rng = np.random.default_rng(11)
    inputs = {"x": (rng.standard_normal(shape) * 3 + 10).astype(np.float32)}
    plan, opts, plain, on_gpu, _ = _planned_and_run(source, inputs)
    want = run_graph(plan.graph, inputs)
    cands = launch_candidates(plan, 0, opts)
    assert [c for c in cands if isinstance(c, InnerConfig) and "short kept run" in c.why]
    for cfg in cands:
        code = generate_kernel(plan, 0, opts, cfg)
        assert code.config.key() == cfg.key()
        got = runtime.execute(plan, on_gpu, codes=[code, *plain[1:]])
        for name in want:
            np.testing.assert_allclose(cp.asnumpy(got[name]), want[name], rtol=2e-5, atol=1e-5,
                                       err_msg=f"{cfg}")


@pytest.mark.parametrize("cell", ["bn16", "exp_w", "scale0"])
def test_tables_of_broadcast_values_on_the_gpu(cell):
    """The `tables` candidate (values of broadcast operands alone computed once per
    block into shared memory) gives the bits of the plain kernel, at sizes with many
    blocks: a float16 batch norm over runs of odd length, a row of exp(w) read as
    vectors from shared memory, a float32 scale along axis 0; both norms from given
    statistics, not from a reduction in the cell, whose epilogue the plan may give the
    square root (the bn16 cell's did once the cost model charged split reductions' combine)."""
    import cupy as cp
    from fuselab import runtime
    from fuselab.codegen import generate_kernel
    from fuselab.codegen.config import PointwiseConfig
    rng = np.random.default_rng(5)
    source, inputs = {
        "bn16": ("y = (x - m) / np.sqrt(v + 1e-5)", {"x": rng.standard_normal((17, 2, 1001, 7)).astype(np.float16),
                                                     "m": rng.standard_normal((1, 2, 1, 1)).astype(np.float16),
                                                     "v": rng.uniform(0.5, 2.0, (1, 2, 1, 1)).astype(np.float16)}),
        "exp_w": ("y = x * np.exp(w)", {"x": rng.standard_normal((4099, 256)).astype(np.float32),
                                        "w": rng.standard_normal(256).astype(np.float32)}),
        "scale0": ("y = (x - m) / np.sqrt(v + 1e-5)", {"x": rng.standard_normal((3001, 517)).astype(np.float32),
                                                       "m": rng.standard_normal(517).astype(np.float32),
                                                       "v": rng.uniform(0.5, 2.0, 517).astype(np.float32)}),
    }[cell]
    plan, opts, plain, on_gpu, want = _planned_and_run(source, inputs)
    tabled = 0
    for k, kern in enumerate(plan.kernels):
        if kern.template.value != "pointwise":
            continue
        code = generate_kernel(plan, k, opts, PointwiseConfig(block=opts.block_size, tables=True))
        assert code.config.tables, kern.name
        got = runtime.execute(plan, on_gpu, codes=[code if j == k else c for j, c in enumerate(plain)])
        for name in want:
            cp.testing.assert_array_equal(got[name], want[name])
        tabled += 1
    assert tabled >= 1


@pytest.mark.parametrize("cell", ["var16_column", "exp_w_inner", "scale_split"])
def test_reduction_tables_on_the_gpu(cell):
    """Reduction kernels' tables (values of small operands alone computed once per block,
    the heuristic's default where there are any): every launch candidate gives the same
    bits with and without them, at sizes of many blocks, split reductions included."""
    import cupy as cp
    from dataclasses import replace
    from fuselab import runtime
    from fuselab.codegen import generate_kernel, launch_candidates
    rng = np.random.default_rng(6)
    source, inputs = {
        "var16_column": ("v = ((x - (m / 40.0).astype(np.float16)) ** 2).sum(axis=1)",
                         {"x": rng.standard_normal((9, 60001, 21)).astype(np.float16),
                          "m": rng.standard_normal((9, 1, 21)).astype(np.float32)}),
        "exp_w_inner": ("s = (x * np.exp(w)).sum(axis=1)", {"x": rng.standard_normal((3001, 517)).astype(np.float32),
                                                             "w": rng.standard_normal(517).astype(np.float32)}),
        "scale_split": ("s = (x / np.sqrt(v + 1)).max(axis=0)", {"x": rng.standard_normal((400003, 7)).astype(np.float64),
                                                                  "v": rng.uniform(0, 2, 7).astype(np.float64)}),
    }[cell]
    plan, opts, plain, on_gpu, want = _planned_and_run(source, inputs)
    tabled = 0
    for k, kern in enumerate(plan.kernels):
        if kern.template.value != "reduction" or not plain[k].config.tables:
            continue
        for cfg in launch_candidates(plan, k, opts):
            got = [runtime.execute(plan, on_gpu, codes=[generate_kernel(plan, k, opts, replace(cfg, tables=t))
                                                        if j == k else c for j, c in enumerate(plain)])
                   for t in (True, False)]
            for name in want:
                cp.testing.assert_array_equal(got[0][name], got[1][name], err_msg=cfg.label())
        tabled += 1
    assert tabled >= 1


@pytest.mark.parametrize("run, dtype", [(21, np.float16), (33, np.float32), (13, np.int64), (3, np.float64)])
def test_column_blocks_of_whole_rows_on_the_gpu(run, dtype):
    """The whole-rows candidate of column reductions (a block of whole rows of `run`
    threads, the rest idle; reduce_layout.whole_row_lanes), like every other launch
    candidate, gives NumPy's sums, maxima and first-maximum indices at sizes of many
    blocks and splits."""
    import cupy as cp
    from fuselab import runtime
    from fuselab.codegen import generate_kernel, launch_candidates
    rng = np.random.default_rng(run)
    x = (rng.integers(-50, 50, (5, 40001, run)) if dtype == np.int64 else rng.standard_normal((5, 40001, run)))
    plan, opts, plain, on_gpu, want = _planned_and_run("s = x.sum(axis=1)\nm = x.max(axis=1)\ni = x.argmax(axis=1)",
                                                       {"x": x.astype(dtype)})
    (k,) = [k for k, kern in enumerate(plan.kernels) if kern.template.value == "reduction"]
    cands = launch_candidates(plan, k, opts)
    assert any(getattr(c, "lanes", 0) == run for c in cands)
    for cfg in cands:
        got = runtime.execute(plan, on_gpu, codes=[generate_kernel(plan, k, opts, cfg) if j == k else c
                                                   for j, c in enumerate(plain)])
        for name in ("m", "i"):
            cp.testing.assert_array_equal(got[name], want[name], err_msg=cfg.label())
        np.testing.assert_allclose(cp.asnumpy(got["s"]).astype(np.float64), cp.asnumpy(want["s"]).astype(np.float64),
                                   rtol=2e-2 if dtype == np.float16 else 1e-5, atol=1e-3, err_msg=cfg.label())


@pytest.mark.parametrize("cell", ["outer16", "shift32", "stencil16", "rowdiff16"])
def test_staged_stores_on_the_gpu(cell):
    """Stencil- and row-vector-path kernels whose rows keep less than 8 bytes of a
    vector aligned store through the warp's shared-memory stage: every launch candidate gives the bits of
    eager CuPy (float32) or of the heuristic's kernel (float16), at sizes with many
    blocks and warps whose last lanes have no item."""
    import cupy as cp
    from fuselab import runtime
    from fuselab.codegen import generate_kernel, launch_candidates
    rng = np.random.default_rng(9)
    source, inputs = {
        "outer16": ("y = np.exp(-(u[:, None] - v[None, :]) ** 2)",
                    {"u": rng.standard_normal(3).astype(np.float16), "v": rng.standard_normal(1000003).astype(np.float16)}),
        "shift32": ("y = x[1:, 1:] - x[:-1, :-1] + 0.5 * x[1:, :-1]",
                    {"x": rng.standard_normal((1003, 1004)).astype(np.float32)}),
        "stencil16": ("y = 4 * x[1:-1, 1:-1] - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]",
                      {"x": rng.standard_normal((2001, 1024)).astype(np.float16)}),
        "rowdiff16": ("y = x[:, 1:] - x[:, :-1]", {"x": rng.standard_normal((3001, 1000)).astype(np.float16)}),
    }[cell]
    plan, opts, plain, on_gpu, want = _planned_and_run(source, inputs)
    assert "shared-memory stage" in plain[0].notes[0], plain[0].notes
    eager = cp.asarray(eval(source.split(" = ", 1)[1], {"np": cp, **on_gpu}))
    if inputs[next(iter(inputs))].dtype == np.float32:
        cp.testing.assert_array_equal(want["y"], eager)
    else:
        cp.testing.assert_allclose(want["y"].astype(cp.float32), eager.astype(cp.float32), rtol=2e-3, atol=2e-3)
    for cfg in launch_candidates(plan, 0, opts):
        code = generate_kernel(plan, 0, opts, cfg)
        got = runtime.execute(plan, on_gpu, codes=[code])
        cp.testing.assert_array_equal(got["y"], want["y"])
