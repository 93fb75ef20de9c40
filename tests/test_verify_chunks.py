"""runtime.verify compares NumPy arrays a chunk at a time (the float64 temporaries stay
in cache): the worst error, where it is and how many elements fail are those of one
comparison over the whole array, for NaN, infinities, zeros and any shape."""
from __future__ import annotations

import numpy as np
import pytest

from fuselab.runtime import verify


def _whole(g: np.ndarray, w: np.ndarray, rt: float) -> tuple[float, int, int]:
    """The comparison over the whole array at once (what verify did before chunks)."""
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    nan_g, nan_w = np.isnan(g64), np.isnan(w64)
    finite = np.isfinite(w64)
    atol = rt * max(float(np.max(np.where(finite, np.abs(w64), 0.0))), float(np.finfo(g.dtype).tiny))
    with np.errstate(invalid="ignore"):
        err = np.abs(g64 - w64) / (atol + rt * np.abs(w64))
    err = np.where(nan_g & nan_w, 0.0, err)
    err = np.where(~finite & (g64 == w64), 0.0, err)
    err = np.where(nan_g != nan_w, np.inf, err)
    err = np.nan_to_num(err, nan=np.inf)
    worst = float(err.max())
    return worst, int(np.argmax(err)), int((err > 1.0).sum()) if worst > 1.0 else 0


@pytest.mark.parametrize("chunk", [7, 64, 1 << 16])
@pytest.mark.parametrize("seed", range(6))
def test_chunked_comparison_is_the_whole_arrays(monkeypatch, chunk, seed):
    monkeypatch.setattr(verify, "CHUNK", chunk)
    rng = np.random.default_rng(seed)
    dtype = [np.float16, np.float32, np.float64][seed % 3]
    shape = [(1000,), (37, 29), (3, 5, 67), (), (1,), (130, 7)][seed]
    w = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)
    g = (w * (1 + rng.standard_normal(shape) * [1e-6, 1e-3][seed % 2])).astype(dtype)
    if w.size > 4:
        flat_g, flat_w = g.reshape(-1), w.reshape(-1)
        flat_w[1] = flat_g[1] = np.nan                  # NaN in both
        flat_g[2] = np.nan                              # NaN in one only
        flat_w[3] = flat_g[3] = np.inf                  # equal infinities
        flat_g[-1] = flat_w[-1] * 2 + 1                 # a far miss at the end
    rt = verify.RTOL[np.dtype(dtype)]
    assert verify._float_errors(np, g, w, rt) == _whole(g, w, rt)
    # a view that is not contiguous compares as its values
    if g.ndim == 2:
        assert verify._float_errors(np, g[:, ::2], w[:, ::2], rt) == _whole(g[:, ::2], w[:, ::2], rt)


def test_ties_report_the_first_worst_element(monkeypatch):
    monkeypatch.setattr(verify, "CHUNK", 4)
    w = np.ones(20, np.float32)
    g = w.copy()
    g[[6, 13, 17]] = 2.0                                # the same error in three chunks
    check = verify.compare_one("y", g, w)
    assert not check.ok and "3 of 20" in check.message and "(6,)" in check.message
