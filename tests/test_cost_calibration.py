"""The cost model against measured time: the shape sweep's points on an H200.

tests/golden/cost_sweep_h200.json holds cells of the shape sweep (benchmarks/sweep.py),
the kernels fuselab planned for them and the measured time of one run of the plan, with
the device calibration of the run (bandwidth, launch, flop rate). Each cell is traced
here with empty arrays of its shapes and planned `auto` (no device); the model, given
that calibration and the sweep-fitted DeviceParams defaults, must predict every run
within ±25% but the known misses below, and at least 90% of all. A unit test of the
model on recorded numbers, not a timed test. Refit and rewrite the file with
benchmarks/cost_fit.py (benchmarks/COST_MODEL.md).
"""
from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import fuselab
from fuselab.plan import make_plan
from fuselab.plan.cost import report
from fuselab.plan.device import DeviceParams

DATA = json.loads((Path(__file__).parent / "golden" / "cost_sweep_h200.json").read_text())
POINTS = {p["case"]: p for p in DATA["points"]}
# the fixed and wide sweeps (sweep_cases.cases/wide_cases) and random cells
# (sweep_cases.random_cases: seed 34, the new families; seeds 35 and 36, the first), all
# timed with enough samples for a steady median (af96c1d; 2026-12-04 20:13-20:46), on
# which run_s was fitted (cost_fit.py --fit --robust --params run_s). The random cells:
# 121 of 160 within 25% (the target is 90%); their misses are kernels slower than
# their bytes (float16 argmax and layernorm rows, few long rows, int8 sums, narrow
# transposes: BENCHMARKS.md), which the model does not describe
RANDOM = {c for c in POINTS if c.startswith("random ")}
FIXED = set(POINTS) - RANDOM
# measured well off the model, for reasons outside it (benchmarks/COST_MODEL.md):
KNOWN_MISSES = {
    # rows of 3 columns: a lane a row, the warp mostly idle (0.71)
    "odd softmax 3",
    # Welford over 65536 rows of 1024 columns: 69% of copy, the model takes it for a
    # copy's (0.63)
    "var/std std axis 0 (65536,1024)",
    # the wide sweep's machine start ran short cells at 11.0-11.8 us, the others at
    # 12.1-13.3: under run_s + launch_s (1.25-1.33)
    "small chain 10000",
    "small layernorm (64,768)",
}
# random families (three cells or more) whose kernels run well below their bytes: fix
# the kernels, then take them out (0.52, 0.61, 0.73)
SLOW_FAMILIES = {
    # float16 argmax over long rows: compare-and-index a half at a time
    "random row reduce argmax float16",
    # float16 layernorm rows of odd widths (693, 53531)
    "random layernorm float16",
    # 109-622 rows of 1.7k-31k: a block a row, fewer blocks than the GPU holds
    "random row reduce mean float32",
}


@lru_cache(maxsize=None)
def plan_of(case: str):
    p = POINTS[case]
    inputs = {n: np.empty(tuple(shape), dtype=dt) for n, (shape, dt) in p["inputs"].items()}
    return make_plan(fuselab.trace_cell(p["source"], {"np": np, **inputs}).graph, "auto")


def params_of(case: str, **changes) -> DeviceParams:
    p = DeviceParams.from_dict(DATA["sweeps"][POINTS[case]["sweep"]]["calibration"])
    return dataclasses.replace(p, **changes)


def ratio(case: str, **changes) -> float:
    """Predicted / measured time of one run of the case's plan."""
    return report(plan_of(case), params_of(case, **changes)).time_s / POINTS[case]["measured_s"]


def test_the_points_plan_as_they_were_measured():
    """A point whose plan changed since it was measured says nothing about the model."""
    changed = [c for c in POINTS if [k.template.value for k in plan_of(c).kernels] != POINTS[c]["kernels"]]
    assert changed == []


@pytest.mark.parametrize("case", sorted(FIXED - KNOWN_MISSES))
def test_predicted_within_25_percent_of_measured(case):
    assert 0.75 <= ratio(case) <= 1.25


def test_at_least_90_percent_of_the_sweep_within_25_percent():
    r = [ratio(c) for c in FIXED]
    assert sum(0.75 <= q <= 1.25 for q in r) >= 0.9 * len(r)
    assert 0.95 <= float(np.median(r)) <= 1.05          # no bias either way


def test_the_random_cells_as_well_as_today():
    """Everyday cells outside the fixed sweeps: at least the 75% within 25% the model
    reaches now (121 of 160: a guard against regressions; the target is 90%), no bias, and
    no family of three or more cells off on the whole but the known slow ones."""
    r = {c: ratio(c) for c in RANDOM}
    assert len(r) >= 160
    assert sum(0.75 <= q <= 1.25 for q in r.values()) >= 0.75 * len(r)
    assert 0.9 <= float(np.median(list(r.values()))) <= 1.1
    families: dict[str, list[float]] = {}
    for c, q in r.items():
        families.setdefault(POINTS[c]["family"], []).append(q)
    off = {f: round(float(np.median(q)), 2) for f, q in families.items()
           if len(q) >= 3 and not 0.75 <= np.median(q) <= 1.25}
    assert set(off) == SLOW_FAMILIES, off


def test_the_known_misses_are_still_misses():
    """When codegen fixes them, move them out of KNOWN_MISSES."""
    assert all(not 0.75 <= ratio(c) <= 1.25 for c in KNOWN_MISSES)


def test_each_fitted_term_carries_its_cases():
    """Without the term its family falls outside 25%: the fixed cost of a run for
    launch-bound cells and few rows per SM for rows kept in shared memory. L2 re-reads
    for stencils across rows and planes: since the stencil path marches (2026-12-02) they
    are a smaller share, but the 3-D stencil (re-reads across planes and rows) still sits
    low without them, and charged at DRAM's bandwidth they would be far too slow."""
    for c in ("launch-bound chain 1k", "launch-bound softmax 64k"):
        assert ratio(c, run_s=0.0) < 0.75
    assert ratio("stencil 3-D 7-point", l2_bandwidth=1e30) < 0.9
    for c in ("stencil 2-D 5-point", "stencil 3-D 7-point"):
        assert ratio(c, l2_bandwidth=1e30) < ratio(c) and ratio(c, l2_bandwidth=4e12) > 1.25
    assert ratio("softmax float32 32k", chip_exp=0.0) < 0.75
    # pairwise distances through a 3-D broadcast: 31M elements worked through from 0.2M read
    pair = "random pairwise float16 s34.32 (2197,27)x(521,27)"
    assert 0.75 <= ratio(pair) <= 1.25 and ratio(pair, elem_rate=0.0) < 0.5
    # small cells of two kernels wait for Python to launch the second (step_s)
    for c in ("random standardize float32 s34.20 (1750,884) axis 0", "random x / max float64 s35.1 (83851,3) axis 0",
              "random batchnorm float32 s34.59 (2,7,40723,8)"):
        assert len(plan_of(c).kernels) >= 2 and 0.75 <= ratio(c) <= 1.25 and ratio(c, step_s=0.0) < 0.75
    # the rows a warp or a block holds at full bandwidth stay there
    assert ratio("softmax float32 2k", chip_exp=1.0) == pytest.approx(ratio("softmax float32 2k"))


def test_tiers_and_l2_bytes_in_the_kernel_costs():
    (k,) = report(plan_of("softmax float32 1k"), params_of("softmax float32 1k")).kernels
    assert k.tier == "row:warp"
    (k,) = report(plan_of("softmax float32 32k"), params_of("softmax float32 32k")).kernels
    assert k.tier == "row:smem" and k.extra_bytes == 0
    (k,) = report(plan_of("softmax float32 128k"), params_of("softmax float32 128k")).kernels
    assert k.tier == "row:looped" and k.extra_bytes == 2 * 512 * 131072 * 4
    (k,) = report(plan_of("stencil 2-D 5-point"), params_of("stencil 2-D 5-point")).kernels
    n = 8190 * 8192 * 4          # rows 0..8189 and 2..8191 of x, each a slice of 8190 rows
    # slices 0, 1 and 2 rows down, marched 2 rows a thread: (3 - 1) / 2 slices re-read
    assert k.bytes_read == 8192 * 8192 * 4 and k.l2_bytes == pytest.approx(n, rel=0.01)
    (k,) = report(plan_of("stencil 3-D 7-point"), params_of("stencil 3-D 7-point")).kernels
    plane = 510 * 510 * 254 * 4  # a slice: 510 planes of 510 rows of 254
    assert k.l2_bytes == pytest.approx(3 * plane, rel=0.02)   # (3 - 1) / 2 along the planes, 2 along rows
    (k,) = report(plan_of("stencil 1-D 5-point"), params_of("stencil 1-D 5-point")).kernels
    assert k.l2_bytes == 0       # shifts along the last axis share cache lines
