"""Fidelity leftovers of the red-team corpus, one test per class of difference:

- array-like operands of library calls (`np.dot(a, 2)`, `np.dot(a, [1, 2, 3])`,
  `[1, 1, 1] @ a`) are coerced as NumPy coerces them (a rule's `Aval` parameters);
- `A @= B` updates A in place (np.matmul(A, B, out=A)): A stays the same object;
- `x?` inside a %%fuse cell is a clear UsageError, as `%time` and `!cmd` lines are;
- `type(x)` and `memoryview(x)` of a traced array answer as for NumPy's array;
- new arrays have NumPy's layout when Python sees them and when they are bound: 'K' order
  of element-wise results and copies, `order=` of copies, *_like of a transposed array;
- basic indexing with new axes (`a[None]`, np.atleast_2d) gives them stride 0;
- arrays NumPy makes as views of an array it made inside the call (a reshape that copies,
  an array view of a NumPy scalar, np.tile) own no memory, and np.arange's array does;
- `x.base` is the array owning the memory a view views, as in NumPy;
- IPython's clean-up of cell input applies to the body (a `...` line after the first is a
  prompt, and vanishes), and `In[-1]` is the cell's body while it runs.

The harness here compares strides, contiguity, writeability and ownership of every bound
array too."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("IPython")

from fidelity import FUSE_LINE, Case, Harness, assert_as_plain  # noqa: E402
from fidelity_corpus import SETUP  # noqa: E402

A = "a = np.arange(3.0)"
A23 = "a = np.arange(6.0).reshape(2, 3)"


class LayoutHarness(Harness):
    """The fidelity harness, with every array's memory layout in its identity."""

    @staticmethod
    def _identity(v: Any, before: dict[str, Any]) -> tuple:
        base = Harness._identity(v, before)
        if not isinstance(v, np.ndarray):
            return base
        f = v.flags
        return base + (("strides", v.strides, "C", f.c_contiguous, "F", f.f_contiguous,
                        "writeable", f.writeable, "owndata", f.owndata),)


@pytest.fixture(scope="module")
def harness() -> LayoutHarness:
    return LayoutHarness()


def _check(harness: LayoutHarness, cases: list[Case]) -> None:
    for case in cases:
        assert_as_plain(harness, case, SETUP)


def test_array_like_operands_of_library_calls(harness):
    _check(harness, [
        Case("dot scalar", "r = np.dot(a, 2)\ns = np.dot(3, 4)\nt = np.dot(a, 2.5)\n", A),
        Case("dot list", "r = np.dot(a, [1, 2, 3])\ns = a @ [1, 1, 1]\n", A),
        Case("list matmul", "r = [1, 1, 1] @ a\n", A),
        Case("int8 dot python int", "r = np.dot(a, 2)\n", "a = np.arange(3, dtype=np.int8)"),
        Case("outer and inner with scalars", "r = np.outer(a, 2)\ns = np.inner(a, 2.0)\n", A),
        Case("searchsorted list haystack", "r = np.searchsorted([0.5, 1.5, 2.5], a)\n", A),
    ])


def test_inplace_matmul_keeps_the_array(harness):
    _check(harness, [
        Case("inplace matmul", "A @= np.arange(9.0).reshape(3, 3)\n", "A = np.eye(3)\nB = A"),
        Case("inplace matmul 1-d", "a @= np.ones((3, 3))\nsame = b is a\n", "a = np.arange(3.0)\nb = a"),
        Case("inplace matmul int target", "i @= np.ones((2, 2))\n", "i = np.eye(2, dtype=int)"),
        Case("inplace matmul shape change", "a @= np.ones((3, 3))\n", "a = np.ones((2, 3))\nb = np.ones((3, 2))"),
    ])


def test_help_syntax_is_a_usage_error(harness):
    fused = harness.run(Case("help", "r = a * 2\nr?\n", A), fuse=True, setup=SETUP)
    assert fused.error == "UsageError"
    assert "`r?` is IPython syntax" in fused.error_text


def test_type_and_memoryview_of_traced_arrays(harness):
    _check(harness, [
        Case("type of a result", "t = type(a * 2)\nn = type(a.sum()).__name__\nq = type(a[0] + 1).__name__\n", A),
        Case("type is ndarray", "ok = type(a * 2) is np.ndarray\nk = isinstance(a, type)\n", A),
        Case("class from type", "M = type('M', (), {'x': 1})\nv = M.x\n", A),
        Case("memoryview", "mv = memoryview(a)\nr = mv[0]\nn = memoryview(a * 2).nbytes\n", A),
    ])


def test_new_arrays_have_numpys_layout(harness):
    _check(harness, [
        Case("copy of a transpose is C", "fc = a.T.copy().flags.c_contiguous\nr = a.T.copy()\n", A23),
        Case("ascontiguousarray", "r = np.ascontiguousarray(a.T)\nf = r.flags.c_contiguous\n", A23),
        Case("copy order F", "r = a.copy(order='F')\nst = r.strides\n", A23),
        Case("like of a transpose", "r = np.ones_like(a.T)\ns = np.zeros_like(a.T, order='C')\n", A23),
        Case("K order of element-wise results", "r = a.T * 2\nst = r.strides\ns = np.exp(f) + 1\nu = s.strides\n",
             A23 + "\nf = np.asfortranarray(np.arange(6.0).reshape(2, 3))"),
        Case("astype keeps the order", "r = a.T.astype(np.float32)\nst = r.strides\n", A23),
        Case("copy then update", "r = a.T.copy()\nr += 1\nst = r.strides\n", A23),
    ])


def test_new_axes_have_stride_zero(harness):
    _check(harness, [
        Case("newaxis view", "r = a[None]\nr[0, 1] = -1\n", A),
        Case("newaxis both sides", "t = a[None, :, None]\nn = a[None, None]\n", A),
        Case("atleast_2d", "r = np.atleast_2d(a)\nr[0, 0] = 5\ns = np.atleast_3d(a)\n", A),
        Case("newaxis of a slice", "r = a[None, ::2]\nst = r.strides\n", A),
    ])


def test_views_of_new_arrays_own_no_memory(harness):
    _check(harness, [
        Case("reshape that copies", "r = a.T.reshape(-1)\nr[0] = 100\n", A23),
        Case("reshape order F copies", "r = a.reshape(-1, order='F')\nr[0] = -9\n", A23),
        Case("array views of a scalar", "s = a[0].reshape(1)\nt = a[0][...]\nu = a[0].ravel()\n", A),
        Case("tile", "r = np.tile(a, (2, 1))\nr[0, 0] = 9\ns = np.tile(a, 1)\n", A),
        Case("arange owns", "r = np.arange(6.0)\n"),
    ])


def test_base_is_the_array_owning_the_memory(harness):
    _check(harness, [
        Case("base of views", "v = a[1:]\nok = v.base is a\nok2 = (a + 1).base is None\nw = v[1:]\nok3 = w.base is a\n"
             "ok4 = a.base is None\n", "a = np.arange(6.0)"),
        Case("base of a view of a view", "v = a[1:]\nok = v.base is b\nok1 = a.base is b\nr = a * 2\n"
             "ok2 = r.T.base is r\nok3 = a.T.copy().base is None\n", "b = np.arange(6.0)\na = b[1:]"),
        Case("base after an update", "v = a[1:]\na += 1\nok = v.base is a\ns = a.sum()\nok2 = s.base is None\n",
             "a = np.arange(6.0)"),
    ])


def test_ipython_input_clean_up_applies_to_the_body(harness):
    _check(harness, [
        Case("ellipsis line is a prompt", "r = a * 2\n...\n", A),
        Case("In while the cell runs", "k = In[-1][:5]\n", A),
    ])
