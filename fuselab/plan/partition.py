"""From groups of units to a Plan: kernel order, which kernel stores what, templates.

A *group* is the bitset of units one kernel computes. The searches produce a partition
(every unit in exactly one group); recomputation turns it into a cover (a cheap unit in
several groups). Either way each value that some other kernel reads, or that the user
keeps, is stored by exactly one kernel: the first in order that computes it.
"""
from __future__ import annotations

import heapq
from typing import Sequence

from .analysis import Analysis, analyse, bits
from .cost import estimate
from .device import DeviceParams
from .kernels import kernel_members
from .legality import DEFAULT_BUDGETS, Budgets, Verdict, check
from .model import Constraints, Kernel, Plan, kernel_from, kernel_stage


class GroupCycle(ValueError):
    """Kernel groups that read from each other in a cycle: no order can run them."""


def topo_order(an: Analysis, groups: Sequence[int]) -> list[int]:
    """The groups in an order where every group comes after those it reads from (the
    earliest stage, then the lowest first unit, first among the ready ones: every kernel
    of a stage runs before the graph break that ends it); raises GroupCycle if they form a
    cycle."""
    owner: dict[int, int] = {}
    for gi, m in enumerate(groups):
        for v in bits(m):
            owner.setdefault(v, gi)
    preds: list[set[int]] = [set() for _ in groups]
    for gi, m in enumerate(groups):
        for v in bits(m):
            for u, _ in an.prods[v]:
                h = owner.get(u)
                if h is not None and h != gi and not m >> u & 1:
                    preds[gi].add(h)
    succs: list[list[int]] = [[] for _ in groups]
    for gi, ps in enumerate(preds):
        for h in ps:
            succs[h].append(gi)
    indeg = [len(p) for p in preds]
    first = [(m & -m).bit_length() for m in groups]
    key = [(an.stage[f - 1], f) for f in first] if an.has_breaks else first
    ready = [(key[gi], gi) for gi in range(len(groups)) if indeg[gi] == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        _, gi = heapq.heappop(ready)
        out.append(groups[gi])
        for s in succs[gi]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(ready, (key[s], s))
    if len(out) != len(groups):
        raise GroupCycle("kernel groups form a cycle")
    return out


def stored_masks(an: Analysis, groups: Sequence[int]) -> list[int]:
    """For groups in execution order: what each must store (cover semantics)."""
    need = an.out_mask
    for m in groups:
        need |= an.reads_of(m)
    out, seen = [], 0
    for m in groups:
        out.append(m & need & ~seen)
        seen |= m
    return out


def build_plan(an: Analysis, groups: Sequence[int], strategy: str, budgets: Budgets, *,
               constraints: Constraints, log: tuple = (), notes: tuple[str, ...] = (),
               params=None, ordered: bool = False) -> Plan:
    """The Plan of these groups; every kernel is checked legal again here."""
    groups = list(groups) if ordered else topo_order(an, groups)
    stored = stored_masks(an, groups)
    count: dict[int, int] = {}
    for m in groups:
        for v in bits(m):
            count[v] = count.get(v, 0) + 1
    multi = sum(1 << v for v, c in count.items() if c > 1)
    kernels: list[Kernel] = []
    for m, s in zip(groups, stored):
        v = check(an, m, budgets, s)
        if not v.ok:
            raise AssertionError(f"planner produced an illegal kernel: {v.reason}")
        kernels.append(kernel_from(an.graph, bits(m), bits(s), v.space.template, v.space, bits(m & multi)))
    return Plan(an.graph, tuple(kernels), strategy, notes, constraints, log, params, budgets)


class GroupCost:
    """Legality and predicted time of a group under partition semantics (it stores what
    units outside it read), cached: the searches ask about the same sets many times."""

    def __init__(self, an: Analysis, params: DeviceParams, budgets: Budgets) -> None:
        self.an, self.params, self.budgets = an, params, budgets
        self.cache: dict[int, tuple[Verdict, float]] = {}
        self.verdicts: dict[int, tuple[Verdict, int]] = {}

    def legal(self, mask: int) -> Verdict:
        return self._verdict(mask)[0]

    def _verdict(self, mask: int) -> tuple[Verdict, int]:
        hit = self.verdicts.get(mask)
        if hit is None:
            members = list(bits(mask))
            stored = self.an.stored_of(mask, members)
            hit = self.verdicts[mask] = (check(self.an, mask, self.budgets, stored), stored)
        return hit

    def __call__(self, mask: int) -> tuple[Verdict, float]:
        hit = self.cache.get(mask)
        if hit is not None:
            return hit
        v, stored = self._verdict(mask)
        t = estimate(self.an, mask, stored, v.space, self.params).time_s if v.ok else float("inf")
        self.cache[mask] = (v, t)
        return v, t


def problems(plan: Plan) -> list[str]:
    """What is wrong with a plan, if anything: a kernel that breaks the template contract
    or its budgets, reads a value no earlier kernel stored, a unit nobody computes, a
    cell result nobody stores, a constraint not honoured, kernels out of stage order, a
    kernel whose space is not its legal one. Empty for a good plan."""
    an = analyse(plan.graph)
    budgets = plan.budgets or DEFAULT_BUDGETS
    out: list[str] = []
    available = set(plan.graph.input_ids)
    computed = 0
    where: dict[int, set[int]] = {}
    for k, kern in enumerate(plan.kernels):
        m = kernel_members(an, kern)
        computed |= m
        for v in bits(m):
            where.setdefault(v, set()).add(k)
        stored = 0
        for i in kern.outputs:
            stored |= 1 << i
        v = check(an, m, budgets, stored)
        if not v.ok:
            out.append(f"kernel {k} is illegal: {v.reason}")
        elif v.space.template is not kern.template:
            out.append(f"kernel {k} says {kern.template.value} but is {v.space.template.value}")
        elif v.space != kern.space:
            out.append(f"kernel {k} carries the space {kern.space}, legality gives {v.space}")
        if k and kernel_stage(plan.graph, kern) < kernel_stage(plan.graph, plan.kernels[k - 1]):
            out.append(f"kernel {k} runs after kernel {k - 1}, which is of a later stage (a graph break between)")
        for j in kern.inputs:
            if j not in available:
                out.append(f"kernel {k} reads %{j}, which no earlier kernel stores")
        available |= set(kern.outputs)
    if computed != an.all_mask:
        out.append(f"no kernel computes {an.refs(bits(an.all_mask & ~computed))}")
    for name, i in plan.graph.outputs:
        if i not in available:
            out.append(f"no kernel stores the result {name} (%{i})")
    for T in plan.constraints.together:
        homes = set.intersection(*(where.get(v, set()) for v in T))
        if not homes:
            out.append(f"{an.refs(sorted(T))} were to share a kernel but do not")
    for A in plan.constraints.apart:
        for k, kern in enumerate(plan.kernels):
            inside = [v for v in A if k in where.get(v, ())]
            if len(inside) > 1:
                out.append(f"kernel {k} holds {an.refs(inside)}, which were to be kept apart")
    return out
