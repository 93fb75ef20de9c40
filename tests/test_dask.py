"""%%fuse on Dask arrays: each kernel of the plan runs per block, results are lazy Dask
arrays equal to plain Dask's, on the threaded scheduler and on a LocalCluster with two
worker processes. Every cell runs twice: as plain Python (plain Dask) and through
fuselab; every name the cell binds must hold the same kind of object and the same values.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from support.processes import plain_main

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

from fuselab.cell import run_cell  # noqa: E402
from fuselab.dask.execute import ChunkError, execute  # noqa: E402
from fuselab.dask.runners import InterpRunner  # noqa: E402
from fuselab.errors import TraceError  # noqa: E402

RNG = np.random.default_rng(7)
X = RNG.standard_normal((90, 70)).astype(np.float32)
B = RNG.standard_normal((70,)).astype(np.float32)
COL = RNG.standard_normal((90, 1)).astype(np.float32)
INTS = RNG.integers(-100, 100, (90, 70)).astype(np.int8)


def namespace(chunks=((23, 17))):
    """Dask arrays with irregular chunks whose boundaries differ between operands."""
    return {"np": np, "da": da,
            "x": da.from_array(X, chunks=chunks),
            "b": da.from_array(B, chunks=25),            # column blocks of 25 against x's 17
            "col": da.from_array(COL, chunks=(40, 1)),
            "ints": da.from_array(INTS, chunks=(30, 35)),
            "xs": da.from_array(X, chunks=((10, 0, 50, 30), (35, 35))),   # an empty block
            "x3": da.from_array(X[:2, :5].reshape(2, 1, 5), chunks=(1, 1, 5))}   # blocks of one row


def check(cell, ns=None, numpy_names=(), **options):
    """Run `cell` plainly and under %%fuse; every name must match. Returns the session.
    `numpy_names`: compared with the cell run on NumPy arrays instead, where plain Dask
    departs from NumPy (its flat argmax breaks ties between blocks by block order)."""
    ns = ns or namespace()
    plain = dict(ns)
    exec(cell, plain)
    if numpy_names:
        eager = {k: (v.compute() if isinstance(v, da.Array) else v) for k, v in ns.items()}
        exec(cell, eager)
        plain.update({k: da.from_array(eager[k]) if isinstance(plain[k], da.Array) else eager[k]
                      for k in numpy_names})
    session = run_cell(ns, cell, quiet=True, time=False, **options)
    fused_away = set(session.traced.fused_away)
    for k, want in plain.items():
        if k == "__builtins__" or k in fused_away:
            continue
        got = ns[k]
        assert type(got) is type(want), (k, type(got), type(want))
        if isinstance(want, da.Array):
            assert got.shape == want.shape and got.dtype == want.dtype, k
            g, w = dask.compute(got, want)
        elif isinstance(want, (np.ndarray, np.generic)):
            g, w = got, want
        else:
            continue
        assert np.asarray(g).dtype == np.asarray(w).dtype, k
        if np.asarray(w).dtype.kind == "f":  # tolerance for the order of reductions only
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5 * max(1.0, float(np.nanmax(np.abs(w), initial=0))),
                                       err_msg=k)
        else:
            np.testing.assert_array_equal(g, w, err_msg=k)
    return session


CELLS = {
    "chain": "y = np.sqrt(np.abs((x * 1.5 + 0.25) ** 2 - 0.5)) * 0.75 + 1.0",
    "broadcasts": "y = x * b + col\nz = np.exp(col) - b",
    "dask functions": "y = da.exp(x) + da.sin(x).sum(axis=0)",
    "transposed intermediate": "t = x * 2\ny = t.T + 1",
    "softmax": "m = x.max(axis=1, keepdims=True)\ne = np.exp(x - m)\np = e / e.sum(axis=1, keepdims=True)",
    "layernorm rows kept": "mu = x.mean(axis=-1, keepdims=True)\nv = ((x - mu) ** 2).mean(axis=-1)\n"
                           "y = (x - mu) / np.sqrt(v[:, None] + 1e-5) * b",
    "full reductions": "s = (x * 2).sum()\nm = x.mean()\nv = x.var(ddof=1)\nhi = np.abs(x).max()\n"
                       "a = x.argmax()\nlo = x.argmin()",
    "axis reductions": "s = x.sum(axis=0)\nm = x.mean(axis=1)\nsd = x.std(axis=0)\nhi = x.max(axis=0, keepdims=True)\n"
                       "a = x.argmax(axis=0)\nc = x.argmin(axis=1)\np = (x > 0).any(axis=1)",
    "integer reductions": "s = ints.sum()\nt = ints.sum(axis=1)\nq = ints.max(axis=0)\nr = ints.argmax()",
    "epilogue": "n = np.sqrt((x * x).sum(axis=1)) + 1\nz = x / n[:, None]",
    "opaque": "y = (x @ x.T) + 1\nz = y.sum(axis=1)\nc = np.concatenate([x, x * 2], axis=0).max(axis=0)",
    "empty block": "y = xs * 2 + 1\nm = xs.max(axis=0)\na = xs.argmax(axis=0)\nv = xs.var(axis=0)\ns = xs.sum()",
    "compute inside": "t = x * 2 + 1\nv = t.sum().compute()\ny = t / v",
    "graph break": "t = x * 2\nif t.max() > 0:\n    y = t + 1\nelse:\n    y = t - 1",
    "mixed numpy": "w = np.ones(70, np.float32) * 2\ny = x + w\ns = w.sum()",
    "rebinding in place": "z = x\nz += 1\nw = z * 2",
    "dask methods": "c = (x + 1).chunks\nr = (x * 2).rechunk((45, 70))\ny = r + 1\nn = x.npartitions\n"
                    "p = (x - 1).persist()",
    # NumPy's conversions compute a Dask array into a NumPy one; copies stay lazy
    "conversions": "a = np.asarray(x)\nb = np.array(x * 2, dtype=np.float64)\nc = np.copy(x)\nd = x.copy()\n"
                   "e = (x + 1).flatten()\nf = np.ascontiguousarray(x.T)\ng = np.asarray(x).sum()\n"
                   "h = np.asarray(x, dtype=np.int8) + 1\nk = x.ravel() * 2",
    "0-d beside blocks": "s = x.sum()\nt = s > 0\ny = np.where(t, s, x)",
    "one-row blocks": "m = x3.max(axis=2, keepdims=True)\ny = np.exp(x3 - m)\na = x3.argmin(axis=2)",
}


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes, one thread each; closed (and its processes gone) after."""
    distributed = pytest.importorskip("distributed")
    # plain_main: an IPython shell of an earlier test leaves a __main__ that spawning (the
    # workers, and the nanny restarting a killed one) cannot read
    with plain_main(), distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                dashboard_address=None, silence_logs=logging.ERROR) as c, \
            distributed.Client(c) as client:
        yield client


# where plain Dask departs from NumPy, the cell run on NumPy arrays is the oracle: its flat
# argmax breaks ties by block order, and max / argmax over an empty block raise
NUMPY_NAMES = {"integer reductions": ("r",), "empty block": ("m", "a")}


@pytest.mark.parametrize("name", list(CELLS))
def test_cells_threads(name):
    with dask.config.set(scheduler="threads"):
        check(CELLS[name], numpy_names=NUMPY_NAMES.get(name, ()))


def test_flat_argmax_ties_across_blocks_follow_numpy_not_dask():
    a = np.zeros((4, 4), np.int8)
    a[0, 3] = a[1, 0] = 1
    ns = {"np": np, "a": da.from_array(a, chunks=2)}
    run_cell(ns, "i = a.argmax()", quiet=True, time=False)
    assert ns["i"].compute() == 3 == a.argmax() != da.from_array(a, chunks=2).argmax().compute()


@pytest.mark.parametrize("name", ["chain", "broadcasts", "softmax", "full reductions", "axis reductions",
                                  "opaque", "empty block", "compute inside"])
def test_cells_distributed(cluster, name):
    check(CELLS[name], numpy_names=NUMPY_NAMES.get(name, ()))


def test_numpy_values_of_a_dask_kernel_stay_numpy():
    s = check("w = np.ones((90, 70), np.float32) * 2\nt = (x * w).sum()", keep=("w",))
    (k,) = s.plan.kernels   # w is stored by the kernel that reduces the Dask array
    assert set(k.outputs) == s.graph.output_ids and len(k.outputs) == 2


def test_kernels_run_per_block_with_fewer_tasks():
    s = check(CELLS["chain"])
    (k,) = s.dask_run.kernels
    assert k.how == "blockwise" and k.grid == (4, 5)   # 90x70 in blocks of 23x17
    info = s.dask_info()
    assert info.fused_tasks == info.plain_tasks   # Dask fuses an elementwise chain's tasks too
    assert "tasks:" in s.summary() and "blocks of" in s.summary()
    rows = check(CELLS["softmax"], namespace(chunks=(20, 70))).dask_info()
    assert rows.fused_tasks * 3 < rows.plain_tasks   # its reductions and broadcasts are tasks


def test_task_count_leaves_out_computed_blocks_and_renames():
    from fuselab.dask.stats import task_count
    x = da.from_array(X, chunks=(23, 17))                 # 4 x 5 blocks
    with dask.config.set(scheduler="threads"):
        held = x.persist()                                # its blocks are data now, not tasks
    assert task_count([x + 1]) == 20                      # from_array and add fused per block
    assert task_count([held + 1]) == 20
    assert task_count([held]) == 0


def test_row_kernel_rechunks_to_whole_rows_and_says_so():
    s = check(CELLS["softmax"])
    (r,) = s.dask_run.rechunks
    assert r.before[1] == (17, 17, 17, 17, 2) and r.after[1] == (70,)
    assert r.nbytes == X.nbytes and r.tasks > 0
    assert "whole rows" in s.dask_run.kernels[0].how and "rechunk" in s.summary()


def test_row_kernel_on_whole_rows_needs_no_rechunk():
    s = check(CELLS["softmax"], namespace(chunks=(20, 70)))
    assert s.dask_run.rechunks == ()


def test_a_row_kernel_along_axis_0_keeps_that_axis_whole():
    """x - x.mean(0) as one row kernel (rows along a strided axis): every block holds
    whole columns, and the per-row results line up with the other axis's blocks."""
    cell = "m = x.mean(axis=0)\nz = ((x - m) ** 2).sum(axis=0)\nc = x - x.max(axis=0)"
    x = RNG.standard_normal((6, 40000)).astype(np.float32)
    s = check(cell, {"np": np, "da": da, "x": da.from_array(x, chunks=(4, 15000))}, strategy="max")
    assert any(k.template.value == "row" and k.space.axes == (0,) for k in s.plan.kernels)
    assert all(r.after[0] == (6,) for r in s.dask_run.rechunks) and s.dask_run.rechunks


def test_reduction_runs_as_partial_states_and_a_tree():
    s = check("s = (x * x).sum(axis=0)")
    assert "partial reductions" in s.dask_run.kernels[0].how
    assert len(s.plan.kernels) == 1


def test_argmax_ties_and_nan_follow_numpy():
    v = np.array([[1, 5, 5, 0], [np.nan, 2, np.nan, 9], [3, 3, 3, 3]], np.float64)
    ns = {"np": np, "x": da.from_array(v, chunks=(2, 1))}
    check("a = x.argmax()\nb = x.argmax(axis=1)\nc = x.argmin(axis=0)\nm = x.max(axis=1)", ns)


def test_results_are_lazy_until_computed():
    calls = []

    def counting(block):
        calls.append(block.shape)
        return block

    ns = namespace()
    ns["x"] = ns["x"].map_blocks(counting, dtype=np.float32)
    run_cell(ns, CELLS["chain"], quiet=True, time=False)
    assert calls == [] or all(0 in c for c in calls)   # meta probes only; no block computed
    assert isinstance(ns["y"], da.Array)


def test_unchunkable_kernel_is_cut_by_the_auto_plan_and_refused_when_forced():
    cell = "t = x * 2\ny = t[1:] - t[:-1]"
    s = check(cell)
    assert len(s.plan.kernels) == 2
    forced = s.plan.fuse(("k", 0), ("k", 1))
    with pytest.raises(ChunkError) as e:
        execute(forced, s.traced.inputs, InterpRunner())
    assert "line 2" in str(e.value) and "session.split" in str(e.value)


def test_timing_against_plain_dask():
    ns = namespace(chunks=(20, 70))
    s = run_cell(ns, CELLS["softmax"], quiet=True, time=True)
    m = s.measurement
    assert m.check.ok and m.fused_s > 0 and m.plain_s > 0 and m.fused_tasks < m.plain_tasks
    assert "threads" in m.scheduler or "distributed" in m.scheduler


def _slow_identity(block):
    time.sleep(0.15)
    return block


def test_worker_killed_mid_compute_is_retried(cluster):
    """A worker process dies while the cell's `.compute()` runs: Dask recomputes its tasks
    on the other worker, and the cell binds what plain execution binds."""
    ns = namespace(chunks=(15, 70))
    ns["slow"] = _slow_identity
    cell = "y = x.map_blocks(slow, dtype=np.float32)\nz = np.exp(y * 0.5) + 1\ntotal = z.sum().compute()"
    workers = list(cluster.scheduler_info()["workers"])
    pids = cluster.run(os.getpid)
    victim = workers[0]

    def kill_when_busy():
        deadline = time.time() + 20
        while time.time() < deadline:
            busy = cluster.processing()
            if busy.get(victim):
                os.kill(pids[victim], signal.SIGKILL)
                killed.append(victim)
                return
            time.sleep(0.02)

    killed: list[str] = []
    t = threading.Thread(target=kill_when_busy)
    t.start()
    run_cell(ns, cell, quiet=True, time=False)
    t.join()
    assert killed, "the worker was never seen busy"
    want = np.exp(X * np.float32(0.5)) + np.float32(1)
    np.testing.assert_allclose(ns["total"], want.sum(dtype=np.float32), rtol=1e-5)
    assert isinstance(ns["z"], da.Array) and isinstance(ns["total"], np.float32)
    cluster.wait_for_workers(2, timeout=30)   # the nanny restarts it for the next tests


def _failing(block):
    raise ValueError("disk on fire")


def test_error_while_computing_leaves_the_namespace_unchanged(cluster):
    ns = namespace()
    ns["bad"] = _failing
    before = dict(ns)
    with pytest.raises(TraceError) as e:   # the compute runs while tracing (a graph break)
        run_cell(ns, "y = x * 2\nz = x.map_blocks(bad, dtype=np.float32)\ntotal = (z + y).sum().compute()",
                 quiet=True, time=False)
    assert "disk on fire" in str(e.value)
    mine = {k for k in ns if not k.startswith("__")}   # (warnings keep their registry, as plain)
    assert mine == before.keys() and all(ns[k] is before[k] for k in mine)


def test_fuselab_works_without_dask():
    code = ("import sys; sys.modules['dask'] = None; sys.modules['dask.array'] = None\n"
            "import numpy as np, fuselab\nfrom fuselab.cell import run_cell\n"
            "ns = {'np': np, 'x': np.arange(6.0)}\nrun_cell(ns, 'y = x * 2 + 1', quiet=True, time=False)\n"
            "assert (ns['y'] == np.arange(6.0) * 2 + 1).all(); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["chain", "broadcasts", "softmax", "full reductions", "axis reductions",
                                  "empty block", "epilogue"])
def test_cells_cupy_chunks(name):
    import cupy
    ns = {k: (v.map_blocks(cupy.asarray) if isinstance(v, da.Array) else v) for k, v in namespace().items()}
    plain = dict(ns)
    exec(CELLS[name], plain)
    if name in NUMPY_NAMES:  # where plain Dask cannot (max / argmax over an empty CuPy block raise)
        eager = {k: (v.compute() if isinstance(v, da.Array) else v) for k, v in namespace().items()}
        exec(CELLS[name], eager)
        plain.update({k: da.from_array(cupy.asarray(eager[k])) for k in NUMPY_NAMES[name]})
    s = run_cell(ns, CELLS[name], quiet=True, time=False)
    assert s.dask_run.runner == "cuda"
    for k, want in plain.items():
        if isinstance(want, da.Array) and k not in s.traced.fused_away:
            g, w = dask.compute(ns[k], want)
            np.testing.assert_allclose(cupy.asnumpy(g), cupy.asnumpy(w), rtol=2e-5, atol=2e-4, err_msg=k)


def test_magic_binds_lazy_results_and_shows_the_dask_panel():
    IPython = pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    ip = InteractiveShell.instance()   # shared with other test modules: left as found
    ip.run_line_magic("load_ext", "fuselab")
    if "_oh" not in ip.user_ns:   # another module cleared the shared shell's namespace
        ip.init_user_ns()
    saved = dict(ip.user_ns)
    ip.user_ns.update(namespace(chunks=(20, 35)))
    try:
        r = ip.run_cell("%%fuse --static -o s\n" + CELLS["softmax"] + "\np", store_history=False)
        assert r.error_in_exec is None and isinstance(r.result, da.Array) and r.result is ip.user_ns["p"]
        s = ip.user_ns["s"]
        assert s.backend == "dask" and s.measurement.check.ok
        from fuselab.explorer.static import static_html
        html = static_html(s)
        assert "Tasks after Dask's optimisation" in html and "Rechunks" in html and "Measured" in html
    finally:
        ip.user_ns.clear()
        ip.user_ns.update(saved)


def test_block_programs_compile_as_cuda():
    """The CUDA runner's kernels: every block program of these cells generates CUDA that
    NVRTC compiles (here, without a GPU; the GPU tests run them)."""
    from codegen_util import nvrtc_compile
    from fuselab.codegen import CodegenOptions, generate
    from fuselab.dask.program import PROGRAMS
    from fuselab.codegen.nvrtc import available
    ok, why = available()
    if not ok:
        pytest.skip(f"needs NVRTC: {why}")
    PROGRAMS._cache.clear()
    with dask.config.set(scheduler="sync"):  # in this process (not a cluster's workers)
        for name in ("broadcasts", "softmax", "layernorm rows kept", "full reductions", "axis reductions",
                     "epilogue", "empty block"):
            check(CELLS[name], numpy_names=NUMPY_NAMES.get(name, ()))
    codes = [c for plan, _ in list(PROGRAMS._cache.values()) for c in generate(plan, CodegenOptions())]
    assert len(codes) > 20
    nvrtc_compile(codes)


def test_each_runner_runs_its_own_executable_of_a_plan(monkeypatch):
    """The planner hands identical cells the same Plan object, so one process may run a plan
    with two runners (a NumPy-chunk cell, then the same cell on CuPy chunks): each must use
    its own executable. A cache keyed by the plan alone gave CuPy blocks the Numba kernels."""
    pytest.importorskip("numba")
    import fuselab.runtime.launch as launch
    from fuselab.dask.runners import CudaRunner, NumbaRunner
    from fuselab.plan import make_plan
    from fuselab.trace import trace_cell

    class FakeCudaExecutable:
        def __init__(self, plan, codes, options):
            pass

        def run(self, inputs):
            return {"y": "run by the CUDA executable"}

    monkeypatch.setattr(launch, "Executable", FakeCudaExecutable)
    x = np.arange(6.0)
    plan = make_plan(trace_cell("y = x * 2", {"np": np, "x": x}).graph)
    np.testing.assert_array_equal(NumbaRunner().run(plan, {"x": x})["y"], x * 2)
    assert CudaRunner().run(plan, {"x": x})["y"] == "run by the CUDA executable"


# Dask's reshape depends on the chunks (a merge or split of whole chunks only; none of a
# 0-length chunked axis): plain Dask refuses the others at the line, where the cell can
# catch the error. The graph knows no chunks, so the trace asks the lazy value.
RESHAPES = [((4, 5), ((2, 2), (1, 1, 3)), "(x * 2).reshape(5, -1)"),
            ((6, 4), ((1, 5), (4,)), "(x[::-1] - 1).reshape(3, 8) + 1"),
            ((0, 5), ((0,), (2, 3)), "x.T.reshape(-1)"),
            ((4, 0), ((2, 2), (0,)), "np.reshape(x[1:], -1)")]


@pytest.mark.parametrize("shape,chunks,expr", RESHAPES)
def test_a_reshape_dask_refuses_fails_at_its_line_as_in_plain_dask(shape, chunks, expr):
    x = da.from_array(np.arange(float(np.prod(shape))).reshape(shape), chunks=chunks)
    cell = f"z = x.sum() * 2\ny = {expr}\n"
    with pytest.raises(Exception) as plain:
        exec(cell, {"np": np, "x": x})
    ns = {"np": np, "x": x}
    with pytest.raises(TraceError) as fused:
        run_cell(ns, cell, quiet=True)
    assert fused.value.loc.line == 2 and type(plain.value).__name__ in str(fused.value)
    assert sorted(k for k in ns if not k.startswith("__")) == ["np", "x"]
    caught = f"try:\n    y = {expr}\nexcept {type(plain.value).__name__}:\n    y = None\nw = (x + 1) * 3\n"
    run_cell(ns, caught, quiet=True)
    assert ns["y"] is None
    np.testing.assert_array_equal(ns["w"].compute(), (x.compute() + 1) * 3)
