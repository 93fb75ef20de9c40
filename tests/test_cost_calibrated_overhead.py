"""The host's per-run and per-launch overhead as a calibrated, per-machine measurement
(fuselab.runtime.calibrate's host probe -> DeviceParams.run_s / step_s), and a split
reduction's dependent combine phase (cost.reduction_splits, DeviceParams.combine_s).
All on the CPU: the probe is run with fake runners and a fake clock, the calibration
cache with a fake device."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import fuselab
from fuselab.plan import make_plan
from fuselab.plan.cost import kernel_costs, kernel_space, plan_time, reduction_splits, report
from fuselab.plan.device import HOST_LAUNCH_REF_S, RUN_SCALE, DeviceParams, host_overheads
from fuselab.plan.model import Template

cal = importlib.import_module("fuselab.runtime.calibrate")   # the module, not the function
BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


# ---------------------------------------------------------------------------
# the probe: host time a run, and each further launch
# ---------------------------------------------------------------------------

class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def runner(self, seconds):
        """A run that costs `seconds` of host time (a number, or a callable giving it)."""
        def run() -> None:
            self.t += seconds() if callable(seconds) else seconds
        return run


def test_host_overheads_from_fake_runs():
    clock = FakeClock()
    one = clock.runner(12.5e-6)                      # one kernel: 12.5 us a run
    chain = clock.runner(12.5e-6 + 3 * 14e-6)        # four kernels: 14 us each further launch
    out = cal.host_overheads(one, chain, n=4, runs=50, batches=5, timer=clock)
    assert out["host_run_s"] == pytest.approx(12.5e-6)
    assert out["host_launch_s"] == pytest.approx(14e-6)


def test_host_overheads_takes_the_median_batch():
    clock = FakeClock()
    calls = {"n": 0}

    def slow_once():      # one batch of the chain disturbed (a collection, another process)
        calls["n"] += 1
        return 1e-3 if 2 * 30 < calls["n"] <= 3 * 30 else 40e-6
    out = cal.host_overheads(clock.runner(10e-6), clock.runner(slow_once), n=3, runs=30, batches=5, timer=clock)
    assert out["host_launch_s"] == pytest.approx(15e-6)


def test_host_overheads_never_negative_and_needs_a_chain():
    clock = FakeClock()
    out = cal.host_overheads(clock.runner(20e-6), clock.runner(18e-6), n=2, runs=10, batches=3, timer=clock)
    assert out["host_launch_s"] == 0.0
    with pytest.raises(ValueError):
        cal.host_overheads(clock.runner(1e-6), clock.runner(1e-6), n=1)


def test_host_probe_plans_are_one_kernel_and_an_unfused_chain():
    one, chain = cal.host_probe_plans()
    assert len(one.kernels) == 1 and len(chain.kernels) == cal.HOST_CHAIN
    assert all(k.space.template is Template.POINTWISE for k in chain.kernels)


# ---------------------------------------------------------------------------
# the model: run_s and step_s from the probe, the constants without it
# ---------------------------------------------------------------------------

DEVICE = {"bandwidth_Bps": 4.07e12, "launch_s": 6.6e-6, "flops_per_s": 4.8e13, "transcendental_factor": 9.7,
          "sm_count": 132, "device_name": "NVIDIA H200"}


def test_params_without_a_probe_keep_the_constants():
    p = DeviceParams.from_dict(DEVICE)
    base = DeviceParams()
    assert (p.run_s, p.step_s) == (base.run_s, base.step_s) == (15e-6, 8e-6)


def test_params_from_the_probe():
    at_ref = DeviceParams.from_dict({**DEVICE, "host_run_s": 12.7e-6, "host_launch_s": HOST_LAUNCH_REF_S})
    assert at_ref.run_s == pytest.approx(15e-6)                       # the reference host: the fitted run_s
    assert at_ref.step_s == pytest.approx(HOST_LAUNCH_REF_S - 6.6e-6)  # a further launch less launch_s
    fast = DeviceParams.from_dict({**DEVICE, "launch_s": 5.86e-6, "host_run_s": 12.3e-6, "host_launch_s": 10.77e-6})
    assert fast.run_s == pytest.approx(15e-6 * 10.77 / 15.0)
    assert fast.step_s == pytest.approx(10.77e-6 - 5.86e-6)
    assert fast.run_s < at_ref.run_s and fast.step_s < at_ref.step_s
    # a wild probe moves run_s no further than RUN_SCALE; step_s never below 0
    wild = DeviceParams.from_dict({**DEVICE, "host_launch_s": 1e-6})
    assert wild.run_s == pytest.approx(15e-6 * RUN_SCALE[0]) and wild.step_s == 0.0
    assert DeviceParams.from_dict({**DEVICE, "host_launch_s": 1e-3}).run_s == pytest.approx(15e-6 * RUN_SCALE[1])
    assert host_overheads(20e-6, 5e-6) == (pytest.approx(15e-6 * 20 / 15), pytest.approx(15e-6))


def test_explicit_run_and_step_win_over_the_probe():
    # the CPU's parameters say 0 outright; a record's own run_s is not overridden either
    cpu = DeviceParams.from_dict({**DEVICE, "host_launch_s": 10e-6, "run_s": 0.0, "step_s": 0.0})
    assert (cpu.run_s, cpu.step_s) == (0.0, 0.0)
    assert DeviceParams.from_dict({**DEVICE, "host_launch_s": 10e-6, "run_us": 20}).run_s == pytest.approx(20e-6)
    # a probe that failed leaves nothing usable: the constants
    for bad in (None, 0, -1.0, float("nan"), "n/a"):
        assert DeviceParams.from_dict({**DEVICE, "host_launch_s": bad}).run_s == 15e-6


def test_report_uses_the_calibrated_host():
    g = fuselab.trace_cell("y = np.exp(x) + 1", {"np": np, "x": np.empty(1024, np.float32)}).graph
    plan = make_plan(g, "unfused")
    slow = DeviceParams.from_dict({**DEVICE, "host_launch_s": 15e-6})
    fast = DeviceParams.from_dict({**DEVICE, "host_launch_s": 9e-6})
    assert report(plan, fast).run_s < report(plan, slow).run_s
    assert report(plan, fast).time_s < report(plan, slow).time_s
    # plan_time, what the searches minimise, leaves the host out
    assert plan_time(plan, fast) == pytest.approx(plan_time(plan, slow))


# ---------------------------------------------------------------------------
# the cache: versioned; old caches completed, failures fall back
# ---------------------------------------------------------------------------

@pytest.fixture
def fake_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cal, "_MEMORY", {})
    dev = importlib.import_module("fuselab.runtime.device")
    monkeypatch.setattr(dev, "device_info", lambda *a: SimpleNamespace(name="NVIDIA H200", sm_count=132))
    probes = {"n": 0}

    def measure_host():
        probes["n"] += 1
        return {"host_run_s": 12e-6 + probes["n"] * 1e-9, "host_launch_s": 11e-6}
    monkeypatch.setattr(cal, "measure_host", measure_host)
    monkeypatch.setattr(cal, "measure_device", lambda: pytest.fail("the device numbers were measured again"))
    return SimpleNamespace(path=tmp_path / "calib-NVIDIA_H200.json", probes=probes, monkeypatch=monkeypatch)


def test_an_old_cache_gets_the_host_probe_once(fake_gpu):
    fake_gpu.path.write_text(json.dumps(DEVICE))                  # version 1: no host probe
    data = cal.calibrate()
    assert fake_gpu.probes["n"] == 1 and data["version"] == cal.CALIBRATION_VERSION
    assert data["bandwidth_Bps"] == DEVICE["bandwidth_Bps"]       # the device numbers kept
    assert json.loads(fake_gpu.path.read_text())["host_launch_s"] == 11e-6
    p = DeviceParams.from_dict(data)
    assert p.step_s == pytest.approx(11e-6 - DEVICE["launch_s"]) and p.run_s == pytest.approx(15e-6 * 11 / 15)
    fake_gpu.monkeypatch.setattr(cal, "_MEMORY", {})
    assert cal.calibrate() == data and fake_gpu.probes["n"] == 1  # a current cache is read, not measured


def test_refresh_host_measures_the_probe_again(fake_gpu):
    fake_gpu.path.write_text(json.dumps(DEVICE))
    first = cal.calibrate()
    again = cal.calibrate(refresh_host=True)
    assert fake_gpu.probes["n"] == 2 and again["host_run_s"] != first["host_run_s"]
    assert {k: v for k, v in again.items() if not k.startswith("host_")} == \
        {k: v for k, v in first.items() if not k.startswith("host_")}
    assert json.loads(fake_gpu.path.read_text())["host_run_s"] == again["host_run_s"]


def test_a_failing_probe_falls_back_to_the_constants(fake_gpu):
    fake_gpu.path.write_text(json.dumps(DEVICE))

    def broken():
        raise RuntimeError("no compiler")
    fake_gpu.monkeypatch.setattr(cal, "measure_host", broken)
    data = cal.calibrate()
    assert "host_launch_s" not in data and "no compiler" in data["host_probe_error"]
    assert data["version"] == cal.CALIBRATION_VERSION                # not retried in every process
    p = DeviceParams.from_dict(data)
    assert (p.run_s, p.step_s) == (15e-6, 8e-6)


def test_upgrade_merges_the_probe():
    out = cal.upgrade(dict(DEVICE), lambda: {"host_run_s": 1e-5, "host_launch_s": 1.2e-5})
    assert out["version"] == cal.CALIBRATION_VERSION and out["host_launch_s"] == 1.2e-5
    assert out["launch_s"] == DEVICE["launch_s"]


# ---------------------------------------------------------------------------
# cost_fit: a sweep's calibration carries the probe into the prediction
# ---------------------------------------------------------------------------

@pytest.fixture
def cost_fit(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("cost_fit")


def _row(cost_fit, calibration):
    g = fuselab.trace_cell("y = np.exp(x) + 1", {"np": np, "x": np.empty(1024, np.float32)}).graph
    return cost_fit.Row("tiny", "fam", "sweep.json", 20e-6, calibration, make_plan(g, "unfused"), False, None)


def test_cost_fit_predicts_with_the_recorded_probe(cost_fit):
    old = _row(cost_fit, dict(DEVICE))
    new = _row(cost_fit, {**DEVICE, "host_run_s": 12e-6, "host_launch_s": 9e-6})
    assert cost_fit.params_for(old).run_s == 15e-6
    p = cost_fit.params_for(new)
    assert p.run_s == pytest.approx(15e-6 * 9 / 15) and p.step_s == pytest.approx(9e-6 - DEVICE["launch_s"])
    assert cost_fit.predict(new) < cost_fit.predict(old)
    assert cost_fit.params_for(new, {"run_s": 20e-6}).run_s == 20e-6      # a fit still overrides it
    assert set(cost_fit.CALIBRATION_KEYS) >= {"host_run_s", "host_launch_s"}


def test_cost_fit_set_adds_a_probe_to_a_file(cost_fit):
    rows = [_row(cost_fit, dict(DEVICE))]
    cost_fit.apply_sets(rows, ["sweep.json:host_run_s=12.3e-6,host_launch_s=10.77e-6"])
    assert rows[0].calibration["host_launch_s"] == 10.77e-6
    with pytest.raises(SystemExit):
        cost_fit.apply_sets(rows, ["sweep.json:run_s=1"])                 # not a calibration key
    with pytest.raises(SystemExit):
        cost_fit.apply_sets(rows, ["other.json:host_run_s=1e-5"])         # no such file


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
    assert DeviceParams().combine_s == 0.0          # off by default (COST_MODEL.md, 2026-12-04)
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
