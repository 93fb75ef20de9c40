"""Reductions over the last axis whose runs are no multiple of a 16-byte vector (rows of
66789 floats, of 8159, of odd numbers of halves): each output's vectors follow memory,
its run starting `shift` elements into its first vector, partial vectors at either end
moved element by element. On the CPU emulator (which reports any load a GPU would fault
on for its alignment) against NumPy: lanes, a block per output, split blocks; argmax
positions, variances, stored prologue values, broadcast operands read element by
element; and where the layout applies."""
from __future__ import annotations

import numpy as np
import pytest

import fuselab
from fuselab.codegen import CodegenOptions, generate, generate_kernel, launch_candidates
from fuselab.codegen.config import InnerConfig
from fuselab.interp import run_graph
from fuselab.plan import make_plan
from fuselab.runtime.verify import compare

from codegen_util import needs_nvrtc, nvrtc_compile
from cuda_host import HostRunner, needs_cxx

pytestmark = needs_cxx

OPTIONS = CodegenOptions(sm_count=2)
RTOL = {np.float16: 1e-2, np.float32: 1e-4, np.float64: 1e-9, np.int8: 0, np.int32: 0}

CELLS = [
    ("y = x.sum(axis=1)", (9, 4099), np.float32),
    ("y = x.argmax(axis=1)", (11, 8159), np.float32),
    ("y = np.abs(x).max(axis=-1)", (13, 1021), np.float16),
    ("y = x.var(axis=1)", (9, 2051), np.float32),
    ("y = (x * v).sum(axis=1)", (9, 1027), np.float32),        # v[r]: element by element
    ("y = x.astype(np.float32).sum(axis=1)", (9, 3003), np.float16),
    ("y = x.sum(axis=1)", (10, 1001), np.int8),
    ("y = x.mean(axis=-1)", (7, 513), np.float64),
    ("y = x.sum(axis=(1, 2))", (9, 3, 341), np.float32),        # two reduced axes merged: runs of 1023
    ("m = x.max(axis=1, keepdims=True)\ny = np.log(np.exp(x - m).sum(axis=1))", (9, 6679), np.float32),
]


def _planned(src, shape, dtype):
    rng = np.random.default_rng(shape[-1])
    x = (rng.uniform(-50, 50, shape) if np.dtype(dtype).kind in "iu" else rng.standard_normal(shape) * 3).astype(dtype)
    ns = {"np": np, "x": x, "v": rng.standard_normal(shape[-1]).astype(dtype)}
    traced = fuselab.trace_cell(src, ns)
    plan = make_plan(traced.graph, "auto")
    if not any(k.template.value == "reduction" for k in plan.kernels):   # a row kernel took it
        plan = make_plan(traced.graph, "unfused")
    return plan, {n: ns[n] for n in traced.graph.input_names()}


def _reduction_index(plan) -> int:
    return next(i for i, k in enumerate(plan.kernels) if k.template.value == "reduction")


@pytest.mark.parametrize("src,shape,dtype", CELLS, ids=lambda v: str(v).split("\n")[0][:24])
def test_runs_off_vector_boundaries_match_numpy_in_every_mode(src, shape, dtype):
    plan, inputs = _planned(src, shape, dtype)
    k = _reduction_index(plan)
    codes = generate(plan, OPTIONS)
    assert "fl_load_vec_in" in codes[k].source, codes[k].notes
    # lanes, a block an output, and split blocks, each generated for this kernel at the
    # heuristic's width (a width of 1 reads element by element, without the layout)
    w = codes[k].config.width
    assert w > 1
    configs = [InnerConfig(mode="lanes", group=g, block=256, splits=1, width=w, why="test") for g in (1, 8, 32)]
    configs += [InnerConfig(mode="block", group=32, block=b, splits=s, width=w, why="test")
                for b, s in ((64, 1), (256, 1), (128, 3), (256, 7))]
    variants = [generate_kernel(plan, k, OPTIONS, c) for c in configs]
    for v in variants:
        assert "fl_load_vec_in" in v.source and "aligned to memory" in v.notes[0], v.notes
    runner = HostRunner([], OPTIONS, generated=[(plan, codes)] + [(plan, [v]) for v in variants])
    want = run_graph(plan.graph, inputs)
    for v in [codes[k], *variants]:
        got = runner.run_codes(plan, [v if i == k else c for i, c in enumerate(codes)], inputs)
        check = compare(got, want, RTOL[dtype])
        assert check.ok, f"{v.notes[0]}: {check.worst}"
        if "argmax" in src:
            np.testing.assert_array_equal(got["y"], want["y"])


def test_a_prologue_value_stored_from_aligned_vectors():
    """A value the reduction's loop stores at every element (y) goes out through the
    same vectors, partial ones element by element."""
    plan, inputs = _planned("y = x * 2 + 1\ns = y.sum(axis=1)", (9, 2053), np.float32)
    k = _reduction_index(plan)
    code = generate(plan, OPTIONS)[k]
    assert "fl_store_vec_in" in code.source, code.source[-2000:]
    runner = HostRunner([plan], OPTIONS)
    check = compare(runner.run(plan, inputs), run_graph(plan.graph, inputs), 1e-5)
    assert check.ok, check.worst


@pytest.mark.parametrize("src,shape,dtype,aligned", [
    ("y = x.sum(axis=1)", (64, 4096), np.float32, False),     # whole vectors
    ("y = x.sum(axis=1)", (64, 4099), np.float32, True),
    ("y = x.sum(axis=1)", (64, 13), np.float32, False),       # under four vectors
    ("y = x.sum(axis=0)", (4099, 64), np.float32, False),     # the column strategy
    ("y = x.T.sum(axis=1)", (4099, 65), np.float32, False),   # a transposed view, read in memory order
])
def test_the_layout_applies_to_contiguous_runs_off_vector_boundaries_only(src, shape, dtype, aligned):
    plan, _ = _planned(src, shape, dtype)
    code = generate(plan, CodegenOptions())[_reduction_index(plan)]
    assert ("fl_load_vec_in" in code.source) == aligned, code.notes
    if aligned:   # every candidate the tuner may time keeps the layout
        k = _reduction_index(plan)
        for c in launch_candidates(plan, k, CodegenOptions()):
            assert "fl_load_vec_in" in generate_kernel(plan, k, CodegenOptions(), c).source, c


@needs_nvrtc
def test_aligned_runs_compile_with_nvrtc():
    """The GPU's compiler takes every mode's kernel (the emulator's g++ accepts more)."""
    codes = []
    for src, shape, dtype in CELLS:
        plan, _ = _planned(src, shape, dtype)
        k = _reduction_index(plan)
        codes += [generate_kernel(plan, k, CodegenOptions(), c) for c in launch_candidates(plan, k, CodegenOptions())]
    nvrtc_compile(codes)


@pytest.mark.gpu
@pytest.mark.parametrize("src,shape,dtype", CELLS, ids=lambda v: str(v).split("\n")[0][:24])
def test_runs_off_vector_boundaries_on_the_gpu(src, shape, dtype):
    """The same cells for real at 37x the outputs (every shift, many blocks), tuned, and
    each candidate the tuner may pick."""
    from fuselab import runtime
    from fuselab.runtime.launch import Executable, synchronize

    plan, inputs = _planned(src, (shape[0] * 37, *shape[1:]), dtype)
    want = run_graph(plan.graph, inputs)
    check = runtime.compare(runtime.execute(plan, inputs), want, RTOL[dtype])
    assert check.ok, check.worst
    k = _reduction_index(plan)
    for c in launch_candidates(plan, k, CodegenOptions()):
        codes = list(generate(plan, CodegenOptions()))
        codes[k] = generate_kernel(plan, k, CodegenOptions(), c)
        got = Executable(plan, codes, tune=False).run(inputs)
        synchronize("aligned runs")
        check = runtime.compare(got, want, RTOL[dtype])
        assert check.ok, f"{c}: {check.worst}"
