"""Element-wise functions that are not plain ufunc calls, as NumPy 2 defines them:
`where` (NEP 50 promotion, weak scalars cast as NumPy casts them), `clip` (one ufunc over
its three operands; Python integers outside an integer dtype dropped as NumPy drops them),
`round` (numpy's PyArray_Round: multiply, rint, divide; integers round via float64)."""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .core import TraceContext
from .creation import copy_of
from .opaque import data_dependent
from .numpy_sites import numpy_wrapped_line
from .operands import (RunForReal, Weak, cupy_decides_out_of_range_ints, materialise, node_of, operand,
                       resolution_dtypes, wrap)
from .registry import handles
from .shapes import k_ordered
from .ufuncs import elementwise

_CLIP = np._core.umath.clip  # np.clip's ufunc (NumPy 2): one loop over (a, min, max)


@handles("where")
def where(ctx: TraceContext, cond: Any, x: Any = None, y: Any = None):
    if x is None and y is None:  # indices of the true elements: their number depends on the data
        return data_dependent(ctx, "nonzero", np.nonzero, (cond,), {})
    if x is None or y is None:
        raise RunForReal((x, y))  # NumPy's own error
    b = ctx.builder
    ops = [operand(ctx, v) for v in (x, y)]
    cupy_decides_out_of_range_ints(ctx, ops)
    strong = [b.aval(o).dtype for o in ops if not isinstance(o, Weak)]
    weak = [o.value for o in ops if isinstance(o, Weak)]
    # np.where promotes as NumPy 2 does (weak Python scalars take the array's dtype)
    dt = np.result_type(*strong, *weak) if strong else np.result_type(*[np.asarray(v) for v in weak])
    loc = ctx.loc()
    xn, yn = (b.const(o.value, dt, loc) if isinstance(o, Weak) else b.astype(o, dt, loc) for o in ops)
    return k_ordered(ctx, wrap(ctx, b.where(node_of(ctx, cond), xn, yn, loc)), (cond, x, y))


@handles("clip")
def clip(ctx: TraceContext, a: Any, a_min: Any = np._NoValue, a_max: Any = np._NoValue, out: Any = None, *,
         min: Any = np._NoValue, max: Any = np._NoValue, **kwargs: Any):
    bounds = (a_min, a_max, min, max)
    return k_ordered(ctx, _clip(ctx, a, a_min, a_max, out, min=min, max=max, **kwargs),
                     (a, *(v for v in bounds if v is not np._NoValue and v is not None)))


def _clip(ctx: TraceContext, a: Any, a_min: Any, a_max: Any, out: Any, *, min: Any, max: Any, **kwargs: Any):
    if out is not None or kwargs:
        raise RunForReal((out, kwargs))
    lo = a_min if a_min is not np._NoValue else (None if min is np._NoValue else min)
    hi = a_max if a_max is not np._NoValue else (None if max is np._NoValue else max)
    dt = ctx.builder.aval(node_of(ctx, a)).dtype
    if ctx.uses_cupy:
        cupy_decides_out_of_range_ints(ctx, [operand(ctx, v) for v in (a, lo, hi) if v is not None])
        # cupy/_core/_routines_math.pyx _ndarray_clip: a missing bound is filled in for
        # float and integer arrays only (bool and complex pass None to the ufunc: TypeError),
        # and no bound at all is a ValueError where NumPy 2 copies
        if (lo is None or hi is None) and (dt.kind not in "fiu" or (lo is None and hi is None)):
            raise RunForReal((a, lo, hi))
    if dt.kind in "iu":  # numpy/_core/_methods.py _clip: out-of-range Python ints mean "no bound"
        info = np.iinfo(dt)
        if type(lo) is int and lo <= info.min:
            lo = None
        if type(hi) is int and hi >= info.max:
            hi = None
    if lo is None and hi is None:
        return wrap(ctx, ctx.builder.elemwise("positive", [node_of(ctx, a)], ctx.loc()), scalar=True)
    if lo is None or hi is None:
        # (NumPy's _clip runs np.minimum or np.maximum then, from another line: its casts'
        # warnings come from there, numpy_sites.numpy_cast_line("clip:max"))
        outer, ctx.calling_path = ctx.calling_path, "clip:max" if lo is None else "clip:min"
        try:
            return wrap(ctx, elementwise(ctx, "minimum" if lo is None else "maximum", [a, hi if lo is None else lo]),
                        scalar=True)
        finally:
            ctx.calling_path = outer
    ops = [operand(ctx, v) for v in (a, lo, hi)]
    try:
        loop = _CLIP.resolve_dtypes((*resolution_dtypes(ctx, ops), None))
    except TypeError:
        raise RunForReal(ops) from None
    b, loc = ctx.builder, ctx.loc()
    xn, lon, hin = (b.astype(n, loop[0], loc) for n in materialise(ctx, ops, loop[:3]))
    return wrap(ctx, b.elemwise("minimum", [b.elemwise("maximum", [xn, lon], loc), hin], loc), scalar=True)


def _numpy_power_of_ten(n: int) -> float:
    """NumPy's scale for np.round (calculation.c power_of_ten): 1e9 multiplied by 10 once
    per further digit, each product rounded to double, so that from 1e23 on it is not
    the nearest double to 10**n (np.round(x, 308) differed from x * 1e308 / 1e308)."""
    if n < 9:
        return 10.0 ** n
    r = 1e9
    for _ in range(n - 9):
        r *= 10.0
    return r


@handles("round", "around")
def round_(ctx: TraceContext, x: Any, decimals: int = 0, out: Any = None):
    return k_ordered(ctx, _round(ctx, x, decimals, out), (x,))


def _round(ctx: TraceContext, x: Any, decimals: int, out: Any):
    if out is not None:
        raise RunForReal(out)
    b, loc = ctx.builder, ctx.loc()
    n = node_of(ctx, x)
    since = len(b.nodes)
    dt = b.aval(n).dtype
    decimals = operator.index(decimals)   # (x.round(1.5): NumPy's TypeError)
    if dt.kind == "c" or (dt.kind == "b" and decimals != 0):
        raise RunForReal(x)  # complex: the library; bool: NumPy's casting error
    if ctx.uses_cupy and dt == np.float16 and decimals != 0:
        raise RunForReal(x)  # NumPy scales in float16, CuPy not (np.round(3.05, 1): 3.0 / 3.1)
    if dt.kind in "iu" and decimals >= 0:  # integers are already round: a copy (never x itself)
        if b.aval(n).ndim == 0:   # (of a 0-d array too, NumPy gives a scalar)
            return wrap(ctx, b.astype(n, dt, loc), scalar=True, dtype=getattr(x, "dtype", None))
        return copy_of(ctx, x)
    if decimals == 0:  # np.rint (bool rounds to float16, as rint's loops say)
        return wrap(ctx, b.elemwise("rint", [n], loc), scalar=True)
    first, second = ("multiply", "true_divide") if decimals > 0 else ("true_divide", "multiply")
    f_dtype = np.dtype(np.float64) if dt.kind in "biu" else dt
    if abs(decimals) > np.finfo(f_dtype).maxexp * math.log10(2):
        # a power of ten the dtype does not hold (np.around(x, -400): Python's float
        # overflowed here; NumPy's is inf, its steps warn from its own line): NumPy's
        raise RunForReal(decimals)
    f = b.const(10.0 ** abs(decimals) if ctx.uses_cupy else _numpy_power_of_ten(abs(decimals)), f_dtype, loc)
    v = b.astype(n, f_dtype, loc) if f_dtype != dt else n
    r = b.elemwise(second, [b.elemwise("rint", [b.elemwise(first, [v, f], loc)], loc), f], loc)
    r = b.astype(r, dt, loc)    # NumPy rounds into an array of x's own dtype, byte order included
    if not ctx.calling_method and numpy_wrapped_line(ctx.calling_path) is not None:
        # np.round(x, 2)'s steps warn from fromnumeric.py (before the tracer: an errstate
        # that raises computes the result at once), x.round(2)'s from the user's line
        ctx.numpy_internal(since)
    return wrap(ctx, r, scalar=True, dtype=getattr(x, "dtype", None))
