"""The NumPy / CuPy surface seen by a traced cell: ufuncs, functions, methods, operators,
and the module proxies that stand in for `np` / `cp` while a cell is traced.

Each supported NumPy function is one small handler here that records IR nodes; anything
else becomes an opaque node that runs through the real library.
"""
from __future__ import annotations

import math
import operator
from types import FunctionType, ModuleType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .errors import TraceError, UnsupportedError
from .ops import UFUNC_OPS, Aval, OpaqueFn, ShapeError, normalize_axes
from .trace import (Tracer, TraceContext, Weak, _DATA_DEPENDENT_HINT, apply_ufunc, current, is_array,
                    is_cupy_array, opaque_call, operand)

HANDLERS: dict[str, Callable[..., Any]] = {}


def handles(*names: str):
    def deco(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn
    return deco


def _node(ctx: TraceContext, x: Any) -> int:
    """A node for an array operand (Python scalars become weak constants of a default dtype)."""
    o = operand(ctx, x)
    if isinstance(o, Weak):
        dt = np.asarray(o.value).dtype
        return ctx.builder.const(o.value, dt, ctx.loc())
    return o


def _t(ctx: TraceContext, node: int) -> Tracer:
    return Tracer(ctx, node)


def _shape_errors(fn):
    """ShapeError from the builder -> a TraceError that names the user's line."""
    def wrapper(ctx, *a, **k):
        try:
            return fn(ctx, *a, **k)
        except ShapeError as e:
            raise TraceError(str(e), ctx.loc(), "check the operands' shapes") from None
        except IndexError as e:
            raise TraceError(f"IndexError: {e}", ctx.loc(), "check the index against the array's shape") from None
    wrapper.__name__ = fn.__name__
    return wrapper


# ---------------------------------------------------------------------------
# Ufunc dispatch
# ---------------------------------------------------------------------------

def ufunc_op(name: str) -> str | None:
    return UFUNC_OPS.get(name)


def dispatch_ufunc(ctx: TraceContext, ufunc: Any, method: str, inputs: Sequence[Any], kwargs: dict):
    name = getattr(ufunc, "__name__", str(ufunc))
    opname = ufunc_op(name)
    if method == "__call__" and opname is not None:
        return apply_ufunc(ctx, opname, inputs, kwargs)
    if method == "reduce" and name in _UFUNC_REDUCE:
        params = dict(zip(("axis", "dtype", "out", "keepdims"), inputs[1:]))
        params.update(kwargs)
        return reduction(ctx, _UFUNC_REDUCE[name], inputs[0], params.get("axis", 0),
                         params.get("keepdims", False), params.get("dtype"), params.get("out"))
    # anything else (accumulate, outer, unknown ufuncs): the library runs it
    def call(xp, *vals, **kw):
        return getattr(getattr(xp, name), method)(*vals, **kw) if method != "__call__" \
            else getattr(xp, name)(*vals, **kw)
    nodes = [_node(ctx, x) for x in inputs]
    kw = tuple(sorted(kwargs.items()))
    return opaque_call(ctx, OpaqueFn(f"{name}.{method}" if method != "__call__" else name, call),
                       nodes, lambda *a: call(np, *a, **dict(kw)), kw)


_UFUNC_REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
                 "logical_or": "any", "logical_and": "all"}


def dispatch_function(ctx: TraceContext, func: Any, args: Sequence[Any], kwargs: dict):
    name = func.__name__
    qual = _qualname(func)
    handler = HANDLERS.get(qual) or (HANDLERS.get(name) if "." not in qual else None)
    if handler is not None:
        return handler(ctx, *args, **kwargs)
    return generic_opaque(ctx, qual, args, kwargs)


def _qualname(func: Any) -> str:
    """'sum', 'linalg.norm', 'fft.fft': the function's path below numpy / cupy."""
    mod = (getattr(func, "__module__", "") or "").split(".")
    name = func.__name__
    sub = [m for m in mod[1:] if not m.startswith("_")]
    return ".".join(sub + [name])


def _xp_attr(xp: ModuleType, path: str) -> Any:
    obj: Any = xp
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def generic_opaque(ctx: TraceContext, path: str, args: Sequence[Any], kwargs: Mapping[str, Any]):
    """Run a NumPy function fuselab does not fuse through the library, as one opaque node.

    Array arguments (top level or in a list/tuple) become graph edges; everything else is
    passed through as a static argument."""
    arrays: list[int] = []

    def lift(v):
        if isinstance(v, Tracer) or is_array(v):
            arrays.append(_node(ctx, v))
            return _Slot(len(arrays) - 1)
        if isinstance(v, (list, tuple)) and any(isinstance(e, Tracer) or is_array(e) for e in v):
            return type(v)(lift(e) for e in v)
        return v

    largs = [lift(a) for a in args]
    lkw = {k: lift(v) for k, v in kwargs.items()}

    def call(xp, *vals):
        def put(v):
            if isinstance(v, _Slot):
                return vals[v.i]
            if isinstance(v, (list, tuple)):
                return type(v)(put(e) for e in v)
            return v
        return _xp_attr(xp, path)(*[put(a) for a in largs], **{k: put(v) for k, v in lkw.items()})

    fn = OpaqueFn(path, call)
    shape_rule = _SHAPE_RULES.get(path)
    return opaque_call(ctx, fn, arrays, shape_rule or (lambda *d: call(np, *d)))


class _Slot:
    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __repr__(self) -> str:
        return f"<array {self.i}>"


def _matmul_probe(a, b):
    # the result of a stand-in matmul, without doing the O(n^3) work
    out = np.matmul(a[..., :1, :], b[..., :, :1]) if a.ndim >= 2 and b.ndim >= 2 else np.matmul(a, b)
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]) \
        if a.ndim >= 2 and b.ndim >= 2 else out.shape
    return np.broadcast_to(np.zeros((), out.dtype), shape)


_SHAPE_RULES: dict[str, Callable[..., Any]] = {"matmul": _matmul_probe, "dot": lambda a, b: (
    _matmul_probe(a, b) if a.ndim == 2 and b.ndim == 2 else np.dot(a, b))}


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------

def _no_out(ctx, fname, out=None, where=None, initial=None):
    if out is not None or where is not None or initial is not None:
        raise UnsupportedError(f"{fname} with out=/where=/initial= is not supported inside %%fuse",
                               ctx.loc(), "drop the argument and combine with np.where afterwards")


@_shape_errors
def reduction(ctx: TraceContext, opname: str, x: Any, axis=None, keepdims=False, dtype=None,
              out=None, where=None, initial=None):
    _no_out(ctx, opname, out, where, initial)
    if keepdims is np._NoValue:
        keepdims = False
    n = _node(ctx, x)
    if opname in ("any", "all"):
        n = ctx.builder.astype(n, bool, ctx.loc())
    return _t(ctx, ctx.builder.reduce(opname, n, axis, bool(keepdims), dtype, ctx.loc()))


for _name in ("sum", "prod", "max", "min", "any", "all"):
    handles(_name)(lambda ctx, x, axis=None, dtype=None, out=None, keepdims=False, _op=_name, **kw:
                   reduction(ctx, _op, x, axis, keepdims, dtype, out, **kw))
handles("amax")(lambda ctx, x, axis=None, out=None, keepdims=False, **kw: reduction(ctx, "max", x, axis, keepdims, None, out, **kw))
handles("amin")(lambda ctx, x, axis=None, out=None, keepdims=False, **kw: reduction(ctx, "min", x, axis, keepdims, None, out, **kw))
# np.max/np.min take no dtype; keep their positional order (a, axis, out, keepdims)
handles("max")(lambda ctx, x, axis=None, out=None, keepdims=False, **kw: reduction(ctx, "max", x, axis, keepdims, None, out, **kw))
handles("min")(lambda ctx, x, axis=None, out=None, keepdims=False, **kw: reduction(ctx, "min", x, axis, keepdims, None, out, **kw))


def _argreducer(opname):
    @_shape_errors
    def h(ctx, x, axis=None, out=None, *, keepdims=False):
        _no_out(ctx, opname, out)
        return _t(ctx, ctx.builder.reduce(opname, _node(ctx, x), axis, bool(keepdims), None, ctx.loc()))
    return h


HANDLERS["argmax"] = _argreducer("argmax")
HANDLERS["argmin"] = _argreducer("argmin")


def _acc_dtype(dt: np.dtype) -> np.dtype:
    """NumPy's mean/var accumulate ints in float64 and float16 in float32."""
    if dt.kind in "biu":
        return np.dtype(np.float64)
    if dt == np.float16:
        return np.dtype(np.float32)
    return dt


def _count(shape, axes) -> int:
    return int(math.prod(shape[a] for a in axes))


@handles("mean")
@_shape_errors
def mean(ctx, x, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _no_out(ctx, "mean", out, where)
    b, loc = ctx.builder, ctx.loc()
    n = _node(ctx, x)
    a = b.aval(n)
    axes = normalize_axes(axis, a.ndim)
    acc = np.dtype(dtype) if dtype is not None else _acc_dtype(a.dtype)
    s = b.reduce("sum", n, axis, bool(keepdims), acc, loc)
    m = b.elemwise("true_divide", [s, b.const(_count(a.shape, axes), acc, loc)], loc)
    if dtype is None and a.dtype == np.float16:
        m = b.astype(m, np.float16, loc)
    return _t(ctx, m)


@_shape_errors
def _var_node(ctx, x, axis=None, dtype=None, keepdims=False, ddof=0) -> int:
    b, loc = ctx.builder, ctx.loc()
    n = _node(ctx, x)
    a = b.aval(n)
    axes = normalize_axes(axis, a.ndim)
    acc = np.dtype(dtype) if dtype is not None else _acc_dtype(a.dtype)
    cnt = _count(a.shape, axes)
    s = b.reduce("sum", n, axis, True, acc, loc)
    m = b.elemwise("true_divide", [s, b.const(cnt, acc, loc)], loc)
    d = b.elemwise("subtract", [n, m], loc)
    sq = b.elemwise("multiply", [d, d], loc)
    ss = b.reduce("sum", sq, axis, bool(keepdims), acc, loc)
    v = b.elemwise("true_divide", [ss, b.const(max(cnt - ddof, 0), acc, loc)], loc)
    if dtype is None and a.dtype == np.float16:
        v = b.astype(v, np.float16, loc)
    return v


@handles("var")
def var(ctx, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_out(ctx, "var", out, kw.get("where"))
    return _t(ctx, _var_node(ctx, x, axis, dtype, keepdims, ddof))


@handles("std")
def std(ctx, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_out(ctx, "std", out, kw.get("where"))
    v = _var_node(ctx, x, axis, dtype, keepdims, ddof)
    return _t(ctx, ctx.builder.elemwise("sqrt", [v], ctx.loc()))


@handles("count_nonzero")
@_shape_errors
def count_nonzero(ctx, x, axis=None, *, keepdims=False):
    b, loc = ctx.builder, ctx.loc()
    nz = b.astype(_node(ctx, x), bool, loc)
    return _t(ctx, b.reduce("sum", nz, axis, bool(keepdims), np.intp, loc))


@handles("linalg.norm")
@_shape_errors
def norm(ctx, x, ord=None, axis=None, keepdims=False):
    b, loc = ctx.builder, ctx.loc()
    n = _node(ctx, x)
    a = b.aval(n)
    if a.dtype.kind not in "fc":
        n = b.astype(n, np.float64, loc)
    if axis is None and ord is not None and a.ndim != 1:
        return generic_opaque(ctx, "linalg.norm", (x,), {"ord": ord, "keepdims": keepdims})
    if isinstance(axis, tuple) and len(axis) == 2:
        if ord not in (None, "fro"):
            return generic_opaque(ctx, "linalg.norm", (x,), {"ord": ord, "axis": axis, "keepdims": keepdims})
        ord = None
    if ord is None or ord == 2:
        sq = b.elemwise("multiply", [n, n], loc)
        return _t(ctx, b.elemwise("sqrt", [b.reduce("sum", sq, axis, bool(keepdims), None, loc)], loc))
    if ord == 1:
        return _t(ctx, b.reduce("sum", b.elemwise("absolute", [n], loc), axis, bool(keepdims), None, loc))
    if ord in (np.inf, -np.inf):
        return _t(ctx, b.reduce("max" if ord > 0 else "min", b.elemwise("absolute", [n], loc), axis,
                                bool(keepdims), None, loc))
    return generic_opaque(ctx, "linalg.norm", (x,), {"ord": ord, "axis": axis, "keepdims": keepdims})


# ---------------------------------------------------------------------------
# Element-wise functions that are not ufuncs
# ---------------------------------------------------------------------------

@handles("where")
@_shape_errors
def where(ctx, cond, x=None, y=None):
    if x is None and y is None:
        raise TraceError("np.where(cond) with one argument returns indices whose number depends on "
                         "the data", ctx.loc(), "use the three-argument np.where(cond, a, b)")
    b = ctx.builder
    ops = [operand(ctx, v) for v in (x, y)]
    # NEP 50: where(c, array, 0.0) takes the array's dtype
    dts = [type(o.value) if isinstance(o, Weak) else b.aval(o).dtype for o in ops]
    strong = [d for d in dts if isinstance(d, np.dtype)]
    if strong:
        dt = np.result_type(*strong, *[o.value for o in ops if isinstance(o, Weak)])
    else:
        dt = np.result_type(*[o.value for o in ops])
    from .trace import materialise
    xn, yn = materialise(ctx, ops, [dt, dt])
    return _t(ctx, b.where(_node(ctx, cond), xn, yn, ctx.loc()))


@handles("clip")
def clip(ctx, x, a_min=None, a_max=None, out=None, *, min=None, max=None, **kw):
    if out is not None:
        _no_out(ctx, "clip", out)
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    r = x
    if lo is not None:
        r = apply_ufunc(ctx, "maximum", (r, lo), {})
    if hi is not None:
        r = apply_ufunc(ctx, "minimum", (r, hi), {})
    return r if isinstance(r, Tracer) else _t(ctx, _node(ctx, r))


@handles("round", "around")
def round_(ctx, x, decimals=0, out=None):
    _no_out(ctx, "round", out)
    if decimals == 0:
        return apply_ufunc(ctx, "rint", (x,), {})
    # NumPy: rint(x * 10**d) / 10**d for floats
    f = 10.0 ** decimals
    if decimals > 0:
        return apply_ufunc(ctx, "true_divide", (apply_ufunc(ctx, "rint", (apply_ufunc(ctx, "multiply", (x, f), {}),), {}), f), {})
    return apply_ufunc(ctx, "multiply", (apply_ufunc(ctx, "rint", (apply_ufunc(ctx, "true_divide", (x, 1.0 / f), {}),), {}), 1.0 / f), {})


# ---------------------------------------------------------------------------
# Views and shape manipulation
# ---------------------------------------------------------------------------

def _resolve_shape(size: int, shape: Sequence[int]) -> tuple[int, ...]:
    shape = [int(d) for d in shape]
    if shape.count(-1) > 1:
        raise ShapeError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise ShapeError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
        shape[shape.index(-1)] = size // known
    return tuple(shape)


@handles("reshape")
@_shape_errors
def reshape(ctx, x, *shape, newshape=None, order="C", copy=None, **kw):
    if kw.get("shape") is not None:
        shape = (kw["shape"],)
    if newshape is not None:
        shape = (newshape,)
    if order not in ("C", "A"):
        raise UnsupportedError(f"reshape(order={order!r}) is not supported", ctx.loc(), "use order='C'")
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    n = _node(ctx, x)
    new = _resolve_shape(ctx.builder.aval(n).size, shape)
    return _t(ctx, ctx.builder.reshape(n, new, ctx.loc()))


@handles("ravel")
def ravel(ctx, x, order="C"):
    return reshape(ctx, x, -1, order=order)


@handles("transpose", "permute_dims")
@_shape_errors
def transpose(ctx, x, *axes):
    n = _node(ctx, x)
    nd = ctx.builder.aval(n).ndim
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    if not axes:
        perm = tuple(reversed(range(nd)))
    else:
        perm = tuple(int(a) % nd for a in axes)
    return _t(ctx, ctx.builder.transpose(n, perm, ctx.loc()))


@handles("swapaxes")
def swapaxes(ctx, x, a, b):
    nd = _aval(ctx, x).ndim
    perm = list(range(nd))
    a, b = a % nd, b % nd
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(ctx, x, tuple(perm))


@handles("moveaxis")
def moveaxis(ctx, x, source, destination):
    nd = _aval(ctx, x).ndim
    src = (source % nd,) if isinstance(source, int) else tuple(s % nd for s in source)
    dst = (destination % nd,) if isinstance(destination, int) else tuple(d % nd for d in destination)
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(ctx, x, tuple(order))


def _aval(ctx, x) -> Aval:
    return ctx.builder.aval(_node(ctx, x))


@handles("expand_dims")
@_shape_errors
def expand_dims(ctx, x, axis):
    a = _aval(ctx, x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    nd = a.ndim + len(axes)
    axes = normalize_axes(axes, nd)
    it = iter(a.shape)
    shape = tuple(1 if i in axes else next(it) for i in range(nd))
    return _t(ctx, ctx.builder.reshape(_node(ctx, x), shape, ctx.loc()))


@handles("squeeze")
@_shape_errors
def squeeze(ctx, x, axis=None):
    a = _aval(ctx, x)
    if axis is None:
        axes = tuple(i for i, d in enumerate(a.shape) if d == 1)
    else:
        axes = normalize_axes(axis, a.ndim)
        for i in axes:
            if a.shape[i] != 1:
                raise ShapeError("cannot select an axis to squeeze out which has size not equal to one")
    shape = tuple(d for i, d in enumerate(a.shape) if i not in axes)
    return _t(ctx, ctx.builder.reshape(_node(ctx, x), shape, ctx.loc()))


@handles("broadcast_to")
@_shape_errors
def broadcast_to(ctx, x, shape, subok=False):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _t(ctx, ctx.builder.broadcast_to(_node(ctx, x), shape, ctx.loc()))


def _atleast_n(nd_min):
    def h(ctx, *arys):
        outs = []
        for x in arys:
            a = _aval(ctx, x)
            shape = a.shape
            if a.ndim < nd_min:
                shape = (1,) * (nd_min - a.ndim) + shape
            outs.append(_t(ctx, ctx.builder.reshape(_node(ctx, x), shape, ctx.loc())))
        return outs[0] if len(outs) == 1 else outs
    return h


HANDLERS["atleast_1d"] = _atleast_n(1)
HANDLERS["atleast_2d"] = _atleast_n(2)


@handles("copy", "ascontiguousarray", "asarray", "array", "asanyarray")
def copy(ctx, x, *a, dtype=None, **kw):
    t = _t(ctx, _node(ctx, x))
    return astype(ctx, t, dtype) if dtype is not None else t


def astype(ctx, x, dtype, *a, **kw) -> Tracer:
    dt = np.dtype(dtype)
    if dt not in {np.dtype(d) for d in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                        "uint32", "uint64", "float16", "float32", "float64")}:
        return generic_opaque(ctx, "asarray", (x,), {"dtype": dt})
    return _t(ctx, ctx.builder.astype(_node(ctx, x), dt, ctx.loc()))


@_shape_errors
def getitem(ctx: TraceContext, x: Tracer, key: Any) -> Tracer:
    """Basic indexing (ints, slices, None, ...) is a view; anything else is opaque."""
    key = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, Tracer) for k in key):
        k0 = next(k for k in key if isinstance(k, Tracer))
        if k0.dtype == np.bool_:
            raise TraceError("boolean-mask indexing gives a result whose size depends on the data",
                             ctx.loc(), "use np.where(mask, x, 0) (or another fill value) to keep the shape")
    if not all(k is None or k is Ellipsis or isinstance(k, (slice, int, np.integer)) for k in key) or \
            any(isinstance(k, bool) for k in key):
        return _fancy_getitem(ctx, x, key)
    a = _aval(ctx, x)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > a.ndim:
        raise IndexError(f"too many indices for array: array is {a.ndim}-dimensional, but {n_real} were indexed")
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (a.ndim - n_real) + key[i + 1:]
    else:
        key = key + (slice(None),) * (a.ndim - n_real)
    starts, steps, lengths, final = [], [], [], []
    dim = 0
    for k in key:
        if k is None:
            final.append(1)
            continue
        size = a.shape[dim]
        if isinstance(k, slice):
            start, stop, step = k.indices(size)
            n = len(range(start, stop, step))
            starts.append(start if n else 0)
            steps.append(step)
            lengths.append(n)
            final.append(n)
        else:
            i = int(k)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {size}")
            starts.append(i % size)
            steps.append(1)
            lengths.append(1)
        dim += 1
    b, loc = ctx.builder, ctx.loc()
    n = b.slice(_node(ctx, x), starts, steps, lengths, loc)
    return _t(ctx, b.reshape(n, final, loc))


def _fancy_getitem(ctx, x, key):
    arrays: list[int] = [_node(ctx, x)]
    slots = []
    for k in key:
        if isinstance(k, Tracer) or is_array(k) or isinstance(k, (list,)):
            arrays.append(_node(ctx, k if not isinstance(k, list) else np.asarray(k)))
            slots.append(_Slot(len(arrays) - 1))
        else:
            slots.append(k)

    def call(xp, a, *idx):
        full = tuple(idx[s.i - 1] if isinstance(s, _Slot) else s for s in slots)
        return a[full]
    return opaque_call(ctx, OpaqueFn("getitem", call), arrays, lambda *d: call(np, *d))


# ---------------------------------------------------------------------------
# Creation
# ---------------------------------------------------------------------------

def _shape_arg(shape) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)


def _filled(value):
    def h(ctx, shape, dtype=float, order="C", **kw):
        return _t(ctx, ctx.builder.full(_shape_arg(shape), value, np.dtype(dtype if dtype is not None else float),
                                        ctx.loc()))
    return h


HANDLERS["zeros"] = _filled(0)
HANDLERS["empty"] = _filled(0)
HANDLERS["ones"] = _filled(1)


@handles("full")
def full(ctx, shape, fill_value, dtype=None, order="C", **kw):
    if isinstance(fill_value, Tracer) or is_array(fill_value):
        return broadcast_to(ctx, astype(ctx, fill_value, dtype) if dtype else fill_value, _shape_arg(shape))
    dt = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
    return _t(ctx, ctx.builder.full(_shape_arg(shape), fill_value, dt, ctx.loc()))


def _like(value):
    def h(ctx, x, dtype=None, order="K", subok=True, shape=None, **kw):
        a = _aval(ctx, x)
        return _t(ctx, ctx.builder.full(_shape_arg(shape) if shape is not None else a.shape, value,
                                        np.dtype(dtype) if dtype is not None else a.dtype, ctx.loc()))
    return h


HANDLERS["zeros_like"] = _like(0)
HANDLERS["empty_like"] = _like(0)
HANDLERS["ones_like"] = _like(1)


@handles("full_like")
def full_like(ctx, x, fill_value, dtype=None, order="K", subok=True, shape=None, **kw):
    a = _aval(ctx, x)
    return _t(ctx, ctx.builder.full(_shape_arg(shape) if shape is not None else a.shape, fill_value,
                                    np.dtype(dtype) if dtype is not None else a.dtype, ctx.loc()))


@handles("arange")
@_shape_errors
def arange(ctx, start, stop=None, step=None, dtype=None, **kw):
    for v in (start, stop, step):
        if isinstance(v, Tracer):
            raise TraceError("np.arange with a traced bound has a data-dependent length", ctx.loc(),
                             _DATA_DEPENDENT_HINT)
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    dt = np.dtype(dtype) if dtype is not None else np.result_type(start, stop, step)
    if dt.kind == "i" and dtype is None:
        dt = np.dtype(np.int_)
    return _t(ctx, ctx.builder.arange(start, stop, step, dt, ctx.loc()))


# ---------------------------------------------------------------------------
# Methods and operators of the tracer
# ---------------------------------------------------------------------------

def _method(fn):
    return lambda self, *a, **k: fn(self._ctx, self, *a, **k)


def _binop(name: str, reflected: bool = False):
    opname = UFUNC_OPS[name]

    def op(self, other):
        if not _operand_ok(other):
            return NotImplemented
        args = (other, self) if reflected else (self, other)
        return apply_ufunc(self._ctx, opname, args, {})
    return op


def _operand_ok(x: Any) -> bool:
    return isinstance(x, (Tracer, bool, int, float, np.generic, list, tuple)) or is_array(x)


def _install_tracer_api() -> None:
    T = Tracer
    for dunder, name in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                         ("truediv", "true_divide"), ("floordiv", "floor_divide"), ("mod", "remainder"),
                         ("pow", "power"), ("and", "bitwise_and"), ("or", "bitwise_or"),
                         ("xor", "bitwise_xor"), ("lshift", "left_shift"), ("rshift", "right_shift")]:
        setattr(T, f"__{dunder}__", _binop(name))
        setattr(T, f"__r{dunder}__", _binop(name, reflected=True))
        setattr(T, f"__i{dunder}__", _binop(name))  # rebinding, never mutating the user's array
    for dunder, name in [("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"),
                         ("gt", "greater"), ("ge", "greater_equal")]:
        setattr(T, f"__{dunder}__", _binop(name))
    T.__hash__ = object.__hash__
    T.__neg__ = lambda self: apply_ufunc(self._ctx, "negative", (self,), {})
    T.__pos__ = lambda self: apply_ufunc(self._ctx, "positive", (self,), {})
    T.__abs__ = lambda self: apply_ufunc(self._ctx, "absolute", (self,), {})
    T.__invert__ = lambda self: apply_ufunc(self._ctx, "invert" if self.dtype != np.bool_ else "logical_not", (self,), {})
    T.__matmul__ = lambda self, o: generic_opaque(self._ctx, "matmul", (self, o), {})
    T.__rmatmul__ = lambda self, o: generic_opaque(self._ctx, "matmul", (o, self), {})
    T.__getitem__ = lambda self, key: getitem(self._ctx, self, key)
    T.T = property(lambda self: transpose(self._ctx, self))
    T.mT = property(lambda self: swapaxes(self._ctx, self, -1, -2))
    T.real = property(lambda self: self if self.dtype.kind != "c" else generic_opaque(self._ctx, "real", (self,), {}))
    T.astype = _method(astype)
    for name in ("sum", "prod", "max", "min", "any", "all", "mean", "var", "std", "argmax", "argmin",
                 "reshape", "transpose", "ravel", "squeeze", "clip", "round", "swapaxes", "copy"):
        setattr(T, name, _method(HANDLERS[name]))
    T.flatten = lambda self, order="C": reshape(self._ctx, self, -1, order=order)
    T.dot = lambda self, other: generic_opaque(self._ctx, "dot", (self, other), {})
    T.conj = T.conjugate = lambda self: self if self.dtype.kind != "c" else apply_ufunc(self._ctx, "positive", (self,), {})
    T.view = lambda self, *a: self if not a else generic_opaque(self._ctx, "ndarray.view", (self, *a), {})
    for name in ("cumsum", "cumprod", "sort", "argsort", "nonzero", "take", "repeat", "trace", "diagonal"):
        setattr(T, name, _opaque_method(name))


def _opaque_method(name: str):
    def m(self, *a, **k):
        if name == "nonzero":
            raise TraceError(".nonzero() returns indices whose number depends on the data", self._ctx.loc(),
                             _DATA_DEPENDENT_HINT)
        if name == "sort":
            raise UnsupportedError("a.sort() sorts in place", self._ctx.loc(), "use a = np.sort(a)")
        return generic_opaque(self._ctx, name, (self, *a), k)
    return m


_install_tracer_api()


# ---------------------------------------------------------------------------
# Module proxies: `np` / `cp` inside a traced cell
# ---------------------------------------------------------------------------

_CREATION = {"zeros", "ones", "empty", "full", "arange", "zeros_like", "ones_like", "full_like",
             "empty_like"}


class TracingModule:
    """Stands in for numpy / cupy (and their submodules) while a cell is traced: calls that
    involve a tracer, or create arrays, are recorded; everything else is the real module."""

    def __init__(self, module: ModuleType, path: str = "") -> None:
        self._module = module
        self._path = path

    def __repr__(self) -> str:
        return f"<traced module {self._module.__name__}>"

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._module, name)
        path = f"{self._path}.{name}" if self._path else name
        if isinstance(real, ModuleType):
            return TracingModule(real, path)
        if not callable(real) or isinstance(real, type):
            return real
        is_ufunc = ufunc_op(name) is not None and not self._path
        if is_ufunc:
            return TracedUfunc(real, name)

        def traced(*args, **kwargs):
            ctx = current()
            involved = _mentions_tracer(args) or _mentions_tracer(kwargs.values())
            if not involved and path not in _CREATION:
                return real(*args, **kwargs)
            handler = HANDLERS.get(path)
            if handler is not None:
                return handler(ctx, *args, **kwargs)
            if name == "fuse" and not self._path:  # cp.fuse used as a decorator inside the cell
                return real(*args, **kwargs)
            return generic_opaque(ctx, path, args, kwargs)
        traced.__name__ = name
        traced.__wrapped__ = real
        return traced


class TracedUfunc:
    """np.exp / cp.exp inside a traced cell: records when given a tracer; `.reduce` too."""

    def __init__(self, real: Any, name: str) -> None:
        self._real = real
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        if _mentions_tracer(args) or _mentions_tracer(kwargs.values()):
            return apply_ufunc(current(), ufunc_op(self.__name__), args, kwargs)
        return self._real(*args, **kwargs)

    def _method(self, method: str):
        def call(*args, **kwargs):
            if _mentions_tracer(args):
                return dispatch_ufunc(current(), self._real, method, args, kwargs)
            return getattr(self._real, method)(*args, **kwargs)
        return call

    def __getattr__(self, attr: str) -> Any:
        if attr in ("reduce", "accumulate", "outer", "reduceat", "at"):
            return self._method(attr)
        return getattr(self._real, attr)


def _mentions_tracer(values) -> bool:
    for v in values:
        if isinstance(v, Tracer):
            return True
        if isinstance(v, (list, tuple)) and _mentions_tracer(v):
            return True
    return False


def _is_cupy_fusion(v: Any) -> bool:
    t = type(v)
    return t.__name__ == "Fusion" and t.__module__.startswith("cupy") and hasattr(v, "func")


class TracedFusion:
    """A cupy.fuse function: traced through its Python body, so two of them composed
    become one graph fuselab can fuse across."""

    def __init__(self, fusion: Any, func: Callable[..., Any] | None = None) -> None:
        self._fusion = fusion
        self.func = func or fusion.func
        self.__name__ = getattr(fusion, "name", None) or getattr(self.func, "__name__", "fused")

    def __call__(self, *args, **kwargs):
        if _mentions_tracer(args):
            return self.func(*args, **kwargs)
        return self._fusion(*args, **kwargs)


def _is_cupy_elementwise(v: Any) -> bool:
    t = type(v)
    return t.__module__.startswith("cupy") and t.__name__ in ("ElementwiseKernel", "ReductionKernel",
                                                               "RawKernel")


class TracedLibraryKernel:
    """ElementwiseKernel / ReductionKernel objects: opaque nodes that run the kernel."""

    def __init__(self, kernel: Any) -> None:
        self._kernel = kernel
        self.__name__ = getattr(kernel, "name", "kernel")

    def __call__(self, *args, **kwargs):
        if not _mentions_tracer(args):
            return self._kernel(*args, **kwargs)
        ctx = current()
        if type(self._kernel).__name__ == "RawKernel":
            raise UnsupportedError("a RawKernel writes into its arguments, which %%fuse cannot trace",
                                   ctx.loc(), "launch it in a cell before or after the %%fuse cell")
        kernel = self._kernel
        nodes = [_node(ctx, a) for a in args]
        fn = OpaqueFn(self.__name__, lambda xp, *vals: kernel(*vals, **kwargs))

        def probe(*d):  # run the kernel on a one-element stand-in to learn its result dtype
            import cupy
            tiny = [cupy.zeros((1,) * x.ndim, x.dtype) for x in d]
            out = kernel(*tiny, **kwargs)
            shape = np.broadcast_shapes(*(x.shape for x in d))
            return np.broadcast_to(np.zeros((), out.dtype), shape)
        return opaque_call(ctx, fn, nodes, probe)


def with_globals(fn: FunctionType, globals_: dict[str, Any]) -> FunctionType:
    """The same function reading its globals from another dict."""
    new = FunctionType(fn.__code__, globals_, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    return new


def tracing_namespace(ctx: TraceContext, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the user's namespace with arrays as tracers and np/cp as proxies.

    Functions defined in the notebook (their globals are the namespace) are re-bound to
    this copy, so a helper from an earlier cell traces exactly like one defined in the
    cell: its `cp.exp(a)` and the global arrays it reads are traced too."""
    ns: dict[str, Any] = {}
    for k, v in namespace.items():
        if is_array(v):
            ns[k] = _LazyInput(ctx, k, v)  # becomes an input node on first use
        elif isinstance(v, ModuleType) and v.__name__ in ("numpy", "cupy") or \
                isinstance(v, ModuleType) and v.__name__.startswith(("numpy.", "cupy.")):
            ns[k] = TracingModule(v, v.__name__.partition(".")[2])
        elif isinstance(v, FunctionType) and v.__globals__ is namespace:
            ns[k] = with_globals(v, ns)
            ctx.originals[id(ns[k])] = v
        elif _is_cupy_fusion(v):
            f = v.func
            ns[k] = TracedFusion(v, with_globals(f, ns) if getattr(f, "__globals__", None) is namespace else f)
        elif _is_cupy_elementwise(v):
            ns[k] = TracedLibraryKernel(v)
        else:
            ns[k] = v
    ns.setdefault("__builtins__", __builtins__)
    return ns


class _LazyInput(Tracer):
    """A tracer for a namespace array that records its input node only when first used,
    so arrays the cell never touches are not inputs."""

    __slots__ = ("_name", "_array")

    def __init__(self, ctx: TraceContext, name: str, array: Any) -> None:
        self._ctx = ctx
        self._name = name
        self._array = array

    def __getattribute__(self, attr: str) -> Any:
        if attr == "_node":
            ctx = object.__getattribute__(self, "_ctx")
            return ctx.input_for(object.__getattribute__(self, "_array"), object.__getattribute__(self, "_name"))
        return object.__getattribute__(self, attr)

    @property
    def aval(self) -> Aval:
        arr = object.__getattribute__(self, "_array")
        return Aval(tuple(arr.shape), np.dtype(arr.dtype))


def untraced(value: Any, ctx: TraceContext | None = None) -> Any:
    """The real object behind a proxy, for binding back into the user's namespace."""
    if ctx is not None and id(value) in ctx.originals:
        return ctx.originals[id(value)]
    if isinstance(value, _LazyInput):
        return object.__getattribute__(value, "_array")
    if isinstance(value, TracingModule):
        return value._module
    if isinstance(value, TracedFusion):
        return value._fusion
    if isinstance(value, TracedLibraryKernel):
        return value._kernel
    return value
