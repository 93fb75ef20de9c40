"""What plain NumPy sees of tracers: their values, and whether its array would be
writeable. Shared by the real runs (realrun.py) and fuselab's own writers (mutate.py),
which use each other: kept apart so neither imports the other at import time."""
from __future__ import annotations

import weakref
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


def read_only(ctx: TraceContext) -> dict[int, tuple[Any, bool]]:
    """id(tracer) -> (a weak reference to it, the WRITEABLE flag the cell set on it:
    `y.flags.writeable = False`). Weak: see realrun.itself."""
    return ctx.__dict__.setdefault("_writeable_set", {})


def flag_set(ctx: TraceContext, t: Tracer) -> bool | None:
    """The WRITEABLE flag the cell set on t, or None."""
    e = (ctx.__dict__.get("_writeable_set") or {}).get(id(t))
    return e[1] if e is not None and e[0]() is t else None


def set_writeable(t: Tracer, flag: bool) -> None:
    """`t.flags.writeable = flag`, as NumPy: an array of the user's takes the flag on its
    own object (restored if the cell fails), any other array in the trace (and on the
    array bound for it); a view of a read-only array cannot be made writeable."""
    ctx = t._ctx
    if isinstance(t, InputTracer) and not t.mutated:
        arr = t._array
        ctx.__dict__.setdefault("_flag_originals", {}).setdefault(id(arr), (arr, bool(arr.flags.writeable)))
        arr.flags.writeable = flag   # (NumPy's ValueError for a view of a read-only array)
        return
    if flag and not _base_writeable(ctx, t):
        raise ValueError("cannot set WRITEABLE flag to True of this array")
    read_only(ctx)[id(t)] = (weakref.ref(t), flag)


def _base_writeable(ctx: TraceContext, t: Tracer) -> bool:
    o = t._origin
    return o is None or o[0] != "view" or writeable(ctx, o[1])


def writeable(ctx: TraceContext, t: Tracer) -> bool:
    """Whether NumPy's array for `t` is writeable: the flag the cell set on it, the
    user's array's own flag, a view's base's, and never a broadcast (np.broadcast_to
    returns a read-only view)."""
    while True:
        flag = flag_set(ctx, t)
        if flag is not None:
            return flag
        if isinstance(t, InputTracer):
            f = getattr(t._array, "flags", None)   # (CuPy's flags have no writeable)
            return f is None or bool(getattr(f, "writeable", True))
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


_WRITEABLE_KEYS = ("W", "WRITEABLE")


class TracedFlags:
    """`x.flags` of a traced array: NumPy's flags of the array plain execution has (a graph
    break), except WRITEABLE, which is the tracer's own (values.writeable): setting it
    (`x.flags.writeable = False`, `x.flags['W'] = False`, `x.setflags(write=False)`)
    makes later writes raise NumPy's ValueError, and the bound array read-only. One left
    in the namespace or a container becomes the bound array's own flags (bind.py)."""

    __slots__ = ("_t",)

    def __init__(self, t: Tracer) -> None:
        object.__setattr__(self, "_t", t)

    def _real(self) -> Any:
        t = self._t
        arr = getattr(t, "_array", None) if isinstance(t, InputTracer) else None
        if arr is not None and getattr(arr, "shape", None) == t.shape and getattr(arr, "dtype", None) == t.dtype:
            # the user's own array object, updated in place or not: its layout is the one
            # NumPy's has (the traced value of an update is a kernel's, C-ordered)
            return arr.flags
        return t._value("`.flags`").flags

    def __getattr__(self, name: str) -> Any:
        if name == "writeable":
            return writeable(self._t._ctx, self._t)
        return getattr(self._real(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "writeable":
            set_writeable(self._t, bool(value))
        elif name in ("aligned", "writebackifcopy"):
            setattr(self._real(), name, value)
        else:
            raise AttributeError(f"attribute '{name}' of 'numpy.flagsobj' objects is not writable")

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str) and key.upper() in _WRITEABLE_KEYS:
            return writeable(self._t._ctx, self._t)
        return self._real()[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, str) and key.upper() in _WRITEABLE_KEYS:
            set_writeable(self._t, bool(value))
        else:
            self._real()[key] = value

    def __eq__(self, other: Any) -> bool:
        return repr(self) == repr(other)

    def __repr__(self) -> str:
        text = repr(self._real())
        return text.replace(f"WRITEABLE : {not writeable(self._t._ctx, self._t)}",
                            f"WRITEABLE : {writeable(self._t._ctx, self._t)}")
