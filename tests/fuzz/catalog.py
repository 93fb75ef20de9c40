"""The operations a generated cell may use: how each is written in a cell, how exact it is,
and how an input's difference propagates through it (see numerics.py).

Every elementwise and reduction op of fuselab's op table appears here, most in two
spellings (`a + b` and `np.add(a, b)`), so tracing is exercised as a user would.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from fuselab.ops import OPS, Kind

from .numerics import f64, ulp

EXACT = "exact"      # correctly rounded (or exact) in both implementations
APPROX = "approx"    # within `ulps` of the true value in each implementation
JUMP = "jump"        # discontinuous: only ever given inputs that are exact


@dataclass(frozen=True)
class Spec:
    op: str                          # op-table name (what the coverage matrix counts)
    arity: int
    forms: tuple[str, ...]           # source templates over {0}, {1}, {2}
    kind: str
    ulps: float = 0.0                # APPROX: maximum error of one implementation
    floats_only: bool = False        # only meaningful on floating-point operands

    def render(self, rng: np.random.Generator, *args: str) -> str:
        return str(rng.choice(self.forms)).format(*args)


def _np(name: str) -> str:
    return f"np.{name}({{0}})"


def _np2(name: str) -> str:
    return f"np.{name}({{0}}, {{1}})"


# CUDA's documented maximum ulp errors (CUDA C++ Programming Guide, appendix "Mathematical
# Functions", single precision; double precision is tighter) against glibc's and NumPy's
# SIMD routines (within 4 ulp): each implementation is allowed its own error.
_TRANSCENDENTAL_ULPS = {
    "exp": 4, "exp2": 4, "expm1": 4, "log": 4, "log2": 4, "log10": 4, "log1p": 4,
    "sin": 4, "cos": 4, "tan": 6, "arcsin": 4, "arccos": 4, "arctan": 4, "sinh": 4, "cosh": 4,
    "tanh": 4, "arcsinh": 4, "arccosh": 4, "arctanh": 4, "cbrt": 4,
}

UNARY: dict[str, Spec] = {}
for _name, _u in _TRANSCENDENTAL_ULPS.items():
    UNARY[_name] = Spec(_name, 1, (_np(OPS[_name].xp_name),), APPROX, _u, floats_only=True)
for _name, _forms, _kind in [
    ("negative", ("-{0}", "np.negative({0})"), EXACT),
    ("positive", ("+{0}", "np.positive({0})"), EXACT),
    ("absolute", ("abs({0})", "np.abs({0})", "np.absolute({0})"), EXACT),
    ("square", ("np.square({0})", "{0} ** 2"), EXACT),
    ("sqrt", ("np.sqrt({0})", "{0} ** 0.5"), EXACT),
    ("reciprocal", ("np.reciprocal({0})",), EXACT),
    ("deg2rad", ("np.deg2rad({0})", "np.radians({0})"), EXACT),
    ("rad2deg", ("np.rad2deg({0})", "np.degrees({0})"), EXACT),
    ("sign", ("np.sign({0})",), JUMP),
    ("floor", ("np.floor({0})",), JUMP),
    ("ceil", ("np.ceil({0})",), JUMP),
    ("rint", ("np.rint({0})", "np.round({0})"), JUMP),
    ("trunc", ("np.trunc({0})", "np.fix({0})"), JUMP),
    ("isnan", ("np.isnan({0})",), JUMP),
    ("isinf", ("np.isinf({0})",), JUMP),
    ("isfinite", ("np.isfinite({0})",), JUMP),
    ("signbit", ("np.signbit({0})",), JUMP),
    ("logical_not", ("np.logical_not({0})",), JUMP),
    ("invert", ("~{0}", "np.invert({0})"), JUMP),
]:
    UNARY[_name] = Spec(_name, 1, _forms, _kind)

BINARY: dict[str, Spec] = {}
for _name, _forms, _kind, _u in [
    ("add", ("{0} + {1}", "np.add({0}, {1})"), EXACT, 0),
    ("subtract", ("{0} - {1}", "np.subtract({0}, {1})"), EXACT, 0),
    ("multiply", ("{0} * {1}", "np.multiply({0}, {1})"), EXACT, 0),
    ("true_divide", ("{0} / {1}", "np.divide({0}, {1})"), EXACT, 0),
    ("floor_divide", ("{0} // {1}", "np.floor_divide({0}, {1})"), JUMP, 0),
    ("remainder", ("{0} % {1}", "np.remainder({0}, {1})", "np.mod({0}, {1})"), JUMP, 0),
    ("power", ("{0} ** {1}", "np.power({0}, {1})"), APPROX, 4),
    ("maximum", ("np.maximum({0}, {1})",), EXACT, 0),
    ("minimum", ("np.minimum({0}, {1})",), EXACT, 0),
    ("fmax", ("np.fmax({0}, {1})",), EXACT, 0),
    ("fmin", ("np.fmin({0}, {1})",), EXACT, 0),
    ("arctan2", ("np.arctan2({0}, {1})",), APPROX, 4),
    ("hypot", ("np.hypot({0}, {1})",), APPROX, 4),
    ("copysign", ("np.copysign({0}, {1})",), JUMP, 0),
    ("equal", ("{0} == {1}", "np.equal({0}, {1})"), JUMP, 0),
    ("not_equal", ("{0} != {1}",), JUMP, 0),
    ("less", ("{0} < {1}", "np.less({0}, {1})"), JUMP, 0),
    ("less_equal", ("{0} <= {1}",), JUMP, 0),
    ("greater", ("{0} > {1}",), JUMP, 0),
    ("greater_equal", ("{0} >= {1}", "np.greater_equal({0}, {1})"), JUMP, 0),
    ("logical_and", ("np.logical_and({0}, {1})",), JUMP, 0),
    ("logical_or", ("np.logical_or({0}, {1})",), JUMP, 0),
    ("logical_xor", ("np.logical_xor({0}, {1})",), JUMP, 0),
    ("bitwise_and", ("{0} & {1}", "np.bitwise_and({0}, {1})"), JUMP, 0),
    ("bitwise_or", ("{0} | {1}",), JUMP, 0),
    ("bitwise_xor", ("{0} ^ {1}",), JUMP, 0),
    ("left_shift", ("{0} << {1}", "np.left_shift({0}, {1})"), JUMP, 0),
    ("right_shift", ("{0} >> {1}",), JUMP, 0),
]:
    BINARY[_name] = Spec(_name, 2, _forms, _kind, _u)

# every elementwise op of the table is reachable from a cell
_MISSING = {n for n, o in OPS.items() if o.kind is Kind.ELEMWISE and o.arity in (1, 2)} - set(UNARY) - set(BINARY) - {"astype"}
assert not _MISSING, f"the fuzzer's catalog lacks {sorted(_MISSING)}"

# Reductions: (op, source template over {x} and {kw}); kw holds axis= and keepdims=.
REDUCTIONS: dict[str, tuple[str, ...]] = {
    "sum": ("{x}.sum({kw})", "np.sum({x}{kwc})"),
    "prod": ("{x}.prod({kw})", "np.prod({x}{kwc})"),
    "max": ("{x}.max({kw})", "np.max({x}{kwc})", "np.amax({x}{kwc})"),
    "min": ("{x}.min({kw})", "np.min({x}{kwc})"),
    "any": ("{x}.any({kw})", "np.any({x}{kwc})"),
    "all": ("{x}.all({kw})", "np.all({x}{kwc})"),
    "argmax": ("{x}.argmax({kw})", "np.argmax({x}{kwc})"),
    "argmin": ("{x}.argmin({kw})", "np.argmin({x}{kwc})"),
}
REDUCE_KIND = {"sum": APPROX, "prod": APPROX, "max": EXACT, "min": EXACT,
               "any": JUMP, "all": JUMP, "argmax": JUMP, "argmin": JUMP}


# ---------------------------------------------------------------------------
# Bounds of elementwise results
# ---------------------------------------------------------------------------

def spread(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray, b: np.ndarray) -> np.ndarray:
    """An upper estimate of |f(y) - f(x)| for y within b of x: the larger change across
    the interval's halves, doubled for curvature. Computed as a difference of values, never
    as a slope times b, whose slope underflows (arctan2(1, 1e223) moves by 1e-231 over
    an interval of 1e213: a slope of 1e-444)."""
    with np.errstate(all="ignore"):
        lo, mid, hi = fn(x - b), fn(x), fn(x + b)
        s = np.maximum(np.abs(hi - mid), np.abs(mid - lo))
        # NaN at every sample: the NaN is certain (0); NaN at some only: the interval
        # crosses the domain's edge (a power of a mean that may be either side of zero),
        # and NaN says no bound holds (CellBuilder.bind then refuses the value)
        nan_lo, nan_mid, nan_hi = np.isnan(lo), np.isnan(mid), np.isnan(hi)
        s = np.where(nan_lo & nan_mid & nan_hi, 0.0, s)
        s = np.where((nan_lo != nan_mid) | (nan_hi != nan_mid), np.nan, s)
    return np.where(b > 0, 2 * s, 0.0)


def binary_bound(op: str, out: np.ndarray, a: np.ndarray, b: np.ndarray, ba, bb, dtype: np.dtype):
    """Bound of an EXACT or APPROX binary op's result, given its operands' bounds."""
    if ba is None and bb is None and BINARY[op].kind == EXACT:
        return None
    ba = np.zeros(np.shape(out)) if ba is None else ba
    bb = np.zeros(np.shape(out)) if bb is None else bb
    A, B = np.abs(f64(a)), np.abs(f64(b))
    with np.errstate(all="ignore"):
        if op in ("add", "subtract"):
            prop = ba + bb
        elif op == "multiply":
            prop = B * ba + A * bb + ba * bb
        elif op == "true_divide":
            prop = np.where(B > bb, (ba + np.abs(f64(out)) * bb) / (B - bb), np.inf)
        elif op in ("maximum", "minimum", "fmax", "fmin"):
            prop = np.maximum(ba, bb)
        elif op == "hypot":
            prop = ba + bb
        elif op in ("power", "arctan2"):
            fa = (lambda t: np.power(t, f64(b))) if op == "power" else (lambda t: np.arctan2(t, f64(b)))
            fb = (lambda t: np.power(f64(a), t)) if op == "power" else (lambda t: np.arctan2(f64(a), t))
            prop = spread(fa, f64(a), ba * np.ones_like(A)) + spread(fb, f64(b), bb * np.ones_like(B))
        else:  # pragma: no cover - the generator gives other ops exact inputs only
            raise ValueError(f"no bound rule for {op}")
    spec = BINARY.get(op)
    own = 2 * spec.ulps * ulp(out, _compute(dtype)) if spec is not None and spec.kind == APPROX else 0.0
    return prop + own + ulp(out, dtype)


def unary_bound(op: str, out: np.ndarray, a: np.ndarray, ba, dtype: np.dtype):
    spec = UNARY[op]
    if ba is None and spec.kind == EXACT:
        return None
    ba0 = np.zeros(np.shape(a)) if ba is None else np.broadcast_to(ba, np.shape(a))
    x = f64(a)
    with np.errstate(all="ignore"):
        if op in ("negative", "positive", "absolute"):
            prop = ba0
        elif op == "square":
            prop = 2 * np.abs(x) * ba0 + ba0 * ba0
        elif op == "sqrt":
            prop = np.minimum(ba0 / np.sqrt(np.abs(x)), np.sqrt(ba0))
            prop = np.where((x - ba0 < 0) & (x + ba0 >= 0) & (ba0 > 0), np.nan, prop)   # NaN or not: no bound
        elif op == "reciprocal":
            prop = np.where(np.abs(x) > ba0, ba0 / (np.abs(x) * (np.abs(x) - ba0)), np.inf)
        elif op in ("deg2rad", "rad2deg"):
            prop = ba0 * (np.pi / 180 if op == "deg2rad" else 180 / np.pi)
        elif op in ("sin", "cos"):
            # |f'| <= 1 and |f| <= 1; three samples of a secant can straddle a whole
            # period when the argument's own error is large (cos of a summed 1e18)
            prop = np.minimum(ba0, 2.0)
        elif op == "tan":
            # a pole within the argument's error makes any value possible
            to_pole = np.pi / 2 - np.abs(np.remainder(x - np.pi / 2, np.pi) - np.pi / 2)
            prop = np.where(ba0 < np.minimum(to_pole, 0.5), spread(np.tan, x, ba0), np.inf)
        else:
            fn = getattr(np, OPS[op].xp_name)
            prop = spread(fn, x, ba0)
    own = 2 * spec.ulps * ulp(out, _compute(dtype)) if spec.kind == APPROX else 0.0
    return prop + own + ulp(out, dtype)


def _compute(dtype: np.dtype) -> np.dtype:
    """float16 transcendentals are computed in float32 on both sides, then rounded."""
    return np.dtype(np.float32) if np.dtype(dtype) == np.float16 else np.dtype(dtype)
