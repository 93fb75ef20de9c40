"""tests/test_ops.py's matrix through the Numba backend: every ufunc of the op table over
dtypes and broadcast shapes (0-size and size-1 dimensions), reductions over axes, casts,
weak and strong scalars — traced from NumPy source, planned (auto), compiled and run,
against plain NumPy, through `run_cell` (the magic's path, bindings included). Many ops
share one cell (one fused kernel) to keep compiles few."""
from __future__ import annotations

import numpy as np
import pytest

from numba_util import FULL, SERIAL

from fuselab.cell import run_cell
from fuselab.ops import OPS

from test_ops import DTYPES, SHAPES, UFUNCS, values

# CI's part (FUSELAB_NUMBA_FULL=1: all): 0-size, and (3,1) x (1,4) broadcasting; the
# shared cases (test_numba_cases.py) add (37,5) x (5,) and every other layout
OP_SHAPES = SHAPES if FULL else [SHAPES[1], SHAPES[3]]
REDUCE_DTYPES = DTYPES if FULL else ["bool", "int64", "float16"]
REDUCE_SHAPES = [(4, 5), (1, 3), (3, 1), (0, 3), (2, 3, 4)] if FULL else [(4, 5), (0, 3), (2, 3, 4)]


def _numpy_results(lines: list[str], ns: dict) -> tuple[list[str], dict]:
    """The lines NumPy accepts (a ufunc without a loop for the dtype is left out), and
    its results."""
    kept, want = [], {}
    for line in lines:
        env = dict(ns)
        try:
            with np.errstate(all="ignore"):
                exec(line, env)
        except (TypeError, ValueError):
            continue
        name = line.split(" = ")[0]
        kept.append(line)
        want[name] = np.asarray(env[name])
    return kept, want


@pytest.fixture(autouse=True)
def _serial(monkeypatch):
    """Cells run their kernels without `parallel` here (on the test's thread;
    test_numba_backend.py checks that parallel runs give the same bits)."""
    from fuselab.session import Session
    monkeypatch.setattr(Session, "numba_options", lambda self: SERIAL)


def _check(lines: list[str], ns: dict) -> None:
    """The cell of the lines NumPy accepts, run as %%fuse runs it on the Numba backend:
    every name it binds holds NumPy's value and dtype."""
    kept, want = _numpy_results(lines, ns)
    got = dict(ns)
    session = run_cell(got, "\n".join(kept), backend="numba", time=False, quiet=True)
    assert session.backend == "numba" and session.check.ok, session.check.worst
    for name, w in want.items():
        g = np.asarray(got[name])
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, w.dtype, g.shape, w.shape)
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=name)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-3 if w.dtype == np.float16 else 1e-6, atol=1e-6,
                                       equal_nan=True, err_msg=name)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", range(len(OP_SHAPES)))
def test_every_ufunc(dtype, k):
    shapes = OP_SHAPES[k]
    ns = {"np": np, "a": values(shapes[0], dtype, k), "b": values(shapes[1], dtype, k + 100)}
    if np.dtype(dtype).kind == "i":
        ns["e"] = np.abs(ns["b"]) % 5      # NumPy refuses negative integer powers at run time
    lines = []
    for name in UFUNCS:
        op = OPS[name]
        rhs = "e" if (name == "power" and "e" in ns) else "b"
        lines.append(f"y_{name} = np.{op.xp_name}({'a, ' + rhs if op.arity == 2 else 'a'})")
    _check(lines, ns)


@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
def test_reductions_over_axes(dtype):
    for shape in REDUCE_SHAPES:
        for axis in ([None, 0, -1, (0, 1)] if FULL else [None, -1]):
            ns = {"np": np, "a": values(shape, dtype, 7)}
            lines = [f"y_{r}{'_k' if keep else ''} = np.{r}(a, axis={axis!r}{', keepdims=True' if keep else ''})"
                     for r in ("sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "mean", "var", "std")
                     for keep in (False, True) if not (r.startswith("arg") and isinstance(axis, tuple))]
            _check(lines, ns)


@pytest.mark.parametrize("src", DTYPES)
def test_astype_to_every_dtype(src):
    ns = {"a": values((7,), src, 3)}
    _check([f"y_{dst} = a.astype('{dst}')" for dst in DTYPES], ns)


@pytest.mark.parametrize("dtype", ["int8", "int32", "float16", "float32", "float64", "bool"])
def test_weak_and_strong_scalars(dtype):
    ns = {"np": np, "a": values((5,), dtype, 1)}
    scalars = ["1", "-3", "2.5", "True", "np.float32(2)", "np.int64(3)"]
    _check([f"y_{k} = a * {s} + {s}" for k, s in enumerate(scalars)]
           + [f"w_{k} = np.where(a > 0, a, {s})" for k, s in enumerate(scalars)], ns)
