"""Launch configurations and their autotuner: candidates are correct code (the emulator runs
every one against NumPy), the on-disk cache is reused, keyed by device and fuselab
version, and a corrupt cache file is ignored with a warning. The timing itself runs on
the GPU (marked tests)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import fuselab
from fuselab.codegen import KernelCode, generate, generate_kernel, launch_candidates
from fuselab.codegen.config import ColumnConfig, InnerConfig, PointwiseConfig, RowConfig
from fuselab.interp import run_graph
from fuselab.plan import make_plan
from fuselab.runtime import tune

from cuda_host import EMULATED, HostRunner, needs_cxx
from support.threads import run_in_threads

SOFTMAX = "m = x.max(axis=-1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(axis=-1, keepdims=True)"
CELLS = [
    (SOFTMAX, (6, 700)),
    ("y = x.sum(axis=0)", (600, 64)),
    ("y = x.mean(axis=1)", (50, 4, 64)),
    ("y = x.sum(axis=1)", (3, 9000)),
    ("y = x.max(axis=1)", (300, 40)),
    ("y = 4 * x[1:-1, 1:-1] - x[:-2, 1:-1] - x[2:, 1:-1]", (40, 70)),
    ("y = x * 2 + 1", (1000,)),
    ("y = x.sum(axis=0)", (700, 4)),            # columns a warp covers several rows of
    ("y = x.argmax(axis=0)\nz = x.min(axis=0)", (300, 16)),
    ("y = x.max(axis=1)", (50, 100, 3)),
    ("y = x.mean(axis=1)", (40, 5, 48)),         # few rows: one thread per output too
    (SOFTMAX, (50, 3)),                          # narrow odd rows: 1, 2 or 4 lanes a row
    (SOFTMAX, (40, 7)),
    ("y = x.std(axis=1)", (30, 231, 2)),          # kept runs of 2: fewer rows of warps too
    ("y = x.sum(axis=1)", (20, 100, 4)),
    ("y = x.var(axis=1)", (2200, 70, 2)),         # outputs enough for lanes of the inner strategy
]


def _plan(src, shape, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    traced = fuselab.trace_cell(src, {"np": np, "x": x})
    return make_plan(traced.graph, "auto"), traced.inputs


@needs_cxx
def test_every_candidate_configuration_computes_the_same_result():
    rng = np.random.default_rng(3)
    generated, checks = [], []
    for src, shape in CELLS:
        plan, inputs = _plan(src, shape, rng)
        want = run_graph(plan.graph, inputs)
        for k in range(len(plan.kernels)):
            cands = launch_candidates(plan, k, EMULATED)
            assert cands, src
            for cfg in cands:
                codes = generate(plan, EMULATED, {k: cfg})
                assert codes[k].config.key() == cfg.key(), (src, cfg)
                generated.append((plan, codes))
                checks.append((plan, codes, inputs, want, cfg))
    runner = HostRunner([], generated=generated)
    for plan, codes, inputs, want, cfg in checks:
        got = runner.run_codes(plan, codes, inputs)
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=2e-5, atol=1e-5, err_msg=f"{cfg}\n{plan}")


def test_candidates_start_with_the_heuristic_and_are_distinct():
    rng = np.random.default_rng(4)
    for src, shape in CELLS:
        plan, _ = _plan(src, shape, rng)
        for k in range(len(plan.kernels)):
            cands = launch_candidates(plan, k)
            assert cands[0].why.startswith(("heuristic", "default", "forced"))
            assert len({c.key() for c in cands}) == len(cands)
            assert generate_kernel(plan, k).config.key() == cands[0].key()


def test_short_kept_runs_offer_fewer_rows_of_warps_and_the_inner_strategy():
    """A column reduction whose kept run is 2 elements (a warp covers 32 rows) over 231
    rows: 8 rows of warps are 256 rows of threads; one row of warps is offered too, and
    with outputs enough for lanes (45,176, not 60), the inner strategy."""
    plan, _ = _plan("y = x.std(axis=1)", (30, 231, 2), np.random.default_rng(6))
    cands = launch_candidates(plan, 0)
    assert isinstance(cands[0], ColumnConfig) and cands[0].rows == 8 and cands[0].lanes == 1
    assert [c.rows for c in cands[1:] if isinstance(c, ColumnConfig)] == [1]
    assert not [c for c in cands if isinstance(c, InnerConfig)]
    x = np.empty((22588, 231, 2), np.float32)
    plan = make_plan(fuselab.trace_cell("y = x.std(axis=1)", {"np": np, "x": x}).graph, "auto")
    inner = [(c.mode, c.group) for c in launch_candidates(plan, 0) if isinstance(c, InnerConfig)]
    assert inner == [("lanes", 32), ("lanes", 8)]
    code = generate_kernel(plan, 0, config=launch_candidates(plan, 0)[-1])
    assert code.config.group == 8 and "inner: 8 lanes per output" in code.source


def test_pointwise_choices_round_trip_through_the_cache_file():
    for cfg in (PointwiseConfig(block=256, unroll=1, tables=True, gather=True, why="candidate"),
                PointwiseConfig(block=512, unroll=2, why="candidate")):
        d = tune.config_to_json(cfg)
        assert tune.config_from_json(json.loads(json.dumps(d))).key() == cfg.key()
        assert ("gather" in d) == cfg.gather and ("tables" in d) == cfg.tables   # False: left out, labels as before


def test_the_cache_reuses_a_choice_and_keys_it_by_device_and_version(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    plan, _ = _plan(*CELLS[0], np.random.default_rng(5))
    code = generate_kernel(plan, 0)
    cfg = RowConfig(tier="smem", threads=256, why="candidate")
    key = tune.kernel_key(code, "GPU A", "1.0")
    tune.cache().put(key, cfg, (("tier=warp, threads=32", 2e-5), (cfg.label(), 1e-5)))
    fresh = tune.TuneCache()            # another process reads the file
    got, times = fresh.get(key)
    assert got == cfg and times[1] == (cfg.label(), 1e-5)
    assert fresh.get(tune.kernel_key(code, "GPU B", "1.0")) is None     # another device
    assert fresh.get(tune.kernel_key(code, "GPU A", "1.1")) is None     # another fuselab
    other = generate_kernel(make_plan(_plan("y = x.sum(axis=0)", (600, 64), np.random.default_rng(1))[0].graph), 0)
    assert tune.kernel_key(other, "GPU A", "1.0") != key
    # plan_tuning applies the cached choice without timing anything
    monkeypatch.setattr(tune, "enabled", lambda: True)
    codes, known, pending = tune.plan_tuning(plan, generate(plan), fuselab.codegen.CodegenOptions(), "GPU A", "1.0")
    assert not pending and known[0].source == "cache" and codes[0].config.key() == cfg.key()
    codes, known, pending = tune.plan_tuning(plan, generate(plan), fuselab.codegen.CodegenOptions(), "GPU B", "1.0")
    assert [p.index for p in pending] == [0] and len(pending[0].candidates) > 1


def test_the_code_shown_is_the_code_the_runtime_launches(tmp_path, monkeypatch):
    """launch_codes (what the session shows on the CUDA backend) gives the device's
    options and, once a run has tuned a kernel, its winner; nothing is timed."""
    from fuselab.runtime import launch
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tune, "enabled", lambda: True)
    monkeypatch.setattr(launch, "device_options", lambda o=None: fuselab.codegen.CodegenOptions(sm_count=8))
    monkeypatch.setattr(launch, "_device", lambda: "GPU A")
    plan, _ = _plan(*CELLS[0], np.random.default_rng(6))
    options = fuselab.codegen.CodegenOptions(sm_count=8)
    heuristic = generate(plan, options)
    assert launch.launch_codes(plan) == heuristic                         # not tuned yet
    cfg = RowConfig(tier="smem", threads=256, why="tuned: fastest of 3")
    tune.cache().put(tune.kernel_key(heuristic[0], "GPU A", fuselab.__version__), cfg, ())
    shown = launch.launch_codes(plan)
    assert shown[0].config.key() == cfg.key() and shown[0] is generate(plan, options, {0: cfg})[0]


def test_a_corrupt_cache_is_ignored_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    (tmp_path / "tuning.json").write_text("{not json")
    with pytest.warns(RuntimeWarning, match="ignoring the launch-configuration cache"):
        c = tune.TuneCache()
    assert c.entries == {}
    (tmp_path / "tuning.json").write_text(json.dumps({"schema": 999, "entries": {}}))
    with pytest.warns(RuntimeWarning):
        tune.TuneCache()
    c.put("k", PointwiseConfig(block=256, unroll=4), ())        # and it is replaced by a good one
    assert tune.TuneCache().get("k")[0] == PointwiseConfig(block=256, unroll=4)


def test_the_cache_is_shared_by_threads_and_keeps_other_processes_entries(tmp_path, monkeypatch):
    """Dask's threaded scheduler tunes blocks' kernels side by side: saves from many threads
    while others read lose nothing and never fail; two caches on one file (two worker
    processes) keep each other's choices."""
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    shared, other = tune.TuneCache(), tune.TuneCache()
    other.put("from another process", PointwiseConfig(block=128, unroll=2), ())

    def work(t: int) -> None:
        for i in range(40):
            shared.put(f"t{t}-{i}", PointwiseConfig(block=256, unroll=1 + i % 4), ((f"c{i}", 1e-6 * i),))
            assert shared.get(f"t{t}-{i}")[0].unroll == 1 + i % 4

    run_in_threads(work, 6)
    on_disk = tune.TuneCache()
    assert len(on_disk.entries) == 6 * 40 + 1
    assert on_disk.get("from another process")[0] == PointwiseConfig(block=128, unroll=2)
    assert on_disk.get("t5-39")[0] == PointwiseConfig(block=256, unroll=4)
    assert not list(tmp_path.glob(".tuning-*"))                      # no temporary file left


def test_configs_round_trip_through_json():
    for c in (PointwiseConfig(block=512, unroll=2, why="x"), InnerConfig(mode="block", splits=7, width=4),
              ColumnConfig(width=2, rows=4, splits=3), RowConfig(tier="looped", threads=1024)):
        assert tune.config_from_json(json.loads(json.dumps(tune.config_to_json(c)))) == c


@pytest.mark.gpu
def test_tuning_on_the_gpu_picks_a_candidate_and_is_cached(tmp_path, monkeypatch):
    import cupy
    from fuselab import runtime
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    x = cupy.random.default_rng(0).standard_normal((4096, 2048), dtype=np.float32)
    traced = fuselab.trace_cell(CELLS[0][0], {"np": np, "x": x})
    plan = make_plan(traced.graph, "auto")
    exe = runtime.Executable(plan)
    out = exe.run(traced.inputs)
    assert exe.tuning[0].source == "tuned" and len(exe.tuning[0].times) > 1
    again = runtime.Executable(plan)
    assert again.tuning[0].source == "cache" and again.codes[0].config.key() == exe.codes[0].config.key()
    want = run_graph(plan.graph, traced.inputs, cupy)
    assert runtime.compare(out, want, 1e-5).ok


@pytest.mark.gpu
def test_a_candidate_the_compiler_refuses_is_left_out_of_tuning(tmp_path, monkeypatch):
    """Only the kernels themselves must compile: a tuning candidate that NVRTC refuses
    (a limit its configuration's checks missed) is not timed, and the cell runs."""
    import cupy
    from fuselab import runtime
    from fuselab.codegen.nvrtc import CompileError
    from fuselab.runtime import launch
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    real = launch.compile_kernels
    refused: list[str] = []

    def compile_kernels(codes):
        bad = [c for c in codes if c.config is not None and c.config.key() == victim]
        if bad:
            refused.append(bad[0].config.label())
            raise CompileError(bad[0].name, bad[0].source, "error: refused for the test")
        return real(codes)

    x = cupy.random.default_rng(0).standard_normal((4096, 2048), dtype=np.float32)
    traced = fuselab.trace_cell(CELLS[0][0], {"np": np, "x": x})
    plan = make_plan(traced.graph, "auto")
    from fuselab.runtime.device import device_options
    cands = launch_candidates(plan, 0, device_options(None))
    assert len(cands) > 2
    victim = cands[-1].key()
    monkeypatch.setattr(launch, "compile_kernels", compile_kernels)
    exe = runtime.Executable(plan)
    out = exe.run(traced.inputs)
    assert set(refused) == {cands[-1].label()}
    timed = [label for label, _ in exe.tuning[0].times]
    assert cands[-1].label() not in timed and len(timed) == len(cands) - 1
    assert runtime.compare(out, run_graph(plan.graph, traced.inputs, cupy), 1e-5).ok


@pytest.mark.gpu
def test_threads_sharing_an_executable_tune_once_and_all_compute(tmp_path, monkeypatch):
    """Dask's threaded scheduler (or a GPU worker with several threads) runs one plan's
    executable for many blocks at once: one thread tunes each kernel, the others launch
    it as it stands, and every result is right."""
    import cupy
    from fuselab import runtime
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    blocks = [cupy.random.default_rng(k).standard_normal((2048, 1024), dtype=np.float32) for k in range(6)]
    traced = fuselab.trace_cell(CELLS[0][0], {"np": np, "x": blocks[0]})
    plan = make_plan(traced.graph, "auto")
    exe = runtime.Executable(plan)
    results: dict[int, dict] = {}

    def work(k: int) -> None:
        results[k] = exe.run({"x": blocks[k]})
        cupy.cuda.get_current_stream().synchronize()

    run_in_threads(work, len(blocks))
    assert exe.tuning[0].source == "tuned" and not exe._pending
    for k, x in enumerate(blocks):
        assert runtime.compare(results[k], run_graph(plan.graph, {"x": x}, cupy), 1e-5).ok, k


def test_kernels_to_compile_are_spread_evenly_over_the_compile_threads():
    # A kernel and its tuning candidates: one NVRTC module each on a machine with as many
    # threads (a module of several compiles far slower), grouped on a machine with few.
    from fuselab.runtime.compile import BATCH, _batches
    plan, _ = _plan("y = x.sum(axis=0)", (600, 64), np.random.default_rng(0))
    codes = [generate_kernel(plan, 0, None, c) for c in launch_candidates(plan, 0)]
    n = len(codes)
    assert n >= 3
    for threads in (1, 2, n, 64):
        per = -(-n // threads)
        batches = _batches(codes, per)
        assert sorted(id(c) for b in batches for c in b) == sorted(id(c) for c in codes)
        assert max(len(b) for b in batches) <= min(per, BATCH)
        assert all(len({c.name for c in b}) == len(b) for b in batches)   # names stay distinct in a module
    assert len(_batches(codes, 1)) == n
