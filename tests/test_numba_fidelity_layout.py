"""Results of the Numba backend are arrays of their own, as NumPy's results are: each
kernel writes through a flat view of a new array of the result's shape (run.fresh), and
the run hands back that array (run.shaped), not a reshaped view of a flat buffer (bound
results had owndata False and a `.base`: the red team's cells under --backend numba,
52 of 134 in two files, 2026-12-04)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("IPython")
pytest.importorskip("numba", reason="the Numba backend needs numba (pip install '.[cpu]')")

from fidelity import FUSE_LINE, Case, assert_as_plain  # noqa: E402
from fidelity_corpus import SETUP  # noqa: E402
from test_fidelity_leftovers import LayoutHarness  # noqa: E402

from fuselab.numba_backend.run import flat, fresh, shaped  # noqa: E402

NUMBA = FUSE_LINE.replace("--backend cpu", "--backend numba")
RTOL = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-13}

CASES = [
    Case("pointwise result", "r = a * 2 + 1\n", "a = np.arange(6.0).reshape(2, 3)"),
    Case("reduction result", "s = a.sum(axis=1)\nt = a.max()\n", "a = np.arange(6.0).reshape(2, 3)"),
    Case("row kernel result", "r = a - a.mean(axis=1, keepdims=True)\n", "a = np.arange(12.0).reshape(3, 4)"),
    Case("float16 result", "r = h * 2\n", "h = np.arange(4, dtype=np.float16)"),
    Case("int8 result then write", "r = i8 + 1\nr[0] = 5\n", "i8 = np.arange(4, dtype=np.int8)"),
    Case("0-d result", "s = (a * a).sum()\n", "a = np.arange(3.0)"),
]


@pytest.fixture(scope="module")
def harness() -> LayoutHarness:
    return LayoutHarness()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_numba_results_own_their_memory(harness, case):
    assert_as_plain(harness, case, SETUP, NUMBA, RTOL)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32])
def test_shaped_hands_back_the_array_a_fresh_buffer_views(dtype):
    buf = fresh((2, 3), np.dtype(dtype))
    assert buf.ndim == 1 and buf.flags.c_contiguous
    out = shaped(buf, np.dtype(dtype), (2, 3))
    assert out.flags.owndata and out.shape == (2, 3) and out.dtype == dtype
    assert np.shares_memory(out.view(buf.dtype).reshape(-1), buf)


def test_shaped_of_a_plain_flat_buffer_is_still_a_view():
    buf = np.empty(6, np.float32)   # (a reused timing buffer: no array of the node's shape)
    out = shaped(buf, np.dtype(np.float32), (2, 3))
    assert out.base is buf


def test_shaped_of_an_input_is_the_input():
    x = np.zeros((2, 3))
    assert shaped(flat(x, x.dtype), x.dtype, (2, 3)) is x
    v = np.arange(6.0).reshape(2, 3)   # a view: its flat view's base is arange's array
    assert shaped(flat(v, v.dtype), v.dtype, (2, 3)).base is v.base
