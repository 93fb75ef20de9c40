"""The held-array cells of test_fidelity_held.py with CuPy arrays on a GPU: a CuPy array
that a list, an attribute, a closure or a default argument holds too is read and written
through that other reference in the middle of the cell, as in plain CuPy (held.py judges
CuPy arrays as it does NumPy's). Each cell runs plainly with CuPy and under `%%fuse` on the
CUDA backend and must leave the notebook in the same state."""
from __future__ import annotations

import pytest

pytest.importorskip("IPython")

from fidelity import FUSE_LINE, Harness, assert_as_plain, params  # noqa: E402
from test_fidelity import CUPY_SETUP  # noqa: E402
from test_fidelity_held import ALL  # noqa: E402

# (cells whose plain CuPy run differs from NumPy's in a way no trace can follow: none yet)
KNOWN: dict[str, str] = {}
# set-ups CuPy cannot run (it has no matrix class)
CUPY_CELLS = [c for c in ALL if "asmatrix" not in c.setup]


@pytest.fixture(scope="module")
def harness():
    return Harness()


def test_the_cells_are_the_held_ones():
    assert len(CUPY_CELLS) >= 250 and len(ALL) - len(CUPY_CELLS) <= 2


@pytest.mark.gpu
@pytest.mark.parametrize("case", params(CUPY_CELLS, KNOWN))
def test_held_cupy_array_cell_as_plain_cupy(harness, case):
    from fuselab.runtime.verify import RTOL
    assert_as_plain(harness, case, CUPY_SETUP, FUSE_LINE.replace(" --backend cpu", ""), RTOL)


def _cupy():
    import cupy   # (gpu-marked: conftest.py skips these without a device)
    return cupy


@pytest.mark.gpu
def test_cupy_arrays_only_the_namespace_holds_are_not_held():
    """No false holder among CuPy's own objects: a plain cell, and one after a fused cell
    whose session is kept, trace without a break."""
    cp = _cupy()
    import fuselab
    from fuselab.cell import execute_cell
    from fuselab.trace.held import held_elsewhere
    ns = {"cp": cp, "x": cp.arange(4.0), "m": cp.ones((2, 4)), "v": None}
    ns["v"] = ns["m"][0]
    assert held_elsewhere(ns) == frozenset()
    first = execute_cell(ns, "y = x * 2\nm[1] = y", keep=("y",), quiet=True, time=False)
    ns["sess"] = first.session
    second = fuselab.trace_cell("y += 1\nx += 1\nm *= 2\nz = y * x", ns)
    assert second.graph.breaks == () and second.binder.ctx.held is None


@pytest.mark.gpu
def test_cupy_array_in_a_list_is_written_through_at_the_update():
    cp = _cupy()
    from fuselab.cell import run_cell
    x = cp.arange(4.0)
    ns = {"cp": cp, "x": x, "L": [x]}
    run_cell(ns, "x += 1\nr = L[0] * 2\nL[0][0] = 100\ns = x + 0", quiet=True, time=False)
    assert ns["x"] is x and x.tolist() == [100.0, 2.0, 3.0, 4.0]
    assert ns["r"].tolist() == [2.0, 4.0, 6.0, 8.0] and ns["s"].tolist() == [100.0, 2.0, 3.0, 4.0]
