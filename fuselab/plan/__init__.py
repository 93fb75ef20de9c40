"""Planning: which nodes of a graph become one kernel.

    make_plan(graph, "auto" | "max" | "unfused", constraints=None, params=None) -> Plan
    fuse(plan, ...), split(plan, ...), cut(plan, u, v), with_strategy(plan, s) -> new Plan
    report(plan) -> cost.PlanReport;  boundaries(plan), legal_merge(plan, k1, k2), explain(plan)
    (each also a method: plan.fuse(...), plan.report(), ...)

Layers, each importing only those below it:
- data: model (Plan, Kernel, Space, Constraints, Decision), device (DeviceParams);
- rules: analysis (graph facts as bitsets), legality (the template contract and the
  reasons), kernels (kernels of member sets, the unfused plan), cost (kernel costs, the
  plan report), partition (groups of units -> Plan), explain (boundaries), constraints
  (toggles -> Constraints);
- search/: greedy, the exact searches (A*, branch and bound), recompute, and the entry
  point `search.plan`;
- verbs: the functions above.
"""
from __future__ import annotations

from .kernels import make_kernel, unfused_plan
from .model import NO_CONSTRAINTS, Constraints, Decision, Kernel, Plan, PlanError, Space, Template
from .search import STRATEGIES
from .verbs import (boundaries, cut, explain, fuse, legal_merge, make_plan, report, split,
                    with_strategy, without_constraints)

__all__ = ["Kernel", "Plan", "Space", "Template", "Constraints", "Decision", "PlanError",
           "NO_CONSTRAINTS", "STRATEGIES", "make_plan", "unfused_plan", "make_kernel", "fuse",
           "split", "cut", "with_strategy", "without_constraints", "report", "explain",
           "boundaries", "legal_merge"]
