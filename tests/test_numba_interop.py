"""Numba functions in a traced cell (fuselab/trace/numba_calls.py): `numba.vectorize`
ufuncs and `@njit` functions are traced through their body with Numba's types, so the
cell fuses across them and binds what plain execution binds: Numba's dtypes (which are
not NumPy's: `0.5 * x` of a float32 is a float64 in Numba), Numba's values, NumPy
scalars where the call gives scalars. Bodies fuselab cannot follow run as Numba compiles
them, at a graph break that says why."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from numba_util import SERIAL, numba

from fuselab.cell import run_cell


@pytest.fixture(autouse=True)
def _serial(monkeypatch):
    from fuselab.session import Session
    monkeypatch.setattr(Session, "numba_options", lambda self: SERIAL)


@numba.vectorize
def gelu(x):
    return 0.5 * x * (1 + math.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


@numba.vectorize(["float32(float32)", "float64(float64)"])
def scaled(x):
    return x * 0.1 + 1


@numba.vectorize
def incr(a):
    return a + 1


@numba.njit
def axpy(a, b):
    return a * b + 1


@numba.vectorize
def through_helper(x, y):
    return axpy(x, y) - np.float32(2)


@numba.njit
def on_arrays(x, y):
    return np.sqrt(np.abs(x)) * y + 1


@numba.vectorize
def clip01(x, lo):
    if x < lo:
        return lo
    elif x > 1:
        return 1
    return max(x, 0.25) if x == x else x


@numba.vectorize
def looped(x):
    s = 0.0
    for _ in range(3):
        s += x
    return s


@numba.njit
def halve(x):
    return x / 2.0


@numba.vectorize
def via_halve(x):
    return halve(x) + 1


@numba.vectorize
def inverse(x):
    return 1.0 / x


def _run(cell: str, ns: dict):
    """The cell under %%fuse (Numba backend) and plainly; both namespaces."""
    want = dict(ns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(cell, want)
    got = dict(ns)
    session = run_cell(got, cell, backend="numba", time=False, quiet=True)
    return session, got, want


def _same(got, want, names, rtol=1e-6):
    for name in names:
        g, w = got[name], want[name]
        assert type(g) is type(w) and g.dtype == w.dtype and np.shape(g) == np.shape(w), \
            (name, type(g), g.dtype, type(w), w.dtype)
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=rtol, atol=1e-12,
                                   equal_nan=True, err_msg=name)


def test_vectorize_and_njit_bodies_fuse_with_numbas_types():
    x = np.linspace(-3, 3, 1001, dtype=np.float32)
    i = np.arange(-5, 6, dtype=np.int32)
    ns = dict(np=np, gelu=gelu, scaled=scaled, incr=incr, through_helper=through_helper, on_arrays=on_arrays,
              x=x, i=i)
    cell = ("a = gelu(x) * 2\n"                 # float32 in, float64 out: 0.5 * x is a float64 to Numba
            "b = scaled(x) + 1\n"               # the loop NumPy picks: f->f for float32,
            "b_i = scaled(i)\n"                 # d->d for int32
            "c = incr(i)\n"                     # int32 + 1 is an int64 to Numba,
            "c_x = incr(x)\n"                   # float32 + 1 a float64
            "d = through_helper(x, 3.0)\n"      # an @njit helper inside the body
            "e = on_arrays(x, 2.0)\n"           # @njit on arrays: np.sqrt(x) * y is float64 for a float y
            "s = incr(x.max())")                # a NumPy scalar in, a NumPy scalar out
    s, got, want = _run(cell, ns)
    assert s.check.ok and not s.traced.breaks
    assert not any(n.op == "opaque" for n in s.plan.graph.nodes)
    names = ["a", "b", "b_i", "c", "c_x", "d", "e", "s"]
    assert [got[k].dtype.name for k in names] == ["float64", "float32", "float64", "int64", "float64", "float64",
                                                  "float64", "float64"]
    _same(got, want, names)
    assert len(s.plan.kernels) <= 4      # a loop over x (a, b, c_x, d, e), one over i, a max and what reads it


def test_branches_merge_by_where_and_loops_run_as_numba_compiles_them():
    x = np.array([-2.0, -0.5, 0.1, 0.3, 0.9, 1.5, np.nan], np.float32)
    ns = dict(np=np, clip01=clip01, looped=looped, x=x)
    s, got, want = _run("y = clip01(x, -1)\nz = looped(x) + 1", ns)
    _same(got, want, "yz")
    (brk,) = s.traced.breaks
    assert "`looped`" in brk.reason and "loops" in brk.reason


def test_numba_raising_where_numpy_does_not_is_left_to_numba():
    """Scalars in, a Python float out (Numba boxes it so): run at a break. And a body
    calling an @njit function with the default error_model='python' (a scalar division
    by zero raises ZeroDivisionError there, NumPy would give inf) is not traced either."""
    ns = dict(np=np, halve=halve, via_halve=via_halve, x=np.ones(4, np.float32))
    s, got, want = _run("y = halve(x.sum())\nz = halve(x)\nw = halve(x[0]) * x\nv = via_halve(x)", ns)
    assert type(got["y"]) is float and got["y"] == want["y"]     # Numba returns a Python float
    _same(got, want, ["z", "w", "v"])
    assert got["w"].dtype == np.float32                           # (a Python float is weak in NEP 50)
    assert any("ZeroDivisionError" in b.reason and "`via_halve`" in b.reason for b in s.traced.breaks)


def test_a_vectorize_defined_in_the_cell_is_its_own_body_not_the_ufunc_of_its_name():
    """A DUFunc reaches the tracer's __array_ufunc__ as itself, named after the user's
    function: `square` here is not np.square."""
    ns = dict(np=np, x=np.linspace(0, 1, 10, dtype=np.float32))
    cell = "import numba\n@numba.vectorize\ndef square(v):\n    return v * 2.0 + 1\ny = square(x) + 1"
    s, got, want = _run(cell, ns)
    _same(got, want, "y")
    assert not s.traced.breaks and got["square"] is not None


def test_floating_point_warnings_are_the_ufuncs():
    ns = dict(np=np, inverse=inverse, x=np.array([0.0, 2.0]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_cell(dict(ns), "y = inverse(x)", backend="numba", time=False, quiet=True)
    assert [str(w.message) for w in caught if w.category is RuntimeWarning] == \
        ["divide by zero encountered in inverse"]
