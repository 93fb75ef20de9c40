"""Python source for every kernel of a plan, to be compiled by Numba (no Numba needed
to generate it: the explorer shows it on any machine)."""
from __future__ import annotations

import numpy as np

from ..codegen.model import OpaqueCall
from ..ir import Graph
from ..plan.model import Kernel, Plan, Template
from .context import PyContext
from .emit import CodegenError
from .model import NumbaOptions, NumpyKernel, PyKernel
from .pytypes import compiles


def numpy_reason(graph: Graph, kern: Kernel) -> str | None:
    """Why a fused kernel runs through NumPy instead of being compiled, or None (it is
    compiled). The templates take kernels whose every value (inputs, computed nodes,
    outputs) has a dtype the generated code has a Numba type for (pytypes.compiles: bool,
    integers, float16/32/64 in native byte order) and no value of size 0. The rest run
    their nodes through NumPy (the reference interpreter's eval_node), which gives
    NumPy's results by construction:

    * complex (and any other) dtypes: the generated code has no type for them, and a
      complex kernel's semantics (NumPy's complex max/sort order, its complex sums) are
      NumPy's own anyway;
    * a zero-size value: there is nothing to compute (an empty output, or a reduction
      over an empty axis, whose outputs are the identity), and loops of zero trips over
      arrays of zero length are where the templates' degenerate cases lie (a tile of 0
      outputs, accumulators Numba cannot type because no statement assigns them)."""
    nodes = (*kern.inputs, *kern.nodes, *kern.outputs)
    for i in nodes:
        n = graph.nodes[i]
        if not compiles(n.dtype):
            return f"%{i} ({n.op}) is {np.dtype(n.dtype)}, which the Numba backend has no type for"
    for i in nodes:
        n = graph.nodes[i]
        if n.aval.size == 0:
            return f"%{i} ({n.op}) has no elements ({n.aval})"
    return None


def generate(plan: Plan, options: NumbaOptions | None = None) -> tuple[PyKernel | OpaqueCall | NumpyKernel, ...]:
    """Code for every kernel of `plan`, in run order; opaque kernels, and those that
    numpy_reason gives a reason for, run through NumPy."""
    options = options or NumbaOptions()
    return tuple(generate_kernel(plan, k, options) for k in range(len(plan.kernels)))


def generate_kernel(plan: Plan, k: int, options: NumbaOptions | None = None) -> PyKernel | OpaqueCall | NumpyKernel:
    from . import pointwise, reduction, row
    options = options or NumbaOptions()
    kern = plan.kernels[k]
    if kern.template is Template.OPAQUE:
        (node,) = [i for i in kern.nodes if plan.graph.nodes[i].op == "opaque"]
        return OpaqueCall(k, f"k{k}_{kern.name or 'kernel'}", node, kern.inputs, kern.outputs, kern.nodes)
    reason = numpy_reason(plan.graph, kern)
    if reason is not None:
        return NumpyKernel(k, f"k{k}_{kern.name or 'kernel'}", tuple(kern.inputs), tuple(kern.outputs),
                           tuple(sorted(kern.nodes)), reason, kern.template)
    ctx = PyContext(plan.graph, kern, k, options)
    template = {Template.POINTWISE: pointwise, Template.ROW: row, Template.REDUCTION: reduction}.get(kern.template)
    if template is None:
        raise CodegenError(f"no template for {kern.template}")
    return template.generate(ctx)
