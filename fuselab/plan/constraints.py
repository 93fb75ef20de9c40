"""User constraints: "fuse these" and "keep these apart", the explorer's toggles.

A toggle adds a constraint to the plan's Constraints (this module) and re-plans through
the same search (verbs.py), so toggles accumulate and every result is again a legal plan.
A toggle that directly contradicts an earlier one (cut an edge that was fused) replaces
it; one that cannot be honoured raises PlanError with the reason.

Targets: a node id (int), a kernel of the current plan as ("k", index) or the Kernel
object, an edge as (producer, consumer). Views and constants are recomputed in every
kernel that reads them, so naming one means the ops that read it.
"""
from __future__ import annotations

from typing import Any, Iterable

from .analysis import Analysis, analyse, bits
from .kernels import kernel_members
from .model import Constraints, Kernel, Plan, PlanError


# ---------------------------------------------------------------------------
# naming things
# ---------------------------------------------------------------------------

def _check_id(an: Analysis, i: Any) -> None:
    n = len(an.graph.nodes)
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
        raise PlanError(f"there is no node %{i} in this graph (it has %0 to %{n - 1})")


def _node_units(an: Analysis, i: Any) -> set[int]:
    """The units a node stands for: itself, or for a view or constant the ops reading it."""
    g = an.graph
    _check_id(an, i)
    if an.is_input[i]:
        raise PlanError(f"%{i} is the input {g.nodes[i].args['name']}: kernels read it, none computes it")
    if an.unit[i]:
        return {i}
    readers: set[int] = set()
    stack = list(g.users[i])
    while stack:
        u = stack.pop()
        if an.unit[u]:
            readers.add(u)
        else:
            stack.extend(g.users[u])
    if not readers:
        raise PlanError(f"{an.ref(i)} is a view or constant that no op reads")
    return readers


def _producer_unit(an: Analysis, i: int) -> int:
    """The unit (or input) whose value a node carries: views look through to it."""
    g = an.graph
    _check_id(an, i)
    while an.free[i]:
        if not g.nodes[i].inputs:
            raise PlanError(f"{an.ref(i)} is a constant, recomputed wherever it is read: "
                            "there is no edge to cut")
        i = g.nodes[i].inputs[0]
    return i


def _kernel_units(an: Analysis, plan: Plan, target: Any) -> set[int]:
    """The units of a kernel named as ("k", index) or by the Kernel object."""
    k = target if isinstance(target, Kernel) else target[1]
    if isinstance(k, Kernel):
        idx = next((j for j, kk in enumerate(plan.kernels) if kk is k or kk == k), None)
        if idx is None:
            raise PlanError("that kernel is not part of this plan")
        k = idx
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(plan.kernels):
        raise PlanError(f"there is no kernel {k} (the plan has {len(plan.kernels)})")
    return set(bits(kernel_members(an, plan.kernels[k])))


def _edge(an: Analysis, t: tuple) -> tuple[int, set[int]]:
    u, v = t
    pu = _producer_unit(an, u)
    if an.is_input[pu]:
        raise PlanError(f"%{u} is (a view of) the input {an.graph.nodes[pu].args['name']}: "
                        "it is read from memory already, there is no edge to cut or fuse")
    consumers = _node_units(an, v)
    if not any(an.pmask[c] >> pu & 1 for c in consumers):
        raise PlanError(f"%{v} does not read %{u}: ({u}, {v}) is not an edge of the graph")
    return pu, consumers


def _is_kernel_ref(t: Any) -> bool:
    return isinstance(t, Kernel) or (isinstance(t, tuple) and len(t) == 2 and t[0] == "k")


def _is_edge(t: Any) -> bool:
    return isinstance(t, tuple) and len(t) == 2 and all(isinstance(x, int) for x in t)


def _describe(targets: Iterable[Any]) -> str:
    parts = []
    for t in targets:
        if isinstance(t, Kernel):
            parts.append(f"kernel {t.name}")
        elif _is_kernel_ref(t):
            parts.append(f"kernel {t[1]}")
        elif _is_edge(t):
            parts.append(f"%{t[0]}->%{t[1]}")
        else:
            parts.append(f"%{t}")
    return ", ".join(parts)


# ---------------------------------------------------------------------------
# toggles
# ---------------------------------------------------------------------------

def with_together(plan: Plan, targets: tuple[Any, ...]) -> tuple[Constraints, list[str]]:
    """The plan's constraints with all the targets in one kernel, and notes on what that
    replaces; PlanError when the targets name nothing to fuse."""
    an = analyse(plan.graph)
    units: set[int] = set()
    for t in targets:
        if _is_kernel_ref(t):
            units |= _kernel_units(an, plan, t)
        elif _is_edge(t):
            pu, cs = _edge(an, t)
            units |= {pu} | cs
        else:
            units |= _node_units(an, t)
    if len(units) < 2:
        raise PlanError("name at least two ops (or kernels) to fuse")
    T = frozenset(units)
    notes = []
    apart = []
    for a in plan.constraints.apart:
        both = a & T
        if len(both) >= 2:
            # keep every other pair of the earlier split apart: only the pairs this fuse
            # joins are released, so "split, then merge two" does not undo the whole split
            apart.extend(frozenset((p, q)) for p in a for q in a
                         if p < q and not (p in T and q in T))
            notes.append(f"no longer keeping {an.refs(sorted(both))} apart: this fuse replaces "
                         "that part of an earlier split")
        else:
            apart.append(a)
    c = Constraints(plan.constraints.together + (T,), tuple(apart),
                    plan.constraints.history + (f"fuse {_describe(targets)}",))
    return c, notes


def with_apart(plan: Plan, targets: tuple[Any, ...]) -> tuple[Constraints, list[str]]:
    """The plan's constraints keeping the targets apart, and notes on what that replaces;
    PlanError when the targets name nothing to split."""
    an = analyse(plan.graph)
    sets: list[frozenset[int]] = []
    loose: set[int] = set()
    for t in targets:
        if _is_kernel_ref(t):
            ms = _kernel_units(an, plan, t)
            if len(ms) < 2:
                raise PlanError(f"{_describe([t])} computes a single op: there is nothing to split")
            sets.append(frozenset(ms))
        elif _is_edge(t):
            pu, cs = _edge(an, t)
            sets.extend(frozenset((pu, c)) for c in cs if c != pu)
        else:
            loose |= _node_units(an, t)
    if len(loose) == 1:
        (n,) = loose
        k = plan.kernel_of.get(n)
        mates = _kernel_units(an, plan, ("k", k)) - {n} if k is not None else set()
        if not mates:
            raise PlanError(f"{an.ref(n)} already has a kernel of its own")
        sets.extend(frozenset((n, m)) for m in mates)
    elif loose:
        sets.append(frozenset(loose))
    notes = []
    together = []
    for T in plan.constraints.together:
        if any(len(T & a) >= 2 for a in sets):
            notes.append(f"dropped the earlier 'fuse' of {an.refs(sorted(T))}: this split replaces it")
        else:
            together.append(T)
    c = Constraints(tuple(together), plan.constraints.apart + tuple(sets),
                    plan.constraints.history + (f"split {_describe(targets)}",))
    return c, notes
