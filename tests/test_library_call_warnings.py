"""Warnings CuPy gives inside the runtime's library calls (complex kernels and other
opaque calls run through CuPy node by node): a CuPy cell's, at its own line and once, as
plain CuPy gives them; none from the check's and the timing's reruns; none of CuPy's in a
NumPy cell, whose warnings are NumPy's (the trace gives those)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fuselab
from fuselab.interp import PythonWarning, eval_nodes
from fuselab.session import Session

CELL = "y = c * 2\nr = y.astype(float)\nt = r + 1"


def _astype_node(graph) -> int:
    return next(i for i, n in enumerate(graph.nodes) if n.op == "astype")


def test_eval_nodes_hands_each_warning_to_its_node_and_shows_none():
    c = np.array([1 + 1j, 2 - 1j])
    g = fuselab.trace_cell(CELL, {"np": np, "c": c}).graph
    k = _astype_node(g)
    stored = {g.nodes[k].inputs[0]: c * 2}
    handed: list = []
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        out = eval_nodes(np, g, [k], stored, on_warning=lambda i, w: handed.append((i, w.category)))
    assert [(i, cat) for i, cat in handed] == [(k, np.exceptions.ComplexWarning)]
    assert shown == []
    np.testing.assert_array_equal(out[k], np.array([2.0, 4.0]))
    # without a taker, eval_nodes leaves warnings to Python, as eager code would
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        eval_nodes(np, g, [k], stored)
    assert [w.category for w in shown] == [np.exceptions.ComplexWarning]


def _session(cell: str, array_module: str) -> tuple[Session, object]:
    traced = fuselab.trace_cell(cell, {"np": np, "c": np.array([1 + 1j, 2 - 1j])})
    traced.array_module = array_module     # as a CuPy cell's trace says
    return Session(traced, backend="cpu"), traced


def test_a_cupy_cells_library_warnings_wait_at_their_line():
    session, traced = _session(CELL, "cupy")
    give = session._library_warning()
    assert give is not None
    k = _astype_node(traced.graph)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn_explicit("Casting complex values to real discards the imaginary part",
                               np.exceptions.ComplexWarning, fuselab.interp.__file__, 52)
        warnings.warn_explicit("All-NaN slice encountered", RuntimeWarning, "/x/cupy/_statistics/order.py", 7)
    traced.warnings.pending.clear()    # (the trace's own, NumPy's, are not under test here)
    for w in caught:
        give(k, w)
    pending = traced.warnings.pending
    assert [p[0][0] for p in pending] == [(k, 1, 0), (k, 1, 0)]
    assert pending[0][3] == traced.graph.nodes[k].loc and pending[0][3].line == 2   # fuselab's frame: the cell's line
    assert pending[1][3] == PythonWarning("All-NaN slice encountered", RuntimeWarning,
                                          "/x/cupy/_statistics/order.py", 7)          # CuPy's own line stays
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        traced.warnings.flush()
    assert [(w.category, w.filename, w.lineno) for w in shown] == \
        [(np.exceptions.ComplexWarning, traced.warnings.origin.filename, 2),
         (RuntimeWarning, "/x/cupy/_statistics/order.py", 7)]


def test_a_numpy_cell_takes_no_library_warnings():
    session, _ = _session(CELL, "numpy")
    assert session._library_warning() is None


@pytest.mark.gpu
@pytest.mark.parametrize("time", [False, True])
def test_cupy_library_call_warnings_as_plain_cupy_gives_them(time):
    import cupy as cp
    from fuselab.cell import execute_cell
    c = cp.asarray(np.array([1 + 1j, -1 - 2j, 3j]))
    plain_ns = {"np": cp, "c": c}
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        exec(compile(CELL, "<fuselab-cell>", "exec"), plain_ns)
    ns = {"np": cp, "c": c}
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        execute_cell(ns, CELL, quiet=True, time=time, repeats=3)
    assert [(w.category, w.filename, w.lineno) for w in got] == \
        [(w.category, w.filename, w.lineno) for w in want] == [(np.exceptions.ComplexWarning, "<fuselab-cell>", 2)]
    cp.testing.assert_array_equal(ns["t"], plain_ns["t"])
