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
  takes at most one of them), and at least one when some unit fits no open kernel;
- bytes not yet in any kernel: unassigned results and always-stored values, and each
  value an unassigned unit reads when that unit can join no kernel already holding or
  reading it; they add to open kernels beyond their compute slack, or to new kernels;
- when no kernel must open: values that unassigned units must write, if only row kernels
  running at a fraction p can take them, cost 1/p more, or one more launch, whichever is
  less.
The start is the better of the given plan and a local search from it (merge two kernels,
move one unit), and every improved plan found is polished the same way.
"""
from __future__ import annotations

import time

from .analysis import bits, broadcasts_to
from .cost import read_bytes
from .exact import EPS, ExactResult, _OutOfSteps
from .partition import GroupCycle, topo_order


class AssignSearch:
    """One search over one independent part, sharing an Exact's tables and budgets."""

    def __init__(self, ex) -> None:
        self.ex = ex

    def run(self, upper: float, upper_groups: list[int], part: int) -> ExactResult:
        """The cheapest plan of the units in `part`, given a plan of them costing `upper`."""
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
        self.part = part
        self.U = upper
        self.best: list[int] | None = None
        self.nodes = 0
        # per kernel: members, units that could still join, template state (exact.py's
        # _reduce_state), kernels reachable from it (bitset of indices), exact time once
        # closed
        self.kmask: list[int] = []
        self.kelig: list[int] = []
        self.kdesc: list[int] = []          # units downstream of a member
        self.keff: list[int] = []           # kelig less units that would close a cycle
        self.krs: list = []
        self.kreach: list[int] = []
        self.kclosed: list[float | None] = []
        self.kof: dict[int, int] = {}       # unit -> kernel index
        self._lbk: dict = {}
        self._ri: dict = {}
        self._wr: dict = {}
        self._hold: dict = {}
        steps0 = ex.steps
        optimal = True
        g0, t0 = self.improve(list(upper_groups), upper)
        if t0 < upper * (1 - EPS):
            self.U, self.best = t0, g0
        try:
            self.dfs(0)
        except _OutOfSteps as e:
            optimal = False
            ex.stopped = str(e)
        if self.best is None:
            return ExactResult(list(upper_groups), upper, optimal, False, self.nodes, ex.steps - steps0)
        return ExactResult(topo_order(an, self.best), self.U, optimal, True, self.nodes, ex.steps - steps0)

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

    def bound(self, i: int) -> float:
        """A lower bound on the time of every completion of the current assignment of the
        units before position i (see the module docstring)."""
        ex, an = self.ex, self.ex.an
        una = self.rest[i]
        total = 0.0
        slack = 0.0
        open_ks = []
        slow = []           # open kernels only a row template with idle SMs can run
        for k in range(len(self.kmask)):
            c, s, pf = self.kernel_lb(k, i)
            total += c
            if self.kclosed[k] is None:
                slack += s
                open_ks.append(k)
                if pf < 1.0:
                    slow.append((k, pf))
        if not una:
            return total
        I, X, need = self._rest_info(i)
        match = self._matching(I, open_ks)
        new = len(I) - match
        # values the unassigned units read: a kernel that does not read or hold one yet
        # reads it, unless every such reader can join a kernel that does
        held = {}
        for k in open_ks:
            h = self._holds(k)
            el = self.keff[k]
            for x in bits(h & need):
                held[x] = held.get(x, 0) | el
        umask, lbread = an.umask, an.lbread
        for x in bits(need):
            if umask[x] & una & ~held.get(x, 0):
                X += lbread[x]
        extra = 0.0
        if new == 0:
            homed = 0
            for k in open_ks:
                homed |= self.keff[k]
            if una & ~homed:
                new = 1     # a unit no open kernel can take opens one
            elif slow:
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
                extra = min(extra, self.L)
        return total + self.L * new + max(0.0, X / self.bw - slack) + extra

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
        write in every plan, the values outside them they read."""
        hit = self._ri.get(i)
        if hit is not None:
            return hit
        ex, an = self.ex, self.ex.an
        una = self.rest[i]
        compat = ex.compat
        cand, I = una, []
        while cand:
            v = min(bits(cand), key=lambda u: (compat[u] & cand).bit_count())
            cand &= ~compat[v] & ~(1 << v)
            I.append(v)
        X = 0
        need = 0
        for v in bits(una):
            need |= an.pmask[v]
            if an.out_mask >> v & 1:
                X += an.nbytes[v]
        need &= ~una
        for v in bits(una & ex.stored):
            X += (0 if an.out_mask >> v & 1 else an.nbytes[v]) + \
                (an.lbread[v] if ex.far_users[v] & self.part else 0)
        out = self._ri[i] = (I, X, need)
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
        match_k: dict[int, int] = {}

        def aug(v: int, seen: set) -> bool:
            for k in ks:
                if self.keff[k] >> v & 1 and k not in seen:
                    seen.add(k)
                    if k not in match_k or aug(match_k[k], seen):
                        match_k[k] = v
                        return True
            return False
        return sum(aug(v, set()) for v in I)

    # -- search -------------------------------------------------------------------------
    def dfs(self, i: int) -> None:
        """Place order[i] (and the units after it), children cheapest bound first."""
        ex, an = self.ex, self.ex.an
        self.nodes += 1
        ex.steps += 1
        if ex.steps > ex.max_steps:
            raise _OutOfSteps(f"step budget of {ex.max_steps} spent")
        if ex.steps & 255 == 0 and time.perf_counter() > ex.deadline:
            raise _OutOfSteps(f"time budget of {ex.seconds:g} s spent")
        if i == len(self.order):
            t = sum(self.kclosed)
            if t < self.U * (1 - EPS):
                groups, t2 = self.improve(list(self.kmask), t)
                self.U = t2
                self.best = groups
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
                if self.bound(i + 1) < self.U * (1 - EPS):
                    self.dfs(i + 1)
                self._undo(v, undo)
            return
        scored = []
        for k, rs in children:
            undo = self._apply(v, i, k, rs, pk)
            if undo is not None:
                lb = self.bound(i + 1)
                if lb < self.U * (1 - EPS):
                    scored.append((lb, k, rs))
                self._undo(v, undo)
        scored.sort(key=lambda x: x[0])
        for lb, k, rs in scored:
            if lb >= self.U * (1 - EPS):
                break
            undo = self._apply(v, i, k, rs, pk)
            if undo is not None:
                self.dfs(i + 1)
                self._undo(v, undo)

    def _apply(self, v: int, i: int, k: int, rs, pk: int):
        """Assign v to kernel k (-1: a new one); returns an undo record, or None when a
        kernel closed illegal."""
        ex, an = self.ex, self.ex.an
        nk = len(self.kmask)
        saved_reach = list(self.kreach)
        saved_eff = list(self.keff)
        if k < 0:
            k = nk
            self.kmask.append(1 << v)
            el = ex.compat[v] & ~ex.apart_with.get(v, 0)
            self.kelig.append(el)
            self.kdesc.append(an.desc[v])
            self.keff.append(el)
            self.krs.append(ex._reduce_state(v, 0, None))
            self.kreach.append(0)
            self.kclosed.append(None)
            old = None
        else:
            old = (self.kmask[k], self.kelig[k], self.krs[k], self.kdesc[k])
            self.kmask[k] |= 1 << v
            self.kelig[k] &= ex.compat[v] & ~ex.apart_with.get(v, 0)
            self.kdesc[k] |= an.desc[v]
            self.krs[k] = rs
        self.kof[v] = k
        # edges p -> k for p in pk
        pk &= ~(1 << k)
        kreach, kclosed, keff, kdesc = self.kreach, self.kclosed, self.keff, self.kdesc
        changed = 1 << k
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
                    closed_now.append(a)
                    if not verdict.ok:
                        ok = False
        rec = (k, old, saved_reach, saved_eff, closed_now, nk)
        if not ok:
            self._undo(v, rec)
            return None
        return rec

    def _undo(self, v: int, rec) -> None:
        k, old, saved_reach, saved_eff, closed_now, nk = rec
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

