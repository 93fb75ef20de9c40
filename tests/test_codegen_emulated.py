"""The generated kernels run on a CPU emulator of CUDA (tests/cuda_host.h) and match
NumPy: every op and dtype, casts, reductions in every layout (split ones included), the
three row tiers, views and empty arrays. No GPU needed; the GPU tests run the same cases
for real. Random programs: the differential fuzzer (test_fuzz.py, tests/fuzz)."""
from __future__ import annotations

import numpy as np
import pytest
from fuselab.interp import run_graph
from fuselab.runtime.verify import compare

from cases import CONTIGUOUS_STAGED, STAGED_ROWS, all_cases
from codegen_util import NVRTC_OK, needs_nvrtc, nvrtc_compile
from fuselab.codegen import CodegenOptions, generate
from cuda_host import EMULATED, HostRunner, needs_cxx

pytestmark = needs_cxx

CASES = all_cases()


@pytest.fixture(scope="module")
def runner():
    return HostRunner([p for c in CASES for p in c.plans])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case_matches_numpy(runner, case):
    want = run_graph(case.graph, case.inputs)
    for plan in case.plans:
        got = runner.run(plan, case.inputs)
        check = compare(got, want, case.rtol)
        assert check.ok, f"{plan.strategy} plan: {check.worst}"
        again = runner.run(plan, case.inputs)   # split reductions reset their counters: same bits
        for name in got:
            np.testing.assert_array_equal(again[name], got[name])


# The emulator runs blocks and a block's threads in one order; a GPU in none. Every case
# passed in reverse order too (all 692, 2026-12-05): CI keeps a sample of them so
# (a missing __syncthreads, or a last block that assumes which block comes last, gives
# other results there; tests/cuda_host.h `reverse_order`).
REVERSED = CASES[::8]


@pytest.mark.parametrize("case", REVERSED, ids=lambda c: c.id)
def test_case_matches_numpy_with_blocks_and_threads_in_reverse(runner, case, monkeypatch):
    monkeypatch.setenv("FL_EMU_ORDER", "reverse")
    want = run_graph(case.graph, case.inputs)
    for plan in case.plans:
        check = compare(runner.run(plan, case.inputs), want, case.rtol)
        assert check.ok, f"{plan.strategy} plan, in reverse order: {check.worst}"


CHUNK = 40


@needs_nvrtc
@pytest.mark.parametrize("first", range(0, len(CASES), CHUNK))
def test_cases_compile_with_nvrtc(first):
    """The GPU's compiler takes every case's kernels (the emulator's host compiler accepts
    C++ that NVRTC refuses, such as <cmath>'s INFINITY)."""
    nvrtc_compile([c for case in CASES[first:first + CHUNK] for plan in case.plans
                   for c in generate(plan, CodegenOptions())])   # raises CompileError, with the source


@pytest.mark.parametrize("tier", ["warp", "block", "smem", "looped"])
def test_every_row_tier_matches_numpy(tier):
    """Each tier forced on rows that every tier can take (the automatic choice picks one)."""
    from dataclasses import replace

    from fuselab.plan.model import Template
    from graphs import layernorm, one_kernel, rmsnorm, softmax
    rng = np.random.default_rng(7)
    plans = [one_kernel(make(9, 1000), Template.ROW) for make in (softmax, layernorm, rmsnorm)]
    runner = HostRunner(plans, replace(EMULATED, row_tier=tier))
    for plan in plans:
        code = runner.codes[(plan, runner.default)][0]
        assert code.notes[0].startswith({"smem": "block tier: a block per row", "block": "block tier: a block of"}
                                        .get(tier, tier))
        inputs = {n: rng.uniform(-2, 2, plan.graph.nodes[i].shape).astype(np.float32)
                  for n, i in zip(plan.graph.input_names(), plan.graph.input_ids)}
        check = compare(runner.run(plan, inputs), run_graph(plan.graph, inputs), 1e-4)
        assert check.ok, check.worst


def test_looped_rows_run_every_second_pass_from_the_end():
    """The looped tier re-reads a row in each pass, every second one from the row's end
    (what the previous pass read last is likeliest still in L2): over rows of many
    block-wide chunks, with a partial last chunk, softmax, layernorm and rmsnorm still
    give NumPy's results."""
    from dataclasses import replace

    from fuselab.plan.model import Template
    from graphs import layernorm, one_kernel, rmsnorm, softmax
    rng = np.random.default_rng(8)
    plans = [one_kernel(make(3, 70001), Template.ROW) for make in (softmax, layernorm, rmsnorm)]
    runner = HostRunner(plans, replace(EMULATED, row_tier="looped"))
    for plan in plans:
        code = runner.codes[(plan, runner.default)][0]
        assert "every second one from the row's end" in code.notes[0]
        assert "chunk > 0; --chunk" in code.source
        inputs = {n: rng.uniform(-2, 2, plan.graph.nodes[i].shape).astype(np.float32)
                  for n, i in zip(plan.graph.input_names(), plan.graph.input_ids)}
        check = compare(runner.run(plan, inputs), run_graph(plan.graph, inputs), 1e-4)
        assert check.ok, check.worst


@pytest.mark.parametrize("tier", ["warp", "thread", "slab", "slab-smem"])
def test_every_strided_row_tier_matches_numpy(tier):
    """Rows along a strided axis, a thread each: held in registers (warp tier, one lane) or
    re-read in every pass (thread tier); or a block per slab of adjacent rows, re-read or in
    shared memory (slabs of 3, 17, and 45 rows: a chunk of 32 and a partial one), forced
    on rows every tier can take."""
    from dataclasses import replace

    from cases import strided_row_cases
    from fuselab.plan.analysis import row_shapes
    cases = [c for c in strided_row_cases() if "-float32-" in c.id or
             (tier.startswith("slab") and "-float16-" in c.id)]
    runner = HostRunner([p for c in cases for p in c.plans], replace(EMULATED, row_tier=tier))
    for case in cases:
        code = runner.codes[(case.plans[0], runner.default)][0]
        if "rows along axis" not in code.notes[0]:
            continue   # contiguous rows
        space = case.plans[0].kernels[0].space
        in_registers = tier == "warp" and row_shapes(space.shape, space.axes[0]).cols <= 64
        want = {"slab": "slab tier: a block per slab", "slab-smem": "slab tier: a block per slab"}.get(
            tier, "a thread per row" if in_registers else "thread tier")
        assert code.notes[0].startswith(want), code.notes[0]
        if tier.startswith("slab"):
            assert ("shared memory" in code.notes[0]) == (tier == "slab-smem"), code.notes[0]
        check = compare(runner.run(case.plans[0], case.inputs), run_graph(case.graph, case.inputs), case.rtol)
        assert check.ok, f"{case.id}: {check.worst}"


def _forced_staged(source, shape, dtype, seed):
    """A cell over x (and a column input g) traced into one row kernel, and an emulator
    runner of it with the staged tier forced: (namespace, trace, plan, runner, its code)."""
    from dataclasses import replace

    import fuselab
    from fuselab.plan.model import Template
    from graphs import one_kernel
    rng = np.random.default_rng(seed)
    ns = {"np": np, "x": rng.uniform(-2, 2, shape).astype(dtype), "g": rng.uniform(-1, 1, shape[1]).astype(dtype)}
    traced = fuselab.trace_cell(source, ns)
    plan = one_kernel(traced.graph, Template.ROW)
    runner = HostRunner([plan], replace(EMULATED, row_tier="staged"))
    return ns, traced, plan, runner, runner.codes[(plan, runner.default)][0]


@pytest.mark.parametrize("source, shape, dtype", STAGED_ROWS, ids=lambda v: str(v).split("\n")[0][:12])
def test_staged_strided_rows_match_numpy(source, shape, dtype):
    """The staged tier: a thread a row along a strided axis, the block's rows (whole outer
    indices: 128 of stride 2 or 4, 192 of stride 3) copied through shared memory in and
    out; the last block partial (rows past the end compute a copy and store nothing),
    per-row outputs (std, argmax) and a column input beside them."""
    ns, traced, plan, runner, code = _forced_staged(source, shape, dtype, 21)
    threads = 192 if shape[2] == 3 else 128
    assert f"the block's {threads} rows read and written through shared memory" in code.notes[0], code.notes[0]
    assert code.config.tier == "staged" and code.block[0] == threads
    inputs = {n: ns[n] for n in traced.graph.input_names()}
    check = compare(runner.run(plan, inputs), run_graph(traced.graph, inputs), 1e-2 if dtype == np.float16 else 1e-5)
    assert check.ok, check.worst


@pytest.mark.parametrize("source, shape, dtype, threads", CONTIGUOUS_STAGED,
                         ids=lambda v: str(v).split("\n")[0][:12] if isinstance(v, str) else None)
def test_staged_contiguous_rows_match_numpy(source, shape, dtype, threads):
    """The staged tier over contiguous rows: the block's rows, one contiguous run starting
    on a 16-byte vector (whole warps of rows), copied in and out of shared memory in
    vectors (the array's last vector, where partial, element by element), a thread a row;
    the last block partial, per-row outputs beside full ones, a column input; fewer rows a
    block where 128 rows' stages would not fit (float64 rows of 30: 64 rows with two
    stages, 32 with three)."""
    ns, traced, plan, runner, code = _forced_staged(source, shape, dtype, 29)
    assert code.config.tier == "staged" and code.block[0] == threads, (code.config, code.block)
    assert "fl_stage_in<" in code.source and f"the block's {threads} rows" in code.notes[0], code.notes[0]
    inputs = {n: ns[n] for n in traced.graph.input_names()}
    got, want = runner.run(plan, inputs), run_graph(traced.graph, inputs)
    check = compare(got, want, 1e-2 if dtype == np.float16 else 1e-5)
    assert check.ok, check.worst
    again = runner.run(plan, inputs)
    for name in got:
        np.testing.assert_array_equal(again[name], got[name])


@pytest.mark.parametrize("tier, name", [("staged", "stage_base"), ("warp", "row_base"), ("staged", "row_base")])
def test_inputs_named_as_the_row_templates_locals(tier, name):
    """An input named like one of the row kernel's own locals (read at another offset
    than its row's, so in the element code) is renamed, not left to hide the local (a
    float32 `stage_base` made NVRTC refuse the kernel; an int32 one wrote elsewhere)."""
    from dataclasses import replace

    import fuselab
    from fuselab.plan.model import Template
    from graphs import one_kernel
    rng = np.random.default_rng(23)
    ns = {"np": np, "x": rng.uniform(-2, 2, (40, 6, 4)).astype(np.float32),
          name: rng.integers(0, 3, (40, 6, 4)).astype(np.int32)}
    traced = fuselab.trace_cell(f"y = x - x.max(1, keepdims=True) + {name}[:, :1, :]", ns)
    plan = one_kernel(traced.graph, Template.ROW)
    runner = HostRunner([plan], replace(EMULATED, row_tier=tier))
    assert runner.codes[(plan, runner.default)][0].config.tier == tier
    nvrtc_compile(runner.codes[(plan, runner.default)]) if NVRTC_OK else None
    inputs = {n: ns[n] for n in traced.graph.input_names()}
    check = compare(runner.run(plan, inputs), run_graph(traced.graph, inputs), 1e-6)
    assert check.ok, check.worst


def test_rows_of_no_columns_do_not_take_the_staged_tier():
    """The staged tier needs columns to stage (a zero-size shared array does not
    compile): rows of none fall back to the warp tier."""
    from dataclasses import replace

    import fuselab
    from fuselab.codegen import generate
    from fuselab.plan.model import Template
    from graphs import one_kernel
    traced = fuselab.trace_cell("y = x - x.sum(1, keepdims=True)\nz = x.sum(1)",
                                {"np": np, "x": np.zeros((40, 0, 4), np.float32)})
    code = generate(one_kernel(traced.graph, Template.ROW), replace(EMULATED, row_tier="staged"))[0]
    assert code.config.tier == "warp" and "_stage[" not in code.source


def _hand_kernel(body: str, block: int, size: int | None = None, smem: int = 0):
    """A KernelCode around a hand-written body (the emulator's own behaviour under test),
    one block of `block` threads over int32 arrays x and y of `size` (default: `block`)."""
    from fuselab.codegen.model import KernelCode, Param
    from fuselab.ir import GraphBuilder
    from fuselab.plan import Plan, Template, make_kernel
    b = GraphBuilder()
    x = b.input("x", (size or block,), np.int32)
    y = b.elemwise("negative", [x])
    g = b.build([("y", y)])
    plan = Plan(g, (make_kernel(g, [y], Template.POINTWISE),))
    src = ('extern "C" __global__ void k_hand(const int* __restrict__ in_x, int* __restrict__ out_y) {\n'
           f"{body}\n}}\n")
    code = KernelCode(0, "k_hand", src, Template.POINTWISE, (1, 1, 1), (block, 1, 1), smem,
                      (Param("input", "in_x", 0), Param("output", "out_y", 1)), ())
    return plan, code


def test_the_emulator_reports_a_shuffle_that_a_lane_never_reaches():
    from cuda_host import EmulatorError, HostRunner
    runner = HostRunner([])
    plan, code = _hand_kernel("    if (threadIdx.x == 3) return;\n"
                              "    out_y[threadIdx.x] = __shfl_xor_sync(0xffffffffu, in_x[threadIdx.x], 1, 32);", 32)
    runner.codes[(plan, runner.default)] = (code,)
    from cuda_host import build
    runner.launchers.update(build([(code, plan)]))
    with pytest.raises(EmulatorError, match="deadlock"):
        runner.run(plan, {"x": np.arange(32, dtype=np.int32)})


def test_the_emulator_runs_barriers_and_shuffles_in_order():
    """Shared memory through __syncthreads (returned threads count as arrived) and a
    butterfly of shuffles give the same values as on a GPU."""
    from cuda_host import HostRunner, build
    runner = HostRunner([])
    plan, code = _hand_kernel(
        "    __shared__ int s[64];\n"
        "    s[threadIdx.x] = in_x[threadIdx.x];\n"
        "    __syncthreads();\n"
        "    int v = s[63 - threadIdx.x];\n"
        "    for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m, 32);\n"
        "    if (threadIdx.x >= 60) return;\n"
        "    __syncthreads();\n"
        "    out_y[threadIdx.x] = v;", 64)
    runner.codes[(plan, runner.default)] = (code,)
    runner.launchers.update(build([(code, plan)]))
    x = np.arange(64, dtype=np.int32) * 3
    got = runner.run(plan, {"x": x})["y"]
    rev = x[::-1]
    want = np.concatenate([np.full(32, rev[:32].sum()), np.full(32, rev[32:].sum())]).astype(np.int32)
    np.testing.assert_array_equal(got[:60], want[:60])


@pytest.mark.parametrize("barrier", [True, False])
def test_reverse_order_exposes_a_missing_barrier(barrier, monkeypatch):
    """Reading shared memory another thread writes needs a __syncthreads between: without
    it the value read depends on the order threads run (on a GPU, on nothing one can
    rely on). The emulator's two orders give one result with the barrier and two without,
    which is how the reversed cases above would catch a generated kernel missing one."""
    from cuda_host import HostRunner, build
    runner = HostRunner([])
    plan, code = _hand_kernel(
        "    __shared__ int s[64];\n"
        "    s[threadIdx.x] = in_x[threadIdx.x];\n"
        + ("    __syncthreads();\n" if barrier else "")
        + "    out_y[threadIdx.x] = s[63 - threadIdx.x];", 64)
    runner.codes[(plan, runner.default)] = (code,)
    runner.launchers.update(build([(code, plan)]))
    x = np.arange(64, dtype=np.int32) * 3
    forward = runner.run(plan, {"x": x})["y"]
    monkeypatch.setenv("FL_EMU_ORDER", "reverse")
    reverse = runner.run(plan, {"x": x})["y"]
    if barrier:
        np.testing.assert_array_equal(forward, x[::-1])
        np.testing.assert_array_equal(reverse, x[::-1])
    else:
        assert not np.array_equal(forward, reverse)


@pytest.mark.parametrize("declaration", ["__shared__ int s[64];", "__shared__ __align__(16) int s[2][32];",
                                         "extern __shared__ __align__(16) int s[];"])
def test_shared_memory_starts_as_garbage_in_every_block(declaration):
    """A GPU's shared memory holds whatever the last block left: the emulator fills it
    with 0xff bytes at each block (static and dynamic), so that a kernel reading a slot
    it never wrote reads -1 here, not the zeros a C++ static starts with."""
    from cuda_host import HostRunner, build
    runner = HostRunner([])
    index = "s[threadIdx.x / 32][threadIdx.x % 32]" if "[2][32]" in declaration else "s[threadIdx.x]"
    plan, code = _hand_kernel(f"    {declaration}\n"
                              f"    out_y[threadIdx.x] = {index};\n"
                              "    __syncthreads();\n"
                              f"    {index} = 7;", 64, smem=256)
    runner.codes[(plan, runner.default)] = (code,)
    runner.launchers.update(build([(code, plan)]))
    x = np.zeros(64, np.int32)
    for _ in range(2):   # (the second launch too: the first one's 7s are not seen)
        np.testing.assert_array_equal(runner.run(plan, {"x": x})["y"], np.full(64, -1, np.int32))


def test_float16_division_rounds_as_ieee_division():
    """fl_hdiv (float16 quotients, here with the exact reciprocal) against IEEE division
    rounded to float16 (NumPy's float16 divide): every float16 dividend, divisors over
    the whole range (every 61st bit pattern) with zeros, subnormals, infinities and NaN."""
    from cuda_host import HostRunner, build
    b_bits = np.unique(np.concatenate([np.arange(0, 65536, 61), [0, 0x8000, 1, 0x8001, 0x3ff, 0x400, 0x7bff, 0xfbff,
                                                                   0x7c00, 0xfc00, 0x7e00, 0x3c00, 0xbc00]])).astype(np.int32)
    block = 64
    runner = HostRunner([])
    plan, code = _hand_kernel(
        "    int bad = 0;\n"
        f"    for (int k = threadIdx.x; k < {len(b_bits)}; k += {block}) {{\n"
        "        const float b = fl_from_half(fl_half{(unsigned short)in_x[k]});\n"
        "        for (int a_bits = 0; a_bits < 65536; ++a_bits) {\n"
        "            const float a = fl_from_half(fl_half{(unsigned short)a_bits});\n"
        "            const unsigned short got = fl_to_half(fl_hdiv(a, b)).bits;\n"
        "            const unsigned short want = fl_to_half(a / b).bits;\n"
        "            const bool both_nan = (got & 0x7fff) > 0x7c00 && (want & 0x7fff) > 0x7c00;\n"
        "            bad += got != want && !both_nan;\n"
        "        }\n"
        "    }\n"
        "    out_y[threadIdx.x] = bad;", block, len(b_bits))
    runner.codes[(plan, runner.default)] = (code,)
    runner.launchers.update(build([(code, plan)]))
    got = runner.run(plan, {"x": b_bits})["y"][:block]
    assert got.sum() == 0, f"{got.sum()} quotients differ"


STENCILS = [c for c in CASES if c.id.startswith("stencil-")]


@pytest.mark.parametrize("case", STENCILS, ids=lambda c: c.id)
def test_stencil_rows_per_thread_give_the_same_bits(case):
    """The stencil path at 1, 2, 3, 5 and 8 rows a thread (blocks of rows that do not
    divide the marched axis start early and overlap) gives the same bits at every count,
    NumPy's bits where NumPy computes in the array's type, loads each aligned vector
    once a thread, and, marching, loads in each row only what no earlier row loaded."""
    from fuselab.codegen import PointwiseConfig, generate_kernel
    (plan,) = case.plans
    code = generate_kernel(plan, 0, EMULATED)
    if not code.notes[0].startswith("stencil path"):
        pytest.skip(f"not the stencil path: {code.notes[0]}")
    codes = {u: generate_kernel(plan, 0, EMULATED, PointwiseConfig(block=64, unroll=u)) for u in (1, 2, 3, 5, 8)}
    runner = HostRunner([], generated=[(plan, (c,)) for c in codes.values()])
    got = {u: runner.run_codes(plan, (c,), case.inputs) for u, c in codes.items()}
    want = run_graph(case.graph, case.inputs)
    for u, out in got.items():
        for name in out:
            np.testing.assert_array_equal(out[name], got[1][name], err_msg=f"{u} rows a thread")
            if plan.graph.nodes[dict(plan.graph.outputs)[name]].dtype != np.float16:
                np.testing.assert_array_equal(out[name], want[name], err_msg=f"{u} rows a thread against NumPy")
        src = codes[u].source
        loads = [l.split("fl_load_vec<")[1] for l in src.splitlines() if "= fl_load_vec<" in l]
        assert len(loads) == len(set(loads)), "an aligned vector loaded twice by one thread"
        if u > 1 and "for (int k = 0;" in src:
            march = src.split("for (int k = 0;")[1].split("\n        }")[0]
            per_row = sum("= fl_load_vec<" in l for l in march.splitlines())
            one_row = sum("= fl_load_vec<" in l for l in codes[1].source.splitlines())
            # the stencil path is taken only where rows share loads
            assert per_row < one_row, f"{u} rows a thread: {per_row} loads a row, as many as one row alone"


STAGED_CELLS = [
    # rows of an odd number of float16 columns: no two of a row's neighbours share an
    # aligned 16-byte store; two outputs of two types through one stage
    ("y = np.exp(-(u[:, None] - v[None, :]) ** 2)\nz = (u[:, None] * v[None, :]).astype(np.float32)",
     {"u": ((3,), np.float16), "v": ((1001,), np.float16)}),
    # a float32 stencil whose rows are 43 columns long (one element of a vector aligned)
    ("y = x[1:, 1:] - x[:-1, :-1] + 0.5 * x[1:, :-1]", {"x": ((11, 44), np.float32)}),
    # the row-vector path (no rows shared): differences along rows of 71 float16 columns
    ("y = x[:, 1:] - x[:, :-1]", {"x": ((37, 72), np.float16)}),
]


@pytest.mark.parametrize("cell", range(len(STAGED_CELLS)))
def test_staged_stores_match_numpy(cell):
    """Rows whose starts keep less than 8 bytes of a vector aligned go out through the
    warp's shared-memory stage: every element stored once, where it belongs, at 1-4 rows
    a thread in blocks of 64 (warps whose last lanes have no item: they load the last
    item's vectors and store nothing), the same bits as NumPy's (float32) or as one row
    a thread (float16). The row-vector path's too (the rows' last columns by a loop of
    their own)."""
    from fuselab import trace_cell
    from fuselab.codegen import PointwiseConfig, generate_kernel
    from fuselab.plan import make_plan
    source, shapes = STAGED_CELLS[cell]
    rng = np.random.default_rng(cell)
    inputs = {n: rng.standard_normal(shape).astype(dt) for n, (shape, dt) in shapes.items()}
    traced = trace_cell(source, {"np": np, **inputs})
    plan = make_plan(traced.graph, "max")
    assert len(plan.kernels) == 1
    codes = {u: generate_kernel(plan, 0, EMULATED, PointwiseConfig(block=64, unroll=u)) for u in (1, 2, 3, 4)}
    assert all("shared-memory stage" in c.notes[0] for c in codes.values()), codes[1].notes
    assert all(("stencil path" in c.notes[0]) == (cell < 2) for c in codes.values())
    runner = HostRunner([], generated=[(plan, (c,)) for c in codes.values()])
    want = run_graph(plan.graph, {n: traced.inputs[n] for n in plan.graph.input_names()})
    got = {u: runner.run_codes(plan, (c,), traced.inputs) for u, c in codes.items()}
    for u, out in got.items():
        for name in out:
            np.testing.assert_array_equal(out[name], got[1][name], err_msg=f"{u} rows a thread")
            if out[name].dtype != np.float16:
                np.testing.assert_array_equal(out[name], want[name], err_msg=f"{u} rows a thread against NumPy")
            else:
                np.testing.assert_allclose(out[name].astype(np.float32), want[name].astype(np.float32), rtol=1e-2)


GROUP_EDGES = (2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33, 64, 65, 132)


@pytest.mark.parametrize("length", GROUP_EDGES)
def test_reductions_fold_each_element_once_around_read_groups(length):
    """Reductions read their elements in groups of UNROLL steps (the next group while
    one folds), then the steps left: integer sums and arg-maxima (exact in any order)
    over lengths around the group edges, in every column and inner strategy and split,
    are NumPy's, so no element is skipped or folded twice."""
    from fuselab.codegen import ColumnConfig, InnerConfig
    rng = np.random.default_rng(length)
    inputs = {"x": rng.integers(-1000, 1000, (length, 6)).astype(np.int64),
              "t": rng.integers(-5, 5, (6, length)).astype(np.int32)}
    wide = 4 if length % 4 == 0 else 1   # rows of t in 16-byte vectors where they divide
    configs = {
        "a = x.sum(axis=0)": [ColumnConfig(width=w, rows=r, splits=s, lanes=l)
                              for w, r, s, l in ((1, 1, 1, 8), (2, 1, 1, 4), (1, 2, 2, 8), (2, 8, 3, 4), (1, 1, 1, 1))],
        "b = t.sum(axis=1)\nc = t.argmax(axis=1)": [
            InnerConfig(mode=m, group=g, block=64, splits=s, width=w)
            for m, g, s, w in (("lanes", 1, 1, 1), ("lanes", 4, 1, wide), ("lanes", 32, 1, 1), ("block", 32, 1, 1),
                               ("block", 32, 3, wide))]}
    for source, cfgs in configs.items():
        _reduction_configs_match_numpy(source, inputs, cfgs)


def _reduction_configs_match_numpy(source: str, inputs: dict, cfgs: list, note: str = "") -> None:
    """The cell's one reduction kernel (planned `max`) in each of `cfgs`, run on the
    emulator: NumPy's results bit for bit (each configuration taken, each kernel's notes
    holding `note`, and NVRTC taking them where it is here)."""
    from fuselab import trace_cell
    from fuselab.codegen import generate_kernel
    from fuselab.plan import make_plan
    traced = trace_cell(source, {"np": np, **inputs})
    plan = make_plan(traced.graph, "max")
    (k,) = [i for i, kern in enumerate(plan.kernels) if kern.template.value == "reduction"]
    codes = [generate_kernel(plan, k, EMULATED, cfg) for cfg in cfgs]
    assert all(c.config == cfg for c, cfg in zip(codes, cfgs)), "a configuration was not taken"
    assert all(note in " ".join(c.notes) for c in codes), note
    if NVRTC_OK:
        nvrtc_compile(codes)
    runner = HostRunner([], generated=[(plan, (c,)) for c in codes])
    want = run_graph(plan.graph, traced.inputs)
    for code in codes:
        got = runner.run_codes(plan, (code,), traced.inputs)
        for name in got:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{source!r} {code.config}")


@pytest.mark.parametrize("length", (3, 5, 6, 7, 9, 13, 63, 1001, 4099))
def test_a_full_reduction_of_any_length_reads_vectors_and_a_tail(length):
    """A run whose length is no multiple of the vector (the full reduction of an odd size)
    reads whole vectors, then its last elements one at a time: exact integer sums, the
    first maximum's index and the values it stores along the way are NumPy's, in every
    inner strategy and split, so the tail is read once, by one part."""
    from fuselab.codegen import InnerConfig
    rng = np.random.default_rng(length)
    x = rng.integers(-1000, 1000, length).astype(np.int32)
    x[rng.integers(length)] = 5000          # one maximum, anywhere (the tail too)
    width = 4 if length >= 4 else 2
    cfgs = [InnerConfig(mode=m, group=g, block=64, splits=s, width=width)
            for m, g, s in (("lanes", 1, 1), ("lanes", 4, 1), ("lanes", 32, 1), ("block", 32, 1), ("block", 32, 3))]
    _reduction_configs_match_numpy("y = x * 3\ns = y.sum()\nm = x.argmax()", {"x": x}, cfgs,
                                   f"the last {length % width} element(s) one at a time" if length % width else "")


TABLE_CELLS = [   # (cell, inputs): pointwise kernels that compute values of broadcast operands alone
    # gathered per channel; statistics given, not reduced in the cell, whose epilogue the
    # plan may give the square root (since the cost model charges split reductions' combine)
    ("y = (x - mu) / np.sqrt(var + 1e-5)",
     {"x": ((3, 2, 5, 7), np.float16), "mu": ((1, 2, 1, 1), np.float16), "var": ((1, 2, 1, 1), np.float16)}),
    ("y = x * np.exp(w)", {"x": ((9, 16), np.float32), "w": ((16,), np.float32)}),    # read as vectors
    ("y = x * np.exp(w) + np.sqrt(np.abs(v))",
     {"x": ((9, 13), np.float64), "w": ((13,), np.float64), "v": ((9, 1), np.float64)}),
    ("y = (x - x.mean(axis=0)) / x.std(axis=0)", {"x": ((33, 12), np.float32)}),
    ("y = x[:, ::2] * np.log1p(np.abs(w))", {"x": ((8, 30), np.float32), "w": ((15,), np.float32)}),  # strided path
    ("y = np.where(x > t * 2, x, -x)", {"x": ((5, 7), np.int32), "t": ((), np.int32)}),  # a table of one
]


def _same_bits_as_plain(plan, plain: tuple, variants: list[tuple], changed: list[int], inputs) -> None:
    """Each variant (the plan's codes with kernel changed[i] generated another way) compiles
    with NVRTC and gives the bits of the plain codes on the emulator, which agree with
    NumPy."""
    if NVRTC_OK:
        nvrtc_compile([codes[k] for codes, k in zip(variants, changed)])
    runner = HostRunner([], generated=[(plan, plain), *((plan, codes) for codes in variants)])
    want = runner.run_codes(plan, plain, inputs)
    check = compare(want, run_graph(plan.graph, inputs), 1e-5)
    assert check.ok, check.worst
    for codes, k in zip(variants, changed):
        got = runner.run_codes(plan, codes, inputs)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} {codes[k].config.label()}")


GATHER_CELLS = [   # plain vectors narrower than the runs' gathers allow
    ("y = (x - m) / s", {"x": ((3, 4, 2, 9), np.float16), "m": ((1, 4, 1, 1), np.float16),
                         "s": ((1, 4, 1, 1), np.float16)}),                      # runs of 18 halves: 2 plainly, 8
    ("y = (x - m) / np.sqrt(v * v + 1e-5)", {"x": ((5, 3, 7, 2), np.float16), "m": ((1, 3, 1, 1), np.float16),
                                             "v": ((1, 3, 1, 1), np.float16)}),  # with tables too
    ("y = x * w + 1", {"x": ((9, 6), np.float32), "w": ((9, 1), np.float32)}),   # runs of 6 floats: 2, then 4
    ("y = x + w", {"x": ((7, 10), np.int8), "w": ((7, 1), np.int8)}),            # runs of 10 bytes: 2, then 16
    # a float64 value tabled as float16: wider only with the table in place
    ("y = x * np.sqrt(np.abs(m)).astype(np.float16)", {"x": ((6, 4, 18), np.float16), "m": ((1, 4, 1), np.float64)}),
]


@pytest.mark.parametrize("cell", range(len(GATHER_CELLS)))
def test_gathered_operands_under_wider_vectors_give_the_same_bits(cell):
    """PointwiseConfig(gather=True), a tuning candidate: vectors as wide as gathering the
    small operands (whose runs plain vectors must follow) allows give the same bits as
    the plain kernel, also with tables; the candidate is offered only where it is wider."""
    from fuselab import trace_cell
    from fuselab.codegen import generate_kernel, launch_candidates
    from fuselab.plan import make_plan
    source, specs = GATHER_CELLS[cell]
    rng = np.random.default_rng(cell)
    inputs = {n: np.asarray(rng.standard_normal(s) * 4).astype(dt) for n, (s, dt) in specs.items()}
    traced = trace_cell(source, {"np": np, **inputs})
    plan = make_plan(traced.graph, "auto")
    assert [k.template.value for k in plan.kernels] == ["pointwise"]
    plain = (generate_kernel(plan, 0, EMULATED),)
    cands = [c for c in launch_candidates(plan, 0, EMULATED) if c.gather]
    assert cands and "vector path" in plain[0].notes[0]
    variants = [(generate_kernel(plan, 0, EMULATED, c),) for c in cands]
    for (code,), cfg in zip(variants, cands):
        assert code.config.key() == cfg.key() and "gathered element by element" in code.notes[0]
        assert cfg.tables == ("tables:" in code.notes[-1])
        assert int(code.notes[0].split()[2]) > int(plain[0].notes[0].split()[2])   # wider vectors
    _same_bits_as_plain(plan, plain, variants, [0] * len(variants), traced.inputs)


def test_no_gather_candidate_where_plain_vectors_are_as_wide():
    from fuselab import trace_cell
    from fuselab.codegen import generate_kernel, launch_candidates
    from fuselab.codegen.config import PointwiseConfig
    from fuselab.plan import make_plan
    x = np.ones((64, 32), np.float32)
    plan = make_plan(trace_cell("y = x * w", {"np": np, "x": x, "w": np.ones((64, 1), np.float32)}).graph, "auto")
    assert not any(c.gather for c in launch_candidates(plan, 0, EMULATED))
    code = generate_kernel(plan, 0, EMULATED, PointwiseConfig(gather=True))
    assert not code.config.gather and "no gathers" in code.config.why


@pytest.mark.parametrize("cell", range(len(TABLE_CELLS)))
def test_tables_of_broadcast_values_give_the_same_bits(cell):
    """PointwiseConfig(tables=True), a tuning candidate: the values a pointwise kernel
    computes from broadcast operands alone, computed once per block into shared memory,
    give the same bits as computing them at every element, and leave the element
    function (the kernel's notes say which values)."""
    from fuselab import trace_cell
    from fuselab.codegen import generate_kernel, launch_candidates
    from fuselab.codegen.config import PointwiseConfig
    from fuselab.plan import make_plan
    source, specs = TABLE_CELLS[cell]
    rng = np.random.default_rng(cell)
    inputs = {n: np.asarray(rng.standard_normal(s) * 4).astype(dt) for n, (s, dt) in specs.items()}   # 0-d: arrays
    traced = trace_cell(source, {"np": np, **inputs})
    plan = make_plan(traced.graph, "auto")
    ks = [k for k, kern in enumerate(plan.kernels) if kern.template.value == "pointwise"]
    plain = tuple(generate_kernel(plan, j, EMULATED) for j in range(len(plan.kernels)))
    tabled = []
    for k in ks:
        assert any(c.tables for c in launch_candidates(plan, k, EMULATED)), plan.kernels[k].name
        code = generate_kernel(plan, k, EMULATED, PointwiseConfig(tables=True))
        assert code.config.tables and "computed once per block" in code.notes[-1] and "__syncthreads" in code.source
        tabled.append(tuple(code if j == k else c for j, c in enumerate(plain)))
    assert tabled, "no pointwise kernel"
    _same_bits_as_plain(plan, plain, tabled, ks, traced.inputs)


REDUCTION_TABLE_CELLS = [   # (cell, inputs): reductions that compute values of small operands alone
    # a variance's mean finished (divided, cast to float16) in the variance's kernel
    ("v = ((x - (m / 40.0).astype(np.float16)) ** 2).sum(axis=1)",
     {"x": ((3, 40, 5), np.float16), "m": ((3, 1, 5), np.float32)}),
    ("s = (x / np.sqrt(v + 1)).sum(axis=0)", {"x": ((40, 16), np.float32), "v": ((16,), np.float32)}),  # vectors
    ("s = (x * np.exp(w)).var(axis=0)", {"x": ((50, 12), np.float32), "w": ((12,), np.float32)}),   # Welford
    ("s = (x / np.sqrt(v + 1)).sum(axis=0)", {"x": ((70, 9), np.float64), "v": ((9,), np.float64)}),
    ("s = (x * np.exp(w)).sum(axis=1)", {"x": ((6, 50), np.float32), "w": ((50,), np.float32)}),  # along r
    ("m = (x - np.log1p(np.abs(c))).max(axis=1)", {"x": ((5, 37), np.float32), "c": ((5, 1), np.float32)}),
    ("i = (x * np.tanh(w)).argmax(axis=0)", {"x": ((20, 7), np.float32), "w": ((7,), np.float32)}),
    ("t = (x + np.float32(2) * k).sum()", {"x": ((3, 4, 33), np.float32), "k": ((4, 1), np.float32)}),
]


@pytest.mark.parametrize("cell", range(len(REDUCTION_TABLE_CELLS)))
def test_reduction_tables_give_the_same_bits(cell):
    """A reduction kernel that computes values of small operands alone (a mean's finish
    read by every element of its variance) computes them once per block into tables by
    default (the heuristic's config says so, its notes name them), and offers the plain
    kernel as a candidate; every candidate gives the same bits with and without tables."""
    from dataclasses import replace

    from fuselab import trace_cell
    from fuselab.codegen import generate_kernel, launch_candidates
    from fuselab.plan import make_plan
    source, specs = REDUCTION_TABLE_CELLS[cell]
    rng = np.random.default_rng(cell)
    inputs = {n: np.asarray(rng.standard_normal(s) * 4).astype(dt) for n, (s, dt) in specs.items()}
    traced = trace_cell(source, {"np": np, **inputs})
    plan = make_plan(traced.graph, "auto")
    plain = tuple(generate_kernel(plan, j, EMULATED) for j in range(len(plan.kernels)))
    ks = [k for k, code in enumerate(plain) if plan.kernels[k].template.value == "reduction" and code.config.tables]
    assert ks, [c.notes for c in plain]
    runner_codes, pairs = [], []
    for k in ks:
        assert "computed once per block" in plain[k].notes[-1] and "__syncthreads();   // the tables" in plain[k].source
        cands = launch_candidates(plan, k, EMULATED)
        assert any(not c.tables for c in cands)
        for c in cands:
            on = generate_kernel(plan, k, EMULATED, replace(c, tables=True))
            off = generate_kernel(plan, k, EMULATED, replace(c, tables=False))
            assert on.config.tables and not off.config.tables and "tab_" not in off.source
            pair = tuple(tuple(code if j == k else p for j, p in enumerate(plain)) for code in (on, off))
            runner_codes += pair
            pairs.append((pair, c.label()))
    if NVRTC_OK:
        nvrtc_compile([codes[k] for codes in runner_codes for k in ks])
    runner = HostRunner([], generated=[(plan, plain), *((plan, codes) for codes in runner_codes)])
    want = runner.run_codes(plan, plain, traced.inputs)
    check = compare(want, run_graph(plan.graph, traced.inputs), 1e-2)   # float16 sums: F16_SUM
    assert check.ok, check.worst
    for (on, off), label in pairs:
        got_on, got_off = runner.run_codes(plan, on, traced.inputs), runner.run_codes(plan, off, traced.inputs)
        for name in want:
            np.testing.assert_array_equal(got_on[name], got_off[name], err_msg=f"{name} {label}")


@pytest.mark.parametrize("run", (3, 5, 13, 21, 33, 65))
def test_column_blocks_of_whole_rows_fold_every_element_once(run):
    """A kept run that a power of two of lanes leaves partly idle (21 of 32) has a tuning
    candidate of whole rows of `run` threads a block (reduce_layout.whole_row_lanes), the
    threads past the last row idle: exact integer sums, first maxima's indices, any, and
    float maxima over lengths around the read groups, one block of rows or many
    (sequential and tree folds over rows of threads no power of two), split or not, are
    NumPy's."""
    from fuselab import trace_cell
    from fuselab.codegen import ColumnConfig, launch_candidates
    from fuselab.plan import make_plan
    from fuselab.plan.reduce_layout import whole_row_lanes
    assert whole_row_lanes(run, 1) == run
    plan = make_plan(trace_cell("s = x.sum(axis=0)", {"np": np, "x": np.zeros((4000, run), np.float32)}).graph, "auto")
    assert any(c.lanes == run for c in launch_candidates(plan, 0, EMULATED))
    rng = np.random.default_rng(run)
    inputs = {"x": rng.integers(-1000, 1000, (3, 301, run)).astype(np.int64),
              "f": rng.standard_normal((301, run)).astype(np.float32)}
    cfgs = [ColumnConfig(width=1, rows=r, splits=s, lanes=run) for r, s in ((8, 1), (8, 3), (4, 2), (2, 1))
            if 32 * r >= run]
    _reduction_configs_match_numpy("a = x.sum(axis=1)\nb = x.argmax(axis=1)\nc = (x > 990).any(axis=1)", inputs, cfgs,
                                   f"whole rows of {run} threads")
    _reduction_configs_match_numpy("m = f.max(axis=0)\ni = f.argmin(axis=0)", inputs, cfgs, f"whole rows of {run} threads")


@needs_cxx
def test_long_strided_rows_run_as_slabs_no_wider_than_the_shared_memory_target():
    """Rows along axis 0 of 70 columns (one past a thread's registers) run a block per slab
    kept in shared memory, the slab as wide as SLAB_SMEM_TARGET allows (64 rows of 280
    bytes; 128 would take 35 KiB), and give NumPy's result."""
    from fuselab.codegen.row import SLAB_SMEM_TARGET
    from fuselab.plan import make_plan
    from fuselab.trace import trace_cell
    x = np.random.default_rng(5).standard_normal((70, 40000)).astype(np.float32)
    g = trace_cell("y = x - x.mean(axis=0)", {"np": np, "x": x}).graph
    plan = make_plan(g, "auto")
    assert [k.template.value for k in plan.kernels] == ["row"]
    runner = HostRunner([plan], EMULATED)
    code = runner.codes[(plan, runner.default)][0]
    assert code.config.tier == "slab-smem", code.notes
    assert code.notes[0].startswith("slab tier: a block per slab of 64 adjacent rows"), code.notes[0]
    assert 64 * 70 * 4 <= code.shared_mem <= SLAB_SMEM_TARGET
    check = compare(runner.run(plan, {"x": x}), run_graph(g, {"x": x}), 1e-5)
    assert check.ok, check.worst
