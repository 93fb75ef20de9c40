"""In-place updates (`x += 1`, `x[i] = v`, `np.add(a, b, out=x)`, `x.fill(0)`): the tracer
takes the updated value's node, so every name bound to the same array object sees the
change, as in NumPy. An array the user had before the cell is written back after a
successful run, as plain execution would have changed it.

Updates NumPy would make visible through other arrays sharing the memory (a view, or an
array with live views) are refused: fuselab keeps values, not memory."""
from __future__ import annotations

import weakref
from typing import Any, Callable

from .core import InputTracer, TraceContext, Tracer


def add_view(source: Tracer, view: Tracer) -> None:
    """Remember that `view` shares `source`'s memory (an update of `source` would show)."""
    if source._views is None:
        source._views = []
    source._views.append(weakref.ref(view))


def update_in_place(ctx: TraceContext, t: Tracer, node: int, what: str) -> None:
    """`t` now holds the value of `node` (same shape and dtype as before)."""
    if t._origin is not None and t._origin[0] == "view":
        raise ctx.refuse(f"{what} writes into a view of another array; in NumPy the change shows "
                         "through every array sharing that memory, which %%fuse does not trace",
                         "update a copy (v = v.copy()) or build the new array with np.where")
    if t._views and any(r() is not None for r in t._views):
        raise ctx.refuse(f"{what} writes into an array whose views (x.T, x[1:], x.reshape(...)) are "
                         "still in use; in NumPy they would change too, which %%fuse does not trace",
                         "take the views after the update, or update a copy")
    if isinstance(t, InputTracer):
        flags = getattr(t._array, "flags", None)
        if flags is not None and not flags.writeable:
            raise ValueError("assignment destination is read-only")
    t._origin = None  # no longer a copy of anything: its value is its own
    ctx.versions[id(t)] = ctx.versions.get(id(t), 0) + 1
    t._node = node


def update_for_real(ctx: TraceContext, t: Tracer, what: str, fn: Callable[[Any], Any]) -> Tracer:
    """An in-place update fuselab has no rule for: plain NumPy applies it to a copy of
    t's value (raising NumPy's own errors), and t then holds the result."""
    ctx.need(t._node, f"{what} runs as plain NumPy here")
    arr = ctx.evaluator.value(t._node).copy()
    fn(arr)
    update_in_place(ctx, t, ctx.input_for(arr), what)
    return t
