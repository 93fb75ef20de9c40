"""Facts about a graph that every planning pass asks for, computed once per graph.

The planner partitions *units*: the nodes a kernel computes and may store.
- compute nodes (elementwise, reductions, opaque calls);
- free nodes (views, constants, generators) that are cell results: a copy kernel stores them.
Other free nodes belong to no unit: they are recomputed inside every kernel that reads
them (model.make_kernel), so the planner looks *through* them. An edge from unit (or
input array) `u` to unit `v` through a chain of views is an "effective" edge `(u, chain)`.

Sets of units are Python ints used as bitsets (bit i = node %i): unions, intersections
and ancestor tests on a few hundred nodes are then single big-int operations.
"""
from __future__ import annotations

import math
from functools import cached_property
from typing import Iterator, NamedTuple

from ..ir import Graph
from ..ops import Kind
from .device import DeviceParams, op_weight
from .model import is_free


def bits(mask: int) -> Iterator[int]:
    """The set bit positions of `mask`, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def mask_of(ids) -> int:
    m = 0
    for i in ids:
        m |= 1 << i
    return m


def shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, shape)) + "]"


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """True when NumPy broadcasting of `shape` against `target` gives `target`."""
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))


class RowShapes(NamedTuple):
    """A row problem: full shape F reduced along one axis. Rows are the positions of the
    other axes (`per_row`, in their order); a row's columns run along `axis`, contiguous
    when every axis after it has length 1, else `stride` elements apart."""

    full: tuple[int, ...]       # F
    axis: int                   # the reduced axis
    keep: tuple[int, ...]       # a per-row value with keepdims: F with a 1 at `axis`
    per_row: tuple[int, ...]    # ... without: F without `axis`
    rows: int
    cols: int
    stride: int                 # elements between a row's columns (1: contiguous)


def row_shapes(F: tuple[int, ...], axis: int) -> RowShapes:
    keep = F[:axis] + (1,) + F[axis + 1:]
    per_row = F[:axis] + F[axis + 1:]
    return RowShapes(F, axis, keep, per_row, math.prod(per_row), F[axis], math.prod(F[axis + 1:]))


# The default of legality.Budgets.min_strided_rows. A row kernel along a strided axis runs
# a thread per row: with fewer rows than this the GPU idles (each thread walks its row's
# columns one load after another) and a column reduction and a pointwise kernel are faster
# (x - x.mean(0) over 4096 columns). 2^15 rows are about 250 threads per SM of an H200.
MIN_STRIDED_ROWS = 1 << 15


# Strided rows can also run a block per *slab*: the rows of one outer index (and a chunk
# of SLAB_INNER of its inner positions), its threads striped over the reduced axis so that
# a warp reads consecutive addresses (softmax over the middle axis of (1251, 4736, 17):
# 21,267 rows, too few for a thread each, whose 17 adjacent rows waste half of every
# 32-byte sector a thread-per-row warp reads). A slab needs enough elements to keep a
# block's threads busy, and the slabs enough blocks to fill the GPU: 1/128 of the rows the
# thread layout needs (256 blocks with the default budget).
SLAB_INNER = 32             # adjacent rows a slab block covers at least (all, when fewer)
SLAB_MIN_ELEMS = 2048       # elements of one slab chunk: 4 a thread of a 512-thread block
SLAB_BLOCKS_PER_ROW = 128   # min_strided_rows / this: the slabs the planner asks for


# Rows longer than a thread's registers hold (STRIDED_REGISTER_COLS four-byte columns) are
# re-read in every pass by the thread layout; up to SLAB_SMEM_COLS columns a slab of 32
# of them fits shared memory several times an SM and is read once. H100, 2026-12-05:
# x - x.mean(0) of (256, 256k) float32 224 us as slabs, 303 a thread a row, 283 as a
# column mean and a pointwise kernel; the softmax over its axis 0 236 against 439 and
# 407; at 1024 columns a slab takes a block an SM and lost (363 against 283).
STRIDED_REGISTER_COLS = 64
SLAB_SMEM_COLS = 256


def slab_blocks(rs: RowShapes) -> int:
    """Blocks of the slab layout with chunks of SLAB_INNER inner positions (the most it
    splits into without breaking a warp's 128-byte reads)."""
    return rs.rows // max(rs.stride, 1) * -(-rs.stride // SLAB_INNER)


def strided_layout(rs: RowShapes, min_strided_rows: int = MIN_STRIDED_ROWS) -> str | None:
    """How rows along a strided axis run: "thread" (a thread a row, adjacent rows on
    adjacent threads), "slab" (a block per slab of adjacent rows, its threads striped over
    the columns), or None (neither keeps the GPU busy: legality refuses the row kernel).
    Slabs where the thread layout has too few rows, or rows so few a slab (under 32) that
    a warp's loads straddle slabs, or rows a thread would re-read that a slab keeps on
    chip, as long as the slab is big enough to share out."""
    slab_ok = (rs.cols * min(rs.stride, SLAB_INNER) >= SLAB_MIN_ELEMS
               and slab_blocks(rs) >= min_strided_rows // SLAB_BLOCKS_PER_ROW)
    if slab_ok and (rs.rows < min_strided_rows or rs.stride < SLAB_INNER
                    or STRIDED_REGISTER_COLS < rs.cols <= SLAB_SMEM_COLS):
        return "slab"
    return "thread" if rs.rows >= min_strided_rows else None


def row_problem_ok(rs: RowShapes, min_strided_rows: int = MIN_STRIDED_ROWS) -> bool:
    """Whether a row kernel may run this row problem (legality's rule on rows, with the
    planning budget Budgets.min_strided_rows)."""
    return rs.rows >= 2 and (rs.stride == 1 or strided_layout(rs, min_strided_rows) is not None)


def row_axis(graph: Graph, r: int) -> int | None:
    """The one axis reduce node r reduces, if it reduces one axis of an array of >= 1 axes."""
    nd = graph.nodes[r]
    d = len(graph.nodes[nd.inputs[0]].shape)
    axes = nd.args["axes"]
    if d == 0 or len(axes) != 1 or (nd.args["flat"] and d > 1):
        return None
    return axes[0]


class ReduceSig(NamedTuple):
    """What a reduction reduces. Reductions share a reduction kernel only when their
    signatures are equal (legality), and the exact searches group them by it (compat)."""

    input: tuple[int, ...]      # the shape reduced
    axes: tuple[int, ...]       # its axes reduced
    result: tuple[int, ...]     # the reduction's own shape (keepdims or not)


def reduce_sig(graph: Graph, r: int) -> ReduceSig:
    nd = graph.nodes[r]
    return ReduceSig(graph.nodes[nd.inputs[0]].shape, nd.args["axes"], nd.shape)


class Analysis:
    """Per-graph tables the legality checks, the cost model and the searches share."""

    def __init__(self, graph: Graph) -> None:
        g = self.graph = graph
        n = len(g.nodes)
        self.free = [is_free(g, i) for i in range(n)]
        self.is_input = [nd.op == "input" for nd in g.nodes]
        outs = g.output_ids
        # copy units: a free node the user keeps is stored by a kernel of its own
        self.unit = [not self.is_input[i] and (not self.free[i] or i in outs) for i in range(n)]
        self.units: tuple[int, ...] = tuple(i for i in range(n) if self.unit[i])
        self.all_mask = mask_of(self.units)
        self.input_mask = mask_of(i for i in range(n) if self.is_input[i])
        self.out_mask = mask_of(i for i in outs if self.unit[i])
        self.alone_mask = mask_of(i for i in self.units
                                  if self.free[i] or g.nodes[i].kind is Kind.OPAQUE)
        self.reduce_mask = mask_of(i for i in self.units if g.nodes[i].kind is Kind.REDUCE)
        self.reduce_sigs = {r: reduce_sig(g, r) for r in bits(self.reduce_mask)}
        self.nbytes = [nd.aval.nbytes for nd in g.nodes]
        self.shapes = [nd.shape for nd in g.nodes]
        self._weights: dict[DeviceParams, list[float]] = {}
        self.size = [nd.aval.size for nd in g.nodes]
        # graph breaks: the stage of each node (ids ascend with stages)
        self.stage = g.stages
        self.has_breaks = bool(g.breaks)

        # effective producers: (u, chain of free nodes from u's side to v's side)
        prods: list[tuple[tuple[int, tuple[int, ...]], ...]] = [()] * n
        for v in self.units:
            seen: dict[tuple[int, tuple[int, ...]], None] = {}
            for j in g.nodes[v].inputs:
                chain: list[int] = []
                while self.free[j] and not self.is_input[j]:
                    chain.append(j)
                    if not g.nodes[j].inputs:  # a constant or generator: nothing to read
                        j = -1
                        break
                    j = g.nodes[j].inputs[0]
                if j >= 0:
                    seen[(j, tuple(reversed(chain)))] = None
            prods[v] = tuple(seen)
        self.prods = prods
        self.pmask = [mask_of(u for u, _ in prods[v]) for v in range(n)]
        users: list[list[int]] = [[] for _ in range(n)]
        for v in self.units:
            for u in dict.fromkeys(u for u, _ in prods[v]):
                users[u].append(v)
        self.users = [tuple(u) for u in users]
        self.umask = [mask_of(u) for u in users]
        # ancestors / descendants among units (transitive, self excluded)
        anc = [0] * n
        for v in self.units:
            a = 0
            for u, _ in prods[v]:
                if self.unit[u]:
                    a |= (1 << u) | anc[u]
            anc[v] = a
        desc = [0] * n
        for v in reversed(self.units):
            d = 0
            for w in users[v]:
                d |= (1 << w) | desc[w]
            desc[v] = d
        self.anc, self.desc = anc, desc
        # the least a kernel can read of a materialised value: a slice reads only its part
        lb = list(self.nbytes)
        for v in self.units:
            for u, chain in prods[v]:
                s = self.slice_read(v, chain)
                if s >= 0:
                    lb[u] = min(lb[u], self.nbytes[s])
        self.lbread = lb
        # the fewest elements of a unit any kernel evaluates: all of them, unless a
        # reader takes it through a view chain that narrows it (a slice), in which
        # case a kernel fusing the two evaluates it only there
        ev = list(self.size)
        for v in self.units:
            for u, chain in prods[v]:
                for c in chain:
                    ev[u] = min(ev[u], self.size[c])
        self.least_evals = ev

    def slice_read(self, v: int, chain: tuple[int, ...]) -> int:
        """The slice node through which unit v reads along `chain`, or -1 when it reads
        the whole array (a copy unit is itself the first view of its chain)."""
        first = chain[0] if chain else (v if self.free[v] else -1)
        return first if first >= 0 and self.graph.nodes[first].op == "slice" else -1

    # -- display ------------------------------------------------------------------
    def ref(self, i: int) -> str:
        """`%7 (exp)`: how reasons name a node."""
        return f"%{i} ({self.graph.nodes[i].label})"

    def refs(self, ids, limit: int = 4) -> str:
        ids = list(ids)
        shown = ", ".join(f"%{i}" for i in ids[:limit])
        return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")

    def shape(self, i: int) -> tuple[int, ...]:
        return self.shapes[i]

    @cached_property
    def aval_text(self) -> list[str]:
        """`f32[64,128]` per node (reasons quote them often)."""
        return [str(nd.aval) for nd in self.graph.nodes]

    def weights(self, params: DeviceParams) -> list[float]:
        """Add-equivalent cost of one evaluation of each node on a device, cached per
        device parameters."""
        w = self._weights.get(params)
        if w is None:
            w = self._weights[params] = [op_weight(nd, params, self.graph) for nd in self.graph.nodes]
        return w

    # -- kernel facts -----------------------------------------------------------------
    def stored_of(self, mask: int, members: list[int] | None = None) -> int:
        """Members a kernel of exactly these units must store (partition semantics):
        cell results and values some unit outside the kernel reads."""
        out = mask & self.out_mask
        umask = self.umask
        for v in members if members is not None else bits(mask):
            if umask[v] & ~mask:
                out |= 1 << v
        return out

    def reads_of(self, mask: int, members: list[int] | None = None) -> int:
        """Materialised values (inputs, other kernels' outputs) a kernel of `mask` reads."""
        r = 0
        pmask = self.pmask
        for v in members if members is not None else bits(mask):
            r |= pmask[v]
        return r & ~mask


def analyse(graph: Graph) -> Analysis:
    """The Analysis of `graph`, kept on the graph object itself (like its cached
    properties), so it lives exactly as long as the graph."""
    an = graph.__dict__.get("_plan_analysis")
    if an is None:
        an = graph.__dict__["_plan_analysis"] = Analysis(graph)
    return an
