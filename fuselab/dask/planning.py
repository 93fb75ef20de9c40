"""Plans whose every kernel runs per Dask block. The planner's templates fuse views of
intermediates (a transpose or slice of a value computed in the kernel); per block, such a
view reads other blocks' elements. Each such kernel is cut there, through the planner's
own constraints (as the explorer's "cut" toggle does), and the plan's log says why."""
from __future__ import annotations

from ..plan.model import Plan, PlanError
from .execute import check_plan

_MAX_CUTS = 32


def chunkable(plan: Plan) -> Plan:
    """`plan`, or the plan the same search gives with the kernels that cannot run per
    block cut where they read other blocks (a view of an intermediate), else split."""
    for _ in range(_MAX_CUTS):
        bad = check_plan(plan)
        if not bad:
            return plan
        k, lay = bad[0]
        n = plan.graph.nodes[lay.culprit] if lay.culprit is not None else None
        try:
            if n is not None and n.inputs and n.kind.value == "injective":
                plan = plan.cut(n.inputs[0], lay.culprit)
            else:
                plan = plan.split(("k", k))
        except PlanError:
            plan = plan.split(("k", k))
    return plan
