"""The exact search: the cheapest plan under the cost model, part by part.

The graph is first split into independent parts (no kernel and no kernel cycle can span
two; compat.independent_parts), each searched on its own: A* over downsets (astar.py)
for a few thousand walk steps (it proves chains of large kernels, as notebook cells are,
in a handful of expansions), then the depth-first branch and bound (branch_bound.py)
from A*'s best plan (wide DAGs whose kernels A* cannot enumerate). A step and a time
budget bound the work; when either runs out, the best plan found so far is kept and
marked as not proven optimal.
"""
from __future__ import annotations

import time

from ..analysis import Analysis
from ..device import DeviceParams
from ..partition import GroupCost
from .astar import AStar
from .branch_bound import BranchAndBound
from .common import ConstraintTerms, SearchResult
from .context import SearchContext

ASTAR_STEPS = 5_000         # walk steps A* gets on a part before the branch and bound takes over
EXACT_MAX_PART = 120        # independent parts beyond this keep their greedy plan


def solve(ctx: SearchContext, upper: float, upper_groups: list[int], part: int,
          astar_steps: int = ASTAR_STEPS) -> SearchResult:
    """The cheapest plan of `part`, given a plan of it costing `upper`: A* for
    `astar_steps` walk steps, then, when it has not finished, the branch and bound from
    its best plan, within what is left of the budgets."""
    cap = ctx.max_steps
    ctx.max_steps = min(cap, ctx.steps + astar_steps)
    try:
        res = AStar(ctx, part).run(upper, upper_groups)
    finally:
        ctx.max_steps = cap
    if res.optimal or ctx.steps >= cap or time.perf_counter() > ctx.deadline:
        return res
    ctx.stopped = ""
    res2 = BranchAndBound(ctx).run(res.time_s, res.groups, part)
    return SearchResult(res2.groups, res2.time_s, res2.optimal, res.improved or res2.improved,
                        res.expanded + res2.expanded, res.steps + res2.steps)


def exact_search(an: Analysis, cost: GroupCost, params: DeviceParams, terms: ConstraintTerms,
                 steps: int, seconds: float, greedy: list[int]) -> tuple[list[int], str, bool]:
    """(groups, a summary for the log, whether it beat `greedy`): the exact search on each
    independent part, starting from the greedy plan's kernels in it. Parts share no
    kernel and no kernel cycle, so their optimal plans add up."""
    ctx = SearchContext(an, cost, params, terms, steps, seconds)
    out: list[int] = []
    optimal, improved, expanded = True, False, 0
    parts = ctx.parts()
    skipped = 0
    for part in parts:
        mine = [m for m in greedy if m & part]
        if part.bit_count() == 1:
            out += mine
            continue
        if part.bit_count() > EXACT_MAX_PART:
            out += mine
            optimal = False
            skipped += 1
            continue
        res = solve(ctx, sum(cost(m)[1] for m in mine), mine, part)
        out += res.groups
        optimal &= res.optimal
        improved |= res.improved
        expanded += res.expanded
    t = sum(cost(m)[1] for m in out)
    state = ("optimal under the cost model" if optimal else
             f"not proven optimal ({skipped} parts over {EXACT_MAX_PART} units kept their greedy plan)"
             if skipped else f"not proven optimal ({ctx.stopped})")
    text = (f"exact search: {len(out)} kernels, {t * 1e6:.2f} us, {state} ({len(parts)} independent "
            f"parts, {expanded} states expanded, {ctx.steps} steps)")
    return out, text, improved
