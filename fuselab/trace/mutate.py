"""In-place updates (`x += 1`, `x[i] = v`, `np.add(a, b, out=x)`, `x.fill(0)`): the tracer
takes the updated value's node, so every name bound to the same array object sees the
change, as in NumPy. An array the user had before the cell is written back after a
successful run, as plain execution would have changed it.

Updates NumPy would make visible through other arrays sharing the memory (a view, or an
array with live views) are refused: fuselab keeps values, not memory."""
from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from ..interp import slice_key
from ..ops import OpaqueFn
from .core import InputTracer, TraceContext, Tracer


def add_view(source: Tracer, view: Tracer) -> None:
    """Remember that `view` shares `source`'s memory (an update of `source` would show)."""
    if source._views is None:
        source._views = []
    source._views.append(weakref.ref(view))


def update_in_place(ctx: TraceContext, t: Tracer, node: int, what: str, *, through: Tracer | None = None) -> None:
    """`t` now holds the value of `node` (same shape and dtype as before). An update of
    a view writes through into the array it views, as NumPy's shared memory does."""
    o = t._origin
    if o is not None and o[0] == "view":
        base = o[1]
        chain = _chain(ctx, t._node, base._node) if ctx.versions.get(id(base), 0) == o[2] else None
        new_base = _write_through(ctx, base, chain, node) if chain is not None else None
        if new_base is None:
            raise ctx.refuse(f"{what} writes into a view that fuselab cannot map back onto the array it "
                             "views (NumPy would change that array too)",
                             "update a copy (v = v.copy()), or the array itself with an index (x[1:3] += 1)")
        update_in_place(ctx, base, new_base, what, through=t)
        t._origin = ("view", base, ctx.versions.get(id(base), 0))
        t._node = _replay(ctx, chain, base._node)
        ctx.versions[id(t)] = ctx.versions.get(id(t), 0) + 1
        return
    if t._views and any(r() is not None and r() is not through for r in t._views):
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


def _chain(ctx: TraceContext, node: int, base: int) -> list[int] | None:
    """The view nodes from `base` up to `node`, or None if `node` is not a view of it."""
    out = []
    while node != base:
        n = ctx.builder.nodes[node]
        if n.op not in ("slice", "reshape", "transpose", "broadcast_to"):
            return None
        out.append(node)
        node = n.inputs[0]
    return out[::-1]


def _replay(ctx: TraceContext, chain: list[int], root: int) -> int:
    """The same views, taken of another array of the same shape."""
    b, cur = ctx.builder, root
    for i in chain:
        n = ctx.builder.nodes[i]
        if n.op == "slice":
            cur = b.slice(cur, n.args["start"], n.args["step"], n.shape, n.loc)
        elif n.op == "reshape":
            cur = b.reshape(cur, n.shape, n.loc)
        elif n.op == "transpose":
            cur = b.transpose(cur, n.args["perm"], n.loc)
        else:
            cur = b.broadcast_to(cur, n.shape, n.loc)
    return cur


def _write_through(ctx: TraceContext, base: Tracer, chain: list[int], value: int) -> int | None:
    """The base array's new value when its view (`chain` of it) takes `value`: reshapes
    and transposes map every element back; a slice (basic indexing) is written into a
    copy of the base. Other views (broadcasts, slices of transposes) are not mapped."""
    b, loc = ctx.builder, ctx.loc()
    nodes = [ctx.builder.nodes[i] for i in chain]
    ops = [n.op for n in nodes]
    if all(op in ("reshape", "transpose") for op in ops):
        cur = value
        for n in reversed(nodes):
            src_shape = b.aval(n.inputs[0]).shape
            cur = b.reshape(cur, src_shape, loc) if n.op == "reshape" else \
                b.transpose(cur, tuple(int(p) for p in np.argsort(n.args["perm"])), loc)
        return cur
    if ops and ops[0] == "slice" and all(op == "reshape" for op in ops[1:]):
        sl = nodes[0]
        key = slice_key(sl.args["start"], sl.args["step"], sl.shape)

        def call(xp: Any, a: Any, v: Any) -> Any:
            out = a.copy()
            out[key] = v
            return out
        v = b.reshape(value, sl.shape, loc)
        return b.opaque(OpaqueFn("setitem", call), [base._node, v], base.aval, (), loc)
    return None
