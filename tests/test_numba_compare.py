"""runtime.verify's float comparison compiled (numba_backend/compare.py), used for large
NumPy outputs where Numba is loaded: the same worst error, first index and count over
the tolerance as NumPy's pieces, for every kind of value the rules single out (NaN in
one or both, equal and unequal infinities, overflowing differences, all-NaN and all-zero
arrays, strided views)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from numba_util import numba  # noqa: F401  (skips without Numba)

from fuselab.runtime import verify


def _edge_cases(dt: type) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    w = rng.standard_normal(2 * verify.COMPILED_MIN + 77).astype(dt)
    g = (w * (1 + rng.standard_normal(w.size) * 1e-6)).astype(dt)
    odd_g, odd_w = g.copy(), w.copy()
    odd_g[5], odd_g[7] = np.nan, np.inf                    # NaN in one only; inf against a number
    odd_w[9] = odd_g[9] = np.inf                           # equal infinities
    odd_w[11], odd_g[11] = -np.inf, 3                      # a number against -inf (inf / inf)
    odd_w[13] = odd_g[13] = np.nan                         # NaN in both
    odd_g[100] *= 2
    big_w = w.copy()
    big_w[3] = np.finfo(dt).max
    big_g = big_w.copy()
    big_g[3] = -np.finfo(dt).max                           # the difference overflows
    return {"close": (g, w), "odd values": (odd_g, odd_w), "equal": (w, w.copy()),
            "all NaN": (np.full_like(w, np.nan), w), "zeros": (np.zeros_like(w), np.zeros_like(w)),
            "strided": (g[::-2], w[::-2]), "overflow": (big_g, big_w), "2-D": (g[:-77].reshape(-1, 64), w[:-77].reshape(-1, 64))}


CASES = [(dt, name) for dt in (np.float32, np.float64) for name in _edge_cases(dt)]


@pytest.mark.parametrize("dt,name", CASES, ids=[f"{np.dtype(d).name}-{n}" for d, n in CASES])
@pytest.mark.parametrize("rt", [2e-5, 1e-12])
def test_compiled_comparison_gives_numpys_verdict(dt, name, rt, monkeypatch):
    g, w = _edge_cases(dt)[name]
    assert g.size >= verify.COMPILED_MIN
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # (neither way warns: an overflow is judged, not reported)
        compiled = verify._float_errors(np, g, w, rt)
        compiled_message = verify.compare_one("y", g, w, rt).message
        monkeypatch.setattr(verify, "COMPILED_MIN", 1 << 62)
        pieces = verify._float_errors(np, g, w, rt)
        pieces_message = verify.compare_one("y", g, w, rt).message
    assert compiled == pieces
    assert compiled_message == pieces_message


def test_compiled_comparison_is_used_for_large_outputs(monkeypatch):
    from fuselab.numba_backend import compare
    calls = []
    real = compare.float_errors
    monkeypatch.setattr(compare, "float_errors", lambda *a: calls.append(a[0].size) or real(*a))
    w = np.ones(verify.COMPILED_MIN, np.float32)
    assert verify.compare_one("y", w, w).ok and calls == [w.size]
    assert verify.compare_one("y", w[:100], w[:100]).ok and calls == [w.size]          # small: NumPy's pieces
    h = w.astype(np.float16)
    assert verify.compare_one("y", h, h).ok and calls == [w.size]                      # float16: NumPy's pieces
