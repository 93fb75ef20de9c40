"""Tuning candidates stay within what can win and compile quickly: shared-memory rows
offer no thread count that leaves a thread more than SMEM_CANDIDATE_PACKS packs, a fill
longer than SMEM_FILL_UNROLL is unrolled only that far, and inner reductions of fewer
outputs than two waves of warps also offer two warps an output (block mode, 64 threads).
Every such kernel is run on the CUDA emulator against NumPy."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from cuda_host import EMULATED, HostRunner, needs_cxx
from fuselab import trace_cell
from fuselab.codegen import CodegenOptions, InnerConfig, RowConfig, generate_kernel, launch_candidates
from fuselab.codegen import row as row_codegen
from fuselab.codegen.index import ceil_div
from fuselab.interp import run_graph
from fuselab.plan import make_plan
from fuselab.plan.model import Template
from fuselab.runtime.verify import compare
from graphs import one_kernel

RMS = "y = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) * g"
H200 = CodegenOptions(sm_count=132)


def _rms_plan(cols: int, dtype, rows: int = 3):
    x = np.zeros((rows, cols), dtype)
    traced = trace_cell(RMS, {"np": np, "x": x, "g": np.zeros(cols, dtype)})
    return one_kernel(traced.graph, Template.ROW)


@pytest.mark.parametrize("cols, dtype", [(48203, np.float16), (48203, np.float32), (18054, np.float32),
                                         (30000, np.float16), (9001, np.float32)])
def test_shared_memory_row_candidates_hold_few_packs_a_thread(cols, dtype):
    plan = _rms_plan(cols, dtype)
    cands = launch_candidates(plan, 0, H200)
    heuristic = cands[0]
    for cfg in cands[1:]:
        if cfg.tier != "smem":
            continue
        code = generate_kernel(plan, 0, H200, cfg)
        pack = int(next(n for n in code.notes if n.startswith("packs of")).split()[2])
        assert ceil_div(cols, cfg.threads * pack) <= row_codegen.SMEM_CANDIDATE_PACKS, (cfg, heuristic)


def test_the_slow_candidates_of_an_odd_half_row_are_gone():
    """rmsnorm float16 of 48203 columns: 128 and 256 threads held 377 and 189 packs of
    one half a thread, the candidates that took NVRTC seconds. With packs aligned to
    memory (8bbb222) they hold 48 and 24 packs of 8 halves, within SMEM_CANDIDATE_PACKS,
    and are offered again; the heuristic's 1024 stays first."""
    plan = _rms_plan(48203, np.float16)
    cands = launch_candidates(plan, 0, H200)
    assert cands[0].tier == "smem" and cands[0].threads == 1024
    for c in cands:
        if c.tier == "smem":
            notes = generate_kernel(plan, 0, H200, c).notes
            assert any(n.startswith("packs of 8 columns, aligned to memory") for n in notes), notes
            assert ceil_div(48203 + 7, c.threads * 8) <= row_codegen.SMEM_CANDIDATE_PACKS, c


@needs_cxx
def test_a_shared_memory_fill_longer_than_the_unroll_matches_numpy():
    cols = 20001   # odd: packs of 4 floats aligned to memory; 64 threads give each 79 packs
    plan = _rms_plan(cols, np.float32)
    cfg = RowConfig(tier="smem", threads=64, why="test")
    code = generate_kernel(plan, 0, EMULATED, cfg)
    assert code.config.key() == cfg.key()
    assert f"#pragma unroll {row_codegen.SMEM_FILL_UNROLL}" in code.source
    rng = np.random.default_rng(3)
    inputs = {"x": rng.standard_normal((3, cols)).astype(np.float32),
              "g": rng.standard_normal(cols).astype(np.float32)}
    runner = HostRunner([], generated=[(plan, [code])])
    got = runner.run_codes(plan, [code], inputs)
    check = compare(got, run_graph(plan.graph, inputs), 1e-5)
    assert check.ok, check.worst


BN_CELLS = {"sum": "s = x.sum(axis=(0, 2, 3))",
            "var": "s = x.var(axis=(0, 2, 3))",
            "mean and var": "m = x.mean(axis=(0, 2, 3), keepdims=True)\nv = x.var(axis=(0, 2, 3), keepdims=True)"}


def _inner_plan(source: str, shape: tuple[int, ...], dtype=np.float32):
    traced = trace_cell(source, {"np": np, "x": np.zeros(shape, dtype)})
    plan = make_plan(traced.graph, "max")
    assert [k.template for k in plan.kernels][0] is Template.REDUCTION
    return plan


def test_two_warps_an_output_is_offered_below_two_waves_only():
    few = launch_candidates(_inner_plan(BN_CELLS["sum"], (4, 4239, 24, 81)), 0, H200)
    assert few[0] == InnerConfig(mode="lanes", group=32, block=256, splits=1, width=4, why=few[0].why)
    assert any(c.mode == "block" and c.block == 64 for c in few)
    many = launch_candidates(_inner_plan(BN_CELLS["sum"], (4, 20000, 24, 81)), 0, H200)
    assert not any(c.mode == "block" and c.block == 64 for c in many)


@needs_cxx
@pytest.mark.parametrize("cell", list(BN_CELLS))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_two_warps_an_output_matches_numpy(cell, dtype):
    shape = (3, 37, 5, 27)   # 405 reduced elements an output (not a multiple of the vectors)
    plan = _inner_plan(BN_CELLS[cell], shape, dtype)
    base = generate_kernel(plan, 0, EMULATED)
    cfg = InnerConfig(mode="block", group=32, block=64, splits=1, width=base.config.width, why="test")
    code = generate_kernel(plan, 0, EMULATED, cfg)
    assert code.config.key() == cfg.key() and code.block[0] == 64
    rest = [generate_kernel(plan, k, EMULATED) for k in range(1, len(plan.kernels))]
    rng = np.random.default_rng(5)
    inputs = {"x": (rng.standard_normal(shape) * 3 + 2).astype(dtype)}
    runner = HostRunner([], generated=[(plan, [code, *rest])])
    got = runner.run_codes(plan, [code, *rest], inputs)
    rtol = {np.float16: 2e-3, np.float32: 2e-5, np.float64: 1e-12}[dtype]
    check = compare(got, run_graph(plan.graph, inputs), rtol)
    assert check.ok, check.worst


def test_the_candidate_is_a_distinct_launch():
    plan = _inner_plan(BN_CELLS["var"], (4, 4239, 24, 81))
    cands = launch_candidates(plan, 0, H200)
    keys = [c.key() for c in cands]
    assert len(keys) == len(set(keys))
    two = next(c for c in cands if c.mode == "block" and c.block == 64)
    assert replace(two, why="") .key() == replace(cands[0], mode="block", block=64, why="").key()
