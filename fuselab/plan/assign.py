"""Exact search, second form: depth-first branch and bound over unit -> kernel assignments.

A* over downsets (exact.py) enumerates, from every state, each legal kernel that could run
next; on wide graphs whose optimal plan has a few large kernels (random DAGs of 40-60
table ops) that is exponential before the first state is expanded. This search builds
kernels unit by unit instead: the units are taken in a topological order (one that
follows chains, see _order), and each joins one of the kernels opened so far or opens a
new one. Every partition is reached exactly once, each of its kernels being named by its
first unit, so the search is complete: when it ends within its budget, the best plan
found is optimal.

A kernel is *closed* when no unassigned unit can still join it (compat.py's pairwise
conditions, "keep apart" constraints, the node budget, and no unit downstream of a
kernel it reaches, which would close a cycle): its members, what it stores and what it
reads are then final, so it is checked legal and costed exactly. Cycles between kernels
are caught as they appear (a transitive-reachability bitset per kernel).

Lower bound of a node (admissible: every term only grows as the assignment completes):
- closed kernels: their exact time; open kernels: launch + max(bytes, flops) of what they
  already hold (reads of current members are final since producers come first; members
  read by a unit that is placed elsewhere or cannot join are stored), at the fraction p
  of the GPU a row kernel keeps busy once no reduction template can hold the kernel;
- kernels still to open: a set I of unassigned units no two of which can share a kernel,
  less a maximum matching of I into open kernels that could take them (each open kernel
  takes at most one of them); the same for such a set built first from the units no
  open kernel can take, and at least one when there is such a unit;
- or instead (the larger of the two), per unit of I, or of such a set built first from
  row reductions with fewer rows than SMs: a launch, or the slow-down of the open kernel
  it joins when that leaves only a row kernel at a fraction p of the GPU, whichever is
  less (_join_floor);
- bytes not yet in any kernel: unassigned results and always-stored values, and each
  value an unassigned unit reads when that unit can join no kernel already holding or
  reading it; they add to open kernels beyond their compute slack, or to new kernels;
- when no kernel must open: values that unassigned units must write, if only row kernels
  running at a fraction p can take them, cost 1/p more beyond the open kernels' compute
  slack, or one more launch, whichever is less;
- re-reads: readers of a value no two of which can share a kernel each read it in a
  kernel of their own, except those an open kernel already holding it takes (one each);
  an unassigned value with two such readers is stored, and read back by all but one.
The start is the better of the given plan and a local search from it (merge two kernels,
move one unit), and every improved plan found is polished the same way.

That start is often well above the optimum, and the search then spends most of its nodes
before it finds a good plan; so it first probes for plans below lower targets (the root
bound plus half a launch, one launch, ...; _deepen), a few thousand nodes each. A
transposition table (_dominated) drops an assignment when one with the same interface
to the unplaced units (open kernels, kernels holding values they read, reachability) and
closed kernels costing no more was searched already for the same target.
"""
from __future__ import annotations

import time

from .analysis import bits, broadcasts_to
from .cost import read_bytes
from .exact import EPS, ExactResult, _OutOfSteps
from .partition import GroupCycle, topo_order


PROBE_MARGIN = 0.5           # first target: the root bound plus this many launches
PROBE_NODES = 2_000          # nodes a probe may search without finding a plan
MEMO_ENTRIES = 2_000_000     # transposition-table size cap (then it stops recording)


class _ProbeOver(Exception):
    """A probe spent its nodes without finding a plan below its target."""


class AssignSearch:
    """One search over one independent part, sharing an Exact's tables and budgets."""

    def __init__(self, ex) -> None:
        self.ex = ex

    def run(self, upper: float, upper_groups: list[int], part: int) -> ExactResult:
        """The cheapest plan of the units in `part`, given a plan of them costing `upper`."""
        ex, an = self.ex, self.ex.an
        self.prepare(part, upper)
        steps0 = ex.steps
        optimal = True
        g0, t0 = self.improve(list(upper_groups), upper)
        self.incumbent = upper
        if t0 < upper * (1 - EPS):
            self.U, self.best, self.incumbent = t0, g0, t0
        try:
            self._deepen()
        except _OutOfSteps as e:
            optimal = False
            ex.stopped = str(e)
        if self.best is None:
            return ExactResult(list(upper_groups), upper, optimal, False, self.nodes, ex.steps - steps0)
        return ExactResult(topo_order(an, self.best), self.incumbent, optimal, True, self.nodes,
                           ex.steps - steps0)

    def prepare(self, part: int, upper: float = float("inf")) -> None:
        """The empty assignment of `part` and the tables its bounds use."""
        ex, an = self.ex, self.ex.an
        p = ex.p
        self.L, self.bw, self.thr = p.launch_s, p.bandwidth, p.throughput
        order = self._order(part)
        self.order = order
        n = len(order)
        # unassigned after position i
        self.rest = [0] * (n + 1)
        for i in range(n - 1, -1, -1):
            self.rest[i] = self.rest[i + 1] | (1 << order[i])
        # placed units that an unplaced one reads: the only placed units the rest of the
        # search can still see (as producers of what it places)
        self.front = [0] * (n + 1)
        for i in range(n + 1):
            for v in order[:i]:
                if an.umask[v] & self.rest[i]:
                    self.front[i] |= 1 << v
        self.seen: dict[tuple, float] = {}      # transposition table, see _dominated
        # per value: readers in this part no two of which can share a kernel, so each
        # runs in a kernel of its own that reads the value (unless it computes it)
        self.apart_readers = {x: self._independent_mask(an.umask[x] & part)
                              for x in range(len(an.graph.nodes)) if (an.umask[x] & part).bit_count() > 1}
        self.part = part
        self.U = upper
        self.best: list[int] | None = None
        self.nodes = 0
        self.node_cap = float("inf")
        self.memo_hits = 0          # subtrees the transposition table cut
        self.probes_cut = 0         # probes that ran out of nodes
        # per kernel: members, units that could still join, template state (exact.py's
        # _reduce_state), kernels reachable from it (bitset of indices), exact time once
        # closed
        self._clear()
        self._lbk: dict = {}
        self._jc: dict = {}
        self._hs: dict = {}
        self._ri: dict = {}
        self._wr: dict = {}
        self._hold: dict = {}

    def _clear(self) -> None:
        """The empty assignment (a search cut short by an exception leaves its state)."""
        self.kmask: list[int] = []
        self.kelig: list[int] = []
        self.kdesc: list[int] = []          # units downstream of a member
        self.keff: list[int] = []           # kelig less units that would close a cycle
        self.krs: list = []
        self.kreach: list[int] = []
        self.kclosed: list[float | None] = []
        self.kof: dict[int, int] = {}       # unit -> kernel index
        self.open_ks = 0                    # bitset of the open kernels' indices
        self.closed_total = 0.0             # time of the closed kernels

    def _deepen(self) -> None:
        """The search, after probes for a plan cheaper than a target: the root bound plus
        half a launch, then doubling the margin. The incumbent is often well above the
        optimum (A* and the local search stop in a local minimum), and a search with a
        low target prunes far more. A probe that finds a plan below its target goes on
        as the plain search with that plan as incumbent, so it proves the best plan
        optimal; one that ends without a plan proves none is below its target, and the
        next target is tried; one that runs out of its PROBE_NODES nodes gives way to the
        plain search from the incumbent. The transposition table holds for one target
        only (an entry proves nothing below that target), so each search clears it."""
        margin = self.L * PROBE_MARGIN
        lb = self.bound(0)
        while True:
            target = min(lb + margin, self.incumbent)
            plain = target >= self.incumbent
            self.U = target
            self.seen.clear()
            before = self.best
            self.node_cap = float("inf") if plain else self.nodes + PROBE_NODES
            try:
                self.dfs(0)
            except _ProbeOver:
                self.probes_cut += 1
                self._clear()
                self.U = self.incumbent
                self.seen.clear()
                self.node_cap = float("inf")
                self.dfs(0)
                return
            if plain or self.best is not before:
                return
            margin = 2 * margin if margin > 0 else self.L

    def _order(self, part: int) -> list[int]:
        """The units in a topological order that follows chains: depth first from the
        lowest sources, the lowest user first (a stack of ready units). Kernels along a
        chain then close early and their exact cost enters the bound sooner; on random
        DAGs of 40-60 ops this proves optimality many times faster than id order."""
        an = self.ex.an
        indeg = {v: (an.pmask[v] & part).bit_count() for v in bits(part)}
        ready = [v for v in bits(part) if indeg[v] == 0]
        ready.reverse()
        out = []
        while ready:
            v = ready.pop()
            out.append(v)
            for w in reversed(list(bits(an.umask[v] & part))):
                indeg[w] -= 1
                if indeg[w] == 0:
                    ready.append(w)
        return out

    def improve(self, groups: list[int], t: float) -> tuple[list[int], float]:
        """Local search on a plan: merge two kernels, or move one unit to another kernel
        or to one of its own, while that makes the plan cheaper (and it stays legal and
        acyclic), until no such move is left or the time budget is spent."""
        ex, an = self.ex, self.ex.an
        cost = ex.cost
        tog_of = ex.tog_of
        apart = ex.apart_with

        def legal(m: int) -> float:
            if m.bit_count() > ex.max_nodes:
                return float("inf")
            for ts in ex.together:
                if m & ts and m & ts != ts:
                    return float("inf")
            for v in bits(m):
                if apart.get(v, 0) & m:
                    return float("inf")
            verdict, c = cost(m)
            return c if verdict.ok else float("inf")

        def acyclic(gs: list[int]) -> bool:
            try:
                topo_order(an, gs)
                return True
            except GroupCycle:
                return False

        costs = [cost(m)[1] for m in groups]
        improved = True
        while improved and time.perf_counter() < ex.deadline:
            improved = False
            n = len(groups)
            best = None
            for a in range(n):
                for b in range(a + 1, n):
                    ma, mb = groups[a], groups[b]
                    if not self._can_pair(ma, mb):
                        continue
                    c = legal(ma | mb)
                    d = c - costs[a] - costs[b]
                    if d < -t * EPS and (best is None or d < best[0]):
                        best = (d, a, b)
            if best is not None:
                d, a, b = best
                trial = [m for j, m in enumerate(groups) if j not in (a, b)] + [groups[a] | groups[b]]
                if acyclic(trial):
                    tc = [c for j, c in enumerate(costs) if j not in (a, b)] + [costs[a] + costs[b] + d]
                    groups, costs, t = trial, tc, t + d
                    improved = True
                    continue
            # single-unit moves
            for a in range(len(groups)):
                if improved:
                    break
                if groups[a].bit_count() < 2:
                    continue
                for v in bits(groups[a]):
                    if v in tog_of:
                        continue
                    rest = groups[a] & ~(1 << v)
                    cr = legal(rest)
                    if cr == float("inf"):
                        continue
                    for b in range(-1, len(groups)):
                        if b == a:
                            continue
                        if b >= 0 and not ex.compat[v] & groups[b]:
                            continue
                        nb = (1 << v) | (groups[b] if b >= 0 else 0)
                        cb = legal(nb)
                        d = cr + cb - costs[a] - (costs[b] if b >= 0 else 0)
                        if d < -t * EPS:
                            trial = list(groups)
                            trial[a] = rest
                            tc = list(costs)
                            tc[a] = cr
                            if b >= 0:
                                trial[b] = nb
                                tc[b] = cb
                            else:
                                trial.append(nb)
                                tc.append(cb)
                            if acyclic(trial):
                                groups, costs, t = trial, tc, sum(tc)
                                improved = True
                                break
                    if improved:
                        break
        return groups, sum(costs)

    def _can_pair(self, ma: int, mb: int) -> bool:
        compat = self.ex.compat
        for v in bits(ma):
            if mb & ~compat[v]:
                return False
        return True

    # ---------------------------------------------------------------------------------
    # -- lower bound ------------------------------------------------------------------
    def kernel_lb(self, k: int, i: int) -> tuple[float, float, float]:
        """(lower bound on kernel k's time, its compute slack, the fraction p of the GPU
        it can run on) with the units order[i:] unassigned."""
        c = self.kclosed[k]
        if c is not None:
            return c, 0.0, 1.0
        m = self.kmask[k]
        key = (m, self.keff[k] & self.rest[i])
        hit = self._lbk.get(key)
        if hit is not None:
            return hit
        an, ex = self.ex.an, self.ex
        una = self.rest[i]
        joinable = una & self.keff[k]
        B = 0
        F = 0.0
        for v in bits(m):
            F += ex.fmin[v]
            if an.out_mask >> v & 1 or an.umask[v] & ~m & ~joinable:
                B += an.nbytes[v]
        # what the current members read is final (producers are assigned first), and the
        # bytes read of an array only grow as readers join
        B += sum(read_bytes(an, m).values())
        pf = 1.0
        rs = self.krs[k]
        if rs is not None and rs[3] and not (rs[2] and self._reduction_possible(m, rs, joinable)):
            # only a row kernel can hold it: one block per row
            F_shape = rs[1]
            rows = 1
            for d in F_shape[:-1]:
                rows *= d
            pf = min(1.0, rows / self.ex.p.sm_count)
        mem = B / (self.bw * pf)
        comp = F / (self.thr * pf)
        out = (self.L + max(mem, comp), max(0.0, comp - mem), pf)
        self._lbk[key] = out
        return out

    def _reduction_possible(self, m: int, rs, joinable: int) -> bool:
        """Could the reduction template still hold kernel m? Members that feed none of
        its reductions, and no reduction that could still join, are its epilogue, which
        runs over the result shape R."""
        an = self.ex.an
        kred = m & an.reduce_mask
        R = rs[0][2]
        pro = 0
        for r in bits(kred):
            pro |= an.anc[r]
        # reductions that could still join a reduction kernel: same signature, not
        # computed from one of its reductions
        info = self.ex.compat_info
        future = 0
        for r in bits(joinable & an.reduce_mask):
            if info.sig[r] == rs[0] and not an.anc[r] & kred:
                future |= 1 << r
        for v in bits(m & ~kred & ~pro):
            if an.desc[v] & future:
                continue
            if not broadcasts_to(an.shape(v), R):
                return False
        return True

    def bound(self, i: int, cut: float = float("inf")) -> float:
        """A lower bound on the time of every completion of the current assignment of the
        units before position i (see the module docstring). Once a partial sum of its
        terms (each >= 0) reaches `cut`, that partial sum is returned: enough to prune."""
        ex, an = self.ex, self.ex.an
        una = self.rest[i]
        total = self.closed_total
        slack = 0.0
        open_ks = list(bits(self.open_ks))
        slow = []           # open kernels only a row template with idle SMs can run
        for k in open_ks:
            c, s, pf = self.kernel_lb(k, i)
            total += c
            slack += s
            if pf < 1.0:
                slow.append((k, pf))
        if not una or total >= cut:
            return total
        I, X, need, I2 = self._rest_info(i)
        launches = self._launch_term(i, open_ks, slow, I, I2, cut - total, slack)
        if total + launches >= cut:
            return total + launches
        X += self._unheld_reads(una, open_ks, need)
        return total + launches + max(0.0, X / self.bw - slack)

    def _launch_term(self, i: int, open_ks: list[int], slow: list[tuple[int, float]],
                     I: list[int], I2: list[int], cut: float, slack: float) -> float:
        """What the unassigned units add in launches and slow-downs of open kernels: the
        most of (a) a launch per kernel still to open, from an independent set less its
        matching into open kernels (also one built from the units no open kernel can
        take), plus, when none must open, what values cost in slow open kernels; and (b)
        _join_floor of I and I2. Returns early once `cut` is reached."""
        una = self.rest[i]
        L = self.L
        new = len(I) - self._matching(I, open_ks)
        if L * new >= cut:
            return L * new
        homed = 0
        for k in open_ks:
            homed |= self.keff[k]
        if una & ~homed:
            # units no open kernel can take open new kernels: an independent set built
            # from them first, less its matching, may need more than I does
            I3 = self._homeless_set(i, una & ~homed)
            new = max(new, len(I3) - self._matching(I3, open_ks), 1)
        extra = 0.0
        if new == 0 and slow:
            # every unit must join an open kernel, or one more kernel opens (+L): a
            # value it must write costs 1/p more in a kernel running at a fraction p
            slow_ks = {k for k, _ in slow}
            fast = 0        # units an open kernel at full speed can take
            for k in open_ks:
                if k not in slow_ks:
                    fast |= self.keff[k]
            wb = self._written_rest(i)
            for w in bits(una & ~fast):
                b = wb.get(w)
                if b:
                    pbest = max(pf for k, pf in slow if self.keff[k] >> w & 1)
                    extra += b / self.bw * (1.0 / pbest - 1.0)
            # what the open kernels' compute slack hides costs nothing; the byte term
            # of bound() may use the same slack again, which only lowers the bound
            extra = min(max(0.0, extra - slack), L)
        out = L * new + extra
        if out >= cut or out >= L * max(len(I), len(I2)):
            return out      # the join floors cannot exceed a launch per unit
        return max(out, self._join_floor(I, open_ks, i), self._join_floor(I2, open_ks, i))

    def _unheld_reads(self, una: int, open_ks: list[int], need: int) -> int:
        """Bytes of values the unassigned units read (`need`) that a kernel not yet
        reading or holding them must read: once, unless every such reader could join an
        open kernel that holds or reads the value; and once per reader of a set no two
        of which can share a kernel, less one per open kernel holding it that could take
        one of them."""
        an = self.ex.an
        kernels = [(self._holds(k) & need, self.keff[k]) for k in open_ks]
        kernels = [(h, el) for h, el in kernels if h]
        umask, lbread, apart = an.umask, an.lbread, self.apart_readers
        X = 0
        for x in bits(need):
            J = apart.get(x, 0) & una
            el, h = 0, 0
            for hold, keff in kernels:
                if hold >> x & 1:
                    el |= keff
                    if keff & J:
                        h += 1
            n = 1 if umask[x] & una & ~el else 0
            if J.bit_count() > 1:
                # each of J in its own kernel: all but those an open kernel holding or
                # reading x takes (one each) read x again
                n = max(n, J.bit_count() - h)
            X += lbread[x] * n
        return X

    def _join_floor(self, I: list[int], open_ks: list[int], i: int) -> float:
        """A lower bound on what placing the pairwise-incompatible units I adds: each
        lands in a kernel of its own, either a new one (a launch) or an open kernel it
        would slow down (_join_cost), whichever is less. Admissible beside the other
        terms: a launch of a new kernel is counted nowhere else, and a slow-down is
        charged on bytes and flops the open kernel already holds, which its kernel_lb
        counts at full speed only."""
        out = 0.0
        keff, krs, red = self.keff, self.krs, self.ex.an.reduce_mask
        for u in I:
            best = self.L
            plain = not red >> u & 1
            for k in open_ks:
                if keff[k] >> u & 1:
                    if plain and krs[k] is None:
                        best = 0.0      # no reduction on either side: no template change
                        break
                    d = self._join_cost(k, i, u)
                    if d < best:
                        best = d
                        if d == 0.0:
                            break
            out += best
        return out

    def _join_cost(self, k: int, i: int, u: int) -> float:
        """How much open kernel k's time grows, at least, when unit u joins it: when k
        runs at full speed so far (kernel_lb) but with u no reduction template can hold
        it, only a row kernel at a fraction pf of the GPU can, and what k already holds
        takes 1/pf as long."""
        c, s, pf = self.kernel_lb(k, i)
        if pf < 1.0:
            return 0.0
        m = self.kmask[k]
        key = (m, self.keff[k] & self.rest[i], u)
        hit = self._jc.get(key)
        if hit is not None:
            return hit
        out = 0.0
        rs = self.ex._reduce_state(u, m, self.krs[k])
        joinable = self.keff[k] & self.rest[i]
        if rs and rs[3] and not (rs[2] and self._reduction_possible(m | 1 << u, rs, joinable)):
            rows = 1
            for d in rs[1][:-1]:
                rows *= d
            p2 = min(1.0, rows / self.ex.p.sm_count)
            out = (c - self.L) * (1.0 / p2 - 1.0)
        self._jc[key] = out
        return out

    def _written_rest(self, i: int) -> dict:
        """Bytes each unassigned unit writes in every plan (results, values stored always)."""
        hit = self._wr.get(i)
        if hit is None:
            an = self.ex.an
            hit = self._wr[i] = {w: an.nbytes[w] for w in bits(self.rest[i] & (an.out_mask | self.ex.stored))}
        return hit

    def _rest_info(self, i: int):
        """For the units order[i:]: a set of them no two of which can share a kernel
        (greedy: the unit compatible with the fewest candidates first), the bytes they
        write and read back in every plan (results; values stored in every plan, or read
        by two readers that can never share a kernel, once per such reader but one), the
        values outside them they read, and a second such set (see below)."""
        hit = self._ri.get(i)
        if hit is not None:
            return hit
        ex, an = self.ex, self.ex.an
        una = self.rest[i]
        I = self._independent(una, 0)
        # another such set, built from the reductions that only a row kernel starving
        # the GPU can run (they slow down whatever open kernel they join) first
        I2 = self._independent(una, una & self._slow_rows())
        X = 0
        need = 0
        for v in bits(una):
            need |= an.pmask[v]
            if an.out_mask >> v & 1:
                X += an.nbytes[v]
        need &= ~una
        for v in bits(una):
            # readers no two of which can share a kernel: all but one read it back, and
            # with two of them it is stored
            J = self.apart_readers.get(v, 0).bit_count()
            far = 1 if ex.stored >> v & 1 and ex.far_users[v] & self.part else 0
            if J > 1 or ex.stored >> v & 1:
                X += (0 if an.out_mask >> v & 1 else an.nbytes[v]) + an.lbread[v] * max(far, J - 1)
        out = self._ri[i] = (I, X, need, I2)
        return out

    def _homeless_set(self, i: int, homeless: int) -> list[int]:
        """An independent set of the units order[i:], built from `homeless` first."""
        key = (i, homeless)
        hit = self._hs.get(key)
        if hit is None:
            hit = self._hs[key] = self._independent(self.rest[i], homeless)
        return hit

    def _independent(self, una: int, first: int) -> list[int]:
        """Units of `una` no two of which can share a kernel: greedily, the unit compatible
        with the fewest candidates first, from `first` before the others."""
        compat = self.ex.compat
        I = []
        for pool in (first, una):
            cand = pool
            for v in I:
                cand &= ~compat[v] & ~(1 << v)
            while cand:
                v = min(bits(cand), key=lambda u: (compat[u] & cand).bit_count())
                cand &= ~compat[v] & ~(1 << v)
                I.append(v)
        return I

    def _independent_mask(self, units: int) -> int:
        """A set of `units` no two of which can share a kernel (greedy), as a bitset."""
        out = 0
        for v in self._independent(units, 0):
            out |= 1 << v
        return out

    def _slow_rows(self) -> int:
        """Reductions whose key is a row shape with fewer rows than the GPU has SMs."""
        info, out = self.ex.compat_info, 0
        for r, F in info.rowF.items():
            if F is not None:
                rows = 1
                for d in F[:-1]:
                    rows *= d
                if rows < self.ex.p.sm_count:
                    out |= 1 << r
        return out

    def _holds(self, k: int) -> int:
        """Values kernel k holds or reads."""
        m = self.kmask[k]
        hit = self._hold.get(m)
        if hit is None:
            pm = self.ex.an.pmask
            r = m
            for v in bits(m):
                r |= pm[v]
            hit = self._hold[m] = r
        return hit

    def _matching(self, I: list[int], ks: list[int]) -> int:
        """Size of a maximum matching of units I into open kernels ks that could take
        them (augmenting paths)."""
        if not ks:
            return 0
        keff = self.keff
        adj = []            # per unit: the kernels (a bitset of indices) that could take it
        for v in I:
            a = 0
            for k in ks:
                if keff[k] >> v & 1:
                    a |= 1 << k
            if a:
                adj.append(a)
        # greedy first, then augmenting paths for the units left over
        taken = 0
        match_k: dict[int, int] = {}
        left = []
        for j, a in enumerate(adj):
            free = a & ~taken
            if free:
                low = free & -free
                taken |= low
                match_k[low.bit_length() - 1] = j
            else:
                left.append(j)
        if not left:
            return len(adj)
        seen = 0

        def aug(j: int) -> bool:
            nonlocal seen
            a = adj[j] & ~seen
            while a:
                low = a & -a
                seen |= low
                k = low.bit_length() - 1
                if k not in match_k or aug(match_k[k]):
                    match_k[k] = j
                    return True
                a = adj[j] & ~seen
            return False
        n = len(adj) - len(left)
        for j in left:
            seen = 0
            n += aug(j)
        return n

    # -- search -------------------------------------------------------------------------
    def dfs(self, i: int, floor: float = 0.0) -> None:
        """Place order[i] (and the units after it), children cheapest bound first.
        `floor` is a lower bound already known for this node (its parent's bound holds
        for every completion below it too)."""
        ex, an = self.ex, self.ex.an
        self.nodes += 1
        ex.steps += 1
        if ex.steps > ex.max_steps:
            raise _OutOfSteps(f"step budget of {ex.max_steps} spent")
        if self.nodes > self.node_cap:
            raise _ProbeOver
        if ex.steps & 255 == 0 and time.perf_counter() > ex.deadline:
            raise _OutOfSteps(f"time budget of {ex.seconds:g} s spent")
        if i == len(self.order):
            t = sum(self.kclosed)
            if t < self.U * (1 - EPS):
                groups, t2 = self.improve(list(self.kmask), t)
                self.U = self.incumbent = t2
                self.best = groups
                self.node_cap = float("inf")    # a probe that found a plan is the search
            return
        if self._dominated(i):
            return
        v = self.order[i]
        bit = 1 << v
        pk = 0
        for u in bits(an.pmask[v] & an.all_mask):
            k = self.kof.get(u)
            if k is not None:
                pk |= 1 << k
        t = ex.tog_of.get(v, 0)
        forced = None
        if t:
            for u in bits(t & ~bit):
                if u in self.kof:
                    forced = self.kof[u]
                    break
        children = []
        for k in range(len(self.kmask)):
            if forced is not None and k != forced:
                continue
            if self.kclosed[k] is not None or not self.keff[k] >> v & 1:
                continue
            if self.kreach[k] & pk & ~(1 << k):
                continue    # k reaches a kernel v reads from: a cycle
            rs = ex._reduce_state(v, self.kmask[k], self.krs[k])
            if rs is False:
                continue
            children.append((k, rs))
        if forced is None:
            children.append((-1, None))
        if len(children) == 1:
            # one choice: no need to rank it
            k, rs = children[0]
            undo = self._apply(v, i, k, rs, pk)
            if undo is not None:
                cut = self.U * (1 - EPS)
                lb = max(floor, self.bound(i + 1, cut))
                if lb < cut:
                    self.dfs(i + 1, lb)
                self._undo(v, undo)
            return
        scored = []
        for k, rs in children:
            undo = self._apply(v, i, k, rs, pk)
            if undo is not None:
                lb = max(floor, self.bound(i + 1, self.U * (1 - EPS)))
                if lb < self.U * (1 - EPS):
                    scored.append((lb, k, rs))
                self._undo(v, undo)
        scored.sort(key=lambda x: x[0])
        for lb, k, rs in scored:
            if lb >= self.U * (1 - EPS):
                break
            undo = self._apply(v, i, k, rs, pk)
            if undo is not None:
                self.dfs(i + 1, lb)
                self._undo(v, undo)

    def _interface(self, i: int) -> tuple:
        """What the units order[i:] can see of the current assignment: the open kernels
        (members, template state, units that may join), the kernels holding a placed unit
        that an unplaced one reads (by those units), and which of these kernels reach which
        (with the units downstream of what each reaches, which may no longer join it).
        Completions of two assignments with one interface are the same sets of kernels
        for order[i:] with the same legality and times: only the closed kernels differ."""
        front, una = self.front[i], self.rest[i]
        ident = {}
        for k, m in enumerate(self.kmask):
            if self.kclosed[k] is None:
                ident[k] = m
            elif m & front:
                ident[k] = m & front
        out = []
        for k, idk in ident.items():
            reach, blocked = 0, 0
            for j in bits(self.kreach[k]):
                blocked |= self.kdesc[j]
                reach |= ident.get(j, 0)
            is_open = self.kclosed[k] is None
            out.append((idk, is_open, reach, blocked & una,
                        self.keff[k] & una if is_open else 0, self.krs[k] if is_open else None))
        out.sort(key=lambda x: x[0])
        return tuple(out)

    def _dominated(self, i: int) -> bool:
        """Transposition table: True when an assignment with the same interface at
        position i and closed kernels costing no more was searched already. Its completions
        are this one's at no higher cost, and searching it either found the best of them or
        proved none beats the incumbent (which only gets better), so nothing below here
        can. Otherwise records this one."""
        if len(self.seen) >= MEMO_ENTRIES:
            return False
        closed = 0.0
        for c in self.kclosed:
            if c is not None:
                closed += c
        key = (i, self._interface(i))
        old = self.seen.get(key)
        if old is not None and old <= closed:
            self.memo_hits += 1
            return True
        self.seen[key] = closed
        return False

    def _apply(self, v: int, i: int, k: int, rs, pk: int):
        """Assign v to kernel k (-1: a new one); returns an undo record, or None when a
        kernel closed illegal."""
        ex, an = self.ex, self.ex.an
        nk = len(self.kmask)
        saved_reach = list(self.kreach)
        saved_eff = list(self.keff)
        saved_totals = (self.open_ks, self.closed_total)
        if k < 0:
            k = nk
            self.kmask.append(1 << v)
            el = ex.compat[v]          # compat already keeps "apart" pairs apart
            self.kelig.append(el)
            self.kdesc.append(an.desc[v])
            self.keff.append(el)
            self.krs.append(ex._reduce_state(v, 0, None))
            self.kreach.append(0)
            self.kclosed.append(None)
            self.open_ks |= 1 << k
            old = None
        else:
            old = (self.kmask[k], self.kelig[k], self.krs[k], self.kdesc[k])
            self.kmask[k] |= 1 << v
            self.kelig[k] &= ex.compat[v]
            self.kdesc[k] |= an.desc[v]
            self.krs[k] = rs
        self.kof[v] = k
        # edges p -> k for p in pk
        pk &= ~(1 << k)
        kreach, kclosed, keff, kdesc = self.kreach, self.kclosed, self.keff, self.kdesc
        changed = 1 << k
        # v's descendants may no longer join a kernel that reaches k
        for a in range(len(self.kmask)):
            if kreach[a] >> k & 1:
                changed |= 1 << a
        if pk:
            add = (1 << k) | kreach[k]
            for a in range(len(self.kmask)):
                if a != k and (pk >> a & 1 or kreach[a] & pk) and add & ~kreach[a]:
                    kreach[a] |= add
                    changed |= 1 << a
        # a unit downstream of a kernel that kernel a reaches cannot join a: the path
        # back would close a cycle
        una = self.rest[i + 1]
        for a in bits(changed):
            if kclosed[a] is None:
                blocked = 0
                for j in bits(kreach[a]):
                    blocked |= kdesc[j]
                keff[a] = self.kelig[a] & ~blocked
        # closures: kernels that v or a new edge leaves with nothing to take
        closed_now = []
        ok = True
        vbit = 1 << v
        for a in range(len(self.kmask)):
            if kclosed[a] is None and (changed >> a & 1 or keff[a] & vbit):
                full = self.kmask[a].bit_count() >= ex.max_nodes
                if full or not keff[a] & una:
                    verdict, c = ex.cost(self.kmask[a])
                    self.kclosed[a] = c
                    self.open_ks &= ~(1 << a)
                    self.closed_total += c
                    closed_now.append(a)
                    if not verdict.ok:
                        ok = False
        rec = (k, old, saved_reach, saved_eff, closed_now, nk, saved_totals)
        if not ok:
            self._undo(v, rec)
            return None
        return rec

    def _undo(self, v: int, rec) -> None:
        k, old, saved_reach, saved_eff, closed_now, nk, (self.open_ks, self.closed_total) = rec
        for a in closed_now:
            self.kclosed[a] = None
        self.kreach[:] = saved_reach
        self.keff[:] = saved_eff
        if old is None:
            self.kmask.pop()
            self.kelig.pop()
            self.kdesc.pop()
            self.krs.pop()
            self.kclosed.pop()
        else:
            self.kmask[k], self.kelig[k], self.krs[k], self.kdesc[k] = old
        del self.kof[v]

