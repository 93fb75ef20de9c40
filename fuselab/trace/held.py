"""The notebook's arrays that another object holds too (a list `L = [x]`, an attribute
`obj.a = x`, a function's default argument, a closure, a dict): plain Python reads and
writes them through that other reference while the cell runs, in the middle of the
cell's own traced code.

Which arrays are held elsewhere is decided once, at the very start of the trace, before
fuselab makes any object that refers to them: an array's reference count, less the
references that are accounted for (the namespace's names, IPython's output history and
display hook, the `.base` of the namespace's views, the locals of the frames that called
the trace, which the cell cannot reach), says whether anything else holds it. No garbage
collector scan. A memory is held when any array over it is (a view held by a list
writes into its base).

For those arrays only:

- a copy of the contents as the trace read them is kept; before each later traced read
  (of the array, or of a view of it the cell took), before values are computed at a
  graph break, and at the end of the trace, the array is compared with that copy, bit
  for bit; if code the trace does not see changed it (`L[0] += 1`), what was read before
  reads the copy, and a new input node reads the array as it is now;
- a traced in-place update (`x += 1`, `x[0] = 5`, through a view too) is computed at once
  (a graph break) and written into the array, as NumPy does, so that the other reference
  reads the new contents; the contents before are kept, so that a cell that fails leaves
  the array as it was (realrun.restore_originals).

Cells whose arrays nobody else holds are traced exactly as before."""
from __future__ import annotations

import inspect
import sys
import weakref
from typing import Any, Mapping

import numpy as np

from ..recording import in_fuselab
from . import core
from .core import InputTracer, TraceContext, Tracer, is_cupy_array, native, view_root

_OPTIMIZED = inspect.CO_OPTIMIZED


def _array(v: Any) -> bool:
    """A NumPy or CuPy array this applies to (the exact classes: a subclass's machinery
    may hold references of its own, which would count as another holder)."""
    t = type(v)
    return t is np.ndarray or (t.__name__ == "ndarray" and core.is_cupy_array(v))


# ---------------------------------------------------------------------------
# The decision, at the start of the trace
# ---------------------------------------------------------------------------

def _shell_values(namespace: Mapping[str, Any]) -> list[Any]:
    """Values IPython's shell holds outside the namespace: the display hook's `_`, `__`,
    `___` and the last cell's result (each one reference)."""
    gi = namespace.get("get_ipython")
    shell = getattr(gi, "__self__", None)
    if shell is None:
        return []
    out = []
    hook = getattr(shell, "displayhook", None)
    for k in ("_", "__", "___"):
        out.append(getattr(hook, k, None))
    last = getattr(shell, "last_execution_result", None)
    out.append(getattr(last, "result", None))
    current = getattr(hook, "exec_result", None)
    if current is not last:
        out.append(getattr(current, "result", None))
    return out


# fuselab's own objects that outlive their cell and reference the notebook's arrays (a
# traced cell's result keeps its inputs, for its session's later runs): those references
# are accounted for, or a cell after a fused one would take every array the first read
# for held by another object, and break at each in-place update of it
_OWNERS: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()   # id -> owner


def own(owner: Any) -> None:
    """Account for `owner.held_arrays()` (one reference each) while `owner` lives."""
    _OWNERS[id(owner)] = owner   # (by id: a dataclass with eq is not hashable)


def _accounted(namespace: Mapping[str, Any]) -> tuple[dict[int, Any], dict[int, int], set[int]]:
    """The arrays to judge (the namespace's and their bases), the references to each that
    are accounted for, and those whose memory is no array's (a foreign buffer)."""
    arrays: dict[int, Any] = {}
    refs: dict[int, int] = {}
    sources: list[Any] = [namespace.values()]
    out = namespace.get("Out")
    if type(out) is dict and out is not namespace:
        sources.append(out.values())
    for src in sources:
        for v in src:
            if _array(v):
                arrays[id(v)] = v
                refs[id(v)] = refs.get(id(v), 0) + 1
    for v in _shell_values(namespace):
        if _array(v) and id(v) in arrays:
            refs[id(v)] += 1
    for owner in list(_OWNERS.values()):
        for v in owner.held_arrays():
            if _array(v) and id(v) in arrays:
                refs[id(v)] += 1
    foreign: set[int] = set()
    todo = list(arrays.values())
    done: set[int] = set()
    while todo:
        a = todo.pop()
        if id(a) in done:
            continue
        done.add(id(a))
        b = a.base
        if _array(b):
            refs[id(b)] = refs.get(id(b), 0) + 1
            if id(b) not in arrays:
                arrays[id(b)] = b
                todo.append(b)
        elif b is not None:
            foreign.add(id(a))
    return arrays, refs, foreign


def _frame_references(suspects: dict[int, Any], start: Any) -> dict[int, int]:
    """References to `suspects` from the plain locals of the frames that called the trace
    (suspended while the cell runs: the cell cannot read them): two each, the frame's own
    and its f_locals dictionary's (Python 3.11 makes one when asked)."""
    found: dict[int, int] = {}
    f = start
    while f is not None:
        code = f.f_code
        if code.co_flags & _OPTIMIZED and not in_fuselab(code.co_filename):
            loc = f.f_locals
            cells = set(code.co_cellvars) | set(code.co_freevars)
            for name in code.co_varnames:
                if name in cells:
                    continue
                v = loc.get(name)
                if v is not None and id(v) in suspects and suspects[id(v)] is v:
                    found[id(v)] = found.get(id(v), 0) + (2 if sys.version_info < (3, 13) else 1)
            v = loc = None
        f = f.f_back
    return found


def held_elsewhere(namespace: Mapping[str, Any]) -> frozenset[int]:
    """ids of the namespace's arrays (and of the arrays their views are of) whose memory
    another object than the namespace holds too. A wrong "held" costs a graph break; a
    wrong "not held" a stale value: references not accounted for count as held."""
    arrays, refs, foreign = _accounted(namespace)
    if not arrays:
        return frozenset()
    # (the `arrays` dict and getrefcount's argument hold one each)
    extra = {i: sys.getrefcount(arrays[i]) - 2 - refs[i] for i in list(arrays)}
    suspects = {i: arrays[i] for i, n in extra.items() if n > 0}
    if suspects:
        # (counted again after the frames' f_locals are fresh: a stale one may hold a
        # list the function deleted since)
        framed = _frame_references(suspects, sys._getframe(1))
        suspects.clear()
        for i in list(extra):
            if extra[i] > 0:
                extra[i] = sys.getrefcount(arrays[i]) - 2 - refs[i] - framed.get(i, 0)

    def owner(a: Any) -> Any:
        while _array(a.base):
            a = a.base
        return a
    held_owners = {id(owner(arrays[i])) for i, n in extra.items() if n > 0 or i in foreign}
    return frozenset(i for i in arrays if id(owner(arrays[i])) in held_owners)


# ---------------------------------------------------------------------------
# During the trace
# ---------------------------------------------------------------------------

def foreign_operand(ctx: TraceContext, arr: Any) -> None:
    """A plain NumPy (or CuPy) array the cell computes with that is none of the namespace's (the
    cell reached it through `dd['w']`, `obj.w`, a call's result): something else holds
    it by definition, and the cell may write it untraced after the trace read it
    (`r = dd['w'] * x; dd['w'][:] = 5`: the deferred kernels would read the 5s). It is
    judged held from its first traced read on: its contents as read are kept."""
    if not _array(arr) or id(arr) in ctx._tracer_by_id or id(arr) in ctx._names_by_id:
        return
    if ctx.held is None:
        ctx.held = Held(ctx, frozenset())
    ctx.held.ids = ctx.held.ids | {id(arr)}


def _here(ctx: TraceContext) -> tuple[int, int, int, int]:
    """Where the program is: nodes traced so far, operations that gave an existing node,
    and the innermost frame outside fuselab (its position changes whenever any Python
    code runs there). The shared operations count because a loop's second pass may
    trace nothing new (the builder shares `x.sum()` with the first pass's) while it
    stands at the same instruction: `if i == 2: L[0][0] = 1` between the two reads
    would go unseen."""
    f = sys._getframe(2)
    while f is not None and in_fuselab(f.f_code.co_filename):
        f = f.f_back
    return (len(ctx.builder.nodes), ctx.shared_asks, id(f), f.f_lasti if f is not None else -1)


def _same_bytes(a: Any, b: Any) -> bool:
    from .realrun import _same_bytes as same
    return same(a, b)


class Held:
    """The held arrays of one trace (TraceContext.held), and their contents as read."""

    def __init__(self, ctx: TraceContext, ids: frozenset[int]) -> None:
        self.ctx = ctx
        self.ids = ids
        # id(array) -> [its contents when its current input node was made, that node, where checked]
        self.copies: dict[int, list[Any]] = {}
        self.busy = False
        ctx.evaluator.before = self.check_all

    def holds(self, arr: Any) -> bool:
        return id(arr) in self.ids

    # -- reads ------------------------------------------------------------------
    def read(self, arr: Any, node: int) -> None:
        """A new input node of a held array (it reads the array): its contents now are kept."""
        dt = native(np.dtype(arr.dtype))
        self.copies[id(arr)] = [arr.copy() if arr.dtype == dt else arr.astype(dt), node, None]

    def before_read(self, t: Tracer) -> None:
        """A traced read of `t`, a held array or a view of one: if code the trace does not
        see changed the array since it was read, the trace reads it again."""
        root = view_root(t)
        if root is not None and id(root._array) in self.copies:
            self._check(root, _here(self.ctx))

    def check_all(self) -> None:
        """Before values are computed (a graph break): what was read of a held array that
        changed since is its contents as read."""
        if self.busy or not self.copies:
            return
        here = _here(self.ctx)
        for i in list(self.copies):
            root = self.ctx._tracer_by_id.get(i)
            if root is not None and object.__getattribute__(root, "_alias") is None:
                self._check(root, here)

    def _check(self, root: InputTracer, here: tuple[int, int, int, int]) -> None:
        c = self.copies[id(root._array)]
        if c[2] == here:
            return
        c[2] = here
        if not _same_bytes(root._array, c[0]):
            self.changed(root)

    def _keep_as_read(self, arr: Any) -> None:
        """The input node of `arr` reads the contents it had when it was made (a copy)."""
        ctx = self.ctx
        copy, node, _ = self.copies.pop(id(arr))
        ctx.inputs[ctx.builder.nodes[node].args["name"]] = copy
        values = ctx.evaluator.values
        xp = sys.modules["cupy"] if is_cupy_array(arr) else np
        for i in [i for i, v in values.items() if type(v) is type(arr) and xp.may_share_memory(v, arr)]:
            del values[i]   # (a view of the array, computed from it: computed again from the copy)
        ctx._input_by_id.pop(id(arr), None)

    def changed(self, root: InputTracer) -> None:
        """`root`'s array was changed behind the trace's back: what was read of it keeps
        the contents as read, a new input node reads it as it is, and the views of it
        the cell took see that."""
        from .mutate import _live_views, _refresh
        ctx = self.ctx
        self.busy = True
        try:
            arr = root._array
            stale = _live_views(ctx, root, skip=None)
            self._keep_as_read(arr)
            node = ctx.input_for(arr, root._name)
            ctx.versions[id(root)] = ctx.versions.get(id(root), 0) + 1
            object.__setattr__(root, "_input", node)
            object.__setattr__(root, "_cur", None)
            for view, parent, chain in stale:   # parents come before their own views
                _refresh(ctx, view, parent, chain)
        finally:
            self.busy = False

    def settle(self) -> None:
        """The end of the trace: arrays changed after their last traced read are read
        again (the graph then reads their contents at the end, which stay)."""
        for i in list(self.copies):
            root = self.ctx._tracer_by_id.get(i)
            if root is not None and object.__getattribute__(root, "_alias") is None and \
                    not _same_bytes(root._array, self.copies[i][0]):
                self.changed(root)

    # -- writes -----------------------------------------------------------------
    def write(self, t: InputTracer, node: int, what: str) -> int:
        """A traced in-place update of held `t` to the value of `node`: computed now and
        written into the array, as NumPy does; returns the node that reads it after."""
        from .realrun import _originals
        ctx, arr = self.ctx, t._array
        n = ctx.builder.nodes[node]
        if n.op == "input" and ctx.input_objects.get(node) is arr:
            return node   # a real run wrote the array itself (realrun._reread): read as it is
        reason = (f"{what} changes an array that another object (a list, an attribute, a default "
                  "argument...) holds too: NumPy's array changes here, so the new value is computed "
                  "and written into it")
        value = ctx.break_for(node, reason, "copy the array first (x = x.copy()) if the other reference "
                              "need not see the update, or drop --fullgraph")
        _originals(ctx).setdefault(id(arr), (arr, arr.copy()))
        if id(arr) in self.copies:
            self._keep_as_read(arr)
        if tuple(arr.shape) != tuple(value.shape):   # (`x.shape = ...` earlier in the cell, as NumPy did)
            try:
                arr.shape = value.shape
            except (AttributeError, ValueError):
                raise ctx.refuse(f"{what} changes an array that another object holds too, after the cell "
                                 "gave it a shape its memory cannot take in place", "copy it first "
                                 "(x = x.copy()), or run this cell without %%fuse") from None
            ctx.__dict__.setdefault("_new_shapes", {})[id(arr)] = (arr, tuple(value.shape))
        if is_cupy_array(arr) and isinstance(value, np.ndarray):   # (a value NumPy computed: a host scalar)
            value = sys.modules["cupy"].asarray(value)
        arr[...] = value
        ctx._input_by_id.pop(id(arr), None)
        return ctx.input_for(arr, t._name)


