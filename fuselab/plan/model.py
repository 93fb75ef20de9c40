"""Plain, immutable plan data: a partition of a graph's nodes into kernels.

Free nodes (constants, generators like `full`/`arange`, and views) cost nothing to
recompute, so they are placed inside every kernel that reads them instead of being
materialised; they get a kernel of their own only when they are themselves a cell output.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable, Sequence

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
class Decision:
    """One entry of a plan's log: a merge taken (with its predicted gain), a merge refused
    (with its reason), a recomputation, or a note from the search."""

    kind: str   # "merge" | "refuse" | "recompute" | "boundary" | "search" | "constraint"
    text: str
    nodes: tuple[int, ...] = ()
    gain_s: float | None = None         # predicted time saved, seconds

    def __str__(self) -> str:
        return self.text


class PlanError(ValueError):
    """A requested plan change is illegal; `str(e)` is the reason to show the user."""


@dataclass(frozen=True)
class Constraints:
    """User choices a plan must honour; a toggle adds one and re-plans.

    `together`: each set of units shares one kernel. `apart`: no two units of a set share
    a kernel (a cut edge is a set of two). `history` says, in order, what was asked."""

    together: tuple[frozenset[int], ...] = ()
    apart: tuple[frozenset[int], ...] = ()
    history: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.together or self.apart)


NO_CONSTRAINTS = Constraints()


@dataclass(frozen=True)
class Plan:
    graph: Graph
    kernels: tuple[Kernel, ...]
    strategy: str = "custom"
    notes: tuple[str, ...] = field(default=(), compare=False)
    # what the planner was asked to honour, its decisions, and the device/budgets it used
    constraints: Constraints = field(default=NO_CONSTRAINTS, compare=False)
    log: tuple = field(default=(), compare=False)
    params: Any = field(default=None, compare=False)
    budgets: Any = field(default=None, compare=False)

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

    # -- the explorer's toggles: each returns a new Plan or raises PlanError ----------
    def fuse(self, *targets: Any) -> "Plan":
        """Put the targets in one kernel. Targets: node ids, kernels as ("k", index) or
        Kernel objects, edges as (producer, consumer)."""
        from .constraints import fuse
        return fuse(self, *targets)

    def split(self, *targets: Any) -> "Plan":
        """Keep the targets apart: ("k", i) splits kernel i into single ops, an edge
        (producer, consumer) is cut, one node leaves its kernel, several nodes are kept
        pairwise apart."""
        from .constraints import split
        return split(self, *targets)

    def cut(self, producer: int, consumer: int) -> "Plan":
        """Materialise `producer` for `consumer`: the two never share a kernel."""
        from .constraints import split
        return split(self, (producer, consumer))

    def with_strategy(self, strategy: str) -> "Plan":
        """Re-plan with another strategy, keeping the constraints."""
        from .search import plan as search_plan
        return search_plan(self.graph, strategy, self.constraints, self.params, self.budgets)

    def without_constraints(self) -> "Plan":
        from .search import plan as search_plan
        return search_plan(self.graph, self.strategy, NO_CONSTRAINTS, self.params, self.budgets)

    # -- questions the explorer asks ------------------------------------------------
    def report(self, params: Any = None):
        """Bytes, launches, intermediates and predicted time (cost.PlanReport)."""
        from .cost import report
        return report(self, params or self.params)

    def legal_merge(self, k1: int, k2: int) -> tuple[bool, str]:
        from .explain import legal_merge
        return legal_merge(self, k1, k2)

    def boundaries(self):
        """For each edge between kernels: why it is not fused (explain.Boundary)."""
        from .explain import boundaries
        return boundaries(self)

    def explain(self) -> str:
        """The decision log and the kernel boundaries, as text."""
        from .explain import explain
        return explain(self)


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
    outputs = [i for i in sorted(members)
               if i in graph.output_ids or used_outside(graph, i, nodes, members)]
    return kernel_from(graph, members, outputs, template)


def used_outside(graph: Graph, i: int, nodes: set[int], members: set[int]) -> bool:
    """Does a node outside the kernel read `i`, directly or through views? A view the
    kernel shares with another kernel (or one kept as a result, which a copy kernel
    stores) is recomputed there from `i`, so `i` must be stored."""
    stack = list(graph.users[i])
    while stack:
        u = stack.pop()
        if u not in nodes:
            return True
        if is_free(graph, u) and u not in members:
            if u in graph.output_ids:
                return True
            stack.extend(graph.users[u])
    return False


def kernel_from(graph: Graph, members: Iterable[int], outputs: Iterable[int], template: Template,
                recomputed: Iterable[int] = ()) -> Kernel:
    """A Kernel whose stored outputs the caller decided (the planner knows which kernel
    stores a value that several kernels recompute)."""
    members = set(members)
    nodes = members | needed_free_nodes(graph, members)
    inputs: dict[int, None] = {}    # materialised arrays read, in order of first use
    for i in sorted(nodes):
        for j in graph.nodes[i].inputs:
            if j not in nodes:
                inputs[j] = None
    return Kernel(tuple(sorted(nodes)), tuple(inputs), tuple(sorted(outputs)), template,
                  kernel_name(graph, sorted(members)), tuple(sorted(recomputed)))


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
