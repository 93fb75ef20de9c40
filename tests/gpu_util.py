"""Helpers for the GPU tests (marked `gpu`; conftest.py skips them without a device)."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from fuselab.interp import run_graph
from fuselab.plan.model import Plan


def run_on_gpu(plan: Plan, inputs: Mapping[str, np.ndarray], options=None, tune: bool = True) -> dict[str, Any]:
    from fuselab import runtime
    if tune:
        return runtime.execute(plan, inputs, options=options)
    from fuselab.runtime.launch import Executable, synchronize
    outs = Executable(plan, options=options, tune=False).run(inputs)
    synchronize(f"the {plan.strategy} plan")
    return outs


def check_plan(plan: Plan, inputs: Mapping[str, np.ndarray], rtol: float | None = None, want=None,
               twice: bool = True, tune: bool = True) -> None:
    """Run `plan` on the GPU (its kernels tuned, or with `tune=False` the heuristics'),
    compare with NumPy; a second run must give the same bits (split reductions reset
    their counters and combine partials in a fixed order)."""
    from fuselab.runtime import compare
    want = run_graph(plan.graph, inputs) if want is None else want
    got = run_on_gpu(plan, inputs, tune=tune)
    check = compare(got, want, rtol)
    assert check.ok, f"{plan.strategy} plan:\n{plan}\n{check.worst}"
    if twice:
        again = run_on_gpu(plan, inputs, tune=tune)
        for name in got:
            np.testing.assert_array_equal(again[name].get(), got[name].get(), err_msg=f"{name} is not deterministic")
