"""How far fuselab's value may be from NumPy's, element by element, and the comparison.

Every value of a generated program carries a bound: `None` when both implementations
must give the same bits (every op on its path is correctly rounded or exact, as + - * /
sqrt, comparisons, casts, integer arithmetic, max/min are), else an array of the largest
|fuselab - NumPy| the program's arithmetic allows. Bounds are derived, not guessed:

* a transcendental function is within `ulps` units in the last place of the true value
  in each implementation (CUDA's documented maxima, NumPy's SIMD and glibc's), so the two
  differ by at most 2 * ulps, plus the input's bound times the function's slope;
* a float sum of n terms, in any order, is within (n - 1) u sum|x| of the exact sum
  (u the unit roundoff of the accumulator), so two summation orders differ by at most
  twice that; a product likewise in relative terms;
* an exact op fed inexact inputs propagates their bounds (|a| db + |b| da for a product,
  ...) and may round the other way: one more ulp of its result.

Discontinuous ops (comparisons, floor, casts to integers, argmax...) would turn a tiny
difference into an arbitrary one, so the generator only gives them exact inputs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Bound = "np.ndarray | None"


def ulp(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The spacing of `dtype` at |x|, as float64 (inf where x is not finite)."""
    dt = np.dtype(dtype)
    with np.errstate(all="ignore"):
        a = np.abs(np.asarray(x, dtype=np.float64))
        fin = np.isfinite(a)
        s = np.spacing(np.where(fin, a, 0).astype(dt)).astype(np.float64)
        # the largest finite value's spacing covers rounding to it from above
        return np.where(fin, np.maximum(s, np.spacing(np.asarray(0, dt)).astype(np.float64)), np.inf)


def unit_roundoff(dtype: np.dtype) -> float:
    return float(np.finfo(dtype).eps) / 2


def f64(x) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(x).astype(np.float64)


def zeros_like_bound(x) -> np.ndarray:
    return np.zeros(np.shape(x), np.float64)


def as_bound(b, shape) -> np.ndarray:
    return np.broadcast_to(zeros_like_bound(np.empty(shape)) if b is None else b, shape).astype(np.float64)


def rounding(out: np.ndarray, dtype: np.dtype, *bounds) -> "np.ndarray | None":
    """An exact op's bound: exact when every input is, else the inputs' propagated bound
    (added by the caller) plus one ulp of the result (it may round the other way)."""
    if all(b is None for b in bounds):
        return None
    return ulp(out, dtype)


@dataclass(frozen=True)
class Verdict:
    ok: bool
    message: str = ""


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))


def compare(name: str, got, want, bound, any_zero_sign: bool = False) -> Verdict:
    """Does fuselab's `got` agree with NumPy's `want` within `bound` (None: bit for bit,
    NaNs equal whatever their sign or payload; with `any_zero_sign`, +0.0 == -0.0)?"""
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape or g.dtype != w.dtype:
        return Verdict(False, f"{name}: got {g.dtype}{list(g.shape)}, NumPy gives {w.dtype}{list(w.shape)}")
    if g.size == 0:
        return Verdict(True)
    if w.dtype.kind != "f":
        bad = g != w
        if bad.any():
            at = _first(bad)
            return Verdict(False, f"{name}: {int(bad.sum())} of {g.size} differ, first at {at}: "
                                  f"{g[at]!r} vs NumPy {w[at]!r}")
        return Verdict(True)
    gn, wn = np.isnan(g), np.isnan(w)
    if bound is None:
        same = (g == w) & ((np.signbit(g) == np.signbit(w)) | any_zero_sign) | (gn & wn)
        if not same.all():
            at = _first(~same)
            return Verdict(False, f"{name}: {int((~same).sum())} of {g.size} differ (exact path), first at "
                                  f"{at}: {g[at]!r} vs NumPy {w[at]!r}")
        return Verdict(True)
    b = np.broadcast_to(np.asarray(bound, np.float64), w.shape)
    big = float(np.finfo(w.dtype).max)
    with np.errstate(all="ignore"):
        gf, wf = g.astype(np.float64), w.astype(np.float64)
        finite = np.isfinite(gf) & np.isfinite(wf)
        ok = np.where(finite, np.abs(gf - wf) <= b, (g == w) | (gn & wn))
        # at the edge of overflow one side may round to infinity: allowed where the bound
        # reaches past the largest finite value (the generator keeps inexact values away
        # from that edge, so this is rare)
        one_inf = np.isinf(gf) != np.isinf(wf)
        finite_side = np.where(np.isinf(gf), wf, gf)
        ok |= one_inf & ~gn & ~wn & (np.sign(gf) == np.sign(wf)) & (np.abs(finite_side) + b >= big)
    if not ok.all():
        at = _first(~ok)
        return Verdict(False, f"{name}: {int((~ok).sum())} of {g.size} outside the bound, first at {at}: "
                              f"{g[at]!r} vs NumPy {w[at]!r} (allowed difference {b[at]:.3g})")
    return Verdict(True)
