"""Shape rules of the operations fuselab does not fuse: each gives an opaque op's result
shape and dtype from its operands' shapes and dtypes and its static arguments, written
from NumPy's documentation and checked against NumPy by the tests (never by running the
op on made-up data). `RunForReal` from a rule means "let NumPy decide at a graph break"
(NumPy then gives its own result, or its own error)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..ops import Aval, ShapeError, broadcast_shapes, normalize_axes, reduce_dtype
from .operands import RunForReal

Rule = Callable[..., "Aval | tuple[Aval, ...]"]


@dataclass(frozen=True)
class ShapeRule:
    rule: Rule                      # (avals, *static args, **static kwargs) -> aval(s)
    scalar: bool = False            # NumPy returns a scalar for a 0-d result
    fallible: bool = False          # can fail on the values (singular matrix...)
    keeps_dtype: bool = False       # the result has its first operand's dtype, byte order included
    # (the rule's arguments) -> NumPy's result is a view of an array it made inside the call
    # (np.tile's reshape of its repeats): it owns no memory
    temp_view: Callable[..., bool] | None = None


RULES: dict[str, ShapeRule] = {}


def rule(*paths: str, scalar: bool = False, fallible: bool = False, keeps_dtype: bool = False,
         temp_view: Callable[..., bool] | None = None):
    def deco(fn: Rule) -> Rule:
        for p in paths:
            RULES[p] = ShapeRule(fn, scalar, fallible, keeps_dtype, temp_view)
        return fn
    return deco


def _reps(reps: Any) -> tuple[Any, ...]:
    return (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)


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


@rule("inner", scalar=True)
def _inner(a: Aval, b: Aval) -> Aval:
    if not a.ndim or not b.ndim:   # with a 0-d operand, a product
        return Aval(a.shape or b.shape, _mul_dtype(a.dtype, b.dtype))
    if a.ndim == 1 and b.ndim == 1:
        if a.size != b.size:
            raise ShapeError("shapes not aligned")
        return Aval((), _mul_dtype(a.dtype, b.dtype))
    raise RunForReal((a, b))


@rule("vdot", scalar=True)
def _vdot(a: Aval, b: Aval) -> Aval:
    if a.ndim <= 1 and b.ndim <= 1 and a.size == b.size:
        return Aval((), _mul_dtype(a.dtype, b.dtype))
    raise RunForReal((a, b))   # (flattened operands, or NumPy's error for sizes that differ)


@rule("einsum", scalar=True)
def _einsum(subscripts: Any, *ops: Any, **kw: Any) -> Aval:
    if not isinstance(subscripts, str) or "..." in subscripts or kw or \
            any(not isinstance(o, Aval) for o in ops):
        raise RunForReal(subscripts)
    spec = subscripts.replace(" ", "")
    ins, _, out = spec.partition("->")
    terms = ins.split(",")
    if len(terms) == 1 and "->" in spec and set(out) == set(ins):
        # one operand, nothing summed (`'ii->i'`, `'ij->ji'`): NumPy returns a view of it
        raise RunForReal(subscripts)
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
    # (np.fft.irfftn over several axes runs complex ffts first: a float16 input comes out float32)
    real_in = a.dtype if len(axes) == 1 else _fft_complex(a.dtype)
    return Aval(tuple(shape), _fft_real(real_in) if kind == "irfft" else _fft_complex(a.dtype))


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


@rule("fft.fftshift", "fft.ifftshift", keeps_dtype=True)
def _same(a: Aval, *args: Any, **kw: Any) -> Aval:
    return Aval(a.shape, a.dtype)


@rule("tril", "triu", keeps_dtype=True)
def _tril(a: Aval, *args: Any, **kw: Any) -> Aval:
    if a.ndim == 0:
        raise RunForReal(a)   # (NumPy's TypeError, at its line)
    return _same(a, *args, **kw)


@rule("roll", keeps_dtype=True,   # (without an axis: a roll of the ravelled array, reshaped)
      temp_view=lambda a, shift, axis=None: axis is None)
def _roll(a: Aval, shift: Any, axis: Any = None) -> Aval:
    if axis is not None:
        normalize_axes(axis, a.ndim)   # (out of bounds, repeated: NumPy's call decides, at its line)
    return Aval(a.shape, a.dtype)


def _sort_kind(kind: Any) -> None:
    """NumPy's sort kinds ('quicksort', 'mergesort', 'heapsort', 'stable', by their first
    letter); another is NumPy's ValueError, at its line."""
    if kind is not None and not (isinstance(kind, str) and kind[:1].lower() in ("q", "m", "h", "s")):
        raise RunForReal(kind)


def _sorted_shape(a: Aval, axis: Any, kind: Any = None) -> tuple[int, ...]:
    _sort_kind(kind)
    if axis is None:
        return (a.size,)
    if a.ndim == 0:
        raise RunForReal(a)
    normalize_axes(axis, a.ndim)
    return a.shape


@rule("sort", keeps_dtype=True)
def _sort(a: Aval, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Aval:
    if order is not None:
        raise RunForReal(order)   # fields of a structured array (else NumPy's ValueError, at its line)
    return Aval(_sorted_shape(a, axis, kind), a.dtype)


@rule("argsort")
def _argsort(a: Aval, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Aval:
    return Aval(_sorted_shape(a, axis, kind), np.dtype(np.intp))


@rule("partition", keeps_dtype=True)
def _partition(a: Aval, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Aval:
    _check_kth(a, kth, axis)
    return Aval(_sorted_shape(a, axis), a.dtype)


def _check_kth(a: Aval, kth: Any, axis: Any) -> None:
    """kth within the partitioned axis, as NumPy requires ("kth(=10) out of bounds (8)",
    raised by its call at the user's line)."""
    n = a.size if axis is None else a.shape[normalize_axes(axis, a.ndim)[0]] if a.ndim else 0
    ks = np.asarray(kth)
    if ks.dtype.kind not in "iu" or (ks.size and not ((ks >= -n) & (ks < n)).all()):
        raise RunForReal(kth)


@rule("argpartition")
def _argpartition(a: Aval, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Aval:
    _check_kth(a, kth, axis)
    return Aval(_sorted_shape(a, axis), np.dtype(np.intp))


def _members(arrays: Any) -> list[Aval]:
    """The arrays to join: a list or a scalar among them is what np.asarray makes of it
    (a strong dtype: `[9]` is int64), as NumPy's joining functions take it."""
    if type(arrays) not in (list, tuple):
        raise RunForReal(arrays)
    out = []
    for a in arrays:
        if not isinstance(a, Aval):
            arr = np.asarray(a)
            if arr.dtype.kind not in "biufc":
                raise RunForReal(a)
            a = Aval(arr.shape, arr.dtype)
        out.append(a)
    return out


@rule("concatenate")
def _concatenate(arrays: Sequence[Aval], axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: str = "same_kind") -> Aval:
    arrays = _members(arrays)
    if out is not None or not arrays:
        raise RunForReal(out)
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*(a.dtype for a in arrays))
    if not all(np.can_cast(a.dtype, dt, casting) for a in arrays):
        raise RunForReal(casting)   # (dtype=np.int8 of floats: NumPy's casting error, at its line)
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
    arrays = _members(arrays)
    if out is not None or not arrays or len({a.shape for a in arrays}) != 1:
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
    return _concatenate([Aval(_as_nd(a, 2), a.dtype) for a in _members(arrays)], 0, **kw)


@rule("hstack")
def _hstack(arrays: Sequence[Aval], **kw: Any) -> Aval:
    arrs = [Aval(a.shape if a.ndim else (1,), a.dtype) for a in _members(arrays)]
    return _concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, **kw)


@rule("dstack")
def _dstack(arrays: Sequence[Aval], **kw: Any) -> Aval:
    return _concatenate([Aval(_as_nd(a, 3), a.dtype) for a in _members(arrays)], 2, **kw)


@rule("column_stack")
def _column_stack(arrays: Sequence[Aval]) -> Aval:
    return _concatenate([Aval(a.shape + (1,) if a.ndim < 2 else a.shape, a.dtype) for a in _members(arrays)], 1)


@rule("cumsum", "cumprod", "nancumsum", "nancumprod")
def _cumulative(a: Aval, axis: Any = None, dtype: Any = None, out: Any = None, **kw: Any) -> Aval:
    if out is not None:
        raise RunForReal(out)
    if axis is not None:
        normalize_axes(axis, a.ndim)
    shape = a.shape if axis is not None or a.ndim <= 1 else (a.size,)
    return Aval(shape if a.ndim else (1,), reduce_dtype("sum", a.dtype, dtype))


@rule("cumulative_sum", "cumulative_prod")
def _cumulative_new(a: Aval, *, axis: Any = None, dtype: Any = None, out: Any = None,
                    include_initial: Any = False) -> Aval:
    """The array API's: no flattening (an axis is required past 1-D: NumPy's ValueError,
    at its line), and one more element along the axis with include_initial."""
    if axis is None and a.ndim > 1:
        raise RunForReal(axis)
    out_aval = _cumulative(a, axis, dtype, out)
    if not include_initial:
        return out_aval
    ax = normalize_axes(axis if axis is not None else 0, out_aval.ndim)[0]
    return Aval(tuple(d + (i == ax) for i, d in enumerate(out_aval.shape)), out_aval.dtype)


@rule("diff")
def _diff(a: Aval, n: int = 1, axis: int = -1, **kw: Any) -> Aval:
    if kw or not a.ndim or not isinstance(n, (int, np.integer)) or n <= 0:
        raise RunForReal(kw)   # (n=-1: NumPy's ValueError, at its line; n=0: the array itself)
    ax = normalize_axes(axis, a.ndim)[0]
    shape = list(a.shape)
    shape[ax] = max(shape[ax] - int(n), 0)
    dt = np.dtype(bool) if a.dtype == np.bool_ else np.dtype(np.subtract.resolve_dtypes((a.dtype, a.dtype, None))[-1])
    return Aval(tuple(shape), dt)


@rule("take", keeps_dtype=True, scalar=True, fallible=True)   # (traced indices out of bounds)
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


@rule("tile", keeps_dtype=True,   # (a copy where every repetition is 1 and no axis is added)
      temp_view=lambda a, reps: len(_reps(reps)) > a.ndim or any(r != 1 for r in _reps(reps)))
def _tile(a: Aval, reps: Any) -> Aval:
    reps = _reps(reps)
    if any(not isinstance(r, (int, np.integer)) or r < 0 for r in reps):
        raise RunForReal(reps)
    n = max(a.ndim, len(reps))
    shape = (1,) * (n - a.ndim) + a.shape
    reps = (1,) * (n - len(reps)) + reps
    return Aval(tuple(s * int(r) for s, r in zip(shape, reps)), a.dtype)


@rule("trace", scalar=True)
def _trace(a: Aval, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Aval:
    if a.ndim < 2 or out is not None or not all(-a.ndim <= x < a.ndim for x in (axis1, axis2)) or \
            axis1 % a.ndim == axis2 % a.ndim:
        raise RunForReal(a)   # (axes out of bounds or the same: NumPy's error, at its line)
    ax = {axis1 % a.ndim, axis2 % a.ndim}
    return Aval(tuple(d for i, d in enumerate(a.shape) if i not in ax), reduce_dtype("sum", a.dtype, dtype))


# (NumPy's result is a view of an array it made: with keepdims, and nanmedian's along an axis)
@rule("nanmedian", scalar=True,
      temp_view=lambda a, axis=None, *r, keepdims=False, **k: bool(keepdims) or axis is not None)
@rule("median", scalar=True, temp_view=lambda a, axis=None, *r, keepdims=False, **k: bool(keepdims))
def _median(a: Aval, axis: Any = None, out: Any = None, overwrite_input: bool = False,
            keepdims: bool = False) -> Aval:
    if out is not None or a.size == 0:
        raise RunForReal(out)
    axes = normalize_axes(axis, a.ndim)
    shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape)) if keepdims else \
        tuple(d for i, d in enumerate(a.shape) if i not in axes)
    dt = np.dtype(np.float64) if a.dtype.kind in "biu" else a.dtype
    return Aval(shape, dt)


@rule("searchsorted", scalar=True)
def _searchsorted(a: Aval, v: Any, side: str = "left", sorter: Any = None) -> Aval:
    if a.ndim != 1 or side not in ("left", "right"):
        raise RunForReal(side)   # NumPy's own error ("object too deep", "search side must be...")
    return Aval(v.shape if isinstance(v, Aval) else np.shape(v), np.dtype(np.intp))   # v: an array, a list or a scalar


@rule("isin", temp_view=lambda *a, **kw: True)   # (a reshape of the flat answer)
def _isin(element: Aval, test_elements: Any, *a: Any, **kw: Any) -> Aval:
    return Aval(element.shape, np.dtype(bool))
