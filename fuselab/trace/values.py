"""What plain NumPy sees of tracers: their values, and whether its array would be
writeable. Shared by the real runs (realrun.py) and fuselab's own writers (mutate.py),
which use each other: kept apart so neither imports the other at import time."""
from __future__ import annotations

from typing import Any

import numpy as np

from .core import InputTracer, TraceContext, Tracer


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
    """`value` with tracers replaced by their values (no further graph break), for a
    function that only reads them (the index and values of fuselab's own writers).
    NumPy arrays come read-only: they are the user's own arrays or values the trace
    keeps. A function that may write into them or return them runs through run_for_real."""
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


def writeable(ctx: TraceContext, t: Tracer) -> bool:
    """Whether NumPy's array for `t` is writeable: the user's array's own flag, a view's
    base's, and never a broadcast (np.broadcast_to returns a read-only view)."""
    while True:
        if isinstance(t, InputTracer):
            flags = getattr(t._array, "flags", None)   # (CuPy's flags have no writeable)
            return flags is None or bool(getattr(flags, "writeable", True))
        o = t._origin
        if o is None or o[0] != "view":
            return True
        base = o[1]
        if len(o) > 3:
            ops = [n.op for n in o[3]]
        else:
            ops, node, nodes = [], t._node, ctx.builder.nodes
            while node != base._node and nodes[node].op in ("slice", "reshape", "transpose", "broadcast_to"):
                ops.append(nodes[node].op)
                node = nodes[node].inputs[0]
        if "broadcast_to" in ops:
            return False
        t = base
