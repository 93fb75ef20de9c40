"""Creating arrays, copies and dtype conversions, with NumPy's object identities: `np.asarray(x)`
is x itself, `x.copy()` / `np.array(x)` / `x.astype(x.dtype)` are new arrays, `np.zeros(...)`
a generator node the planner can fuse."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..ops import SUPPORTED_DTYPES
from .core import InputTracer, TraceContext, Tracer, dask_lazy, is_array, native
from .operands import RunForReal, check_fits, convert_scalar, copy_as, node_of, wrap
from .registry import handles
from .layout import copy_order
from .shapes import broadcast_to, layout_of


def _shape_arg(shape: Any) -> tuple[int, ...]:
    try:   # (NumPy takes integers only: np.zeros('3'), np.ones(2.5) are its TypeErrors)
        dims = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else \
            tuple(operator.index(d) for d in shape)
    except TypeError:
        raise RunForReal(shape) from None
    if any(d < 0 for d in dims):
        raise RunForReal(shape)   # NumPy's "negative dimensions are not allowed", at the user's line
    return dims


def _order_arg(order: Any) -> None:
    """np.zeros / ones / empty / full take order 'C' or 'F' (None: 'C'); else NumPy's error."""
    if order not in (None, "C", "F", "c", "f"):
        raise RunForReal(order)


def _dtype(dtype: Any, default: Any) -> np.dtype:
    dt = np.dtype(dtype if dtype is not None else default)
    if dt not in SUPPORTED_DTYPES:
        raise RunForReal(dt)  # object, string, complex... arrays: NumPy makes them
    return dt


def _filled(value: int):
    def h(ctx, shape, dtype=float, order="C", *, like=None, device=None):
        _order_arg(order)
        return wrap(ctx, ctx.builder.full(_shape_arg(shape), value, _dtype(dtype, float), ctx.loc()))
    return h


# np.empty's contents are whatever memory held: zeros are as good a value as any
handles("zeros", "empty")(_filled(0))
handles("ones")(_filled(1))


@handles("full")
def full(ctx, shape, fill_value, dtype=None, order="C", *, like=None, device=None):
    _order_arg(order)
    if isinstance(fill_value, Tracer) or is_array(fill_value):
        v = astype(ctx, fill_value, dtype) if dtype is not None else fill_value
        return copy_of(ctx, broadcast_to(ctx, v, _shape_arg(shape)), "C")
    if not isinstance(fill_value, (bool, int, float, np.generic)):
        raise RunForReal(fill_value)
    dt = _dtype(dtype, np.asarray(fill_value).dtype)
    # NumPy's conversion, its errors and warnings (300 into int8: OverflowError), which
    # cupy.full makes too (plain CuPy on the H200, 2026-12-04)
    fill_value = convert_scalar(ctx, fill_value, dt, "full")
    return wrap(ctx, ctx.builder.full(_shape_arg(shape), fill_value, dt, ctx.loc()))


def _like_dtype(x: Any, dtype: Any) -> np.dtype:
    """A *_like array's dtype: the prototype's, byte order included (np.empty_like of a
    big-endian array is big-endian), unless `dtype` is given."""
    if dtype is None and isinstance(x, Tracer):
        return x.dtype
    return np.dtype(dtype) if dtype is not None else np.asarray(x).dtype


def _like_full(ctx: TraceContext, x: Any, fill_value: Any, dtype: Any, shape: Any, order: str = "K") -> Tracer:
    a = ctx.builder.aval(node_of(ctx, x))
    dt = _like_dtype(x, dtype)
    t = wrap(ctx, ctx.builder.full(_shape_arg(shape) if shape is not None else a.shape, fill_value,
                                   _dtype(native(dt), a.dtype), ctx.loc()), dtype=dt)
    return ordered_as(ctx, t, x, order)


def _like(value: int):
    def h(ctx, x, dtype=None, order="K", subok=True, shape=None, *, device=None):
        return _like_full(ctx, x, value, dtype, shape, order)
    return h


handles("zeros_like", "empty_like")(_like(0))
handles("ones_like")(_like(1))


@handles("full_like")
def full_like(ctx, x, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if isinstance(fill_value, Tracer) or is_array(fill_value):
        raise RunForReal(fill_value)
    # (NumPy's copyto of a Python int out of the dtype's range: OverflowError, at the line)
    check_fits(fill_value, _dtype(native(_like_dtype(x, dtype)), ctx.builder.aval(node_of(ctx, x)).dtype))
    return _like_full(ctx, x, fill_value, dtype, shape, order)


@handles("arange")
def arange(ctx, start, stop=None, step=None, dtype=None, *, like=None, device=None):
    if any(isinstance(v, Tracer) for v in (start, stop, step)):
        raise RunForReal(start)  # a traced bound: its length depends on the value
    given = [v for v in (start, stop, step) if v is not None]
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    # np.arange's dtype: its arguments promoted as Python scalars (NumPy 2.4 takes a NumPy
    # scalar's value: np.arange(np.float16(2.5)) is float64, np.arange(True) int64)
    plain = [v.item() if isinstance(v, (np.generic, np.ndarray)) and np.ndim(v) == 0 else v for v in given]
    plain = [int(v) if isinstance(v, bool) else v for v in plain]
    dt = np.result_type(*plain) if dtype is None else _dtype(dtype, None)
    if dt not in SUPPORTED_DTYPES:
        raise RunForReal(dt)
    return wrap(ctx, ctx.builder.arange(start, stop, step, dt, ctx.loc()))


# ---------------------------------------------------------------------------
# Copies and conversions
# ---------------------------------------------------------------------------

def copy_of(ctx: TraceContext, x: Any, order: str = "K") -> Tracer:
    """A new array with x's values: bound as a real copy of whatever x is bound to
    (so byte order, layout and memory stay NumPy's), or as the run's value, laid out
    as NumPy's copy in that order is."""
    order = checked_order(order)
    if isinstance(x, Tracer):
        t = copy_as(ctx, x, x._node, lambda a: a.copy(order=order), x._scalar)
    else:
        t = wrap(ctx, node_of(ctx, x))
    return ordered_as(ctx, t, x, order)


def checked_order(order: Any) -> Any:
    """An `order=` argument as NumPy reads it (any case; None as given), or NumPy's error
    at the user's line (not when the plan binds the copy)."""
    if isinstance(order, str) and order.upper() in ("C", "F", "A", "K"):
        return order.upper()
    if order is None:
        return order
    raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")


def ordered_as(ctx: TraceContext, t: Any, x: Any, order: str | None) -> Any:
    """`t`, a new array made from x's values, laid out as NumPy lays out a copy of x in
    `order` (np.copy, astype, *_like: 'K' by default, x's own order of axes)."""
    order = checked_order(order)
    if isinstance(t, Tracer) and not t._scalar and t.ndim > 1 and order is not None:
        t._order = copy_order(t.ndim, layout_of(ctx, x) if t.shape == getattr(x, "shape", None) else None, order)
    return t


def astype(ctx: TraceContext, x: Any, dtype: Any, order: str = "K", casting: str = "unsafe",
           subok: bool = True, copy: bool = True) -> Any:
    dt = np.dtype(dtype)
    if ctx.uses_cupy and not dt.isnative:
        raise RunForReal(dt)   # CuPy has no byte orders: its ValueError, as in plain execution
    n = node_of(ctx, x)
    if ctx.builder.aval(n).dtype == dt and (not isinstance(x, Tracer) or x.dtype == dt):
        # the same dtype, byte order included (be.astype(np.float32) converts to native)
        if not copy and isinstance(x, Tracer):
            return x
        return copy_of(ctx, x, order)
    if casting != "unsafe" and not np.can_cast(x.dtype if isinstance(x, Tracer) else ctx.builder.aval(n).dtype,
                                                dt, casting):
        raise RunForReal(casting)  # NumPy's TypeError
    if native(dt) not in SUPPORTED_DTYPES:
        raise RunForReal(dt)
    if ctx.builder.aval(n).dtype.kind == "c" and dt.kind not in "cb":   # NumPy warns at the cast (not into bool)
        ctx.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning)
    return ordered_as(ctx, wrap(ctx, ctx.builder.astype(n, native(dt), ctx.loc()),
                                scalar=isinstance(x, Tracer) and x._scalar, dtype=dt), x, order)


@handles("copy")
def np_copy(ctx, a, order="K", subok=False):
    if dask_lazy(ctx, a):
        raise RunForReal(a)
    return copy_of(ctx, a, order)


@handles("array")
def array(ctx, obj, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    if ndmin or not isinstance(obj, Tracer) or dask_lazy(ctx, obj):
        raise RunForReal(obj)
    if not copy and (order in ("C", "F") or (dtype is not None and np.dtype(dtype) != obj.dtype)):
        # a copy only where the array is not laid out so (or NumPy's error for copy=False):
        # NumPy decides on the real arrays, and gives the array itself back where it may
        raise RunForReal(order)
    if dtype is not None and np.dtype(dtype) != obj.dtype:
        return astype(ctx, obj, dtype, order)
    if copy is False or copy is None:
        return obj if not obj._scalar else copy_of(ctx, obj, order)
    t = copy_of(ctx, obj, order)
    t._scalar = False  # np.array(np.float64(1.0)) is a 0-d array
    return t


@handles("asarray", "asanyarray")
def asarray(ctx, a, dtype=None, order=None, *, copy=None, device=None, like=None):
    order = checked_order(order)
    if not isinstance(a, Tracer) or dask_lazy(ctx, a):
        raise RunForReal(a)
    if not copy and (order in ("C", "F") or (copy is False and dtype is not None and np.dtype(dtype) != a.dtype)):
        raise RunForReal(order)   # (as np.array with copy=None/False: NumPy decides)
    if dtype is not None and np.dtype(dtype) != a.dtype:
        return astype(ctx, a, dtype)
    if copy:
        return array(ctx, a)
    if a._scalar:  # np.asarray(np.float64(1.0)) is a new 0-d array
        return array(ctx, a)
    return a


@handles("ascontiguousarray")
def ascontiguousarray(ctx, a, dtype=None, *, like=None):
    if not isinstance(a, Tracer) or dask_lazy(ctx, a):
        raise RunForReal(a)
    if dtype is not None and np.dtype(dtype) != a.dtype:
        r = astype(ctx, a, dtype, "C")
    else:
        contiguous = a._array.flags.c_contiguous if isinstance(a, InputTracer) and not a.mutated else \
            a._origin is None or a._origin[0] != "view"
        r = a if contiguous and not a._scalar else array(ctx, a, order="C")
    # NumPy's result has at least one dimension: a 0-d array's is a (1,) view of it
    return r.reshape(1) if r.ndim == 0 else r
