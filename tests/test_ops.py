"""Every op of the table, traced and executed (unfused and auto plans) against plain NumPy,
over dtypes and broadcast shapes with 0-size and size-1 dimensions."""
from __future__ import annotations

import numpy as np
import pytest

import fuselab
import fuselab.errors
from fuselab.cell import run_cell
from fuselab.ir import verify
from fuselab.ops import OPS, Kind

DTYPES = ["bool", "int8", "uint8", "int32", "int64", "uint32", "float16", "float32", "float64"]
SHAPES = [((5,), (5,)), ((0,), (1,)), ((1,), (4,)), ((3, 1), (1, 4)), ((0, 3), (3,)), ((2, 3), ())]
UFUNCS = sorted(n for n, op in OPS.items() if op.kind is Kind.ELEMWISE and n not in ("where", "astype"))


def values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) > 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -20
        return rng.integers(lo, 20, shape).astype(dt)
    return (rng.standard_normal(shape) * 2).astype(dt)


def compare(source, ns):
    want_env = dict(ns)
    try:
        with np.errstate(all="ignore"):
            exec(source, want_env)
    except (TypeError, ValueError) as e:  # NumPy refuses (no loop for this dtype): so must we
        with pytest.raises(fuselab.errors.TraceError):
            fuselab.trace_cell(source, ns)
        return
    traced = fuselab.trace_cell(source, ns)
    verify(traced.graph)
    for strategy in ("unfused", "auto"):
        got_env = dict(ns)
        with np.errstate(all="ignore"):
            run_cell(got_env, source, backend="cpu", strategy=strategy, quiet=True, time=False)
        got, want = np.asarray(got_env["y"]), np.asarray(want_env["y"])
        assert got.dtype == want.dtype and got.shape == want.shape, (strategy, got.dtype, want.dtype)
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-3 if want.dtype == np.float16 else 1e-6,
                                       atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UFUNCS)
def test_ufunc_over_dtypes_and_shapes(name, dtype):
    op = OPS[name]
    for k, shapes in enumerate(SHAPES):
        ns = {"np": np, "a": values(shapes[0], dtype, k), "b": values(shapes[1], dtype, k + 100)}
        if name == "power" and np.dtype(dtype).kind == "i":
            ns["b"] = np.abs(ns["b"]) % 5  # NumPy refuses negative integer powers at run time
        args = "a, b" if op.arity == 2 else "a"
        compare(f"y = np.{op.xp_name}({args})", ns)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["sum", "prod", "max", "min", "any", "all", "argmax", "argmin",
                                       "mean", "var", "std"])
def test_reductions_over_dtypes_axes_and_shapes(reduction, dtype):
    for shape in [(4, 5), (1, 3), (3, 1), (0, 3), (2, 3, 4)]:
        for axis in [None, 0, -1, (0, 1)]:
            if reduction.startswith("arg") and isinstance(axis, tuple):
                continue
            ns = {"np": np, "a": values(shape, dtype, 7)}
            for keep in (False, True):
                kd = ", keepdims=True" if keep else ""
                compare(f"y = np.{reduction}(a, axis={axis!r}{kd})", ns)


@pytest.mark.parametrize("src, dst", [(s, d) for s in DTYPES for d in DTYPES])
def test_astype(src, dst):
    ns = {"a": values((7,), src, 3)}
    compare(f"y = a.astype('{dst}') ", ns)


@pytest.mark.parametrize("dtype", ["int8", "int32", "float16", "float32", "float64", "bool"])
@pytest.mark.parametrize("scalar", ["1", "-3", "2.5", "True", "np.float32(2)", "np.int64(3)"])
def test_weak_and_strong_scalars(dtype, scalar):
    ns = {"np": np, "a": values((5,), dtype, 1)}
    compare(f"y = a * {scalar} + {scalar}", ns)
    compare(f"y = np.where(a > 0, a, {scalar})", ns)
