"""Plain, immutable plan data: a partition of a graph's nodes into kernels.

Free nodes (constants, generators like `full`/`arange`, and views) cost nothing to
recompute, so they are placed inside every kernel that reads them instead of being
materialised; they get a kernel of their own only when they are themselves a cell output.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Sequence

from ..ir import Graph, format_node
from ..ops import Kind


class Template(enum.Enum):
    """The iteration space a kernel's code is generated from."""

    POINTWISE = "pointwise"   # one thread-element per output element of one shape
    ROW = "row"               # rows x cols with reductions over the row (softmax class)
    REDUCTION = "reduction"   # reduction over any axes, producers fused in
    OPAQUE = "opaque"         # a library call (cuBLAS, sort, ...)


def is_free(graph: Graph, i: int) -> bool:
    """Nodes recomputed inside each consumer: constants, generators and views."""
    n = graph.nodes[i]
    return n.op != "input" and n.kind in (Kind.SOURCE, Kind.INJECTIVE)


@dataclass(frozen=True)
class Kernel:
    """One launch. `nodes` are computed here (ascending ids, free nodes included),
    `inputs` are materialised arrays it reads, `outputs` are the nodes it stores."""

    nodes: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    template: Template
    name: str = ""
    # nodes of this kernel also computed by another kernel (recomputation), for display
    recomputed: tuple[int, ...] = ()

    @property
    def compute_nodes(self) -> tuple[int, ...]:
        return self.nodes


@dataclass(frozen=True)
class Plan:
    graph: Graph
    kernels: tuple[Kernel, ...]
    strategy: str = "custom"
    notes: tuple[str, ...] = field(default=(), compare=False)

    @cached_property
    def kernel_of(self) -> dict[int, int]:
        """node id -> index of the kernel that stores it (or computes it, if not stored)."""
        owner: dict[int, int] = {}
        for k, kern in enumerate(self.kernels):
            for i in kern.nodes:
                if not is_free(self.graph, i):
                    owner.setdefault(i, k)
            for i in kern.outputs:
                owner[i] = k
        return owner

    @property
    def launches(self) -> int:
        return sum(1 for k in self.kernels)

    def __str__(self) -> str:
        return format_plan(self)


def format_plan(plan: Plan) -> str:
    g = plan.graph
    lines = []
    for i in g.input_ids:
        lines.append(format_node(g, i))
    for k, kern in enumerate(plan.kernels):
        reads = ", ".join(f"%{i}" for i in kern.inputs) or "-"
        writes = ", ".join(f"%{i}" for i in kern.outputs) or "-"
        lines.append(f"--- kernel {k} {kern.name} [{kern.template.value}] reads {reads} writes {writes}")
        for i in kern.nodes:
            lines.append("  " + format_node(g, i))
    return "\n".join(lines)


def needed_free_nodes(graph: Graph, members: Iterable[int]) -> set[int]:
    """Free nodes that `members` read, transitively through other free nodes."""
    out: set[int] = set()
    stack = [j for i in members for j in graph.nodes[i].inputs]
    while stack:
        j = stack.pop()
        if j in out or not is_free(graph, j):
            continue
        out.add(j)
        stack.extend(graph.nodes[j].inputs)
    return out


def make_kernel(graph: Graph, members: Iterable[int], template: Template,
                stored_elsewhere: Sequence[int] = ()) -> Kernel:
    """Build a Kernel from its member nodes: adds the free nodes they read, and works
    out which materialised arrays it reads and which of its nodes it must store."""
    members = set(members)
    nodes = members | needed_free_nodes(graph, members)
    inputs: dict[int, None] = {}
    for i in sorted(nodes):
        for j in graph.nodes[i].inputs:
            if j not in nodes:
                inputs[j] = None
    outputs = []
    for i in sorted(members):
        used_outside = any(u not in nodes for u in graph.users[i])
        if used_outside or i in graph.output_ids:
            outputs.append(i)
    name = kernel_name(graph, sorted(members))
    return Kernel(tuple(sorted(nodes)), tuple(inputs), tuple(outputs), template, name)


def kernel_name(graph: Graph, members: Sequence[int], limit: int = 4) -> str:
    """`exp_mul_sum`: the kernel's distinct non-free ops, in order, a few at most."""
    ops: list[str] = []
    for i in members:
        n = graph.nodes[i]
        if is_free(graph, i) and len(members) > 1:
            continue
        label = _SHORT_OP.get(n.op, n.label)
        if label not in ops:
            ops.append(label)
    name = "_".join(ops[:limit]) + ("_etc" if len(ops) > limit else "")
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "copy"


_SHORT_OP = {"multiply": "mul", "add": "add", "subtract": "sub", "true_divide": "div",
             "floor_divide": "floordiv", "remainder": "mod", "negative": "neg",
             "absolute": "abs", "maximum": "max", "minimum": "min", "broadcast_to": "bcast",
             "transpose": "T", "reshape": "reshape", "astype": "cast"}
