"""The NumPy surface of the tracer: operators, array methods and attributes, attached to
`core.Tracer` from here (the core never imports this layer)."""
from __future__ import annotations

import dis
import inspect
import operator
import types
from typing import Any, Callable

import numpy as np
import numpy._core._methods as _np_methods

from ..ops import UFUNC_OPS, Aval, ShapeError
# their handlers register themselves when imported
from . import elementwise as _where_clip_round, opaque as _opaque_rules, reductions as _reductions  # noqa: F401
from .core import InputTracer, TraceContext, Tracer, dask_lazy, handed_view, is_cupy_array, register_method, traceable
from .layout import copy_order
from .creation import astype, checked_order, copy_of
from .mutate import PART_VIEWS, update_for_real, update_in_place
from .operands import RunForReal, copy_as, node_of, wrap
from .realrun import run_for_real
from .values import TracedFlags, plain_values, set_writeable
from .registry import call_function, handles, qualname
from .shapes import complex_part, getitem, k_ordered, layout_of, set_shape, setitem, swapaxes, transpose, value_into, view_of
from .ufuncs import call_ufunc, dispatch_ufunc, elementwise, inplace, ufunc_cast

_BINARY = [("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
           ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "power"), ("and", "bitwise_and"),
           ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"), ("rshift", "right_shift")]
_COMPARE = [("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
            ("ge", "greater_equal")]


def _binop(dunder: str, ufunc_name: str, reflected: bool = False):
    opname = UFUNC_OPS[ufunc_name]
    ufunc = getattr(np, ufunc_name)
    py_op = getattr(operator, dunder if dunder not in ("and", "or") else dunder + "_")

    def op(self: Tracer, other: Any) -> Any:
        ctx = self._ctx
        if dunder == "mul" and self._scalar and isinstance(other, _SEQUENCES):
            # a NumPy scalar leaves `[0] * k` to the sequence: a repetition, through k's
            # __index__ (a graph break), or NumPy's TypeError for a non-integer k
            return NotImplemented
        args = (other, self) if reflected else (self, other)
        try:
            out = call_ufunc_strict(ctx, opname, args)
        except (RunForReal, ShapeError):
            return run_for_real(ctx, f"`{dunder}`", py_op, args, {})
        if self._scalar and _all_scalars(args):  # NumPy scalar math words its warnings so
            ctx.labels.setdefault(out._node, f"scalar {ufunc.__name__}")
        return out
    return op


_SEQUENCES = (list, tuple, str, bytes, bytearray)


def call_ufunc_strict(ctx: TraceContext, opname: str, args: tuple) -> Tracer:
    """A Python operator: the ufunc with the operator's fast paths; RunForReal when
    fuselab's rules do not apply (the caller runs the operator itself)."""
    return k_ordered(ctx, wrap(ctx, elementwise(ctx, opname, args, None, operator=True), scalar=True), args)


def _all_scalars(args: tuple) -> bool:
    return all((isinstance(a, Tracer) and a._scalar) or (not isinstance(a, Tracer) and np.ndim(a) == 0
                                                          and not isinstance(a, np.ndarray)) for a in args)


def _ibinop(dunder: str, ufunc_name: str):
    opname = UFUNC_OPS[ufunc_name]
    plain = _binop(dunder, ufunc_name)
    iop = getattr(operator, f"i{dunder}")

    def op(self: Tracer, other: Any) -> Any:
        # NumPy scalars are immutable: `s += 1` makes a new scalar; so do Dask arrays
        # (they have no in-place operators: Python falls back to `s = s + 1`)
        if self._scalar or (self._ctx.uses_dask and self._ctx.lazy(self._node)):
            return plain(self, other)
        ctx = self._ctx
        try:
            return inplace(ctx, self, opname, (self, other))
        except (RunForReal, ShapeError):
            return update_for_real(ctx, self, f"`{dunder}=`", lambda arr: iop(arr, plain_values(ctx, other)))
    return op


def _imatmul(self: Tracer, other: Any) -> Any:
    """`x @= y`: NumPy computes np.matmul(x, y, out=x), so x stays the same array object
    (a result of another shape or a dtype it cannot take is NumPy's error)."""
    ctx = self._ctx
    res = call_function(ctx, "matmul", np.matmul, (self, other), {})
    if self._scalar or ctx.uses_cupy or (ctx.uses_dask and ctx.lazy(self._node)):
        return res   # a new array, bound to the name (scalars, Dask arrays; CuPy's own rule: not traced)
    if isinstance(res, Tracer) and res.shape == self.shape and \
            np.can_cast(res.aval.dtype, self.aval.dtype, "same_kind"):
        update_in_place(ctx, self, ufunc_cast(ctx, res._node, self.aval.dtype, "matmul"), "`@=`")
        return self
    return update_for_real(ctx, self, "`@=`", lambda arr: operator.imatmul(arr, plain_values(ctx, other)))


def _unary(ufunc_name: str):
    opname = UFUNC_OPS[ufunc_name]
    ufunc = getattr(np, ufunc_name)

    def op(self: Tracer) -> Any:
        name = ufunc_name
        if name == "invert" and self.aval.dtype == np.bool_:
            return call_ufunc(self._ctx, np.logical_not, "logical_not", (self,), {})
        out = call_ufunc(self._ctx, ufunc, opname, (self,), {})
        if self._scalar and isinstance(out, Tracer):
            self._ctx.labels.setdefault(out._node, f"scalar {ufunc.__name__}")
        return out
    return op


def _method(name: str):
    """a.name(...) as np.name(a, ...); NumPy's method itself where fuselab has no rule."""
    def real(a: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(a, name)(*args, **kwargs)

    def m(self: Tracer, *args: Any, **kwargs: Any) -> Any:
        if not (self._ctx.uses_cupy or self._ctx.uses_dask):   # (NumPy's methods only)
            _check_method_call(name, self, args, kwargs)
        return call_function(self._ctx, name, real, (self, *args), kwargs, method=True)
    m.__name__ = name
    return m


def _check_method_call(name: str, self: Tracer, args: tuple, kwargs: dict) -> None:
    """NumPy's methods written in Python (numpy/_core/_methods.py) take other arguments
    than the functions the trace's rules follow: `a.std(correction=1)` is NumPy's
    TypeError (np.std takes it). Their signatures say so, in NumPy's words."""
    impl = getattr(_np_methods, {"max": "_amax", "min": "_amin"}.get(name, "_" + name), None)
    if impl is None:
        return
    try:
        inspect.signature(impl).bind(self, *args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{impl.__name__}() {e}") from None


def _divmod(self: Tracer, other: Any) -> Any:
    return _named_divmod(self, self // other, self % other, other)


def _rdivmod(self: Tracer, other: Any) -> Any:
    return _named_divmod(self, other // self, other % self, other)


def _named_divmod(self: Tracer, q: Any, r: Any, other: Any) -> Any:
    """divmod's two results warn as NumPy's one divmod loop does ("divide by zero
    encountered in divmod", "... in scalar divmod" of NumPy scalars), not as a floor
    division and a remainder."""
    word = "scalar divmod" if self._scalar and _all_scalars((self, other)) else "divmod"
    for t in (q, r):
        if isinstance(t, Tracer):
            self._ctx.name_here(t._node, word)
    return (q, r)


def _round(self: Tracer, ndigits: Any = None) -> Any:
    if not self._scalar:
        raise TypeError("type numpy.ndarray doesn't define __round__ method")
    if ndigits is None:
        return round(self._value("round()"))
    # (a NumPy scalar's __round__: its warnings come from the user's line, as a method's)
    return call_function(self._ctx, "round", np.round, (self, ndigits), {}, method=True)


def _view(self: Tracer, *args: Any, **kwargs: Any) -> Any:
    if args or kwargs:  # a reinterpretation of the bytes: NumPy does it
        return run_for_real(self._ctx, ".view()", lambda a, *r, **k: a.view(*r, **k), (self, *args), kwargs)
    return view_of(self._ctx, self, self._node)


_C_ORDER = type("_COrder", (str,), {})("C")   # x.copy()'s and x.flatten()'s default, told from an order given


def _flatten(self: Tracer, order: str = _C_ORDER) -> Any:
    if order is not _C_ORDER and dask_lazy(self._ctx, self):   # Dask's flatten() takes no order
        return run_for_real(self._ctx, ".flatten()", lambda a, *r: a.flatten(*r), (self, order), {})
    # (the values in the order asked: `m.flatten('F')` is column by column)
    order = checked_order(str(order) if order is _C_ORDER else order)
    t = call_function(self._ctx, "ravel", np.ravel, (self,), {"order": order})
    if not isinstance(t, Tracer):
        return t
    return copy_as(self._ctx, self, t._node, lambda a: a.flatten(order))


def _copy_method(self: Tracer, order: str = _C_ORDER) -> Tracer:
    ctx = self._ctx
    if order is not _C_ORDER and dask_lazy(ctx, self):   # Dask's copy() takes no order: its TypeError
        return run_for_real(ctx, ".copy()", lambda a, **k: a.copy(**k), (self,), {"order": order})
    return copy_of(ctx, self, str(order) if order is _C_ORDER else order)


def _astype(self: Tracer, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
            copy: bool = True) -> Any:
    try:
        return astype(self._ctx, self, dtype, order, casting, subok, copy)
    except (RunForReal, ShapeError):
        # only what the user gave: CuPy's astype refuses any `casting=` ("not supported yet")
        given = {k: v for k, v, default in (("order", order, "K"), ("casting", casting, "unsafe"),
                                             ("copy", copy, True)) if v != default}
        return run_for_real(self._ctx, ".astype()", lambda a, *r, **k: a.astype(*r, **k), (self, dtype), given)


def _conj(self: Tracer) -> Any:
    if self.aval.dtype.kind == "c":
        return call_function(self._ctx, "conjugate", np.conjugate, (self,), {})
    if not self._scalar:   # (NumPy's and CuPy's method give a real array itself)
        return self
    return wrap(self._ctx, self._node, scalar=self._scalar)  # a new scalar with the same value


def _real(self: Tracer) -> Any:
    """NumPy's `.real`: of a complex array a view of its memory; of any other array or
    scalar the object itself (`a.real is a`); of a complex scalar a NumPy scalar."""
    if self.aval.dtype.kind != "c":
        return self
    return _part(self, "real")


def _imag(self: Tracer) -> Any:
    """NumPy's `.imag`: of a complex array a view of its memory; of a complex scalar a
    scalar; of anything else new zeros (a scalar for a scalar)."""
    if self.aval.dtype.kind == "c":
        return _part(self, "imag")
    zeros = wrap(self._ctx, self._ctx.builder.full(self.shape, 0, self.aval.dtype, self._ctx.loc()),
                 scalar=self._scalar)
    if not zeros._scalar and zeros.ndim > 1:   # NumPy's zeros are like the array, in order 'A'
        zeros._order = copy_order(zeros.ndim, layout_of(self._ctx, self), "A")
    if not self._scalar and not self._ctx.uses_cupy:
        # NumPy's zeros for the imaginary part of a real array are read-only (a write would
        # be lost): `a.imag[:] = 1` raises, as there
        set_writeable(zeros, False)
    return zeros


def _part(self: Tracer, part: str) -> Tracer:
    if self._scalar:   # a NumPy complex scalar's part is a new scalar: not a view of anything
        ctx = self._ctx
        node = ctx.builder.opaque(PART_VIEWS[part], [self._node],
                                  Aval((), np.dtype(self.aval.dtype.char.lower())), (), ctx.loc())
        return wrap(ctx, node, scalar=True)
    return complex_part(self._ctx, self, part)


@handles("real")
def _np_real(ctx: TraceContext, val: Any) -> Any:
    if not isinstance(val, Tracer):   # np.real is `val.real` (of np.asanyarray(val) for a list)
        raise RunForReal(val)
    return _real(val)


@handles("imag")
def _np_imag(ctx: TraceContext, val: Any) -> Any:
    if not isinstance(val, Tracer):
        raise RunForReal(val)
    return _imag(val)


def _partition(self: Tracer, kth: Any, axis: int = -1, kind: str = "introselect", order: Any = None) -> None:
    """a.partition() partitions in place (np.partition is a copy, then this)."""
    ctx = self._ctx
    given = {k: v for k, v in (("kind", kind), ("order", order)) if v not in (None, "introselect")}
    new = call_function(ctx, "partition", np.partition, (self, kth, axis), given)
    if isinstance(new, Tracer):
        update_in_place(ctx, self, new._node, "a.partition()")
    else:   # the call ran as plain NumPy: so does the update
        update_for_real(ctx, self, "a.partition()",
                        lambda arr: arr.partition(plain_values(ctx, kth), axis, kind, order))


def _sort(self: Tracer, axis: int = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> None:
    """a.sort() sorts in place: the tracer takes the sorted values."""
    # only what the user gave: cupy.sort takes neither order nor stable
    given = {k: v for k, v in (("kind", kind), ("order", order), ("stable", stable)) if v is not None}
    if axis is None:   # (np.sort's flattening, not a.sort's: NumPy's TypeError for the in-place sort)
        update_for_real(self._ctx, self, "a.sort()", lambda arr: arr.sort(axis, **given))
        return
    new = call_function(self._ctx, "sort", np.sort, (self, axis), given)
    if not isinstance(new, Tracer):
        raise RunForReal(new)
    update_in_place(self._ctx, self, new._node, "a.sort()")


def _fill(self: Tracer, value: Any) -> None:
    ctx = self._ctx
    b, loc = ctx.builder, ctx.loc()
    try:
        shape = ctx.builder.aval(node_of(ctx, value)).shape
        if shape:   # NumPy's own error, in its words ("setting an array element with a sequence.")
            np.zeros(1, self.aval.dtype).fill(np.zeros(shape, self.aval.dtype))
            raise ValueError("Input object to FillWithScalar is not a scalar")
        v = value_into(ctx, value, self.aval.dtype, "fill")   # NumPy's conversion errors (np.nan into ints)
    except RunForReal:   # (a value fuselab does not take, x.fill('a'): NumPy fills, or raises its error)
        update_for_real(ctx, self, "a.fill()", lambda arr: arr.fill(plain_values(ctx, value)))
        return
    node = b.broadcast_to(v, self.shape, loc)
    update_in_place(ctx, self, node, "a.fill()")


def _mT(self: Tracer) -> Any:
    if self._scalar:   # (a NumPy scalar has no mT)
        raise AttributeError(f"'numpy.{self.dtype.type.__name__}' object has no attribute 'mT'")
    if self.ndim < 2:   # (NumPy's own words, not swapaxes' AxisError)
        raise ValueError("matrix transpose with ndim < 2 is undefined")
    return swapaxes(self._ctx, self, -1, -2)


def _getattr(self: Tracer, name: str) -> Any:
    """Array attributes fuselab does not trace: the real array's (at a graph break);
    anything else, NumPy's AttributeError."""
    cls = self.__class__
    if name.startswith("__") or not hasattr(cls, name):
        raise AttributeError(f"'{cls.__module__.split('.')[0]}.{cls.__name__}' object has no attribute '{name}'")
    ctx = self._ctx
    attr = getattr(cls, name)
    if callable(attr):
        def method(this: Tracer, *args: Any, **kwargs: Any) -> Any:
            return run_for_real(ctx, f".{name}()", lambda a, *r, **k: getattr(a, name)(*r, **k), (this, *args),
                                kwargs)
        method.__name__ = name
        method._fuselab_attr = name  # type: ignore[attr-defined]   (bound back as the real array's: `f = a.dump`)
        return types.MethodType(method, self)
    value = self._value(f"`.{name}`")
    if name in _MEMORY_ATTRS and isinstance(value, np.ndarray):
        # `.flat`, `.data`, `.ctypes` view the array's memory, which NumPy's later writes
        # into it change: taken of a view of the value, registered as handed out, so that
        # an update of the array while they live is refused (mutate.py), not missed by them
        value = handed_view(self, value)
    return getattr(value, name)


# ndarray attributes (not methods) whose value reads the array's memory when used later
_MEMORY_ATTRS = frozenset({"flat", "data", "ctypes"})


def _install() -> None:
    for dunder, name in _BINARY:
        register_method(f"__{dunder}__", _binop(dunder, name))
        register_method(f"__r{dunder}__", _binop(dunder, name, reflected=True))
        register_method(f"__i{dunder}__", _ibinop(dunder, name))
    for dunder, name in _COMPARE:
        register_method(f"__{dunder}__", _binop(dunder, name))
    register_method("__hash__", Tracer.__hash__)  # defining __eq__ would unset it
    register_method("__neg__", _unary("negative"))
    register_method("__pos__", _unary("positive"))
    register_method("__abs__", _unary("absolute"))
    register_method("__invert__", _unary("invert"))
    register_method("__divmod__", _divmod)
    register_method("__rdivmod__", _rdivmod)
    register_method("__round__", _round)
    register_method("__matmul__", lambda self, o: call_function(self._ctx, "matmul", np.matmul, (self, o), {}))
    register_method("__rmatmul__", lambda self, o: call_function(self._ctx, "matmul", np.matmul, (o, self), {}))
    register_method("__imatmul__", _imatmul)
    register_method("__getitem__", _getitem)
    register_method("__setitem__", lambda self, key, value: _setitem(self, key, value))
    register_method("__delitem__", _delitem)
    register_method("__copy__", lambda self: copy_of(self._ctx, self, "K"))
    register_method("__deepcopy__", lambda self, memo: copy_of(self._ctx, self, "K"))
    register_method("__getattr__", _getattr)
    register_method("T", property(_T))
    register_method("base", property(_base))
    register_method("flags", property(_flags))
    register_method("setflags", _setflags)
    register_method("_set_shape", lambda self, shape: set_shape(self._ctx, self, shape))
    register_method("mT", property(_mT))
    register_method("real", property(_real))
    register_method("imag", property(_imag))
    register_method("astype", _astype)
    register_method("copy", _copy_method)
    register_method("view", _view)
    register_method("flatten", _flatten)
    register_method("conj", _conj)
    register_method("conjugate", _conj)
    register_method("sort", _sort)
    register_method("fill", _fill)
    register_method("partition", _partition)
    register_method("__array_ufunc__", _SeenByNumPyOnly(_array_ufunc))
    register_method("__cupy_get_ndarray__", _CupyConversion())
    register_method("__cupy_override_elementwise_kernel__", _CupyUfuncOverride())
    register_method("__array_function__", _array_function)
    for name in ("sum", "prod", "max", "min", "any", "all", "mean", "var", "std", "argmax", "argmin",
                 "reshape", "transpose", "ravel", "squeeze", "swapaxes", "clip", "round", "nonzero",
                 "cumsum", "cumprod", "argsort", "take", "repeat", "trace", "diagonal", "dot",
                 "searchsorted", "argpartition"):
        register_method(name, _method(name))


def _guard(self: Tracer, traced: Any, real: Any) -> Any:
    try:
        return traced()
    except (RunForReal, ShapeError):
        return run_for_real(self._ctx, "indexing", real, (self,), {})


def _getitem(self: Tracer, key: Any) -> Any:
    def index() -> Any:
        return _guard(self, lambda: getitem(self._ctx, self, key), lambda a: a[plain_values(self._ctx, key)])
    if not self._scalar:
        return index()
    try:   # a NumPy scalar indexes itself as a 0-d array, and words any failure so
        return index()
    except Exception:
        raise IndexError("invalid index to scalar variable.") from None


def _setitem(self: Tracer, key: Any, value: Any) -> None:
    ctx = self._ctx
    try:
        setitem(ctx, self, key, value)
    except (RunForReal, ShapeError):
        update_for_real(ctx, self, "item assignment (x[...] = v)",
                         lambda arr: arr.__setitem__(plain_values(ctx, key), plain_values(ctx, value)))


def _delitem(self: Tracer, key: Any) -> None:
    """`del x[i]`: NumPy's error (a NumPy scalar has no item deletion at all)."""
    if self._scalar:
        raise TypeError(f"'numpy.{self.dtype.type.__name__}' object does not support item deletion")
    raise ValueError("cannot delete array elements")


def _array_ufunc(self: Tracer, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    out = dispatch_ufunc(self._ctx, ufunc, method, inputs, kwargs)
    if method == "__call__" and not kwargs and isinstance(out, Tracer) and out._scalar and \
            any(isinstance(a, np.generic) for a in inputs) and _all_scalars(inputs) and _operator_here(self._ctx):
        # `np.uint8(0) - s` of a traced scalar s: NumPy's scalar operator hands the call to
        # the ufunc, but it is scalar math all the same, whose warnings say "scalar
        # subtract" and whose integer overflow warns
        self._ctx.labels.setdefault(out._node, f"scalar {ufunc.__name__}")
    return out


_OPERATOR_OPS = frozenset(dis.opmap[n] for n in ("BINARY_OP", "COMPARE_OP", "UNARY_NEGATIVE", "UNARY_INVERT",
                                                 "UNARY_POSITIVE") if n in dis.opmap)


def _operator_here(ctx: TraceContext) -> bool:
    """Is the user's code at a Python operator (`a - b`), not a call (`np.subtract(a, b)`)?"""
    f = ctx.user_frame()
    if f is None or f.f_lasti < 0:
        return False
    return f.f_code.co_code[f.f_lasti] in _OPERATOR_OPS


def _base(self: Tracer) -> Any:
    """`x.base` as NumPy has it: the array owning the memory a view views (NumPy skips
    the views between), None for an array of its own; for an array NumPy made as a view
    of one it made inside a call (`x.T.reshape(-1)`), that hidden array's stand-in."""
    if self._scalar:
        return None   # a NumPy scalar
    t = self
    while t._origin is not None and t._origin[0] == "view":
        t = t._origin[1]   # (an update in place keeps the memory: versions do not matter)
    if isinstance(t, InputTracer):
        owner = t._array.base
        if owner is None:
            return t if t is not self else None
        return self._ctx.tracer_for(owner) if traceable(owner) else owner
    if t._temp_view:   # the hidden array: the value's own base stands in for it
        return getattr(t._value("`.base`"), "base", None)
    return t if t is not self else None


def _flags(self: Tracer) -> Any:
    if self._scalar or self._ctx.uses_cupy or self._ctx.uses_dask:   # (a NumPy scalar's, CuPy's own flags)
        return self._value("`.flags`").flags
    return TracedFlags(self)


def _setflags(self: Tracer, write: Any = None, align: Any = None, uic: Any = None) -> None:
    if self._scalar or self._ctx.uses_cupy or self._ctx.uses_dask or align is not None or uic is not None:
        return run_for_real(self._ctx, ".setflags()", lambda a, *r: a.setflags(*r), (self, write, align, uic), {})
    if write is not None:
        set_writeable(self, bool(write))
    return None


def _T(self: Tracer) -> Tracer:
    # cupy.ndarray.T of fewer than 2 dimensions is the array itself (NumPy's is a new view)
    if self._ctx.uses_cupy and self.aval.ndim < 2:
        return self
    return transpose(self._ctx, self)


class _SeenByNumPyOnly:
    """`__array_ufunc__` as NumPy looks it up (on the type: the override), and None as CuPy
    looks it up (on the instance) in a CuPy cell, for CuPy's `_should_use_rop` (which
    would defer to the tracer's reflected operator). cupy.ndarray's operators only ask
    it of operands that are not cupy.ndarray instances, and a tracer's `__class__` says
    it is one in a CuPy cell: `cupy_array + tracer` reaches CuPy's own ufunc instead,
    which hands the call back through `__cupy_override_elementwise_kernel__`."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self.fn
        if obj._ctx.uses_cupy:
            return None
        return self.fn.__get__(obj, objtype)


class _CupyConversion:
    """`__cupy_get_ndarray__`, in a CuPy cell only: CuPy's own code turns a tracer into
    its value through it (a graph break), and computes as plain CuPy would.

    CuPy needs it where a concrete cupy.ndarray meets a tracer first: `cp.asarray([1, 2])
    + x` calls cupy.ndarray.__add__, whose `isinstance(y, cupy.ndarray)` is True for a
    tracer (its `__class__` is what plain execution has there, so the tracer cannot make
    CuPy defer to its reflected operator), and CuPy's ufunc then takes its operands
    through `_convert_from_cupy_like`, which asks for this protocol (CuPy >= 14); the same
    for any CuPy function fuselab does not see (cupyx.scipy ...) given a tracer. In a
    NumPy cell the attribute does not exist."""

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        if not obj._ctx.uses_cupy:
            raise AttributeError("__cupy_get_ndarray__")

        def get() -> Any:
            return obj._value("a CuPy function fuselab does not trace")
        return get


# CuPy's comparison ufuncs, which ndarray.__richcmp__ calls through C functions typed to
# return a cupy.ndarray
_CUPY_TYPED_COMPARISONS = frozenset({"less", "less_equal", "equal", "not_equal", "greater", "greater_equal"})


class _CupyUfuncOverride:
    """`__cupy_override_elementwise_kernel__`, in a CuPy cell only: a CuPy ufunc given a
    tracer hands the call to it (cupy/_core/_kernel.pyx, ufunc.__call__), and the call is
    traced as the same ufunc of the proxy would be. This is how `cp.asarray([1, 2]) + x`
    is traced: cupy.ndarray.__add__ takes the tracer for a cupy.ndarray (see
    _CupyConversion) and calls its `cupy_add` ufunc on it."""

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        if not obj._ctx.uses_cupy:
            raise AttributeError("__cupy_override_elementwise_kernel__")

        def override(ufunc: Any, *args: Any, **kwargs: Any) -> Any:
            name = str(getattr(ufunc, "__name__", "") or getattr(ufunc, "name", ""))
            name = name[len("cupy_"):] if name.startswith("cupy_") else name
            out = dispatch_ufunc(obj._ctx, ufunc, "__call__", args, kwargs, name)
            if name in _CUPY_TYPED_COMPARISONS and args and not isinstance(args[0], Tracer) and \
                    is_cupy_array(args[0]) and isinstance(out, Tracer):
                # `cupy_array == x` (an array reached through a list, an attribute...):
                # cupy.ndarray.__richcmp__ takes the tracer for a cupy.ndarray and returns
                # the ufunc's result through a C function typed to return one, which a
                # tracer is not (TypeError): its value, computed now (a graph break)
                return out._value(f"a comparison ({name}) of a CuPy array with a traced one")
            return out
        return override


def _array_function(self: Tracer, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    return call_function(self._ctx, qualname(func), func, args, kwargs)


_install()
