"""After a traced cell: which names it binds, with what values, and where tracers ended up.

Plain execution is the rule. Every name the cell binds is bound to the value plain Python
gives it, except pure intermediates (new names whose arrays are only read by later array
operations), which may be fused away and are listed. Each tracer stands for one array
object, so aliases stay aliases; views of the user's arrays are real views of them,
copies real copies; NumPy scalars where NumPy gives scalars. A tracer that the cell left
anywhere else (a list, a dict, a deque, an object's attribute or slot, a closure, a
function's defaults, a functools.partial, a bound method, a suspended generator's locals)
is found through the garbage collector's referrers and replaced by its value; where it
cannot be replaced, the cell is refused with the namespace untouched.
"""
from __future__ import annotations

import ctypes
import functools
import gc
import re
import sys
import types
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, MutableMapping

import numpy as np

from ..errors import TraceError
from ..interp import eval_node
from .cellinfo import LAST_VALUE, CellInfo
from ..dask.xp import is_dask_array
from .core import InputTracer, TraceContext, Tracer, dask_lazy, is_cupy_array, origin_of
from .foreign import Adopted
from .layout import with_order
from .modules import untraced, with_globals
from .realrun import forget_originals, itself, restore_originals
from .values import TracedFlags, flag_set

_VIEW_OPS = frozenset({"transpose", "slice", "reshape", "broadcast_to"})
# holders rebuilt rather than changed (immutable), put where their own holders had them
# (a bound method of a tracer, `f = x.sum`: the array's own method, as plain Python has it)
_REBUILT = (tuple, frozenset, slice, TracedFlags, types.MethodType)
_CONTAINERS = (list, dict, set, deque)


def _xp(value: Any) -> Any:
    if is_dask_array(value):
        from ..dask.xp import dask_xp
        return dask_xp()
    return sys.modules["cupy"] if is_cupy_array(value) else np


# ---------------------------------------------------------------------------
# Where did tracers go?
# ---------------------------------------------------------------------------

def _live_tracers(ctx: TraceContext) -> list[Tracer]:
    return [t for t in (r() for r in ctx.tracers) if t is not None]


def find_holders(ctx: TraceContext, ns: Mapping[str, Any], *ours: Any) -> tuple[list[Any], list[str]]:
    """Objects other than the traced namespace that hold tracers (lists, dicts, sets,
    tuples, closure cells, objects), and a description of each holder fuselab cannot
    update. Cheap when tracers are held by the namespace only (the usual cell): a
    reference count shows it, and the garbage collector is not asked. `ours` are other
    dicts of fuselab's own that hold tracers (the namespace before the cell)."""
    live = _live_tracers(ctx)
    # (counted in comprehensions: a loop variable would hold a reference of its own)
    known: Counter[int] = Counter(id(v) for d in (ns, *ours) for v in d.values() if isinstance(v, Tracer))
    # (origin_of: an array of the user's that would be a view of another's once read stays unread)
    origins = [o for o in map(origin_of, live) if o is not None]
    known.update(id(o[1]) for o in origins)
    known.update(id(t) for t in ctx._tracer_by_id.values())
    internal: set[int] = {id(ns), id(ctx._tracer_by_id), id(live), *(id(o) for o in ours),
                          *(id(o) for o in origins), id(origins)}
    # getrefcount's argument, the `live` list and the comprehension's `t` hold one each
    suspects = [t for t in live if sys.getrefcount(t) - 3 > known[id(t)]]
    internal.add(id(suspects))
    if not suspects:
        return [], []
    holders: list[Any] = []
    refused: list[str] = []
    seen: set[int] = set()
    todo: list[Any] = list(suspects)
    while todo:
        batch, todo = todo, []
        internal.add(id(batch))
        for r in gc.get_referrers(*batch):
            if id(r) in internal or id(r) in seen or isinstance(r, (types.FrameType, Tracer)):
                continue
            seen.add(id(r))
            if isinstance(r, _CONTAINERS) or isinstance(r, types.CellType):
                holders.append(r)
            elif isinstance(r, _REBUILT):
                holders.append(r)
                todo.append(r)  # rebuilt: whoever holds it gets the new one
            elif isinstance(r, types.GeneratorType) and r.gi_frame is not None:
                holders.append(r)   # a generator left suspended: its frame's locals are updated
            elif (hasattr(r, "__dict__") or _slot_names(type(r))) and not isinstance(r, (type, types.ModuleType)):
                holders.append(r)
            else:
                refused.append(type(r).__name__)
    del todo
    # NumPy's object arrays hold references the garbage collector does not report
    # (`oa = np.empty(2, dtype=object); oa[0] = x`): those the cell can reach hold too
    for v in _object_arrays([*(v for d in (ns, *ours) for v in d.values()), *holders]):
        if id(v) not in seen and any(isinstance(e, Tracer) for e in v.flat):
            seen.add(id(v))
            holders.append(v)
    return holders, refused


@functools.lru_cache(maxsize=None)
def _slot_names(cls: type) -> tuple[str, ...]:
    """The attributes `__slots__` give instances of cls (its own and its bases')."""
    names: list[str] = []
    for c in cls.__mro__:
        slots = c.__dict__.get("__slots__", ())
        for n in (slots,) if isinstance(slots, str) else slots:
            if n not in ("__dict__", "__weakref__") and n not in names:
                names.append(n)
    return tuple(names) if not issubclass(cls, (Tracer, TracedFlags)) else ()


def _slot_values(h: Any) -> dict[str, Any]:
    out = {}
    for n in _slot_names(type(h)):
        try:
            out[n] = getattr(h, n)
        except AttributeError:   # (an unset slot)
            pass
    return out


def _frame_locals(gen: types.GeneratorType) -> dict[str, Any]:
    return dict(gen.gi_frame.f_locals) if gen.gi_frame is not None else {}


def _set_frame_locals(gen: types.GeneratorType, changes: Mapping[str, Any]) -> None:
    """Rebind locals of a suspended generator's frame (its next step reads them)."""
    frame = gen.gi_frame
    loc = frame.f_locals
    for k, v in changes.items():
        loc[k] = v
    if sys.version_info < (3, 13):   # (from 3.13, f_locals writes through, PEP 667)
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))


def _object_arrays(values: list[Any], depth: int = 3) -> list[np.ndarray]:
    """The NumPy arrays of dtype object among `values` and inside their containers
    (lists, tuples, sets, dicts, object attributes, object arrays), a few levels deep."""
    out: list[np.ndarray] = []
    seen: set[int] = set()
    todo = [(v, 0) for v in values]
    while todo:
        v, d = todo.pop()
        if id(v) in seen or isinstance(v, (Tracer, str, bytes, int, float, types.ModuleType, type)):
            continue
        seen.add(id(v))
        if type(v) is np.ndarray:
            if v.dtype == object:
                out.append(v)
                inner = list(v.flat) if v.size <= 100_000 else []
            else:
                continue
        elif isinstance(v, dict):
            inner = list(v.values())
        elif isinstance(v, (list, tuple, set, frozenset)):
            inner = list(v)
        else:
            inner = list(getattr(v, "__dict__", {}).values()) if not callable(v) else []
        if d < depth and len(inner) <= 100_000:   # (a long list of numbers is no place to look)
            todo.extend((e, d + 1) for e in inner)
    return out


# ---------------------------------------------------------------------------
# The plan of bindings
# ---------------------------------------------------------------------------

@dataclass
class Binder:
    """Everything needed to leave the namespace as plain execution would, once the
    run's outputs exist: `commit` applies it, `abandon` cleans up after a failure."""

    ctx: TraceContext
    tracing_ns: dict[str, Any]
    names: dict[str, Any]                      # name -> final value (tracers inside)
    deleted: tuple[str, ...]
    holders: list[Any]
    last: Any = None
    displays: bool = False
    outputs: dict[int, str] = field(default_factory=dict)       # id(tracer) -> graph output name
    tracers: dict[int, Tracer] = field(default_factory=dict)    # id(tracer) -> tracer needing a value
    bases: dict[int, Tracer] = field(default_factory=dict)      # id(tracer) -> what its object is made from

    # -- what needs a value ---------------------------------------------------
    def request(self, t: Tracer, name: str) -> None:
        """`t` will be bound (under `name`, or inside a container)."""
        if id(t) in self.tracers:
            return
        self.tracers[id(t)] = t
        if isinstance(t, InputTracer) and not t.mutated:
            return
        if isinstance(t, InputTracer):  # written back into the user's array
            self.outputs[id(t)] = name
            return
        src = self._derivable_from(t)
        if src is not None:
            self.bases[id(t)] = src
            self.request(src, name + "_base")
            return
        self.outputs[id(t)] = name

    def _derivable_from(self, t: Tracer) -> Tracer | None:
        """The tracer whose bound object t is made from (a view, or a copy of the user's
        array), as NumPy made it; None when t gets its own value from the run."""
        o = t._origin
        if o is None or self.ctx.versions.get(id(o[1]), 0) != o[2]:
            return None  # the source changed in place after: t keeps its own value
        if o[0] == "copy":   # of the user's array, or of a view of it (`be[1:].copy()` keeps '>f4')
            src = o[1]
            if dask_lazy(self.ctx, src):
                return None   # a Dask array has no layout to copy as NumPy would (nor copy(order=))
            return src if isinstance(src, InputTracer) or id(src) in self.tracers or \
                self._derivable_from(src) is not None else None
        if len(o) > 3:  # a view updated in place: its view ops are recorded
            src = o[1]
            ok = isinstance(src, InputTracer) or id(src) in self.tracers or self._derivable_from(src) is not None \
                or self._new_array(src)
            return src if ok else None
        a: Tracer | None = o[1]
        root: Tracer | None = None
        while a is not None:  # a view of a view ... of the user's array, or of a bound one
            if (isinstance(a, InputTracer) or id(a) in self.tracers) and \
                    self._view_chain(t._node, a._node) is not None:
                return a
            root = a
            ao = a._origin
            a = ao[1] if ao is not None and ao[0] == "view" and self.ctx.versions.get(id(ao[1]), 0) == ao[2] \
                else None
        # a view of a new array no name keeps (`flipped = (x * 2)[:, ::-1]`, `xn` fused
        # away): in NumPy a view of that array (its strides, `.base`, a broadcast's
        # read-only flag). The array is bound as its base and the view taken of it, as on
        # the NumPy backend, whose interpreter makes that view: a kernel backend would
        # otherwise write a new C-ordered array of its own
        if root is not None and self._new_array(root) and self._view_chain(t._node, root._node) is not None:
            return root
        return None

    def _new_array(self, t: Tracer) -> bool:
        """t is an array the cell made (no view, no copy of another), which its views can
        be taken of once it is bound."""
        return t._origin is None and not t._scalar and not isinstance(t, InputTracer) \
            and not dask_lazy(self.ctx, t)

    def _view_chain(self, node: int, base: int) -> list[int] | None:
        nodes = self.ctx.builder.nodes
        chain = []
        while node != base:
            n = nodes[node]
            if n.op not in _VIEW_OPS:
                return None
            chain.append(node)
            node = n.inputs[0]
        return chain[::-1]

    # -- after the run ------------------------------------------------------------
    def commit(self, namespace: MutableMapping[str, Any], outputs: Mapping[str, Any]) -> Any:
        """Apply the bindings with the run's outputs; returns the value to display."""
        made: dict[int, Any] = {}
        handed: set[int] = set()
        inputs = list(self.ctx.input_objects.values())
        mutated = [t for t in self.tracers.values() if isinstance(t, InputTracer) and t.mutated]
        written, updates = [t._array for t in mutated], {self.outputs[id(t)] for t in mutated}

        def before_update(name: str, v: Any) -> Any:
            """A value read before the cell updated an array in place (`c = x.copy(); x *= 2`:
            c is x's input node, whose run output is x itself) is taken before the update."""
            shared = not is_dask_array(v) and any(type(a) is type(v) and _xp(v).may_share_memory(v, a)
                                                  for a in written)
            return v.copy() if shared and name not in updates else v

        outputs = {k: before_update(k, v) for k, v in outputs.items()}
        for arr, shape in self.ctx.__dict__.get("_new_shapes", {}).values():   # (`x.shape = ...`)
            arr.shape = shape
        for t in mutated:  # updates of the user's arrays first: views see them
            t._array[...] = outputs[self.outputs[id(t)]]

        def obj(t: Tracer) -> Any:
            if id(t) in made:
                return made[id(t)]
            if isinstance(t, InputTracer):
                v = t._array
            elif id(t) in self.outputs:
                v = outputs[self.outputs[id(t)]]
                # (a lazy Dask result is a new array: asking would compute it)
                if id(v) in handed or (not is_dask_array(v) and any(_xp(v).may_share_memory(v, a) for a in inputs
                                                                     if type(a) is type(v))):
                    v = v.copy()  # a new array, as NumPy would have made
                handed.add(id(v))
                if t._dtype is not None and v.dtype != t._dtype:
                    v = v.astype(t._dtype)  # NumPy keeps the input's byte order here
                elif t._dtype is not None and v.dtype.char != t._dtype.char:
                    v = v.view(t._dtype)  # the same type under the library's other name ('q', 'l')
                if t._scalar and isinstance(v, np.ndarray):
                    v = v[()]
                else:
                    v = numpy_object(t, v)
                    if type(v) is np.ndarray and t._origin is None and not t._temp_view and (
                            _broadcast(v) or (v.base is not None and
                                              self.ctx.builder.nodes[t._node].op in _VIEW_OPS)):
                        # a new array, writeable and with memory of its own, as NumPy makes it,
                        # where the run's value is a view of another (`np.argmin(m, keepdims=True)`
                        # reshapes the reduction, `y.shape = ...`, `a = np.empty(3); a.fill(2)`
                        # is a broadcast of the value)
                        v = v.copy(order="K")
            else:
                src = self.bases[id(t)]
                base = obj(src)
                if t._origin[0] == "copy":
                    v = t._origin[3](base)
                else:
                    o = t._origin
                    chain = o[3] if len(o) > 3 and o[1] is src else \
                        [self.ctx.builder.nodes[i] for i in self._view_chain(t._node, src._node) or ()]
                    # (recorded ops: the view was refreshed after an in-place update)
                    # (the array object a real run's copy is: that object itself)
                    v = base if not chain and _deref(itself(self.ctx).get(id(t))) is src else \
                        base.view() if not chain else base
                    for n in chain:
                        v = eval_node(_xp(v), n, [v])
            flag = flag_set(self.ctx, t)
            if flag is not None and isinstance(v, np.ndarray) and v.flags.writeable != flag:
                v.flags.writeable = flag   # (`y.flags.writeable = False` in the cell)
            made[id(t)] = v
            return v

        bound = obj
        if self.ctx.adopted:   # GPU arrays of another library: theirs back, results of their kind
            export = Adopted(self.ctx.adopted).exporter(
                inputs, lambda v: hasattr(v, "__cuda_array_interface__") or isinstance(v, np.ndarray))

            def bound(t: Tracer) -> Any:
                return export(obj(t))
        try:
            return self._apply(namespace, bound)
        finally:
            self.release()
            # obj refers to itself through its closure: a reference cycle that kept this
            # binder, and the arrays it refers to, alive until the garbage collector ran
            # (a later cell's trace took them for other holders of the arrays: held.py)
            obj = bound = None  # noqa: F841

    def abandon(self) -> None:
        """The cell failed after tracing: containers that existed before the cell get
        the values plain Python would have put there, computed as NumPy would."""
        scrub(self.ctx, self.holders)
        restore_originals(self.ctx)   # (arrays a real run changed: back as they were)
        self.release()

    def release(self) -> None:
        """Drop the tracers and the values computed at graph breaks (a session kept in
        the notebook would otherwise keep them alive)."""
        forget_originals(self.ctx)
        self.ctx.evaluator.values.clear()
        self.tracers.clear()
        self.bases.clear()
        self.holders = []
        self.names = {}
        self.last = None

    def _apply(self, namespace: MutableMapping[str, Any], obj: Any) -> Any:
        rebuilt = replace_in_holders(self.holders, obj)

        def final(v: Any) -> Any:
            if isinstance(v, Tracer):
                return obj(v)
            if isinstance(v, _REBUILT) and id(v) in rebuilt:
                return rebuilt[id(v)]
            return untraced_value(v, self.ctx, self.tracing_ns, namespace)

        for name in self.deleted:
            namespace.pop(name, None)
        namespace.update({k: final(v) for k, v in self.names.items()})
        shown = final(self.last) if self.displays else None
        # functions the cell left inside containers still read the traced namespace as
        # their globals: it gets values too (fused-away intermediates are dropped)
        for k, v in list(self.tracing_ns.items()):
            if isinstance(v, Tracer):
                if id(v) in self.tracers or (isinstance(v, InputTracer) and not v.mutated):
                    self.tracing_ns[k] = obj(v)
                else:
                    del self.tracing_ns[k]
        return shown


def _broadcast(v: np.ndarray) -> bool:
    """A read-only array, or one repeating elements (a stride of 0)."""
    return v.size > 0 and (not v.flags.writeable or any(st == 0 and n > 1 for st, n in zip(v.strides, v.shape)))


def _deref(ref: Any) -> Any:
    return ref() if ref is not None else None


def numpy_object(t: Tracer, v: Any) -> Any:
    """The run's value of t as the array object NumPy has for t: a new array in NumPy's
    order of axes (a kernel writes C order; `a.T * 2` is Fortran-ordered in NumPy), a
    view of a new array where NumPy's is one (`x.T.reshape(-1)`: it owns no memory)."""
    if is_dask_array(v) or not hasattr(v, "ndim"):
        return v
    if t._order is not None:
        v = with_order(_xp(v), v, t._order)
    if t._temp_view and getattr(v, "base", None) is None:
        v = v.view()
    return v


def untraced_value(v: Any, ctx: TraceContext, tracing_ns: dict[str, Any], namespace: MutableMapping[str, Any]) -> Any:
    """A plain value the cell bound, as plain execution would have it: proxies are the
    real modules, and functions (and methods of classes) defined in the cell read the
    notebook's globals."""
    v = untraced(v, ctx)
    if isinstance(v, types.FunctionType) and v.__globals__ is tracing_ns:
        return with_globals(v, namespace)  # type: ignore[arg-type]
    if isinstance(v, type) and v.__module__ == tracing_ns.get("__name__", "__main__"):
        for k, f in list(vars(v).items()):
            if isinstance(f, types.FunctionType) and f.__globals__ is tracing_ns:
                setattr(v, k, with_globals(f, namespace))  # type: ignore[arg-type]
    return v


def replace_in_holders(holders: Iterable[Any], value: Any) -> dict[int, Any]:
    """Replace every tracer in the holders by value(tracer), in place; tuples and
    frozensets are rebuilt (returned by id, and put where their holders had them)."""
    rebuilt: dict[int, Any] = {}

    def sub(v: Any) -> Any:
        if isinstance(v, Tracer):
            return value(v)
        if isinstance(v, _REBUILT) and id(v) in rebuilt:
            return rebuilt[id(v)]
        return v

    holders = list(holders)
    # tuples first, innermost first: a holder of a tuple then gets the rebuilt one
    tuples = [h for h in holders if isinstance(h, _REBUILT)]
    for _ in range(len(tuples)):
        for h in tuples:
            if isinstance(h, slice):   # (immutable too: `sl = slice(0, j)`)
                new = slice(sub(h.start), sub(h.stop), sub(h.step))
            elif isinstance(h, TracedFlags):   # (`f = y.flags`: the bound array's own flags)
                new = getattr(value(h._t), "flags", None)
            elif isinstance(h, types.MethodType):   # (`f = x.sum`: the real array's method)
                owner = sub(h.__self__)
                names = [k for c in type(h.__self__).__mro__ for k, f in vars(c).items()
                         if getattr(f, "fn", f) is h.__func__] \
                    if owner is not h.__self__ else []
                if owner is not h.__self__ and not names:   # (a method run for real: `f = a.dump`)
                    names = [k for k in [getattr(h.__func__, "_fuselab_attr", None)] if k]
                new = getattr(owner, names[0], None) if names else h
                new = h if new is None else new
            elif isinstance(h, tuple) and type(h) is not tuple and hasattr(h, "_make"):
                new = h._make(sub(e) for e in h)  # a namedtuple: its fields are positional arguments
            else:
                new = type(h)(sub(e) for e in h)
            rebuilt[id(h)] = new
    for h in holders:
        if isinstance(h, list):
            h[:] = [sub(e) for e in h]
        elif isinstance(h, deque):
            items = [sub(e) for e in h]
            h.clear()
            h.extend(items)
        elif isinstance(h, types.GeneratorType):
            changes = {k: sub(v) for k, v in _frame_locals(h).items()
                       if isinstance(v, Tracer) or (isinstance(v, _REBUILT) and id(v) in rebuilt)}
            if changes:
                _set_frame_locals(h, changes)
        elif isinstance(h, types.FunctionType):
            # defaults are evaluated once, at `def` (`def f(v, w=x * 2)`): the array's value
            if h.__defaults__ is not None:
                h.__defaults__ = sub(h.__defaults__)
            for k, v in list(vars(h).items()):
                nv = sub(v)
                if nv is not v:
                    setattr(h, k, nv)
        elif isinstance(h, functools.partial):   # (immutable arguments: set as pickling does)
            h.__setstate__((sub(h.func), sub(h.args), h.keywords, vars(h) or None))
        elif isinstance(h, dict):
            for k, v in list(h.items()):
                nk = sub(k)
                if nk is not k:
                    del h[k]
                h[nk] = sub(v)
        elif isinstance(h, set):
            items = [sub(e) for e in h]
            h.clear()
            h.update(items)
        elif isinstance(h, np.ndarray):   # (of dtype object)
            for idx in np.ndindex(h.shape):
                e = h[idx]
                ne = sub(e)
                if ne is not e:
                    h[idx] = ne
        elif isinstance(h, types.CellType):
            try:
                h.cell_contents = sub(h.cell_contents)
            except ValueError:
                pass
        elif not isinstance(h, _REBUILT) and (hasattr(h, "__dict__") or _slot_names(type(h))):
            values = {**_slot_values(h), **(vars(h) if hasattr(h, "__dict__") else {})}
            for k, v in values.items():
                nv = sub(v)
                if nv is not v:
                    setattr(h, k, nv)
    return rebuilt


def scrub(ctx: TraceContext, holders: Iterable[Any]) -> None:
    """Replace tracers in `holders` with their values computed as NumPy computes them
    (after a failure, when there is no run)."""
    def value(t: Tracer) -> Any:
        if isinstance(t, InputTracer) and not t.mutated:
            return t._array
        try:
            v = ctx.evaluator.value(t._node)
        except Exception:  # the value itself cannot be computed: nothing better to leave
            return None
        return v[()] if t._scalar else v
    replace_in_holders(holders, value)


# ---------------------------------------------------------------------------
# Building the plan from the traced namespace
# ---------------------------------------------------------------------------

_IDENT = re.compile(r"\W+")
# names of the traced namespace that are fuselab's, not the cell's
_NOT_BOUND = frozenset({"__builtins__", "__warningregistry__", LAST_VALUE})


def _path_name(base: str, taken: set[str]) -> str:
    name = _IDENT.sub("_", base).strip("_") or "value"
    if name[0].isdigit():
        name = "v" + name
    out, k = name, 1
    while out in taken:
        out, k = f"{name}_{k}", k + 1
    taken.add(out)
    return out


def plan_bindings(ctx: TraceContext, info: CellInfo, namespace: Mapping[str, Any], initial: Mapping[str, Any],
                  ns: dict[str, Any], keep: Iterable[str]) -> tuple[Binder, tuple[str, ...], tuple[str, ...]]:
    """The binder for a traced cell, with its result names and fused-away names."""
    keep = tuple(keep)
    holders, refused = find_holders(ctx, ns, initial)
    for k in keep:
        if k not in ns or (k in initial and initial[k] is ns[k]):
            raise TraceError(f"--keep {k}: the cell does not define {k!r}", None, "name a variable the cell assigns")
    # names the cell rebound, and names of the user's arrays it changed in place
    changed = {k: v for k, v in ns.items()
               if k not in _NOT_BOUND and (k not in initial or initial[k] is not v or
                                           (isinstance(v, InputTracer) and v.mutated))}
    deleted = tuple(k for k in initial if k not in ns and k in namespace)
    if refused:
        scrub(ctx, holders)
        raise TraceError(f"a traced array was left inside a {refused[0]}, where fuselab cannot replace it by its "
                         "value after the run", None,
                         "keep arrays in names, lists, tuples, dicts, sets or object attributes, "
                         "or compute that part after the %%fuse cell")
    last = ns.get(LAST_VALUE) if info.displays else None
    binder = Binder(ctx, ns, changed, deleted, holders, last, info.displays)
    taken = set(namespace) | set(ns)
    names_of: dict[int, list[str]] = {}
    for k, v in changed.items():
        if isinstance(v, Tracer):
            names_of.setdefault(id(v), []).append(k)
    held = {id(t) for h in holders for t in _tracers_in(h)}
    if isinstance(last, Tracer):
        held.add(id(last))
    needed = {b.node for b in ctx.builder.breaks}  # nodes Python saw the values of
    results, fused = [], []
    for k in info.names.assigned + tuple(k for k in changed if k not in info.names.assigned):
        v = changed.get(k)
        if not isinstance(v, Tracer):
            continue
        # bound unless a pure intermediate: new, read only by later lines, not an alias,
        # not held elsewhere, not seen by Python, not updated in place, not a free view
        bound = (k in namespace or k in info.names.results or k in keep or isinstance(v, InputTracer)
                 or len(names_of[id(v)]) > 1 or id(v) in held or v._node in needed
                 or ctx.versions.get(id(v), 0) > 0 or _views_user_array(v, ctx))
        if bound:
            results.append(k)
        else:
            fused.append(k)
            del binder.names[k]
    for k in results:
        binder.request(changed[k], k)
    for t in ctx._tracer_by_id.values():  # every array of the user's changed in place
        if t.mutated:
            binder.request(t, _path_name(t._name or "updated", taken))
    for h in holders:
        for t in _tracers_in(h):
            binder.request(t, _path_name(f"{_holder_label(h, changed)}", taken))
    if isinstance(last, Tracer):
        binder.request(last, _path_name("Out", taken))
    return binder, tuple(results), tuple(fused)


def _views_user_array(t: Tracer, ctx: TraceContext) -> bool:
    """Is t a view (through views) of an array the user had? Binding it costs nothing."""
    while t._origin is not None and t._origin[0] == "view" and ctx.versions.get(id(t._origin[1]), 0) == t._origin[2]:
        t = t._origin[1]
    return isinstance(t, InputTracer)


def _tracers_in(h: Any) -> list[Tracer]:
    if isinstance(h, dict):
        items: Iterable[Any] = list(h.keys()) + list(h.values())
    elif isinstance(h, (list, tuple, set, frozenset, deque)):
        items = h
    elif isinstance(h, types.MethodType):
        items = [h.__self__]
    elif isinstance(h, types.GeneratorType):
        items = list(_frame_locals(h).values())
    elif isinstance(h, types.FunctionType):
        items = [*(h.__defaults__ or ()), *vars(h).values()]
    elif isinstance(h, functools.partial):
        items = [h.func, *h.args]
    elif isinstance(h, slice):
        items = [h.start, h.stop, h.step]
    elif isinstance(h, TracedFlags):
        items = [h._t]
    elif isinstance(h, np.ndarray):   # (of dtype object)
        items = list(h.flat)
    elif isinstance(h, types.CellType):
        try:
            items = [h.cell_contents]
        except ValueError:
            items = []
    else:
        items = [*_slot_values(h).values(), *(vars(h).values() if hasattr(h, "__dict__") else ())]
    return [t for t in items if isinstance(t, Tracer)]


def _holder_label(h: Any, changed: Mapping[str, Any]) -> str:
    for k, v in changed.items():
        if v is h:
            return f"{k}_item"
    return f"{type(h).__name__}_item"
