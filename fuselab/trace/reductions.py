"""Reductions, written as NumPy computes them (numpy/_core/_methods.py): the same
accumulator dtypes, the same divisions by the count, the same warnings, so results and
dtypes are NumPy's exactly."""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ..interp import PythonWarning
from ..ops import normalize_axes
from .core import TraceContext
from .operands import RunForReal, node_of, wrap
from .numpy_sites import numpy_reduce_line, numpy_step_line, numpy_steps
from .registry import handles


def _plain_args(out=None, where=True, initial=np._NoValue) -> None:
    """out=, where= and initial= change what a reduction computes: plain NumPy does them."""
    if out is not None or where is not True or initial is not np._NoValue:
        raise RunForReal((out, where, initial))


def checked_axis(axis: Any, tuples: bool = True) -> Any:
    """`axis` as NumPy's reductions take it: None, an integer, or (`tuples`) a tuple of
    integers; anything else raises NumPy's TypeError (a str, a float, a list, a bool), not
    the ValueError of int('x')."""
    if axis is None:
        return axis
    for a in axis if tuples and isinstance(axis, tuple) else (axis,):
        if isinstance(a, (bool, np.bool_)):
            raise TypeError("an integer is required")
        operator.index(a)   # "'str' object cannot be interpreted as an integer"
    return axis


def reduce(ctx: TraceContext, opname: str, x: Any, axis: Any = None, keepdims: Any = False,
           dtype: Any = None, **plain: Any):
    _plain_args(**plain)
    axis = checked_axis(axis)
    b, loc = ctx.builder, ctx.loc()
    n = node_of(ctx, x)
    if opname in ("any", "all"):
        n = b.astype(n, bool, loc)
    keep = bool(keepdims) if keepdims is not np._NoValue else False
    complex_cast_warning(ctx, opname, b.aval(n).dtype, dtype)
    return wrap(ctx, b.reduce(opname, n, axis, keep, dtype, loc), scalar=True)


def complex_cast_warning(ctx: TraceContext, function: str, dt: np.dtype, dtype: Any) -> None:
    """NumPy's reduce of complex values into a real dtype= warns (ComplexWarning, whatever
    the values) from the line of NumPy's code that runs the ufunc (np.sum: fromnumeric.py),
    or the user's (numpy_sites.numpy_reduce_line)."""
    if dtype is None or dt.kind != "c" or np.dtype(dtype).kind in "cb" or ctx.uses_cupy:   # (into bool: silent)
        return
    message, category = "Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning
    site = numpy_reduce_line(ctx.calling_path or function, bool(ctx.calling_method))
    ctx.warnings.python(ctx.here(), message, PythonWarning(message, category, *site) if site else ctx.loc(), category)


for _name in ("sum", "prod", "any", "all"):
    handles(_name)(lambda ctx, x, axis=None, dtype=None, out=None, keepdims=False, _op=_name, **kw:
                   reduce(ctx, _op, x, axis, keepdims, dtype, out=out, **kw))
for _name, _op in (("max", "max"), ("amax", "max"), ("min", "min"), ("amin", "min")):
    # np.max / np.min take no dtype: their positional order is (a, axis, out, keepdims)
    handles(_name)(lambda ctx, x, axis=None, out=None, keepdims=False, _op=_op, **kw:
                   reduce(ctx, _op, x, axis, keepdims, None, out=out, **kw))


# CuPy's argmax / argmin give int64 as C's long long ('q': cupy/_core/_routines_statistics.pyx),
# NumPy's as intp ('l' on Linux): the same type, which NumPy's repr tells apart
# ("array(1, dtype=int64)" against "array(1)")
_CUPY_INDEX = np.dtype(np.longlong)


def _argreducer(opname: str):
    def h(ctx, x, axis=None, out=None, *, keepdims=False):
        _plain_args(out)
        axis = checked_axis(axis, tuples=False)
        t = wrap(ctx, ctx.builder.reduce(opname, node_of(ctx, x), axis, bool(keepdims), None, ctx.loc()),
                 scalar=True)
        if ctx.uses_cupy and t.aval.dtype == _CUPY_INDEX and t.aval.dtype.char != _CUPY_INDEX.char:
            t._dtype = _CUPY_INDEX  # bound as CuPy gives it
        return t
    return h


handles("argmax")(_argreducer("argmax"))
handles("argmin")(_argreducer("argmin"))


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return int(math.prod(shape[a] for a in axes))


def _divide_by_count(ctx: TraceContext, s: int, count: int, scalar_result: bool,
                     step: tuple[str, np.dtype, int] | None = None) -> int:
    """NumPy divides a sum by its count (an intp) with the true_divide ufunc and casts
    the quotient back to the sum's dtype. When the sum is float32/float64 and the count
    is exact in it, dividing in that dtype gives the same bits (a correctly rounded
    quotient rounded again to fewer bits is the same quotient: p' >= 2p + 2), and keeps
    float32 kernels free of float64 math; otherwise the division is NumPy's own.
    `step`: (NumPy function, its input's dtype, which of its divisions this is), whose
    warnings then come from NumPy's line for it (numpy_sites.numpy_step_line)."""
    b, loc = ctx.builder, ctx.loc()
    dt = b.aval(s).dtype
    exact = {np.dtype(np.float32): 2 ** 24, np.dtype(np.float64): 2 ** 53}.get(dt)
    if exact is not None and count <= exact:
        q = div = b.elemwise("true_divide", [s, b.const(count, dt, loc)], loc)
    else:
        div = b.elemwise("true_divide", [s, b.const(count, np.intp, loc)], loc)
        q = b.astype(div, dt, loc)
    if step is not None:
        ctx.numpy_steps[div] = (step[0], str(step[1]), scalar_result, "divide", step[2])
    if scalar_result and np.can_cast(np.intp, dt, "safe"):
        # a full reduction is divided as NumPy scalars (np.float64(s) / np.intp(n)), whose
        # warnings say "scalar divide"; a float32 sum is divided by the ufunc instead
        ctx.labels[q] = "scalar divide"
    return q


def _float_acc(dt: np.dtype, dtype: Any) -> np.dtype:
    """mean/var: integers and bools accumulate in float64 unless dtype= says otherwise."""
    if dtype is not None:
        return np.dtype(dtype)
    return np.dtype(np.float64) if dt.kind in "biu" else dt


def _counted(ctx: TraceContext, x: Any, axis: Any) -> tuple[int, Any, int]:
    """mean/var's operand: its node, abstract value and the number of elements reduced
    (complex values run as plain NumPy)."""
    n = node_of(ctx, x)
    a = ctx.builder.aval(n)
    if a.dtype.kind == "c":
        raise RunForReal(x)
    return n, a, _count(a.shape, normalize_axes(checked_axis(axis), a.ndim))


@handles("mean")
def mean(ctx, x, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    _plain_args(out, where)
    b, loc = ctx.builder, ctx.loc()
    n, a, count = _counted(ctx, x, axis)
    since = len(b.nodes)
    if count == 0:
        ctx.warn("Mean of empty slice", numpy_function="mean")
    half = dtype is None and a.dtype == np.float16  # float16 is summed in float32
    acc = np.dtype(np.float32) if half else _float_acc(a.dtype, dtype)
    s = b.reduce("sum", n, axis, bool(keepdims), acc, loc)
    m = _divide_by_count(ctx, s, count, b.aval(s).ndim == 0, ("mean", a.dtype, 0))
    if half:
        m = b.astype(m, np.float16, loc)
    ctx.numpy_internal(since)   # numpy/_core/_methods.py _mean
    return wrap(ctx, m, scalar=True)


def _var_node(ctx, x, axis, dtype, keepdims, ddof, function: str) -> int:
    """float32/float64 variances (integers' too, in float64) are one `var` reduction, which
    kernels compute in one pass (Welford); float16 ones follow numpy/_core/_methods.py
    _var step by step, since NumPy rounds each step to float16. Where ddof leaves no
    degrees of freedom, CuPy's variance is NaN (its factor 1 / max(count - ddof, 0) is
    infinite, and NaN comes back) where NumPy's division by zero gives inf: a CuPy cell
    gets CuPy's."""
    if not isinstance(ddof, (int, np.integer)) and not float(ddof).is_integer():
        raise RunForReal(ddof)   # (ddof=0.5: NumPy divides by count - 0.5)
    b, loc = ctx.builder, ctx.loc()
    n, a, count = _counted(ctx, x, axis)
    if ddof >= count:
        ctx.warn("Degrees of freedom <= 0 for slice", numpy_function=function)
    acc = _float_acc(a.dtype, dtype) if (dtype is not None or a.dtype.kind in "biu") else None
    if (acc or a.dtype) in (np.dtype(np.float32), np.dtype(np.float64)):
        v = b.reduce("var", n, axis, bool(keepdims), acc or a.dtype, loc, ddof=int(ddof))
        if b.aval(v).ndim == 0 and np.can_cast(np.intp, b.aval(v).dtype, "safe"):
            ctx.labels[v] = "scalar divide"   # a full float64 variance is divided as NumPy scalars
    else:
        s = b.reduce("sum", n, axis, True, acc, loc)
        mean_ = _divide_by_count(ctx, s, count, False, ("var", a.dtype, 0))
        d = b.elemwise("subtract", [n, mean_], loc)
        sq = b.elemwise("multiply", [d, d], loc)
        ss = b.reduce("sum", sq, axis, bool(keepdims), acc, loc)
        v = _divide_by_count(ctx, ss, max(count - ddof, 0), b.aval(ss).ndim == 0, ("var", a.dtype, 1))
        # each step warns from its own line of NumPy's _var, named by the ufunc it runs
        # there (NumPy 2 squares the deviations with np.square: "overflow encountered in square")
        full = b.aval(ss).ndim == 0
        steps = numpy_steps("var", str(a.dtype), full)
        squared = "square" if any(op == "square" for op, _ in steps) else "multiply"
        ctx.labels[sq] = squared
        for node, op, k in ((s, "reduce", 0), (d, "subtract", 0), (sq, squared, 0), (ss, "reduce", 1)):
            ctx.numpy_steps[node] = ("var", str(a.dtype), full, op, k)
    if ctx.uses_cupy and ddof >= count:
        v = b.elemwise("multiply", [v, b.const(np.nan, b.aval(v).dtype, loc)], loc)
    return v


@handles("var")
def var(ctx, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=np._NoValue):
    _plain_args(out, where, mean if mean is not None else np._NoValue)
    ddof = ddof if correction is np._NoValue else correction
    since = len(ctx.builder.nodes)
    v = _var_node(ctx, x, axis, dtype, keepdims, ddof, "var")
    ctx.numpy_internal(since)   # numpy/_core/_methods.py _var
    return wrap(ctx, v, scalar=True)


@handles("std")
def std(ctx, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=np._NoValue):
    _plain_args(out, where, mean if mean is not None else np._NoValue)
    ddof = ddof if correction is np._NoValue else correction
    since = len(ctx.builder.nodes)
    b = ctx.builder
    var_ = _var_node(ctx, x, axis, dtype, keepdims, ddof, "std")
    v = b.elemwise("sqrt", [var_], ctx.loc())
    if b.aval(v).dtype != b.aval(var_).dtype:   # an integer dtype=: NumPy's _std takes the root in place
        if b.aval(v).ndim:
            raise RunForReal(dtype)   # (into the array: NumPy's casting error)
        v = b.astype(v, b.aval(var_).dtype, ctx.loc())   # (of a scalar: cast back to its type)
    ctx.numpy_internal(since)   # numpy/_core/_methods.py _std
    return wrap(ctx, v, scalar=True)


@handles("count_nonzero")
def count_nonzero(ctx, x, axis=None, *, keepdims=False):
    axis = checked_axis(axis)
    b, loc = ctx.builder, ctx.loc()
    nz = b.astype(node_of(ctx, x), bool, loc)
    return wrap(ctx, b.reduce("sum", nz, axis, bool(keepdims), np.intp, loc), scalar=True)


@handles("linalg.norm")
def norm(ctx, x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm's vector norms; matrix norms other than Frobenius run as NumPy.
    (NumPy's full-array 2-norm is a BLAS dot, whose summation order differs from the
    pairwise sum here: results may differ in the last bits.)"""
    b, loc = ctx.builder, ctx.loc()
    n = node_of(ctx, x)
    a = b.aval(n)
    if a.dtype.kind == "c":
        raise RunForReal(x)
    if a.dtype.kind != "f":
        n = b.astype(n, np.float64, loc)
    axes = normalize_axes(axis, a.ndim) if axis is not None else tuple(range(a.ndim))
    if len(axes) == 2 or (axis is None and a.ndim == 2):
        if ord not in (None, "fro", "f"):
            raise RunForReal(ord)
        ord = None
    elif len(axes) != 1:
        raise RunForReal(axis)
    keep = bool(keepdims)
    # NumPy's own steps (numpy/linalg/_linalg.py) warn from its lines, each computation
    # (a square the user's line shares warns there too): the full 2-norm's x.dot(x) as
    # "dot", an axis's squares and sums as "multiply" and "reduce"
    full = axis is None and (ord is None or (ord in ("fro", "f") and a.ndim == 2) or (ord == 2 and a.ndim == 1))
    float_dtype = str(a.dtype if a.dtype.kind == "f" else np.dtype(np.float64))
    # (a matrix's Frobenius norm over two axes given: NumPy's matrix branch, other lines)
    options = ((("axis", (0, 1)),) if len(axes) == 2 and axis is not None else ()) + \
        (() if ord is None else (("ord", ord),))

    def step(op: str) -> tuple[tuple[str, int] | None, str | None]:
        return numpy_step_line("linalg.norm", float_dtype, full, op, 0, options), (op if op == "dot" else None)
    since = len(b.nodes)
    with ctx.numpy_call_steps(
            {"multiply": step("dot"), "sum": step("dot"), "astype": step("dot")} if full and ord in (None, 2, "fro", "f")
            else {"multiply": step("multiply"), "sum": step("reduce")} if ord in (None, 2)
            else {"sum": step("reduce")} if ord == 1
            else {}):   # (a max or min of absolute values: no floating-point errors)
        if (ord is None or ord == 2) and axis is None and a.dtype == np.float16:
            # NumPy's norm over every axis is sqrt(x.dot(x)), and float16's dot multiplies and
            # adds in float32, rounding once at the end: squares rounded to half lose the
            # small values (1,000 halves of 1e-4: 0.003164, not 0.0)
            n32 = b.astype(n, np.float32, loc)
            sq = b.reduce("sum", b.elemwise("multiply", [n32, n32], loc), axes, keep, None, loc)
            out = b.elemwise("sqrt", [b.astype(sq, np.float16, loc)], loc)
        elif ord is None or ord == 2:
            sq = b.elemwise("multiply", [n, n], loc)
            out = b.elemwise("sqrt", [b.reduce("sum", sq, axes, keep, None, loc)], loc)
        elif ord == 1:
            out = b.reduce("sum", b.elemwise("absolute", [n], loc), axes, keep, None, loc)
        elif ord in (np.inf, -np.inf):
            out = b.reduce("max" if ord > 0 else "min", b.elemwise("absolute", [n], loc), axes, keep, None, loc)
        else:
            raise RunForReal(ord)
        ctx.numpy_internal(since)
    return wrap(ctx, out, scalar=True)
