"""Variances along a strided axis whose columns fill the GPU without a split: a warp a
block, each thread folding its column's rows alone (no Welford merges through shared
memory), with the 8 rows of threads it replaced as the tuner's candidate. Both on the CPU
emulator against NumPy, at odd sizes (runs that are no whole vectors, rows that are no
multiple of anything)."""
from __future__ import annotations

import numpy as np
import pytest

import fuselab
from fuselab.codegen import CodegenOptions, generate, generate_kernel, launch_candidates
from fuselab.codegen.config import ColumnConfig
from fuselab.interp import run_graph
from fuselab.plan import make_plan
from fuselab.runtime.verify import compare

from cuda_host import HostRunner, needs_cxx

pytestmark = needs_cxx

# sm_count 2: these kept runs fill it without a split
OPTIONS = CodegenOptions(sm_count=2)
CELLS = [
    ("y = x.std(axis=0)", (65, 9361), np.float32),
    ("m = x.mean(axis=0, keepdims=True)\ns = x.std(axis=0, keepdims=True)", (33, 1801), np.float32),
    ("y = x.var(axis=0, ddof=1)", (7, 4099), np.float64),
    ("y = x.var(axis=(0, 1))", (3, 43, 1030), np.float32),
    ("y = (x - x.mean(axis=0)) / x.std(axis=0)", (129, 517), np.float32),
    ("y = x.var(axis=0, keepdims=True)", (257, 1001), np.float32),
]


def _planned(src, shape, dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    traced = fuselab.trace_cell(src, {"np": np, "x": x})
    return make_plan(traced.graph, "auto"), {"x": x}


@pytest.mark.parametrize("src,shape,dtype", CELLS)
def test_a_variances_columns_fold_alone_and_match_numpy(src, shape, dtype):
    plan, inputs = _planned(src, shape, dtype)
    codes = generate(plan, OPTIONS)
    k = next(i for i, kern in enumerate(plan.kernels) if kern.template.value == "reduction")
    h = codes[k].config
    assert isinstance(h, ColumnConfig) and (h.rows, h.splits, h.lanes) == (1, 1, 32), h
    cands = launch_candidates(plan, k, OPTIONS)
    assert any(isinstance(c, ColumnConfig) and c.rows == 8 for c in cands)
    eight = generate_kernel(plan, k, OPTIONS, next(c for c in cands if isinstance(c, ColumnConfig) and c.rows == 8))
    runner = HostRunner([], OPTIONS, generated=[(plan, codes), (plan, [eight])])
    want = run_graph(plan.graph, inputs)
    rtol = {"float16": 1e-2, "float32": 1e-4}
    alone = runner.run_codes(plan, codes, inputs)
    assert compare(alone, want, rtol).ok, compare(alone, want, rtol).worst
    merged = runner.run_codes(plan, [eight if i == k else c for i, c in enumerate(codes)], inputs)
    assert compare(merged, want, rtol).ok, compare(merged, want, rtol).worst


def test_a_sum_and_a_split_variance_keep_their_rows_of_threads():
    """Only variances that need no split change: a sum's 8 rows of threads stay (within
    10% either way on the H200), and a split variance keeps them to fill the GPU."""
    plan, _ = _planned("y = x.sum(axis=0)", (65, 9361), np.float32)
    assert generate(plan, OPTIONS)[0].config.rows == 8
    plan, _ = _planned("y = x.var(axis=0)", (1 << 16, 64), np.float32)
    cfg = generate(plan, CodegenOptions(sm_count=132))[0].config
    assert cfg.splits > 1 and cfg.rows == 8
