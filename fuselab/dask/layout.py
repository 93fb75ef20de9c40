"""How one kernel of a plan runs over blocks: which values Dask provides (the kernel's
inputs, and views of them or generators, which Dask's own operations compute lazily), which
nodes run inside each block, and how every block-local value's axes line up with the
blocks of the others.

Axes are tracked as *labels*: every axis of an operand that Dask provides gets a label
(an axis of length 1 gets None: it broadcasts), and the nodes of the body pass labels on
as NumPy's rules align axes (elementwise broadcasting, reductions, transposes, reshapes
that add or drop unit axes). Two labels meeting on one axis are unified. A kernel runs
per block when no value needs one label on two axes (`t + t.T`) and no view of an
intermediate moves elements between blocks (a slice, a general reshape): each label is
then one index of `dask.array.blockwise`, and the block of every value is the block of
the same label indices.
"""
from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Mapping, Sequence

from ..ir import Graph, Node
from ..ops import Kind
from ..plan.model import Kernel, Template

Labels = tuple  # tuple[int | None, ...]: one label class per axis, None for a broadcast unit axis

# free nodes that Dask computes before the blocks run, from the kernel's inputs
_DASK_SOURCES = frozenset({"full", "arange"})
_VIEWS = frozenset({"transpose", "slice", "reshape", "broadcast_to"})


@dataclass(frozen=True)
class Layout:
    """A kernel (or one stage of it) as blocks.

    `prelude`: nodes Dask computes lazily before the blocks (views of inputs, full,
    arange); `operands`: the values each block reads, in the order the block function
    takes them (kernel inputs or prelude nodes); `body`: the nodes run inside a block;
    `labels`: node -> label class per axis (operands and body); `space`: the labels of the
    blocks' iteration (blockwise's output index); `reduced`: label classes that body
    reductions reduce. `reason` is non-empty when the kernel cannot run per block, and
    `culprit` the node it is about."""

    kernel: Kernel
    prelude: tuple[int, ...]
    operands: tuple[int, ...]
    body: tuple[int, ...]
    labels: tuple[tuple[int, Labels], ...]
    space: Labels
    reduced: tuple[int, ...]
    reason: str = ""
    culprit: int | None = None

    @property
    def ok(self) -> bool:
        return not self.reason

    def of(self, node: int) -> Labels:
        return dict(self.labels)[node]


class _Labels:
    """Union-find over label classes, each with the axis length it stands for."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.size: list[int] = []

    def new(self, n: int) -> int | None:
        if n == 1:
            return None
        self.parent.append(len(self.parent))
        self.size.append(n)
        return len(self.parent) - 1

    def find(self, a: int) -> int:
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: int | None, b: int | None) -> int | None:
        if a is None or b is None:
            return a if b is None else b
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            assert self.size[ra] == self.size[rb], "the shape rules align axes of equal length"
            self.parent[max(ra, rb)] = min(ra, rb)
        return min(ra, rb)

    def canon(self, labels: Labels) -> Labels:
        return tuple(None if a is None else self.find(a) for a in labels)


class _Refuse(Exception):
    def __init__(self, node: int, reason: str) -> None:
        super().__init__(reason)
        self.node, self.reason = node, reason


def split_prelude(graph: Graph, kern: Kernel) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(prelude, body): free nodes computed from the kernel's inputs alone (views of them,
    full, arange) go to Dask; the rest runs in the blocks."""
    prelude: list[int] = []
    outside = set(kern.inputs)
    for i in kern.nodes:
        n = graph.nodes[i]
        if n.op in _DASK_SOURCES or (n.op in _VIEWS and all(j in outside for j in n.inputs)):
            prelude.append(i)
            outside.add(i)
    body = tuple(i for i in kern.nodes if i not in outside)
    return tuple(prelude), body


def layout(graph: Graph, kern: Kernel) -> Layout:
    """The block layout of a POINTWISE, ROW or REDUCTION kernel (for a REDUCTION kernel,
    its prologue and reductions: the epilogue is a pointwise stage of its own)."""
    prelude, body = split_prelude(graph, kern)
    inside = set(body)
    operands = tuple(dict.fromkeys(j for i in body for j in graph.nodes[i].inputs if j not in inside))
    uf = _Labels()
    lab: dict[int, Labels] = {j: tuple(uf.new(d) for d in graph.nodes[j].shape) for j in operands}
    reduced: list[int] = []
    try:
        for i in body:
            lab[i] = _node_labels(graph.nodes[i], i, [lab[j] for j in graph.nodes[i].inputs], uf, reduced)
        space = _space(graph, kern, body, lab, uf)
        canon = {i: uf.canon(v) for i, v in lab.items()}
        for i in body:
            seen = [a for a in canon[i] if a is not None]
            if len(seen) != len(set(seen)):
                raise _Refuse(i, "it would need the same blocks along two of its axes (like `t + t.T`)")
    except _Refuse as r:
        return Layout(kern, prelude, operands, body, (), (), (), r.reason, r.node)
    red = tuple(sorted({uf.find(a) for a in reduced}))
    return Layout(kern, prelude, operands, body, tuple(canon.items()), uf.canon(space), red)


def _node_labels(n: Node, i: int, ins: list[Labels], uf: _Labels, reduced: list[int]) -> Labels:
    if n.op == "const":
        return ()
    if n.kind is Kind.ELEMWISE:
        out: list[int | None] = []
        for d in range(1, n.aval.ndim + 1):
            a = None
            for labels in ins:
                if d <= len(labels):
                    a = uf.union(a, labels[-d])
            out.append(a)
        return tuple(reversed(out))
    if n.kind is Kind.REDUCE:
        (x,) = ins
        axes = n.args["axes"]
        reduced.extend(a for k, a in enumerate(x) if k in axes and a is not None)
        if n.args["keepdims"]:
            return tuple(None if k in axes else a for k, a in enumerate(x))
        return tuple(a for k, a in enumerate(x) if k not in axes)
    if n.op == "transpose":
        return tuple(ins[0][p] for p in n.args["perm"])
    if n.op == "reshape":
        m = unit_reshape_map(n.shape, ins[0], _shape_of_labels(ins[0], uf))
        if m is not None:
            return tuple(None if src is None else ins[0][src] for src in m)
        raise _Refuse(i, "it reshapes a value computed in the kernel across blocks")
    if n.op in ("slice", "broadcast_to"):
        raise _Refuse(i, f"a {n.op.replace('_', ' ')} of a value computed in the kernel reads "
                         "elements of other blocks")
    raise _Refuse(i, f"`{n.op}` does not run per block")


def _shape_of_labels(labels: Labels, uf: _Labels) -> tuple[int, ...]:
    return tuple(1 if a is None else uf.size[uf.find(a)] for a in labels)


def unit_reshape_map(out_shape: tuple[int, ...], in_labels: Labels,
                     in_shape: tuple[int, ...]) -> tuple[int | None, ...] | None:
    """For a reshape that only adds or drops axes of length 1: for each output axis, the
    input axis it is (None for an added unit axis). None for any other reshape."""
    src = [k for k, d in enumerate(in_shape) if d != 1]
    dst = [k for k, d in enumerate(out_shape) if d != 1]
    if [in_shape[k] for k in src] != [out_shape[k] for k in dst]:
        return None
    m: list[int | None] = [None] * len(out_shape)
    for s, d in zip(src, dst):
        m[d] = s
    return tuple(m)


def _space(graph: Graph, kern: Kernel, body: tuple[int, ...], lab: Mapping[int, Labels], uf: _Labels) -> Labels:
    """The labels the blocks iterate over; values the template runs over one space are
    aligned axis by axis (two unrelated inputs of one pointwise kernel share its blocks)."""
    inside = set(body)
    stored = [i for i in kern.outputs if i in inside]
    reduces = [i for i in body if graph.nodes[i].kind is Kind.REDUCE]
    if kern.template is Template.POINTWISE:
        full = stored
    elif kern.template in (Template.ROW, Template.REDUCTION):
        full = [graph.nodes[r].inputs[0] for r in reduces]
        full += [i for i in stored if graph.nodes[i].shape == graph.nodes[full[0]].shape]
    else:
        raise _Refuse(kern.nodes[0], f"a {kern.template.value} kernel does not run per block")
    if not full:
        return ()
    ref = lab[full[0]]
    for i in full[1:]:
        for a, b in zip(ref, lab[i]):
            uf.union(a, b)
    if kern.template is Template.REDUCTION:
        _line_up_reduction_values(graph, stored, full, reduces[0], lab, uf)
    if kern.template is Template.ROW:  # per-row results line up with the rows of F
        k = graph.nodes[reduces[0]].args["axes"][0]
        rows = ref[:k] + ref[k + 1:]
        for i in stored:
            if i in full:
                continue
            mine = lab[i][:k] + lab[i][k + 1:] if len(lab[i]) == len(ref) else lab[i]   # keepdims or not
            for a, b in zip(rows, mine):
                uf.union(a, b)
    return ref


def _line_up_reduction_values(graph: Graph, stored: Sequence[int], full: Sequence[int], red: int,
                              lab: Mapping[int, Labels], uf: _Labels) -> None:
    """A reduction kernel's stored values other than the reduced input's shape share its
    blocks too: one of the reduced input's size with unit axes added or dropped (`x[:, None]`
    is a view Dask computes, so it has labels of its own) lines up axis by axis with it, and
    one of the result's shape (keepdims or not) with its kept axes, and one broadcast
    against either (`np.where(m, m.astype(int), x.prod(axis=2))` with `m` of the last
    axis only) along its trailing axes, as NumPy aligns it."""
    ref, shape = lab[full[0]], graph.nodes[full[0]].shape
    axes = graph.nodes[red].args["axes"]
    kept = [a for k, a in enumerate(ref) if k not in axes]
    result = tuple(d for k, d in enumerate(shape) if k not in axes)
    result_keep = tuple(1 if k in axes else d for k, d in enumerate(shape))
    space = {uf.find(a) for a in ref if a is not None}
    for i in stored:
        if i in full or all(uf.find(b) in space for b in lab[i] if b is not None):
            continue   # (lined up already: through the ops that read it with the input)
        mine = graph.nodes[i].shape
        if mine == result:
            pairs = list(zip(kept, lab[i]))
        elif mine == result_keep:
            pairs = [(a, b) for k, (a, b) in enumerate(zip(ref, lab[i])) if k not in axes]
        elif math.prod(mine) == math.prod(shape) and (m := unit_reshape_map(shape, (), mine)) is not None:
            pairs = [(a, lab[i][src]) for a, src in zip(ref, m) if src is not None]
        elif _broadcasts(mine, shape):    # a value of smaller operands, as NumPy aligns it: trailing axes
            pairs = [(a, b) for a, b, d in zip(ref[::-1], lab[i][::-1], mine[::-1]) if d != 1]
        elif _broadcasts(mine, result):
            pairs = [(a, b) for a, b, d in zip(kept[::-1], lab[i][::-1], mine[::-1]) if d != 1]
        else:
            continue
        for a, b in pairs:
            uf.union(a, b)


def _broadcasts(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    """`small` broadcasts against `big` without growing it (NumPy's trailing alignment)."""
    return len(small) <= len(big) and all(d in (1, b) for d, b in zip(small[::-1], big[::-1]))
