"""Which units could ever share a kernel: necessary conditions of legality.

The exact searches use them twice: a candidate kernel must be a clique of the
compatibility graph (so hopeless candidates are cut early), and a set of pairwise
incompatible units needs that many kernels (a lower bound on the launches still to come).
As a kernel grows, `ReduceKeys.state_after` follows which templates can still hold it.
"""
from __future__ import annotations

from typing import NamedTuple

from ..analysis import (MIN_STRIDED_ROWS, Analysis, ReduceSig, RowShapes, bits, broadcasts_to, row_axis,
                        row_problem_ok, row_shapes)


class ReduceState(NamedTuple):
    """What the reductions of a growing kernel still allow."""

    signature: ReduceSig | tuple        # its reductions' (analysis.ReduceSig)
    row_shape: RowShapes | None         # when they reduce one axis as a row kernel can
    reduction_ok: bool                  # the reduction template can still hold the kernel
    row_ok: bool                        # the row template can


NO_TEMPLATE = ReduceState((), None, False, False)   # no template can, whatever joins


class ReduceKeys:
    """Which reductions can share a kernel. Same key: same row shape F and axis (reducing
    one axis over at least two rows: the row template), else same input, axes and result
    (the reduction template). This is an equivalence, so distinct keys need distinct kernels."""

    def __init__(self, an: Analysis, min_strided_rows: int = MIN_STRIDED_ROWS) -> None:
        g = an.graph
        self.an = an
        self.sig: dict[int, ReduceSig] = {}
        self.rowF: dict[int, RowShapes | None] = {}
        self.key: dict[int, tuple] = {}
        self.results: dict[tuple, set[tuple[int, ...]]] = {}    # key -> result shapes
        self.stores: dict[tuple, set[tuple[int, ...]]] = {}     # key -> storable shapes
        self.below: dict[tuple, int] = {}                       # key -> units feeding one
        for r in bits(an.reduce_mask):
            nd = g.nodes[r]
            self.sig[r] = sig = an.reduce_sigs[r]
            I = sig.input
            axis = row_axis(g, r) if len(I) >= 2 else None
            rs = row_shapes(I, axis) if axis is not None else None
            self.rowF[r] = rs if rs is not None and row_problem_ok(rs, min_strided_rows) else None
            k = ("row", rs) if self.rowF[r] else ("red", self.sig[r])
            self.key[r] = k
            self.results.setdefault(k, set()).add(nd.shape)
            st = self.stores.setdefault(k, set())
            st |= {I, nd.shape} | ({rs.keep, rs.per_row} if k[0] == "row" else set())
            self.below[k] = self.below.get(k, 0) | an.anc[r]

    def could_join(self, an: Analysis, v: int, k: tuple, stored: bool) -> bool:
        """Could non-reduce unit v be in a kernel of reductions of key k (as a producer
        of one of them, or after them over their results or rows)?"""
        shape = an.shape(v)
        if stored and shape not in self.stores[k]:
            return False
        if self.below[k] >> v & 1:
            return True
        if any(broadcasts_to(shape, R) for R in self.results[k]):
            return True
        return k[0] == "row" and (broadcasts_to(shape, k[1].full) or shape == k[1].per_row)

    def state_after(self, v: int, kin: int, state: ReduceState | None) -> ReduceState | None:
        """Which templates can still hold kernel `kin` once unit v joins it: None while
        it has no reduction, NO_TEMPLATE when neither the reduction nor the row template
        can, whatever else joins. A unit computed from a reduction must fit its result
        (reduction epilogue) or broadcast to its rows."""
        an = self.an
        if an.reduce_mask >> v & 1:
            if state is None:
                row_shape = self.rowF[v]
                return ReduceState(self.sig[v], row_shape, True, row_shape is not None)
            red_ok = state.reduction_ok and self.sig[v] == state.signature and not (an.anc[v] & kin & an.reduce_mask)
            row_ok = state.row_ok and self.rowF[v] == state.row_shape
        else:
            if state is None or not (an.anc[v] & kin & an.reduce_mask):
                return state
            shape = an.shape(v)
            red_ok = state.reduction_ok and broadcasts_to(shape, state.signature[2])
            F = state.row_shape
            row_ok = state.row_ok and (broadcasts_to(shape, F.full) or shape == F.per_row)
        if red_ok or row_ok:
            return ReduceState(state.signature, state.row_shape, red_ok, row_ok)
        return NO_TEMPLATE


def compatibility(an: Analysis, keys: ReduceKeys, apart: dict[int, int] | None = None) -> dict[int, int]:
    """unit -> the units it could ever share a legal kernel with (a necessary condition
    of legality.check, pair by pair): none across a graph break; nothing for opaque and
    copy units; reductions of one key (not one computed from the other, unless the key is
    a row shape); a unit and a reduction it could join; two other units when a pointwise
    kernel could hold both (some iteration space suits both) or a reduction key could take
    both; never two units the user keeps apart (`apart`: unit -> units). Then convexity: a
    kernel holding u and a descendant w holds every unit on the paths between them, so
    each of those must be compatible with both (repeated until nothing changes)."""
    units = [v for v in an.units if not an.alone_mask >> v & 1]
    always = {v: bool(an.out_mask >> v & 1 or an.umask[v] & an.alone_mask) for v in units}
    # the shapes a pointwise kernel holding v could iterate over: v's own if v is always
    # stored, else those of v and of the elementwise units it feeds (a member that is not
    # stored feeds, inside the kernel, a member that is)
    reach: dict[int, frozenset] = {}
    for v in reversed(units):
        r = {an.shape(v)}
        for w in an.users[v]:
            if w in reach and not an.reduce_mask >> w & 1:
                r |= reach[w]
        reach[v] = frozenset(r)
    space = {v: frozenset({an.shape(v)}) if always[v] else reach[v]
             for v in units if not an.reduce_mask >> v & 1}
    allkeys = sorted(set(keys.key.values()), key=repr)
    joins = {v: {k for k in allkeys if keys.could_join(an, v, k, always[v])}
             for v in units if not an.reduce_mask >> v & 1}
    out = {v: 0 for v in an.units}
    stage = an.stage if an.has_breaks else None
    for i, u in enumerate(units):
        for v in units[i + 1:]:
            if stage is not None and stage[u] != stage[v]:
                continue        # a graph break between them (legality.stage_conflict)
            ru, rv = an.reduce_mask >> u & 1, an.reduce_mask >> v & 1
            if ru and rv:
                # one key; and a reduction kernel finishes its reductions together, so
                # one computed from the other needs the row template ("row" keys)
                ok = keys.key[u] == keys.key[v] and (
                    keys.key[u][0] == "row" or not (an.anc[v] >> u & 1 or an.anc[u] >> v & 1))
            elif ru or rv:
                r, w = (u, v) if ru else (v, u)
                ok = keys.key[r] in joins[w]
            else:
                ok = bool(space[u] & space[v]) or bool(joins[u] & joins[v])
            if ok:
                out[u] |= 1 << v
                out[v] |= 1 << u
    for u, a in (apart or {}).items():
        if u in out:
            out[u] &= ~a        # the user's "keep apart" holds in every plan
    changed = True
    while changed:
        changed = False
        for u in units:
            for w in bits(out[u] & an.desc[u]):
                between = an.desc[u] & an.anc[w]
                if between & ~(out[u] & out[w]):
                    out[u] &= ~(1 << w)
                    out[w] &= ~(1 << u)
                    changed = True
    return out


def independent_set(compat: dict[int, int], units: int, first: int = 0) -> list[int]:
    """Units of `units` no two of which can share a kernel, so each needs a kernel of its
    own: greedily, the unit compatible with the fewest candidates left first, from
    `first` before the others."""
    out: list[int] = []
    for pool in (first, units):
        cand = pool
        for v in out:
            cand &= ~compat[v] & ~(1 << v)
        while cand:
            v = min(bits(cand), key=lambda u: (compat[u] & cand).bit_count())
            cand &= ~compat[v] & ~(1 << v)
            out.append(v)
    return out


def must_store(an: Analysis, compat: dict[int, int]) -> int:
    """Units stored in every plan: some unit reads them that can never share their kernel."""
    m = 0
    for v in an.units:
        if any(not compat[v] >> w & 1 for w in an.users[v]):
            m |= 1 << v
    return m


def independent_parts(an: Analysis, compat: dict[int, int]) -> list[int]:
    """Split the units into parts no kernel can span (no compatible pair across parts)
    and whose reachability is acyclic part to part, so that no kernel cycle can cross
    parts either: the optimal plan is the union of each part's optimal plan."""
    label = {v: v for v in an.units}

    def find(v: int) -> int:
        while label[v] != v:
            label[v] = label[label[v]]
            v = label[v]
        return v

    for u in an.units:
        for w in bits(compat[u]):
            a, b = find(u), find(w)
            if a != b:
                label[max(a, b)] = min(a, b)
    comps: dict[int, int] = {}
    for v in an.units:
        comps[find(v)] = comps.get(find(v), 0) | (1 << v)
    masks = list(comps.values())
    reach = []
    for m in masks:
        d = 0
        for v in bits(m):
            d |= an.desc[v]
        reach.append(d)
    succ = [[j for j, n in enumerate(masks) if j != i and reach[i] & n] for i in range(len(masks))]
    return [sum(masks[i] for i in scc) for scc in _sccs(succ)]


def _sccs(succ: list[list[int]]) -> list[list[int]]:
    """Strongly connected components (Tarjan, iterative)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(len(succ)):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on.add(v)
            if i < len(succ[v]):
                work.append((v, i + 1))
                w = succ[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out
