"""Planning: which nodes of a graph become one kernel."""
from __future__ import annotations

from ..ir import Graph
from ..ops import Kind
from .model import Kernel, Plan, Template, is_free, make_kernel

STRATEGIES = ("auto", "unfused", "max")


def template_of_single(graph: Graph, i: int) -> Template:
    kind = graph.nodes[i].kind
    if kind is Kind.OPAQUE:
        return Template.OPAQUE
    if kind is Kind.REDUCE:
        return Template.REDUCTION
    return Template.POINTWISE


def unfused_plan(graph: Graph) -> Plan:
    """One kernel per op, as eager NumPy/CuPy would launch them; views and constants
    are folded into their readers as eager libraries do with strides."""
    kernels = []
    for i, n in enumerate(graph.nodes):
        if n.op == "input" or n.op == "const":
            continue
        if is_free(graph, i) and i not in graph.output_ids:
            continue
        kernels.append(make_kernel(graph, [i], template_of_single(graph, i)))
    return Plan(graph, tuple(kernels), "unfused")


def make_plan(graph: Graph, strategy: str = "auto") -> Plan:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown plan strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if strategy == "unfused":
        return unfused_plan(graph)
    # The real planner lives in search.py; until then every strategy is the unfused one.
    from . import search  # noqa: F401  (imported lazily so a missing planner fails loudly)
    return search.plan(graph, strategy)


__all__ = ["Kernel", "Plan", "Template", "make_plan", "unfused_plan", "STRATEGIES", "make_kernel"]
