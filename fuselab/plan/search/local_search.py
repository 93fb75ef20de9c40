"""Local search on a plan: merge two kernels, or move one unit to another kernel or to one
of its own, while that makes the plan cheaper (and it stays legal and acyclic). The
branch and bound starts from its result and polishes every better plan it finds with it.
"""
from __future__ import annotations

import time

from ..analysis import Analysis, bits
from ..partition import GroupCycle, topo_order
from .common import EPS
from .context import SearchContext

INF = float("inf")


def improve(ctx: SearchContext, groups: list[int], t: float) -> tuple[list[int], float]:
    """(groups, time) after the cheapest merge, else the first saving move, repeated
    until neither is left or the time budget is spent. `t`, the plan's time, sets what
    counts as a saving."""
    costs = [ctx.cost(m)[1] for m in groups]
    while time.perf_counter() < ctx.deadline:
        step = _best_merge(ctx, groups, costs, t) or _first_move(ctx, groups, costs, t)
        if step is None:
            break
        groups, costs, t = step
    return groups, sum(costs)


def _best_merge(ctx: SearchContext, groups: list[int], costs: list[float],
                t: float) -> tuple[list[int], list[float], float] | None:
    """The merge of two kernels that saves the most, when it leaves no cycle."""
    best = None
    n = len(groups)
    for a in range(n):
        for b in range(a + 1, n):
            if not _compatible(ctx, groups[a], groups[b]):
                continue
            d = _time(ctx, groups[a] | groups[b]) - costs[a] - costs[b]
            if d < -t * EPS and (best is None or d < best[0]):
                best = (d, a, b)
    if best is None:
        return None
    d, a, b = best
    trial = [m for j, m in enumerate(groups) if j not in (a, b)] + [groups[a] | groups[b]]
    if not _acyclic(ctx.an, trial):
        return None
    return trial, [c for j, c in enumerate(costs) if j not in (a, b)] + [costs[a] + costs[b] + d], t + d


def _first_move(ctx: SearchContext, groups: list[int], costs: list[float],
                t: float) -> tuple[list[int], list[float], float] | None:
    """The first move of a unit (not pinned by a "fuse") out of its kernel, into another
    kernel or a new one, that saves time and leaves no cycle."""
    for a, home in enumerate(groups):
        if home.bit_count() < 2:
            continue
        for v in bits(home):
            if v in ctx.terms.tog_of:
                continue
            rest = home & ~(1 << v)
            cr = _time(ctx, rest)
            if cr == INF:
                continue
            for b in range(-1, len(groups)):
                if b == a or (b >= 0 and not ctx.compat[v] & groups[b]):
                    continue
                nb = (1 << v) | (groups[b] if b >= 0 else 0)
                cb = _time(ctx, nb)
                if cr + cb - costs[a] - (costs[b] if b >= 0 else 0) >= -t * EPS:
                    continue
                trial, tc = list(groups), list(costs)
                trial[a], tc[a] = rest, cr
                if b >= 0:
                    trial[b], tc[b] = nb, cb
                else:
                    trial.append(nb)
                    tc.append(cb)
                if _acyclic(ctx.an, trial):
                    return trial, tc, sum(tc)
    return None


def _time(ctx: SearchContext, m: int) -> float:
    """The time of a kernel of units m, or INF when it is illegal or breaks a constraint."""
    if m.bit_count() > ctx.max_nodes or not ctx.terms.allows(m):
        return INF
    verdict, c = ctx.cost(m)
    return c if verdict.ok else INF


def _compatible(ctx: SearchContext, ma: int, mb: int) -> bool:
    compat = ctx.compat
    for v in bits(ma):
        if mb & ~compat[v]:
            return False
    return True


def _acyclic(an: Analysis, groups: list[int]) -> bool:
    try:
        topo_order(an, groups)
        return True
    except GroupCycle:
        return False
