"""Python source for every kernel of a plan, to be compiled by Numba (no Numba needed
to generate it: the explorer shows it on any machine)."""
from __future__ import annotations

from ..codegen.model import OpaqueCall
from ..plan.model import Plan, Template
from .context import PyContext
from .emit import CodegenError
from .model import NumbaOptions, PyKernel




def generate(plan: Plan, options: NumbaOptions | None = None) -> tuple[PyKernel | OpaqueCall, ...]:
    """Code for every kernel of `plan`, in run order; opaque kernels run through NumPy."""
    options = options or NumbaOptions()
    return tuple(generate_kernel(plan, k, options) for k in range(len(plan.kernels)))


def generate_kernel(plan: Plan, k: int, options: NumbaOptions | None = None) -> PyKernel | OpaqueCall:
    from . import pointwise, reduction, row
    options = options or NumbaOptions()
    kern = plan.kernels[k]
    if kern.template is Template.OPAQUE:
        (node,) = [i for i in kern.nodes if plan.graph.nodes[i].op == "opaque"]
        return OpaqueCall(k, f"k{k}_{kern.name or 'kernel'}", node, kern.inputs, kern.outputs, kern.nodes)
    ctx = PyContext(plan.graph, kern, k, options)
    template = {Template.POINTWISE: pointwise, Template.ROW: row, Template.REDUCTION: reduction}.get(kern.template)
    if template is None:
        raise CodegenError(f"no template for {kern.template}")
    return template.generate(ctx)
