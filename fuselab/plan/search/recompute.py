"""Recomputation: compute a cheap elementwise value again in each kernel that reads it,
instead of storing it and reading it back, when the cost model says that pays.

Typical win: `t = x * w` (w broadcast) feeds a reduction and a later pointwise kernel;
storing t costs a write and a read of t, recomputing it costs a read of x (and a small w).
Runs after the partition search, one candidate at a time, keeping a change only when the
plan's total predicted time drops; the optimality the exact search proves is over
partitions, and this pass can only lower the cost further.
"""
from __future__ import annotations

from ...ops import Kind
from ..analysis import Analysis, bits
from ..cost import estimate
from ..device import DeviceParams
from ..legality import Budgets, check
from ..model import Decision
from ..partition import stored_masks
from .common import EPS, ConstraintTerms


class _Cover:
    """Groups (a cover, in execution order) with what each stores and costs, updated
    locally: trying one recomputation touches only the kernels it changes."""

    def __init__(self, an: Analysis, groups: list[int], params: DeviceParams, budgets: Budgets) -> None:
        self.an, self.params, self.budgets = an, params, budgets
        self.cache: dict[tuple[int, int], float | None] = {}
        self.G = list(groups)
        self.where: dict[int, list[int]] = {}          # unit -> groups computing it, in order
        for i, m in enumerate(self.G):
            for u in bits(m):
                self.where.setdefault(u, []).append(i)
        self.stored = stored_masks(an, self.G)
        self.time = [self.kernel(m, st) for m, st in zip(self.G, self.stored)]

    def kernel(self, m: int, st: int) -> float | None:
        if not m:
            return 0.0
        key = (m, st)
        if key not in self.cache:
            v = check(self.an, m, self.budgets, st)
            self.cache[key] = estimate(self.an, m, st, v.space, self.params).time_s if v.ok else None
        return self.cache[key]

    def readers(self, p: int) -> list[int]:
        """Groups that read p without computing it."""
        return sorted({j for w in self.an.users[p] for j in self.where.get(w, ())
                       if not self.G[j] >> p & 1})

    def trial(self, p: int, dup: int, readers: list[int], h: int):
        """(time saved, change) for computing `dup` in every reader of p; None if illegal."""
        an = self.an
        new = {i: self.G[i] | dup for i in readers}
        where = {u: sorted(set(self.where[u]) | set(readers)) for u in bits(dup)}
        # p's own kernel keeps what it still needs, consumers first so a chain unravels
        m = self.G[h]
        for v in sorted(bits(dup), reverse=True):
            if not m >> v & 1 or an.out_mask >> v & 1 or an.umask[v] & m:
                continue
            if all(new.get(j, self.G[j]) >> v & 1 for w in an.users[v]
                   for j in where.get(w, self.where.get(w, ()))):
                m &= ~(1 << v)
                where[v] = [j for j in where[v] if j != h]
        new[h] = m
        prods = 0
        for v in bits(dup):
            prods |= an.pmask[v] & an.all_mask
        X = dup | prods
        home = {}
        stored_x = 0
        for x in bits(X):
            wx = where.get(x, self.where.get(x, []))
            if not wx:
                continue
            home[x] = wx[0]
            need = bool(an.out_mask >> x & 1) or any(
                not new.get(j, self.G[j]) >> x & 1
                for w in an.users[x] for j in where.get(w, self.where.get(w, ())))
            if need:
                stored_x |= 1 << x
        affected = set(new) | set(home.values())
        change = {}
        saved = 0.0
        for i in affected:
            gm = new.get(i, self.G[i])
            st = self.stored[i] & ~X
            for x, hx in home.items():
                if hx == i and stored_x >> x & 1 and gm >> x & 1:
                    st |= 1 << x
            t = self.kernel(gm, st)
            if t is None:
                return None
            saved += self.time[i] - t
            change[i] = (gm, st, t)
        return saved, change, where

    def apply(self, change: dict, where: dict) -> None:
        for i, (gm, st, t) in change.items():
            self.G[i], self.stored[i], self.time[i] = gm, st, t
        self.where.update(where)

    @property
    def total(self) -> float:
        return sum(self.time)


def recompute(an: Analysis, groups: list[int], params: DeviceParams, budgets: Budgets,
              terms: ConstraintTerms) -> tuple[list[int], list[Decision]]:
    """Groups in execution order -> groups (a cover) and the decisions taken. Units the
    user fused stay where they are."""
    g = an.graph
    pinned = terms.pinned
    log: list[Decision] = []
    cover = _Cover(an, groups, params, budgets)
    if any(t is None for t in cover.time):
        return groups, log
    for p in an.units:
        if (g.nodes[p].kind is not Kind.ELEMWISE or an.out_mask >> p & 1 or pinned >> p & 1
                or len(cover.where.get(p, ())) != 1):
            continue
        h = cover.where[p][0]
        readers = cover.readers(p)
        if not readers:
            continue
        best = None
        for dup in dict.fromkeys((1 << p, _cone(an, p, cover.G[h], pinned))):
            if not all(terms.allows(cover.G[i] | dup) for i in readers):
                continue
            res = cover.trial(p, dup, readers, h)
            if res is not None and res[0] > EPS * cover.total and (best is None or res[0] > best[0][0]):
                best = (res, dup)
        if best is None:
            continue
        (saved, change, where), dup = best
        log.append(Decision(
            "recompute", f"recompute {an.refs(bits(dup))} in the kernels of "
            f"{', '.join(an.refs(bits(cover.G[i]), 2) for i in readers)} instead of storing "
            f"{an.ref(p)}: saves {saved * 1e6:.2f} us", tuple(bits(dup)), saved))
        cover.apply(change, where)
    return [m for m in cover.G if m], log


def _cone(an: Analysis, p: int, home: int, pinned: int) -> int:
    """p with the elementwise producers it has in its own kernel: recomputing p elsewhere
    without them would only move the store to them."""
    cone = 1 << p
    stack = [p]
    while stack:
        v = stack.pop()
        for u, _ in an.prods[v]:
            if (home >> u & 1 and not cone >> u & 1 and not pinned >> u & 1
                    and an.graph.nodes[u].kind is Kind.ELEMWISE):
                cone |= 1 << u
                stack.append(u)
    return cone
