"""Planning: which nodes of a graph become one kernel.

    make_plan(graph, "auto" | "max" | "unfused", constraints=None, params=None) -> Plan
    plan.fuse(...), plan.split(...), plan.cut(u, v), plan.with_strategy(s) -> new Plan
    plan.report() -> cost.PlanReport;  plan.boundaries(), plan.legal_merge(k1, k2)

Modules, one job each: analysis (graph facts as bitsets), legality (the template
contract and the reasons), cost (device parameters, kernel costs, plan report), greedy and
exact (the searches), recompute, constraints (user toggles), explain (boundaries),
partition (groups -> Plan), search (the entry point).
"""
from __future__ import annotations

from ..ir import Graph
from ..ops import Kind
from .model import (NO_CONSTRAINTS, Constraints, Decision, Kernel, Plan, PlanError, Template,
                    is_free, make_kernel)

STRATEGIES = ("auto", "unfused", "max")


def template_of_single(graph: Graph, i: int) -> Template:
    kind = graph.nodes[i].kind
    if kind is Kind.OPAQUE:
        return Template.OPAQUE
    if kind is Kind.REDUCE:
        return Template.REDUCTION
    return Template.POINTWISE


def unfused_plan(graph: Graph) -> Plan:
    """One kernel per op, as eager NumPy/CuPy would launch them; views and constants
    are folded into their readers as eager libraries do with strides (a view or constant
    that is itself a cell result gets a copy kernel)."""
    kernels = []
    for i, n in enumerate(graph.nodes):
        if n.op == "input":
            continue
        if is_free(graph, i) and i not in graph.output_ids:
            continue
        kernels.append(make_kernel(graph, [i], template_of_single(graph, i)))
    return Plan(graph, tuple(kernels), "unfused")


def make_plan(graph: Graph, strategy: str = "auto", constraints: Constraints | None = None,
              params=None, budgets=None) -> Plan:
    """Plan `graph` with a strategy (see search.py); raises PlanError when the
    constraints cannot be honoured, ValueError for an unknown strategy."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown plan strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    from . import search
    return search.plan(graph, strategy, constraints or NO_CONSTRAINTS, params, budgets)


__all__ = ["Kernel", "Plan", "Template", "Constraints", "Decision", "PlanError", "make_plan",
           "unfused_plan", "STRATEGIES", "make_kernel"]
