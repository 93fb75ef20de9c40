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

from ..interp import eval_node
from ..ir import Args, Node
from ..ops import Aval, OpaqueFn
from .core import InputTracer, TraceContext, Tracer, handed_out_alive, view_root, watch_view
from .operands import RunForReal
from .values import plain_values, writeable


# The real and imaginary parts of a complex array are views of its memory in NumPy (and
# CuPy): the graph has no view op for them, so they are opaque nodes of these two
# functions (by identity), which the view machinery below treats as view ops.
PART_VIEWS: dict[str, OpaqueFn] = {
    "real": OpaqueFn("real", lambda xp, a: a.real),
    "imag": OpaqueFn("imag", lambda xp, a: a.imag),
}


def is_part_view(n: Node) -> bool:
    """Whether node `n` is the real or imaginary part of a complex array (a view)."""
    return n.op == "opaque" and any(n.args["fn"] is f for f in PART_VIEWS.values())


def add_view(source: Tracer, view: Tracer) -> None:
    """Remember that `view` shares `source`'s memory (an update of `source` would show)."""
    if source._views is None:
        source._views = []
    source._views.append(weakref.ref(view))
    held = source._ctx.held
    if held is not None and _held_root(source):
        watch_view(view)   # (its reads check the memory first: held.py)


def _held_root(t: Tracer) -> bool:
    root = view_root(t)
    return root is not None and root._ctx.held.holds(root._array)


def update_in_place(ctx: TraceContext, t: Tracer, node: int, what: str, *, through: Tracer | None = None) -> None:
    """`t` now holds the value of `node` (same shape and dtype as before). As NumPy's
    shared memory would: an update of a view writes through into the array it views, and
    the other live views of an updated array (`x.T`, `x[1:]`) see the new values."""
    if not writeable(ctx, t):   # (np.broadcast_to's view: NumPy refuses the write)
        raise ValueError("assignment destination is read-only")
    o = t._origin
    if o is not None and o[0] == "view":
        if handed_out_alive(t):
            raise _handed_refusal(ctx, what)
        base = o[1]
        chain = view_ops(ctx, t, base) if ctx.versions.get(id(base), 0) == o[2] else None
        new_base = _write_through(ctx, base, chain, node) if chain is not None else None
        if new_base is None:
            raise ctx.refuse(f"{what} writes into a view that fuselab cannot map back onto the array it "
                             "views (NumPy would change that array too)",
                             "update a copy (v = v.copy()), or the array itself with an index (x[1:3] += 1)")
        # the view's own live views see the update too (`w = v[0]; v += 1`; and, where the
        # view is updated through one of its views, that view's siblings: `a, b = x[:2]; b *= 2`)
        stale = _live_views(ctx, t, skip=through)
        update_in_place(ctx, base, new_base, what, through=t)
        _refresh(ctx, t, base, chain)
        for view, parent, ch in stale:   # parents come before their own views
            _refresh(ctx, view, parent, ch)
        return
    stale = _live_views(ctx, t, skip=through)
    if handed_out_alive(t) or any(handed_out_alive(v) for v, _, _ in stale):
        raise _handed_refusal(ctx, what)
    if isinstance(t, InputTracer):
        flags = getattr(t._array, "flags", None)
        if flags is not None and not getattr(flags, "writeable", True):  # CuPy's flags have no writeable
            raise ValueError("assignment destination is read-only")
    held = ctx.held
    written = held is not None and isinstance(t, InputTracer) and t._alias is None and held.holds(t._array)
    if written:   # another object holds the array: written into it now, as NumPy does (held.py)
        node = held.write(t, node, what)
    t._origin = None  # no longer a copy of anything: its value is its own
    ctx.versions[id(t)] = ctx.versions.get(id(t), 0) + 1
    t._node = node
    if written:
        object.__setattr__(t, "_input", node)   # (the array holds it: nothing to write back)
    for view, parent, chain in stale:  # parents come before their own views
        _refresh(ctx, view, parent, chain)


def _handed_refusal(ctx: TraceContext, what: str) -> BaseException:
    return ctx.refuse(f"{what} changes an array that a plain NumPy array outside the trace may still view "
                      "(a window of np.lib.stride_tricks, a view in another dtype, `.flat`, `.data` or a "
                      "memoryview, a library's own view of it): NumPy would show the change through it, which "
                      "%%fuse cannot follow",
                      "update a copy (x = x.copy()), or take that view after the update")


def view_ops(ctx: TraceContext, view: Tracer, base: Tracer) -> tuple[Node, ...] | None:
    """The view nodes that make `view` from `base`: recorded when the view was refreshed
    after an update (the builder may fold a reshape of a reshape), else read off the graph."""
    o = view._origin
    if o is not None and len(o) > 3 and o[1] is base:
        return o[3]
    chain = _chain(ctx, view._node, base._node)
    if chain is None and _folded_reshape(ctx, view._node, base._node):
        # the builder folded a reshape of a reshape (`w = u8[None]; w[-1]` is u8's node
        # again): relative to its parent the view is that reshape
        return (Node("reshape", (base._node,), Args.of(shape=view.aval.shape), view.aval),)
    return None if chain is None else tuple(ctx.builder.nodes[i] for i in chain)


def _folded_reshape(ctx: TraceContext, node: int, base: int) -> bool:
    """Whether `node` and `base` are reshapes of one same array (a node, or a reshape of
    it), which the builder folds into one."""
    nodes = ctx.builder.nodes

    def root(i: int) -> int:
        return nodes[i].inputs[0] if nodes[i].op == "reshape" else i
    return root(node) == root(base) and nodes[node].aval.size == nodes[base].aval.size


def _refresh(ctx: TraceContext, view: Tracer, base: Tracer, chain: tuple[Node, ...]) -> None:
    """`view` is again the same view of its (updated) base; the binding repeats its ops."""
    view._origin = ("view", base, ctx.versions.get(id(base), 0), chain)
    view._node = _replay(ctx, chain, base._node)
    ctx.versions[id(view)] = ctx.versions.get(id(view), 0) + 1


def _live_views(ctx: TraceContext, t: Tracer, skip: Tracer | None) -> list[tuple[Tracer, Tracer, tuple[Node, ...]]]:
    """The live views of t (and of those, recursively) with their view ops, or a
    refusal when one of them is not a view fuselab can take again."""
    out: list[tuple[Tracer, Tracer, tuple[Node, ...]]] = []
    todo = [t]
    while todo:
        parent = todo.pop(0)
        for r in parent._views or ():
            view = r()
            if view is None or view is skip or view._origin is None or view._origin[1] is not parent:
                continue
            chain = view_ops(ctx, view, parent)
            if chain is None:
                raise ctx.refuse("this update changes an array whose views are still in use, and one of them "
                                 "is not a view fuselab can take again", "take the views after the update, "
                                 "or update a copy")
            out.append((view, parent, chain))
            todo.append(view)
    return out


def writer(path: str) -> Callable[..., Any]:
    """A handler for a NumPy / CuPy function that writes into its first argument
    (np.copyto, np.put, np.random.shuffle...): the function the user called (`fn`)
    runs once on a copy of the value, and the tracer takes the updated value."""
    def handler(ctx: TraceContext, fn: Callable[..., Any], target: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(target, Tracer) or target._scalar:
            raise RunForReal(target)   # (a NumPy scalar: NumPy's TypeError, `dst` must be an array)
        def run(arr: Any) -> Any:
            # the target passed again (`np.place(a, a > 0, a)`) is the array written into,
            # as in NumPy, which reads it there as the call changes it; but a target that
            # is not C-contiguous NumPy writes through a C-ordered copy (WRITEBACKIFCOPY)
            # and reads its values from another copy, taken before any write
            original = ctx.evaluator.value(target._node)
            snapshot = not ctx.uses_cupy and not getattr(getattr(original, "flags", None), "c_contiguous", True)

            def given(v: Any) -> Any:
                if v is target:
                    return arr.copy() if snapshot else arr
                return plain_values(ctx, v)
            return fn(arr, *[given(v) for v in args], **{k: given(v) for k, v in kwargs.items()})
        update_for_real(ctx, target, f"np.{path}", run)
        return None
    return handler


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
        if n.op not in ("slice", "reshape", "transpose", "broadcast_to") and not is_part_view(n):
            return None
        out.append(node)
        node = n.inputs[0]
    return out[::-1]


def _replay(ctx: TraceContext, chain: tuple[Node, ...], root: int) -> int:
    """The same views, taken of another array of the same shape."""
    b, cur = ctx.builder, root
    for n in chain:
        if n.op == "slice":
            cur = b.slice(cur, n.args["start"], n.args["step"], n.shape, n.loc)
        elif n.op == "reshape":
            cur = b.reshape(cur, n.shape, n.loc)
        elif n.op == "transpose":
            cur = b.transpose(cur, n.args["perm"], n.loc)
        elif is_part_view(n):
            cur = b.opaque(n.args["fn"], [cur], Aval(b.aval(cur).shape, n.aval.dtype), (), n.loc)
        else:
            cur = b.broadcast_to(cur, n.shape, n.loc)
    return cur


def _write_through(ctx: TraceContext, base: Tracer, chain: tuple[Node, ...], value: int) -> int | None:
    """The base array's new value when its view (`chain` of it) takes `value`, or None
    for views not mapped back (broadcasts, reshapes that would copy).

    As NumPy does it: a copy of the base with the value written through the same view
    ops, so the base keeps its layout (a reduction over it then adds in NumPy's order).
    A reshape that may copy instead of viewing only maps back by inverse reshapes and
    transposes of the whole value."""
    b, loc = ctx.builder, ctx.loc()
    ops = [n.op for n in chain]
    if not chain:   # a view of the whole array in its own shape (`v.T` of 1-D, `x[...]`, `x.view()`)
        return value
    if any(n.op not in ("slice", "reshape", "transpose") and not is_part_view(n) for n in chain):
        return None
    if all(n.op != "reshape" or k == 0 or _unit_dims_only(b.aval(n.inputs[0]).shape, n.shape)
           for k, n in enumerate(chain)):
        def call(xp: Any, a: Any, v: Any) -> Any:
            out = a.copy()
            w = out
            for n in chain:
                w = eval_node(xp, n, [w])
            w[...] = v
            return out
        return b.opaque(OpaqueFn("setitem", call), [base._node, value], base.aval, (), loc)
    if "slice" in ops or "opaque" in ops:
        return None
    cur = value
    for n in reversed(chain):
        src_shape = b.aval(n.inputs[0]).shape
        cur = b.reshape(cur, src_shape, loc) if n.op == "reshape" else \
            b.transpose(cur, tuple(int(p) for p in np.argsort(n.args["perm"])), loc)
    return cur


def _unit_dims_only(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """A reshape that only adds or removes dimensions of length 1 (always a view)."""
    return tuple(d for d in a if d != 1) == tuple(d for d in b if d != 1)
