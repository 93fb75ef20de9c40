"""Lower bounds of the branch and bound (branch_bound.py): the least time any completion
of a partial assignment (assignment.py) can take. Admissible: every term only grows as
the assignment completes.

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
"""
from __future__ import annotations

from typing import NamedTuple

from ..analysis import bits, broadcasts_to, mask_of
from ..cost import read_bytes, row_parallelism
from .assignment import Assignment
from .compat import ReduceState, independent_set
from .context import SearchContext


class RestFacts(NamedTuple):
    """What every completion does with the units order[i:]."""

    independent: list[int]      # units no two of which can share a kernel (greedy: the
    #                             unit compatible with the fewest candidates first)
    bytes: int                  # what they write and read back in every plan: results;
    #                             values stored in every plan, or read by two readers that
    #                             can never share a kernel, once per such reader but one
    reads: int                  # values outside them that they read
    independent_slow_first: list[int]   # such a set built first from the reductions only
    #                             a row kernel starving the GPU can run (they slow down
    #                             whatever open kernel they join)


class Bounds:
    """The bounds of one assignment as it changes, with memo tables keyed by what each
    result depends on."""

    def __init__(self, ctx: SearchContext, state: Assignment, part: int) -> None:
        self.ctx, self.an, self.state, self.part = ctx, ctx.an, state, part
        p = ctx.params
        self.L, self.bw, self.thr = p.launch_s, p.bandwidth, p.throughput
        an = self.an
        # per value: readers in this part no two of which can share a kernel, so each
        # runs in a kernel of its own that reads the value (unless it computes it)
        self.apart_readers = {x: mask_of(independent_set(ctx.compat, an.umask[x] & part))
                              for x in range(len(an.graph.nodes)) if (an.umask[x] & part).bit_count() > 1}
        self.slow_rows = self._slow_rows()
        # (members, units that may still join) -> kernel_lb
        self.kernel_bounds: dict[tuple[int, int], tuple[float, float, float]] = {}
        # (members, units that may still join, joining unit) -> _join_cost
        self.join_costs: dict[tuple[int, int, int], float] = {}
        self.rest_facts: dict[int, RestFacts] = {}                  # position -> _rest_facts
        self.independent_sets: dict[tuple[int, int], list[int]] = {}  # (position, first) -> set
        self.always_written: dict[int, dict[int, int]] = {}         # position -> _always_written
        self.held: dict[int, int] = {}                              # members -> _holds

    def kernel_lb(self, k: int, i: int) -> tuple[float, float, float]:
        """(lower bound on kernel k's time, its compute slack, the fraction p of the GPU
        it can run on) with the units order[i:] unassigned."""
        kernel = self.state.kernels[k]
        c = kernel.closed_time
        if c is not None:
            return c, 0.0, 1.0
        m = kernel.members
        una = self.state.rest[i]
        joinable = una & kernel.joinable
        key = (m, joinable)
        hit = self.kernel_bounds.get(key)
        if hit is not None:
            return hit
        an, ctx = self.an, self.ctx
        B = 0
        F = 0.0
        for v in bits(m):
            F += ctx.fmin[v]
            if an.out_mask >> v & 1 or an.umask[v] & ~m & ~joinable:
                B += an.nbytes[v]
        # what the current members read is final (producers are assigned first), and the
        # bytes read of an array only grow as readers join
        B += sum(read_bytes(an, m).values())
        pf = 1.0
        rs = kernel.reduce
        if rs is not None and rs.row_ok and not (rs.reduction_ok and self._reduction_possible(m, rs, joinable)):
            # only a row kernel can hold it: one block per row
            pf = row_parallelism(rs.row_shape, self.ctx.params)
        mem = B / (self.bw * pf)
        comp = F / (self.thr * pf)
        out = (self.L + max(mem, comp), max(0.0, comp - mem), pf)
        self.kernel_bounds[key] = out
        return out

    def _reduction_possible(self, m: int, rs: ReduceState, joinable: int) -> bool:
        """Could the reduction template still hold kernel m? Members that feed none of
        its reductions, and no reduction that could still join, are its epilogue, which
        runs over the result shape R."""
        an = self.an
        kred = m & an.reduce_mask
        R = rs.signature[2]
        pro = 0
        for r in bits(kred):
            pro |= an.anc[r]
        # reductions that could still join a reduction kernel: same signature, not
        # computed from one of its reductions
        info = self.ctx.keys
        future = 0
        for r in bits(joinable & an.reduce_mask):
            if info.sig[r] == rs.signature and not an.anc[r] & kred:
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
        state = self.state
        una = state.rest[i]
        total = state.closed_total
        slack = 0.0
        open_ks = list(bits(state.open_kernels))
        slow = []           # open kernels only a row template with idle SMs can run
        for k in open_ks:
            c, s, pf = self.kernel_lb(k, i)
            total += c
            slack += s
            if pf < 1.0:
                slow.append((k, pf))
        if not una or total >= cut:
            return total
        rest = self._rest_facts(i)
        launches = self._launch_term(i, open_ks, slow, rest, cut - total, slack)
        if total + launches >= cut:
            return total + launches
        X = rest.bytes + self._unheld_reads(una, open_ks, rest.reads)
        return total + launches + max(0.0, X / self.bw - slack)

    def _launch_term(self, i: int, open_ks: list[int], slow: list[tuple[int, float]],
                     rest: RestFacts, cut: float, slack: float) -> float:
        """What the unassigned units add in launches and slow-downs of open kernels: the
        most of (a) a launch per kernel still to open, from an independent set less its
        matching into open kernels (also one built from the units no open kernel can
        take), plus, when none must open, what values cost in slow open kernels; and (b)
        _join_floor of both independent sets of `rest`. Returns early once `cut` is reached."""
        una = self.state.rest[i]
        kernels = self.state.kernels
        L = self.L
        I, I2 = rest.independent, rest.independent_slow_first
        new = len(I) - self._matching(I, open_ks)
        if L * new >= cut:
            return L * new
        homed = 0
        for k in open_ks:
            homed |= kernels[k].joinable
        if una & ~homed:
            # units no open kernel can take open new kernels: an independent set built
            # from them first, less its matching, may need more than I does
            I3 = self._independent_set(i, una & ~homed)
            new = max(new, len(I3) - self._matching(I3, open_ks), 1)
        extra = 0.0
        if new == 0 and slow:
            # every unit must join an open kernel, or one more kernel opens (+L): a
            # value it must write costs 1/p more in a kernel running at a fraction p
            slow_ks = {k for k, _ in slow}
            fast = 0        # units an open kernel at full speed can take
            for k in open_ks:
                if k not in slow_ks:
                    fast |= kernels[k].joinable
            wb = self._always_written(i)
            for w in bits(una & ~fast):
                b = wb.get(w)
                if b:
                    pbest = max(pf for k, pf in slow if kernels[k].joinable >> w & 1)
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
        an, state = self.an, self.state
        kernels = [(self._holds(state.kernels[k].members) & need, state.kernels[k].joinable) for k in open_ks]
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
        kernels, red = self.state.kernels, self.an.reduce_mask
        for u in I:
            best = self.L
            plain = not red >> u & 1
            for k in open_ks:
                if kernels[k].joinable >> u & 1:
                    if plain and kernels[k].reduce is None:
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
        kernel = self.state.kernels[k]
        m = kernel.members
        joinable = kernel.joinable & self.state.rest[i]
        key = (m, joinable, u)
        hit = self.join_costs.get(key)
        if hit is not None:
            return hit
        out = 0.0
        rs = self.ctx.keys.state_after(u, m, kernel.reduce)
        if rs is not None and rs.row_ok and not (rs.reduction_ok and self._reduction_possible(m | 1 << u, rs, joinable)):
            p2 = row_parallelism(rs.row_shape, self.ctx.params)
            out = (c - self.L) * (1.0 / p2 - 1.0)
        self.join_costs[key] = out
        return out

    def _always_written(self, i: int) -> dict[int, int]:
        """Bytes each unassigned unit writes in every plan (results, values stored always)."""
        hit = self.always_written.get(i)
        if hit is None:
            an = self.an
            hit = self.always_written[i] = {w: an.nbytes[w] for w in
                                            bits(self.state.rest[i] & (an.out_mask | self.ctx.stored))}
        return hit

    def _rest_facts(self, i: int) -> RestFacts:
        """What every completion does with the units order[i:] (RestFacts)."""
        hit = self.rest_facts.get(i)
        if hit is not None:
            return hit
        ctx, an = self.ctx, self.an
        una = self.state.rest[i]
        I = independent_set(ctx.compat, una)
        # another such set, built from the reductions that only a row kernel starving
        # the GPU can run (they slow down whatever open kernel they join) first
        I2 = independent_set(ctx.compat, una, una & self.slow_rows)
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
            far = 1 if ctx.stored >> v & 1 and ctx.far_users[v] & self.part else 0
            if J > 1 or ctx.stored >> v & 1:
                X += (0 if an.out_mask >> v & 1 else an.nbytes[v]) + an.lbread[v] * max(far, J - 1)
        out = self.rest_facts[i] = RestFacts(I, X, need, I2)
        return out

    def _independent_set(self, i: int, first: int) -> list[int]:
        """An independent set of the units order[i:], built from `first` first."""
        key = (i, first)
        hit = self.independent_sets.get(key)
        if hit is None:
            hit = self.independent_sets[key] = independent_set(self.ctx.compat, self.state.rest[i], first)
        return hit

    def _slow_rows(self) -> int:
        """Reductions whose key is a row shape too few rows to keep the GPU busy."""
        out = 0
        for r, F in self.ctx.keys.rowF.items():
            if F is not None and row_parallelism(F, self.ctx.params) < 1.0:
                out |= 1 << r
        return out

    def _holds(self, m: int) -> int:
        """Values a kernel of members m holds or reads."""
        hit = self.held.get(m)
        if hit is None:
            pm = self.an.pmask
            r = m
            for v in bits(m):
                r |= pm[v]
            hit = self.held[m] = r
        return hit

    def _matching(self, I: list[int], ks: list[int]) -> int:
        """Size of a maximum matching of units I into open kernels ks that could take
        them (augmenting paths)."""
        if not ks:
            return 0
        kernels = self.state.kernels
        adj = []            # per unit: the kernels (a bitset of indices) that could take it
        for v in I:
            a = 0
            for k in ks:
                if kernels[k].joinable >> v & 1:
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
