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
# the fixed and wide sweeps the model was built on (sweep_cases.cases/wide_cases, as
# measured on 2026-12-04 13:37 and 13:58), and random cells (sweep_cases.random_cases:
# seeds 21-23 of 2026-12-03, seeds 30 and 31 of 2026-12-04, the new families and the
# first), on which run_s, step_s, the element rate and the combine were fitted with them:
# 84% within 25% (the target is 90%: the floor of a launch-bound run moves by
# 25% between machine starts, small copies in the same rounds 12.6-19.8 us; row and
# column kernels of float16 rows, batch norms over three axes; COST_MODEL.md)
RANDOM = {c for c in POINTS if c.startswith("random ")}
FIXED = set(POINTS) - RANDOM
# measured well off the model, for reasons outside it (benchmarks/COST_MODEL.md):
KNOWN_MISSES = {
    # a slab of 64 KiB in shared memory, 3 an SM: the model's shared-memory phases
    # (chip_rows) take it for slower than it runs (1.4)
    "slab rows float32 softmax axis 1 (4096,1024,16)",
    # rows of 3 columns: a lane a row, the warp mostly idle (0.70)
    "odd softmax 3",
    # a reversed view: the strided path, every load computing its own offset, no vectors:
    # 72% of copy (torch.compile 55%), 0.70 of the model's time (H200, 2026-12-04 13:58)
    "views x[::-1] + x",
    # float16 rows of 2 along a strided axis, a thread a row: single-half loads and stores,
    # 72% of copy (torch.compile 55%): 0.74
    "strided rows float16 x - x.mean(0) (2,32768k)",
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


def test_the_random_cells_of_the_new_families_as_well_as_today():
    """Everyday cells outside the fixed sweeps: at least the 82% within 25% the model
    reaches now (84%: a guard against regressions; the target is 90%), no bias, and no
    family of three or more cells off on the whole."""
    r = {c: ratio(c) for c in RANDOM}
    assert len(r) >= 370
    assert sum(0.75 <= q <= 1.25 for q in r.values()) >= 0.82 * len(r)
    assert 0.9 <= float(np.median(list(r.values()))) <= 1.1
    families: dict[str, list[float]] = {}
    for c, q in r.items():
        families.setdefault(POINTS[c]["family"], []).append(q)
    off = {f: round(float(np.median(q)), 2) for f, q in families.items()
           if len(q) >= 3 and not 0.75 <= np.median(q) <= 1.25}
    assert off == {}


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
    # pairwise distances through a 3-D broadcast: 128M elements worked through from 10M read
    pair = "random pairwise float16 s21.62 (66,23)x(84335,23)"
    assert 0.75 <= ratio(pair) <= 1.25 and ratio(pair, elem_rate=0.0) < 0.3
    # small cells of 2-3 kernels wait for Python to launch each next kernel (step_s)
    for c in ("random standardize float16 s23.10 (1747,41,46) axis 0", "random batchnorm float16 s22.39 (8,61,3,1595)",
              "random batchnorm float32 s30.59 (13,106,32,38)"):
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
