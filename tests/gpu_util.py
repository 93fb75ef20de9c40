"""Helpers for the GPU tests (marked `gpu`; conftest.py skips them without a device)."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from fuselab.interp import run_graph
from fuselab.plan.model import Plan


def run_on_gpu(plan: Plan, inputs: Mapping[str, np.ndarray], options=None) -> dict[str, Any]:
    from fuselab import runtime
    return runtime.execute(plan, inputs, options=options)


def check_plan(plan: Plan, inputs: Mapping[str, np.ndarray], rtol: float | None = None, want=None,
               twice: bool = True) -> None:
    """Run `plan` on the GPU, compare with NumPy; a second run must give the same bits
    (split reductions reset their counters and combine partials in a fixed order)."""
    from fuselab.runtime import compare
    want = run_graph(plan.graph, inputs) if want is None else want
    got = run_on_gpu(plan, inputs)
    check = compare(got, want, rtol)
    assert check.ok, f"{plan.strategy} plan:\n{plan}\n{check.worst}"
    if twice:
        again = run_on_gpu(plan, inputs)
        for name in got:
            np.testing.assert_array_equal(again[name].get(), got[name].get(), err_msg=f"{name} is not deterministic")
