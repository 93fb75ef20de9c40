"""Tracing: run a cell's Python with its arrays replaced by tracers that record a Graph.

One-way layers, bottom to top:

- `core` (the tracer, the tracing context, graph breaks), `concrete` (values at breaks),
  `warn` (NumPy's warnings, as NumPy words and places them) — no NumPy API here;
- the NumPy / CuPy layer: `operands`, `ufuncs`, `reductions`, `elementwise`, `shapes`,
  `creation`, `opaque` (+ `shape_rules`), `realrun`, `mutate`, `registry`; `methods`
  attaches it to the tracer, `modules` gives the `np` / `cp` proxies;
- cells: `cellinfo` (static facts from the syntax tree), `bind` (the cell's bindings,
  as plain execution makes them), `run` (`trace_cell`, `trace_function`).
"""
from __future__ import annotations

from .core import Refused, TraceContext, Tracer, current, is_array, is_cupy_array
from .run import TraceResult, trace_cell, trace_function
from .warn import Origin

__all__ = ["Tracer", "TraceContext", "TraceResult", "Refused", "Origin", "current", "is_array",
           "is_cupy_array", "trace_cell", "trace_function"]
