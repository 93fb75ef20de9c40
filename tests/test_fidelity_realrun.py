"""Fidelity of calls the tracer runs for real (trace/realrun.py) and of ufunc calls:
the function gets the arrays plain execution gives it, writeable as they are there, so
its in-place writes, `out=` arguments, errors, returned views and identities are NumPy's,
and the trace sees what it wrote. Also: `out=` into a larger target, `ufunc.at`'s None,
ufuncs' dtype=, complex `**` fast paths, and writes into np.broadcast_to's view.

Bound arrays are compared with their layout and flags too (writeable, strides), which
the corpus's harness does not look at."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("IPython")

from fidelity import FUSE_LINE, Case, Harness, assert_as_plain, differences  # noqa: E402
from fidelity_corpus import SETUP  # noqa: E402


class LayoutHarness(Harness):
    """Also compares strides, contiguity, writeability and ownership of bound arrays."""

    @staticmethod
    def _identity(v, before):
        base = Harness._identity(v, before)
        if isinstance(v, np.ndarray):
            with warnings.catch_warnings():   # (reading broadcast_arrays' flag warns)
                warnings.simplefilter("ignore")
                f = v.flags
                w = f.writeable
            return base + (("strides", v.strides, "C", f.c_contiguous, "W", w, "own", f.owndata),)
        return base


CELLS = [
    # in-place library calls and out= on the user's arrays (ran on read-only views before)
    ("nan_to_num copy False", "a = np.array([np.nan, 1.0, np.inf])", "r = np.nan_to_num(a, copy=False)\nsame = r is a\n"),
    ("byteswap inplace", "a = np.arange(3, dtype=np.int32)", "a.byteswap(inplace=True)\nr = a + 0\n"),
    ("put_along_axis", "a = np.zeros((2, 3))", "np.put_along_axis(a, np.array([[0], [2]]), 5, axis=1)\nr = a.sum()\n"),
    ("cumsum out self", "a = np.arange(5.0)", "np.cumsum(a, out=a)\nr = a * 2\n"),
    ("round out self", "a = np.arange(5.0) / 3", "np.round(a, 2, out=a)\n"),
    ("clip out self", "a = np.arange(6.0)", "np.clip(a, 1, 3, out=a)\n"),
    ("sum out", "a = np.arange(6.0).reshape(2, 3)", "o = np.empty(3)\na.sum(axis=0, out=o)\nr = o * 2\n"),
    ("modf out tuple", "a = np.arange(3.0) + 0.5", "fr = np.empty(3)\nin_ = np.empty(3)\nnp.modf(a, out=(fr, in_))\n"),
    ("divmod out", "a = np.arange(3.0) + 0.5", "q = np.empty(3)\nr = np.empty(3)\nnp.divmod(a, 2, out=(q, r))\n"),
    ("dot out", "A = np.eye(2)", "o = np.empty((2, 2))\nnp.dot(A, A, out=o)\n"),
    ("add casting unsafe out", "a = np.arange(5)\nf = np.linspace(0, 1, 5)", "np.add(a, f, out=a, casting='unsafe')\n"),
    ("computed then written", "a = np.arange(4.0)", "b = a * 2\nnp.nan_to_num(b, copy=False)\nnp.cumsum(b, out=b)\nr = b + 1\n"),
    ("pending read before real write", "a = np.arange(4.0)", "r = a + 1\nnp.cumsum(a, out=a)\ns = a + 1\n"),
    # NumPy's own errors, not "read-only"
    ("out int from float err", "a = np.arange(5)\nf = np.linspace(0, 1, 5)", "np.add(a, f, out=a)\n"),
    ("copyto casting err", "a = np.zeros(4, dtype=int)", "np.copyto(a, np.arange(4.0))\n"),
    # results bound as NumPy makes them: writeable views of the user's arrays, the array itself
    ("split then write", "a = np.arange(6.0)", "p, q = np.split(a, 2)\np += 1\n"),
    ("hsplit write", "a = np.arange(6.0).reshape(2, 3)", "p, q, s = np.hsplit(a, 3)\np[0, 0] = 9\n"),
    ("vsplit writeable", "a = np.arange(6.0).reshape(2, 3)", "p, q = np.vsplit(a, 2)\n"),
    ("split of computed write", "a = np.arange(6.0)", "p, q = np.split(a * 2, 2)\np[0] = -1\n"),
    ("view dtype write", "a = np.arange(4, dtype=np.int32)", "r = a.view(np.uint32)\nr[0] = 7\n"),
    ("rot90 write", "a = np.arange(4.0).reshape(2, 2)", "r = np.rot90(a)\nr[0, 0] = -1\n"),
    ("as_strided write", "a = np.arange(6.0)", "r = np.lib.stride_tricks.as_strided(a, shape=(3, 2), strides=(16, 8))\nr[0, 0] = -1\n"),
    ("require identity", "a = np.arange(3.0)", "r = np.require(a, requirements='C')\n"),
    ("broadcast_arrays flags", "a = np.arange(3.0)", "p, q = np.broadcast_arrays(a, np.zeros((2, 1)))\n"),
    # F: out= into a larger target binds a full array, not a broadcast view
    ("out broadcast target", "a = np.arange(3.0)", "o = np.zeros((2, 3))\nnp.multiply(a, 2, out=o)\n"),
    # J: ufunc.at returns None (no Out[n])
    ("add.at", "a = np.zeros(5, dtype=np.int64)", "np.add.at(a, [0, 0, 1, 3], [1, 2, 3, 4])\n"),
    ("negative.at", "a = np.arange(4.0)", "np.negative.at(a, [1, 3])\n"),
    # D: ufunc dtype= picks NumPy's loop; complex ** fast paths
    ("ufunc dtype", "a = np.arange(3)", "r = np.add(a, 1, dtype=np.float32)\ns = np.true_divide(a, 2, dtype=np.float32)\n"),
    ("complex ** 0.5", "c = np.array([1+2j, 3-1j, -1j, 0.3+0.7j])", "r = c ** 0.5\ns = c ** 2\nt = c ** -1\nu = c ** 2.0\n"),
    ("complex64 ** 0.5", "c = np.array([1+2j, 3-1j, -1j], dtype=np.complex64)", "r = c ** 0.5\n"),
    # N: np.broadcast_to's view is read-only
    ("broadcast_to setitem err", "a = np.arange(3.0)", "r = np.broadcast_to(a, (2, 3))\nr[0, 0] = 1\n"),
    ("broadcast_to inplace err", "a = np.zeros(3)", "r = np.broadcast_to(a, (2, 3))\nr += 1\n"),
]
CASES = [Case(name=n, setup=s, cell=c) for n, s, c in CELLS]


@pytest.fixture(scope="module")
def harness():
    return LayoutHarness()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_real_run_leaves_the_notebook_as_plain_execution(harness, case):
    assert_as_plain(harness, case, SETUP)


def test_a_failing_cell_leaves_arrays_a_real_run_changed_as_they_were():
    """"No variable changed": the user's array a real run wrote into gets its contents back."""
    from fuselab.cell import execute_cell
    from fuselab.errors import FuselabError
    a = np.array([np.nan, 1.0])
    ns = {"np": np, "a": a}
    with pytest.raises(FuselabError):
        execute_cell(ns, "np.nan_to_num(a, copy=False)\np, q = np.split(a, 2)\np += 5\nraise ValueError('x')\n",
                     backend="cpu", quiet=True)
    assert ns["a"] is a and np.isnan(a[0]) and a[1] == 1.0
