"""The cost model: device parameters, per-kernel bytes and time, the plan report."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fuselab.ir import GraphBuilder
from fuselab.plan import make_plan, unfused_plan
from fuselab.plan.cost import DeviceParams, report

import support as T
from support import Expr

P = DeviceParams.h200_default()
F32 = 4


def cell(build):
    b = GraphBuilder()
    outs = build(lambda name, shape: Expr(b, b.input(name, shape, np.float32)))
    return b.build([(k, v.i) for k, v in outs.items()])


def test_h200_defaults_are_the_documented_numbers():
    assert P.bandwidth == 4.0e12 and P.launch_s == 4e-6 and P.throughput == 6e13
    assert P.transcendental == 4.0 and P.sm_count == 132


def test_calibration_records_in_several_spellings(tmp_path):
    p = DeviceParams.from_dict({"device": "H200", "copy_bandwidth_GBps": 4300, "launch_us": 3.5,
                                "tflops": 50, "unknown": 1})
    assert p.bandwidth == pytest.approx(4.3e12) and p.launch_s == pytest.approx(3.5e-6)
    assert p.throughput == pytest.approx(5e13) and p.name == "H200" and p.source == "calibration"
    rt = DeviceParams.from_dict({"bandwidth_Bps": 4.2e12, "launch_s": 3e-6, "flops_per_s": 5.9e13,
                                 "transcendental_factor": 16.0, "sm_count": 132,
                                 "device_name": "NVIDIA H200", "measured_at": "today"})
    assert (rt.bandwidth, rt.launch_s, rt.throughput, rt.name) == (4.2e12, 3e-6, 5.9e13, "NVIDIA H200")
    assert rt.transcendental == 4.0     # an expf of 16 FMAs = 32 flops = 8 table flops x 4
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"bandwidth": 3e12, "launch_s": 5e-6}))
    assert DeviceParams.load(one).bandwidth == 3e12
    many = tmp_path / "many.json"
    many.write_text(json.dumps({"NVIDIA H200": {"bandwidth": 4.1e12}, "NVIDIA A100": {"bandwidth": 1.5e12}}))
    a100 = DeviceParams.load(many, "NVIDIA A100")
    assert a100.bandwidth == 1.5e12 and a100.name == "NVIDIA A100"
    with pytest.raises(ValueError, match="holds 2 devices"):
        DeviceParams.load(many)
    with pytest.raises(ValueError, match="positive"):
        DeviceParams.from_dict({"bandwidth": -1})
    assert DeviceParams.from_dict(P.to_dict()) == P      # a round trip keeps everything


def test_fusing_a_chain_saves_the_intermediate_and_a_launch():
    n = 1024
    g = cell(lambda inp: {"y": (inp("x", (n,)).f("exp")) * 2.0})
    fused, base = report(make_plan(g), P), report(unfused_plan(g), P)
    assert (base.launches, base.bytes_total, base.intermediates, base.intermediate_bytes) == (2, 4 * n * F32, 1, n * F32)
    assert (fused.launches, fused.bytes_read, fused.bytes_written) == (1, n * F32, n * F32)
    assert fused.kernels[0].kept_bytes == n * F32          # exp(x) never leaves the chip
    assert fused.intermediate_bytes == 0 and fused.intermediate_bytes_avoided == n * F32
    assert fused.bytes_avoided == 2 * n * F32
    assert fused.time_s == pytest.approx(P.run_s + P.launch_s + 2 * n * F32 / P.bandwidth)
    assert fused.unfused_time_s == pytest.approx(base.time_s)
    # the fixed cost of a run is in both totals; the kernels alone run 1.9x faster fused
    assert (base.time_s - P.run_s) / (fused.time_s - P.run_s) > 1.9 and fused.speedup > 1.1


def test_a_broadcast_operand_is_read_at_its_own_size():
    g = cell(lambda inp: {"y": inp("x", (64, 128)) + inp("b", (128,))})
    (k,) = report(make_plan(g), P).kernels
    assert k.bytes_read == (64 * 128 + 128) * F32


def test_a_kernel_reading_a_slice_reads_only_the_slice():
    g = cell(lambda inp: {"y": inp("x", (1000,))[:10] * 2.0})
    (k,) = report(make_plan(g), P).kernels
    assert k.bytes_read == 10 * F32 and k.bytes_written == 10 * F32


def test_a_step_along_the_last_axis_reads_the_sectors_it_skips():
    """x[:, ::2] of float32 fetches every 32-byte sector of x's rows; x[::2] skips rows."""
    import fuselab
    x = np.zeros((64, 4096), np.float32)
    sums = {}
    for src in ("y = x[:, ::2].sum(axis=1)", "y = x[::2].sum(axis=1)", "y = x[:, ::16].sum(axis=1)"):
        (k,) = report(make_plan(fuselab.trace_cell(src, {"np": np, "x": x}).graph), P).kernels
        sums[src] = k.bytes_read
    assert sums["y = x[:, ::2].sum(axis=1)"] == x.nbytes
    assert sums["y = x[::2].sum(axis=1)"] == x.nbytes // 2
    assert sums["y = x[:, ::16].sum(axis=1)"] == x.nbytes // 2   # 8 floats a sector: every other sector


def test_peak_intermediate_memory_follows_lifetimes():
    n = 256
    def build(inp):
        x = inp("x", (n,))
        a = x.f("exp")
        b = a.f("sin")
        return {"c": a + b, "d": x.f("cos")}
    r = report(unfused_plan(cell(build)), P)
    # unfused order: exp, sin, add (a and b both alive), cos; a and b are intermediates
    assert r.intermediates == 2 and r.intermediate_bytes == 2 * n * F32
    assert r.peak_intermediate_bytes == 2 * n * F32


def test_few_long_rows_make_max_fusion_slower_than_auto():
    g = T.softmax(4, 1 << 20)
    auto, mx = make_plan(g, "auto"), make_plan(g, "max")
    ra, rm = report(auto, P), report(mx, P)
    assert len(mx.kernels) == 1 and mx.kernels[0].template.value == "row"
    assert rm.kernels[0].parallelism == pytest.approx(4 / 132)
    assert len(auto.kernels) > 1 and ra.time_s < rm.time_s / 3


def test_a_row_too_long_for_the_chip_pays_extra_sweeps():
    g = T.softmax(256, 65536)      # 256 KiB rows: looped, max -> sum -> write = 3 sweeps
    plan = make_plan(g, "max")
    (k,) = report(plan, P).kernels
    assert k.extra_bytes == 2 * 256 * 65536 * F32 and k.tier == "row:looped"
    chip = report(make_plan(T.softmax(256, 32768), "max"), P).kernels[0]
    assert chip.extra_bytes == 0 and chip.tier == "row:smem"   # 128 KiB: kept in shared memory
    short = report(make_plan(T.softmax(256 * 16, 2048), "max"), P).kernels[0]
    assert short.extra_bytes == 0


def test_transcendentals_cost_more_than_adds():
    n = 1 << 20
    fast = DeviceParams(bandwidth=1e30)   # compute-bound: only flops count
    e = report(make_plan(cell(lambda inp: {"y": inp("x", (n,)).f("exp")})), fast).kernels[0]
    a = report(make_plan(cell(lambda inp: {"y": inp("x", (n,)) + 1.0})), fast).kernels[0]
    assert e.flops == pytest.approx(8 * 4 * n) and a.flops == pytest.approx(n)
    assert e.time_s > a.time_s and e.bound == "compute"


def test_report_prints_a_table():
    text = str(report(make_plan(T.layernorm(64, 128)), P))
    assert "row" in text and "launches" in text and "avoided vs unfused" in text


def test_a_power_by_a_small_integer_costs_multiplies_and_other_powers_cost_powf():
    from fuselab.plan.analysis import analyse
    p = DeviceParams()
    b = GraphBuilder()
    x = b.input("x", (1024,), np.float32)
    cube = b.elemwise("power", [x, b.const(3, np.float32)])
    frac = b.elemwise("power", [x, b.const(2.5, np.float32)])
    g = b.build([("c", cube), ("f", frac)])
    w = analyse(g).weights(p)
    assert w[cube] == 2.0
    assert w[frac] == 48 * p.transcendental


def test_column_reductions_pay_for_idle_lanes_on_narrow_kept_runs():
    """Lanes of a column reduction cover the contiguous kept run in powers of two (codegen
    reduction.py): 17 kept elements use 17 of 32 lanes, 33 use 33 of 64; runs the lanes
    tile exactly, and reductions over the last axis, lose nothing. The model's time grows
    by the idle share."""
    from fuselab.plan.cost import column_lane_use
    assert column_lane_use((626, 4736, 17), (1,), 4) == 17 / 32
    assert column_lane_use((2048, 1000, 33), (1,), 2) == 33 / 64
    assert column_lane_use((2048, 4096, 8), (1,), 4) == 1.0        # 2 lanes of 4
    assert column_lane_use((4096, 1024), (0,), 4) == 1.0
    assert column_lane_use((64, 1024), (1,), 4) == 1.0             # over the last axis
    assert column_lane_use((100, 3), (0,), 8) == 0.75               # 4 lanes of 1, float64

    import fuselab
    times = {}
    for inner in (16, 17):
        x = np.empty((2000, 1000, inner), np.float32)
        plan = make_plan(fuselab.trace_cell("s = x.sum(axis=1)", {"np": np, "x": x}).graph)
        assert [k.template.value for k in plan.kernels] == ["reduction"]
        times[inner] = report(plan, DeviceParams(run_s=0.0, launch_s=0.0)).time_s
    assert times[17] / times[16] > 1.8 * 17 / 16 * 0.99    # 17 / 32 of the lanes busy


def test_short_kernels_wait_for_python_to_launch_the_next():
    """Python issues a further launch every launch_s + step_s: kernels shorter than that
    leave the device waiting (the run's time is then Python's), long ones hide it, and
    with step_s = 0 a run is the sum of its kernels, as the searches' plan_time."""
    from dataclasses import replace

    from fuselab.plan.cost import kernel_costs, plan_time, run_time
    chain = lambda n: cell(lambda inp: {"y": ((inp("x", (n,)).f("exp")) * 2.0).f("sin") + 1.0})  # noqa: E731
    tiny, big = unfused_plan(chain(256)), unfused_plan(chain(1 << 26))
    p = replace(P, step_s=8e-6)
    for plan in (tiny, big):
        assert run_time(plan, kernel_costs(plan, replace(p, step_s=0.0)), replace(p, step_s=0.0)) == \
            pytest.approx(plan_time(plan, p))
    costs = kernel_costs(tiny, p)
    issue = p.launch_s + p.step_s
    assert len(costs) == 4 and all(c.time_s < issue for c in costs)
    assert run_time(tiny, costs, p) == pytest.approx(3 * issue + costs[-1].time_s)
    rep = report(tiny, p)
    assert rep.time_s == pytest.approx(p.run_s + 3 * issue + costs[-1].time_s)
    assert rep.launch_wait_s == pytest.approx(3 * issue - sum(c.time_s for c in costs[:3]))
    assert "leave the device waiting" in str(rep)
    costs = kernel_costs(big, p)
    assert all(c.time_s > issue for c in costs)
    assert run_time(big, costs, p) == pytest.approx(sum(c.time_s for c in costs))
    # fused, the tiny chain is one launch: fusion saves Python's launches too
    assert report(make_plan(chain(256)), p).speedup > report(make_plan(chain(256)), replace(p, step_s=0.0)).speedup
