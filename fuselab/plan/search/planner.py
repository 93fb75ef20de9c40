"""The planner's entry point: a strategy and the user's constraints -> a Plan.

- "auto": the cheapest plan under the cost model. Greedy merging (greedy.py) gives an
  upper bound; the exact search (exact.py: A* over executed sets, astar.py, then a
  branch and bound over unit-to-kernel assignments, branch_bound.py) then proves it
  optimal or improves it, part by independent part, for graphs of up to EXACT_MAX_UNITS units
  within its step and time budgets. Larger graphs, larger parts, or a search that runs
  out of budget keep the best plan found, and the log says which. Recomputation
  (recompute.py) then duplicates cheap producers where that pays.
- "max": the largest legal kernels regardless of cost (greedy merging of every legal pair).
- "unfused": one op per kernel, except what the user asked to fuse.
Every plan carries its constraints and a log of the decisions taken. Graph breaks are
constraints of the trace: no kernel spans one (legality), and the kernels before a break
run before those after it (partition.topo_order).
"""
from __future__ import annotations

import time

from ...ir import Graph
from ..analysis import Analysis, analyse, bits
from ..device import DeviceParams
from ..explain import boundaries
from ..legality import DEFAULT_BUDGETS, Budgets
from ..model import NO_CONSTRAINTS, Constraints, Decision, Plan
from ..partition import GroupCost, build_plan, topo_order
from .common import prepare
from .exact import exact_search
from .greedy import Greedy
from .recompute import recompute as recompute_pass

STRATEGIES = ("auto", "unfused", "max")
EXACT_MAX_UNITS = 600       # graphs beyond this are planned by greedy merging alone
EXACT_STEPS = 300_000       # candidate-walk steps, and
EXACT_SECONDS = 1.0         # wall time: whichever runs out first ends the exact search
LOG_BOUNDARIES = 60         # explain at most this many kernel boundaries in the log


def plan(graph: Graph, strategy: str = "auto", constraints: Constraints = NO_CONSTRAINTS,
         params: DeviceParams | None = None, budgets: Budgets | None = None, *,
         exact_steps: int = EXACT_STEPS, exact_seconds: float = EXACT_SECONDS, recompute: bool = True,
         notes: tuple[str, ...] = ()) -> Plan:
    """Plan `graph`. Raises PlanError when the constraints cannot be honoured."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown plan strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    constraints = constraints or NO_CONSTRAINTS
    an = analyse(graph)
    params = params or DeviceParams.h200_default()
    budgets = budgets or DEFAULT_BUDGETS
    t0 = time.perf_counter()
    log: list[Decision] = [Decision("constraint", n) for n in notes]
    log += [Decision("constraint", f"asked: {h}") for h in constraints.history]
    log += [Decision("constraint", f"{b}: what was traced before it runs first, then the device "
                     f"syncs (a kernel boundary, {params.sync_s * 1e6:.0f} us)",
                     (b.node,) if b.node is not None else ()) for b in graph.breaks]
    initial, terms = prepare(an, constraints, budgets)
    cost = GroupCost(an, params, budgets)
    search_log: list[Decision] = []
    summary = ""
    if strategy == "unfused":
        groups = initial
        summary = "unfused: one op per kernel" + (" except the fused groups asked for" if terms.together else "")
    else:
        greedy = Greedy(an, cost, "max" if strategy == "max" else "auto", terms.apart_with)
        groups = greedy.run(initial)
        search_log = greedy.log
        t_greedy = sum(cost(m)[1] for m in groups)
        summary = (f"{strategy}: greedy merging gives {len(groups)} kernels, "
                   f"{t_greedy * 1e6:.2f} us predicted")
        if strategy == "auto":
            if len(an.units) <= EXACT_MAX_UNITS:
                groups, text, improved = exact_search(an, cost, params, terms, exact_steps,
                                                      exact_seconds, groups)
                summary += "; " + text
                if improved:
                    search_log = _kernel_log(an, cost, groups)
            else:
                summary += (f"; {len(an.units)} units is over the exact search's limit of "
                            f"{EXACT_MAX_UNITS}: greedy plan kept")
    log.append(Decision("search", summary))
    log += search_log
    if strategy == "auto" and recompute:
        groups, rlog = recompute_pass(an, topo_order(an, groups), params, budgets, terms)
        log += rlog
        result = build_plan(an, groups, strategy, budgets, constraints=constraints,
                            params=params, ordered=True)
    else:
        result = build_plan(an, groups, strategy, budgets, constraints=constraints, params=params)
    if len(result.kernels) <= LOG_BOUNDARIES:
        log += [Decision("boundary", str(b), b.values, b.gain_s) for b in boundaries(result, params)]
    log.append(Decision("search", f"planned in {(time.perf_counter() - t0) * 1e3:.1f} ms"))
    return Plan(result.graph, result.kernels, strategy, (summary,), constraints, tuple(log),
                params, budgets)


def _kernel_log(an: Analysis, cost: GroupCost, groups: list[int]) -> list[Decision]:
    """What each multi-op kernel of the exact plan fuses and what that saves."""
    out = []
    for m in groups:
        if m.bit_count() < 2:
            continue
        alone = sum(cost(1 << v)[1] for v in bits(m))
        verdict, t = cost(m)
        out.append(Decision("merge", f"fuse {an.refs(bits(m), 6)} into one "
                            f"{verdict.space.template.value} kernel: saves {(alone - t) * 1e6:.2f} us "
                            "vs one kernel per op", tuple(bits(m)), alone - t))
    return out
