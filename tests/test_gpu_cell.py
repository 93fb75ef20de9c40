"""The whole cell path on a GPU: CuPy inputs and cp.* calls, results as CuPy arrays equal
to plain CuPy execution, and NumPy inputs through the CUDA backend."""
from __future__ import annotations

import numpy as np
import pytest

from fuselab.cell import run_cell

pytestmark = pytest.mark.gpu


@pytest.fixture()
def ns():
    import cupy as cp
    rs = cp.random.RandomState(0)
    return {"cp": cp, "np": np,
            "x": rs.rand(100_003, dtype=cp.float32),
            "m": rs.standard_normal((513, 1000), dtype=cp.float32),
            "g": rs.rand(1000, dtype=cp.float32)}


CELLS = [
    "t = x * x + 1.0\ny = cp.exp(t) * 0.5 - cp.sin(x)",
    "p = cp.exp(m - m.max(axis=1, keepdims=True))\np = p / p.sum(axis=1, keepdims=True)",
    "mu = m.mean(-1, keepdims=True)\nva = ((m - mu) ** 2).mean(-1, keepdims=True)\n"
    "y = (m - mu) / cp.sqrt(va + 1e-5) * g + 0.5",
    "y = x / x.sum()",
    "s = (m * m).sum()\nc = m.mean(axis=0)\nk = m.argmax(axis=1)",
    "y = cp.maximum(m[:, :64] @ m[:64, :] + g, 0)",
]


@pytest.mark.parametrize("plan", ["auto", "unfused", "max"])
@pytest.mark.parametrize("cell", CELLS)
def test_cupy_cell_matches_plain_cupy(ns, cell, plan):
    import cupy as cp
    want = dict(ns)
    exec(cell, want)
    session = run_cell(ns, cell, strategy=plan, quiet=True, time=False)
    assert session.backend == "cuda"
    assert session.check.ok, session.check.worst
    for name in session.traced.results:
        got = ns[name]
        assert isinstance(got, cp.ndarray), name
        assert got.dtype == want[name].dtype and got.shape == want[name].shape
        cp.testing.assert_allclose(got, want[name], rtol=2e-5, atol=1e-5)


def test_numpy_inputs_run_on_the_gpu_and_come_back_as_numpy():
    x = np.linspace(0, 1, 4097, dtype=np.float32)
    ns = {"np": np, "x": x}
    session = run_cell(ns, "y = np.tanh(x) * 2 + x.mean()", quiet=True, time=True, repeats=3)
    assert session.backend == "cuda"
    assert isinstance(ns["y"], np.ndarray)
    np.testing.assert_allclose(ns["y"], np.tanh(x) * 2 + x.mean(), rtol=1e-5)
    assert session.measurement is not None


@pytest.mark.parametrize("plan", ["auto", "unfused"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("value", [-0.0, np.inf, -np.inf, np.nan, -65504.0])
def test_zero_d_inputs_reach_the_kernels_bit_for_bit(value, dtype, plan):
    """The GPU fuzzer saw a 0-d float16 -0.0 come back from astype(float64) as +0.0: CuPy
    uploads a 0-d float16 array without its sign (cupy.asarray(np.array(-0.0, np.float16))
    is +0.0 on CuPy 14), fuselab uploads 0-d arrays as one-element arrays. (NaN's sign
    bit and max(-0.0, 0.0) are not defined alike on both sides: not compared.)"""
    x = np.array(value, dtype)
    v = np.array([-0.0, 0.0, 1.5], dtype)
    cell = "a = x.astype(np.float64)\nb = x * v\nc = -x\nd = x.astype(np.float32) + 0"
    want = {"np": np, "x": x, "v": v}
    with np.errstate(all="ignore"):
        exec(cell, want)
    ns = {"np": np, "x": x, "v": v}
    session = run_cell(ns, cell, strategy=plan, quiet=True, time=False)
    assert session.backend == "cuda"
    for name in "abcd":
        got, exp = np.asarray(ns[name]), np.asarray(want[name])
        assert got.dtype == exp.dtype, name
        number = ~np.isnan(exp)
        np.testing.assert_array_equal(np.signbit(got)[number], np.signbit(exp)[number], err_msg=f"{name}: {got} vs {exp}")
        np.testing.assert_array_equal(got, exp, err_msg=name)
