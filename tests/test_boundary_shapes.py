"""Shapes on both sides of every launch-configuration threshold of the CUDA templates
(tests/boundary_shapes.py lists the decision points), on the CPU emulator against NumPy:
each cell under the "auto" and "max" plans and its family's template forced on the whole
cell, with the heuristic's configuration, every launch candidate of every kernel and
every forced row tier; misaligned vector loads and stores are failures.

A CI-fast subset runs by default; `BOUNDARY_ALL=1` runs every case (about 1,150 cells),
`BOUNDARY_SANITIZE=1` adds g++'s alignment sanitizer (shared-memory accesses too).
From tests/: `python3 boundary_shapes.py [id-regex]` runs cases outside pytest."""
from __future__ import annotations

import os

import pytest

from boundary_shapes import FAMILIES, all_cases, run_cases
from codegen_util import NVRTC_OK
from cuda_host import needs_cxx

pytestmark = needs_cxx

ALL = os.environ.get("BOUNDARY_ALL") == "1"
SANITIZE = os.environ.get("BOUNDARY_SANITIZE") == "1"
NVRTC = ALL and NVRTC_OK   # the whole set's kernels through NVRTC too
CHUNK = 12   # cases compiled together (one host compile per chunk)


def _chunks():
    cases = [c for c in all_cases() if ALL or c.ci]
    out = []
    for family in FAMILIES:
        mine = [c for c in cases if c.family == family or (family == "row-vector" and c.family == "stencil")]
        for i in range(0, len(mine), CHUNK):
            part = mine[i:i + CHUNK]
            out.append(pytest.param(part, id=f"{family}-{i // CHUNK}"))
    return out


@pytest.mark.parametrize("cases", _chunks())
def test_boundary_shapes_match_numpy(cases):
    report = run_cases(cases, sanitize=SANITIZE, nvrtc=NVRTC)
    assert report.variants > 0
    assert not report.failures, "\n".join(f[:1500] for f in report.failures)


def test_every_family_has_ci_cases_on_both_sides():
    """The CI subset keeps cases of every family (each threshold's sides are in the full set)."""
    ci = {c.family for c in all_cases() if c.ci}
    assert ci == {c.family for c in all_cases()}
