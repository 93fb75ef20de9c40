"""The cost model's calibration cache and its constants, and a split reduction's
dependent combine phase (cost.reduction_splits, DeviceParams.combine_s), whose split rule
codegen shares (plan/reduce_layout.py). All on the CPU: the calibration cache with a fake
device."""
from __future__ import annotations

import importlib
import json
from types import SimpleNamespace

import numpy as np
import pytest

import fuselab
from fuselab.plan import make_plan
from fuselab.plan.cost import kernel_costs, kernel_space, plan_time, reduction_splits
from fuselab.plan.device import DeviceParams
from fuselab.plan.model import Template

cal = importlib.import_module("fuselab.runtime.calibrate")   # the module, not the function

DEVICE = {"bandwidth_Bps": 4.07e12, "launch_s": 6.6e-6, "flops_per_s": 4.8e13, "transcendental_factor": 9.7,
          "sm_count": 132, "device_name": "NVIDIA H200"}


def test_run_and_step_are_the_fitted_constants_whatever_the_record_says():
    base = DeviceParams()
    # a record written with the dropped host probe (cache version 2): the probe is ignored
    old = DeviceParams.from_dict({**DEVICE, "host_run_s": 12.7e-6, "host_launch_s": 8.6e-6, "version": 2})
    assert (old.run_s, old.step_s) == (base.run_s, base.step_s)
    assert old.launch_s == DEVICE["launch_s"] and old.bandwidth == DEVICE["bandwidth_Bps"]
    # a record's own run_s / step_s still win (the CPU's calibration says 0 outright)
    cpu = DeviceParams.from_dict({**DEVICE, "run_s": 0.0, "step_s": 0.0})
    assert (cpu.run_s, cpu.step_s) == (0.0, 0.0)
    assert DeviceParams.from_dict({**DEVICE, "run_us": 20}).run_s == pytest.approx(20e-6)


@pytest.fixture
def fake_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cal, "_MEMORY", {})
    dev = importlib.import_module("fuselab.runtime.device")
    monkeypatch.setattr(dev, "device_info", lambda *a: SimpleNamespace(name="NVIDIA H200", sm_count=132))
    measured = {"n": 0}

    def measure_device():
        measured["n"] += 1
        return {**DEVICE, "version": cal.CALIBRATION_VERSION}
    monkeypatch.setattr(cal, "measure_device", measure_device)
    return SimpleNamespace(path=tmp_path / "calib-NVIDIA_H200.json", measured=measured, monkeypatch=monkeypatch)


@pytest.mark.parametrize("record", [dict(DEVICE), {**DEVICE, "host_run_s": 1e-5, "host_launch_s": 9e-6, "version": 2}],
                         ids=["version 1", "version 2 with the host probe"])
def test_an_older_cache_is_read_not_measured_again(fake_gpu, record):
    fake_gpu.path.write_text(json.dumps(record))
    data = cal.calibrate()
    assert fake_gpu.measured["n"] == 0 and data["bandwidth_Bps"] == DEVICE["bandwidth_Bps"]
    assert DeviceParams.from_dict(data).run_s == DeviceParams().run_s


def test_a_missing_or_damaged_cache_is_measured_and_written(fake_gpu):
    data = cal.calibrate()
    assert fake_gpu.measured["n"] == 1 and data["version"] == cal.CALIBRATION_VERSION
    assert json.loads(fake_gpu.path.read_text()) == data
    fake_gpu.monkeypatch.setattr(cal, "_MEMORY", {})
    fake_gpu.path.write_text("{ not json")
    assert cal.calibrate() == data and fake_gpu.measured["n"] == 2
    fake_gpu.monkeypatch.setattr(cal, "_MEMORY", {})
    assert cal.calibrate() == data and fake_gpu.measured["n"] == 2     # then read from the cache
    assert cal.calibrate(force=True) == data and fake_gpu.measured["n"] == 3


# ---------------------------------------------------------------------------
# split reductions: the last block's combine
# ---------------------------------------------------------------------------

SHAPES = [("y = x.sum()", (16_000_000,), np.float32), ("y = x.sum(0)", (50559, 32), np.float16),
          ("y = x.sum(1)", (4096, 4096), np.float32), ("y = x.var(0)", (6662, 92), np.float32),
          ("y = x.sum(1)", (20, 60610), np.float16), ("y = x.sum(0)", (8, 1 << 20), np.float32),
          ("y = x.max(1)", (2, 2543420), np.float32), ("y = x.std(1)", (5, 101049), np.float64),
          ("y = x.sum(1)", (1 << 20, 32), np.float32), ("y = x.sum(0)", (1 << 20, 4), np.float64)]


def _reduction(src, shape, dtype):
    g = fuselab.trace_cell(src, {"np": np, "x": np.empty(shape, dtype)}).graph
    plan = make_plan(g, "auto")
    assert [k.space.template for k in plan.kernels] == [Template.REDUCTION]
    return plan


@pytest.mark.parametrize("src,shape,dtype", SHAPES)
def test_reduction_splits_mirror_codegens_heuristic(src, shape, dtype):
    from fuselab.codegen import generate
    from fuselab.codegen.model import CodegenOptions
    from fuselab.plan.analysis import analyse
    from fuselab.plan.cost import _reduced_itemsize, _welford
    from fuselab.plan.kernels import kernel_members
    plan = _reduction(src, shape, dtype)
    an = analyse(plan.graph)
    kern = plan.kernels[0]
    space, mask = kernel_space(an, kern), kernel_members(an, kern)
    code = generate(plan, CodegenOptions(sm_count=132))[0]
    assert reduction_splits(space.shape, space.axes, _reduced_itemsize(an, mask), 132,
                            _welford(an, mask)) == code.config.splits


def test_a_split_reduction_pays_the_combine_once():
    assert DeviceParams().combine_s == 0.0          # off: the searches' bounds do not know it (device.py)
    p = DeviceParams(combine_s=2.5e-6)
    split = _reduction("y = x.sum()", (16_000_000,), np.float32)
    whole = _reduction("y = x.sum(1)", (4096, 4096), np.float32)
    (ks,), (kw,) = kernel_costs(split, p), kernel_costs(whole, p)
    assert ks.combine_s == p.combine_s and kw.combine_s == 0.0
    assert ks.time_s == pytest.approx(p.launch_s + max(ks.memory_s, ks.compute_s, ks.visits_s) + p.combine_s)
    off = DeviceParams(combine_s=0.0)
    assert kernel_costs(split, off)[0].combine_s == 0.0
    assert plan_time(split, p) == pytest.approx(plan_time(split, off) + p.combine_s)
    # the searches' floor: never below launch + bytes / bandwidth
    assert ks.time_s >= p.launch_s + ks.bytes_total / p.bandwidth
    assert DeviceParams.from_dict({**DEVICE, "combine_s": 0}).combine_s == 0.0


def test_shapes_with_few_outputs_split_and_many_do_not():
    assert reduction_splits((16_000_000,), (0,), 4, 132) == 528          # one output, 132 SMs x 4
    assert reduction_splits((4096, 4096), (1,), 4, 132) == 1             # 4096 outputs fill the GPU
    assert reduction_splits((64, 100), (1,), 4, 132) == 1                # too little to split
    assert reduction_splits((100, 1 << 16), (0,), 4, 132) == 1           # columns enough for the GPU
    assert reduction_splits((1 << 20, 8), (0,), 4, 132) > 1              # few columns, many rows
    assert reduction_splits((1 << 20, 8), (0,), 4, 132, welford=True) <= reduction_splits((1 << 20, 8), (0,), 4, 132)
    assert reduction_splits((5,), (), 4, 132) == 1


def test_the_combine_term_takes_reductions_of_any_dtype():
    """Only a variance is Welford's: a complex max (whose reduce rule has no start value
    for complex) is costed with the combine charged, not refused."""
    g = fuselab.trace_cell("r = c.max()\nt = c.min()", {"np": np, "c": np.ones(1 << 20, np.complex128)}).graph
    plan = make_plan(g, "unfused")
    costs = kernel_costs(plan, DeviceParams(combine_s=2.5e-6))
    assert len(costs) == len(plan.kernels) and all(c.time_s > 0 for c in costs)
