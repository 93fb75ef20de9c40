"""Greedy priority merging: repeatedly merge the pair of kernels with the largest
predicted gain, re-checking legality and acyclicity at the moment of the merge.

Candidate pairs are neighbours: producer/consumer kernels, and siblings that read the same
materialised array (horizontal fusion). Mode "auto" merges while the cost model predicts a
gain; mode "max" merges every legal pair regardless of cost (producer/consumer first).

Acyclicity: the groups keep a topological order that is repaired after each merge
(as in Pearce & Kelly's dynamic topological sort). Merging A before B creates a cycle iff
a group strictly between them in the order is reachable from A and reaches B, so the
search for such a path never leaves the window between A and B.
"""
from __future__ import annotations

import heapq
from bisect import bisect_left
from dataclasses import dataclass, field

from ..analysis import Analysis, bits
from ..model import Decision
from ..partition import GroupCost

SIBLING_FANOUT = 24   # readers of one array considered as horizontal-fusion partners


@dataclass
class Greedy:
    an: Analysis
    cost: GroupCost
    mode: str                                   # "auto" | "max"
    apart_with: dict[int, int]                  # unit -> units it must not share a kernel with
    log_limit: int = 400
    log: list[Decision] = field(default_factory=list)
    unlogged: int = 0                           # decisions past log_limit
    _reasons: set[str] = field(default_factory=set)

    def run(self, initial: list[int]) -> list[int]:
        """Merge starting from `initial` (a partition in topological order); returns the
        final groups in topological order."""
        an = self.an
        self.mask: dict[int, int] = {}
        self.gid_of: dict[int, int] = {}
        self.ver: dict[int, int] = {}
        self.time: dict[int, float] = {}
        self.apart: dict[int, int] = {}
        for g, m in enumerate(initial):
            self.mask[g] = m
            self.ver[g] = 0
            self.time[g] = self.cost(m)[1] if self.mode == "auto" else 0.0
            a = 0
            for v in bits(m):
                self.gid_of[v] = g
                a |= self.apart_with.get(v, 0)
            self.apart[g] = a
        self.succ: dict[int, set[int]] = {g: set() for g in self.mask}
        self.pred: dict[int, set[int]] = {g: set() for g in self.mask}
        for g, m in self.mask.items():
            for v in bits(m):
                for w in an.users[v]:
                    h = self.gid_of[w]
                    if h != g:
                        self.succ[g].add(h)
                        self.pred[h].add(g)
        self.order: list[int | None] = list(range(len(initial)))
        self.pos = {g: g for g in self.mask}
        self.heap: list[tuple] = []
        self.seq = 0
        self.seen_pairs: set[tuple[int, int, int, int]] = set()
        self.last_gain: dict[tuple[int, int], float] = {}
        for g in list(self.mask):
            self._push_neighbours(g)
        while self.heap:
            key, _, a, b, va, vb, edge, merged_time = heapq.heappop(self.heap)
            if self.ver.get(a) != va or self.ver.get(b) != vb:
                continue
            if merged_time is None:      # an estimate: evaluate now, queue the real gain
                self._evaluate(a, b, edge)
                continue
            gain = -key[0] if self.mode == "auto" else 0.0
            through, reach = self._cycle_witness(a, b)
            if through is not None:
                self._refuse(a, b, f"would create a cycle through {an.ref(through)}, which "
                                   "runs in another kernel between them")
                continue
            self._merge(a, b, merged_time, gain, reach)
        if self.unlogged:
            self.log.append(Decision("search", f"... and {self.unlogged} more merge decisions "
                                               f"(the log keeps the first {self.log_limit})"))
        return [self.mask[g] for g in self.order if g is not None]

    # -- candidates ----------------------------------------------------------------
    def _neighbours(self, g: int) -> dict[int, bool]:
        """Groups worth trying with g -> whether they are producer/consumer of g."""
        out = {h: True for h in self.succ[g] | self.pred[g]}
        an = self.an
        for u in bits(an.reads_of(self.mask[g])):
            readers = an.users[u]
            if len(readers) > SIBLING_FANOUT:
                i = bisect_left(readers, (self.mask[g] & -self.mask[g]).bit_length() - 1)
                readers = readers[max(0, i - SIBLING_FANOUT // 2): i + SIBLING_FANOUT // 2]
            for w in readers:
                h = self.gid_of[w]
                if h != g:
                    out.setdefault(h, False)
        return out

    def _push_neighbours(self, g: int, was: tuple[int, ...] = ()) -> None:
        """Queue g with each neighbour, evaluated lazily: the estimate is the gain last
        seen with the groups g was made of (unknown: first in line)."""
        for h, edge in self._neighbours(g).items():
            a, b = (g, h) if g < h else (h, g)
            key = (a, b, self.ver[a], self.ver[b])
            if key in self.seen_pairs:
                continue
            self.seen_pairs.add(key)
            if self.apart[a] & self.mask[b]:
                if edge:
                    self._refuse(a, b, self._apart_reason(a, b))
                continue
            if self.mode == "auto":
                known = [self.last_gain[p] for p in ((min(x, h), max(x, h)) for x in was)
                         if p in self.last_gain]
                prio = (-(max(known) if known else float("inf")),)
            else:   # "max": size matters, not time; producer/consumer pairs first
                prio = (0 if edge else 1, min(self.pos[a], self.pos[b]))
            self._queue(prio, a, b, edge, None)

    def _queue(self, prio: tuple, a: int, b: int, edge: bool, t: float | None) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (prio, self.seq, a, b, self.ver[a], self.ver[b], edge, t))

    def _evaluate(self, a: int, b: int, edge: bool) -> None:
        union = self.mask[a] | self.mask[b]
        verdict = self.cost.legal(union)
        if not verdict.ok:
            if edge:
                self._refuse(a, b, verdict.reason)
            return
        if self.mode == "max":
            self._queue((0 if edge else 1, min(self.pos[a], self.pos[b])), a, b, edge, 0.0)
            return
        t = self.cost(union)[1]
        gain = self.time[a] + self.time[b] - t
        self.last_gain[(a, b)] = gain
        if gain > 1e-15:
            self._queue((-gain,), a, b, edge, t)

    def _apart_reason(self, a: int, b: int) -> str:
        for v in bits(self.mask[a]):
            hit = self.apart_with.get(v, 0) & self.mask[b]
            if hit:
                return f"you asked to keep {self.an.ref(v)} and {self.an.ref(next(bits(hit)))} apart"
        return "you asked to keep them apart"

    # -- order and cycles ---------------------------------------------------------
    def _cycle_witness(self, a: int, b: int) -> tuple[int | None, set[int]]:
        """(a unit on a path between a and b through a third group, or None; the groups
        between them in the order that the first of them reaches)."""
        first, last = (a, b) if self.pos[a] < self.pos[b] else (b, a)
        limit = self.pos[last]
        stack = [s for s in self.succ[first] if s != last and self.pos[s] < limit]
        seen = set(stack)
        while stack:
            c = stack.pop()
            if last in self.succ[c]:
                m = self.mask[c]
                return next(v for v in bits(m) if self.an.umask[v] & self.mask[last]), seen
            for s in self.succ[c]:
                if s not in seen and self.pos[s] < limit:
                    seen.add(s)
                    stack.append(s)
        return None, seen

    def _merge(self, a: int, b: int, t: float, gain: float, reach: set[int]) -> None:
        an = self.an
        first, last = (a, b) if self.pos[a] < self.pos[b] else (b, a)
        lo, hi = self.pos[first], self.pos[last]
        window = self.order[lo:hi + 1]
        before = [g for g in window if g is not None and g not in reach and g not in (a, b)]
        after = [g for g in window if g is not None and g in reach]
        new = before + [a] + after
        new += [None] * (len(window) - len(new))
        self.order[lo:hi + 1] = new
        for i, g in enumerate(new):
            if g is not None:
                self.pos[g] = lo + i
        if len(self.log) >= self.log_limit:
            self.unlogged += 1
        else:
            self.log.append(Decision(
                "merge", f"fuse {an.refs(bits(self.mask[a]))} with {an.refs(bits(self.mask[b]))}"
                + (f": saves {gain * 1e6:.2f} us" if self.mode == "auto" else ""),
                tuple(bits(self.mask[a] | self.mask[b])), gain))
        # b joins a
        for v in bits(self.mask[b]):
            self.gid_of[v] = a
        self.mask[a] |= self.mask.pop(b)
        self.apart[a] |= self.apart.pop(b)
        self.time[a] = t
        self.time.pop(b)
        self.ver[a] += 1
        self.ver.pop(b)
        del self.pos[b]

        for side, other in ((self.succ, self.pred), (self.pred, self.succ)):
            merged = (side[a] | side.pop(b)) - {a, b}
            for h in merged:
                other[h].discard(b)
                other[h].add(a)
            side[a] = merged
        self._push_neighbours(a, (a, b))

    def _refuse(self, a: int, b: int, reason: str) -> None:
        if reason in self._reasons:
            return
        self._reasons.add(reason)
        if len(self.log) >= self.log_limit:
            self.unlogged += 1
        else:
            an = self.an
            self.log.append(Decision(
                "refuse", f"keep {an.refs(bits(self.mask[a]))} and {an.refs(bits(self.mask[b]))} "
                f"apart: {reason}", tuple(bits(self.mask[a] | self.mask[b]))))
