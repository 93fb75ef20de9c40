"""Kernels from their member nodes: what each stores, and the iteration space legality
finds for it; the unfused plan (one kernel per op) that every report compares against.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from ..ir import Graph
from ..ops import Kind
from .analysis import Analysis, analyse, mask_of
from .legality import UNLIMITED, Verdict, check
from .model import Kernel, Plan, Template, is_free, kernel_from, kernel_outputs


def make_kernel(graph: Graph, members: Iterable[int], template: Template) -> Kernel:
    """A kernel of these nodes run by `template`, built by hand (tests, the unfused plan):
    adds the free nodes they read, stores what is read outside it or kept as a result,
    and carries the space legality finds under that template (None if it finds none)."""
    members = set(members)
    kernel = kernel_from(graph, members, kernel_outputs(graph, members), template, None)
    verdict = check_kernel(graph, kernel)
    return replace(kernel, space=verdict.space) if verdict.ok else kernel


def check_kernel(graph: Graph, kernel: Kernel) -> Verdict:
    """Legality's verdict on a kernel as it is built: under its own template, storing its
    outputs, budgets aside (its space, or why its template cannot run it)."""
    an = analyse(graph)
    return check(an, kernel_members(an, kernel), UNLIMITED, mask_of(kernel.outputs), kernel.template)


def kernel_members(an: Analysis, kernel: Kernel) -> int:
    """The units a kernel computes (a copy kernel: the free node it stores)."""
    m = mask_of(i for i in kernel.nodes if an.unit[i] and not an.free[i])
    return m or mask_of(kernel.outputs)


def single_op_template(graph: Graph, i: int) -> Template:
    kind = graph.nodes[i].kind
    if kind is Kind.OPAQUE:
        return Template.OPAQUE
    if kind is Kind.REDUCE:
        return Template.REDUCTION
    return Template.POINTWISE


def unfused_plan(graph: Graph) -> Plan:
    """One kernel per op, as eager NumPy/CuPy would launch them; views and constants
    are folded into their readers as eager libraries do with strides (a view or constant
    that is itself a cell result gets a copy kernel)."""
    kernels = []
    for i, n in enumerate(graph.nodes):
        if n.op == "input":
            continue
        if is_free(graph, i) and i not in graph.output_ids:
            continue
        kernels.append(make_kernel(graph, [i], single_op_template(graph, i)))
    return Plan(graph, tuple(kernels), "unfused")
