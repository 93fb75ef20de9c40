"""The shape sweep's random cases (benchmarks/sweep_cases.py) are cells fuselab takes:
each traces and plans, and a family filter draws only that family."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from sweep_cases import NEW_FAMILIES, random_cases  # noqa: E402


@pytest.mark.parametrize("seed", [3, 4])
def test_everyday_families_trace_and_plan(seed):
    import fuselab
    from fuselab.plan import make_plan
    chosen = random_cases(seed, 20, NEW_FAMILIES)
    assert [c.name for c in chosen] == [c.name for c in random_cases(seed, 20, NEW_FAMILIES)]
    seen = set()
    for case in chosen:
        fam = next(f for f in NEW_FAMILIES if case.family.startswith(f"random {f}")
                   or (f == "full reduce" and case.family.startswith("random full"))
                   or (f == "mixed dtype" and case.family.startswith("random mixed"))
                   or (f == "count" and case.family.startswith("random any")))
        seen.add(fam)
        inputs = {k: np.zeros(shape, dt) for k, (shape, dt) in case.inputs.items()}
        traced = fuselab.trace_cell(case.source, {"np": np, **inputs})
        plan = make_plan(traced.graph, "auto")
        assert plan.kernels and all(o in dict(traced.graph.outputs) for o in case.outputs), case.name
    assert seen == set(NEW_FAMILIES)


def test_an_unknown_family_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="unknown sweep families.*batchnorm"):
        random_cases(1, 5, ("batchnrom",))
