"""Running an operation as plain NumPy / CuPy in the middle of a trace: for what fuselab
does not trace (a function it has no rule for, an ndarray subclass operand, a call NumPy
rejects), the tracers' values are computed (a graph break) and the real function runs on
them, once, so its result, its errors and its side effects are exactly plain execution's.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..recording import library_line, recorded
from .core import TraceContext, Tracer


def tracer_nodes(values: Any) -> list[int]:
    """The nodes of the tracers in `values` (also inside lists, tuples, dicts)."""
    out: list[int] = []

    def walk(v: Any) -> None:
        if isinstance(v, Tracer):
            out.append(v._node)
        elif type(v) in (list, tuple):
            for e in v:
                walk(e)
        elif type(v) is dict:
            for e in v.values():
                walk(e)
    walk(values)
    return out


def plain_values(ctx: TraceContext, value: Any) -> Any:
    """`value` with tracers replaced by their values (no further graph break). NumPy
    arrays come read-only: they are the user's own arrays or values the trace keeps,
    which a function that writes into its arguments must not change behind its back
    (fuselab's known writers go through `mutate.update_for_real`)."""
    if isinstance(value, Tracer):
        v = ctx.evaluator.value(value._node)
        if value._scalar:
            return v[()]
        if isinstance(v, np.ndarray):
            v = v.view()
            v.flags.writeable = False
        return v
    if type(value) in (list, tuple):
        return type(value)(plain_values(ctx, v) for v in value)
    if type(value) is dict:
        return {k: plain_values(ctx, v) for k, v in value.items()}
    return value


def run_for_real(ctx: TraceContext, name: str, fn: Callable[..., Any], args: Sequence[Any],
                 kwargs: Mapping[str, Any], why: str = "") -> Any:
    """`fn(*args, **kwargs)` as plain NumPy / CuPy on the tracers' values (NumPy's or
    CuPy's, as the cell's values are), at a graph break. `fn` is the function the
    user's code called (cupy.nanmax in a CuPy cell), never a NumPy stand-in for it."""
    nodes = tracer_nodes((args, kwargs))
    if nodes:
        lib = "Dask" if ctx.uses_dask else "CuPy" if ctx.uses_cupy else "NumPy"  # (Dask's methods run on the fused plan's lazy value)
        ctx.need(nodes[0], why or f"`{name}` runs as plain {lib} here: fuselab does not trace it")
    plain_args, plain_kwargs = plain_values(ctx, list(args)), plain_values(ctx, dict(kwargs))
    # Its warnings belong to the user's line, in order with the cell's other warnings
    # (raised here they would name this file); errors propagate as they are.
    with recorded() as caught:
        out = fn(*plain_args, **plain_kwargs)
    for w in caught:  # the library's own warnings (CuPy's too): never fuselab's to drop
        ctx.library_warning(str(w.message), w.category, library_line(w))
    return out
