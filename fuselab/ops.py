"""The op table: the single source of truth for every operation fuselab knows.

Each row says what an op *is* (its kind in the fusion lattice), how to run it with
NumPy or CuPy (`xp_name`, looked up on whichever array module runs it), its CUDA
expression, its rough cost, and how its result shape and dtype follow from its inputs.
Adding an op means adding a row here; no other file switches on op names for semantics.

Dtype rules defer to NumPy itself (`ufunc.resolve_dtypes`, NEP 50 weak scalars), so
traced results have exactly the dtypes plain NumPy 2 would give.
"""
from __future__ import annotations

import enum
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np


class Kind(enum.Enum):
    """Where an op sits in the fusion lattice (after TVM's op patterns)."""

    SOURCE = "source"        # input, constant, generators computed from the index
    ELEMWISE = "elemwise"    # one output element from the same-index input elements
    INJECTIVE = "injective"  # an index remap (view): folded into the consumer's loads
    REDUCE = "reduce"        # combines elements along axes
    OPAQUE = "opaque"        # runs through the array library, always alone


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: Kind
    arity: int | None                  # None: variable
    xp_name: str | None = None         # function on numpy / cupy for reference execution
    cuda: str | None = None            # CUDA expression template over {0}, {1}, {2}
    flops: float = 1.0                 # rough arithmetic cost per output element
    transcendental: bool = False       # costs far more than an add on the SFU path
    commutative: bool = False
    # reductions: the identity used to start an accumulation (None: no identity)
    identity: Any = None
    doc: str = ""


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------

OPS: dict[str, OpDef] = {}


def _row(op: OpDef) -> None:
    assert op.name not in OPS, op.name
    OPS[op.name] = op


for _name in ("input", "const", "full", "arange"):
    _row(OpDef(_name, Kind.SOURCE, 0, flops=0.0))

# Unary elementwise ops: (name, numpy ufunc, CUDA template, flops, transcendental).
# The fl_* functions live in the CUDA prelude of fuselab.codegen and follow NumPy's
# semantics exactly (signs of integer division, NaN propagation, ...).
_UNARY = [
    ("negative", "negative", "(-{0})", 1, False),
    ("positive", "positive", "(+{0})", 0, False),
    ("absolute", "absolute", "fl_abs({0})", 1, False),
    ("sign", "sign", "fl_sign({0})", 2, False),
    ("floor", "floor", "fl_floor({0})", 1, False),
    ("ceil", "ceil", "fl_ceil({0})", 1, False),
    ("rint", "rint", "rint({0})", 1, False),
    ("trunc", "trunc", "fl_trunc({0})", 1, False),
    ("sqrt", "sqrt", "sqrt({0})", 4, True),
    ("cbrt", "cbrt", "cbrt({0})", 8, True),
    ("square", "square", "({0} * {0})", 1, False),
    ("reciprocal", "reciprocal", "fl_reciprocal({0})", 4, False),
    ("exp", "exp", "exp({0})", 8, True),
    ("exp2", "exp2", "exp2({0})", 8, True),
    ("expm1", "expm1", "expm1({0})", 10, True),
    ("log", "log", "log({0})", 8, True),
    ("log2", "log2", "log2({0})", 8, True),
    ("log10", "log10", "log10({0})", 8, True),
    ("log1p", "log1p", "log1p({0})", 10, True),
    ("sin", "sin", "sin({0})", 8, True),
    ("cos", "cos", "cos({0})", 8, True),
    ("tan", "tan", "tan({0})", 12, True),
    ("arcsin", "arcsin", "asin({0})", 12, True),
    ("arccos", "arccos", "acos({0})", 12, True),
    ("arctan", "arctan", "atan({0})", 12, True),
    ("sinh", "sinh", "sinh({0})", 12, True),
    ("cosh", "cosh", "cosh({0})", 12, True),
    ("tanh", "tanh", "tanh({0})", 10, True),
    ("arcsinh", "arcsinh", "asinh({0})", 14, True),
    ("arccosh", "arccosh", "acosh({0})", 14, True),
    ("arctanh", "arctanh", "atanh({0})", 14, True),
    ("deg2rad", "deg2rad", "fl_deg2rad({0})", 1, False),
    ("rad2deg", "rad2deg", "fl_rad2deg({0})", 1, False),
    ("isnan", "isnan", "fl_isnan({0})", 1, False),
    ("isinf", "isinf", "fl_isinf({0})", 1, False),
    ("isfinite", "isfinite", "fl_isfinite({0})", 1, False),
    ("signbit", "signbit", "fl_signbit({0})", 1, False),
    ("logical_not", "logical_not", "(!{0})", 1, False),
    ("invert", "invert", "fl_invert({0})", 1, False),
]
for _name, _np, _cuda, _fl, _tr in _UNARY:
    _row(OpDef(_name, Kind.ELEMWISE, 1, _np, _cuda, _fl, _tr))

_BINARY = [
    ("add", "add", "({0} + {1})", 1, False, True),
    ("subtract", "subtract", "({0} - {1})", 1, False, False),
    ("multiply", "multiply", "({0} * {1})", 1, False, True),
    ("true_divide", "true_divide", "({0} / {1})", 4, False, False),
    ("floor_divide", "floor_divide", "fl_floor_divide({0}, {1})", 6, False, False),
    ("remainder", "remainder", "fl_remainder({0}, {1})", 6, False, False),
    # powf: x**2.5 ran compute-bound on an H200 at ~130 add-equivalents per element
    # (48 x the calibrated transcendental factor 2.57); constant 2, 3, 4, 0.5, -1: ir.special_exponent.
    # Integer powers (a squaring loop) cost less, but are rare enough to share the row.
    ("power", "power", "fl_power({0}, {1})", 48, True, False),
    ("maximum", "maximum", "fl_maximum({0}, {1})", 1, False, True),
    ("minimum", "minimum", "fl_minimum({0}, {1})", 1, False, True),
    ("fmax", "fmax", "fl_fmax({0}, {1})", 1, False, True),
    ("fmin", "fmin", "fl_fmin({0}, {1})", 1, False, True),
    ("arctan2", "arctan2", "atan2({0}, {1})", 16, True, False),
    ("hypot", "hypot", "hypot({0}, {1})", 8, True, True),
    ("copysign", "copysign", "copysign({0}, {1})", 1, False, False),
    ("equal", "equal", "({0} == {1})", 1, False, True),
    ("not_equal", "not_equal", "({0} != {1})", 1, False, True),
    ("less", "less", "({0} < {1})", 1, False, False),
    ("less_equal", "less_equal", "({0} <= {1})", 1, False, False),
    ("greater", "greater", "({0} > {1})", 1, False, False),
    ("greater_equal", "greater_equal", "({0} >= {1})", 1, False, False),
    ("logical_and", "logical_and", "(bool({0}) && bool({1}))", 1, False, True),
    ("logical_or", "logical_or", "(bool({0}) || bool({1}))", 1, False, True),
    ("logical_xor", "logical_xor", "(bool({0}) != bool({1}))", 1, False, True),
    ("bitwise_and", "bitwise_and", "({0} & {1})", 1, False, True),
    ("bitwise_or", "bitwise_or", "({0} | {1})", 1, False, True),
    ("bitwise_xor", "bitwise_xor", "({0} ^ {1})", 1, False, True),
    ("left_shift", "left_shift", "fl_left_shift({0}, {1})", 1, False, False),
    ("right_shift", "right_shift", "fl_right_shift({0}, {1})", 1, False, False),
]
for _name, _np, _cuda, _fl, _tr, _comm in _BINARY:
    _row(OpDef(_name, Kind.ELEMWISE, 2, _np, _cuda, _fl, _tr, _comm))

_row(OpDef("where", Kind.ELEMWISE, 3, "where", "({0} ? {1} : {2})", 1))
_row(OpDef("astype", Kind.ELEMWISE, 1, None, "fl_cast<{T}>({0})", 0,
           doc="dtype conversion with NumPy's casting (C casts; float->int truncates)"))

# Views: index remaps folded into consumers' index math.
for _name in ("transpose", "slice", "reshape", "broadcast_to"):
    _row(OpDef(_name, Kind.INJECTIVE, 1, flops=0.0))

# Reductions. `identity` is NumPy's (None: reducing nothing is an error, as for max);
# how an accumulation runs (its type, start value and combine) is `reduce_rule` below.
_row(OpDef("sum", Kind.REDUCE, 1, "sum", None, 1, identity=0))
_row(OpDef("prod", Kind.REDUCE, 1, "prod", None, 1, identity=1))
_row(OpDef("max", Kind.REDUCE, 1, "max", None, 1, identity=None))
_row(OpDef("min", Kind.REDUCE, 1, "min", None, 1, identity=None))
_row(OpDef("any", Kind.REDUCE, 1, "any", None, 1, identity=False))
_row(OpDef("all", Kind.REDUCE, 1, "all", None, 1, identity=True))
_row(OpDef("argmax", Kind.REDUCE, 1, "argmax", None, 2, identity=None))
_row(OpDef("argmin", Kind.REDUCE, 1, "argmin", None, 2, identity=None))
# The variance in one pass (Welford's update, Chan's combine): np.var / np.std of float32
# and float64 (and of integers in float64). args["ddof"]; of nothing it is NaN, as NumPy's.
_row(OpDef("var", Kind.REDUCE, 1, "var", None, 8, identity=float("nan")))

_row(OpDef("opaque", Kind.OPAQUE, None, flops=0.0,
           doc="anything else: runs through NumPy / CuPy, alone in its kernel"))

UFUNC_OPS: dict[str, str] = {
    op.xp_name: op.name for op in OPS.values()
    if op.kind is Kind.ELEMWISE and op.xp_name and isinstance(getattr(np, op.xp_name, None), np.ufunc)
}
# NumPy aliases that are the same ufunc object under another name.
UFUNC_OPS.update({"abs": "absolute", "divide": "true_divide", "mod": "remainder",
                  "radians": "deg2rad", "degrees": "rad2deg", "bitwise_not": "invert",
                  "bitwise_invert": "invert", "pow": "power", "conjugate": "positive"})
REDUCE_OPS = tuple(name for name, op in OPS.items() if op.kind is Kind.REDUCE)
ARG_REDUCE_OPS = ("argmax", "argmin")


def op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}") from None


# ---------------------------------------------------------------------------
# Abstract values: result shape and dtype of each op
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Aval:
    """Abstract value of an array: what tracing knows before anything runs."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __str__(self) -> str:
        return f"{short_dtype(self.dtype)}[{','.join(map(str, self.shape))}]"


_SHORT = {"float16": "f16", "float32": "f32", "float64": "f64", "bool": "bool",
          "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
          "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
          "complex64": "c64", "complex128": "c128"}


@functools.cache
def dtype_name(dt: np.dtype) -> str:
    """dt.name, remembered: NumPy works it out afresh at every call, and code generation
    asks for it per value (a tenth of a Numba kernel's generation time)."""
    return dt.name


def short_dtype(dtype: np.dtype) -> str:
    name = dtype_name(np.dtype(dtype))
    return _SHORT.get(name, name)


SUPPORTED_DTYPES = frozenset(np.dtype(d) for d in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64"))


class ShapeError(ValueError):
    """Shapes or dtypes that NumPy itself would reject; the message is NumPy's."""


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError as e:
        shown = " and ".join(str(tuple(s)) for s in shapes)
        raise ShapeError(f"operands could not be broadcast together with shapes {shown}") from e


def ufunc_loop_dtypes(ufunc_name: str, operands: Sequence[np.dtype | type]) -> tuple[np.dtype, ...]:
    """NumPy's own loop selection: the input and output dtypes of the chosen loop.

    Python scalar *types* (int, float, bool) in `operands` are NEP 50 weak scalars.
    """
    uf: np.ufunc = getattr(np, ufunc_name)
    try:
        return tuple(np.dtype(d) for d in uf.resolve_dtypes((*operands, None)))
    except TypeError as e:
        names = ", ".join(getattr(d, "__name__", str(d)) for d in operands)
        raise ShapeError(f"np.{ufunc_name} is not supported for dtypes ({names}): {e}") from e


def normalize_axes(axis: int | Sequence[int] | None, ndim: int, what: str = "axis") -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ShapeError(f"{what} {a} is out of bounds for array of dimension {ndim}")
        a %= ndim if ndim else 1
        if a in out:
            raise ShapeError(f"duplicate value in '{what}'")
        out.append(a)
    return tuple(sorted(out))


def reduce_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduce_dtype(op_name: str, dtype: np.dtype, requested: np.dtype | None = None) -> np.dtype:
    """Result dtype of a reduction, as NumPy gives it."""
    if requested is not None:
        return np.dtype(requested)
    if op_name in ARG_REDUCE_OPS:
        return np.dtype(np.intp)
    if op_name in ("any", "all"):
        return np.dtype(bool)
    if op_name == "var" and dtype.kind in "biu":
        return np.dtype(np.float64)
    if op_name in ("sum", "prod"):
        # add.reduce promotes small ints and bool to the default integer
        if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < np.dtype(np.int_).itemsize):
            return np.dtype(np.int_)
        if dtype.kind == "u" and dtype.itemsize < np.dtype(np.uint).itemsize:
            return np.dtype(np.uint)
    return np.dtype(dtype)


@dataclass(frozen=True)
class ReduceRule:
    """How one reduction accumulates, for one (op, input dtype, result dtype): the single
    definition every backend and every reduction path (thread step, warp and block
    combine, split finish, row passes) reads.

    `acc` is the dtype the running value has; `start` its initial value (NumPy's identity
    where it has one; for max/min the extreme of `acc`, for argmax/argmin unused: their
    state starts empty); `combine` names the binary operation folding two running values
    (or a running value and an element cast to `acc`): "add", "multiply", "maximum",
    "minimum", "logical_or", "logical_and", "argmax"/"argmin" for (value, index) pairs, or
    "welford" for the (count, mean, sum of squared deviations) of a variance.
    Integer "add"/"multiply" wrap around modulo 2**bits, as NumPy's loops do."""

    op: str
    acc: np.dtype
    start: Any
    combine: str

    @property
    def is_arg(self) -> bool:
        return self.combine in ARG_REDUCE_OPS


_COMBINE = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
            "any": "logical_or", "all": "logical_and", "argmax": "argmax", "argmin": "argmin",
            "var": "welford"}


def var_keeps_plain_sum(op_name: str, in_shape: Sequence[int], axes: Sequence[int]) -> bool:
    """Whether np.var's one-pass state also keeps the plain sum of its elements: over
    fewer than 8 of them, where NumPy's pairwise sum adds them one after another and its
    variance is about that sum over n (both backends' variance finish; from 8 elements on
    they take the exact sum rounded instead)."""
    return op_name == "var" and math.prod(int(in_shape[a]) for a in axes) < 8


def reduce_rule(op_name: str, in_dtype: Any, out_dtype: Any) -> ReduceRule:
    """The accumulation of reduction `op_name` over `in_dtype` elements giving `out_dtype`.

    Sums and products accumulate in the result dtype (NumPy casts each element to it, so
    `sum(x_f32, dtype=int32)` truncates elements first); max/min and argmax/argmin in the
    element dtype; any/all in bool. float16 accumulates in float32, where every half is
    exact: max/min/arg are unaffected, sums and products round once at the end."""
    in_dt, out_dt = np.dtype(in_dtype), np.dtype(out_dtype)
    combine = _COMBINE[op_name]
    if op_name in ("sum", "prod", "var"):
        acc = out_dt
    elif op_name in ("any", "all"):
        acc = np.dtype(bool)
    else:
        acc = in_dt
    if acc == np.float16:
        acc = np.dtype(np.float32)
    if op_name in ("sum", "any"):
        start: Any = 0
    elif op_name in ("prod", "all"):
        start = 1
    elif op_name == "max":
        start = -np.inf if acc.kind == "f" else (False if acc.kind == "b" else np.iinfo(acc).min)
    elif op_name == "min":
        start = np.inf if acc.kind == "f" else (True if acc.kind == "b" else np.iinfo(acc).max)
    else:
        start = 0   # argmax / argmin: the index -1 says that nothing was seen yet; var: no element
    return ReduceRule(op_name, acc, np.asarray(start).astype(acc).item(), combine)


@dataclass(frozen=True, eq=False)
class Args(Mapping[str, Any]):
    """Immutable, hashable static arguments of a node (axis, keepdims, dtype, ...).

    Equal when every value is, floats by their sign too: -0.0 == 0.0 in Python, but
    they are different constants (atan2(0, -0.0) is pi; the fuzzer found np.float64(-0.0)
    standing in for a later 0 through shared nodes and cached plans)."""

    items_: tuple[tuple[str, Any], ...] = ()

    def _key(self) -> tuple:
        return tuple((k, (v, math.copysign(1.0, v)) if isinstance(v, float) else v) for k, v in self.items_)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Args) and self._key() == other._key()

    @classmethod
    def of(cls, **kw: Any) -> "Args":
        return cls(tuple(sorted(kw.items())))

    def __getitem__(self, key: str) -> Any:
        for k, v in self.items_:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self):
        return (k for k, _ in self.items_)

    def __len__(self) -> int:
        return len(self.items_)

    def __hash__(self) -> int:
        return hash(tuple((k, _hashable(v)) for k, v in self._key()))


def _hashable(v: Any) -> Any:
    try:
        hash(v)
        return v
    except TypeError:
        return id(v)


@dataclass(frozen=True)
class OpaqueFn:
    """An operation fuselab does not fuse: called on real NumPy / CuPy arrays.

    `call(xp, *arrays)` runs it with array module `xp`; `name` is what the listing shows.
    """

    name: str
    call: Callable[..., Any] = field(compare=False)
    flops: Callable[[Sequence[Aval]], float] | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        return self.name
