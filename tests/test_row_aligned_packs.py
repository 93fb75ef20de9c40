"""Row kernels whose width is no multiple of a 16-byte pack (a float16 row of 29833
columns, float32 rows of 4181): their packs follow memory, each row starting `shift`
columns into its first pack, with a partial pack at either end moved element by element.
On the CPU emulator against NumPy, in every contiguous tier, over rows whose shifts take
every value, with column inputs (gamma), a float16 max (the packed pick stays off),
argmax positions and mixed float16/float32 packs; and where the layout applies."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import fuselab
from fuselab.codegen import CodegenOptions, generate
from fuselab.interp import run_graph
from fuselab.plan import Template
from fuselab.runtime.verify import compare

from codegen_util import needs_nvrtc, nvrtc_compile
from cuda_host import EMULATED, HostRunner, needs_cxx
from graphs import one_kernel

pytestmark = needs_cxx

CELLS = {
    "softmax": "m = x.max(-1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(-1, keepdims=True)",
    "layernorm": ("mu = x.mean(-1, keepdims=True)\nv = ((x - mu) ** 2).mean(-1, keepdims=True)\n"
                  "y = (x - mu) / np.sqrt(v + 1e-5) * g + b"),
    "rmsnorm": "y = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g",
    "logsumexp": "m = x.max(-1, keepdims=True)\ny = np.log(np.exp(x - m).sum(-1)) + m[:, 0]",
    "argmax-shift": "i = x.argmax(-1)\ny = x - x.max(-1, keepdims=True)",
    "mixed": "y = x.astype(np.float32) / x.astype(np.float32).sum(-1, keepdims=True)",
}
RTOL = {np.float16: 1e-2, np.float32: 1e-4, np.float64: 1e-9}


def _planned(name: str, rows: int, cols: int, dtype):
    rng = np.random.default_rng(rows * 7919 + cols)
    x = rng.uniform(-3, 3, (rows, cols)).astype(dtype)
    ns = {"np": np, "x": x, "g": rng.uniform(0.5, 1.5, cols).astype(dtype),
          "b": rng.uniform(-1, 1, cols).astype(dtype)}
    traced = fuselab.trace_cell(CELLS[name], ns)
    inputs = {n: ns[n] for n in traced.graph.input_names()}
    return one_kernel(traced.graph, Template.ROW), inputs   # the planner may split few long rows


# rows of 9 (every shift 0..7 of a float16 pack, and 0..3 of float32) or more
SHAPES = [
    ("softmax", 9, 37, np.float16, ("warp",)),
    ("softmax", 9, 1001, np.float16, ("warp", "block", "smem", "looped")),
    ("softmax", 11, 4181, np.float32, ("block", "smem", "looped")),
    ("softmax", 9, 9003, np.float16, ("smem", "looped")),
    ("layernorm", 9, 1003, np.float32, ("warp", "block", "smem", "looped")),
    ("layernorm", 10, 2047, np.float16, ("block", "smem", "looped")),
    ("rmsnorm", 9, 30001, np.float16, ("smem", "looped")),
    ("rmsnorm", 13, 515, np.float64, ("warp", "smem", "looped")),
    ("logsumexp", 9, 2501, np.float16, ("block", "smem", "looped")),
    ("argmax-shift", 9, 1021, np.float16, ("warp", "block", "smem", "looped")),
    ("mixed", 9, 3001, np.float16, ("block", "smem", "looped")),
]


@pytest.mark.parametrize("name,rows,cols,dtype,tiers", SHAPES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_rows_off_pack_boundaries_match_numpy_in_every_tier(name, rows, cols, dtype, tiers):
    plan, inputs = _planned(name, rows, cols, dtype)
    options = [replace(EMULATED, row_tier=t) for t in tiers]
    runner = HostRunner([(plan, o) for o in options])
    want = run_graph(plan.graph, inputs)
    for o in options:
        codes = runner.codes[(plan, o)]
        row = next(c for c, k in zip(codes, plan.kernels) if k.template.value == "row")
        # a tier the row cannot take falls back to the heuristic's; the layout is the point
        assert "fl_load_vec_in" in row.source and "shift" in row.source, (o.row_tier, row.notes)
        got = runner.run(plan, inputs, o)
        check = compare(got, want, RTOL[dtype])
        assert check.ok, f"{o.row_tier}: {check.worst}"
        if "i" in want:   # positions are exact
            np.testing.assert_array_equal(got["i"], want["i"])


@pytest.mark.parametrize("cols,dtype,aligned", [
    (1024, np.float16, False),    # whole packs
    (1030, np.float32, True),     # 1030 % 4 == 2: 16-byte packs from column -2
    (1030, np.float16, True),
    (30, np.float16, False),      # under four packs: the pack that divides C
    (33, np.float32, True),
])
def test_the_layout_applies_to_rows_off_pack_boundaries_only(cols, dtype, aligned):
    plan, _ = _planned("softmax", 64, cols, dtype)
    code = generate(plan, CodegenOptions())[0]
    assert ("fl_load_vec_in" in code.source) == aligned
    if aligned:
        assert "fl_store_vec_in<" + str(16 // np.dtype(dtype).itemsize) + ">" in code.source
        assert "aligned to memory" in " ".join(code.notes)


@pytest.mark.gpu
@pytest.mark.parametrize("name,rows,cols,dtype,tiers", SHAPES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_rows_off_pack_boundaries_on_the_gpu(name, rows, cols, dtype, tiers):
    """The same rows for real (a misaligned 16-byte access faults there), with many rows
    (every shift, many blocks), each tier forced and the tuned automatic choice."""
    from fuselab import runtime

    from gpu_util import run_on_gpu
    plan, inputs = _planned(name, rows * 29, cols, dtype)
    want = run_graph(plan.graph, inputs)
    for tier in (*tiers, "auto"):
        got = (run_on_gpu(plan, inputs) if tier == "auto" else
               runtime.execute(plan, inputs, options=CodegenOptions(row_tier=tier)))
        check = runtime.compare(got, want, RTOL[dtype])
        assert check.ok, f"{tier}: {check.worst}"


@needs_nvrtc
def test_aligned_rows_compile_with_nvrtc():
    """The GPU's compiler takes every tier's kernel (the emulator's g++ accepts more)."""
    codes = []
    for name, rows, cols, dtype, tiers in SHAPES:
        plan, _ = _planned(name, rows, cols, dtype)
        for t in tiers:
            codes += [c for c in generate(plan, CodegenOptions(row_tier=t))]
    nvrtc_compile(codes)
