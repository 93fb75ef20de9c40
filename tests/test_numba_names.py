"""Identifiers in the Numba backend's generated Python: a notebook's names (`β`), names
that Python reads as another name (NFKC: `ﬁ` is `fi`, `ℌ` is `H`), names that are no
identifier at all (an input named through the API: `a²`, `my-array`), and names of the
templates' own locals and helpers must each give a kernel that compiles and computes what
NumPy computes. Generated identifiers are ASCII, as the CUDA backend's are."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba", reason="the Numba backend's tests need numba (pip install '.[cpu]')")

from numba_util import SERIAL, run_numba  # noqa: E402

from fuselab.cell import run_cell  # noqa: E402
from fuselab.interp import run_graph  # noqa: E402
from fuselab.ir import GraphBuilder  # noqa: E402
from fuselab.numba_backend import generate  # noqa: E402
from fuselab.numba_backend.emit import Names  # noqa: E402
from fuselab.plan import make_plan  # noqa: E402


@pytest.fixture(autouse=True)
def _serial(monkeypatch):
    from fuselab.session import Session
    monkeypatch.setattr(Session, "numba_options", lambda self: SERIAL)


def test_fresh_names_are_ascii_identifiers():
    names = Names()
    got = [names.fresh(n) for n in ("β", "a²", "my-array", "ﬁ", "fi", "ℌ", "H", "1x", "fl_exp_f32", "class", "ix")]
    assert all(n.isidentifier() and n.isascii() for n in got), got
    assert len(set(got)) == len(got), got
    # Python reads identifiers NFKC-normalised: distinct strings must stay distinct names
    import unicodedata
    assert len({unicodedata.normalize("NFKC", n) for n in got}) == len(got), got


@pytest.mark.parametrize("names", [("a²", "b"), ("ﬁ", "fi"), ("ℌ", "H"), ("my-array", "my_array"), ("β", "b")])
def test_api_input_names(names):
    """Inputs named through the API (no cell parses them): each kernel compiles, and two
    names Python would read as one stay two arrays."""
    b = GraphBuilder()
    x = b.input(names[0], (1000,), np.float32)
    y = b.input(names[1], (1000,), np.float32)
    r = b.elemwise("add", [b.elemwise("multiply", [x, b.const(2.0, np.float32)]), y])
    g = b.build([("r", r), ("s", b.reduce("sum", b.elemwise("exp", [r])))])
    rng = np.random.default_rng(0)
    inputs = {names[0]: rng.standard_normal(1000).astype(np.float32),
              names[1]: rng.standard_normal(1000).astype(np.float32)}
    for plan in (make_plan(g, "max"), make_plan(g, "unfused")):
        for code in generate(plan):
            if hasattr(code, "source"):
                compile(code.source, code.name, "exec")
                assert code.source.isascii()
        got = run_numba(plan, inputs)
        want = run_graph(g, inputs, np)
        np.testing.assert_array_equal(got["r"], want["r"])
        np.testing.assert_allclose(got["s"], want["s"], rtol=1e-5)


@pytest.mark.parametrize("setup, cell", [
    ("a = np.arange(10.0)", "β = a * 2\nr = β + 1\n"),
    ("β = np.arange(12.0, dtype=np.float32).reshape(3, 4)", "r = np.exp(β - β.max(axis=1, keepdims=True))\n"),
    ("x = np.linspace(-2, 2, 64 * 130, dtype=np.float32).reshape(130, 64)",
     "acc1 = x.max(axis=1, keepdims=True)\nv1 = np.exp(x - acc1)\nrow_v3 = v1 / v1.sum(axis=1, keepdims=True)\n"),
    ("x = np.linspace(-2, 2, 300 * 64).reshape(300, 64)", "r0 = x - x.mean(axis=0)\nn_r = r0 * 2\nu = n_r.sum(axis=0)\n"),
    ("ix = np.arange(10.0)", "carray = ix * 2\ncfunc = carray + 1\nargs = np.exp(cfunc)\nphase = args + lo\n"),
    ("fl_exp_f32 = np.arange(10.0, dtype=np.float32)", "col_c = np.exp(fl_exp_f32)\nn_c = col_c + 1\n"),
])
def test_cells_with_names_of_the_generated_code(setup, cell):
    ns: dict = {"np": np, "lo": 3.0}
    exec(setup, ns)
    want = dict(ns)
    exec(cell, want)
    got = dict(ns)
    names = [k for k in want if k not in ns and not k.startswith("__")]
    session = run_cell(got, cell, backend="numba", time=False, quiet=True, keep=names)
    assert session.backend == "numba" and session.check.ok, session.check.worst
    for name in names:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, err_msg=name)
