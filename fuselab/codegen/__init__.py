"""CUDA C++ code generation: one translation unit per kernel of a plan.

`generate(plan, options)` gives, per kernel in plan order, a `KernelCode` (source, launch
configuration, parameter order) or an `OpaqueCall` (a library call run through CuPy).
Templates: pointwise.py, reduction.py, row.py; shared pieces: index.py (index math),
emit.py (expressions), prelude.py (NumPy-exact device helpers), nvrtc.py (compiling
without a GPU).
"""
from __future__ import annotations

from ..plan.model import Plan, Template
from .context import KernelContext
from .model import CodegenError, CodegenOptions, KernelCode, OpaqueCall, Param
from .nvrtc import CompileError, CompileInfo, NvrtcUnavailable, compile_source


def generate(plan: Plan, options: CodegenOptions | None = None) -> tuple[KernelCode | OpaqueCall, ...]:
    """Code for every kernel of `plan`, in launch order."""
    options = options or CodegenOptions()
    return tuple(generate_kernel(plan, k, options) for k in range(len(plan.kernels)))


def generate_kernel(plan: Plan, k: int, options: CodegenOptions | None = None) -> KernelCode | OpaqueCall:
    from . import pointwise, reduction, row
    options = options or CodegenOptions()
    kern = plan.kernels[k]
    name = f"k{k}_{kern.name or 'kernel'}"
    if kern.template is Template.OPAQUE:
        (node,) = [i for i in kern.nodes if plan.graph.nodes[i].op == "opaque"]
        return OpaqueCall(k, name, node, kern.inputs, kern.outputs, kern.nodes)
    ctx = KernelContext(plan.graph, kern, k, options)
    if kern.template is Template.POINTWISE:
        return pointwise.generate(ctx)
    if kern.template is Template.REDUCTION:
        return reduction.generate(ctx)
    if kern.template is Template.ROW:
        return row.generate(ctx)
    raise CodegenError(f"no template for {kern.template}")


def compile_info(code: KernelCode, arch: str | None = None) -> CompileInfo:
    """Compile one kernel with NVRTC (no GPU needed): PTX, cubin, registers, spills."""
    return compile_source(code.source, code.name, code.nvrtc_options, arch=arch or "sm_90")


__all__ = ["generate", "generate_kernel", "compile_info", "CodegenOptions", "KernelCode", "OpaqueCall",
           "Param", "CodegenError", "CompileError", "CompileInfo", "NvrtcUnavailable"]
