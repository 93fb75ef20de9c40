"""GPU arrays of other libraries as a cell's inputs (fuselab/trace/foreign.py), without a
GPU: which kind an object is, and the whole cell path with a stand-in kind whose arrays
live in host memory (adopted without a copy as NumPy arrays, given back wrapped). The
real kinds (torch, Numba device arrays, __cuda_array_interface__) run in
tests/test_gpu_interop.py."""
from __future__ import annotations

import numpy as np
import pytest

from fuselab.cell import run_cell
from fuselab.errors import FuselabError
from fuselab.trace import foreign


class FakeDevice:
    """A library's device array: memory it owns, which fuselab may adopt."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a


class OtherDevice(FakeDevice):
    pass


@pytest.fixture()
def fake_kinds(monkeypatch):
    kinds = [foreign.Kind("fake", lambda v: type(v) is FakeDevice, lambda v: v.a, FakeDevice),
             foreign.Kind("other", lambda v: type(v) is OtherDevice, lambda v: v.a, OtherDevice)]
    monkeypatch.setattr(foreign, "KINDS", kinds + foreign.KINDS)
    return kinds


def _obj(module: str, name: str, **attrs):
    return type(name, (), {"__module__": module, **attrs})()


def test_kinds_are_told_apart_without_importing_their_libraries():
    cai = {"__cuda_array_interface__": property(lambda self: {})}
    assert foreign.kind_of(_obj("torch", "Tensor", is_cuda=True, **cai)).name == "torch"
    assert foreign.kind_of(_obj("torch", "Tensor", is_cuda=False)) is None          # a CPU tensor
    assert foreign.kind_of(_obj("numba.cuda.cudadrv.devicearray", "DeviceNDArray", **cai)).name == "numba"
    assert foreign.kind_of(_obj("somelib", "GpuArray", **cai)).name == "cuda_array_interface"
    assert foreign.kind_of(_obj("cupy", "ndarray", **cai)) is None                   # CuPy's own
    dl = {"__dlpack__": lambda self, stream=None: None}
    assert foreign.kind_of(_obj("jaxlib", "Array", __dlpack_device__=lambda self: (2, 0), **dl)).name == "dlpack"
    assert foreign.kind_of(_obj("lib", "HostArray", __dlpack_device__=lambda self: (1, 0), **dl)) is None
    assert foreign.kind_of(np.ones(3)) is None and foreign.kind_of(3.0) is None


def test_results_come_back_as_the_inputs_kind_and_inputs_as_themselves(fake_kinds):
    x = FakeDevice(np.arange(6, dtype=np.float32))
    g = FakeDevice(np.full(6, 2, np.float32))
    ns = {"np": np, "x": x, "g": g}
    cell = "y = np.exp(x) * g\nw = x\nv = x[1:]\nr = v\ns = (x * g).sum()\nx += 1"
    session = run_cell(ns, cell, backend="cpu", time=False, quiet=True)
    assert session.traced.inputs["x"] is x.a                         # adopted, not copied
    assert type(ns["y"]) is FakeDevice and ns["w"] is x and ns["x"] is x
    np.testing.assert_allclose(ns["y"].a, np.exp(np.arange(6, dtype=np.float32)) * 2, rtol=1e-6)
    assert type(ns["v"]) is FakeDevice and ns["r"] is ns["v"]       # one object for an alias
    assert np.shares_memory(ns["v"].a, x.a)                          # a view of the user's memory
    np.testing.assert_array_equal(x.a, np.arange(6, dtype=np.float32) + 1)   # updated in place
    np.testing.assert_array_equal(ns["v"].a, x.a[1:])
    assert isinstance(ns["s"], np.float32)                          # scalars as the array module gives them


def test_inputs_of_several_kinds_give_the_array_modules_results(fake_kinds):
    ns = {"x": FakeDevice(np.ones(4)), "z": OtherDevice(np.ones(4))}
    run_cell(ns, "y = x + z", backend="cpu", time=False, quiet=True)
    assert type(ns["y"]) is np.ndarray


def test_a_failing_cell_leaves_the_users_objects_alone(fake_kinds):
    x = FakeDevice(np.zeros(3))
    ns = {"x": x}
    with pytest.raises(FuselabError):
        run_cell(ns, "x += 1\ny = x @ np.ones(4)", backend="cpu", time=False, quiet=True)
    assert ns.keys() <= {"x", "__warningregistry__"} and ns["x"] is x and not x.a.any()


def test_an_object_that_cannot_be_adopted_is_refused_with_a_reason(monkeypatch):
    def adopt(v):
        raise TypeError("a tensor that requires grad")
    monkeypatch.setattr(foreign, "KINDS", [foreign.Kind("fake", lambda v: type(v) is FakeDevice, adopt, None)])
    with pytest.raises(FuselabError, match="requires grad"):
        run_cell({"x": FakeDevice(np.ones(2))}, "y = x * 2", backend="cpu", time=False, quiet=True)
