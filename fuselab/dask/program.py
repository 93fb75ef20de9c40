"""The program each block runs: a kernel's body as a small graph of its own, whose inputs
are the block's operands, replayed for each block's shape (blocks at the edges are
smaller, chunks may be irregular), and planned as one kernel of the kernel's template,
which a chunk runner executes.

For a reduction stage, the program computes each reduction's *partial state* over the
block (keepdims): sum / prod in the accumulator dtype, max / min / any / all, the
(count, sum, m2) of a variance, the (index, value) of an argmax. `states.py` combines them.
"""
from __future__ import annotations

import hashlib
import pickle
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..ir import Graph, GraphBuilder, Node
from ..ops import Kind, reduce_rule
from ..plan import make_plan
from ..plan.kernels import make_kernel
from ..plan.model import Plan, Template
from .layout import Layout, unit_reshape_map
from .states import Partial, finish_partial


@dataclass(frozen=True)
class BlockSpec:
    """What a block task needs, pickled once per kernel: the program graph (inputs
    `a0, a1, ...` in operand order), the names of the stored values it returns, the
    partial reductions (program input node, Partial), the template, and a key for caches."""

    graph: Graph
    stored: tuple[str, ...]
    partials: tuple[tuple[int, Partial], ...]
    template: Template
    key: str


def body_graph(graph: Graph, lay: Layout, stored: Sequence[int], skip: Sequence[int] = ()
               ) -> tuple[Graph, dict[int, int]]:
    """The kernel's body as a graph whose inputs are its operands (full shapes), without
    the nodes in `skip` (reductions computed as partial states instead)."""
    b = GraphBuilder()
    new: dict[int, int] = {}
    for k, j in enumerate(lay.operands):
        n = graph.nodes[j]
        new[j] = b.input(f"a{k}", n.shape, n.dtype, n.loc)
    for i in lay.body:
        if i in skip:
            continue
        n = graph.nodes[i]
        b.nodes.append(Node(n.op, tuple(new[j] for j in n.inputs), n.args, n.aval, n.loc))
        new[i] = len(b.nodes) - 1
    return Graph(tuple(b.nodes), tuple((f"o{k}", new[i]) for k, i in enumerate(stored))), new


def block_spec(graph: Graph, lay: Layout, stored: Sequence[int], reductions: Sequence[int] = (),
               position_labels: Sequence[int] = ()) -> BlockSpec:
    """The program of a kernel's blocks. `stored`: body nodes the blocks return;
    `reductions`: reduce nodes whose partial states they return instead;
    `position_labels`: the label classes whose global positions follow the operands."""
    g, new = body_graph(graph, lay, stored, reductions)
    partials = []
    for r in reductions:
        n = graph.nodes[r]
        a = n.args
        labels = lay.of(n.inputs[0])
        pos = tuple(position_labels.index(c) if c is not None and k in a["axes"] and c in position_labels else None
                    for k, c in enumerate(labels))
        x = graph.nodes[n.inputs[0]]
        p = Partial(n.op, r, a["axes"], n.dtype, a["keepdims"], a["ddof"] if "ddof" in a else 0, a["flat"], pos,
                    x.shape, x.dtype)
        partials.append((new[n.inputs[0]], p))
    spec = BlockSpec(g, tuple(f"o{k}" for k in range(len(stored))), tuple(partials), lay.kernel.template, "")
    key = hashlib.sha1(pickle.dumps((g.nodes, g.outputs, spec.partials, spec.template))).hexdigest()[:16]
    return BlockSpec(spec.graph, spec.stored, spec.partials, spec.template, key)


# ---------------------------------------------------------------------------
# One program per block shape
# ---------------------------------------------------------------------------

def respecialise(graph: Graph, shapes: Sequence[tuple[int, ...]], partials: Sequence[tuple[int, Partial]] = (),
                 ) -> tuple[Graph, tuple[tuple[tuple[str, ...], tuple[int, ...]], ...]]:
    """`graph` replayed with inputs of these shapes (the shape rules check every node
    again), plus each partial reduction's nodes; returns the graph and, per partial, the
    names of its outputs and the block shape of the input it reduces."""
    b = GraphBuilder()
    new: dict[int, int] = {}
    k = 0
    for i, n in enumerate(graph.nodes):
        ins = [new[j] for j in n.inputs]
        if n.op == "input":
            new[i] = b.input(n.args["name"], shapes[k], n.dtype, n.loc)
            k += 1
        elif n.op == "const":
            new[i] = b.const(n.args["value"], n.dtype, n.loc)
        elif n.op == "where":
            new[i] = b.where(*ins, loc=n.loc)
        elif n.op == "astype":
            new[i] = b.astype(ins[0], n.dtype, n.loc)
        elif n.kind is Kind.ELEMWISE:
            new[i] = b.elemwise(n.op, ins, n.loc)
        elif n.kind is Kind.REDUCE:
            a = n.args
            new[i] = b.reduce(n.op, ins[0], None if a["flat"] else a["axes"], a["keepdims"], a["dtype"], n.loc,
                              a["ddof"] if "ddof" in a else 0)
        elif n.op == "transpose":
            new[i] = b.transpose(ins[0], n.args["perm"], n.loc)
        elif n.op == "reshape":
            src = graph.nodes[n.inputs[0]]
            m = unit_reshape_map(n.shape, tuple(range(src.aval.ndim)), src.shape)
            assert m is not None, "the layout admits reshapes of unit axes only"
            have = b.aval(ins[0]).shape
            new[i] = b.reshape(ins[0], tuple(1 if s is None else have[s] for s in m), n.loc)
        else:  # pragma: no cover - Layout refuses every other op in a body
            raise NotImplementedError(n.op)
    outputs = [(name, new[i]) for name, i in graph.outputs]
    names: list[tuple[tuple[str, ...], tuple[int, ...]]] = []
    for k, (x, p) in enumerate(partials):
        x = new[x]
        shape = b.aval(x).shape
        if any(shape[a] == 0 for a in p.axes):
            names.append(((), shape))  # an empty block: its state is the identity
            continue
        nodes = _partial_nodes(b, x, p)
        names.append((tuple(f"p{k}_{field}" for field in nodes), shape))
        outputs += [(f"p{k}_{field}", j) for field, j in nodes.items()]
    return Graph(tuple(b.nodes), tuple(outputs)), tuple(names)


def _partial_nodes(b: GraphBuilder, x: int, p: Partial) -> dict[str, int]:
    """The nodes of one block's partial state of a reduction (keepdims)."""
    rule = reduce_rule(p.op, b.aval(x).dtype, p.dtype)
    if p.op in ("sum", "prod"):
        return {"v": b.reduce(p.op, x, p.axes, True, rule.acc)}
    if p.op in ("max", "min", "any", "all"):
        return {"v": b.reduce(p.op, x, p.axes, True)}
    if p.op == "var":  # Chan's combine in float64: more exact than one pass of NumPy's
        f64 = np.dtype(np.float64)
        return {"s": b.reduce("sum", x, p.axes, True, f64), "m2": b.reduce("var", x, p.axes, True, f64)}
    # argmax / argmin: the block's first extreme, and its value (NaN first, as NumPy)
    idx = b.reduce(p.op, x, None if p.flat else p.axes, True)
    return {"i": idx, "v": b.reduce("max" if p.op == "argmax" else "min", x, p.axes, True)}


class _Programs:
    """Planned programs by (spec key, block shapes), per process (a worker keeps its own)."""

    def __init__(self, limit: int = 512) -> None:
        self.limit = limit
        self._cache: OrderedDict[tuple, tuple[Plan, tuple]] = OrderedDict()

    def get(self, spec: BlockSpec, shapes: tuple[tuple[int, ...], ...]) -> tuple[Plan, tuple]:
        key = (spec.key, shapes)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        g, names = respecialise(spec.graph, shapes, spec.partials)
        members = [i for i, n in enumerate(g.nodes) if n.op != "input"]
        template = spec.template if spec.template is not Template.REDUCTION or any(n for n, _ in names) \
            else Template.POINTWISE
        kernel = make_kernel(g, members, template) if members else None
        if kernel is not None and kernel.space is None:
            # a block can be what the whole array is not: one row of a row kernel (chunks of
            # one row), an empty reduced axis. Its program is planned as any graph is.
            plan = make_plan(g, "auto")
        else:
            plan = Plan(g, (kernel,) if kernel is not None else (), "block")
        self._cache[key] = (plan, names)
        if len(self._cache) > self.limit:
            self._cache.popitem(last=False)
        return plan, names


PROGRAMS = _Programs()


def run_block(spec: BlockSpec, runner: Any, n_offsets: int, *arrays: Any) -> tuple:
    """One block: the program on the block's operands (`arrays`, then per reduced axis
    the global positions of the block's elements along it). Returns the stored values,
    then each partial reduction's state (a dict)."""
    operands, positions = arrays[: len(arrays) - n_offsets], arrays[len(arrays) - n_offsets:]
    shapes = tuple(tuple(int(d) for d in a.shape) for a in operands)
    plan, names = PROGRAMS.get(spec, shapes)
    outs = runner.run(plan, {f"a{k}": a for k, a in enumerate(operands)}) if plan.kernels else {}
    result = [outs[name] for name in spec.stored]
    like = operands[0] if operands else (positions[0] if positions else None)
    for (_, p), (fields, xshape) in zip(spec.partials, names):
        result.append(finish_partial(p, {f.split("_", 1)[1]: outs[f] for f in fields}, xshape, positions, like))
    return tuple(result)
