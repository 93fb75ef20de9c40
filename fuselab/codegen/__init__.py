"""CUDA C++ code generation: one translation unit per kernel of a plan.

`generate(plan, options)` gives, per kernel in plan order, a `KernelCode` (source, launch
configuration, parameter order) or an `OpaqueCall` (a library call run through CuPy).
Templates: pointwise.py, reduction.py, row.py; shared pieces: index.py (index math),
emit.py (expressions), prelude.py (NumPy-exact device helpers), nvrtc.py (compiling
without a GPU). Generated code, launch candidates and NVRTC reports are cached in one
place (cache.py): every caller gets the same objects.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..ir import Graph
from ..plan.model import Kernel, Plan, Template
from .cache import cached, graph_key
from .config import ColumnConfig, Config, InnerConfig, PointwiseConfig, RowConfig
from .context import KernelContext
from .model import CodegenError, CodegenOptions, KernelCode, OpaqueCall, Param
from .nvrtc import CompileError, CompileInfo, NvrtcUnavailable, compile_source
from .types import has_cuda_type


def generate(plan: Plan, options: CodegenOptions | None = None,
             configs: Mapping[int, Config] | None = None) -> tuple[KernelCode | OpaqueCall, ...]:
    """Code for every kernel of `plan`, in launch order; `configs` picks a launch
    configuration per kernel index (the others get their template's heuristic)."""
    options = options or CodegenOptions()
    configs = configs or {}
    return tuple(generate_kernel(plan, k, options, configs.get(k)) for k in range(len(plan.kernels)))


def _template(kern: Kernel):
    from . import pointwise, reduction, row
    modules = {Template.POINTWISE: pointwise, Template.REDUCTION: reduction, Template.ROW: row}
    if kern.template not in modules:
        raise CodegenError(f"no template for {kern.template}")
    return modules[kern.template]


def generate_kernel(plan: Plan, k: int, options: CodegenOptions | None = None,
                    config: Config | None = None) -> KernelCode | OpaqueCall:
    """Code for kernel k of `plan` (cached: generated once per kernel, options and
    configuration)."""
    options = options or CodegenOptions()
    return cached(("code", graph_key(plan.graph), k, plan.kernels[k], options, config),
                  lambda: _generate_kernel(plan, k, options, config))


def library_reason(graph: Graph, kern: Kernel) -> str | None:
    """Why a fused kernel runs through CuPy instead of a generated kernel, or None. The
    templates have C++ types for bool, integers and float16/32/64 (codegen/types.py);
    a kernel with any other value (complex: `c.real`, `c.astype(float)`, `np.abs(c)`)
    runs its nodes through CuPy one by one, CuPy's results as the cell gives them plainly."""
    for i in (*kern.inputs, *kern.nodes, *kern.outputs):
        n = graph.nodes[i]
        if not has_cuda_type(n.dtype):
            return f"%{i} ({n.op}) is {np.dtype(n.dtype)}, which the generated CUDA has no type for"
    return None


def _generate_kernel(plan: Plan, k: int, options: CodegenOptions, config: Config | None) -> KernelCode | OpaqueCall:
    kern = plan.kernels[k]
    name = f"k{k}_{kern.name or 'kernel'}"
    if kern.template is Template.OPAQUE:
        (node,) = [i for i in kern.nodes if plan.graph.nodes[i].op == "opaque"]
        return OpaqueCall(k, name, node, kern.inputs, kern.outputs, kern.nodes)
    reason = library_reason(plan.graph, kern)
    if reason is not None:
        nodes = tuple(sorted(kern.nodes))   # (node ids follow the graph's order)
        return OpaqueCall(k, name, nodes[-1], kern.inputs, kern.outputs, nodes, reason=reason)
    return _template(kern).generate(KernelContext(plan.graph, kern, k, options), config)


def launch_candidates(plan: Plan, k: int, options: CodegenOptions | None = None) -> tuple[Config, ...]:
    """The launch configurations worth timing for kernel k, the heuristic's first; an
    opaque kernel has none, and a forced row tier leaves only the heuristic's choice."""
    kern = plan.kernels[k]
    if kern.template is Template.OPAQUE or library_reason(plan.graph, kern) is not None:
        return ()
    options = options or CodegenOptions()
    return cached(("candidates", graph_key(plan.graph), k, kern, options),
                  lambda: _launch_candidates(plan, k, options))


def _launch_candidates(plan: Plan, k: int, options: CodegenOptions) -> tuple[Config, ...]:
    kern = plan.kernels[k]
    ctx = KernelContext(plan.graph, kern, k, options)
    if kern.template is Template.ROW and options.row_tier != "auto":
        return (_template(kern).heuristic(ctx),)
    return tuple(_template(kern).candidates(ctx))


def compile_info(code: KernelCode, arch: str | None = None) -> CompileInfo:
    """Compile one kernel with NVRTC (no GPU needed): PTX, cubin, registers, spills
    (cached per source, options and architecture)."""
    arch = arch or "sm_90"
    return cached(("nvrtc", code.name, code.source, code.nvrtc_options, arch),
                  lambda: compile_source(code.source, code.name, code.nvrtc_options, arch=arch))


__all__ = ["generate", "generate_kernel", "launch_candidates", "library_reason", "compile_info", "CodegenOptions", "KernelCode",
           "OpaqueCall", "Config", "PointwiseConfig", "InnerConfig", "ColumnConfig", "RowConfig",
           "Param", "CodegenError", "CompileError", "CompileInfo", "NvrtcUnavailable"]
