"""The planner's verbs: make a plan, change it with the explorer's toggles, ask about it.

Each is a function of a Plan; they are also Plan's methods (`plan.fuse(...)`), attached
here because model.py, at the bottom of the planner, imports nothing above it (as JAX's
NumPy layer attaches the array methods its core never imports).
"""
from __future__ import annotations

from typing import Any

from ..ir import Graph
from . import constraints, cost, explain as explaining
from .device import DeviceParams
from .legality import Budgets
from .model import NO_CONSTRAINTS, Constraints, Plan
from .search import STRATEGIES, plan as search_plan


def make_plan(graph: Graph, strategy: str = "auto", constraints: Constraints | None = None,
              params: DeviceParams | None = None, budgets: Budgets | None = None) -> Plan:
    """Plan `graph` with a strategy (search/planner.py); raises PlanError when the
    constraints cannot be honoured, ValueError for an unknown strategy."""
    return search_plan(graph, strategy, constraints or NO_CONSTRAINTS, params, budgets)


def fuse(plan: Plan, *targets: Any) -> Plan:
    """Put the targets in one kernel. Targets: node ids, kernels as ("k", index) or
    Kernel objects, edges as (producer, consumer)."""
    return _replan(plan, *constraints.with_together(plan, targets))


def split(plan: Plan, *targets: Any) -> Plan:
    """Keep the targets apart: ("k", i) splits kernel i into single ops, an edge
    (producer, consumer) is cut, one node leaves its kernel, several nodes are kept
    pairwise apart."""
    return _replan(plan, *constraints.with_apart(plan, targets))


def cut(plan: Plan, producer: int, consumer: int) -> Plan:
    """Materialise `producer` for `consumer`: the two never share a kernel."""
    return split(plan, (producer, consumer))


def with_strategy(plan: Plan, strategy: str) -> Plan:
    """Re-plan with another strategy, keeping the constraints."""
    return search_plan(plan.graph, strategy, plan.constraints, plan.params, plan.budgets)


def without_constraints(plan: Plan) -> Plan:
    return search_plan(plan.graph, plan.strategy, NO_CONSTRAINTS, plan.params, plan.budgets)


def _replan(plan: Plan, c: Constraints, notes: list[str]) -> Plan:
    strategy = plan.strategy if plan.strategy in STRATEGIES else "auto"
    return search_plan(plan.graph, strategy, c, plan.params, plan.budgets, notes=tuple(notes))


def report(plan: Plan, params: DeviceParams | None = None) -> cost.PlanReport:
    """Bytes, launches, intermediates and predicted time (cost.PlanReport)."""
    return cost.report(plan, params or plan.params)


def legal_merge(plan: Plan, k1: int, k2: int) -> tuple[bool, str]:
    return explaining.legal_merge(plan, k1, k2)


def boundaries(plan: Plan) -> tuple[explaining.Boundary, ...]:
    """For each edge between kernels: why it is not fused (explain.Boundary)."""
    return explaining.boundaries(plan)


def explain(plan: Plan) -> str:
    """The decision log and the kernel boundaries, as text."""
    return explaining.explain(plan)


for _verb in (fuse, split, cut, with_strategy, without_constraints, report, legal_merge, boundaries, explain):
    setattr(Plan, _verb.__name__, _verb)
