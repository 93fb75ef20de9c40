"""Random notebook cells for the differential fuzzer: source text, the input arrays, and
for every value NumPy computed, how far fuselab's may be from it (numerics.py).

A cell is built line by line: each candidate line is run by NumPy itself on the real
inputs (a line NumPy rejects is dropped, so every cell is valid NumPy), and its bound is
derived from the op. A `Target` (a cell of the coverage matrix: a reduction layout and
op and dtype, an elementwise op and dtype in a kernel class, a cast) steers the shapes,
dtypes and first lines toward it; random lines follow. Codegen options (SM count, a
forced row tier) are part of the program, since they decide layouts too.
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fuselab.codegen import CodegenOptions
from fuselab.ops import ShapeError, ufunc_loop_dtypes, OPS

from . import catalog as C
from .data import DTYPES, FLOATS, sample, tame
from .numerics import f64, ulp, unit_roundoff

MAX_ELEMENTS = 1 << 15   # broadcasts of broadcasts stay small (the emulator runs every thread)
NP_NAMES = {d: f"np.{d.name}" if d.name != "bool" else "np.bool_" for d in DTYPES}


@dataclass(frozen=True)
class Target:
    """A coverage cell to steer toward (coverage.py names them)."""

    kind: str                 # "reduce" | "elem" | "cast"
    where: str                # a layout ("reduction/split+vec") or a kernel class ("row")
    op: str                   # op name, or for casts the source dtype
    dtype: str                # input dtype (reduce), loop dtype (elem), target dtype (cast)


@dataclass
class Value:
    name: str
    arr: np.ndarray           # NumPy's value, as an array
    bound: np.ndarray | None  # allowed |fuselab - NumPy| (None: same bits)
    scalar: bool = False      # NumPy gave a scalar
    any_zero_sign: bool = False   # a zero's sign is unspecified (ZERO_SIGN): +0.0 == -0.0

    @property
    def dtype(self) -> np.dtype:
        return self.arr.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.arr.shape

    @property
    def exact(self) -> bool:
        return self.bound is None

    def has_nan(self) -> bool:
        return self.dtype.kind == "f" and bool(np.isnan(self.arr).any())


@dataclass
class Program:
    seed: int
    source: str
    inputs: dict[str, np.ndarray]
    values: dict[str, Value]                 # every name the cell binds
    options: CodegenOptions
    target: Target | None = None
    deviations: tuple[str, ...] = ()         # documented differences applied (by name)
    constraint_seed: int = 0

    def expected(self, name: str) -> Value:
        return self.values[name]


# Documented, deliberate differences from NumPy, applied by name (README, "Differences
# from NumPy"): the oracle then expects fuselab's documented result, never a looser one.
F16_SUM = "float16 sums and products accumulate in float32 and round once"
CAST_RANGE = ("float-to-integer casts of NaN, infinities and values outside the target's range "
              "give x86's conversion results")
ZERO_SIGN = "the sign of a zero that maximum/minimum choose between +0.0 and -0.0 is unspecified"
POW_HALF = "power(x, 0.5) is a square root at -0.0 and -inf (-0.0 and NaN), as NumPy's contiguous float loops"
# ops whose result a zero's sign changes by more than a sign (1/-0 = -inf)
SIGN_SENSITIVE = ("true_divide", "reciprocal", "copysign", "signbit", "arctan2", "power", "floor_divide",
                  "remainder", "sign", "log", "log2", "log10", "sqrt")


def x86_cast(x: np.ndarray, to: np.dtype) -> np.ndarray:
    """Float to integer as the x86 truncating conversions fuselab's kernels reproduce
    (fl_caster in the CUDA prelude): NaN and out-of-range values give the smallest
    integer of the 32- or 64-bit conversion, which then wraps to the target width."""
    to = np.dtype(to)
    v = np.asarray(x, np.float64).ravel()
    out = np.empty(v.shape, object)

    def conv(t: float, bits: int) -> int:
        lim = 2.0 ** (bits - 1)
        if t != t or not (-lim - 1 < t < lim):
            return -(2 ** (bits - 1))
        return int(t)

    for k, t in enumerate(v):
        if to.itemsize == 8 and to.kind == "u":
            r = conv(t, 64) if t < 2.0 ** 63 else conv(t - 2.0 ** 63, 64) ^ (1 << 63)   # NaN: 2nd branch
        elif to.itemsize == 8 or (to.itemsize == 4 and to.kind == "u"):
            r = conv(t, 64)
        else:
            r = conv(t, 32)
        out[k] = r % (1 << (8 * to.itemsize))
    wrapped = np.array([int(o) for o in out], dtype=np.uint64).astype(np.dtype(f"u{to.itemsize}")).view(to)
    return wrapped.reshape(np.shape(x))


class CellBuilder:
    """Lines that NumPy has run, with the values they produced."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"np": np}
        self.values: dict[str, Value] = {}
        self.inputs: dict[str, np.ndarray] = {}
        self.deviations: set[str] = set()
        self.mutated: set[str] = set()   # inputs the cell updates in place (gaps.py): compared too

    # -- inputs ---------------------------------------------------------------
    def input(self, dtype: np.dtype, shape: tuple[int, ...], edges: bool = True) -> Value:
        name = f"x{len(self.inputs)}"
        arr = sample(self.rng, dtype, shape, 0.15 if edges else 0.0) if edges else tame(self.rng, dtype, shape)
        self.inputs[name] = arr
        self.env[name] = arr
        v = Value(name, arr, None)
        self.values[name] = v
        return v

    # -- lines --------------------------------------------------------------------
    def fresh(self) -> str:
        return f"v{len(self.lines)}"

    def run(self, expr: str) -> Any:
        """NumPy's value of `expr` in the cell so far, or None if NumPy refuses it."""
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                out = eval(expr, self.env)
            except Exception:
                return None
        if isinstance(out, np.generic):
            return out
        if isinstance(out, np.ndarray) and out.dtype in DTYPES and type(out) is np.ndarray \
                and out.size <= MAX_ELEMENTS:
            return out
        return None

    def bind(self, expr: str, out: Any, bound: np.ndarray | None, approx: bool = False,
             substitute: Any = None, zero_sign: bool = False) -> Value | None:
        """Add `name = expr` with NumPy's `out` (or, for a documented deviation, the
        reference `substitute`) and its bound; None if the bound cannot be trusted."""
        scalar = isinstance(out, np.generic)
        val = np.asarray(substitute if substitute is not None else out)
        if bound is not None:
            bound = np.broadcast_to(np.asarray(bound, np.float64), val.shape)
            if np.isnan(bound).any():
                return None   # whether the result is NaN depends on its inputs' rounding
            fin = np.isfinite(f64(val))
            if not np.isfinite(bound[fin]).all():
                return None   # e.g. a division by an inexact value that may be zero
            if val.dtype.kind == "f" and fin.any() and \
                    (np.abs(f64(val[fin])) > float(np.finfo(val.dtype).max) / 16).any():
                return None   # inexact values stay away from the overflow edge
        name = self.fresh()
        self.lines.append(f"{name} = {expr}")
        keep = val[()] if scalar else val
        if scalar and substitute is not None:
            keep = val.dtype.type(val[()])
        self.env[name] = keep
        v = Value(name, val, bound, scalar, zero_sign and val.dtype.kind == "f")
        if v.any_zero_sign:
            self.deviations.add(ZERO_SIGN)
        self.values[name] = v
        return v

    def source(self) -> str:
        return "\n".join(self.lines)


# ---------------------------------------------------------------------------
# Operations
# ---------------------------------------------------------------------------

def _pick(rng: np.random.Generator, pool: list[Value]) -> Value | None:
    return pool[int(rng.integers(len(pool)))] if pool else None


def _scalar_literal(rng: np.random.Generator, like: Value) -> str:
    """A Python or NumPy scalar operand (NEP 50: Python scalars are weak)."""
    k = like.dtype.kind
    r = rng.random()
    if k == "b":
        return str(bool(rng.random() < 0.5))
    if k in "iu":
        v = int(rng.choice([0, 1, 2, 3, 5, 7, -1, -3, 100, 127]))
        if r < 0.25:
            return f"{NP_NAMES[like.dtype]}({v})" if (k == "i" or v >= 0) else str(abs(v))
        return str(v)
    v = float(rng.choice([0.5, 2.0, -1.5, 3.0, 0.0, -0.0, 1e-3, 10.0]))
    if r < 0.1:
        return str(rng.choice(["np.nan", "np.inf", "-np.inf"]))
    if r < 0.3:
        return f"{NP_NAMES[like.dtype]}({v!r})"
    return repr(v)


def _zero_sign(op: str, *args: Value | None) -> tuple[bool, bool]:
    """(refuse, flag): a sign-sensitive op refuses a value whose zero's sign is
    unspecified; the flag follows every value computed from one, and starts at the ops
    that choose between +0.0 and -0.0."""
    flagged = any(a is not None and a.any_zero_sign for a in args)
    return flagged and op in SIGN_SENSITIVE, flagged or op in ("maximum", "minimum", "fmax", "fmin", "max", "min")


def unary(b: CellBuilder, op: str, x: Value) -> Value | None:
    spec = C.UNARY[op]
    refuse, zs = _zero_sign(op, x)
    if refuse or (spec.kind == C.JUMP and not x.exact):
        return None
    if op in ("signbit",) and x.has_nan():
        return None   # the sign of NaN is the platform's (x86's default NaN is negative)
    expr = spec.render(b.rng, x.name)
    out = b.run(expr)
    if out is None:
        return None
    o = np.asarray(out)
    if spec.kind == C.JUMP:
        return b.bind(expr, out, None, zero_sign=zs)
    if o.dtype.kind != "f":
        return b.bind(expr, out, None, zero_sign=zs) if x.exact else None
    if spec.kind == C.APPROX and x.dtype.kind == "f":
        # an inexact result must not come from finite inputs overflowing
        if (np.isinf(f64(o)) & np.isfinite(np.broadcast_to(f64(x.arr), o.shape))).any():
            return None
    substitute = None
    if op == "sqrt" and "** 0.5" in expr and x.dtype.kind == "f":   # the documented x ** 0.5
        xa = np.broadcast_to(x.arr, o.shape)
        odd = (xa == 0) & np.signbit(xa) | (xa == -np.inf)
        if odd.any():
            b.deviations.add(POW_HALF)
            with np.errstate(all="ignore"):
                substitute = np.where(odd, np.sqrt(xa.astype(o.dtype)), o)
    bound = C.unary_bound(op, o, np.broadcast_to(x.arr, o.shape), x.bound, o.dtype)
    return b.bind(expr, out, bound, approx=spec.kind == C.APPROX, zero_sign=zs, substitute=substitute)


def binary(b: CellBuilder, op: str, x: Value, y: Value | None, literal: str | None = None) -> Value | None:
    spec = C.BINARY[op]
    yb = None if y is None else y.bound
    refuse, zs = _zero_sign(op, x, y)
    if refuse or (spec.kind == C.JUMP and (not x.exact or (y is not None and not y.exact))):
        return None
    if op == "copysign" and y is not None and y.has_nan():
        return None
    rhs = y.name if y is not None else literal
    expr = spec.render(b.rng, x.name, rhs)
    out = b.run(expr)
    if out is None:
        return None
    o = np.asarray(out)
    if spec.kind == C.JUMP or o.dtype.kind != "f":
        exact_in = x.exact and yb is None
        return b.bind(expr, out, None, zero_sign=zs) if exact_in or spec.kind == C.JUMP else None
    yarr = y.arr if y is not None else np.asarray(eval(literal, {"np": np}))
    xa, ya = np.broadcast_to(x.arr, o.shape), np.broadcast_to(yarr, o.shape)
    substitute = None
    if op == "power" and yarr.ndim == 0 and float(yarr) == 0.5 and x.dtype.kind == "f":
        odd = (xa == 0) & np.signbit(xa) | (xa == -np.inf)
        if odd.any():
            b.deviations.add(POW_HALF)
            with np.errstate(all="ignore"):
                substitute = np.where(odd, np.sqrt(xa.astype(o.dtype)), o)
    if spec.kind == C.APPROX and (np.isinf(f64(o)) & np.isfinite(f64(xa)) & np.isfinite(f64(ya))).any():
        return None
    bx = None if x.bound is None else np.broadcast_to(x.bound, o.shape)
    by = None if yb is None else np.broadcast_to(yb, o.shape)
    if spec.kind == C.EXACT and bx is None and by is None:
        return b.bind(expr, out, None, zero_sign=zs)
    bound = C.binary_bound(op, o, xa, ya, bx, by, o.dtype)
    return b.bind(expr, out, bound, approx=spec.kind == C.APPROX, zero_sign=zs, substitute=substitute)


def where(b: CellBuilder, c: Value, x: Value, y: Value) -> Value | None:
    if c.dtype != np.bool_ or not c.exact:
        return None
    zs = x.any_zero_sign or y.any_zero_sign
    expr = f"np.where({c.name}, {x.name}, {y.name})"
    out = b.run(expr)
    if out is None:
        return None
    o = np.asarray(out)
    if x.exact and y.exact:
        return b.bind(expr, out, None, zero_sign=zs)
    if o.dtype.kind != "f":
        return None
    bx = np.broadcast_to(np.zeros(()) if x.bound is None else x.bound, o.shape)
    by = np.broadcast_to(np.zeros(()) if y.bound is None else y.bound, o.shape)
    bound = np.where(np.broadcast_to(c.arr, o.shape), bx, by) + ulp(o, o.dtype)  # a cast may round
    return b.bind(expr, out, bound, zero_sign=zs)


def cast(b: CellBuilder, x: Value, to: np.dtype) -> Value | None:
    if to.kind != "f" and not x.exact:
        return None
    expr = f"{x.name}.astype({NP_NAMES[to]})" if b.rng.random() < 0.8 else f"np.asarray({x.name}, dtype={NP_NAMES[to]})"
    out = b.run(expr)
    if out is None:
        return None
    if x.dtype.kind == "f" and to.kind in "iu":
        info = np.iinfo(to)
        with np.errstate(all="ignore"):
            t = np.trunc(f64(x.arr))
            outside = ~((t >= info.min) & (t <= info.max))   # NaN too
        if outside.any():
            b.deviations.add(CAST_RANGE)
            ref = np.where(outside, x86_cast(x.arr, to), np.asarray(out))
            return b.bind(expr, out, None, substitute=ref.astype(to))
    if x.exact:
        return b.bind(expr, out, None, zero_sign=x.any_zero_sign)
    o = np.asarray(out)
    return b.bind(expr, out, np.broadcast_to(x.bound, o.shape) + ulp(o, o.dtype), zero_sign=x.any_zero_sign)


_VIEWS = ["{x}.T", "{x}[::-1]", "{x}[1:]", "{x}[::2]", "{x}[..., ::-1]", "{x}[:, 1:-1]", "{x}[::-2]",
          "{x}.reshape(-1)", "{x}.reshape(-1)[::-1]", "{x}.ravel()", "{x}[None]", "{x}[:, None]",
          "{x}[..., None]", "np.expand_dims({x}, 0)", "{x}.squeeze()", "np.swapaxes({x}, 0, -1)",
          "{x}.transpose()", "{x}[::-1].T", "{x}.T[::2]", "{x}[1:, ::-1].reshape(-1)", "{x}.flatten()",
          "{x}.copy()", "np.broadcast_to({x}, (2,) + {x}.shape)", "{x}[-1]", "{x}[0]", "{x}[:, -1]"]


def view(b: CellBuilder, x: Value, expr: str | None = None) -> Value | None:
    expr = expr or str(b.rng.choice(_VIEWS)).format(x=x.name)
    out = b.run(expr)
    if out is None:
        return None
    if x.bound is None:
        return b.bind(expr, out, None, zero_sign=x.any_zero_sign)
    env = dict(b.env)
    env[x.name] = np.broadcast_to(x.bound, x.shape).copy()
    with np.errstate(all="ignore"):
        bound = np.asarray(eval(expr, env))
    return b.bind(expr, out, bound, zero_sign=x.any_zero_sign)


def stencil(b: CellBuilder, x: Value) -> Value | None:
    """Two shifted windows of one array combined, as a stencil does: x[1:-3] + x[3:-1]
    along the first or last axis (vector loads that pick elements across two vectors)."""
    rng = b.rng
    if x.arr.ndim == 0:
        return None
    axis = int(rng.choice([0, x.arr.ndim - 1]))
    n, reach = x.shape[axis], int(rng.integers(1, 5))
    if n <= reach + 1:
        return None
    def window(k: int) -> str:
        stop = f"{k - reach}" if k < reach else ""
        sl = f"{k}:{stop}"
        return f"{x.name}[{sl}]" if axis == 0 else f"{x.name}[..., {sl}]"
    left, right = (view(b, x, window(k)) for k in rng.choice(reach + 1, size=2, replace=False))
    if left is None or right is None:
        return None
    return binary(b, str(rng.choice(["add", "subtract", "multiply", "maximum"])), left, right)


def _axes_kw(rng: np.random.Generator, nd: int, single: bool = False) -> tuple[Any, str]:
    if nd == 0 or rng.random() < 0.2:
        return None, ""
    if single or rng.random() < 0.6:
        a = int(rng.integers(nd))
        return (a,), f"axis={a - nd if rng.random() < 0.3 else a}"
    axes = tuple(sorted(rng.choice(nd, size=int(rng.integers(1, nd + 1)), replace=False).tolist()))
    return axes, f"axis={axes}"


def reduce(b: CellBuilder, op: str, x: Value, axes_kw: tuple[Any, str] | None = None,
           keepdims: bool | None = None) -> Value | None:
    if C.REDUCE_KIND[op] == C.JUMP and not x.exact:
        return None
    if op == "prod" and not x.exact:
        return None
    axes, kw = axes_kw if axes_kw is not None else _axes_kw(b.rng, x.arr.ndim, single=op.startswith("arg"))
    if op.startswith("arg") and axes is not None and len(axes) != 1:
        return None
    kd = bool(b.rng.random() < 0.4) if keepdims is None else keepdims
    kws = [k for k in (kw, "keepdims=True" if kd else "") if k]
    kwtext = ", ".join(kws)
    expr = str(b.rng.choice(C.REDUCTIONS[op])).format(x=x.name, kw=kwtext, kwc=(", " + kwtext) if kwtext else "")
    out = b.run(expr)
    if out is None:
        return None
    o = np.asarray(out)
    axes_t = tuple(range(x.arr.ndim)) if axes is None else axes
    n = math.prod(x.shape[a] for a in axes_t) if x.arr.ndim else 1
    zs = _zero_sign(op, x)[1]
    if op in ("max", "min"):
        if x.bound is None:
            return b.bind(expr, out, None, zero_sign=zs)
        with np.errstate(all="ignore"):
            bound = np.max(np.broadcast_to(x.bound, x.shape), axis=axes_t, keepdims=kd, initial=0.0)
        return b.bind(expr, out, bound, zero_sign=zs)
    if op not in ("sum", "prod") or o.dtype.kind != "f":
        return b.bind(expr, out, None, zero_sign=zs and op in ("sum", "prod"))
    # float sums and products: any two summation orders differ by at most 2 (n-1) u sum|x|
    acc = np.dtype(np.float32) if o.dtype == np.float16 else o.dtype
    u = unit_roundoff(acc)
    xa = f64(x.arr)
    if not _order_safe(op, xa, axes_t, acc):
        return None
    with np.errstate(all="ignore"):
        if op == "sum":
            bound = 2 * max(n - 1, 0) * u * np.sum(np.abs(xa), axis=axes_t, keepdims=kd)
            if x.bound is not None:
                bound = bound + np.sum(np.broadcast_to(x.bound, x.shape), axis=axes_t, keepdims=kd)
        else:
            bound = 2 * max(n - 1, 0) * u * np.abs(f64(o))
    substitute = None
    if o.dtype == np.float16:
        # NumPy rounds a float16 sum to half at every step along a non-contiguous axis
        b.deviations.add(F16_SUM)
        fn = np.sum if op == "sum" else np.prod
        with np.errstate(all="ignore"):
            substitute = fn(x.arr.astype(np.float32), axis=axes_t, keepdims=kd).astype(np.float16)
            # the Numba backend gives NumPy's own steps there (README): either is right
            bound = bound + ulp(substitute, np.float16) + np.abs(f64(o) - f64(substitute))
    return b.bind(expr, out, bound, approx=True, substitute=substitute, zero_sign=zs)


def _order_safe(op: str, xa: np.ndarray, axes: tuple[int, ...], acc: np.dtype) -> bool:
    """Whether a float sum or product cannot overflow or underflow in one order and not
    in another (then no bound holds): partial sums stay below the largest value / 16,
    partial products between the smallest normal and the largest value, with margin."""
    fi = np.finfo(acc)
    with np.errstate(all="ignore"):
        a = np.where(np.isfinite(xa), np.abs(xa), 0.0)
        if op == "sum":
            return bool((np.sum(a, axis=axes) <= float(fi.max) / 16).all())
        lg = np.where(a > 0, np.log2(np.where(a > 0, a, 1.0)), 0.0)
        up = np.sum(np.maximum(lg, 0), axis=axes)
        down = np.sum(np.minimum(lg, 0), axis=axes)
    return bool((up < np.log2(float(fi.max)) - 4).all() and (down > np.log2(float(fi.tiny)) + 4).all())


def mean(b: CellBuilder, x: Value, axes_kw: tuple[Any, str] | None = None,
         keepdims: bool | None = None) -> Value | None:
    axes, kw = axes_kw if axes_kw is not None else _axes_kw(b.rng, x.arr.ndim)
    kd = bool(b.rng.random() < 0.4) if keepdims is None else keepdims
    kwtext = ", ".join(k for k in (kw, "keepdims=True" if kd else "") if k)
    expr = f"{x.name}.mean({kwtext})" if b.rng.random() < 0.5 else f"np.mean({x.name}{', ' + kwtext if kwtext else ''})"
    out = b.run(expr)
    if out is None or x.arr.size == 0:
        return None
    o = np.asarray(out)
    axes_t = tuple(range(x.arr.ndim)) if axes is None else axes
    n = math.prod(x.shape[a] for a in axes_t) if x.arr.ndim else 1
    acc = np.dtype(np.float64) if x.dtype.kind in "biu" else (np.dtype(np.float32) if x.dtype == np.float16 else x.dtype)
    if not _order_safe("sum", f64(x.arr), axes_t, acc):
        return None
    with np.errstate(all="ignore"):
        s = 2 * max(n - 1, 0) * unit_roundoff(acc) * np.sum(np.abs(f64(x.arr)), axis=axes_t, keepdims=kd)
        if x.bound is not None:
            s = s + np.sum(np.broadcast_to(x.bound, x.shape), axis=axes_t, keepdims=kd)
    bound = s / n + 2 * ulp(o, o.dtype)
    return b.bind(expr, out, bound, approx=True, zero_sign=x.any_zero_sign)


def variance(b: CellBuilder, x: Value, axes_kw: tuple[Any, str] | None = None, keepdims: bool | None = None,
             std: bool | None = None) -> Value | None:
    """np.var / np.std (float32, float64 and integers: one `var` reduction, computed in
    one pass). Bound: each of NumPy's two passes and fuselab's Welford update is within
    about (n + 4) u S of the exact variance times (n - ddof), S the sum of squared
    deviations; an error in the mean adds n u^2 (sum|x|)^2."""
    if x.dtype == np.float16 or not x.exact or x.arr.size == 0:
        return None
    rng = b.rng
    axes, kw = axes_kw if axes_kw is not None else _axes_kw(rng, x.arr.ndim)
    kd = bool(rng.random() < 0.4) if keepdims is None else keepdims
    ddof = int(rng.choice([0, 0, 1]))
    std = bool(rng.random() < 0.4) if std is None else std
    fn = "std" if std else "var"
    kwtext = ", ".join(k for k in (kw, f"ddof={ddof}" if ddof else "", "keepdims=True" if kd else "") if k)
    expr = f"{x.name}.{fn}({kwtext})" if rng.random() < 0.5 else f"np.{fn}({x.name}{', ' + kwtext if kwtext else ''})"
    out = b.run(expr)
    if out is None:
        return None
    o = np.asarray(out)
    axes_t = tuple(range(x.arr.ndim)) if axes is None else axes
    n = math.prod(x.shape[a] for a in axes_t) if x.arr.ndim else 1
    xa = f64(x.arr)
    if not _order_safe("sum", xa * xa, axes_t, o.dtype):
        return None
    u = unit_roundoff(o.dtype)
    with np.errstate(all="ignore"):
        m = np.mean(xa, axis=axes_t, keepdims=True)
        S = np.sum((xa - m) ** 2, axis=axes_t, keepdims=kd)
        A = np.sum(np.abs(xa), axis=axes_t, keepdims=kd)
        bv = (2 * (n + 4) * u * S + 2 * n * u * u * A * A) / max(n - ddof, 1)
        if std:
            v = S / max(n - ddof, 1)
            bound = np.minimum(bv / (2 * np.sqrt(v)), np.sqrt(bv)) + 2 * ulp(o, o.dtype)
        else:
            bound = bv + 2 * ulp(o, o.dtype)
    return b.bind(expr, out, bound, approx=True)


# ---------------------------------------------------------------------------
# Random lines
# ---------------------------------------------------------------------------

def random_line(b: CellBuilder) -> Value | None:
    rng = b.rng
    pool = list(b.values.values())
    x = _pick(rng, pool)
    if x is None:
        return None
    kind = rng.choice(["unary", "binary", "binary", "scalar", "where", "cast", "view", "reduce", "mean", "var",
                       "stencil"], p=[0.17, 0.17, 0.11, 0.1, 0.05, 0.08, 0.11, 0.12, 0.03, 0.03, 0.03])
    if kind == "unary":
        return unary(b, str(rng.choice(list(C.UNARY))), x)
    if kind == "binary":
        return binary(b, str(rng.choice(list(C.BINARY))), x, _pick(rng, pool))
    if kind == "scalar":
        return binary(b, str(rng.choice(list(C.BINARY))), x, None, _scalar_literal(rng, x))
    if kind == "where":
        conds = [v for v in pool if v.dtype == np.bool_ and v.exact]
        c = _pick(rng, conds)
        if c is None:
            c = binary(b, "greater", x, None, "0") if x.exact else None
        return where(b, c, x, _pick(rng, pool)) if c is not None else None
    if kind == "cast":
        return cast(b, x, DTYPES[int(rng.integers(len(DTYPES)))])
    if kind == "view":
        return view(b, x)
    if kind == "reduce":
        return reduce(b, str(rng.choice(list(C.REDUCTIONS))), x)
    if kind == "var":
        return variance(b, x)
    if kind == "stencil":
        return stencil(b, x)
    return mean(b, x)


# ---------------------------------------------------------------------------
# Targets: shapes and first lines that reach a cell of the coverage matrix
# ---------------------------------------------------------------------------

def _layout_shape(rng: np.random.Generator, layout: str, dt: np.dtype, sm: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(shape, reduced axes) that give `layout` on a device of `sm` SMs (codegen's rules,
    see fuselab/codegen/reduction.py and row.py)."""
    vec = layout.endswith("+vec")
    base = layout.removesuffix("+vec")
    w = max(1, 16 // dt.itemsize) if vec else 1

    def mult(n: int) -> int:   # a multiple of the vector width (vec) or an odd size (scalar)
        return max(w, n // w * w) if vec else (n | 1)

    if base == "reduction/thread":
        return (int(rng.integers(1, 300)), mult(int(rng.integers(1, 8 * w + 1)))), (1,)
    if base == "reduction/lanes":
        return (int(rng.integers(32 * sm, 64 * sm + 1)), mult(int(rng.integers(8 * w + 1, 64 * w)))), (1,)
    if base == "reduction/block":
        return (int(rng.integers(1, 16 * sm)), mult(int(rng.integers(200 * w, 4000)))), (1,)
    if base == "reduction/split":
        return (int(rng.integers(1, 4)), mult(int(rng.integers(8192, 14000)))), (1,)
    if base == "reduction/column":
        k2 = int(rng.choice([32, 64, 96, 128])) if vec else int(rng.choice([33, 47, 65]))
        return (int(rng.integers(2, 120)), k2), (0,)
    if base == "reduction/column-split":
        k2 = int(rng.choice([32, 64, 128])) if vec else int(rng.choice([33, 65]))
        return (int(rng.integers(300, 2500)), k2), (0,)
    if base == "row/strided":   # a thread a row along axis 0 of 2-D or the middle axis of 3-D
        if rng.random() < 0.5:
            return (int(rng.integers(2, 48)), int(rng.integers(3, 400))), (0,)
        return (int(rng.integers(1, 4)), int(rng.integers(2, 48)), int(rng.integers(2, 100))), (1,)
    # row tiers: forced through the options; rows of a few hundred columns. Odd rows of
    # four or more packs take packs aligned to memory (+vec, codegen/row.py); rows of
    # single columns are the odd ones under four packs of any dtype
    cols = mult(int(rng.integers(3, 400))) if vec else int(rng.choice([3, 5, 7]))
    return (int(rng.integers(2, 9)), cols), (1,)


# inner reductions read single elements only where no vector follows the runs: contiguous
# odd runs take vectors aligned to memory (codegen/reduction.py), so these read every
# second element of an array twice as wide
_STRIDED_INNER = ("reduction/lanes", "reduction/block", "reduction/split")


def _reduce_target(b: CellBuilder, t: Target, sm: int) -> None:
    dt = np.dtype(t.dtype)
    shape, axes = _layout_shape(b.rng, t.where, dt, sm)
    wide = t.where in _STRIDED_INNER
    x = b.input(dt, (*shape[:-1], 2 * shape[-1]) if wide else shape, edges=t.op != "var" and b.rng.random() < 0.5)
    if t.op == "prod" and dt.kind == "f":
        x = _near_one(b, x)   # the input itself (a view's name is no input of the cell)
    if wide:
        x = view(b, x, f"{x.name}[..., ::2]") or x
    if b.rng.random() < 0.3:   # a sibling reduction of another op and accumulator type
        other = str(b.rng.choice(list(C.REDUCTIONS)))
        src = x if b.rng.random() < 0.5 else (binary(b, "greater", x, None, "0") or x)
        reduce(b, other, src, (axes, f"axis={axes[0]}"), keepdims=t.where.startswith("row"))
    if t.op == "var":
        r = variance(b, x, (axes, f"axis={axes[0]}"), keepdims=t.where.startswith("row"), std=False)
    else:
        r = reduce(b, t.op, x, (axes, f"axis={axes[0]}"), keepdims=t.where.startswith("row"))
    if r is not None and t.where.startswith("row"):
        binary(b, "add", x, r)   # the reduced value broadcast back: a row kernel


def _near_one(b: CellBuilder, x: Value) -> Value:
    """x's values replaced by signs and a few halvings and doublings: a float product of the
    thousands of elements a split layout takes stays in range (random values overflow or
    underflow, and such programs are dropped), and is exact in every order. An input that
    earlier lines read keeps its values: theirs were computed from them (a product of it
    taken twice, the second replacing the first's operand, left the first one's NumPy
    value stale: GPU fuzzer seed 8103026355)."""
    if any(re.search(rf"\b{x.name}\b", line) for line in b.lines):
        return b.values[x.name]   # its values now (the caller's Value may hold replaced ones)
    arr = np.where(b.rng.random(x.shape) < 0.5, -1.0, 1.0)
    k = b.rng.integers(0, max(arr.size, 1), size=min(arr.size, 12))
    arr.flat[k] *= b.rng.choice([0.5, 2.0], size=len(k))
    arr = arr.astype(x.dtype)
    b.inputs[x.name] = b.env[x.name] = arr
    v = Value(x.name, arr, None)
    b.values[x.name] = v
    return v


def _elem_target(b: CellBuilder, t: Target, sm: int) -> None:
    dt = np.dtype(t.dtype)
    rng = b.rng
    arity = 1 if t.op in C.UNARY else 2
    cls = t.where
    if cls == "row":
        shape = (int(rng.integers(2, 6)), int(rng.integers(3, 200)))
    elif cls == "reduction":
        shape = (int(rng.integers(1, 50)), int(rng.integers(1, 300)))
    else:
        shape = tuple(int(rng.choice([1, 3, 16, 33, 64])) for _ in range(int(rng.integers(1, 4))))
    spec = C.UNARY.get(t.op) or C.BINARY.get(t.op)
    tame_inputs = spec is not None and spec.kind == C.APPROX   # inexact ops: no overflowing edges
    x = b.input(dt, shape, edges=not tame_inputs)
    if cls == "pointwise-strided":
        x = view(b, x) or x
    y = b.input(dt, shape[-1:] if rng.random() < 0.3 else shape, edges=not tame_inputs) if arity == 2 else None
    e = None
    for _ in range(4):
        if t.op == "where":
            c = binary(b, "greater", x, y) if x.exact else None
            e = where(b, c, x, y) if c is not None else None
        else:
            e = unary(b, t.op, x) if arity == 1 else binary(b, t.op, x, y)
        if e is not None:
            break
    if e is None:
        return
    if cls == "reduction":
        reduce(b, str(rng.choice(["sum", "max", "min", "argmax"])), e)
    elif cls == "row" and e.arr.ndim >= 1:
        r = reduce(b, "max", e, ((e.arr.ndim - 1,), "axis=-1"), keepdims=True)
        if r is not None:
            binary(b, "subtract", e, r)


def _cast_target(b: CellBuilder, t: Target, sm: int) -> None:
    src, dst = np.dtype(t.op), np.dtype(t.dtype)
    shape = (int(b.rng.integers(2, 40)), int(b.rng.integers(1, 70)))
    x = b.input(src, shape)
    if t.where == "pointwise-strided":
        x = view(b, x) or x
    c = cast(b, x, dst)
    if c is None:
        return
    if t.where == "reduction":
        reduce(b, str(b.rng.choice(["sum", "max", "argmin"])), c)
    elif t.where == "row":
        r = reduce(b, "max", c, ((1,), "axis=-1"), keepdims=True)
        if r is not None:
            binary(b, "subtract", c, r)


# ---------------------------------------------------------------------------
# Structural targets: cell shapes the coverage matrix does not tell apart (reductions over
# any axes of 3-D/4-D arrays, keepdims results used again, views and broadcasts along
# each axis, stencils in 1-3 dimensions, two-pass normalisations, 0-d inputs, empty and
# size-1 axes, sizes around powers of two). Target("struct", scenario, "", dtype);
# the driver draws them beside the matrix's cells.
# ---------------------------------------------------------------------------

# the forms an audit of fuselab's ops and tracer found no line of the generator writing
# (gaps.py: scalar operands at their edges on either side, in-place updates and out=,
# ufunc dtype= / np.where / clip / round arguments, var ddof, more views, cast edges,
# 2-D and 3-D stencils for the pointwise stencil, row-vector and transpose paths, small
# operands broadcast along odd runs for the gathered "tables")
GAP_STRUCTS = ("scalar-edges", "inplace", "ufunc-args", "ddof", "views-more", "cast-edges", "stencil-2d",
               "broadcast-runs")
STRUCTS = ("axes", "normalize", "argties", "views", "broadcast", "stencil-nd", "twopass", "scalar",
           "degenerate", "chain", "dtype-arg", "creation", "misc") + GAP_STRUCTS
# sizes around powers of two, warp and block multiples
_EDGE_SIZES = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257,
               511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049)
_STRUCT_ELEMS = 6000     # the emulator runs every thread of every plan


def _edge_shape(rng: np.random.Generator, nd: int, zero: float = 0.0, limit: int = _STRUCT_ELEMS) -> tuple[int, ...]:
    if limit == _STRUCT_ELEMS and rng.random() < 0.1:
        limit = 30000   # now and then big enough for split layouts and slabs of rows
    w = np.array([1.0 / (1 + k / 6) for k in range(len(_EDGE_SIZES))])
    shape = [int(rng.choice(_EDGE_SIZES, p=w / w.sum())) for _ in range(nd)]
    while math.prod(shape) > limit:   # shrink the largest extent to a smaller edge size
        k = int(np.argmax(shape))
        shape[k] = max([s for s in _EDGE_SIZES if s < shape[k]] or [1])
        if rng.random() < 0.3:
            shape[k] = max(1, shape[k] // 2)
    if zero and rng.random() < zero:
        shape[int(rng.integers(nd))] = 0
    return tuple(shape)


def _axes_text(rng: np.random.Generator, axes: tuple[int, ...], nd: int, arg: bool = False) -> str:
    """`axis=` for normalised `axes`, sometimes with negative axes or as a tuple of one
    (never for argmax/argmin: `arg`)."""
    names = [a - nd if rng.random() < 0.3 else a for a in axes]
    if len(names) == 1 and (arg or rng.random() < 0.85):
        return f"axis={names[0]}"
    return f"axis=({', '.join(map(str, names))}{',' if len(names) == 1 else ''})"


def _some_axes(rng: np.random.Generator, nd: int, single: bool = False) -> tuple[int, ...]:
    if single or nd == 1 or rng.random() < 0.55:
        return (int(rng.integers(nd)),)
    k = int(rng.integers(2, nd + 1))
    return tuple(sorted(int(a) for a in rng.choice(nd, size=k, replace=False)))


def _set_input(b: CellBuilder, x: Value, arr: np.ndarray) -> Value:
    b.inputs[x.name] = b.env[x.name] = arr
    v = Value(x.name, arr, None)
    b.values[x.name] = v
    return v


def _any_reduce(b: CellBuilder, x: Value, axes: tuple[int, ...], kd: bool, op: str | None = None) -> Value | None:
    rng = b.rng
    nd = x.arr.ndim
    op = op or str(rng.choice(["sum", "prod", "max", "min", "argmax", "argmin", "any", "all", "mean", "var", "std"]))
    if op.startswith("arg"):
        axes = axes[:1]
    akw = (axes, _axes_text(rng, axes, nd, op.startswith("arg")))
    if op == "mean":
        return mean(b, x, akw, kd)
    if op in ("var", "std"):
        return variance(b, x, akw, kd, std=op == "std")
    if op == "prod" and x.dtype.kind == "f" and x.name in b.inputs:
        x = _near_one(b, x)
    return reduce(b, op, x, akw, kd)


def _consume(b: CellBuilder, x: Value, r: Value | None) -> Value | None:
    """Use a reduction's result again: broadcast back against its input (keepdims), or
    combined with a value of its own shape, or reduced again."""
    if r is None:
        return None
    rng = b.rng
    k = rng.random()
    if r.arr.ndim == x.arr.ndim and k < 0.6:
        return binary(b, str(rng.choice(["subtract", "add", "true_divide", "multiply", "maximum", "less"])), x, r)
    if k < 0.8 and r.arr.ndim:
        return reduce(b, str(rng.choice(["sum", "max", "min", "argmax"])), r,
                      ((r.arr.ndim - 1,), "axis=-1") if rng.random() < 0.5 else ((0,), "axis=0"))
    return binary(b, str(rng.choice(["add", "multiply"])), r, None, _scalar_literal(rng, r))


def _struct_target(b: CellBuilder, t: Target, sm: int) -> None:
    rng = b.rng
    dt = np.dtype(t.dtype)
    s = t.where
    if s in ("dtype-arg", "creation", "misc"):
        return _struct_more(b, t, sm)
    if s in GAP_STRUCTS:
        from .gaps import build   # (gaps.py builds on this module's lines)
        return build(b, t)
    if s == "axes":   # any reduction over any axes of 2-D..4-D, its result used again
        nd = int(rng.integers(2, 5))
        x = b.input(dt, _edge_shape(rng, nd), edges=rng.random() < 0.5)
        axes = _some_axes(rng, nd)
        kd = bool(rng.random() < 0.6)
        r = _any_reduce(b, x, axes, kd)
        if rng.random() < 0.4:   # a sibling over the same axes
            _any_reduce(b, x, axes, kd)
        _consume(b, x, r)
    elif s == "normalize":   # layernorm / softmax / logsumexp along any one axis
        nd = int(rng.integers(1, 4))
        fdt = dt if dt.kind == "f" and dt != np.float16 else np.dtype(rng.choice([np.float32, np.float64]))
        x = b.input(fdt, _edge_shape(rng, nd), edges=False)
        a = int(rng.integers(nd))
        akw = ((a,), _axes_text(rng, (a,), nd))
        if rng.random() < 0.5:
            m = mean(b, x, akw, True)
            sd = variance(b, x, akw, True, std=True)
            c = binary(b, "subtract", x, m) if m is not None else None
            if c is not None and sd is not None:
                binary(b, "true_divide", c, sd)
        else:
            m = reduce(b, "max", x, akw, True)
            c = binary(b, "subtract", x, m) if m is not None else None
            e = unary(b, "exp", c) if c is not None else None
            if e is not None:
                z = reduce(b, "sum", e, akw, True)
                if z is not None:
                    binary(b, "true_divide", e, z)
    elif s == "argties":   # argmax/argmin with NaNs, infinities and ties, beside max/min
        nd = int(rng.integers(1, 4))
        shape = _edge_shape(rng, nd, limit=3000)
        x = b.input(dt, shape)
        if dt.kind == "f":
            pool = np.array([0.0, 1.0, -1.0, 2.0, np.nan, np.inf, -np.inf, -0.0])
            p = np.array([3, 3, 3, 1, rng.random(), rng.random(), rng.random(), 1.0])
            arr = rng.choice(pool, size=shape, p=p / p.sum()).astype(dt)
        elif dt.kind == "b":
            arr = rng.random(shape) < rng.random()
        else:
            info = np.iinfo(dt)
            arr = rng.choice(np.array([0, 1, 2, info.min, info.max], dtype=object), size=shape).astype(dt)
        x = _set_input(b, x, arr)
        a = int(rng.integers(nd))
        kd = bool(rng.random() < 0.4)
        akw = ((a,), _axes_text(rng, (a,), nd, True))
        reduce(b, str(rng.choice(["argmax", "argmin"])), x, akw, kd)
        if rng.random() < 0.6:
            m = reduce(b, str(rng.choice(["max", "min"])), x, akw, True)
            if m is not None:
                binary(b, "equal", x, m)
        if rng.random() < 0.5 and nd > 1:
            reduce(b, str(rng.choice(["argmax", "argmin"])), x, None, False)
    elif s == "views":   # views of an input reduced along each axis and used again
        nd = int(rng.integers(2, 5))
        x = b.input(dt, _edge_shape(rng, nd), edges=rng.random() < 0.5)
        v = x
        for _ in range(int(rng.integers(1, 3))):
            k = int(rng.integers(v.arr.ndim))
            perm = [int(i) for i in rng.permutation(v.arr.ndim)]
            ix = [":"] * v.arr.ndim
            ix[k] = str(rng.choice(["::-1", "1:", "::2", "1::2", ":-1", "::-3", "2:-1"]))
            forms = [f"{v.name}.transpose({', '.join(map(str, perm))})", f"{v.name}[{', '.join(ix)}]",
                     f"np.swapaxes({v.name}, {k}, -1)", f"{v.name}.T", f"np.moveaxis({v.name}, 0, -1)"]
            w = view(b, v, str(rng.choice(forms)))
            if w is None or w.arr.size == 0:
                break
            v = w
        if v is not x:
            nd = v.arr.ndim
            axes = _some_axes(rng, nd)
            r = _any_reduce(b, v, axes, bool(rng.random() < 0.6))
            _consume(b, v, r)
    elif s == "broadcast":   # a binary op broadcasting along each axis, then a reduction
        nd = int(rng.integers(2, 5))
        shape = _edge_shape(rng, nd)
        x = b.input(dt, shape, edges=rng.random() < 0.5)
        k = int(rng.integers(nd))
        small = tuple(1 if i == k or rng.random() < 0.2 else d for i, d in enumerate(shape))
        if rng.random() < 0.3:
            small = small[int(rng.integers(1, nd)):]
        y = b.input(DTYPES[int(rng.integers(len(DTYPES)))] if rng.random() < 0.3 else dt, small)
        op = str(rng.choice(["add", "subtract", "multiply", "maximum", "minimum", "greater", "true_divide"]))
        e = binary(b, op, x, y) if rng.random() < 0.5 else binary(b, op, y, x)
        if e is not None:
            r = _any_reduce(b, e, _some_axes(rng, e.arr.ndim), bool(rng.random() < 0.6))
            _consume(b, e, r)
    elif s == "stencil-nd":   # shifted windows along one or more axes of 1-D..3-D
        nd = int(rng.integers(1, 4))
        shape = tuple(max(d, 4) for d in _edge_shape(rng, nd, limit=4000))
        x = b.input(dt, shape, edges=rng.random() < 0.5)
        acc = None
        for _ in range(int(rng.integers(2, 5))):
            ix = []
            for d in range(nd):
                lo = int(rng.integers(0, 3))
                hi = 2 - lo
                ix.append(f"{lo}:{-hi if hi else ''}")
            w = view(b, x, f"{x.name}[{', '.join(ix)}]")
            if w is None:
                continue
            acc = w if acc is None else (binary(b, str(rng.choice(["add", "subtract", "maximum", "multiply"])), acc, w)
                                         or acc)
        if acc is not None and rng.random() < 0.4:
            _any_reduce(b, acc, _some_axes(rng, acc.arr.ndim), bool(rng.random() < 0.5),
                        str(rng.choice(["sum", "max", "argmin"])))
    elif s == "twopass":   # a full reduction broadcast back: x / x.sum(), x - x.mean(), ...
        nd = int(rng.integers(1, 4))
        x = b.input(dt, _edge_shape(rng, nd), edges=rng.random() < 0.3)
        kd = bool(rng.random() < 0.5)
        op = str(rng.choice(["sum", "max", "min", "mean", "std", "prod"]))
        akw = (tuple(range(nd)), "") if rng.random() < 0.6 else (tuple(range(nd)), f"axis={tuple(range(nd))}")
        if op == "mean":
            r = mean(b, x, akw, kd)
        elif op == "std":
            r = variance(b, x, akw, kd, std=True)
        else:
            src = x if op != "max" or rng.random() < 0.5 else unary(b, "absolute", x)
            if op == "prod" and x.dtype.kind == "f":
                src = _near_one(b, x)
            r = reduce(b, op, src, akw, kd) if src is not None else None
        if r is not None:
            e = binary(b, str(rng.choice(["true_divide", "subtract", "multiply"])), x, r)
            if e is not None and rng.random() < 0.5:
                reduce(b, "sum", e, (tuple(range(nd)), ""), False)
    elif s == "scalar":   # 0-d inputs against arrays and reductions
        nd = int(rng.integers(1, 4))
        x = b.input(dt, _edge_shape(rng, nd, limit=3000), edges=rng.random() < 0.5)
        z = b.input(DTYPES[int(rng.integers(len(DTYPES)))] if rng.random() < 0.5 else dt, ())
        e = binary(b, str(rng.choice(["add", "multiply", "maximum", "subtract", "less", "power"])), x, z) \
            if rng.random() < 0.5 else binary(b, str(rng.choice(["add", "minimum", "true_divide"])), z, x)
        r = _any_reduce(b, e if e is not None else x, _some_axes(rng, nd), bool(rng.random() < 0.5))
        if r is not None:
            binary(b, "add", r, z)
        if rng.random() < 0.3:
            _any_reduce(b, z, (), False, str(rng.choice(["sum", "max", "argmax"])))
    elif s == "degenerate":   # empty and size-1 axes reduced, kept and broadcast back
        nd = int(rng.integers(1, 4))
        shape = list(_edge_shape(rng, nd, limit=2000))
        for k in range(nd):
            if rng.random() < 0.4:
                shape[k] = int(rng.choice([0, 1, 1]))
        x = b.input(dt, tuple(shape), edges=rng.random() < 0.5)
        axes = _some_axes(rng, nd)
        r = _any_reduce(b, x, axes, bool(rng.random() < 0.6))
        _consume(b, x, r)
    else:   # "chain": a reduction of a reduction, and values of both used again
        nd = int(rng.integers(2, 5))
        x = b.input(dt, _edge_shape(rng, nd), edges=rng.random() < 0.5)
        r = _any_reduce(b, x, _some_axes(rng, nd), bool(rng.random() < 0.5),
                        str(rng.choice(["sum", "max", "min", "mean", "any"])))
        if r is not None and r.arr.ndim:
            r2 = _any_reduce(b, r, _some_axes(rng, r.arr.ndim), bool(rng.random() < 0.5))
            if r2 is not None:
                binary(b, str(rng.choice(["add", "subtract", "maximum"])), r, r2)


def reduce_dtype(b: CellBuilder, op: str, x: Value, axes: tuple[int, ...], kd: bool, to: np.dtype) -> Value | None:
    """sum / prod / mean / var / std with dtype=: the accumulator (and for sum and prod
    the result) of `to`, whatever the input's dtype."""
    rng = b.rng
    if not x.exact or x.arr.size == 0 and op in ("mean", "var", "std"):
        return None
    if x.dtype.kind == "f" and (to.kind != "f" or to.itemsize < x.dtype.itemsize):
        return None   # float to integer accumulators: x86's conversions (CAST_RANGE), not here
    if op in ("mean", "var", "std") and to.kind != "f":
        return None
    if to == np.float16 and op != "sum":
        return None
    nd = x.arr.ndim
    kws = [k for k in (_axes_text(rng, axes, nd) if nd else "", f"dtype={NP_NAMES[to]}",
                       "keepdims=True" if kd else "") if k]
    kwtext = ", ".join(kws)
    expr = f"{x.name}.{op}({kwtext})" if rng.random() < 0.5 else f"np.{op}({x.name}, {kwtext})"
    out = b.run(expr)
    if out is None:
        return None
    o = np.asarray(out)
    axes_t = axes if nd else ()
    n = math.prod(x.shape[a] for a in axes_t) if nd else 1
    if to.kind != "f":
        return b.bind(expr, out, None)          # integer arithmetic wraps the same way
    acc = np.dtype(np.float32) if to == np.float16 else to
    xc = f64(x.arr.astype(acc))                 # each element rounded to the accumulator first
    u = unit_roundoff(acc)
    if op in ("sum", "mean"):
        if not _order_safe("sum", xc, axes_t, acc):
            return None
        with np.errstate(all="ignore"):
            bnd = 2 * max(n - 1, 0) * u * np.sum(np.abs(xc), axis=axes_t, keepdims=kd)
        if op == "mean":
            bnd = bnd / max(n, 1)
        substitute = None
        if to == np.float16:
            b.deviations.add(F16_SUM)
            with np.errstate(all="ignore"):
                substitute = np.sum(x.arr.astype(np.float32), axis=axes_t, keepdims=kd).astype(np.float16)
                # the Numba backend gives NumPy's own steps (README): either is right
                bnd = bnd + ulp(substitute, np.float16) + np.abs(f64(o) - f64(substitute))
        return b.bind(expr, out, bnd + 2 * ulp(o, o.dtype), approx=True, substitute=substitute)
    if op == "prod":
        if not _order_safe("prod", xc, axes_t, acc):
            return None
        return b.bind(expr, out, 2 * max(n - 1, 0) * u * np.abs(f64(o)) + ulp(o, o.dtype), approx=True)
    if not _order_safe("sum", xc * xc, axes_t, acc):
        return None
    with np.errstate(all="ignore"):
        m = np.mean(xc, axis=axes_t, keepdims=True)
        S = np.sum((xc - m) ** 2, axis=axes_t, keepdims=kd)
        A = np.sum(np.abs(xc), axis=axes_t, keepdims=kd)
        ddof = 0
        bv = (2 * (n + 4) * u * S + 2 * n * u * u * A * A) / max(n - ddof, 1)
        if op == "std":
            v = S / max(n, 1)
            bound = np.minimum(bv / (2 * np.sqrt(v)), np.sqrt(bv)) + 2 * ulp(o, o.dtype)
        else:
            bound = bv + 2 * ulp(o, o.dtype)
    return b.bind(expr, out, bound, approx=True)


def _struct_more(b: CellBuilder, t: Target, sm: int) -> None:
    rng = b.rng
    dt = np.dtype(t.dtype)
    s = t.where
    if s == "dtype-arg":   # reductions with dtype=: accumulators other than the default
        nd = int(rng.integers(1, 4))
        x = b.input(dt, _edge_shape(rng, nd, limit=3000), edges=rng.random() < 0.5)
        op = str(rng.choice(["sum", "sum", "prod", "mean", "var", "std"]))
        if op == "prod" and dt.kind == "f":
            x = _near_one(b, x)
        to = DTYPES[int(rng.integers(len(DTYPES)))]
        r = reduce_dtype(b, op, x, _some_axes(rng, nd), bool(rng.random() < 0.5), to)
        _consume(b, x, r)
    elif s == "creation":   # np.arange / zeros / ones / full(_like) fused with inputs
        nd = int(rng.integers(1, 4))
        shape = _edge_shape(rng, nd, limit=3000)
        x = b.input(dt, shape, edges=rng.random() < 0.5)
        k = int(rng.random() * nd)
        n = shape[-1]
        forms = [f"np.arange({n})", f"np.arange({n}, dtype={NP_NAMES[dt]})",
                 f"np.arange(1, {2 * n + 1}, 2)", f"np.arange({n}.0)", f"np.arange({n} - 1, -1, -1)",
                 f"np.ones_like({x.name})", f"np.zeros({shape})", f"np.full({shape}, 3, dtype={NP_NAMES[dt]})",
                 f"np.full_like({x.name}, 2)", f"np.ones({shape[k:]}, dtype={NP_NAMES[dt]})",
                 f"np.arange({n}, dtype=np.float32) * 0.5"]
        g = None
        expr = str(rng.choice(forms))
        out = b.run(expr)
        if out is not None:
            g = b.bind(expr, out, None if np.asarray(out).dtype.kind != "f" or "0.5" not in expr else None)
        if g is not None:
            e = binary(b, str(rng.choice(["add", "multiply", "subtract", "maximum", "less"])), x, g)
            if e is not None and rng.random() < 0.6:
                _consume(b, e, _any_reduce(b, e, _some_axes(rng, e.arr.ndim), bool(rng.random() < 0.5)))
    else:   # "misc": clip, flip, count_nonzero, round to decimals, norms, atleast_nd
        nd = int(rng.integers(1, 4))
        x = b.input(dt, _edge_shape(rng, nd, limit=3000), edges=rng.random() < 0.5)
        a = int(rng.integers(nd))
        forms = [f"np.clip({x.name}, 0, 5)", f"np.clip({x.name}, -1, None)", f"{x.name}.clip(max=3)",
                 f"np.flip({x.name}, {a})", f"np.flip({x.name})", f"np.count_nonzero({x.name}, axis={a})",
                 f"np.count_nonzero({x.name})", f"np.atleast_3d({x.name})", f"np.fliplr(np.atleast_2d({x.name}))",
                 f"np.flipud({x.name})", f"np.abs({x.name}).max(axis={a}, keepdims=True)"]
        expr = str(rng.choice(forms))
        out = b.run(expr)
        v = None
        if out is not None and x.exact:
            v = b.bind(expr, out, None, zero_sign=x.any_zero_sign or "clip" in expr)
        if v is not None and v.arr.ndim:
            r = _any_reduce(b, v, _some_axes(rng, v.arr.ndim), bool(rng.random() < 0.5))
            _consume(b, v, r)


def options_for(rng: np.random.Generator, target: Target | None, real_sm: int | None) -> CodegenOptions:
    """Codegen options of a program: the emulator's small devices (or the GPU's own SM
    count), and a forced row tier when the target is one."""
    sm = real_sm if real_sm is not None else int(rng.choice([1, 2, 4]))
    tier = "auto"
    if target is not None and target.kind == "struct":
        # every row tier (rows along strided axes too: "staged"), pointwise blocks of any size
        tier = str(rng.choice(["auto", "auto", "warp", "block", "smem", "looped", "thread", "slab", "slab-smem",
                               "staged"]))
        block = int(rng.choice([32, 64, 96, 128, 160, 256, 256, 384, 512, 1024]))
        return CodegenOptions(sm_count=sm, row_tier=tier, block_size=block)
    if target is not None and target.where == "row/strided":
        # in registers when short, or re-read; or a block per slab, re-read or in shared memory
        tier = str(rng.choice(["auto", "thread", "slab", "slab-smem"]))
    elif target is not None and target.where.startswith("row/"):
        tier = target.where.split("/")[1].removesuffix("+vec")
    elif rng.random() < 0.25:
        tier = str(rng.choice(["warp", "block", "smem", "looped", "staged"]))
    return CodegenOptions(sm_count=sm, row_tier=tier)


def generate(seed: int, target: Target | None = None, real_sm: int | None = None,
             max_lines: int = 8) -> Program:
    """One cell. With `real_sm` (a GPU run) layouts are those of that device."""
    rng = np.random.default_rng(seed)
    b = CellBuilder(rng)
    options = options_for(rng, target, real_sm)
    sm = options.sm_count
    if target is not None and target.kind == "reduce":
        _reduce_target(b, target, sm)
    elif target is not None and target.kind == "elem":
        _elem_target(b, target, sm)
    elif target is not None and target.kind == "cast":
        _cast_target(b, target, sm)
    elif target is not None and target.kind == "struct":
        _struct_target(b, target, sm)
    if not b.inputs:
        nd = int(rng.integers(0, 5))
        sizes, weights = [0, 1, 2, 3, 5, 7, 16, 33, 64], [0.3, 2, 1, 1, 1, 1, 1, 1, 0.5]
        shape = tuple(int(rng.choice(sizes, p=np.array(weights) / sum(weights))) for _ in range(nd))
        if math.prod(shape) > 4096:
            shape = shape[:2]
        for _ in range(int(rng.integers(1, 4))):
            sub = tuple(1 if rng.random() < 0.25 else d for d in shape)
            if sub and rng.random() < 0.25:
                sub = sub[int(rng.integers(0, len(sub) + 1)):]
            b.input(DTYPES[int(rng.integers(len(DTYPES)))], sub)
    extra = int(rng.integers(0 if target is not None else 2, max_lines))
    tries = 0
    while extra > 0 and tries < 6 * max_lines:
        tries += 1
        if random_line(b) is not None:
            extra -= 1
    if not b.lines:   # at least one computed value
        x = next(iter(b.values.values()))
        binary(b, "add", x, x) or unary(b, "negative", x) or view(b, x)
    names = {k: v for k, v in b.values.items() if k not in b.inputs or k in b.mutated}
    return Program(seed, b.source(), dict(b.inputs), names, options, target, tuple(sorted(b.deviations)),
                   int(rng.integers(2 ** 31)))
