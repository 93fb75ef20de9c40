"""Ufuncs on tracers: NumPy's own loop selection (NEP 50 weak Python scalars), the fast
paths of the `**` operator, exact comparisons with out-of-range Python integers, and
in-place updates (`x += 1`, `out=`), which change the tracer as NumPy changes the array."""
from __future__ import annotations

import operator as _operator
from typing import Any, Mapping, Sequence

import numpy as np

from ..ops import OPS, SUPPORTED_DTYPES, UFUNC_OPS, Aval, OpaqueFn, ShapeError, broadcast_shapes
from .core import TraceContext, Tracer
from .mutate import update_in_place
from .numba_calls import TracedNumba, is_numba_ufunc
from .operands import RunForReal, Weak, cupy_decides_out_of_range_ints, materialise, operand, resolution_dtypes, wrap
from .realrun import run_for_real
from .values import writeable
from .reductions import reduce as reduce_
from .shapes import k_ordered
from .registry import call_function

COMPARISONS = {"equal": _operator.eq, "not_equal": _operator.ne, "less": _operator.lt,
               "less_equal": _operator.le, "greater": _operator.gt, "greater_equal": _operator.ge}


def call_ufunc(ctx: TraceContext, ufunc: Any, opname: str, args: Sequence[Any], kwargs: Mapping[str, Any],
               *, operator: bool = False) -> Any:
    """`ufunc(*args, **kwargs)` on tracers: a node, or plain NumPy where fuselab's rules
    do not apply (NumPy then gives its own result or its own error)."""
    try:
        return _call(ctx, opname, args, kwargs, operator)
    except (RunForReal, ShapeError):
        return run_for_real(ctx, f"np.{OPS[opname].xp_name}", ufunc, args, kwargs)


def _call(ctx: TraceContext, opname: str, args: Sequence[Any], kwargs: Mapping[str, Any],
          operator: bool) -> Any:
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    where = kwargs.pop("where", True)
    dtype = kwargs.pop("dtype", None)
    if kwargs.pop("casting", "same_kind") != "same_kind" or kwargs:
        raise RunForReal(kwargs)
    if isinstance(out, tuple):
        if len(out) != 1:
            raise RunForReal(out)
        out = out[0]
    if where is not True and (out is None or not ctx.uses_cupy):
        # NumPy computes only where the mask is True: the elements it skips give no
        # floating-point warnings (np.sqrt(x, out=o, where=x > 0)); without out= they are
        # NumPy's uninitialised memory. Plain NumPy runs it. (CuPy gives no warnings: a
        # masked update of a traced out= stays in the graph.)
        raise RunForReal(where)
    if out is not None:
        if not isinstance(out, Tracer):
            raise RunForReal(out)  # writing into an untraced object: plain NumPy does it
        return inplace(ctx, out, opname, args, dtype, where)
    return k_ordered(ctx, wrap(ctx, elementwise(ctx, opname, args, dtype, operator), scalar=True), args)


def elementwise(ctx: TraceContext, opname: str, args: Sequence[Any], dtype: Any = None,
                operator: bool = False) -> int:
    """The node of `ufunc(*args)` as NumPy computes it."""
    ops = [operand(ctx, a) for a in args]
    cupy_decides_out_of_range_ints(ctx, ops)
    xp_name = OPS[opname].xp_name
    assert xp_name is not None
    if opname in COMPARISONS:
        folded = _out_of_range_comparison(ctx, opname, ops)
        if folded is not None:
            return folded
    scalar_base = isinstance(args[0], Tracer) and args[0]._scalar
    # NumPy scalars take scalar math (np.True_ ** 2 is int64, not square's int8), and
    # cupy.ndarray's ** is cupy.power (bool ** 2 is int64 on CuPy 14)
    if operator and xp_name == "power" and isinstance(ops[1], Weak) and not isinstance(ops[0], Weak) \
            and not scalar_base and not ctx.uses_cupy:
        fast = _power_fast_path(ctx, ops[0], ops[1].value)
        if fast is not None:
            return fast
    dts = resolution_dtypes(ctx, ops)
    uf = getattr(np, xp_name)
    # dtype= fixes the output's dtype in the loop's signature (not the output array's
    # dtype): NumPy then picks the loop for it (np.add(i8, 1, dtype=f4) runs add's f4 loop)
    sig = {} if dtype is None else {"signature": (None,) * len(dts) + (np.dtype(dtype),)}
    try:
        loop = tuple(np.dtype(d) for d in uf.resolve_dtypes((*dts, None), **sig))
    except TypeError:
        raise RunForReal(dts) from None  # NumPy has no loop: it raises its own error
    if any(d not in SUPPORTED_DTYPES for d in loop):
        return _library_ufunc(ctx, xp_name, ops, loop)
    b, loc = ctx.builder, ctx.loc()
    nodes = materialise(ctx, ops, loop[:-1])
    if dtype is not None:  # dtype= picks another loop: NumPy casts the operands to it
        # (named "cast" in its warnings: NumPy casts small operands whole before the loop)
        nodes = [b.astype(n, dt, loc) for n, dt in zip(nodes, loop[:-1])]
    try:
        node = b.elemwise(opname, nodes, loc)
    except ValueError as e:
        if str(e).startswith("Integers to negative integer powers"):
            # NumPy raises; CuPy computes: let CuPy run it. NumPy's own words where the
            # cell catches it (the graph's adds a hint for an error shown to the user)
            if ctx.uses_cupy:
                raise RunForReal(ops) from None
            if ctx.in_try():
                raise ValueError("Integers to negative integer powers are not allowed.") from None
        raise
    if b.aval(node).dtype != loop[-1]:
        node = ufunc_cast(ctx, node, loop[-1], xp_name)
    return node


def ufunc_cast(ctx: TraceContext, node: int, dtype: Any, xp_name: str) -> int:
    """A cast NumPy makes inside a ufunc's loop (the result into out=): its floating-point
    errors are the ufunc's ("overflow encountered in add" for `f32 += np.float64(1e300)`),
    not a cast's."""
    cast = ctx.builder.astype(node, dtype, ctx.loc())
    if cast != node and ctx.builder.nodes[cast].op == "astype":
        ctx.labels[cast] = getattr(np, xp_name).__name__
    return cast


def _out_of_range_comparison(ctx: TraceContext, opname: str, ops: Sequence[int | Weak]) -> int | None:
    """NumPy 2 compares integer arrays with Python integers outside their dtype exactly
    (`u8 > -2` is all True, `u8 == 300` all False): the result does not depend on the
    values, so it is a constant array."""
    if len(ops) != 2 or sum(isinstance(o, Weak) for o in ops) != 1:
        return None
    k = 0 if isinstance(ops[0], Weak) else 1
    weak, arr = ops[k], ops[1 - k]
    assert isinstance(weak, Weak) and not isinstance(arr, Weak)
    v = weak.value
    aval = ctx.builder.aval(arr)
    if type(v) is not int or aval.dtype.kind not in "iu":
        return None
    info = np.iinfo(aval.dtype)
    if info.min <= v <= info.max:
        return None
    sample = int(info.min)  # every element compares with v as any one does
    left, right = (v, sample) if k == 0 else (sample, v)
    result = bool(COMPARISONS[opname](left, right))
    return ctx.builder.full(aval.shape, result, np.bool_, ctx.loc())


def _power_fast_path(ctx: TraceContext, base: int, exponent: Any) -> int | None:
    """`a ** 2` is np.square(a) for every dtype (so bool ** 2 is int8), and for inexact
    arrays `a ** 0.5` is np.sqrt(a) and `a ** -1` np.reciprocal(a): ndarray's operator
    takes these fast paths (Python int 2 and -1, float 0.5 only; `c ** 2.0` of a complex
    array is np.power), with their own results (NumPy scalars do not)."""
    kind = ctx.builder.aval(base).dtype.kind
    if type(exponent) is int and exponent == 2:
        name = "square"
    elif kind in "fc" and type(exponent) is float and exponent == 0.5:
        name = "sqrt"
    elif kind in "fc" and type(exponent) is int and exponent == -1:
        name = "reciprocal"
    else:
        return None
    if kind == "c":  # complex math runs through the library (see _library_ufunc), fast path included
        dt = ctx.builder.aval(base).dtype
        return _library_ufunc(ctx, name, [base], (dt, dt))
    return ctx.builder.elemwise(name, [base], ctx.loc())


def _library_ufunc(ctx: TraceContext, xp_name: str, ops: Sequence[int | Weak], loop: Sequence[np.dtype]) -> int:
    """Ufuncs over dtypes fuselab generates no code for (complex): one opaque node that
    runs the library's ufunc; its shape and dtype are NumPy's rules, not a probe."""
    consts = [o.value if isinstance(o, Weak) else None for o in ops]
    arrays = [o for o in ops if not isinstance(o, Weak)]
    shape = broadcast_shapes(*(ctx.builder.aval(a).shape for a in arrays))

    def call(xp, *vals):
        it = iter(vals)
        return getattr(xp, xp_name)(*[c if c is not None else next(it) for c in consts])

    return ctx.builder.opaque(OpaqueFn(xp_name, call), arrays, Aval(shape, np.dtype(loop[-1])), (), ctx.loc())


def inplace(ctx: TraceContext, target: Tracer, opname: str, args: Sequence[Any], dtype: Any = None,
            where: Any = True) -> Tracer:
    """`np.add(a, b, out=t)` / `t += b`: NumPy computes the ufunc and casts the result
    into t ('same_kind'); the tracer t then stands for the updated array."""
    if not writeable(ctx, target):   # (np.broadcast_to's view, a read-only array or a view of one)
        raise ValueError("output array is read-only")
    node = elementwise(ctx, opname, args, dtype)
    b, loc = ctx.builder, ctx.loc()
    res, tgt = b.aval(node), target.aval
    if broadcast_shapes(res.shape, tgt.shape) != tgt.shape or \
            not np.can_cast(res.dtype, tgt.dtype, "same_kind"):
        raise RunForReal(target)  # NumPy's own error
    node = ufunc_cast(ctx, node, tgt.dtype, OPS[opname].xp_name)
    # NumPy writes the (broadcast) result into the target's own memory: the target's new
    # value is a full array of its shape, never a broadcast view of the result (which
    # would bind with zero strides, read-only)
    cond = operand_node(ctx, where) if where is not True else b.const(True, np.bool_, loc)
    if where is not True or b.aval(node).shape != tgt.shape:
        node = b.where(cond, node, target._node, loc)
    update_in_place(ctx, target, node, f"np.{OPS[opname].xp_name}(..., out=)")
    return target


def operand_node(ctx: TraceContext, x: Any) -> int:
    o = operand(ctx, x)
    if isinstance(o, Weak):
        return ctx.builder.const(o.value, np.asarray(o.value).dtype, ctx.loc())
    return o


_UFUNC_REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
                 "logical_or": "any", "logical_and": "all"}


def _all_real_numbers(values: Sequence[Any]) -> bool:
    """Whether every operand is an integer or real floating array or scalar (not bool,
    not complex, nothing else)."""
    for v in values:
        dt = v.aval.dtype if isinstance(v, Tracer) else getattr(v, "dtype", None)
        if dt is None:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return False
        elif np.dtype(dt).kind not in "iuf":
            return False
    return True


_CUPY_UFUNC_KWARGS = frozenset({"out", "dtype", "casting"})


def dispatch_ufunc(ctx: TraceContext, ufunc: Any, method: str, inputs: Sequence[Any], kwargs: Mapping[str, Any],
                   name: str | None = None) -> Any:
    """`ufunc.method(*inputs, **kwargs)` with tracers among the inputs (`__array_ufunc__`,
    and the ufuncs of the np / cp proxies, which give the name: CuPy's ufuncs are
    called `cupy_exp`)."""
    if is_numba_ufunc(ufunc):   # numba.vectorize (named after the user's function, not an op)
        if method == "__call__":
            return TracedNumba(ufunc)(*inputs, **kwargs)
        return run_for_real(ctx, f"{ufunc.__name__}.{method}", getattr(ufunc, method), inputs, kwargs)
    name = name or getattr(ufunc, "__name__", str(ufunc))
    opname = UFUNC_OPS.get(name)
    if name == "conjugate" and not _all_real_numbers(inputs):
        opname = None   # (np.positive only for real numbers: a complex conjugate, bool's own loop)
    if ctx.uses_cupy and (method != "__call__" or not _CUPY_UFUNC_KWARGS.issuperset(kwargs)):
        # CuPy's ufuncs take out, dtype and casting only (where=, order=: TypeError), and
        # their reduce / accumulate / at / outer have their own limits: CuPy decides
        return run_for_real(ctx, f"np.{name}.{method}" if method != "__call__" else f"np.{name}",
                            getattr(ufunc, method), inputs, kwargs)
    if method == "__call__":
        if opname is not None:
            return call_ufunc(ctx, ufunc, opname, inputs, kwargs)
        return call_function(ctx, name, ufunc, inputs, kwargs)  # a ufunc fuselab has no code for
    if method == "reduce" and name in _UFUNC_REDUCE:
        params = dict(zip(("axis", "dtype", "out", "keepdims"), inputs[1:]))
        params.update(kwargs)
        outer = ctx.calling_method, ctx.calling_path
        ctx.calling_method, ctx.calling_path = False, f"{name}.reduce"   # (its warnings: the user's line)
        try:
            return reduce_(ctx, _UFUNC_REDUCE[name], inputs[0], params.pop("axis", 0),
                           params.pop("keepdims", False), params.pop("dtype", None), **params)
        except (RunForReal, ShapeError, TypeError):
            pass
        finally:
            ctx.calling_method, ctx.calling_path = outer
    # (`ufunc.at` too: it writes into its first operand, which the real run then sees
    # changed, and returns None, as NumPy does)
    return run_for_real(ctx, f"np.{name}.{method}", getattr(ufunc, method), inputs, kwargs)
