"""CuPy cells without a GPU: a stand-in `cupy` module (NumPy underneath, with CuPy's
behaviour where these tests need it) and arrays marked as CuPy's, so the rules that make
a CuPy cell follow plain CuPy can be checked on the CPU: values at breaks computed by the
cell's module, CuPy's words for errors, CuPy's own warnings kept, the function the user
called run (cupy.random.shuffle), CuPy's argmax dtype, and CuPy's ufunc protocol.
(On the GPU, the fidelity corpus runs all of this with real CuPy arrays.)"""
from __future__ import annotations

import sys
import types
import warnings
import weakref

import numpy as np
import pytest

import fuselab
import fuselab.trace.core as core
from fuselab.trace.core import Tracer


class _Module(types.ModuleType):
    """A module that is NumPy but for what is set on it."""

    def __init__(self, name: str, base: types.ModuleType) -> None:
        super().__init__(name)
        self._base = base

    def __getattr__(self, name: str):
        return getattr(self._base, name)


@pytest.fixture
def fake(monkeypatch):
    """`cupy` as the trace sees it, and `marked` arrays it takes for CuPy's."""
    cp = _Module("cupy", np)
    cp.random = _Module("cupy.random", np.random)
    cp.linalg = _Module("cupy.linalg", np.linalg)
    cp.calls = []

    def shuffle(a):
        cp.calls.append("shuffle")
        a[:] = a[::-1].copy()
    cp.random.shuffle = shuffle

    def nanmax(a, axis=None, out=None, keepdims=False):   # as cupy/_statistics/order.py does
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = np.nanmax(a, axis=axis, out=out, keepdims=keepdims)
        if np.isnan(res).any():
            warnings.warn("All-NaN slice encountered", RuntimeWarning)
        return res
    cp.nanmax = nanmax
    # (weak: a list holding the arrays would be another holder of them, trace/held.py)
    marked: list[weakref.ref] = []
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setattr(core, "is_cupy_array", lambda a: any(a is m() for m in marked))
    cp.marked = marked
    return cp


def _ns(cp, **arrays):
    ns = {"np": cp, **arrays}
    cp.marked.extend(weakref.ref(a) for a in arrays.values())
    return ns


def test_values_at_breaks_are_the_cells_module_even_before_an_input_is_used(fake):
    tr = fuselab.trace_cell("big = np.arange(40.0)\ntotal = 0.0\nfor v in big * 2:\n    total += v",
                            _ns(fake, x=np.arange(3.0)))
    ctx = tr.binder.ctx
    assert ctx.uses_cupy and ctx.evaluator.xp is fake


def test_index_errors_are_cupys_words_in_cupy_cells(fake):
    cell = "try:\n    v = x[100]\nexcept IndexError as err:\n    v = str(err)"
    tr = fuselab.trace_cell(cell, _ns(fake, x=np.arange(3.0)))
    assert tr.bindings["v"] == "Index 100 is out of bounds for axis 0 with size 3"
    tr = fuselab.trace_cell(cell, {"np": np, "x": np.arange(3.0)})
    assert tr.bindings["v"] == "index 100 is out of bounds for axis 0 with size 3"


def test_cupy_integer_array_indexing_is_not_checked_against_numpys_bounds(fake):
    fuselab.trace_cell("y = x[np.array([0, 5])]", _ns(fake, x=np.arange(3.0)))  # CuPy wraps it
    with pytest.raises(fuselab.errors.TraceError, match="index 5 is out of bounds"):
        fuselab.trace_cell("y = x[np.array([0, 5])]", {"np": np, "x": np.arange(3.0)})


def test_the_function_the_cell_called_updates_the_array_once(fake):
    x = np.arange(4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tr = fuselab.trace_cell("np.random.shuffle(x)\ny = x + 0", _ns(fake, x=x))
    assert fake.calls == ["shuffle"]
    assert "x" in tr.bound
    np.testing.assert_array_equal(fuselab.interp.run_graph(tr.graph, tr.inputs)["y"], [3.0, 2.0, 1.0, 0.0])


def test_cupys_own_warnings_are_given_in_cupy_cells(fake):
    tr = fuselab.trace_cell("y = x * np.nan\nw = np.nanmax(y)", _ns(fake, x=np.arange(3.0)))
    assert [p[1] for p in tr.warnings.pending] == ["All-NaN slice encountered"]
    # NumPy's warnings fuselab words itself are NumPy's only: CuPy's mean of nothing is silent
    tr = fuselab.trace_cell("s = e.mean()", _ns(fake, e=np.zeros(0)))
    assert tr.warnings.pending == []


def test_argmax_in_a_cupy_cell_has_cupys_dtype(fake):
    seen = []
    ns = {**_ns(fake, x=np.arange(3.0)), "probe": lambda t: seen.append(t.dtype.char)}
    fuselab.trace_cell("k = x.argmin()\nprobe(k)\nj = np.argmax(x, axis=0)\nprobe(j)", ns)
    assert seen == ["q", "q"]
    seen.clear()
    fuselab.trace_cell("k = x.argmin()\nprobe(k)", {**ns, "np": np, "x": np.arange(3.0)})
    assert seen == [np.dtype(np.intp).char]


class _CupyUfunc:
    """What cupy.ndarray.__add__ calls (`cupy_add`) when the other operand's class is
    cupy.ndarray: it hands the call to an operand's `__cupy_override_elementwise_kernel__`."""

    __name__ = "cupy_add"

    def __call__(self, *args):
        for a in args:
            if hasattr(a, "__cupy_override_elementwise_kernel__"):
                return a.__cupy_override_elementwise_kernel__(self, *args)
        return np.add(*args)


def test_a_concrete_cupy_array_meeting_a_tracer_is_traced(fake):
    ns = {**_ns(fake, x=np.arange(3.0)), "cupy_add": _CupyUfunc()}
    tr = fuselab.trace_cell("y = cupy_add(np.asarray([1, 2, 3]), x)", ns)
    assert "y" in tr.results and isinstance(tr.binder.names["y"], Tracer)
    assert [n.op for n in tr.graph.nodes].count("add") == 1
    got = fuselab.interp.run_graph(tr.graph, tr.inputs)["y"]
    np.testing.assert_array_equal(got, [1.0, 3.0, 5.0])
    # CuPy's code that takes a tracer for an array gets its value (a graph break)
    tr = fuselab.trace_cell("v = (x * 2).__cupy_get_ndarray__()", _ns(fake, x=np.arange(3.0)))
    np.testing.assert_array_equal(tr.bindings["v"], [0.0, 2.0, 4.0])
    # neither exists in a NumPy cell
    ns = {"np": np, "x": np.arange(3.0), "seen": []}
    fuselab.trace_cell("seen.append(hasattr(x, '__cupy_override_elementwise_kernel__'))\n"
                       "seen.append(hasattr(x, '__cupy_get_ndarray__'))", ns)
    assert ns["seen"] == [False, False]
