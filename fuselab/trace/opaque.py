"""Operations fuselab does not fuse. Each runs through the library as one opaque node,
its result's shape and dtype given by a rule written from NumPy's documentation (never
by running it on made-up data). Operations whose result's shape depends on the values
(`unique`, `nonzero`, boolean masks) run at a graph break and become nodes of the shape
they gave; functions without a rule run as plain NumPy at a graph break.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..ops import Aval, OpaqueFn, ShapeError, broadcast_shapes, normalize_axes, reduce_dtype
from .core import TraceContext, Tracer, is_array
from .mutate import writer
from .operands import RunForReal, node_of
from .realrun import run_for_real
from .registry import FALLBACK, handles

# ---------------------------------------------------------------------------
# Lifting a call: array arguments become the node's inputs, the rest stays static
# ---------------------------------------------------------------------------


class Slot:
    """Where the i-th array operand goes in a call's arguments."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __repr__(self) -> str:
        return f"<array {self.i}>"


def fill(v: Any, vals: Sequence[Any]) -> Any:
    """`v` with every Slot (also inside lists and tuples) replaced by its value."""
    if isinstance(v, Slot):
        return vals[v.i]
    if type(v) in (list, tuple):
        return type(v)(fill(e, vals) for e in v)
    return v


@dataclass(frozen=True)
class Lifted:
    nodes: tuple[int, ...]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def substitute(self, vals: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
        """The call's arguments with the array operands taken from `vals`."""
        return [fill(a, vals) for a in self.args], {k: fill(v, vals) for k, v in self.kwargs.items()}

    def call(self, fn: Callable[..., Any], vals: Sequence[Any]) -> Any:
        args, kwargs = self.substitute(vals)
        return fn(*args, **kwargs)


def lift(ctx: TraceContext, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Lifted:
    nodes: list[int] = []

    def one(v: Any) -> Any:
        if isinstance(v, Tracer) or is_array(v):
            nodes.append(node_of(ctx, v))
            return Slot(len(nodes) - 1)
        if type(v) in (list, tuple) and any(isinstance(e, Tracer) or is_array(e) for e in v):
            return type(v)(one(e) for e in v)
        return v
    largs = tuple(one(a) for a in args)
    lkw = {k: one(v) for k, v in kwargs.items()}
    return Lifted(tuple(nodes), largs, lkw)


def _xp_attr(xp: Any, path: str) -> Any:
    obj = xp
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _wrap_results(ctx: TraceContext, fn: OpaqueFn, nodes: Sequence[int], avals: Aval | tuple[Aval, ...],
                  scalar: bool, values: Any = None) -> Any:
    b, loc = ctx.builder, ctx.loc()
    if isinstance(avals, Aval):
        n = b.opaque(fn, nodes, avals, (), loc)
        if values is not None:
            ctx.evaluator.set(n, values)
        return Tracer(ctx, n, scalar=scalar and not avals.shape)
    outs = []
    for k, av in enumerate(avals):
        n = b.opaque(fn, nodes, av, (), loc, output_index=k)
        if values is not None:
            ctx.evaluator.set(n, values[k])
        outs.append(Tracer(ctx, n, scalar=scalar and not av.shape))
    return tuple(outs)


# ---------------------------------------------------------------------------
# Data-dependent shapes: run now, at a graph break
# ---------------------------------------------------------------------------

def data_dependent(ctx: TraceContext, name: str, fn: Callable[..., Any], args: Sequence[Any],
                   kwargs: Mapping[str, Any], what: str = "") -> Any:
    """Run `fn` now (its result's shape depends on the values); the result becomes an
    opaque node of the shape it has, whose value is kept for the rest of the trace."""
    lifted = lift(ctx, args, kwargs)
    if not lifted.nodes:
        raise RunForReal(args)
    ctx.need(lifted.nodes[0], what or f"the shape of `np.{name}`'s result depends on the values")
    vals = [ctx.evaluator.value(n) for n in lifted.nodes]
    result = lifted.call(fn, vals)
    opaque = OpaqueFn(name, lambda xp, *v: lifted.call(fn, v))
    if isinstance(result, tuple):
        avals = tuple(Aval(tuple(r.shape), np.dtype(r.dtype)) for r in result)
        return _wrap_results(ctx, opaque, lifted.nodes, avals, False, result)
    return _wrap_results(ctx, opaque, lifted.nodes, Aval(tuple(result.shape), np.dtype(result.dtype)),
                         False, result)


def _keeping_dtype(path: str):
    """A data-dependent op whose values are its operand's elements (so its dtype)."""
    def h(ctx: TraceContext, *a: Any, **k: Any) -> Any:
        out = data_dependent(ctx, path, _xp_attr(np, path), a, k)
        dt = _first_dtype(a)
        first = out[0] if isinstance(out, tuple) else out
        if dt is not None and first.aval.dtype == dt.newbyteorder("="):
            first._dtype = dt if dt != first.aval.dtype else None
        return out
    return h


for _path in ("nonzero", "flatnonzero", "argwhere", "unique_inverse", "bincount"):
    handles(_path)(lambda ctx, *a, _p=_path, **k: data_dependent(ctx, _p, _xp_attr(np, _p), a, k))
for _path in ("unique", "unique_values", "unique_counts", "unique_all", "extract", "compress", "trim_zeros",
              "setdiff1d", "intersect1d", "union1d", "setxor1d"):
    handles(_path)(_keeping_dtype(_path))


# ---------------------------------------------------------------------------
# Shape rules
# ---------------------------------------------------------------------------

Rule = Callable[..., "Aval | tuple[Aval, ...]"]


@dataclass(frozen=True)
class ShapeRule:
    rule: Rule                      # (avals, *static args, **static kwargs) -> aval(s)
    scalar: bool = False            # NumPy returns a scalar for a 0-d result
    fallible: bool = False          # can fail on the values (singular matrix...)
    keeps_dtype: bool = False       # the result has its first operand's dtype, byte order included


RULES: dict[str, ShapeRule] = {}


def rule(*paths: str, scalar: bool = False, fallible: bool = False, keeps_dtype: bool = False):
    def deco(fn: Rule) -> Rule:
        for p in paths:
            RULES[p] = ShapeRule(fn, scalar, fallible, keeps_dtype)
        return fn
    return deco


def _first_dtype(args: Sequence[Any]) -> np.dtype | None:
    for a in args:
        if isinstance(a, Tracer):
            return a.dtype
        if type(a) in (list, tuple):
            d = _first_dtype(a)
            if d is not None:
                return d
    return None


def _matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    if not a or not b:
        raise ShapeError("matmul: Input operand does not have enough dimensions")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ShapeError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
                         f"(size {b2[-2]} is different from {a2[-1]})")
    out = broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _mul_dtype(*dts: np.dtype) -> np.dtype:
    """The dtype of products of these operands (one operand: its own)."""
    if len(dts) == 1:
        return np.dtype(dts[0])
    out = dts[0]
    for d in dts[1:]:
        out = np.multiply.resolve_dtypes((out, d, None))[-1]
    return np.dtype(out)


@rule("matmul", scalar=True)
def _matmul(a: Aval, b: Aval, *_: Any, **__: Any) -> Aval:
    return Aval(_matmul_shape(a.shape, b.shape), np.dtype(np.matmul.resolve_dtypes((a.dtype, b.dtype, None))[-1]))


@rule("dot", scalar=True)
def _dot(a: Aval, b: Aval, out: Any = None) -> Aval:
    if out is not None:
        raise RunForReal(out)
    dt = _mul_dtype(a.dtype, b.dtype)
    if not a.shape or not b.shape:
        return Aval(broadcast_shapes(a.shape, b.shape), dt)
    if b.ndim == 1:
        if a.shape[-1] != b.shape[0]:
            raise ShapeError("shapes not aligned")
        return Aval(a.shape[:-1], dt)
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError("shapes not aligned")
    return Aval(a.shape[:-1] + b.shape[:-2] + b.shape[-1:], dt)


@rule("outer")
def _outer(a: Aval, b: Aval, out: Any = None) -> Aval:
    return Aval((a.size, b.size), _mul_dtype(a.dtype, b.dtype))


@rule("inner", "vdot", scalar=True)
def _inner(a: Aval, b: Aval) -> Aval:
    if a.ndim <= 1 and b.ndim <= 1:
        if a.size != b.size and a.ndim and b.ndim:
            raise ShapeError("shapes not aligned")
        return Aval((), _mul_dtype(a.dtype, b.dtype))
    raise RunForReal((a, b))


@rule("einsum", scalar=True)
def _einsum(subscripts: Any, *ops: Any, **kw: Any) -> Aval:
    if not isinstance(subscripts, str) or "..." in subscripts or kw or \
            any(not isinstance(o, Aval) for o in ops):
        raise RunForReal(subscripts)
    spec = subscripts.replace(" ", "")
    ins, _, out = spec.partition("->")
    terms = ins.split(",")
    if len(terms) != len(ops):
        raise ShapeError("einsum: more operands than subscripts")
    sizes: dict[str, int] = {}
    for t, o in zip(terms, ops):
        if len(t) != o.ndim:
            raise ShapeError("einsum: subscripts do not match the operand's dimensions")
        for c, d in zip(t, o.shape):
            if sizes.get(c, d) != d and d != 1 and sizes.get(c) != 1:
                raise ShapeError("einsum: operands could not be broadcast together")
            sizes[c] = max(sizes.get(c, d), d)
    if "->" not in spec:
        out = "".join(sorted(c for c in sizes if ins.count(c) == 1))
    return Aval(tuple(sizes[c] for c in out), _mul_dtype(*(o.dtype for o in ops)))


def _linalg_dtype(dt: np.dtype) -> np.dtype:
    if dt in (np.dtype(np.float32), np.dtype(np.complex64), np.dtype(np.float64), np.dtype(np.complex128)):
        return dt
    if dt.kind in "biu":
        return np.dtype(np.float64)
    raise RunForReal(dt)  # float16: NumPy's "array type float16 is unsupported in linalg"


def _square(a: Aval) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise RunForReal(a)  # NumPy's LinAlgError


@rule("linalg.inv", "linalg.cholesky", fallible=True)
def _inv(a: Aval, *_: Any, **__: Any) -> Aval:
    _square(a)
    return Aval(a.shape, _linalg_dtype(a.dtype))


@rule("linalg.solve", fallible=True)
def _solve(a: Aval, b: Aval) -> Aval:
    _square(a)
    dt = _linalg_dtype(np.result_type(a.dtype, b.dtype))
    if b.ndim == 1:
        if b.shape[0] != a.shape[-1]:
            raise RunForReal(b)
        return Aval(a.shape[:-1], dt)
    if b.shape[-2] != a.shape[-1]:
        raise RunForReal(b)
    return Aval(broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], dt)


@rule("linalg.det", scalar=True)
def _det(a: Aval) -> Aval:
    _square(a)
    return Aval(a.shape[:-2], _linalg_dtype(a.dtype))


@rule("linalg.slogdet", scalar=True)
def _slogdet(a: Aval) -> tuple[Aval, ...]:
    _square(a)
    dt = _linalg_dtype(a.dtype)
    real = np.dtype(dt.char.lower()) if dt.kind == "c" else dt
    return (Aval(a.shape[:-2], dt), Aval(a.shape[:-2], real))


@rule("linalg.eigvalsh", fallible=True)
def _eigvalsh(a: Aval, UPLO: str = "L") -> Aval:
    _square(a)
    dt = _linalg_dtype(a.dtype)
    return Aval(a.shape[:-1], np.dtype(dt.char.lower()) if dt.kind == "c" else dt)


@rule("linalg.eigh", fallible=True)
def _eigh(a: Aval, UPLO: str = "L") -> tuple[Aval, ...]:
    w = _eigvalsh(a)
    return (w, Aval(a.shape, _linalg_dtype(a.dtype)))


@rule("linalg.pinv")
def _pinv(a: Aval, *_: Any, **__: Any) -> Aval:
    if a.ndim < 2:
        raise RunForReal(a)
    return Aval(a.shape[:-2] + (a.shape[-1], a.shape[-2]), _linalg_dtype(a.dtype))


@rule("linalg.matrix_power", fallible=True)
def _matrix_power(a: Aval, n: int) -> Aval:
    _square(a)
    if not isinstance(n, (int, np.integer)):
        raise RunForReal(n)
    return Aval(a.shape, _linalg_dtype(a.dtype) if n < 0 else a.dtype)


def _fft_complex(dt: np.dtype) -> np.dtype:
    return np.dtype(np.complex64) if dt in (np.dtype(np.float16), np.dtype(np.float32),
                                             np.dtype(np.complex64)) else np.dtype(np.complex128)


def _fft_real(dt: np.dtype) -> np.dtype:
    return {np.dtype(np.float16): np.dtype(np.float16), np.dtype(np.float32): np.dtype(np.float32),
            np.dtype(np.complex64): np.dtype(np.float32)}.get(dt, np.dtype(np.float64))


def _fft_shape(a: Aval, kind: str, axes: Sequence[int], sizes: Sequence[Any]) -> Aval:
    if a.ndim == 0 or (kind == "rfft" and a.dtype.kind == "c"):
        raise RunForReal(a)  # NumPy's error
    shape = list(a.shape)
    for k, (ax, n) in enumerate(zip(axes, sizes)):
        ax = normalize_axes(ax, a.ndim)[0]
        last = k == len(axes) - 1
        if kind == "rfft" and last:
            shape[ax] = (int(n) if n is not None else a.shape[ax]) // 2 + 1
        elif kind == "irfft" and last:
            shape[ax] = int(n) if n is not None else 2 * (a.shape[ax] - 1)
        elif n is not None:
            shape[ax] = int(n)
        if shape[ax] < 1:
            raise RunForReal(n)
    return Aval(tuple(shape), _fft_real(a.dtype) if kind == "irfft" else _fft_complex(a.dtype))


def _fft1(kind: str) -> Rule:
    def r(a: Aval, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Aval:
        if out is not None:
            raise RunForReal(out)
        return _fft_shape(a, kind, [axis], [n])
    return r


def _fftn(kind: str, default_axes: Any) -> Rule:
    def r(a: Aval, s: Any = None, axes: Any = default_axes, norm: Any = None, out: Any = None) -> Aval:
        if out is not None:
            raise RunForReal(out)
        if axes is None:
            axes = list(range(a.ndim))[-len(s):] if s is not None else list(range(a.ndim))
        sizes = list(s) if s is not None else [None] * len(axes)
        if len(sizes) != len(axes):
            raise RunForReal(s)
        return _fft_shape(a, kind, list(axes), sizes)
    return r


for _name, _kind in (("fft", "c"), ("ifft", "c"), ("rfft", "rfft"), ("irfft", "irfft")):
    RULES[f"fft.{_name}"] = ShapeRule(_fft1(_kind))
    RULES[f"fft.{_name}2"] = ShapeRule(_fftn(_kind, (-2, -1)))
    RULES[f"fft.{_name}n"] = ShapeRule(_fftn(_kind, None))


@rule("fft.fftshift", "fft.ifftshift", "roll", "tril", "triu", keeps_dtype=True)
def _same(a: Aval, *args: Any, **kw: Any) -> Aval:
    return Aval(a.shape, a.dtype)


def _sorted_shape(a: Aval, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return (a.size,)
    if a.ndim == 0:
        raise RunForReal(a)
    normalize_axes(axis, a.ndim)
    return a.shape


@rule("sort", keeps_dtype=True)
def _sort(a: Aval, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Aval:
    return Aval(_sorted_shape(a, axis), a.dtype)


@rule("argsort")
def _argsort(a: Aval, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Aval:
    return Aval(_sorted_shape(a, axis), np.dtype(np.intp))


@rule("partition", keeps_dtype=True)
def _partition(a: Aval, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Aval:
    return Aval(_sorted_shape(a, axis), a.dtype)


@rule("argpartition")
def _argpartition(a: Aval, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Aval:
    return Aval(_sorted_shape(a, axis), np.dtype(np.intp))


@rule("concatenate")
def _concatenate(arrays: Sequence[Aval], axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: str = "same_kind") -> Aval:
    if out is not None or not arrays or any(not isinstance(a, Aval) for a in arrays):
        raise RunForReal(out)
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*(a.dtype for a in arrays))
    if axis is None:
        return Aval((sum(a.size for a in arrays),), dt)
    nd = arrays[0].ndim
    if nd == 0 or any(a.ndim != nd for a in arrays):
        raise RunForReal(arrays)
    ax = normalize_axes(axis, nd)[0]
    for a in arrays:
        if a.shape[:ax] + a.shape[ax + 1:] != arrays[0].shape[:ax] + arrays[0].shape[ax + 1:]:
            raise RunForReal(arrays)
    shape = list(arrays[0].shape)
    shape[ax] = sum(a.shape[ax] for a in arrays)
    return Aval(tuple(shape), dt)


@rule("stack")
def _stack(arrays: Sequence[Aval], axis: int = 0, out: Any = None, *, dtype: Any = None,
           casting: str = "same_kind") -> Aval:
    if out is not None or not arrays or any(not isinstance(a, Aval) for a in arrays) or \
            len({a.shape for a in arrays}) != 1:
        raise RunForReal(out)
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*(a.dtype for a in arrays))
    shape = list(arrays[0].shape)
    ax = normalize_axes(axis, len(shape) + 1)[0]
    shape.insert(ax, len(arrays))
    return Aval(tuple(shape), dt)


def _as_nd(a: Aval, nd: int) -> tuple[int, ...]:
    if a.ndim >= nd:
        return a.shape
    if nd == 2:
        return (1,) * (2 - a.ndim) + a.shape if a.ndim else (1, 1)
    return {0: (1, 1, 1), 1: (1,) + a.shape + (1,), 2: a.shape + (1,)}[a.ndim]


@rule("vstack", "row_stack")
def _vstack(arrays: Sequence[Aval], **kw: Any) -> Aval:
    return _concatenate([Aval(_as_nd(a, 2), a.dtype) for a in arrays], 0, **kw)


@rule("hstack")
def _hstack(arrays: Sequence[Aval], **kw: Any) -> Aval:
    arrs = [Aval(a.shape if a.ndim else (1,), a.dtype) for a in arrays]
    return _concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, **kw)


@rule("dstack")
def _dstack(arrays: Sequence[Aval], **kw: Any) -> Aval:
    return _concatenate([Aval(_as_nd(a, 3), a.dtype) for a in arrays], 2, **kw)


@rule("column_stack")
def _column_stack(arrays: Sequence[Aval]) -> Aval:
    return _concatenate([Aval(a.shape + (1,) if a.ndim < 2 else a.shape, a.dtype) for a in arrays], 1)


@rule("cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "nancumsum", "nancumprod")
def _cumulative(a: Aval, axis: Any = None, dtype: Any = None, out: Any = None, **kw: Any) -> Aval:
    if out is not None:
        raise RunForReal(out)
    if axis is not None:
        normalize_axes(axis, a.ndim)
    shape = a.shape if axis is not None or a.ndim <= 1 else (a.size,)
    return Aval(shape if a.ndim else (1,), reduce_dtype("sum", a.dtype, dtype))


@rule("diff")
def _diff(a: Aval, n: int = 1, axis: int = -1, **kw: Any) -> Aval:
    if kw or not a.ndim:
        raise RunForReal(kw)
    ax = normalize_axes(axis, a.ndim)[0]
    shape = list(a.shape)
    shape[ax] = max(shape[ax] - int(n), 0)
    dt = np.dtype(bool) if a.dtype == np.bool_ else np.dtype(np.subtract.resolve_dtypes((a.dtype, a.dtype, None))[-1])
    return Aval(tuple(shape), dt)


@rule("take", keeps_dtype=True)
def _take(a: Aval, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Aval:
    if not isinstance(indices, Aval):  # indices known now (a list): NumPy's bounds checked now
        idx = np.asarray(indices)
        size = a.size if axis is None else a.shape[normalize_axes(axis, a.ndim)[0]]
        if idx.dtype.kind not in "iu" or (idx.size and mode == "raise" and
                                          not (-size <= idx.min() and idx.max() < size)):
            raise RunForReal(indices)
        indices = Aval(idx.shape, idx.dtype)
    if out is not None or indices.dtype.kind not in "iu":
        raise RunForReal(indices)
    if axis is None:
        return Aval(indices.shape, a.dtype)
    ax = normalize_axes(axis, a.ndim)[0]
    return Aval(a.shape[:ax] + indices.shape + a.shape[ax + 1:], a.dtype)


@rule("repeat", keeps_dtype=True)
def _repeat(a: Aval, repeats: Any, axis: Any = None) -> Aval:
    if not isinstance(repeats, (int, np.integer)) or repeats < 0:
        raise RunForReal(repeats)
    if axis is None:
        return Aval((a.size * int(repeats),), a.dtype)
    ax = normalize_axes(axis, a.ndim)[0]
    return Aval(a.shape[:ax] + (a.shape[ax] * int(repeats),) + a.shape[ax + 1:], a.dtype)


@rule("tile", keeps_dtype=True)
def _tile(a: Aval, reps: Any) -> Aval:
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    if any(not isinstance(r, (int, np.integer)) or r < 0 for r in reps):
        raise RunForReal(reps)
    n = max(a.ndim, len(reps))
    shape = (1,) * (n - a.ndim) + a.shape
    reps = (1,) * (n - len(reps)) + reps
    return Aval(tuple(s * int(r) for s, r in zip(shape, reps)), a.dtype)


@rule("trace", scalar=True)
def _trace(a: Aval, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Aval:
    if a.ndim < 2 or out is not None:
        raise RunForReal(a)
    ax = {axis1 % a.ndim, axis2 % a.ndim}
    return Aval(tuple(d for i, d in enumerate(a.shape) if i not in ax), reduce_dtype("sum", a.dtype, dtype))


@rule("median", "nanmedian", scalar=True)
def _median(a: Aval, axis: Any = None, out: Any = None, overwrite_input: bool = False,
            keepdims: bool = False) -> Aval:
    if out is not None or a.size == 0:
        raise RunForReal(out)
    axes = normalize_axes(axis, a.ndim)
    shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape)) if keepdims else \
        tuple(d for i, d in enumerate(a.shape) if i not in axes)
    dt = np.dtype(np.float64) if a.dtype.kind in "biu" else a.dtype
    return Aval(shape, dt)


@rule("searchsorted")
def _searchsorted(a: Aval, v: Any, side: str = "left", sorter: Any = None) -> Aval:
    return Aval(v.shape if isinstance(v, Aval) else (), np.dtype(np.intp))


@rule("isin")
def _isin(element: Aval, test_elements: Any, *a: Any, **kw: Any) -> Aval:
    return Aval(element.shape, np.dtype(bool))


@rule("real", "imag")
def _real(a: Aval) -> Aval:
    return Aval(a.shape, np.dtype(a.dtype.char.lower()) if a.dtype.kind == "c" else a.dtype)


@rule("flip", "fliplr", "flipud", keeps_dtype=True)
def _flip(a: Aval, *args: Any, **kw: Any) -> Aval:
    return Aval(a.shape, a.dtype)


# ---------------------------------------------------------------------------
# The fallback for functions without a handler
# ---------------------------------------------------------------------------

def library_call(ctx: TraceContext, path: str, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """A NumPy/CuPy function with tracer arguments and no handler: an opaque node by its
    shape rule, or, without one, plain NumPy at a graph break."""
    r = RULES.get(path)
    if r is None and isinstance(func, np.ufunc) and func.nout == 1 and not kwargs:
        return _library_ufunc(ctx, func, args)
    if r is None:
        return run_for_real(ctx, f"np.{path}", func, args, kwargs,
                            f"`np.{path}` runs as plain NumPy here: fuselab has no rule for its result's shape")
    lifted = lift(ctx, args, kwargs)
    avals = [ctx.builder.aval(n) for n in lifted.nodes]
    a, kw = lifted.substitute(avals)
    out_avals = r.rule(*a, **kw)
    fn = OpaqueFn(path, lambda xp, *vals: lifted.call(_xp_attr(xp, path), vals))
    values = None
    if r.fallible and ctx.in_try():
        # it may raise on these values, inside a `try`: run it now so the error is raised
        # where plain Python raises it
        if lifted.nodes:
            ctx.need(lifted.nodes[0], f"`np.{path}` can fail on the values, inside a `try`")
        values = lifted.call(func, [ctx.evaluator.value(n) for n in lifted.nodes])
    out = _wrap_results(ctx, fn, lifted.nodes, out_avals, r.scalar, values)
    dt = _first_dtype(args) if r.keeps_dtype else None
    if isinstance(out, Tracer) and dt is not None and dt != out.aval.dtype and dt.newbyteorder("=") == out.aval.dtype:
        out._dtype = dt
    return out


def _library_ufunc(ctx: TraceContext, ufunc: np.ufunc, args: Sequence[Any]) -> Tracer:
    """A ufunc fuselab has no code for (np.logaddexp, scipy.special.erf): one opaque
    node; NumPy's broadcasting and loop resolution give its shape and dtype."""
    lifted = lift(ctx, args, {})
    avals = [ctx.builder.aval(n) for n in lifted.nodes]
    a, _ = lifted.substitute(avals)
    dts = [v.dtype if isinstance(v, Aval) else np.dtype(v.dtype) if isinstance(v, np.generic) else type(v)
           for v in a]
    try:
        dt = np.dtype(ufunc.resolve_dtypes((*dts, None))[-1])
    except TypeError:
        raise RunForReal(args) from None
    shape = broadcast_shapes(*(v.shape for v in avals))
    fn = OpaqueFn(ufunc.__name__, lambda xp, *vals: lifted.call(ufunc if xp is np else getattr(xp, ufunc.__name__),
                                                               vals))
    return _wrap_results(ctx, fn, lifted.nodes, Aval(shape, dt), True)


FALLBACK.append(library_call)

# functions that write into their first argument
for _path in ("copyto", "put", "place", "putmask", "fill_diagonal", "random.shuffle"):
    handles(_path)(writer(_path, _xp_attr(np, _path)))
