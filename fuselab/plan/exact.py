"""Exact search: the cheapest plan under the cost model, as a shortest path.

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

The graph is first split into independent parts (no kernel and no kernel cycle can span
two), each searched on its own (`solve`): A* first, for a few thousand walk steps (it
proves chains of large kernels, as notebook cells are, in a handful of expansions), then
the depth-first branch and bound of assign.py from A*'s best plan (wide DAGs whose
kernels A* cannot enumerate). A step and a time budget bound the work; when either runs
out, the best plan found so far is kept and marked as not proven optimal.
"""
from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

from .analysis import Analysis, bits, broadcasts_to
from .cost import DeviceParams, opaque_flops
from .compat import ReduceKeys, compatibility, independent_parts, must_store
from .partition import GroupCost

EPS = 1e-9     # relative improvement that counts as better (float sums differ in order)
ASTAR_STEPS = 5_000   # walk steps A* gets on a part before the branch and bound takes over


class _OutOfSteps(Exception):
    pass


@dataclass
class ExactResult:
    groups: list[int]          # kernels in execution order
    time_s: float
    optimal: bool              # proven optimal (the search finished within its budget)
    improved: bool             # better than the upper bound it started from
    expanded: int              # states expanded
    steps: int                 # candidate-walk steps


class Exact:
    def __init__(self, an: Analysis, cost: GroupCost, params: DeviceParams,
                 together: list[int], apart_with: dict[int, int], max_steps: int,
                 seconds: float = float("inf")) -> None:
        self.an, self.cost, self.p = an, cost, params
        self.together = together
        self.tog_of = {v: t for t in together for v in bits(t)}
        self.apart_with = apart_with
        self.max_steps = max_steps
        self.seconds = seconds
        self.deadline = time.perf_counter() + seconds
        self.steps = 0
        self.stopped = ""          # why the search stopped early, if it did
        self.max_nodes = cost.budgets.max_nodes
        g = an.graph
        self.all = an.all_mask
        self.upreds = {v: an.pmask[v] & an.all_mask for v in an.units}
        fmin = {}
        for v in an.units:
            nd = g.nodes[v]
            if an.alone_mask >> v & 1:
                fmin[v] = opaque_flops(an, v) if not an.free[v] else 0.0
            elif an.reduce_mask >> v & 1:
                fmin[v] = an.size[nd.inputs[0]] * an.weights(params)[v]
            else:
                fmin[v] = an.least_evals[v] * an.weights(params)[v]
        self.fmin = fmin
        self.compat_info = ReduceKeys(an)
        self.compat = compatibility(an, self.compat_info, apart_with)
        self.stored = must_store(an, self.compat)
        # units that read each of those and can never share its kernel
        self.far_users = {v: an.umask[v] & ~self.compat[v] for v in bits(self.stored)}
        self.active = self.all      # the units this search plans (run() narrows it to a part)
        self._h: dict[int, tuple[float, float, float]] = {}
        self._kn: dict[int, int] = {}

    # -- lower bound ------------------------------------------------------------------
    def bound(self, S: int) -> tuple[float, float, float]:
        """(h(S), bytes any plan must still move, flops it must still compute)."""
        hit = self._h.get(S)
        if hit is not None:
            return hit
        an, p = self.an, self.p
        rem = self.all & ~S
        kmin = self.kernels_needed(rem)
        reads = 0
        flops = 0.0
        for v in bits(rem):
            reads |= an.pmask[v]
            flops += self.fmin[v]
        reads &= S | an.input_mask
        B = sum(an.lbread[x] for x in bits(reads)) + sum(an.nbytes[v] for v in bits(rem & an.out_mask))
        for v in bits(rem & self.stored):
            # storing it costs its write (a result's is counted above) and, when a unit of
            # this search reads it, one read back
            B += (0 if an.out_mask >> v & 1 else an.nbytes[v]) + \
                (an.lbread[v] if self.far_users[v] & self.active else 0)
        h = p.launch_s * kmin + max(B / p.bandwidth, flops / p.throughput)
        self._h[S] = out = (h, B, flops)
        return out

    def kernels_needed(self, rem: int) -> int:
        """At least this many kernels run the units `rem`: the size of a set of them no two
        of which can ever share a kernel (an independent set of the compatibility graph,
        found greedily: repeatedly the unit compatible with the fewest candidates left)."""
        hit = self._kn.get(rem)
        if hit is not None:
            return hit
        compat = self.compat
        cand, n = rem, 0
        while cand:
            v = min(bits(cand), key=lambda u: (compat[u] & cand).bit_count())
            cand &= ~compat[v] & ~(1 << v)
            n += 1
        self._kn[rem] = n
        return n

    # -- search -------------------------------------------------------------------------
    def parts(self) -> list[int]:
        return independent_parts(self.an, self.compat)

    def solve(self, upper: float, upper_groups: list[int], part: int,
              astar_steps: int = ASTAR_STEPS) -> ExactResult:
        """The cheapest plan of `part`: A* for `astar_steps` walk steps, then, when it
        has not finished, the branch and bound of assign.py from its best plan, within
        what is left of the budgets."""
        from .assign import AssignSearch
        cap = self.max_steps
        self.max_steps = min(cap, self.steps + astar_steps)
        try:
            res = self.run(upper, upper_groups, part)
        finally:
            self.max_steps = cap
        if res.optimal or self.steps >= cap or time.perf_counter() > self.deadline:
            return res
        self.stopped = ""
        res2 = AssignSearch(self).run(res.time_s, res.groups, part)
        return ExactResult(res2.groups, res2.time_s, res2.optimal, res.improved or res2.improved,
                           res.expanded + res2.expanded, res.steps + res2.steps)

    def run(self, upper: float, upper_groups: list[int], part: int | None = None) -> ExactResult:
        """The cheapest plan of the units in `part` (all by default; the others count as
        executed already), given a plan `upper_groups` of them costing `upper`."""
        start = self.all & ~part if part is not None else 0
        if self.all & ~start != self.active:
            self.active = self.all & ~start
            self._h.clear()
        self.U = upper
        self.best_goal: tuple[int, int] | None = None
        best_g = {start: 0.0}
        self.parent: dict[int, tuple[int, int]] = {}
        heap = [(self.bound(start)[0], 0, 0.0, start)]
        steps0 = self.steps
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
        except _OutOfSteps as e:
            optimal = False
            self.stopped = str(e)
        if self.best_goal is None:
            return ExactResult(list(upper_groups), upper, optimal, False, expanded, self.steps - steps0)
        groups = []
        S, K = self.best_goal
        groups.append(K)
        while S != start:
            S, K = self.parent[S]
            groups.append(K)
        groups.reverse()
        return ExactResult(groups, self.U, optimal, True, expanded, self.steps - steps0)

    def _expand(self, S: int, g: float):
        """Successor states (S | K, g + t(K)) worth queueing."""
        an = self.an
        rem = self.all & ~S
        order = list(bits(rem))
        _, B0, F0 = self.bound(S)
        compute_floor = F0 / self.p.throughput
        avail = S | an.input_mask
        out: list[tuple[int, float, int]] = []
        L, bw = self.p.launch_s, self.p.bandwidth
        n = len(order)
        lbread, nbytes, pmask = an.lbread, an.nbytes, an.pmask

        def leaf(kin: int) -> None:
            for t in self.together:
                if kin & t and kin & t != t:
                    return
            verdict, c = self.cost(kin)
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

        compat = self.compat

        def grow(clique: int, k: int, units: int) -> tuple[int, int]:
            """Add to the pairwise-incompatible set those of `units` incompatible with
            all of it (greedy, in id order)."""
            for u in bits(units):
                if not compat[u] & clique:
                    clique |= 1 << u
                    k += 1
            return clique, k

        def walk(i: int, kin: int, extra: float, elig: int, clique: int, k_out: int,
                 rin: int, rout: int, forced: int, rs: tuple | None) -> None:
            # elig: units compatible with every member so far. Units left out, and later
            # units that cannot join (incompatible with a member), run in later kernels:
            # at least k_out of them, the size of `clique`, a set of them no two of which
            # are compatible
            self.steps += 1
            if self.steps > self.max_steps:
                raise _OutOfSteps(f"step budget of {self.max_steps} spent")
            if self.steps & 1023 == 0 and time.perf_counter() > self.deadline:
                raise _OutOfSteps(f"time budget of {self.seconds:g} s spent")
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
            ok = not (self.upreds[v] & rem & ~kin)
            if ok and kin:
                ok = bool(elig & bit) and not (self.apart_with.get(v, 0) & kin) \
                     and kin.bit_count() < self.max_nodes
            t = self.tog_of.get(v, 0)
            if ok and t and t & ~kin & (bit - 1):
                ok = False  # a member of its together-set was left out already
            rs2 = rs
            if ok:
                rs2 = self._reduce_state(v, kin, rs)
                ok = rs2 is not False
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
            for x in bits(pm & kin & ~forced & ~self.stored):   # stored ones are in B0
                e += lbread[x] + (0 if an.out_mask >> x & 1 else nbytes[x])
            for x in bits(pm & avail & rin & ~rout):
                e += lbread[x]
            c2, k2 = (clique, k_out) if not elig & bit or compat[v] & clique else (clique | bit, k_out + 1)
            walk(i + 1, kin, e, elig, c2, k2, rin, rout | (pm & avail), forced | (pm & kin), rs)

        walk(0, 0, 0.0, self.all, 0, 0, 0, 0, 0, None)
        return out

    def _reduce_state(self, v: int, kin: int, rs):
        """Template feasibility after adding v, as (sig, rowF, reduction ok, row ok);
        False when no template can hold the kernel whatever else joins it."""
        an = self.an
        kred = kin & an.reduce_mask
        info = self.compat_info
        if an.reduce_mask >> v & 1:
            if rs is None:
                return (info.sig[v], info.rowF[v], True, info.rowF[v] is not None)
            sig, F, red_ok, row_ok = rs
            red_ok = red_ok and info.sig[v] == sig and not (an.anc[v] & kred)
            row_ok = row_ok and info.rowF[v] == F
            return (sig, F, red_ok, row_ok) if red_ok or row_ok else False
        if rs is None or not (an.anc[v] & kred):
            return rs
        sig, F, red_ok, row_ok = rs
        shape = an.shape(v)
        red_ok = red_ok and broadcasts_to(shape, sig[2])
        row_ok = row_ok and (broadcasts_to(shape, F) or shape == F[:-1])
        return (sig, F, red_ok, row_ok) if red_ok or row_ok else False

