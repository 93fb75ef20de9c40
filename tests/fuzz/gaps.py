"""Structural scenarios for forms fuselab fuses that the random lines never wrote (the
audit of ops.py and the tracer's handlers against generator.py's vocabulary):

* "scalar-edges": scalar operands on either side of every binary op (`3 - x`, `2.0 ** x`),
  of every kind (Python int/float/bool, NumPy scalars of other dtypes: NEP 50 promotion),
  at their edges: shift counts at and beyond the width, zero and negative divisors,
  Python ints outside the array's range (exact comparisons), huge and subnormal floats;
* "inplace": augmented assignments, `out=` (also a reversed view of the output), slice
  assignments, overlapping in-place updates (`y[1:] += y[:-1]`), results cast back into
  the target's dtype (`f32 += f64`);
* "ufunc-args": ufuncs with dtype=, np.where with scalar branches, clip with scalar, array,
  NaN and crossed bounds, round to positive and negative decimals, count_nonzero over
  axis tuples, reductions over `axis=()`, `out=` of another dtype;
* "ddof": var/std with ddof from 0 to past the count (inf / NaN), integers included;
* "views-more": reshapes that split and merge axes (also of transposes and order='F'),
  steps of 3 and more, negative starts, empty slices, integer indices between slices,
  broadcast_to with inserted axes, moveaxis, flips over axis tuples;
* "cast-edges": casts of full-range integers and wide-exponent floats (float16 overflow,
  ties to even, 2**53 + 1, uint64 extremes), Python type names (int, float, bool), casts of
  casts;
* "stencil-2d": shifted 2-D / 3-D windows with weights: the pointwise stencil path (a
  thread marches down rows), the row-vector path and the transpose path, which random
  cells reached about once in 100 programs;
* "broadcast-runs": small operands broadcast along odd runs (per-channel scales, outer
  products): the vector path's gathered tables.

Values are exact (bound None) where the lines combine exact inputs with correctly rounded
or discontinuous ops; binary() and the variance bound the rest as the random lines do.
Generated from the builder's rng alone: the same seed gives the same cell, and the
programs of the other targets (and the recorded GPU regressions) are unchanged.
"""
from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np

from . import catalog as C
from .data import DTYPES, sample
from fuselab.ops import OPS

from .generator import (GAP_STRUCTS, MAX_ELEMENTS, NP_NAMES, CellBuilder, Target, Value, _any_reduce, _consume,
                        _edge_shape, _some_axes, binary, cast, view)
from .numerics import f64, unit_roundoff, ulp


# binary ops whose result is exact from exact operands (correctly rounded or discontinuous)
_EXACT_BINARY = tuple(op for op, s in C.BINARY.items() if s.kind != C.APPROX)
_AUG = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "floor_divide": "//",
        "remainder": "%", "power": "**", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
        "left_shift": "<<", "right_shift": ">>"}
_INT_EDGES = (0, 1, -1, 2, -2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, -128, -129,
              255, 256, 32767, -32768, 65535, 65536, 2 ** 31 - 1, -2 ** 31, 2 ** 32, 2 ** 53 + 1,
              2 ** 63 - 1, -2 ** 63, 2 ** 64 - 1)
_FLOAT_EDGES = ("0.5", "-0.5", "2.5", "0.1", "-0.0", "1e-310", "1e300", "-1e300", "65504.0", "70000.0",
                "3e38", "1e-45", "np.nan", "np.inf", "-np.inf", "0.0", "-1.0", "1.5", "4.0", "-2.0")


# ---------------------------------------------------------------------------
# Literals
# ---------------------------------------------------------------------------

def _paren(text: str) -> str:
    return f"({text})" if text.startswith("-") else text


def edge_literal(rng: np.random.Generator, like: np.dtype) -> str:
    """A scalar operand: a Python int, float or bool, or a NumPy scalar of any dtype."""
    r = rng.random()
    if r < 0.4:
        return _paren(str(int(rng.choice(np.array(_INT_EDGES, dtype=object)))))
    if r < 0.65:
        return _paren(str(rng.choice(_FLOAT_EDGES)))
    if r < 0.72:
        return str(bool(rng.random() < 0.5))
    dt = DTYPES[int(rng.integers(len(DTYPES)))] if rng.random() < 0.7 else np.dtype(like)
    return _numpy_scalar(rng, dt)


def _numpy_scalar(rng: np.random.Generator, dt: np.dtype) -> str:
    if dt.kind == "b":
        return f"np.bool_({bool(rng.random() < 0.5)})"
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = int(rng.choice(np.array([0, 1, 2, 3, 7, info.max, info.min, -1 if dt.kind == "i" else 5], object)))
        return f"{NP_NAMES[dt]}({v})"
    v = str(rng.choice(["0.5", "-1.5", "3.0", "-0.0", "0.1", "1e-3", "np.nan", "np.inf", "2049.0"]))
    return f"{NP_NAMES[dt]}({v})"


def literal_value(text: str) -> Value:
    """A scalar operand standing as a Value (its text is its name), exact."""
    return Value(text, np.asarray(eval(text, {"np": np})), None)


def _usable(v: Value) -> bool:
    return v.exact and not v.any_zero_sign


def _pool(b: CellBuilder) -> list[Value]:
    return [v for v in b.values.values() if _usable(v)]


def _pick(rng: np.random.Generator, pool: list[Value]) -> Value | None:
    return pool[int(rng.integers(len(pool)))] if pool else None


def scalar_op(b: CellBuilder, op: str, x: Value, lit: str, left: bool) -> Value | None:
    """`x op lit` or `lit op x`."""
    if left:
        return binary(b, op, literal_value(lit), x)
    return binary(b, op, x, None, lit)


# ---------------------------------------------------------------------------
# Statements: lines that bind a fresh name and then update it
# ---------------------------------------------------------------------------

def run_statement(b: CellBuilder, name: str, text: str) -> Any:
    """NumPy's final value of `name` after `name = text` (text may hold `; more statements`),
    run on copies: the cell's arrays are never changed."""
    env = dict(b.env)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            exec(f"{name} = {text}", env)
        except Exception:
            return None
    out = env.get(name)
    if isinstance(out, np.generic):
        return out
    if isinstance(out, np.ndarray) and type(out) is np.ndarray and out.dtype in DTYPES and out.size <= MAX_ELEMENTS:
        return out
    return None


# ---------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------

def _scalar_edges(b: CellBuilder, dt: np.dtype) -> None:
    rng = b.rng
    nd = int(rng.integers(0, 4))
    x = b.input(dt, _edge_shape(rng, nd, limit=3000))
    if rng.random() < 0.3:
        b.input(DTYPES[int(rng.integers(len(DTYPES)))], x.shape[int(rng.integers(0, nd + 1)):])
    last = None
    for _ in range(int(rng.integers(2, 6))):
        v = last if last is not None and rng.random() < 0.5 else _pick(rng, _pool(b))
        op = str(rng.choice(_EXACT_BINARY + ("power", "left_shift", "right_shift", "floor_divide", "remainder")))
        r = scalar_op(b, op, v, edge_literal(rng, v.dtype), bool(rng.random() < 0.5)) if v is not None else None
        last = r if r is not None else last
    if last is not None and last.arr.ndim and rng.random() < 0.5:
        _any_reduce(b, last, _some_axes(rng, last.arr.ndim), bool(rng.random() < 0.5),
                    str(rng.choice(["sum", "max", "min", "argmax", "any", "all"])))


def _operand(b: CellBuilder, like: Value) -> str | None:
    """The right-hand side of an update: a value of the cell broadcastable to `like`, or a literal."""
    rng = b.rng
    if rng.random() < 0.35:
        return edge_literal(rng, like.dtype)
    fits = [v for v in _pool(b) if v.arr.ndim <= like.arr.ndim and _broadcasts(v.shape, like.shape)]
    v = _pick(rng, fits)
    return v.name if v is not None else None


def _broadcasts(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(small, big) == tuple(big)
    except ValueError:
        return False


def _inplace_forms(b: CellBuilder, x: Value, name: str) -> list[str]:
    rng = b.rng
    op = str(rng.choice(list(_AUG)))
    aug = _AUG[op]
    rhs = _operand(b, x) or "1"
    to = DTYPES[int(rng.integers(len(DTYPES)))]
    # a float-to-integer astype only where every value fits the target: x86's conversions
    # out of range (CAST_RANGE) differ between NumPy's loops (an AVX-512 build gives 2**31
    # where another gives the 64-bit conversion's low bits), and this form's oracle is NumPy
    unsafe = x.dtype.kind == "f" and to.kind in "iu" and not _in_range(x.arr, to)
    base = f"{x.name}.copy()" if unsafe or rng.random() < 0.6 else f"{x.name}.astype({NP_NAMES[to]})"
    forms = [f"{base}; {name} {aug}= {rhs}",
             f"np.empty_like({x.name}); np.{op}({x.name}, {rhs}, out={name})",
             f"np.zeros({x.shape}, {NP_NAMES[to]}); np.{op}({x.name}, {rhs}, out={name})",
             f"{base}; np.{op}({name}, {rhs}, out={name})"]
    if x.arr.ndim:
        sl = str(rng.choice(["1:", ":-1", "::2", "1::2", "::-1", "::-2", "-2:", ":0"]))
        forms += [f"{base}; {name}[1:] {aug}= {name}[:-1]",
                  f"{base}; {name}[:-1] = {name}[1:] {aug} {rhs}",
                  f"{base}; {name}[{sl}] {aug}= {rhs}",
                  f"{base}; {name}[{sl}] = {edge_literal(rng, x.dtype)}",
                  f"{base}; {name}[:] = {name}[::-1]",
                  f"{base}; {name}[::-1] {aug}= {name}",
                  f"{base}; np.{op}({name}[::-1], {rhs}, out={name})",
                  f"{base}; {name}[0] = {name}[-1]",
                  f"{base}; {name}[...] = {rhs}"]
    if x.arr.ndim >= 2:
        forms += [f"{base}; {name}[:, 1:] {aug}= {name}[:, :-1]",
                  f"{base}; {name}[1:, ::-1] = {name}[:-1]",
                  f"{base}; {name}[:, 0] {aug}= {rhs}" if rhs not in b.values or b.values[rhs].arr.ndim == 0
                  else f"{base}; {name}[..., -1] = 0"]
    return forms


def _inplace(b: CellBuilder, dt: np.dtype) -> None:
    rng = b.rng
    nd = int(rng.integers(0, 4))
    x = b.input(dt, _edge_shape(rng, nd, limit=3000))
    if rng.random() < 0.5:
        b.input(DTYPES[int(rng.integers(len(DTYPES)))] if rng.random() < 0.5 else dt,
                x.shape[int(rng.integers(0, nd + 1)):])
    if rng.random() < 0.4:
        mutate_input(b, x)
    for _ in range(int(rng.integers(1, 4))):
        v = _pick(rng, [p for p in _pool(b) if p.arr.ndim == nd]) or x
        forms = _inplace_forms(b, v, b.fresh())
        text = str(rng.choice(forms))
        r = _bind_update(b, text)
        if r is not None and rng.random() < 0.3 and r.arr.ndim:
            _consume(b, v, _any_reduce(b, r, _some_axes(rng, r.arr.ndim), bool(rng.random() < 0.5),
                                       str(rng.choice(["sum", "max", "argmin", "all"]))))


def _input_updates(b: CellBuilder, x: Value) -> list[str]:
    rng = b.rng
    op = str(rng.choice(list(_AUG)))
    aug, rhs = _AUG[op], _operand(b, x) or "1"
    n = x.name
    forms = [f"{n} {aug}= {rhs}", f"np.{op}({n}, {rhs}, out={n})"]
    if x.arr.ndim:
        sl = str(rng.choice(["1:", "::2", "::-1", "-2:", "1::3"]))
        forms += [f"{n}[1:] {aug}= {n}[:-1]", f"{n}[:] = {n}[::-1]", f"{n}[{sl}] {aug}= {rhs}",
                  f"{n}[...] = {rhs}", f"{n}[:-1] = {n}[1:] {aug} {rhs}"]
    return forms


def mutate_input(b: CellBuilder, x: Value) -> Value | None:
    """An update of input `x` itself (`x0 += v1`, `x0[1:] += x0[:-1]`): the cell's input
    array changes, and fuselab must write NumPy's values into it (the harness compares the
    input's final value: CellBuilder.mutated). Only while nothing else the cell bound shares
    its memory (a view's value would change with it); the program's input stays as given."""
    env_arrays = [v for k, v in b.env.items() if k != x.name and isinstance(v, np.ndarray)]
    if any(np.shares_memory(a, b.env[x.name]) for a in env_arrays):
        return None
    text = str(b.rng.choice(_input_updates(b, x)))
    env = dict(b.env)
    env[x.name] = b.env[x.name].copy()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            exec(text, env)
        except Exception:
            return None
    new = env[x.name]
    if not isinstance(new, np.ndarray) or new.dtype != x.dtype or new.shape != x.shape:
        return None
    if "] = " in text and new.dtype.kind in "iu" and _floats_in(b, text.split("] = ", 1)[1]):
        return None
    if new.dtype.kind == "f" and ("power" in text or "**" in text):
        return None
    b.lines.append(text)
    b.env[x.name] = new
    v = Value(x.name, new, None, any_zero_sign=new.dtype.kind == "f" and ("maximum" in text or "minimum" in text))
    b.values[x.name] = v
    b.mutated.add(x.name)
    return v


def _bind_update(b: CellBuilder, text: str) -> Value | None:
    """Bind an update statement whose text was made for b.fresh(), exact; a plain slice
    assignment of floats into integers (an unsafe cast: x86's conversions out of range,
    CAST_RANGE) is left out."""
    name = b.fresh()
    out = run_statement(b, name, text)
    if out is None:
        return None
    dst = np.asarray(out).dtype
    if dst.kind == "f" and ("power" in text or "**" in text):
        return None   # float powers are approximate (the random lines bound them)
    if "] = " in text and dst.kind in "iu" and _floats_in(b, text.split("] = ", 1)[1]):
        return None
    zs = dst.kind == "f" and any(k in text for k in ("maximum", "minimum"))
    return b.bind(text, out, None, zero_sign=zs)


_FLOAT_TEXT = re.compile(r"\d\.\d|\de[-+]?\d|np\.nan|np\.inf|np\.float")


def _floats_in(b: CellBuilder, text: str) -> bool:
    """Whether `text` mentions a float literal or a float value of the cell."""
    if _FLOAT_TEXT.search(text):
        return True
    return any(v.dtype.kind == "f" and re.search(rf"\b{v.name}\b", text) for v in b.values.values())


def _where_forms(b: CellBuilder, c: Value, x: Value) -> list[str]:
    rng = b.rng
    lit, lit2 = edge_literal(rng, x.dtype), edge_literal(rng, x.dtype)
    return [f"np.where({c.name}, {x.name}, {lit})", f"np.where({c.name}, {lit}, {x.name})",
            f"np.where({c.name}, {lit}, {lit2})", f"np.where({x.name} > 0, {x.name}, {lit})"]


def _clip_forms(b: CellBuilder, x: Value) -> list[str]:
    rng = b.rng
    bounds = [edge_literal(rng, x.dtype), edge_literal(rng, x.dtype), "None"]
    arrs = [v.name for v in _pool(b) if v is not x and v.arr.ndim <= x.arr.ndim and _broadcasts(v.shape, x.shape)]
    if arrs:
        bounds.append(str(rng.choice(arrs)))
    lo, hi = (str(rng.choice(bounds)) for _ in range(2))
    if lo == hi == "None":
        hi = "3"
    return [f"np.clip({x.name}, {lo}, {hi})", f"{x.name}.clip({lo}, {hi})",
            f"np.clip({x.name}, min={lo}, max={hi})" if lo != "None" else f"{x.name}.clip(max={hi})"]


# other spellings of the table's ops: NumPy's aliases, builtins, the real-number methods,
# divmod's two results
_ALIASES = ("np.pow({x}, {y})", "np.bitwise_not({x})", "np.bitwise_invert({x})", "np.conjugate({x})",
            "{x}.conj()", "np.real({x})", "np.imag({x})", "round({x})", "abs({x})", "np.amin({x})",
            "divmod({x}, {lit})[0]", "divmod({lit}, {x})[1]", "np.divmod({x}, {y})[1]", "np.fmod({x}, {y})",
            "np.mod({lit}, {x})", "np.true_divide({lit}, {x})", "{x}.__rfloordiv__({lit})")


def _ufunc_args(b: CellBuilder, dt: np.dtype) -> None:
    rng = b.rng
    nd = int(rng.integers(0, 4))
    x = b.input(dt, _edge_shape(rng, nd, limit=3000))
    y = b.input(DTYPES[int(rng.integers(len(DTYPES)))] if rng.random() < 0.5 else dt,
                x.shape[int(rng.integers(0, nd + 1)):])
    for _ in range(int(rng.integers(2, 5))):
        v, w = _pick(rng, _pool(b)) or x, _pick(rng, _pool(b)) or y
        k = rng.random()
        to = NP_NAMES[DTYPES[int(rng.integers(len(DTYPES)))]]
        if k < 0.25:
            op = str(rng.choice(_EXACT_BINARY))
            text = f"np.{OPS[op].xp_name}({v.name}, {w.name}, dtype={to})"
        elif k < 0.35:
            op = str(rng.choice(["negative", "absolute", "sqrt", "square", "floor", "invert", "rint"]))
            text = f"np.{op}({v.name}, dtype={to})"
        elif k < 0.5:
            c = _pick(rng, [p for p in _pool(b) if p.dtype == np.bool_]) or v
            text = str(rng.choice(_where_forms(b, c, v)))
        elif k < 0.7:
            text = str(rng.choice(_clip_forms(b, v)))
        elif k < 0.82:
            d = int(rng.integers(-3, 4))
            text = str(rng.choice([f"np.round({v.name}, {d})", f"{v.name}.round({d})",
                                   f"np.around({v.name}, decimals={d})"]))
        elif k < 0.9:
            text = str(rng.choice(_ALIASES)).format(x=v.name, y=w.name, lit=edge_literal(rng, v.dtype))
            if rng.random() < 0.5:
                norm(b, v)
                continue
        elif k < 0.94 and v.arr.ndim:
            axes = _some_axes(rng, v.arr.ndim)
            text = f"np.count_nonzero({v.name}, axis={axes}, keepdims={bool(rng.random() < 0.5)})"
        else:
            op = str(rng.choice(["sum", "prod", "max", "min", "any", "all"]))
            text = f"{v.name}.{op}(axis=())" if rng.random() < 0.5 else f"np.{op}({v.name}, axis=(), keepdims=True)"
        _bind_expr(b, text, zero_sign="clip" in text or "maximum" in text or "minimum" in text)
    last = list(b.values.values())[-1]
    if last.name not in b.inputs and last.arr.ndim and rng.random() < 0.5:
        _any_reduce(b, last, _some_axes(rng, last.arr.ndim), bool(rng.random() < 0.5),
                    str(rng.choice(["sum", "max", "min", "argmax"])))


def _bind_expr(b: CellBuilder, text: str, zero_sign: bool = False) -> Value | None:
    out = b.run(text)
    if out is None or ("pow(" in text and np.asarray(out).dtype.kind == "f"):
        return None   # (float powers are approximate: the random lines bound them)
    return b.bind(text, out, None, zero_sign=zero_sign)


def norm(b: CellBuilder, x: Value) -> Value | None:
    """np.linalg.norm's vector norms (and the Frobenius norm), which fuselab lowers to
    sqrt(sum(x * x)), sum(|x|) and max/min(|x|). Bound: the sum's order, then the root's
    slope. Not for float16: NumPy's norm over every axis is a dot product accumulating
    float32 products in float32 (HALF_dot; fuselab's lowering follows it since this audit
    found it squaring in half, test_kernel_regressions), which these bounds do not model,
    and along an axis its half sums are NumPy's steps."""
    if not x.exact or x.dtype == np.float16 or x.dtype.kind not in "fiu" or x.arr.ndim == 0:
        return None
    rng = b.rng
    nd = x.arr.ndim
    ord_ = str(rng.choice(["None", "2", "1", "np.inf", "-np.inf"]))
    axis = int(rng.integers(-1, nd)) if nd > 1 or rng.random() < 0.5 else -1
    axis_kw = "" if axis < 0 else f", axis={axis}"
    kd = bool(rng.random() < 0.3)
    text = f"np.linalg.norm({x.name}, {ord_}{axis_kw}{', keepdims=True' if kd else ''})"
    out = b.run(text)
    if out is None:
        return None
    o = np.asarray(out)
    axes = tuple(range(nd)) if axis < 0 else (axis,)
    xa = np.abs(f64(x.arr.astype(o.dtype)))
    if not np.isfinite(xa).all() or ord_ in ("np.inf", "-np.inf"):
        return b.bind(text, out, None) if ord_ in ("np.inf", "-np.inf") and np.isfinite(xa).all() else None
    terms = xa if ord_ == "1" else f64((x.arr.astype(o.dtype) * x.arr.astype(o.dtype)))
    if not np.isfinite(terms).all() or not _order_safe_sum(terms, axes, o.dtype):
        return None
    n = math.prod(x.shape[a] for a in axes)
    with np.errstate(all="ignore"):
        S = np.sum(terms, axis=axes, keepdims=kd)
        eS = 2 * max(n - 1, 0) * unit_roundoff(o.dtype) * S
        bound = eS if ord_ == "1" else np.where(S > 0, eS / (2 * np.sqrt(S)), 0.0)
    return b.bind(text, out, bound + 2 * ulp(o, o.dtype), approx=True)


def _order_safe_sum(terms: np.ndarray, axes: tuple[int, ...], dt: np.dtype) -> bool:
    fi = np.finfo(dt)
    with np.errstate(all="ignore"):
        S = np.sum(terms, axis=axes)
        tiny = (terms > 0) & (terms < float(fi.tiny) * 2 ** 20)   # products near the subnormals lose digits
    return bool((S <= float(fi.max) / 16).all()) and not tiny.any()


def variance_ddof(b: CellBuilder, x: Value, axes: tuple[int, ...], kd: bool, ddof: int, std: bool) -> Value | None:
    """np.var / np.std with any ddof (NumPy divides by max(n - ddof, 0)). Where n - ddof <= 0
    the result is inf or NaN, and which depends on whether the sum of squared deviations
    is zero: taken only where that is certain either way."""
    if x.dtype == np.float16 or not x.exact or x.arr.size == 0 or x.dtype.kind not in "fiu":
        return None
    rng = b.rng
    nd = x.arr.ndim
    fn = "std" if std else "var"
    kw = ", ".join(k for k in (f"axis={axes}" if rng.random() < 0.5 or len(axes) > 1 else f"axis={axes[0]}",
                               f"ddof={ddof}", "keepdims=True" if kd else "") if k)
    text = f"{x.name}.{fn}({kw})" if rng.random() < 0.5 else f"np.{fn}({x.name}, {kw})"
    out = b.run(text)
    if out is None:
        return None
    o = np.asarray(out)
    n = math.prod(x.shape[a] for a in axes)
    xa = f64(x.arr)
    if not np.isfinite(xa).all():
        return None
    u = unit_roundoff(o.dtype)
    with np.errstate(all="ignore"):
        m = np.mean(xa, axis=axes, keepdims=True)
        S = np.sum((xa - m) ** 2, axis=axes, keepdims=kd)
        A = np.sum(np.abs(xa), axis=axes, keepdims=kd)
        eS = 2 * (n + 4) * u * S + 2 * n * u * u * A * A
        if (S > float(np.finfo(o.dtype).max) / 16).any():
            return None
        if n - ddof <= 0:
            same = np.all(xa == np.take(xa, [0], axis=axes[0]) if n else True, axis=axes, keepdims=kd)
            certain = (same & (n == 1)) | (S > 2 * eS)
            if not np.all(certain):
                return None
            return b.bind(text, out, None)
        bv = eS / (n - ddof)
        if std:
            v = S / (n - ddof)
            bound = np.minimum(bv / (2 * np.sqrt(v)), np.sqrt(bv)) + 2 * ulp(o, o.dtype)
        else:
            bound = bv + 2 * ulp(o, o.dtype)
    return b.bind(text, out, bound, approx=True)


def _ddof(b: CellBuilder, dt: np.dtype) -> None:
    rng = b.rng
    nd = int(rng.integers(1, 4))
    shape = list(_edge_shape(rng, nd, limit=3000))
    if rng.random() < 0.5:
        shape[int(rng.integers(nd))] = int(rng.integers(1, 4))   # short axes: ddof near the count
    src = dt if dt.kind in "fiu" and dt != np.float16 else np.dtype(rng.choice([np.float32, np.float64, np.int16]))
    x = b.input(src, tuple(shape), edges=False)
    for _ in range(int(rng.integers(1, 3))):
        axes = _some_axes(rng, nd)
        n = math.prod(shape[a] for a in axes)
        ddof = int(rng.choice([0, 1, 2, max(n - 1, 0), n, n + 1]))
        kd = bool(rng.random() < 0.5)
        r = variance_ddof(b, x, axes, kd, ddof, bool(rng.random() < 0.5))
        if r is not None and kd and rng.random() < 0.5:
            binary(b, str(rng.choice(["subtract", "true_divide", "add"])), x, r)


_MORE_VIEWS = ["{x}[::-3]", "{x}[-2::-2]", "{x}[1::3]", "{x}[3:1]", "{x}[:0]", "{x}[::100]", "{x}[-1:-4:-1]",
               "{x}.T.reshape(-1)", "{x}.ravel(order='F')", "{x}.reshape(-1, order='F')", "{x}.T.ravel()",
               "{x}[::-1].ravel()", "np.ascontiguousarray({x}.T)", "{x}.flatten('F')", "np.flip({x})",
               "{x}[None, ..., None]", "np.expand_dims({x}, (0, -1))", "{x}.reshape({x}.shape[::-1])",
               "np.squeeze({x}[None])", "{x}.reshape(1, -1)", "{x}.reshape(-1, 1)[::-1]"]
_MORE_VIEWS_2D = ["{x}[:, 1]", "{x}[1, ::-1]", "{x}[..., -2]", "{x}[1::2, ::-3]", "{x}[::-1, ::-1]",
                  "np.moveaxis({x}, 0, -1)", "np.flip({x}, (0, -1))", "{x}[:, None, :]",
                  "np.broadcast_to({x}[:, None], ({x}.shape[0], 3) + {x}.shape[1:])", "{x}.T[::-2, 1:]",
                  "{x}.swapaxes(0, 1)[::-1]", "{x}[:, ::2].reshape(-1)", "{x}.T[1:].T",
                  "np.transpose({x})[..., ::-1].reshape(-1)"]


def _views_more(b: CellBuilder, dt: np.dtype) -> None:
    rng = b.rng
    nd = int(rng.integers(1, 5))
    x = b.input(dt, _edge_shape(rng, nd, limit=4000))
    v = x
    for _ in range(int(rng.integers(1, 4))):
        forms = _MORE_VIEWS + (_MORE_VIEWS_2D if v.arr.ndim >= 2 else [])
        if v.arr.size and v.arr.ndim:
            sizes = [d for d in range(2, 7) if v.arr.size % d == 0]
            if sizes:
                forms = forms + [f"{{x}}.reshape({int(rng.choice(sizes))}, -1)",
                                 f"{{x}}.reshape(-1, {int(rng.choice(sizes))})[::-1]"]
        w = view(b, v, str(rng.choice(forms)).format(x=v.name))
        if w is None or w.arr.ndim == 0:
            break
        v = w
    if v is x:
        return
    k = rng.random()
    if k < 0.4:
        other = _pick(rng, [p for p in _pool(b) if _broadcasts(p.shape, v.shape)])
        if other is not None:
            binary(b, str(rng.choice(["add", "subtract", "maximum", "multiply", "less", "bitwise_xor"])), v, other)
    elif k < 0.8 and v.arr.ndim:
        _consume(b, v, _any_reduce(b, v, _some_axes(rng, v.arr.ndim), bool(rng.random() < 0.5)))


def _wide(rng: np.random.Generator, dt: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Full-range integers, floats of every exponent (and the edges data.sample adds)."""
    n = math.prod(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        bits = 8 * dt.itemsize
        raw = [(int(rng.integers(0, 2 ** 32)) << 32 | int(rng.integers(0, 2 ** 32))) >> (64 - int(k))
               for k in rng.integers(0, bits + 1, n)]
        vals = [r if dt.kind == "u" else (r >> 1) * (1 if rng.random() < 0.5 else -1) for r in raw]
        vals = [min(max(v, int(info.min)), int(info.max)) for v in vals]
        out = np.array(vals, dtype=object).astype(dt) if n else np.zeros(0, dt)
    elif dt.kind == "f":
        fi = np.finfo(dt)
        e = rng.uniform(math.log2(float(fi.tiny)) - 3, math.log2(float(fi.max)) + 1, n)
        with np.errstate(all="ignore"):
            out = (np.where(rng.random(n) < 0.5, -1.0, 1.0) * np.exp2(e)).astype(dt)
            ints = rng.random(n) < 0.3   # integers near 2**k and k + 0.5: rounding ties
            k = int(ints.sum())
            out[ints] = (np.round(np.exp2(rng.uniform(0, 66, k))) + rng.choice([0, 0.5, 1], k)).astype(dt)
    else:
        out = rng.random(n) < 0.5
    mix = sample(rng, dt, (n,), 0.3)
    pick = rng.random(n) < 0.3
    out = np.where(pick, mix, out).astype(dt)
    return out.reshape(shape)


def _cast_edges(b: CellBuilder, dt: np.dtype) -> None:
    rng = b.rng
    nd = int(rng.integers(0, 3))
    x = b.input(dt, _edge_shape(rng, nd, limit=2000))
    x = _replace_input(b, x, _wide(rng, dt, x.shape))
    v = x
    for _ in range(int(rng.integers(1, 4))):
        k = rng.random()
        if k < 0.2:
            pytype = str(rng.choice(["int", "float", "bool", "'f2'", "'u1'", "'i8'", "np.intp"]))
            to = np.dtype(eval(pytype, {"np": np}))
            if to.kind in "iu" and v.dtype.kind == "f" and not _in_range(v.arr, to):
                break
            w = _bind_expr(b, f"{v.name}.astype({pytype})")
        else:
            w = cast(b, v, DTYPES[int(rng.integers(len(DTYPES)))])
        if w is None:
            break
        v = w
    if v is not x and v.arr.ndim and rng.random() < 0.5:
        _any_reduce(b, v, _some_axes(rng, v.arr.ndim), False, str(rng.choice(["max", "min", "argmax", "any"])))


def _in_range(a: np.ndarray, to: np.dtype) -> bool:
    info = np.iinfo(to)
    with np.errstate(all="ignore"):
        t = np.trunc(f64(a))
        return bool(((t >= info.min) & (t <= info.max)).all())


def _replace_input(b: CellBuilder, x: Value, arr: np.ndarray) -> Value:
    b.inputs[x.name] = b.env[x.name] = arr
    v = Value(x.name, arr, None)
    b.values[x.name] = v
    return v


def _window(rng: np.random.Generator, x: str, nd: int, reach: int, shifted: tuple[int, ...]) -> str:
    """x shifted by a random offset in [0, 2 reach] along the axes in `shifted`, cut to the
    common interior (every window of one reach has one shape)."""
    ix = []
    for d in range(nd):
        if d in shifted:
            lo = int(rng.integers(0, 2 * reach + 1))
            hi = 2 * reach - lo
            ix.append(f"{lo}:{-hi if hi else ''}")
        else:
            ix.append(":")
    return f"{x}[{', '.join(ix)}]"


def _stencil_2d(b: CellBuilder, dt: np.dtype) -> None:
    """Stencils of shifted 2-D and 3-D windows (a 5-point Laplacian, differences along rows,
    windows of transposes) with scalar weights: the pointwise template's stencil path (a
    thread marches down rows), row-vector path and transpose path, which the random cells
    reached in about 1 program of 100. Rows around vector multiples, few or many rows."""
    rng = b.rng
    nd = 2 if rng.random() < 0.75 else 3
    cols = int(rng.choice([8, 9, 12, 16, 17, 24, 31, 32, 33, 40, 64, 65, 96, 128, 130, 256, 264, 512]))
    rows = [int(rng.choice([2, 3, 4, 5, 7, 8, 9, 16, 33, 64, 100])) for _ in range(nd - 1)]
    while math.prod(rows) * cols > 20000:
        rows[int(np.argmax(rows))] //= 2
    x = b.input(dt, (*[max(r, 3) for r in rows], cols), edges=rng.random() < 0.3)
    src = x
    if rng.random() < 0.25 and nd == 2 and x.shape[0] >= 8:   # read through a transpose
        src = view(b, x, f"{x.name}.T") or x
    reach = int(rng.integers(1, 3))
    shifted = tuple(d for d in range(nd) if rng.random() < 0.7 or d == nd - 1)
    if rng.random() < 0.2:   # a difference along rows only: the row-vector path
        shifted = (nd - 1,)
    acc: Value | None = None
    for k in range(int(rng.integers(2, 6))):
        w = view(b, src, _window(rng, src.name, nd, reach, shifted))
        if w is None or w.arr.size == 0:
            continue
        if rng.random() < 0.4:
            w = scalar_op(b, "multiply", w, str(rng.choice(["4", "0.25", "-2", "3", "np.float32(0.5)"])),
                          bool(rng.random() < 0.5)) or w
        acc = w if acc is None else binary(b, str(rng.choice(["add", "subtract", "maximum", "add"])), acc, w) or acc
    if acc is None:
        return
    if rng.random() < 0.3:
        other = b.input(DTYPES[int(rng.integers(len(DTYPES)))] if rng.random() < 0.3 else dt, acc.shape[-1:])
        acc = binary(b, "add", acc, other) or acc
    if rng.random() < 0.3 and acc.arr.ndim:
        _any_reduce(b, acc, _some_axes(rng, acc.arr.ndim), bool(rng.random() < 0.5),
                    str(rng.choice(["sum", "max", "argmin"])))


def _broadcast_runs(b: CellBuilder, dt: np.dtype) -> None:
    """A large array with small operands broadcast along runs of odd lengths (a batch norm's
    per-channel scale over runs of 18 or 9, an outer product of odd sizes): the vector path
    gathering the small operands element by element ("tables"), the strided path otherwise."""
    rng = b.rng
    n0, c, r = int(rng.integers(1, 5)), int(rng.choice([3, 5, 16, 31, 64])), int(rng.choice([9, 18, 20, 33, 7, 64]))
    if rng.random() < 0.5:
        x = b.input(dt, (n0, c, r), edges=rng.random() < 0.3)
        forms = [(c, 1), (1, c, 1), (c, r), (r,), (n0, 1, 1), (n0, 1, r)]
    else:
        x = b.input(dt, (c * n0, r), edges=rng.random() < 0.3)
        forms = [(c * n0, 1), (r,), (1, r)]
    acc: Value | None = x
    for _ in range(int(rng.integers(1, 4))):
        shape = forms[int(rng.integers(len(forms)))]
        sdt = dt if rng.random() < 0.7 else DTYPES[int(rng.integers(len(DTYPES)))]
        w = b.input(sdt, shape, edges=rng.random() < 0.3)
        op = str(rng.choice(["multiply", "add", "subtract", "maximum", "true_divide", "greater"]))
        acc = (binary(b, op, acc, w) if rng.random() < 0.6 else binary(b, op, w, acc)) or acc
    if rng.random() < 0.3:
        a = b.input(dt, (int(rng.choice([7, 9, 33, 130])),))
        z = b.input(dt, (int(rng.choice([5, 18, 65])),))
        ra, rz = view(b, a, f"{a.name}[:, None]"), view(b, z, f"{z.name}[None, :]")
        if ra is not None and rz is not None:
            binary(b, str(rng.choice(["multiply", "add", "less"])), ra, rz)
    if acc is not x and rng.random() < 0.4:
        _any_reduce(b, acc, _some_axes(rng, acc.arr.ndim), bool(rng.random() < 0.5), str(rng.choice(["sum", "max"])))


_SCENARIOS = {"scalar-edges": _scalar_edges, "inplace": _inplace, "ufunc-args": _ufunc_args, "ddof": _ddof,
              "views-more": _views_more, "cast-edges": _cast_edges, "stencil-2d": _stencil_2d,
              "broadcast-runs": _broadcast_runs}


assert set(_SCENARIOS) == set(GAP_STRUCTS)


def build(b: CellBuilder, t: Target) -> None:
    """The first lines of a gap scenario's cell (generator.generate adds random lines)."""
    _SCENARIOS[t.where](b, np.dtype(t.dtype))
