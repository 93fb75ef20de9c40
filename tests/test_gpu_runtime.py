"""The GPU runtime: execute / execute_checked / measure, memory, errors, CUDA graphs,
calibration and the compile cache."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fuselab.ir import GraphBuilder
from fuselab.ops import Aval, OpaqueFn
from fuselab.plan import unfused_plan
from fuselab.plan.model import Template

from graphs import layernorm, one_kernel, softmax
from support.threads import run_in_threads

pytestmark = pytest.mark.gpu


def _chain(n=1 << 20, ops=("exp", "sin", "tanh", "sqrt", "negative")):
    b = GraphBuilder()
    x = b.input("x", (n,), np.float32)
    y = x
    for op in ops:
        y = b.elemwise(op, [y])
    return b.build([("y", y)])


def _x(n=1 << 20):
    return np.random.default_rng(0).uniform(0.1, 1.0, n).astype(np.float32)


def test_execute_returns_cupy_arrays_equal_to_numpy():
    import cupy as cp
    from fuselab import runtime
    from fuselab.interp import run_graph
    g = _chain()
    out = runtime.execute(one_kernel(g, Template.POINTWISE), {"x": _x()})
    assert isinstance(out["y"], cp.ndarray)
    np.testing.assert_allclose(out["y"].get(), run_graph(g, {"x": _x()})["y"], rtol=1e-5)


def test_execute_checked_compares_with_the_unfused_plan():
    from fuselab import runtime
    g = softmax(1000, 1000)
    plan = one_kernel(g, Template.ROW)
    outs, check = runtime.execute_checked(plan, unfused_plan(g), {"x": np.ones((1000, 1000), np.float32)})
    assert check.ok and check.details and outs["y"].shape == (1000, 1000)
    outs, check = runtime.execute_checked(unfused_plan(g), unfused_plan(g), {"x": np.ones((1000, 1000), np.float32)})
    assert check.ok   # the unfused plan itself is compared with eager CuPy


def test_a_wrong_kernel_is_reported_loudly():
    from fuselab import runtime
    from fuselab.codegen import generate
    g = _chain(4096, ("exp",))
    plan = one_kernel(g, Template.POINTWISE)
    (code,) = generate(plan, runtime.device_options())
    broken = dataclasses.replace(code, source=code.source.replace("= exp(", "= expm1("))
    got = runtime.Executable(plan, codes=[broken]).run({"x": _x(4096)})
    check = runtime.compare(got, runtime.execute(unfused_plan(g), {"x": _x(4096)}))
    assert not check.ok and "y:" in check.worst and "outside rtol" in check.worst


def test_measure_times_plan_unfused_eager_and_replay():
    from fuselab import runtime
    g = _chain(4096)
    m = runtime.measure(one_kernel(g, Template.POINTWISE), unfused_plan(g), {"x": _x(4096)}, repeats=10)
    assert m.check.ok
    for t in (m.plan, m.unfused, m.eager, m.replay):
        assert t is not None and t.median_s > 0 and t.repeats >= 3
    assert len(m.plan.per_kernel_s) == 1 and m.plan.per_kernel_s[0][0].startswith("k0_")
    assert m.speedup_vs_unfused > 1.0          # 5 launches against 1
    assert "speedup vs unfused" in m.summary()


def test_intermediates_are_freed_after_their_last_use():
    from fuselab import runtime
    g = _chain(1 << 20)
    nbytes = (1 << 20) * 4
    unfused = runtime.Executable(unfused_plan(g))
    unfused.run({"x": _x()})
    fused = runtime.Executable(one_kernel(g, Template.POINTWISE))
    fused.run({"x": _x()})
    assert fused.peak_bytes == nbytes          # only the output
    assert unfused.peak_bytes == 2 * nbytes    # an intermediate and its successor, never more


def test_cuda_graph_replay_gives_the_same_results():
    import cupy as cp
    from fuselab import runtime
    g = _chain(10_000)
    exe = runtime.Executable(unfused_plan(g))
    env = exe.prepare({"x": _x(10_000)})
    want = exe.run(env=env)["y"]
    replay = runtime.GraphReplay(lambda: exe.run(env=env, release=False))
    replay.outputs["y"].fill(0)
    replay.launch()
    replay.stream.synchronize()
    cp.testing.assert_array_equal(replay.outputs["y"], want)


def test_opaque_nodes_run_through_cupy():
    from fuselab import runtime
    from fuselab.interp import run_graph
    b = GraphBuilder()
    x = b.input("x", (64, 32), np.float32)
    m = b.opaque(OpaqueFn("matmul", lambda xp, a, c: a @ c), [x, b.transpose(x, (1, 0))],
                 Aval((64, 64), np.dtype(np.float32)))
    g = b.build([("y", b.elemwise("tanh", [m]))])
    v = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    got = runtime.execute(unfused_plan(g), {"x": v})["y"].get()
    np.testing.assert_allclose(got, run_graph(g, {"x": v})["y"], rtol=1e-4, atol=1e-5)


def test_row_kernel_beyond_48k_of_shared_memory():
    from fuselab import runtime
    g = layernorm(256, 16384)
    rng = np.random.default_rng(0)
    inputs = {n: rng.standard_normal(g.nodes[i].shape).astype(np.float32)
              for n, i in zip(g.input_names(), g.input_ids)}
    outs, check = runtime.execute_checked(one_kernel(g, Template.ROW), unfused_plan(g), inputs)
    assert check.ok, check.worst


def test_row_kernel_whose_static_and_dynamic_shared_memory_pass_48k_together():
    """A row of 49104 bytes in dynamic shared memory, under 48 KB alone, and the argmax's
    static arrays: the launch needs the opt-in too (GPU fuzzer, seed 850)."""
    import cupy as cp
    from fuselab import runtime
    from fuselab import trace_cell
    from fuselab.codegen import RowConfig, generate, generate_kernel
    from fuselab.interp import run_graph
    from fuselab.plan import make_plan
    x = np.random.default_rng(850).integers(0, 2**32, (2, 12276), dtype=np.uint32)
    traced = trace_cell("v0 = np.argmax(x0, axis=1)\nv1 = np.cosh(x0)", {"np": np, "x0": x})
    plan = make_plan(traced.graph, "max")
    (k,) = [i for i, kern in enumerate(plan.kernels) if kern.template is Template.ROW]
    options = runtime.device_options(None)
    codes = list(generate(plan, options))
    codes[k] = generate_kernel(plan, k, options, RowConfig(tier="smem", threads=512))
    assert 0 < codes[k].shared_mem <= 48 * 1024 and "__shared__" in codes[k].source
    got = runtime.execute(plan, traced.inputs, codes=codes)
    want = run_graph(traced.graph, traced.inputs)
    np.testing.assert_array_equal(cp.asnumpy(got["v0"]), want["v0"])
    np.testing.assert_allclose(cp.asnumpy(got["v1"]), want["v1"], rtol=1e-12)


def test_compile_errors_show_the_numbered_source():
    from fuselab import runtime
    from fuselab.codegen import generate
    g = _chain(64, ("exp",))
    plan = one_kernel(g, Template.POINTWISE)
    (code,) = generate(plan)
    broken = dataclasses.replace(code, source=code.source.replace("= exp(", "= no_such_function("))
    with pytest.raises(runtime.CompileError) as err:
        runtime.Executable(plan, codes=[broken])
    assert "no_such_function" in str(err.value) and " | " in str(err.value)


def test_out_of_memory_is_explained():
    from fuselab import runtime
    b = GraphBuilder()
    x = b.input("x", (1,), np.float32)
    y = b.elemwise("add", [b.broadcast_to(x, (1 << 40,)), b.const(1.0, np.float32)])
    g = b.build([("y", y)])
    with pytest.raises(runtime.FuselabRuntimeError, match="out of GPU memory") as err:
        runtime.execute(one_kernel(g, Template.POINTWISE), {"x": np.ones(1, np.float32)})
    assert "what to do" in str(err.value)


def test_a_refused_launch_is_explained():
    from fuselab import runtime
    from fuselab.codegen import generate
    g = _chain(64, ("exp",))
    plan = one_kernel(g, Template.POINTWISE)
    (code,) = generate(plan)
    bad = dataclasses.replace(code, block=(4096, 1, 1))
    with pytest.raises(runtime.FuselabRuntimeError, match="refused or failed kernel"):
        runtime.Executable(plan, codes=[bad]).run({"x": _x(64)})


def test_compile_cache_makes_a_rerun_cheap(monkeypatch):
    import cupy as cp
    from fuselab import runtime
    g = _chain(4096, ("exp", "cos"))
    plan = one_kernel(g, Template.POINTWISE)
    import fuselab.runtime.compile as compile_module
    x = cp.asarray(_x(4096))
    runtime.execute(plan, {"x": x})
    compiled = []
    real = compile_module._compile_batch
    monkeypatch.setattr(compile_module, "_compile_batch", lambda batch, arch: compiled.append(batch) or real(batch, arch))
    runtime.execute(plan, {"x": x})
    assert compiled == []                     # the re-run compiles nothing
    exe = runtime.Executable(plan)
    assert exe.cache_hits == 1 and all(t > 0 for t in exe.compile_s.values())


def test_calibration_is_measured_once_and_cached(tmp_path, monkeypatch):
    import importlib
    cal = importlib.import_module("fuselab.runtime.calibrate")   # the module, not the function
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cal, "_MEMORY", {})
    data = cal.calibrate()
    assert set(data) >= {"bandwidth_Bps", "launch_s", "flops_per_s", "transcendental_factor", "sm_count",
                         "device_name"}
    assert 1e11 < data["bandwidth_Bps"] < 1e13 and 1e-7 < data["launch_s"] < 1e-4 and data["flops_per_s"] > 1e12
    assert list(tmp_path.glob("calib-*.json"))
    monkeypatch.setattr(cal, "_MEMORY", {})
    monkeypatch.setattr(cal, "measure_device", lambda: pytest.fail("measured again"))
    assert cal.calibrate() == data            # from the JSON file, not measured again


def test_zero_size_and_scalar_outputs():
    from fuselab import runtime
    b = GraphBuilder()
    x = b.input("x", (0, 3), np.float32)
    s = b.reduce("sum", x, axis=0)
    t = b.reduce("sum", x)
    g = b.build([("s", s), ("t", t), ("e", b.elemwise("exp", [x]))])
    out = runtime.execute(unfused_plan(g), {"x": np.zeros((0, 3), np.float32)})
    assert out["s"].get().tolist() == [0, 0, 0] and float(out["t"]) == 0 and out["e"].shape == (0, 3)


def test_time_interleaved_alternates_rounds_and_times_every_contender():
    import cupy as cp
    from fuselab.runtime.timing import time_interleaved
    calls: list[str] = []
    a = cp.ones(1 << 20, cp.float32)

    def fn(label):
        def run():
            calls.append(label)
            cp.multiply(a, 2.0)
        return run
    timed = time_interleaved({"A": fn("A"), "B": fn("B")}, repeats=6, rounds=3, warmup=1,
                             bytes_moved={"A": a.nbytes})
    assert calls[:2] == ["A", "B"]                        # warm-up: each once
    assert calls[2:] == (["A"] * 2 + ["B"] * 2) * 3       # three rounds of two each
    assert timed["A"].repeats == timed["B"].repeats == 6
    assert timed["A"].median_s > 0 and timed["A"].gbps > 0 and timed["B"].bytes_moved == 0


def test_split_reductions_on_two_streams_keep_their_own_scratch():
    """A full reduction's blocks meet in a scratch buffer (partials and an arrival
    counter). Two threads with streams of their own run one executable at once: each
    stream has its own buffer, so overlapping launches never mix partials."""
    import cupy
    from fuselab import runtime
    b = GraphBuilder()
    x = b.input("x", (1 << 22,), np.float32)
    g = b.build([("s", b.reduce("sum", x, axis=None))])
    exe = runtime.Executable(one_kernel(g, Template.REDUCTION), tune=False)
    assert exe.codes[0].scratch_bytes > 0
    inputs = [cupy.full(1 << 22, float(k + 1) / 64, cupy.float32) for k in range(2)]
    got: dict[int, list[float]] = {0: [], 1: []}

    def work(k: int) -> None:
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            outs = [exe.run({"x": inputs[k]})["s"] for _ in range(30)]
            stream.synchronize()
        got[k] = [float(o.get()) for o in outs]

    run_in_threads(work, 2)
    for k in range(2):
        assert got[k] == [float((k + 1) / 64 * (1 << 22))] * 30, k


_CANCELLING = [
    ("t = np.exp(x)\na = t - t.mean()\n", np.full((300, 64), 0.1, np.float32)),
    ("t = np.exp(x)\na = t - t.mean(axis=1, keepdims=True)\n", np.full((300, 64), 0.1, np.float32)),
    ("t = np.exp(x)\na = t - t.mean(axis=0)\n", np.ones((20000, 3))),
    ("a = x.sum(axis=1) + (-x[:, ::-1]).sum(axis=1)\n",
     np.random.default_rng(1).standard_normal((300, 64)).astype(np.float32)),
    ("t = np.exp(x) * 0.1\na = t.var(axis=0)\n", np.full((300, 64), 0.1, np.float32)),
    ("y = 1000 + x\na = y - y.mean(axis=-1, keepdims=True)\n",
     np.random.default_rng(2).uniform(0, 1e-3, (4096, 512)).astype(np.float32)),
]


@pytest.mark.parametrize("strategy", ["auto", "unfused"])
@pytest.mark.parametrize("k", range(len(_CANCELLING)))
def test_values_that_cancel_pass_the_gpu_check(k, strategy):
    """Sums the plan adds in another order than its reference (the unfused plan, or eager
    CuPy): where the result cancels to rounding residue, the check judges it with the
    sums' slack (runtime.measure.judge), and the values are within it of NumPy's."""
    from fuselab.cell import run_cell
    cell, x = _CANCELLING[k]
    ns = {"np": np, "x": x.copy()}
    session = run_cell(ns, cell, backend="cuda", time=False, quiet=True, strategy=strategy)
    assert session.check is not None and session.check.ok, session.check.worst
    want = {}
    exec(cell, {"np": np, "x": x.copy()}, want)
    got = ns["a"].get() if hasattr(ns["a"], "get") else np.asarray(ns["a"])
    scale = float(np.max(np.abs(np.exp(x.astype(np.float64))))) + 1000
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want["a"], np.float64), rtol=0,
                               atol=1e-3 * scale if got.dtype == np.float32 else 1e-9 * scale)
