"""runtime.verify's float comparison as one compiled pass (two: the scale, then the errors).

verify compares a plan's float outputs with the reference run's in float64, a dozen
NumPy operations over each piece of the arrays: on the CPU, for a cell of 4M float64
outputs, 0.43 s of a 0.8 s cached Numba cell whose kernel ran in 0.14 s (2-core AMD
EPYC, 2026-12-05, the machine loaded). This is the same arithmetic, element by
element, with the same results (worst error, its first index, how many over 1),
for float32 and float64 arrays. Importing this module imports Numba.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_jit = njit(cache=True, nogil=True, error_model="numpy")
_BIG = np.finfo(np.float64).max     # what np.nan_to_num makes of +inf


@_jit
def _scale(w):
    """The largest finite |w| (0.0 for none), in float64."""
    s = 0.0
    for i in range(w.size):
        a = abs(np.float64(w[i]))
        if a > s and a != np.inf:   # (NaN compares false)
            s = a
    return s


@_jit
def _errors(g, w, rt, atol):
    """(worst, its first index, count over 1) of |g - w| / (atol + rt |w|) with
    verify._errors_of's rules: NaN against NaN and equal infinities 0, NaN in one only
    and an infinite error the largest float64 (np.nan_to_num), an undefined one (inf /
    inf) inf."""
    worst, at, n = -1.0, 0, 0
    for i in range(g.size):
        gi, wi = np.float64(g[i]), np.float64(w[i])
        nan_g, nan_w = gi != gi, wi != wi
        if nan_g and nan_w:
            e = 0.0
        elif nan_g or nan_w:
            e = _BIG
        elif gi == wi and (wi == np.inf or wi == -np.inf):
            e = 0.0
        else:
            e = abs(gi - wi) / (atol + rt * abs(wi))
            if e != e:
                e = np.inf
            elif e == np.inf:
                e = _BIG
        if e > worst:
            worst, at = e, i
        if e > 1.0:
            n += 1
    return worst, at, n


COMPILED = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


def float_errors(g: np.ndarray, w: np.ndarray, rt: float, tiny: float) -> tuple[float, int, int]:
    """verify._float_errors of two NumPy arrays of one dtype in COMPILED."""
    gf, wf = np.ravel(g), np.ravel(w)
    atol = rt * max(float(_scale(wf)), tiny)
    worst, at, n = _errors(gf, wf, float(rt), atol)
    return float(worst), int(at), int(n) if worst > 1.0 else 0
