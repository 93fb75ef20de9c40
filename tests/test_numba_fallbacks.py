"""Cells whose kernels the Numba backend does not compile, or compiles in NumPy's order:
kernels with complex values or zero-size arrays run through NumPy (codegen.numpy_reason),
opaque results that travel as they are, and column sums that add row after row as NumPy's
loop does (reduction.py). Each cell runs as %%fuse runs it (run_cell, backend numba) and
must bind NumPy's values, dtypes and shapes."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba", reason="the Numba backend's tests need numba (pip install '.[cpu]')")

from numba_util import SERIAL  # noqa: E402

from fuselab.cell import run_cell  # noqa: E402


@pytest.fixture(autouse=True)
def _serial(monkeypatch):
    from fuselab.session import Session
    monkeypatch.setattr(Session, "numba_options", lambda self: SERIAL)


def _run(setup: str, cell: str, exact: bool = True, rtol: float = 1e-13) -> dict:
    ns: dict = {"np": np}
    exec(setup, ns)
    want = dict(ns)
    with np.errstate(all="ignore"):
        exec(cell, want)
    got = dict(ns)
    names = [k for k in want if k not in ns and not k.startswith("__")]
    assert names
    session = run_cell(got, cell, backend="numba", time=False, quiet=True, keep=names)
    assert session.backend == "numba" and session.check.ok, session.check.worst
    for name in names:
        w, g = np.asarray(want[name]), np.asarray(got[name])
        assert (g.dtype, g.shape) == (w.dtype, w.shape), (name, g.dtype, w.dtype, g.shape, w.shape)
        if exact:
            np.testing.assert_array_equal(g, w, err_msg=name)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, equal_nan=True, err_msg=name)
    return got


def test_reductions_over_a_zero_size_axis():
    _run("a = np.zeros((3, 0))",
         "r = a.sum(axis=0)\ns = a.sum(axis=1)\nt = a.max(axis=0)\nu = a.prod(axis=1)\nv = (a * 2).min(axis=0)\n")


def test_zero_size_reduction_of_float32_with_an_epilogue():
    _run("a = np.ones((4, 0), np.float32)", "r = a.sum(axis=1) * 2 + 1\ns = np.exp(a).sum(axis=0)\n")


def test_searchsorted_of_a_list():
    _run("a = np.arange(5.0)", "r = np.searchsorted(a, [1.5, 3.0])\ns = r + 1\n")


def test_vecdot():
    _run("a = np.arange(6.0).reshape(2, 3)", "r = np.vecdot(a, a)\n")


def test_complex_reductions():
    _run("c = np.array([1+2j, 3-1j, -2+0.5j])", "r = c.sum()\ns = c.mean()\nt = c.var()\n", exact=False)


def test_complex_max_and_sort():
    _run("c = np.array([1+2j, 3-1j, 3-2j])", "r = c.max()\ns = np.sort(c)\nt = c.min()\n")


def test_complex_kernel_next_to_compiled_kernels():
    _run("c = (np.arange(12) + 1j * np.arange(12)[::-1]).reshape(4, 3).astype(np.complex64)\na = np.arange(4.0)",
         "r = (c * 2).sum(axis=0)\ns = c.max(axis=1)\nt = a * 2 + 1\nu = (a ** 2).sum()\n", exact=False, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_column_sum_adds_rows_in_numpys_order(dtype):
    """NumPy adds the rows one after another for an axis-0 sum of a C array: the bits
    (a sequential float32 sum of 3000 rows is ~3e-6 off an accurate one)."""
    _run(f"a = (np.arange(30000, dtype=np.{dtype}) * 0.01).reshape(3000, 10)",
         "r = a.sum(axis=0)\ns = a.T.sum(axis=1)\nt = a.mean(axis=0)\n")


def test_column_sum_over_a_middle_axis_in_numpys_order():
    _run("a = (np.arange(120000, dtype=np.float32) * 0.01).reshape(4, 3000, 10)",
         "r = a.sum(axis=1)\ns = (a * 2).sum(axis=(0, 1))\n")


def test_float16_column_sum_rounds_each_add():
    """NumPy's float16 add loop rounds to half at each row of a column sum."""
    _run("a = np.random.default_rng(0).random((3000, 10)).astype(np.float16)",
         "r = a.sum(axis=0)\ns = a.mean(axis=0)\nt = (a * np.float16(0.5)).sum(axis=0)\n")
