"""Plain, immutable plan data: a partition of a graph's nodes into kernels.

The bottom of `fuselab.plan`: it imports nothing else of the planner. Free nodes
(constants, generators like `full`/`arange`, and views) cost nothing to recompute, so they
are placed inside every kernel that reads them instead of being materialised; they get a
kernel of their own only when they are themselves a cell output.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, ClassVar, Iterable, Sequence

from ..ir import Graph, GraphBreak, format_node
from ..ops import Kind


class Template(enum.Enum):
    """The iteration space a kernel's code is generated from."""

    POINTWISE = "pointwise"   # one thread-element per output element of one shape
    ROW = "row"               # rows x cols with reductions over the row (softmax class)
    REDUCTION = "reduction"   # reduction over any axes, producers fused in
    OPAQUE = "opaque"         # a library call (cuBLAS, sort, ...)


@dataclass(frozen=True)
class Space:
    """The iteration space of a legal kernel, as its template sees it (legality.check
    works it out; cost and codegen read it from the kernel)."""

    template: Template
    shape: tuple[int, ...]          # POINTWISE: S; REDUCTION: input I; ROW: F; OPAQUE: result
    result: tuple[int, ...] = ()    # REDUCTION: R; ROW: the per-row shape F[:-1]
    rows: int = 0                   # ROW: number of rows
    passes: int = 1                 # ROW: sweeps over a row when it does not fit on chip
    full: int = 0                   # members evaluated once per element of `shape` (a
    #                                 bitset of node ids); the others once per element of
    #                                 `result` (per row)
    axes: tuple[int, ...] = ()      # REDUCTION, ROW: the axes of `shape` reduced
    reduces: tuple[int, ...] = ()   # REDUCTION, ROW: the reduce nodes, ascending
    levels: tuple[int, ...] = ()    # ROW: the pass (from 1) that computes each of `reduces`


def is_free(graph: Graph, i: int) -> bool:
    """Nodes recomputed inside each consumer: constants, generators and views."""
    n = graph.nodes[i]
    return n.op != "input" and n.kind in (Kind.SOURCE, Kind.INJECTIVE)


@dataclass(frozen=True)
class Kernel:
    """One launch. `nodes` are computed here (ascending ids, free nodes included),
    `inputs` are materialised arrays it reads, `outputs` are the nodes it stores, `space`
    the iteration space legality found for it (None only for a kernel built by hand that
    its template cannot run)."""

    nodes: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    template: Template
    name: str = ""
    # nodes of this kernel also computed by another kernel (recomputation), for display
    recomputed: tuple[int, ...] = ()
    space: Space | None = None


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
    """A graph's kernels in execution order (kernels of a later stage after those of an
    earlier one: graph breaks run everything traced before them first)."""

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
        return len(self.kernels)

    def __str__(self) -> str:
        return format_plan(self)

    # The verbs, functions of fuselab.plan (verbs.py) attached there as methods: this
    # module imports nothing above it. Each toggle returns a new Plan or raises PlanError.
    fuse: ClassVar[Callable[..., "Plan"]]                 # put targets in one kernel
    split: ClassVar[Callable[..., "Plan"]]                # keep targets apart
    cut: ClassVar[Callable[..., "Plan"]]                  # materialise an edge
    with_strategy: ClassVar[Callable[..., "Plan"]]        # re-plan, same constraints
    without_constraints: ClassVar[Callable[..., "Plan"]]
    report: ClassVar[Callable[..., Any]]                  # cost.PlanReport
    legal_merge: ClassVar[Callable[..., tuple[bool, str]]]
    boundaries: ClassVar[Callable[..., tuple]]            # explain.Boundary per kernel edge
    explain: ClassVar[Callable[..., str]]                 # the log and boundaries as text


def format_plan(plan: Plan) -> str:
    g = plan.graph
    lines = []
    for i in g.input_ids:
        lines.append(format_node(g, i))
    crossed = 0
    for k, kern in enumerate(plan.kernels):
        stage = kernel_stage(g, kern)
        lines.extend(f"--- {b}" for b in g.breaks[crossed:stage])
        crossed = max(crossed, stage)
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


def kernel_outputs(graph: Graph, members: Iterable[int]) -> list[int]:
    """The members a kernel of exactly these nodes must store: cell results and values
    a node outside the kernel reads."""
    members = set(members)
    nodes = members | needed_free_nodes(graph, members)
    return [i for i in sorted(members) if i in graph.output_ids or used_outside(graph, i, nodes, members)]


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
                space: Space | None, recomputed: Iterable[int] = ()) -> Kernel:
    """A Kernel whose stored outputs and space the caller decided (the planner knows
    which kernel stores a value that several kernels recompute)."""
    members = set(members)
    nodes = members | needed_free_nodes(graph, members)
    inputs: dict[int, None] = {}    # materialised arrays read, in order of first use
    for i in sorted(nodes):
        for j in graph.nodes[i].inputs:
            if j not in nodes:
                inputs[j] = None
    return Kernel(tuple(sorted(nodes)), tuple(inputs), tuple(sorted(outputs)), template,
                  kernel_name(graph, sorted(members)), tuple(sorted(recomputed)), space)


def kernel_stage(graph: Graph, kernel: Kernel) -> int:
    """The stage (graph.stages) of a kernel's computed nodes: legal kernels have one."""
    computed = [i for i in kernel.nodes if not is_free(graph, i)] or kernel.outputs
    return graph.stages[max(computed)] if computed else 0


def break_between(graph: Graph, early: int, late: int) -> GraphBreak | None:
    """The first graph break traced after node `early` and no later than node `late`."""
    return next((b for b in graph.breaks if early < b.first <= late), None)


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
