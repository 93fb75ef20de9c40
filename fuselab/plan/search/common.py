"""What the searches share: the user's constraints as bitsets with the one test of them
(`ConstraintTerms.allows`), the starting partition they force (`prepare`), and the
result and budget of the exact searches.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..analysis import Analysis, bits, mask_of
from ..legality import Budgets, alone_reason, check
from ..model import Constraints, PlanError
from ..partition import GroupCycle, topo_order

EPS = 1e-9     # relative improvement that counts as better (float sums differ in order)


class OutOfSteps(Exception):
    """An exact search spent its step or time budget; the message says which."""


@dataclass
class SearchResult:
    """What an exact search found for one part of the graph."""

    groups: list[int]          # kernels in execution order
    time_s: float
    optimal: bool              # proven optimal (the search finished within its budget)
    improved: bool             # better than the upper bound it started from
    expanded: int              # states (A*) or assignments (branch and bound) expanded
    steps: int                 # search steps spent


class ConstraintTerms:
    """The user's constraints over units: each `together` set (closed over the paths
    between its units) runs in one kernel; `apart_with[v]` are the units v may not share
    a kernel with."""

    def __init__(self, together: tuple[int, ...] = (), apart_with: dict[int, int] | None = None) -> None:
        self.together = together
        self.apart_with = apart_with or {}
        self.tog_of = {v: t for t in together for v in bits(t)}    # unit -> its together set
        self.pinned = mask_of(self.tog_of)                         # units of any together set
        self.kept_apart = mask_of(self.apart_with)
        self.active = bool(together or self.apart_with)

    def allows(self, mask: int) -> bool:
        """Does a kernel of exactly the units `mask` honour the constraints: no together
        set only partly in it, no two units of it kept apart?"""
        if not self.active:
            return True
        for t in self.together:
            if mask & t and mask & t != t:
                return False
        apart = self.apart_with
        for v in bits(mask & self.kept_apart):
            if apart[v] & mask:
                return False
        return True


NO_TERMS = ConstraintTerms()


def prepare(an: Analysis, c: Constraints, budgets: Budgets) -> tuple[list[int], ConstraintTerms]:
    """(initial partition in order, the constraints as the searches' terms: together-sets
    closed over paths, unit -> units it must stay apart from). Raises PlanError when no
    plan can honour the constraints."""
    apart_with: dict[int, int] = {}
    for a in c.apart:
        m = mask_of(a)
        for v in a:
            apart_with[v] = apart_with.get(v, 0) | (m & ~(1 << v))
    sets = [mask_of(T) for T in c.together]
    # overlapping sets, and sets on each other's paths, must be one kernel
    changed = True
    while changed:
        changed = False
        hulls = [_hull(an, m) for m in sets]
        for i in range(len(sets)):
            for j in range(i + 1, len(sets)):
                if hulls[i] & hulls[j]:
                    sets[i] |= sets.pop(j)
                    changed = True
                    break
            if changed:
                break
    together = []
    for m in sets:
        h = _hull(an, m)
        _check_together(an, m, h, apart_with, budgets)
        together.append(h)
    covered = 0
    for h in together:
        covered |= h
    groups = together + [1 << v for v in bits(an.all_mask & ~covered)]
    try:
        return topo_order(an, groups), ConstraintTerms(tuple(together), apart_with)
    except GroupCycle:
        # two fused groups each read what the other computes: {1, 5} and {2, 3} of
        # 1 -> 2, 3 -> 5
        raise PlanError("cannot fuse these groups as asked: "
                        + " and ".join(an.refs(bits(m)) for m in together)
                        + " would each wait for a value another computes (a cycle)") from None


def _hull(an: Analysis, m: int) -> int:
    """m plus every unit on a path between two of its units (a kernel must contain them,
    or running it would need a value it computes later)."""
    up = down = 0
    for v in bits(m):
        up |= an.anc[v]
        down |= an.desc[v]
    return m | (up & down)


def _check_together(an: Analysis, asked: int, hull: int, apart_with: dict[int, int],
                    budgets: Budgets) -> None:
    what = an.refs(bits(asked))
    extra = hull & ~asked
    path = f" (with {an.refs(bits(extra))}, which lie on the paths between them)" if extra else ""
    alone = hull & an.alone_mask
    if alone and hull.bit_count() > 1:
        a = next(bits(alone))
        if asked >> a & 1:
            other = next(v for v in bits(hull) if v != a)
            raise PlanError(f"cannot fuse {what}: {alone_reason(an, a, other)}")
        raise PlanError(f"cannot fuse {what}: {an.ref(a)} lies on the path between them and "
                        "runs alone (opaque)")
    for v in bits(hull):
        clash = apart_with.get(v, 0) & hull
        if clash:
            raise PlanError(f"cannot fuse {what}{path}: you asked to keep {an.ref(v)} and "
                            f"{an.ref(next(bits(clash)))} apart")
    verdict = check(an, hull, budgets)
    if not verdict.ok:
        raise PlanError(f"cannot fuse {what}{path}: {verdict.reason}")
