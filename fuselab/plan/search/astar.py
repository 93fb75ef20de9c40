"""Exact search, first form: the cheapest plan under the cost model, as a shortest path.

A state is the set S of units already executed (always a downset: everything a unit
needs is in S). A step runs one legal kernel K, a non-empty downset of what remains, and
costs t(K); since the cost model is additive per kernel, the cheapest path from {} to all
units is the optimal partition. A* finds it with the admissible, consistent estimate

    h(S) = launch * (kernels still needed) + max(bytes / bandwidth, flops / throughput)

- kernels still needed: a set of remaining units no two of which can share a kernel
  (compat.py's pairwise necessary conditions) needs that many launches;
- bytes: what any plan must still move: each array the rest reads, once; each result,
  once; each value some reader can never share a kernel with, written and read back;
- flops: each remaining op evaluated once over its own shape.
The greedy plan is the first upper bound U. Candidate kernels are enumerated by a
depth-first walk over the remaining units (include / exclude, ascending ids, so every K
is a downset), pruned by rules that adding units cannot repair (K must be a clique of the
compatibility graph; reductions no template can put together; "keep apart" constraints;
the node budget) and by the bound: units left out, or unable to join K, need that many
more launches, and values crossing between K and them are written and read again.

exact.py runs it on each independent part of the graph for a few thousand walk steps
(it proves chains of large kernels, as notebook cells are, in a handful of expansions),
then hands over to the branch and bound (branch_bound.py).
"""
from __future__ import annotations

import heapq

from ..analysis import bits
from .common import EPS, OutOfSteps, SearchResult
from .compat import NO_TEMPLATE, ReduceState, independent_set
from .context import SearchContext


class AStar:
    """A* over the downsets of one part of the graph (the other units count as executed)."""

    def __init__(self, ctx: SearchContext, part: int) -> None:
        self.ctx, self.an, self.params = ctx, ctx.an, ctx.params
        self.all = ctx.an.all_mask
        self.active = part
        self.bound_of: dict[int, tuple[float, float, float]] = {}   # executed set -> bound()
        self.kernels_needed_of: dict[int, int] = {}                 # remaining set -> kernels_needed()

    # -- lower bound ------------------------------------------------------------------
    def bound(self, S: int) -> tuple[float, float, float]:
        """(h(S), bytes any plan must still move, flops it must still compute)."""
        hit = self.bound_of.get(S)
        if hit is not None:
            return hit
        an, p, ctx = self.an, self.params, self.ctx
        rem = self.all & ~S
        kmin = self.kernels_needed(rem)
        reads = 0
        flops = 0.0
        for v in bits(rem):
            reads |= an.pmask[v]
            flops += ctx.fmin[v]
        reads &= S | an.input_mask
        B = sum(an.lbread[x] for x in bits(reads)) + sum(an.nbytes[v] for v in bits(rem & an.out_mask))
        for v in bits(rem & ctx.stored):
            # storing it costs its write (a result's is counted above) and, when a unit of
            # this search reads it, one read back
            B += (0 if an.out_mask >> v & 1 else an.nbytes[v]) + \
                (an.lbread[v] if ctx.far_users[v] & self.active else 0)
        h = p.launch_s * kmin + max(B / p.bandwidth, flops / p.throughput)
        self.bound_of[S] = out = (h, B, flops)
        return out

    def kernels_needed(self, rem: int) -> int:
        """At least this many kernels run the units `rem`: the size of a set of them no two
        of which can ever share a kernel (an independent set of the compatibility graph,
        found greedily: repeatedly the unit compatible with the fewest candidates left)."""
        hit = self.kernels_needed_of.get(rem)
        if hit is not None:
            return hit
        n = len(independent_set(self.ctx.compat, rem))
        self.kernels_needed_of[rem] = n
        return n

    # -- search -------------------------------------------------------------------------
    def run(self, upper: float, upper_groups: list[int]) -> SearchResult:
        """The cheapest plan of the part, given a plan `upper_groups` of it costing `upper`."""
        start = self.all & ~self.active
        self.U = upper
        self.best_goal: tuple[int, int] | None = None
        best_g = {start: 0.0}
        self.parent: dict[int, tuple[int, int]] = {}
        heap = [(self.bound(start)[0], 0, 0.0, start)]
        steps0 = self.ctx.steps
        closed: set[int] = set()
        expanded = 0
        optimal = True
        try:
            while heap and heap[0][0] < self.U * (1 - EPS):
                f, _, g, S = heapq.heappop(heap)
                if S in closed or g > best_g.get(S, float("inf")):
                    continue
                closed.add(S)
                expanded += 1
                for S2, g2, K in self._expand(S, g):
                    if S2 not in closed and g2 < best_g.get(S2, float("inf")):
                        best_g[S2] = g2
                        self.parent[S2] = (S, K)
                        heapq.heappush(heap, (g2 + self.bound(S2)[0], -S2.bit_count(), g2, S2))
        except OutOfSteps as e:
            optimal = False
            self.ctx.stopped = str(e)
        if self.best_goal is None:
            return SearchResult(list(upper_groups), upper, optimal, False, expanded, self.ctx.steps - steps0)
        groups = []
        S, K = self.best_goal
        groups.append(K)
        while S != start:
            S, K = self.parent[S]
            groups.append(K)
        groups.reverse()
        return SearchResult(groups, self.U, optimal, True, expanded, self.ctx.steps - steps0)

    def _expand(self, S: int, g: float):
        """Successor states (S | K, g + t(K)) worth queueing."""
        an, ctx = self.an, self.ctx
        rem = self.all & ~S
        order = list(bits(rem))
        _, B0, F0 = self.bound(S)
        compute_floor = F0 / self.params.throughput
        avail = S | an.input_mask
        out: list[tuple[int, float, int]] = []
        L, bw = self.params.launch_s, self.params.bandwidth
        n = len(order)
        lbread, nbytes, pmask = an.lbread, an.nbytes, an.pmask
        terms, keys = ctx.terms, ctx.keys

        def leaf(kin: int) -> None:
            if not terms.allows(kin):
                return
            verdict, c = ctx.cost(kin)
            if not verdict.ok:
                return
            S2, g2 = S | kin, g + c
            if S2 == self.all:
                if g2 < self.U * (1 - EPS):
                    self.U = g2
                    self.best_goal = (S, kin)
                return
            if g2 + self.bound(S2)[0] < self.U * (1 - EPS):
                out.append((S2, g2, kin))

        compat = ctx.compat

        def grow(clique: int, k: int, units: int) -> tuple[int, int]:
            """Add to the pairwise-incompatible set those of `units` incompatible with
            all of it (greedy, in id order)."""
            for u in bits(units):
                if not compat[u] & clique:
                    clique |= 1 << u
                    k += 1
            return clique, k

        def walk(i: int, kin: int, extra: float, elig: int, clique: int, k_out: int,
                 rin: int, rout: int, forced: int, rs: ReduceState | None) -> None:
            # elig: units compatible with every member so far. Units left out, and later
            # units that cannot join (incompatible with a member), run in later kernels:
            # at least k_out of them, the size of `clique`, a set of them no two of which
            # are compatible
            ctx.step(1023)
            lb = g + L * (1 + k_out) + max((B0 + extra) / bw, compute_floor)
            if lb >= self.U * (1 - EPS):
                return
            if i == n:
                if kin:
                    leaf(kin)
                return
            v = order[i]
            bit = 1 << v
            # include v?
            ok = not (ctx.upreds[v] & rem & ~kin)
            if ok and kin:
                ok = bool(elig & bit) and not (terms.apart_with.get(v, 0) & kin) \
                     and kin.bit_count() < ctx.max_nodes
            t = terms.tog_of.get(v, 0)
            if ok and t and t & ~kin & (bit - 1):
                ok = False  # a member of its together-set was left out already
            rs2 = rs
            if ok:
                rs2 = keys.state_after(v, kin, rs)
                ok = rs2 is not NO_TEMPLATE
            if ok:
                new = pmask[v] & avail & ~rin
                e = extra + sum(lbread[x] for x in bits(new & rout))
                elig2 = elig & compat[v]
                later = rem & ~((bit << 1) - 1)
                c2, k2 = grow(clique, k_out, later & elig & ~elig2)
                walk(i + 1, kin | bit, e, elig2, c2, k2, rin | new, rout, forced, rs2)
            # exclude v?
            if t and t & kin:
                return
            pm = pmask[v]
            e = extra
            for x in bits(pm & kin & ~forced & ~ctx.stored):   # stored ones are in B0
                e += lbread[x] + (0 if an.out_mask >> x & 1 else nbytes[x])
            for x in bits(pm & avail & rin & ~rout):
                e += lbread[x]
            c2, k2 = (clique, k_out) if not elig & bit or compat[v] & clique else (clique | bit, k_out + 1)
            walk(i + 1, kin, e, elig, c2, k2, rin, rout | (pm & avail), forced | (pm & kin), rs)

        walk(0, 0, 0.0, self.all, 0, 0, 0, 0, 0, None)
        return out
