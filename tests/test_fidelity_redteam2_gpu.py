"""The second red-team round's cells (test_fidelity_redteam2.py) with CuPy arrays on a GPU:
each cell, run plainly with CuPy and under `%%fuse` on the CUDA backend, leaves the
notebook in the same state (values within the documented reduction tolerance)."""
from __future__ import annotations

import pytest

pytest.importorskip("IPython")

from fidelity import FUSE_LINE, Harness, assert_as_plain  # noqa: E402
from test_fidelity import CUPY_SETUP  # noqa: E402
from test_fidelity_redteam2 import CORPUS, UFUNC_CELLS  # noqa: E402


@pytest.fixture(scope="module")
def harness():
    return Harness()


@pytest.mark.gpu
@pytest.mark.parametrize("case", CORPUS + UFUNC_CELLS, ids=lambda c: c.name)
def test_red_team_cell_with_cupy_arrays(harness, case):
    from fuselab.runtime.verify import RTOL
    assert_as_plain(harness, case, CUPY_SETUP, FUSE_LINE.replace(" --backend cpu", ""), RTOL)
