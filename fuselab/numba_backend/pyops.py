"""The op table's Python column: how each elementwise op and reduction combine is written
in a generated Numba kernel, per loop dtype.

An entry maps (operands, loop dtype) to an expression whose value is the op's result in
its output dtype's register type, before the one rounding to half that a float16 op gets.
Operands are names or typed literals, so repeating one in a template costs nothing. The
rules are the CUDA prelude's (fuselab/codegen/prelude.py), which are NumPy's: integer
arithmetic wraps (computed in uint64, whose overflow Numba leaves defined, then
narrowed), maximum/minimum propagate the first NaN, shifts by the width or more give 0
(or -1), and bool arithmetic is logic. A test checks that every op of fuselab.ops.OPS has
an entry here.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .pytypes import cast, ctor, literal

Render = Callable[[Sequence[str], np.dtype], str]


def _k(ct: np.dtype) -> str:
    return np.dtype(ct).kind


def _wrap(op: str) -> Render:
    """Integer + - * in uint64 (defined wrap-around), narrowed to the loop type."""
    def render(a: Sequence[str], ct: np.dtype) -> str:
        if _k(ct) == "f":
            return f"({a[0]} {op} {a[1]})"
        if _k(ct) == "b":
            return f"({a[0]} {'or' if op == '+' else 'and'} {a[1]})"
        return f"{ctor(ct)}(np.uint64({a[0]}) {op} np.uint64({a[1]}))"
    return render


def _negative(a: Sequence[str], ct: np.dtype) -> str:
    if _k(ct) == "f":
        return f"(-{a[0]})"
    return f"{ctor(ct)}(np.uint64(0) - np.uint64({a[0]}))"


def _absolute(a: Sequence[str], ct: np.dtype) -> str:
    if _k(ct) == "f":
        return f"np.abs({a[0]})"
    if _k(ct) == "i":   # abs(MIN) wraps to MIN
        return f"({a[0]} if {a[0]} >= 0 else {ctor(ct)}(np.uint64(0) - np.uint64({a[0]})))"
    return a[0]


def _sign(a: Sequence[str], ct: np.dtype) -> str:
    one, zero = literal(1, ct), literal(0, ct)
    x = a[0]
    if _k(ct) == "f":
        return f"({one} if {x} > 0 else ({literal(-1, ct)} if {x} < 0 else ({zero} if {x} == 0 else {x})))"
    if _k(ct) == "i":
        return f"({one} if {x} > 0 else ({literal(-1, ct)} if {x} < 0 else {zero}))"
    return f"({one} if {x} > 0 else {zero})"


def _float_only(fn: str) -> Render:
    """floor, ceil, trunc, rint: the identity on integers."""
    def render(a: Sequence[str], ct: np.dtype) -> str:
        return f"np.{fn}({a[0]})" if _k(ct) == "f" else a[0]
    return render


# float32 functions with a vectorizable version in scalar.py, computed in float32 and
# within 1 ulp (libm's are one call per element: a fused softmax or GELU would lose to
# NumPy's SIMD loops)
FAST_F32 = {"exp": "fl_exp_f32", "expm1": "fl_expm1_f32", "tanh": "fl_tanh_f32"}


def _math(fn: str) -> Render:
    """A libm function of the loop's float type (Numba keeps float32 in float32)."""
    def render(a: Sequence[str], ct: np.dtype) -> str:
        if fn in FAST_F32 and np.dtype(ct) in (np.float32, np.float16):
            return f"{FAST_F32[fn]}({a[0]})"
        return f"{ctor(ct)}(np.{fn}({', '.join(a)}))"
    return render


def _square(a: Sequence[str], ct: np.dtype) -> str:
    return _wrap("*")([a[0], a[0]], ct)


def _reciprocal(a: Sequence[str], ct: np.dtype) -> str:
    if _k(ct) == "f":
        return f"({literal(1, ct)} / {a[0]})"
    # NumPy's integer reciprocal: 1.0 / x, converted back
    return cast(f"(np.float64(1.0) / np.float64({a[0]}))", np.float64, ct)


def _scale(factor: float) -> Render:
    """deg2rad / rad2deg: x times a constant folded in the loop type's own precision."""
    def render(a: Sequence[str], ct: np.dtype) -> str:
        t = np.dtype(ct).type
        if np.dtype(ct) == np.float16:
            t = np.float32
        value = t(np.pi) / t(180) if factor < 1 else t(180) / t(np.pi)
        return f"({a[0]} * {literal(value, np.dtype(t))})"
    return render


def _float_test(fn: str, int_value: str) -> Render:
    def render(a: Sequence[str], ct: np.dtype) -> str:
        return f"np.{fn}({a[0]})" if _k(ct) == "f" else int_value
    return render


def _logical_not(a: Sequence[str], ct: np.dtype) -> str:
    return f"(not {a[0]})" if _k(ct) == "b" else f"({a[0]} == 0)"


def _invert(a: Sequence[str], ct: np.dtype) -> str:
    return f"(not {a[0]})" if _k(ct) == "b" else f"{ctor(ct)}(~{a[0]})"


def _true_divide(a: Sequence[str], ct: np.dtype) -> str:
    return f"({a[0]} / {a[1]})"


def _by_kind(float_fn: str, int_fn: str, uint_fn: str) -> Render:
    def render(a: Sequence[str], ct: np.dtype) -> str:
        fn = {"f": float_fn, "i": int_fn, "u": uint_fn, "b": int_fn}[_k(ct)]
        expr = f"{fn}({a[0]}, {a[1]})"
        return expr if _k(ct) == "f" else f"{ctor(ct)}({expr})"
    return render


def _power(a: Sequence[str], ct: np.dtype) -> str:
    if _k(ct) == "f":
        return f"{ctor(ct)}(np.power({a[0]}, {a[1]}))"
    fn = "fl_power_uint" if _k(ct) == "u" else "fl_power_int"
    return f"{ctor(ct)}({fn}({a[0]}, {a[1]}))"


def _extreme(cmp: str, nan_of: int | None) -> Render:
    """maximum / minimum (NaN in the first operand wins, else the second's NaN: `nan_of`
    None) and fmax / fmin (a NaN loses: `nan_of` is the operand tested)."""
    def render(a: Sequence[str], ct: np.dtype) -> str:
        x, y = a
        if _k(ct) == "b":
            return f"({x} {'or' if cmp == '>=' else 'and'} {y})"
        if _k(ct) != "f":
            return f"({x} if {x} {cmp} {y} else {y})"
        nan = a[0] if nan_of is None else a[nan_of]
        # `|`, not `or`: both sides are cheap and a select beats a branch (and vectorizes)
        return f"({x} if (({x} {cmp} {y}) | ({nan} != {nan})) else {y})"
    return render


def _compare(op: str) -> Render:
    def render(a: Sequence[str], ct: np.dtype) -> str:
        return f"({a[0]} {op} {a[1]})"
    return render


def mixed_compare(op: str, a: Sequence[str], dtypes: Sequence[np.dtype]) -> str:
    """NumPy 2's exact comparison of a signed and an unsigned integer (its `qQ->?` loops):
    a negative value is below every unsigned one and equal to none. (Numba would compare
    int64 with uint64 in float64, which rounds both.) As the CUDA prelude's fl_less_mixed."""
    def less(x: str, tx: np.dtype, y: str, ty: np.dtype) -> str:
        if _k(tx) == "i":
            return f"(({x} < {literal(0, tx)}) | (np.uint64({x}) < np.uint64({y})))"
        return f"(({y} >= {literal(0, ty)}) & (np.uint64({x}) < np.uint64({y})))"

    def equal(x: str, tx: np.dtype, y: str, ty: np.dtype) -> str:
        signed, s_t = (x, tx) if _k(tx) == "i" else (y, ty)
        return f"(({signed} >= {literal(0, s_t)}) & (np.uint64({x}) == np.uint64({y})))"

    (x, y), (tx, ty) = a, [np.dtype(d) for d in dtypes]
    forms = {"less": lambda: less(x, tx, y, ty), "greater": lambda: less(y, ty, x, tx),
             "less_equal": lambda: f"(not {less(y, ty, x, tx)})", "greater_equal": lambda: f"(not {less(x, tx, y, ty)})",
             "equal": lambda: equal(x, tx, y, ty), "not_equal": lambda: f"(not {equal(x, tx, y, ty)})"}
    if op not in forms:
        raise KeyError(f"no loop of {op} with operands of different types {tx}, {ty}")
    return forms[op]()


def _logical(op: str) -> Render:
    def render(a: Sequence[str], ct: np.dtype) -> str:
        x, y = (v if _k(ct) == "b" else f"({v} != 0)" for v in a)
        return f"({x} != {y})" if op == "xor" else f"({x} {op} {y})"
    return render


def _bitwise(op: str) -> Render:
    def render(a: Sequence[str], ct: np.dtype) -> str:
        if _k(ct) == "b":
            return {"&": f"({a[0]} and {a[1]})", "|": f"({a[0]} or {a[1]})", "^": f"({a[0]} != {a[1]})"}[op]
        return f"{ctor(ct)}({a[0]} {op} {a[1]})"
    return render


def _shift(left: bool) -> Render:
    """npy_lshift / npy_rshift: a shift by the width or more (or by a negative amount,
    which is huge as unsigned) gives 0, or -1 for a negative value shifted right."""
    def render(a: Sequence[str], ct: np.dtype) -> str:
        x, s = a
        width = np.dtype(ct).itemsize * 8
        fits = f"np.uint64({s}) < {width}"
        t = ctor(ct)
        if left:
            return f"({t}(np.uint64({x}) << np.uint64({s})) if {fits} else {t}(0))"
        beyond = f"({t}(-1) if {x} < 0 else {t}(0))" if _k(ct) == "i" else f"{t}(0)"
        return f"({t}({x} >> {s}) if {fits} else {beyond})"
    return render


ELEMWISE: dict[str, Render] = {
    "negative": _negative,
    "positive": lambda a, ct: a[0],
    "absolute": _absolute,
    "sign": _sign,
    "floor": _float_only("floor"), "ceil": _float_only("ceil"), "trunc": _float_only("trunc"),
    "rint": _float_only("rint"),
    "square": _square,
    "reciprocal": _reciprocal,
    "deg2rad": _scale(0.0), "rad2deg": _scale(1.0),
    "isnan": _float_test("isnan", "False"), "isinf": _float_test("isinf", "False"),
    "isfinite": _float_test("isfinite", "True"), "signbit": _float_test("signbit", "False"),
    "logical_not": _logical_not,
    "invert": _invert,
    "add": _wrap("+"), "subtract": _wrap("-"), "multiply": _wrap("*"),
    "true_divide": _true_divide,
    "floor_divide": _by_kind("fl_floor_divide_float", "fl_floor_divide_int", "fl_floor_divide_uint"),
    "remainder": _by_kind("fl_remainder_float", "fl_remainder_int", "fl_remainder_uint"),
    "power": _power,
    "maximum": _extreme(">=", None), "minimum": _extreme("<=", None),
    "fmax": _extreme(">=", 1), "fmin": _extreme("<=", 1),
    "equal": _compare("=="), "not_equal": _compare("!="), "less": _compare("<"),
    "less_equal": _compare("<="), "greater": _compare(">"), "greater_equal": _compare(">="),
    "logical_and": _logical("and"), "logical_or": _logical("or"), "logical_xor": _logical("xor"),
    "bitwise_and": _bitwise("&"), "bitwise_or": _bitwise("|"), "bitwise_xor": _bitwise("^"),
    "left_shift": _shift(True), "right_shift": _shift(False),
    "where": lambda a, ct: f"({a[1]} if {a[0]} else {a[2]})",
}
for _fn in ("sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
            "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
            "arctan2", "hypot", "copysign"):
    ELEMWISE[_fn] = _math(_fn)

# x ** k for a constant 2, 3, 4, 0.5 or -1 of a float loop (ir.special_exponent says when,
# and why): products, a square root, a division
_PRODUCTS = {2: "({0} * {0})", 3: "({0} * {0} * {0})", 4: "(({0} * {0}) * ({0} * {0}))"}


def special_power(k: float, x: str, ct: np.dtype) -> str:
    if k == 0.5:
        return f"{ctor(ct)}(np.sqrt({x}))"
    if k == -1:
        return f"({literal(1, ct)} / {x})"
    return _PRODUCTS[int(k)].format(x)


def combine(op: str, acc: str, value: str, acc_dtype: np.dtype) -> str:
    """One step of reduction `op` in its accumulation dtype: the new accumulator."""
    if op == "sum":
        return ELEMWISE["add"]([acc, value], acc_dtype)
    if op == "prod":
        return ELEMWISE["multiply"]([acc, value], acc_dtype)
    if op == "max":
        return ELEMWISE["maximum"]([acc, value], acc_dtype)
    if op == "min":
        return ELEMWISE["minimum"]([acc, value], acc_dtype)
    if op == "any":
        return f"({acc} or {value})"
    if op == "all":
        return f"({acc} and {value})"
    raise KeyError(f"no combine for {op}")


REDUCTIONS = ("sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "var")   # var: accum.Acc.welford
