"""Exact search, second form: depth-first branch and bound over unit -> kernel assignments.

A* over downsets (astar.py) enumerates, from every state, each legal kernel that could run
next; on wide graphs whose optimal plan has a few large kernels (random DAGs of 40-60
table ops) that is exponential before the first state is expanded. This search builds
kernels unit by unit instead: the units are taken in a topological order that follows
chains (assignment.chain_order), and each joins one of the kernels opened so far or opens
a new one (assignment.py keeps that state). Every partition is reached exactly once, each
of its kernels being named by its first unit, so the search is complete: when it ends
within its budget, the best plan found is optimal. Nodes are pruned by lower bounds
(bounds.py). The start is the better of the given plan and a local search from it
(local_search.py), and every improved plan found is polished the same way.

That start is often well above the optimum, and the search then spends most of its nodes
before it finds a good plan; so it first probes for plans below lower targets (the root
bound plus half a launch, one launch, ...; _deepen), a few thousand nodes each. A
transposition table (_dominated) drops an assignment when one with the same interface
to the unplaced units (open kernels, kernels holding values they read, reachability) and
closed kernels costing no more was searched already for the same target.
"""
from __future__ import annotations

from typing import Iterator

from ..analysis import bits
from ..partition import topo_order
from .assignment import Assignment
from .bounds import Bounds
from .common import EPS, OutOfSteps, SearchResult
from .compat import NO_TEMPLATE
from .context import SearchContext
from .local_search import improve

PROBE_MARGIN = 0.5           # first target: the root bound plus this many launches
PROBE_NODES = 2_000          # nodes a probe may search without finding a plan
MEMO_ENTRIES = 2_000_000     # transposition-table size cap (then it stops recording)


class _ProbeOver(Exception):
    """A probe spent its nodes without finding a plan below its target."""


class BranchAndBound:
    """One search over one independent part, sharing the context's tables and budget."""

    def __init__(self, ctx: SearchContext) -> None:
        self.ctx = ctx

    def run(self, upper: float, upper_groups: list[int], part: int) -> SearchResult:
        """The cheapest plan of the units in `part`, given a plan of them costing `upper`."""
        ctx = self.ctx
        self.prepare(part, upper)
        steps0 = ctx.steps
        optimal = True
        g0, t0 = self.improve(list(upper_groups), upper)
        self.incumbent = upper
        if t0 < upper * (1 - EPS):
            self.U, self.best, self.incumbent = t0, g0, t0
        try:
            self._deepen()
        except OutOfSteps as e:
            optimal = False
            ctx.stopped = str(e)
        if self.best is None:
            return SearchResult(list(upper_groups), upper, optimal, False, self.nodes, ctx.steps - steps0)
        return SearchResult(topo_order(ctx.an, self.best), self.incumbent, optimal, True, self.nodes,
                            ctx.steps - steps0)

    def prepare(self, part: int, upper: float = float("inf")) -> None:
        """The empty assignment of `part` and the tables its bounds use."""
        self.state = Assignment(self.ctx, part)
        self.order = self.state.order
        self.bounds = Bounds(self.ctx, self.state, part)
        self.L = self.ctx.params.launch_s
        self.seen: dict[tuple, float] = {}      # transposition table, see _dominated
        self.U = upper
        self.best: list[int] | None = None
        self.nodes = 0
        self.node_cap = float("inf")
        self.memo_hits = 0          # subtrees the transposition table cut
        self.probes_cut = 0         # probes that ran out of nodes

    def improve(self, groups: list[int], t: float) -> tuple[list[int], float]:
        """The local search this search starts from and polishes its plans with."""
        return improve(self.ctx, groups, t)

    def bound(self, i: int, cut: float = float("inf")) -> float:
        """A lower bound on every completion of the assignment of order[:i] (bounds.py)."""
        return self.bounds.bound(i, cut)

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
                self.search()
            except _ProbeOver:
                self.probes_cut += 1
                self.state.clear()
                self.U = self.incumbent
                self.seen.clear()
                self.node_cap = float("inf")
                self.search()
                return
            if plain or self.best is not before:
                return
            margin = 2 * margin if margin > 0 else self.L

    def search(self) -> None:
        """Depth first from the root. A node (dfs) yields each child to search and resumes
        when it is done, so the recursion lives in generator objects, not on Python's
        frame stack: CPython 3.11 maps and unmaps a frame-stack chunk on every call that
        crosses a chunk boundary, and a search recursing around one ran twice as long."""
        path = [self.dfs(0)]
        while path:
            child = next(path[-1], None)
            if child is None:
                path.pop()
            else:
                path.append(self.dfs(*child))

    def dfs(self, i: int, floor: float = 0.0) -> Iterator[tuple[int, float]]:
        """Place order[i], children cheapest bound first; yields (i + 1, its lower bound)
        for each child to search below. `floor` is a lower bound already known for this
        node (its parent's bound holds for every completion below it too)."""
        ctx, an, state = self.ctx, self.ctx.an, self.state
        kernels = state.kernels
        self.nodes += 1
        ctx.step(255)
        if self.nodes > self.node_cap:
            raise _ProbeOver
        if i == len(self.order):
            t = state.closed_time()
            if t < self.U * (1 - EPS):
                groups, t2 = self.improve([ks.members for ks in kernels], t)
                self.U = self.incumbent = t2
                self.best = groups
                self.node_cap = float("inf")    # a probe that found a plan is the search
            return
        if self._dominated(i):
            return
        v = self.order[i]
        bit = 1 << v
        pk = 0
        kernel_of = state.kernel_of
        for u in bits(an.pmask[v] & an.all_mask):
            k = kernel_of.get(u)
            if k is not None:
                pk |= 1 << k
        t = ctx.terms.tog_of.get(v, 0)
        forced = None
        if t:
            for u in bits(t & ~bit):
                if u in kernel_of:
                    forced = kernel_of[u]
                    break
        children = []
        for k, ks in enumerate(kernels):
            if forced is not None and k != forced:
                continue
            if ks.closed_time is not None or not ks.joinable >> v & 1:
                continue
            if ks.reaches & pk & ~(1 << k):
                continue    # k reaches a kernel v reads from: a cycle
            rs = ctx.keys.state_after(v, ks.members, ks.reduce)
            if rs is NO_TEMPLATE:
                continue
            children.append((k, rs))
        if forced is None:
            children.append((-1, None))
        if len(children) == 1:
            # one choice: no need to rank it
            k, rs = children[0]
            undo = state.place(v, i, k, rs, pk)
            if undo is not None:
                cut = self.U * (1 - EPS)
                lb = max(floor, self.bound(i + 1, cut))
                if lb < cut:
                    yield i + 1, lb
                state.undo(undo)
            return
        scored = []
        for k, rs in children:
            undo = state.place(v, i, k, rs, pk)
            if undo is not None:
                lb = max(floor, self.bound(i + 1, self.U * (1 - EPS)))
                if lb < self.U * (1 - EPS):
                    scored.append((lb, k, rs))
                state.undo(undo)
        scored.sort(key=lambda x: x[0])
        for lb, k, rs in scored:
            if lb >= self.U * (1 - EPS):
                break
            undo = state.place(v, i, k, rs, pk)
            if undo is not None:
                yield i + 1, lb
                state.undo(undo)

    def _interface(self, i: int) -> tuple:
        """What the units order[i:] can see of the current assignment: the open kernels
        (members, template state, units that may join), the kernels holding a placed unit
        that an unplaced one reads (by those units), and which of these kernels reach which
        (with the units downstream of what each reaches, which may no longer join it).
        Completions of two assignments with one interface are the same sets of kernels
        for order[i:] with the same legality and times: only the closed kernels differ."""
        state = self.state
        front, una, kernels = state.front[i], state.rest[i], state.kernels
        ident = {}
        for k, ks in enumerate(kernels):
            if ks.closed_time is None:
                ident[k] = ks.members
            elif ks.members & front:
                ident[k] = ks.members & front
        out = []
        for k, idk in ident.items():
            ks = kernels[k]
            reach, blocked = 0, 0
            for j in bits(ks.reaches):
                blocked |= kernels[j].downstream
                reach |= ident.get(j, 0)
            is_open = ks.closed_time is None
            out.append((idk, is_open, reach, blocked & una,
                        ks.joinable & una if is_open else 0, ks.reduce if is_open else None))
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
        for ks in self.state.kernels:
            if ks.closed_time is not None:
                closed += ks.closed_time
        key = (i, self._interface(i))
        old = self.seen.get(key)
        if old is not None and old <= closed:
            self.memo_hits += 1
            return True
        self.seen[key] = closed
        return False
