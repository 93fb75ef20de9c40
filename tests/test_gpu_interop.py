"""GPU arrays of other libraries as a cell's inputs, on a GPU: PyTorch CUDA tensors, Numba
CUDA device arrays and a bare `__cuda_array_interface__` object run on the CUDA backend
without a copy; results come back as the inputs' kind, inputs as the user's objects, views
on the user's memory. (tests/test_foreign_arrays.py checks the same path without a GPU.)"""
from __future__ import annotations

import numpy as np
import pytest

from fuselab.cell import run_cell

pytestmark = pytest.mark.gpu

CELL = "y = cp.exp(x) * g + 1\nw = x\nv = x[1:]\nm = (x * g).max()\nx += 1"


def _check(ns, host_x, host_g, session, to_host):
    x0 = host_x
    assert session.backend == "cuda" and session.check.ok, session.check.worst
    np.testing.assert_allclose(to_host(ns["y"]), np.exp(x0) * host_g + 1, rtol=1e-5)
    np.testing.assert_allclose(to_host(ns["m"]), (x0 * host_g).max(), rtol=1e-6)
    np.testing.assert_allclose(to_host(ns["x"]), x0 + 1)            # updated in place, in the user's memory
    np.testing.assert_allclose(to_host(ns["v"]), x0[1:] + 1)        # a view of it


def test_torch_tensors_in_torch_tensors_out():
    torch = pytest.importorskip("torch")
    import cupy as cp
    x = torch.linspace(-1, 1, 10_001, device="cuda", dtype=torch.float32)
    g = torch.rand(10_001, device="cuda", dtype=torch.float32)
    host_x, host_g = x.cpu().numpy(), g.cpu().numpy()
    ns = {"cp": cp, "x": x, "g": g}
    s = run_cell(ns, CELL, time=False, quiet=True)
    assert s.traced.inputs["x"].data.ptr == x.data_ptr()          # adopted, not copied
    assert ns["x"] is x and ns["w"] is x
    assert all(isinstance(ns[k], torch.Tensor) and ns[k].is_cuda for k in "yvm")
    assert ns["v"].data_ptr() == x.data_ptr() + 4
    _check(ns, host_x, host_g, s, lambda t: t.cpu().numpy())


def test_numba_device_arrays_in_numba_device_arrays_out():
    cuda = pytest.importorskip("numba.cuda")
    import cupy as cp
    host_x = np.linspace(-1, 1, 10_001, dtype=np.float32)
    host_g = np.random.default_rng(0).random(10_001, dtype=np.float32)
    x, g = cuda.to_device(host_x), cuda.to_device(host_g)
    ns = {"cp": cp, "x": x, "g": g}
    s = run_cell(ns, CELL, time=False, quiet=True)
    assert s.traced.inputs["x"].data.ptr == x.__cuda_array_interface__["data"][0]
    assert ns["x"] is x and ns["w"] is x
    assert all(cuda.is_cuda_array(ns[k]) and type(ns[k]).__module__.startswith("numba.cuda") for k in "yvm")
    _check(ns, host_x, host_g, s, lambda a: np.asarray(a.copy_to_host()))


def test_any_cuda_array_interface_object_runs_without_a_copy():
    import cupy as cp

    class Foreign:
        def __init__(self, a):
            self._a = a

        @property
        def __cuda_array_interface__(self):
            return self._a.__cuda_array_interface__

    host_x = np.linspace(-1, 1, 1001, dtype=np.float32)
    host_g = np.full(1001, 0.5, np.float32)
    xa, ga = cp.asarray(host_x), cp.asarray(host_g)
    x, g = Foreign(xa), Foreign(ga)
    ns = {"cp": cp, "x": x, "g": g}
    s = run_cell(ns, CELL, time=False, quiet=True)
    assert s.traced.inputs["x"].data.ptr == xa.data.ptr and ns["x"] is x
    assert isinstance(ns["y"], cp.ndarray)     # a kind fuselab cannot make: CuPy arrays, which speak the interface
    _check(ns, host_x, host_g, s, lambda a: cp.asnumpy(cp.asarray(a)))
