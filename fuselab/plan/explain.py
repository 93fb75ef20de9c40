"""Answers for the explorer: can two kernels merge, and why is each kernel boundary there.

`legal_merge(plan, k1, k2)` says whether the union of two kernels is one legal kernel of
that plan (not across a graph break, no cycle through a third kernel, one template, no
opaque company, budgets, the user's "keep apart"). `boundaries(plan)` walks every value
that crosses from one kernel to another and says why those kernels are not one: a graph
break (with the user's line), illegal (the reason), kept apart by the user, or fusing them
would cost more (the predicted times).
"""
from __future__ import annotations

from dataclasses import dataclass

from .analysis import Analysis, analyse, bits
from .device import DeviceParams
from .kernels import kernel_members
from .legality import DEFAULT_BUDGETS, check, stage_conflict
from .model import Plan
from .partition import GroupCost


@dataclass(frozen=True)
class Boundary:
    """Values kernel `src` stores for kernel `dst`, and why the two are separate."""

    src: int
    dst: int
    values: tuple[int, ...]         # stored by src, read by dst
    legal: bool                     # could the two kernels be one?
    reason: str
    gain_s: float | None = None     # predicted time saved by merging (negative: it costs)

    def __str__(self) -> str:
        vals = ", ".join(f"%{v}" for v in self.values)
        return f"k{self.src} -> k{self.dst} ({vals}): {self.reason}"


def _kernel_graph(plan: Plan) -> list[set[int]]:
    """succ[a]: kernels that read something kernel a stores."""
    owner = {}
    for k, kern in enumerate(plan.kernels):
        for i in kern.outputs:
            owner.setdefault(i, k)
    succ: list[set[int]] = [set() for _ in plan.kernels]
    for k, kern in enumerate(plan.kernels):
        for j in kern.inputs:
            a = owner.get(j)
            if a is not None and a != k:
                succ[a].add(k)
    return succ


def _cycle_through(plan: Plan, succ: list[set[int]], k1: int, k2: int) -> int | None:
    """A kernel on a path from one of k1, k2 to the other through a third kernel."""
    for a, b in ((k1, k2), (k2, k1)):
        # kernels reachable from a (not through b) that reach b
        stack = [s for s in succ[a] if s not in (a, b)]
        seen = set(stack)
        while stack:
            c = stack.pop()
            if b in succ[c]:
                return c
            for s in succ[c]:
                if s not in seen and s not in (a, b):
                    seen.add(s)
                    stack.append(s)
    return None


def legal_merge(plan: Plan, k1: int, k2: int) -> tuple[bool, str]:
    """(True, what the merged kernel would be) or (False, why it cannot be)."""
    an = analyse(plan.graph)
    n = len(plan.kernels)
    for k in (k1, k2):
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < n:
            return False, f"there is no kernel {k} (the plan has {n})"
    if k1 == k2:
        return False, "that is one kernel already"
    return _legal(an, plan, _kernel_graph(plan), k1, k2)


def _legal(an: Analysis, plan: Plan, succ: list[set[int]], k1: int, k2: int) -> tuple[bool, str]:
    m1, m2 = kernel_members(an, plan.kernels[k1]), kernel_members(an, plan.kernels[k2])
    across = stage_conflict(an, m1 | m2) if an.has_breaks else ""
    if across:
        return False, across      # the break forces this boundary, whatever else holds
    for a in plan.constraints.apart:
        x, y = [v for v in a if m1 >> v & 1], [v for v in a if m2 >> v & 1]
        if x and y:
            return False, f"you asked to keep {an.ref(x[0])} and {an.ref(y[0])} apart"
    c = _cycle_through(plan, succ, k1, k2)
    if c is not None:
        mc = kernel_members(an, plan.kernels[c])
        node = next((v for v in bits(mc) if an.umask[v] & (m1 | m2)), next(bits(mc)))
        return False, (f"would create a cycle through {an.ref(node)} (kernel {c}), which needs one "
                       "of them and feeds the other")
    verdict = check(an, m1 | m2, plan.budgets or DEFAULT_BUDGETS)
    if not verdict.ok:
        return False, verdict.reason
    return True, f"legal as one {verdict.space.template.value} kernel"


def boundaries(plan: Plan, params: DeviceParams | None = None) -> tuple[Boundary, ...]:
    """Every pair of kernels one feeds the other, with the reason they are separate."""
    an = analyse(plan.graph)
    params = params or plan.params or DeviceParams.h200_default()
    cost = GroupCost(an, params, plan.budgets or DEFAULT_BUDGETS)
    succ = _kernel_graph(plan)
    owner: dict[int, int] = {}
    for k, kern in enumerate(plan.kernels):
        for i in kern.outputs:
            owner.setdefault(i, k)
    pairs: dict[tuple[int, int], list[int]] = {}
    for k, kern in enumerate(plan.kernels):
        for j in kern.inputs:
            a = owner.get(j)
            if a is not None and a != k:
                pairs.setdefault((a, k), []).append(j)
    out = []
    for (a, b), values in pairs.items():
        ok, reason = _legal(an, plan, succ, a, b)
        gain = None
        if ok:
            m1, m2 = kernel_members(an, plan.kernels[a]), kernel_members(an, plan.kernels[b])
            t1, t2, t12 = cost(m1)[1], cost(m2)[1], cost(m1 | m2)[1]
            gain = t1 + t2 - t12
            if gain <= 0:
                reason = (f"fusing would cost more: {t12 * 1e6:.2f} us as one kernel vs "
                          f"{(t1 + t2) * 1e6:.2f} us as two (predicted)")
            else:
                why = " (the unfused plan keeps every op apart)" if plan.strategy == "unfused" else ""
                reason = f"fusable: would save {gain * 1e6:.2f} us{why}"
        out.append(Boundary(a, b, tuple(values), ok, reason, gain))
    return tuple(out)


def explain(plan: Plan) -> str:
    lines = [str(plan), "", "decisions:"]
    lines += [f"  {d}" for d in plan.log if d.kind != "boundary"] or ["  (none recorded)"]
    bs = boundaries(plan)
    if bs:
        lines += ["", "kernel boundaries:"] + [f"  {b}" for b in bs]
    return "\n".join(lines)
