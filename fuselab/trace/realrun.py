"""Running an operation as plain NumPy / CuPy in the middle of a trace: for what fuselab
does not trace (a function it has no rule for, an ndarray subclass operand, a call NumPy
rejects), the tracers' values are computed (a graph break) and the real function runs on
them, once, so its result, its errors and its side effects are exactly plain execution's.

The function gets the array objects plain execution would give it, writeable as they
are there: the user's own array where the tracer still is that array unchanged (so the
views it returns are real views of it, `np.require(a)` is `a`), else a private copy of
the tracer's value. What the function wrote into an argument (`out=`, `copy=False`,
`np.add.at`, `a.byteswap(inplace=True)`) is seen by comparing with the contents before,
and the tracer then holds the new contents (mutate.update_in_place), as NumPy's array
would. The user's arrays the function may change are remembered as they were, so that a
cell that fails leaves them unchanged (`restore_originals`).
"""
from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..dask.xp import is_dask_array
from ..interp import eval_node
from ..recording import library_line, recorded
from .aliases import aliasable, owner_of, view_steps
from .core import InputTracer, TraceContext, Tracer, handed_out, handed_out_alive, is_cupy_array, view_root
from .mutate import add_view, update_in_place, view_ops
from .values import plain_values, tracer_nodes, writeable  # noqa: F401  (re-exported)


# ---------------------------------------------------------------------------
# The arrays a real run gets, and what it did to them
# ---------------------------------------------------------------------------

@dataclass
class _Passed:
    tracer: Tracer
    array: Any      # the object the function got
    before: Any     # its contents before the call
    live: bool      # `array` is the user's own object (the tracer's input, unchanged so far)
    derived: bool = False   # a view taken of another tracer's passed array: its writes are that one's


def _live_array(ctx: TraceContext, t: Tracer) -> Any:
    """The user's array object when tracer `t` still reads it as it is (an input, or an
    input the trace made of it after a real run changed it), else None."""
    if not isinstance(t, InputTracer) or ctx.uses_dask or is_dask_array(t._array):
        return None
    node = t._node
    n = ctx.builder.nodes[node]
    if n.op != "input" or ctx.inputs.get(n.args["name"]) is not t._array:
        return None   # updated in the trace, or read in the other byte order
    return t._array


def _xp(a: Any) -> Any:
    return sys.modules["cupy"] if is_cupy_array(a) else np


def _same_bytes(a: Any, b: Any) -> bool:
    """Equal contents, bit for bit (NaNs and -0.0 included)."""
    xp = _xp(a)
    if a.shape != b.shape:   # (`a.resize(...)` in place)
        return False
    if a.dtype != b.dtype:
        b = b.astype(a.dtype)
    a8 = xp.ascontiguousarray(a).reshape(-1).view(xp.uint8)
    b8 = xp.ascontiguousarray(b).reshape(-1).view(xp.uint8)
    return _same_host_bytes(a8, b8) if xp is np else bool(xp.array_equal(a8, b8))


_PIECE = 1 << 17   # words of 8 bytes compared at once: 1 MiB


def _same_host_bytes(a8: np.ndarray, b8: np.ndarray) -> bool:
    """Two byte arrays equal, compared in 8-byte words, a MiB at a time: array_equal of
    the bytes themselves makes a bool per byte (five times slower: a held array of 128 MB
    compared before each traced read took 0.23 s), and a difference ends the loop."""
    n = a8.size - a8.size % 8
    a64, b64 = a8[:n].view(np.uint64), b8[:n].view(np.uint64)
    for i in range(0, a64.size, _PIECE):
        if not np.array_equal(a64[i:i + _PIECE], b64[i:i + _PIECE]):
            return False
    return bool(np.array_equal(a8[n:], b8[n:]))


def _originals(ctx: TraceContext) -> dict[int, tuple[Any, Any]]:
    """id(user's array) -> (the array, its contents before the cell's first real run on it)."""
    return ctx.__dict__.setdefault("_realrun_originals", {})


def restore_originals(ctx: TraceContext) -> None:
    """The cell failed: the user's arrays that real runs (or the user's writes into the
    views they returned) may have changed get their contents back ("no variable changed")."""
    for arr, before in _originals(ctx).values():
        if arr.shape != before.shape:   # (`a.resize(...)` ran for real on it, or `a.shape = ...`)
            if isinstance(arr, np.ndarray):
                arr.resize(before.shape, refcheck=False)
            else:   # (a CuPy array has no resize: only `.shape = ...` of a contiguous one reaches here)
                arr.shape = before.shape
        arr[...] = before
    for arr, flag in ctx.__dict__.get("_flag_originals", {}).values():   # (`x.flags.writeable = False`)
        arr.flags.writeable = flag
    forget_originals(ctx)


def itself(ctx: TraceContext) -> dict[int, Any]:
    """id(tracer) -> a weak reference to the InputTracer of the array object the tracer's
    array is (a copy a real run made for it, whose views the run returned): bound as that
    object, not a view of it. (Weak: a tracer held here would look like one the cell left
    in a container of its own, bind.find_holders.)"""
    return ctx.__dict__.setdefault("_realrun_itself", {})


def forget_originals(ctx: TraceContext) -> None:
    """The cell's bindings are done (or undone): the contents kept are not needed."""
    _originals(ctx).clear()
    ctx.__dict__.pop("_flag_originals", None)


# the largest computed array a view passed alone is given as a view of (see _view_of_own_copy)
_OWN_COPY_BYTES = 1 << 20


class _RealCall:
    """One real run: the objects given for tracers, and what became of them."""

    def __init__(self, ctx: TraceContext) -> None:
        self.ctx = ctx
        self.passed: dict[int, _Passed] = {}   # id(tracer) -> what its array was
        self.roots: dict[int, tuple[Tracer, tuple]] = {}   # id(view tracer) -> (its root, the view ops)

    def share(self, *values: Any) -> None:
        """Before the call: the user's arrays that `values` are (or view) get the contents
        the trace gave them (`_materialize`); and tracers among `values` that are views of
        one same array (`top = M[0]` and `M`, or `M[0]` and `M[:, -1]`) are given as views
        of one object, so that a function that asks about memory (`np.shares_memory(top,
        M)`) or writes through one sees it in the other, as in NumPy; each alone is given
        as before."""
        found: list[Tracer] = []
        _collect(values, found)
        for t in found:
            root = view_root(t)
            if root is not None:
                self._materialize(root)
        by_root: dict[int, list[tuple[Tracer, Tracer, tuple]]] = {}
        for t in {id(t): t for t in found}.values():
            root, chain = _views_from_root(self.ctx, t)
            if root is not None:
                by_root.setdefault(id(root), []).append((t, root, chain))
        for group in by_root.values():
            if len({id(t) for t, _, _ in group}) < 2 and not self._view_of_own_copy(*group[0]):
                continue
            for t, root, chain in group:
                if t is not root:
                    self.roots[id(t)] = (root, chain)

    def _view_of_own_copy(self, t: Tracer, root: Tracer, chain: tuple) -> bool:
        """Is t, passed alone, a view of an array the cell computed (`a = np.arange(9.).reshape(3,
        3)`: a view of the arange)? It is given as that view of the array's copy, so that a
        view the function returns (`np.diag(a)`, `a.diagonal()`, `np.split(a, 2)`) views
        memory the trace then follows (settle: the copy becomes the array's own), and the
        cell's later writes into `a` show through it as in NumPy, rather than being refused.
        Not where the array is the user's (given as it is, or views of it, by `_array`), nor
        for arrays over _OWN_COPY_BYTES: each such call copies the whole array, which a loop
        over rows (`f(x[i])` for every i) must not pay."""
        if t is root or not chain or isinstance(root, InputTracer) or root._scalar:
            return False
        if root._origin is not None and root._origin[0] != "copy":
            return False
        return self.ctx.builder.nodes[root._node].aval.nbytes <= _OWN_COPY_BYTES

    def _materialize(self, t: InputTracer) -> None:
        """The user's array that the trace updated in place (`M += 1`), not yet in its
        memory, gets the traced contents now, and t reads it again (as it is): the function
        then gets the user's own array (or views of it), so that the views it returns are
        views of the user's array (`np.diag(M)`, `np.split(M, 2)`, whose writes show in M)
        as in NumPy, not of a private copy. The contents before are kept: the trace's
        earlier reads keep them, and a cell that fails gets them back."""
        ctx = self.ctx
        arr = t._array
        if ctx.uses_dask or _live_array(ctx, t) is not None or not isinstance(arr, np.ndarray) \
                or not arr.flags.writeable or handed_out_alive(t) or id(t) in self.passed:
            return
        v = ctx.evaluator.value(t._node)
        if getattr(v, "shape", None) != arr.shape or v.dtype != arr.dtype:
            return   # (`x.shape = ...`, another byte order: the private copy, as before)
        _originals(ctx).setdefault(id(arr), (arr, arr.copy()))
        before = arr.copy()
        arr[...] = v
        # (the input node the trace read the array by so far reads its contents before)
        old = ctx._input_by_id.pop(id(arr), None)
        if old is not None:
            ctx.inputs[ctx.builder.nodes[old].args["name"]] = before
            if ctx.evaluator.has(old):
                ctx.evaluator.set(old, before)
        update_in_place(ctx, t, ctx.input_for(arr, t._name), "a real run's argument")

    def give(self, value: Any) -> Any:
        """`value` with each tracer replaced by the array object plain execution has there
        (one object per tracer, however often it is passed)."""
        if isinstance(value, Tracer):
            return self._array(value)
        if type(value) in (list, tuple):
            return type(value)(self.give(v) for v in value)
        if type(value) is dict:
            return {k: self.give(v) for k, v in value.items()}
        return value

    def _array(self, t: Tracer) -> Any:
        p = self.passed.get(id(t))
        if p is not None:
            return p.array
        ctx = self.ctx
        if id(t) in self.roots and not t._scalar:
            root, chain = self.roots[id(t)]
            arr = self._array(root)
            for n in chain:
                arr = eval_node(_xp(arr), n, [arr])
            self.passed[id(t)] = _Passed(t, arr, arr, False, derived=True)
            return arr
        v = ctx.evaluator.value(t._node)
        if t._scalar:
            return v[()]
        if is_dask_array(v) or not hasattr(v, "copy"):
            return v   # lazy Dask arrays are never written into
        live = _live_array(ctx, t)
        if live is not None:
            arr, before = live, live.copy()
            _originals(ctx).setdefault(id(arr), (arr, before))
        elif (user := _view_of_user_array(ctx, v)) is not None and v.dtype == t.dtype and \
                _views_user_array(t, user):
            # a view of the user's array (`a[1:]`): that view, as NumPy gives it (shares_memory)
            _originals(ctx).setdefault(id(user), (user, user.copy()))
            arr, before = v, v.copy()
        else:
            arr, before = v.astype(t.dtype, copy=True), v
            if isinstance(arr, np.ndarray):
                arr.flags.writeable = writeable(ctx, t)   # a read-only array stays read-only
        self.passed[id(t)] = _Passed(t, arr, before, live is not None)
        return arr

    def settle(self, out: Any, what: str) -> Any:
        """After the call: tracers whose arrays the function wrote into hold the new
        contents; a non-view tracer whose copy the result views becomes that copy (so a
        write through the view shows in it); arrays of ours in the result are the tracers."""
        ctx = self.ctx
        for p in self.passed.values():
            t = p.tracer
            if p.derived:
                continue   # (a write through it changed its root's array: updated there)
            if not _same_bytes(p.before, p.array):
                if p.live:
                    update_in_place(ctx, t, _reread(ctx, t, p.before), what)
                else:
                    update_in_place(ctx, t, ctx.input_for(_native(p.array)), what)
            elif not p.live and (t._origin is None or t._origin[0] == "copy") and \
                    not isinstance(t, InputTracer) and _views_of(out, p.array):
                # (a copy too, `t = a.copy()`: its node is a's, its array the one made here)
                # the result views the copy made for t (`a = m * 2; d = a.diagonal()`): that
                # copy becomes t's array object, traced (an input the trace follows the views
                # of), and t the whole of it, so that t's later updates show through the
                # views the function returned (wrapped below), and theirs in t
                owner = ctx.tracer_for(p.array)
                update_in_place(ctx, t, owner.input_node, what)
                t._origin = ("view", owner, ctx.versions.get(id(owner), 0), ())
                add_view(owner, t)
                itself(ctx)[id(t)] = weakref.ref(owner)
        mine = {id(p.array): p.tracer for p in self.passed.values()}
        memories = ctx.aliases.memories

        def back(v: Any) -> Any:
            if id(v) in mine:
                return mine[id(v)]
            if type(v) in (list, tuple):
                return type(v)(back(e) for e in v)
            if not aliasable(v):
                return v
            m = memories.get(id(owner_of(v)))
            if m is not None and view_steps(m.owner, v) is not None:
                # a view of an array the trace follows (`m.diagonal()`, `np.split(x, 2)`,
                # `np.rot90(m)` of the user's `m`, of a copy made for a tracer above):
                # traced as that view of it (aliases.py), so the cell's later writes into
                # the memory show through it, and its writes in the array, as in NumPy
                return ctx.tracer_for(v)
            for p in self.passed.values():
                if type(p.array) is type(v) and _xp(v).may_share_memory(v, p.array):
                    # a view no view ops express (np.lib.stride_tricks' windows) or in
                    # another dtype (`a.view(np.uint32)`): computed with as the plain array
                    # it is, and a later update of the array it views is refused while it
                    # lives (NumPy would show the update through it)
                    handed_out(itself_or(ctx, p.tracer), v)
            return v
        try:
            return back(out)
        finally:
            # back refers to itself through its closure: a reference cycle that kept this
            # call, and the tracers in `passed` and `roots`, alive until the garbage
            # collector ran, and find_holders (bind.py) took them for holders of the
            # tracers (a name bound or not by the collector's timing)
            back = None  # noqa: F841


def _collect(value: Any, out: list[Tracer]) -> None:
    if isinstance(value, Tracer):
        out.append(value)
    elif type(value) in (list, tuple):
        for v in value:
            _collect(v, out)
    elif type(value) is dict:
        for v in value.values():
            _collect(v, out)


def _views_from_root(ctx: TraceContext, t: Tracer) -> tuple[Tracer | None, tuple]:
    """The array t is a view of (through views, each still current: any tracer, where
    core.view_root gives only the user's input array) and the view ops that make t of
    it; (None, ()) where a step is not one the graph expresses."""
    chain: tuple = ()
    while t._origin is not None and t._origin[0] == "view" and ctx.versions.get(id(t._origin[1]), 0) == t._origin[2]:
        base = t._origin[1]
        ops = view_ops(ctx, t, base)
        if ops is None:
            return None, ()
        chain = tuple(ops) + chain
        t = base
    return t, chain


def itself_or(ctx: TraceContext, t: Tracer) -> Tracer:
    """The InputTracer of the array object t's array is (see `itself`), else t."""
    ref = itself(ctx).get(id(t))
    owner = ref() if ref is not None else None
    return owner if owner is not None else t


def _views_user_array(t: Tracer, user: Any) -> bool:
    """Is t, in the cell's meaning, a view of the user's array `user`? Its value may
    view that array where NumPy's does not: a copy of an input (`a = M.copy()`) is the
    input's node in the graph, so `a[2]`'s value views M; a write through it (`np.add.at(a[2],
    ...)`) must go to a private copy, not into the user's M."""
    root = view_root(t)
    return root is not None and root._array is user


def _view_of_user_array(ctx: TraceContext, v: Any) -> Any:
    """The user's array (read live by the trace) that the value `v` is a view of, or None."""
    objs = {id(ctx.inputs.get(ctx.builder.nodes[n].args["name"])): o for n, o in ctx.input_objects.items()}
    def array(a: Any) -> bool:   # (CuPy's views have a base too)
        return isinstance(a, np.ndarray) or is_cupy_array(a)
    # (v itself first: a view of the whole array in its own shape, `a.ravel()` of 1-D or
    # `a[::1]`, is the input's own node, whose value is the user's array)
    base = v
    while array(base):
        if id(base) in objs and objs[id(base)] is base:
            return base
        base = base.base
    # a view of a user's array that is itself a view (`a = m[::-1]`; `a[::-1]`): NumPy's
    # views name the array that owns the memory as their base, never `a`
    owner = v.base if array(v) else None
    for u in objs.values():
        if owner is not None and array(u) and u.base is owner and type(u) is type(v) and \
                _xp(v).may_share_memory(u, v):
            return u
    return None


def _native(a: Any) -> Any:
    return a if a.dtype.byteorder in "=|" else a.astype(a.dtype.newbyteorder("="))


def _reread(ctx: TraceContext, t: InputTracer, before: Any) -> int:
    """A real run changed the user's array in place: what the trace read of it so far
    keeps the contents before (their input node now reads a copy of them), and a new
    input node reads the array as it is now."""
    b = ctx.builder
    old = t._node
    ctx.inputs[b.nodes[old].args["name"]] = before
    if ctx.evaluator.has(old):
        ctx.evaluator.set(old, before)
    ctx._input_by_id.pop(id(t._array), None)
    return ctx.input_for(t._array, t._name)


def _views_of(out: Any, arr: Any) -> bool:
    """Does `out` hold an array that is `arr` or a view of its memory?"""
    if type(out) in (list, tuple):
        return any(_views_of(e, arr) for e in out)
    if type(out) is dict:
        return any(_views_of(e, arr) for e in out.values())
    base = out
    while isinstance(base, np.ndarray) or is_cupy_array(base):   # (arrays only: other `.base`s may cycle)
        if base is arr:
            return True
        base = base.base
    # (np.lib.stride_tricks.as_strided's views have a stand-in object as their base)
    return type(out) is type(arr) and base is not None and bool(_xp(arr).may_share_memory(out, arr))


def run_for_real(ctx: TraceContext, name: str, fn: Callable[..., Any], args: Sequence[Any],
                 kwargs: Mapping[str, Any], why: str = "") -> Any:
    """`fn(*args, **kwargs)` as plain NumPy / CuPy on the tracers' values (NumPy's or
    CuPy's, as the cell's values are), at a graph break. `fn` is the function the
    user's code called (cupy.nanmax in a CuPy cell), never a NumPy stand-in for it."""
    nodes = tracer_nodes((args, kwargs))
    if nodes:
        lib = "Dask" if ctx.uses_dask else "CuPy" if ctx.uses_cupy else "NumPy"  # (Dask's methods run on the fused plan's lazy value)
        ctx.need(nodes[0], why or f"`{name}` runs as plain {lib} here: fuselab does not trace it")
    call = _RealCall(ctx)
    call.share(args, kwargs)
    plain_args, plain_kwargs = call.give(list(args)), call.give(dict(kwargs))
    # Its warnings belong to the user's line, in order with the cell's other warnings
    # (raised here they would name this file); errors propagate as they are.
    caught: list = []
    try:
        with recorded() as caught:
            try:
                out = fn(*plain_args, **plain_kwargs)
            except BaseException:
                call.settle(None, name)   # (what it wrote before raising stays written, as in NumPy)
                raise
    finally:   # (those it gave before raising too: `np.mean(a, where=False, out=i8)` warns, then fails)
        for w in caught:  # the library's own warnings (CuPy's too): never fuselab's to drop
            ctx.library_warning(str(w.message), w.category, library_line(w))
    return call.settle(out, name)
