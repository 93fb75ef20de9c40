"""The Numba backend's own rules: op table coverage, float16 rounding, the vectorizable
float32 functions, determinism across thread counts, the compile cache, and the backend in
the session, the magic and the explorer."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numba_util import PARALLEL, SERIAL, numba, run_numba

from fuselab.interp import run_graph
from fuselab.ir import GraphBuilder
from fuselab.ops import OPS, Kind
from fuselab.plan import make_plan
from fuselab.plan.model import Template
from fuselab.runtime.verify import compare

from graphs import layernorm, one_kernel, softmax


def test_every_op_of_the_table_has_a_python_rule():
    from fuselab.numba_backend.pyops import ELEMWISE, REDUCTIONS
    missing = [n for n, o in OPS.items() if o.kind is Kind.ELEMWISE and n != "astype" and n not in ELEMWISE]
    assert not missing, f"add these ops to fuselab/numba_backend/pyops.py: {missing}"
    assert {n for n, o in OPS.items() if o.kind is Kind.REDUCE} == set(REDUCTIONS)


# -- float16 -------------------------------------------------------------------

def _halves(x: np.ndarray) -> np.ndarray:
    from fuselab.numba_backend.scalar import fl_to_half, fl_to_half64
    convert = fl_to_half64 if x.dtype == np.float64 else fl_to_half

    @numba.njit
    def run(x, out):
        for i in range(x.shape[0]):
            out[i] = convert(x[i])
    out = np.empty(x.size, np.uint16)
    run(x, out)
    return out


def test_float16_conversions_round_to_nearest_even_as_numpy():
    from fuselab.numba_backend.scalar import fl_from_half

    @numba.njit
    def decode(h, out):
        for i in range(h.shape[0]):
            out[i] = fl_from_half(h[i])
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    got = np.empty(bits.size, np.float32)
    decode(bits, got)
    np.testing.assert_array_equal(got.view(np.uint32), bits.view(np.float16).astype(np.float32).view(np.uint32))
    # every midpoint between neighbouring halves and the values either side of it, in
    # float32 and float64: the ties and the boundaries of round-to-nearest-even
    h = np.sort(bits.view(np.float16)[np.isfinite(bits.view(np.float16))].astype(np.float64))
    mids = (h[:-1] + h[1:]) / 2
    for dt in (np.float32, np.float64):
        for x in (mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf), np.array([np.inf, -np.inf, np.nan,
                                                                                           7e4, -7e4, 1e-9, 3e-8])):
            x = x.astype(dt)
            with np.errstate(over="ignore"):
                want = x.astype(np.float16).view(np.uint16)
            np.testing.assert_array_equal(_halves(x), want)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2 ** 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        np.testing.assert_array_equal(_halves(x), x.astype(np.float16).view(np.uint16))


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    def key(v):
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(key(a) - key(b))


@pytest.mark.parametrize("name, ref", [("exp", np.exp), ("expm1", np.expm1), ("tanh", np.tanh)])
def test_vectorizable_float32_functions_are_within_one_ulp(name, ref):
    """Faithfully rounded (README, "Transcendentals"; tests/test_numba_transcendentals.py
    checks them more closely): at most 1 ulp from the correctly rounded float32."""
    from fuselab.numba_backend import scalar
    fn = getattr(scalar, f"fl_{name}_f32")

    @numba.njit
    def run(x, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.integers(0, 2 ** 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32),
                        rng.uniform(-110, 95, 1 << 18).astype(np.float32), rng.uniform(-1, 1, 1 << 18).astype(np.float32),
                        np.array([0, -0.0, np.inf, -np.inf, np.nan, 88.72283, 88.72284, -103.97, 1e-45, 9.1],
                                 np.float32)])
    got = np.empty_like(x)
    run(x, got)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert _ulps(got[ok], want[ok]).max() <= 1          # the correctly rounded float32 or a neighbour
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


# -- parallel kernels ---------------------------------------------------------------

def _parallel_cases():
    rng = np.random.default_rng(3)
    out = []
    b = GraphBuilder()
    x = b.input("x", (1 << 17,), np.float32)
    g = b.build([("s", b.reduce("sum", b.elemwise("multiply", [x, x]))), ("a", b.reduce("argmax", x)),
                 ("m", b.reduce("max", x))])
    out.append((one_kernel(g, Template.REDUCTION), {"x": rng.standard_normal(1 << 17).astype(np.float32)}))
    b = GraphBuilder()
    x = b.input("x", (40000, 48), np.float32)
    g = b.build([("c", b.elemwise("multiply", [b.reduce("sum", x, axis=0), b.const(1 / 40000, np.float32)]))])
    out.append((one_kernel(g, Template.REDUCTION), {"x": rng.standard_normal((40000, 48)).astype(np.float32)}))
    for make in (softmax, layernorm):
        g = make(300, 257)
        out.append((one_kernel(g, Template.ROW),
                    {n: rng.standard_normal(g.nodes[i].shape).astype(np.float32)
                     for n, i in zip(g.input_names(), g.input_ids)}))
    b = GraphBuilder()
    x = b.input("x", (999, 1001), np.float16)
    w = b.input("w", (1001,), np.float16)
    g = b.build([("y", b.elemwise("tanh", [b.elemwise("multiply", [x, w])]))])
    out.append((one_kernel(g, Template.POINTWISE), {"x": rng.standard_normal((999, 1001)).astype(np.float16),
                                                    "w": rng.standard_normal(1001).astype(np.float16)}))
    return out


@pytest.mark.parametrize("k", range(5))
def test_parallel_kernels_give_the_same_bits_on_any_number_of_threads(k):
    plan, inputs = _parallel_cases()[k]
    serial = run_numba(plan, inputs, SERIAL)
    check = compare(serial, run_graph(plan.graph, inputs), 1e-3 if plan.graph.nodes[0].dtype == np.float16 else 1e-5)
    assert check.ok, check.worst
    threads = numba.get_num_threads()
    try:
        for n in sorted({1, threads}):
            numba.set_num_threads(n)
            got = run_numba(plan, inputs, PARALLEL)
            for name in serial:
                np.testing.assert_array_equal(got[name], serial[name], err_msg=f"{name}, {n} thread(s)")
    finally:
        numba.set_num_threads(threads)


@pytest.mark.parametrize("k", range(5))
def test_serial_runs_in_the_chunks_of_many_threads_give_the_same_bits(k):
    """NumbaOptions.threads: a serial run cuts its loops as a parallel run on a machine of
    that many threads does (chunk bounds past the first iteration, which one chunk never
    meets; the differential fuzzer runs its Numba plans so on one core)."""
    from dataclasses import replace
    plan, inputs = _parallel_cases()[k]
    serial = run_numba(plan, inputs, SERIAL)
    for n in (3, 7, 16):
        got = run_numba(plan, inputs, replace(SERIAL, threads=n))
        for name in serial:
            np.testing.assert_array_equal(got[name], serial[name], err_msg=f"{name}, chunks of {n} threads")


@pytest.mark.parametrize("n", [257, 1000, 4099])
def test_a_long_flat_loop_runs_in_runs_that_prefetch_its_contiguous_inputs(n):
    """prefetch.py: a flat pointwise loop longer than a run goes in runs of RUN
    iterations, each prefetching the lines of the contiguous inputs AHEAD iterations on
    (not of a reversed or strided one, nor of a scalar). Chunk bounds that cut runs
    (3 and 7 threads' chunks) and an end inside a run give the same values as NumPy."""
    from dataclasses import replace
    from fuselab.numba_backend.prefetch import AHEAD, RUN
    from fuselab.numba_backend.run import Executable
    b = GraphBuilder()
    x = b.input("x", (n,), np.float32)
    y = b.input("y", (2 * n,), np.float64)
    s = b.input("s", (), np.float32)
    w = b.input("w", (n,), np.int16)
    y_rev = b.slice(y, (2 * n - 1,), (-2,), (n,))
    z = b.elemwise("add", [b.elemwise("multiply", [x, y_rev]), b.elemwise("multiply", [s, w])])
    g = b.build([("z", z)])
    plan = one_kernel(g, Template.POINTWISE)
    rng = np.random.default_rng(n)
    inputs = {"x": rng.standard_normal(n).astype(np.float32), "y": rng.standard_normal(2 * n),
              "s": np.float32(1.5), "w": rng.integers(-999, 999, n).astype(np.int16)}
    want = run_graph(g, inputs)["z"]
    for threads in (0, 3, 7):
        exe = Executable(plan, replace(SERIAL, threads=threads))
        np.testing.assert_array_equal(exe.run(inputs)["z"], want, err_msg=f"chunks of {threads} threads")
    src = exe.codes[0].source
    assert f"for i_c in range(lo, hi, {RUN}):" in src and f"for i in range(i_c, min(i_c + {RUN}, hi)):" in src
    pf = [line.strip() for line in src.splitlines() if line.strip().startswith("fl_prefetch")]
    # x's lines (16 float32 a line) and w's (32 int16): nothing of y (stride -2) nor of s
    assert pf == [f"fl_prefetch(in_x, ix(i_c + {AHEAD} + {j}))" for j in range(0, RUN, 16)] + \
        [f"fl_prefetch(in_w, ix(i_c + {AHEAD} + {j}))" for j in range(0, RUN, 32)], pf


@pytest.mark.parametrize("n,threaded", [(1000, False), (1 << 17, True)])
def test_small_kernels_run_on_the_calling_thread(n, threaded, monkeypatch):
    """A kernel over fewer than compile.SERIAL_BELOW_BYTES (inputs and outputs) runs on
    the calling thread even in a parallel run: waking Numba's threads costs more than
    its work. Larger ones run on the threads. Same bits either way."""
    from fuselab.numba_backend import compile as comp, driver
    b = GraphBuilder()
    x = b.input("x", (n,), np.float32)
    plan = one_kernel(b.build([("y", b.elemwise("exp", [b.elemwise("negative", [x])]))]), Template.POINTWISE)
    inputs = {"x": np.linspace(-3, 3, n, dtype=np.float32)}
    assert (n * 8 < comp.SERIAL_BELOW_BYTES) != threaded
    calls = []
    for name in ("drive_parallel", "drive_serial"):
        real = getattr(driver, name)
        monkeypatch.setattr(driver, name, lambda *a, _r=real, _n=name: calls.append(_n) or _r(*a))
    got = run_numba(plan, inputs, PARALLEL)
    assert calls == ["drive_parallel" if threaded else "drive_serial"]
    np.testing.assert_array_equal(got["y"], run_numba(plan, inputs, SERIAL)["y"])


def test_warm_up_sets_numba_up_once_on_a_background_thread():
    script = textwrap.dedent("""
        import sys
        from fuselab.numba_backend import warm_up
        assert "numba.np.arraymath" not in sys.modules        # Numba's lazily loaded registries
        t = warm_up()
        assert warm_up() is t and t.daemon
        t.join(120)
        assert not t.is_alive() and "numba.np.arraymath" in sys.modules
        assert "fuselab.numba_backend.scalar" in sys.modules
        print("warm")
    """)
    started_by_a_cell = textwrap.dedent("""
        from fuselab import numba_backend
        from fuselab.session import resolve_backend
        assert not numba_backend._WARM_UP
        assert resolve_backend("numba", "numpy")[0] == "numba"
        numba_backend._WARM_UP[0].join(120)
        print("warm")
    """)
    import os
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for code in (script, started_by_a_cell):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert out.returncode == 0 and out.stdout.strip() == "warm", out.stderr[-2000:]


def test_after_the_warm_up_a_first_cpu_plan_imports_nothing_and_measures_nothing(tmp_path):
    """The warm-up reads the CPU's cached calibration and imports the planner, so a
    process's first plan does neither (it imported the GPU runtime for the cache's path: 40
    ms of a 50 ms first plan); it never measures the CPU itself, where no cache exists."""
    script = textwrap.dedent("""
        import sys, numpy as np
        from fuselab.numba_backend import warm_up
        from fuselab.numba_backend import calibrate
        from fuselab.paths import calibration_path
        fresh = not calibration_path(calibrate.cpu_name()).exists()
        if fresh:
            calibrate.measure_cpu = lambda: (_ for _ in ()).throw(AssertionError("measured"))
        warm_up().join(120)
        if fresh:
            print("fresh")
            sys.exit(0)
        assert calibrate._MEMORY, "the warm-up left the calibration on disk"
        before = set(sys.modules)
        calibrate.measure_cpu = lambda: (_ for _ in ()).throw(AssertionError("measured"))
        from fuselab.plan import make_plan
        from fuselab.ir import GraphBuilder
        b = GraphBuilder()
        x = b.input("x", (1000,), np.float32)
        g = b.build([("y", b.elemwise("sqrt", [x]))])
        make_plan(g, "auto", params=calibrate.device_params())
        new = sorted(m for m in set(sys.modules) - before if m.startswith("fuselab"))
        assert not new, new
        print("warm")
    """)
    import json
    import os
    from fuselab.numba_backend import calibrate
    from fuselab.paths import calibration_path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "FUSELAB_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "fresh", out.stderr[-2000:]
    figures = {**calibrate.calibrate(), "device_name": calibrate.cpu_name()}
    path = calibration_path(calibrate.cpu_name())
    target = tmp_path / path.name
    target.write_text(json.dumps(figures))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "warm", out.stderr[-2000:]


def test_numbas_set_up_leaves_the_warnings_numpy_showed_shown(tmp_path):
    """A warning NumPy's own line gave shows once a session in plain execution. The
    warm-up imports SciPy (through Numba) and reads the CPU's name, code that enters
    `catch_warnings` and so moves the filters' version: every registry forgot what it had
    shown, and np.diff's "invalid value encountered in subtract" showed again after the
    first Numba cell (random fidelity cell 222615, run twice). Registries valid before
    the set-up are valid after it (recording.registries_kept)."""
    import os
    script = textwrap.dedent("""
        import numpy as np
        def diff():
            return np.diff(np.array([np.inf, np.inf]))
        diff()
        from fuselab import numba_backend
        numba_backend.warm_up().join()
        diff()
        print("done")
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "FUSELAB_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "done", out.stderr[-2000:]
    assert out.stderr.count("invalid value encountered in subtract") == 1, out.stderr[-2000:]


# -- the compile cache -----------------------------------------------------------------

def test_compiled_once_per_process_and_loaded_from_disk_by_the_next(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    from fuselab.numba_backend.run import Executable
    b = GraphBuilder()
    x = b.input("x", (1000,), np.float32)
    g = b.build([("y", b.elemwise("sqrt", [b.elemwise("add", [x, b.const(0.123456, np.float32)])]))])
    plan = make_plan(g)
    first = Executable(plan, PARALLEL)
    (name, seconds), = first.compile_s.items()
    assert seconds > 0
    assert Executable(plan, PARALLEL).compile_s[name] == 0.0      # this process has it
    assert Executable(plan, SERIAL).compile_s[name] == 0.0        # the same kernel, run serially
    assert list(tmp_path.glob("numba/*.py")) and list(tmp_path.glob("numba/__pycache__/*.nbi"))
    script = textwrap.dedent("""
        import json, sys
        import numpy as np
        from fuselab.ir import GraphBuilder
        from fuselab.plan import make_plan
        from fuselab.numba_backend.run import Executable
        from fuselab.numba_backend import NumbaOptions
        b = GraphBuilder()
        x = b.input("x", (1000,), np.float32)
        g = b.build([("y", b.elemwise("sqrt", [b.elemwise("add", [x, b.const(0.123456, np.float32)])]))])
        exe = Executable(make_plan(g), NumbaOptions(parallel=True))
        xs = np.linspace(0, 1, 1000, dtype=np.float32)
        ok = bool(np.array_equal(exe.run({"x": xs})["y"], np.sqrt(xs + np.float32(0.123456))))
        print(json.dumps({"hits": exe.compiled[0].cfunc.cache_hits, "ok": ok}))
    """)
    import json
    import os
    env = {**os.environ, "FUSELAB_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    stats = json.loads(out.stdout.strip().splitlines()[-1])
    assert stats == {"hits": 1, "ok": True}


def test_one_driver_for_every_kernel_compiled_once_per_machine(tmp_path):
    """Kernels are cfuncs run through driver.py's one parallel driver: a new process
    compiling kernels of other dtypes and templates afresh (an empty kernel cache) loads
    the driver from Numba's disk cache and compiles no other version of it."""
    from fuselab.numba_backend import driver
    from fuselab.numba_backend.run import Executable
    b = GraphBuilder()
    x = b.input("x", (3000,), np.float32)
    Executable(make_plan(b.build([("y", b.elemwise("exp", [x]))])), PARALLEL)   # this process: driver compiled or loaded
    assert len(driver.drive_parallel.signatures) == 1 and len(driver.drive_serial.signatures) == 1
    script = textwrap.dedent("""
        import json
        import numpy as np
        from fuselab.ir import GraphBuilder
        from fuselab.plan import make_plan
        from fuselab.numba_backend import NumbaOptions, driver
        from fuselab.numba_backend.run import Executable
        rng = np.random.default_rng(0)
        b = GraphBuilder()
        x = b.input("x", (4000,), np.float64)
        g1 = b.build([("y", b.elemwise("sin", [x]))])
        b = GraphBuilder()
        x = b.input("x", (30, 70), np.float32)
        g2 = b.build([("s", b.reduce("sum", b.elemwise("multiply", [x, x]), axis=-1))])
        ok = []
        for g in (g1, g2):
            exe = Executable(make_plan(g), NumbaOptions(parallel=True))
            assert all(t > 0 for t in exe.compile_s.values())      # compiled here
            xs = rng.standard_normal(g.nodes[g.input_ids[0]].shape).astype(g.nodes[g.input_ids[0]].dtype)
            got = list(exe.run({"x": xs}).values())[0]
            want = np.sin(xs) if g is g1 else (xs * xs).sum(-1)
            ok.append(bool(np.allclose(got, want, rtol=1e-5)))
        d = driver.drive_parallel
        print(json.dumps({"ok": ok, "signatures": len(d.signatures), "hits": sum(d.stats.cache_hits.values()),
                          "misses": sum(d.stats.cache_misses.values())}))
    """)
    import json
    import os
    env = {**os.environ, "FUSELAB_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    stats = json.loads(out.stdout.strip().splitlines()[-1])
    assert stats == {"ok": [True, True], "signatures": 1, "hits": 1, "misses": 0}


def test_calibration_probes_load_from_the_disk_cache_in_a_new_process(tmp_path):
    """The probes' module is importable by its name when Numba caches them: a second
    process loads them from disk (ModuleNotFoundError: '<dynamic>' before; GPU machine)."""
    import json
    import os
    script = textwrap.dedent("""
        import json
        import numpy as np
        from fuselab.numba_backend.calibrate import _probes
        a = np.arange(1000.0); b = np.empty_like(a)
        fn = _probes().fl_copy
        fn(a, b)
        assert (a == b).all()
        print(json.dumps({"hits": sum(fn.stats.cache_hits.values()), "misses": sum(fn.stats.cache_misses.values())}))
    """)
    env = {**os.environ, "FUSELAB_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    stats = [json.loads(r.stdout.strip().splitlines()[-1]) for r in runs]
    assert stats == [{"hits": 0, "misses": 1}, {"hits": 1, "misses": 0}]


def test_a_loop_of_one_iteration_is_no_loop():
    """A phase of one iteration (a full reduction's only unit, its combine) is written
    without its loop: in a loop whose body does not depend on the index, LLVM's
    vectorizer searched for hours (vputils::isSingleScalar through the max fold's
    selects) on this kernel."""
    from fuselab.numba_backend.run import Executable
    b = GraphBuilder()
    x = b.input("x", (33,), np.float64)
    exe = Executable(one_kernel(b.build([("m", b.reduce("max", x))]), Template.REDUCTION), PARALLEL)
    assert "range(lo, hi)" not in exe.codes[0].source and "u = 0" in exe.codes[0].source
    xs = np.random.default_rng(5).standard_normal(33)
    assert exe.run({"x": xs})["m"] == xs.max()


# -- session, magic, explorer -----------------------------------------------------------

def test_a_cell_runs_on_the_numba_backend_checked_and_timed():
    from fuselab.cell import run_cell
    from fuselab.explorer.numbers import numbers_html
    from fuselab.explorer.static import code_html
    x = np.linspace(-2, 2, 5000, dtype=np.float32).reshape(50, 100)
    ns = {"np": np, "x": x}
    s = run_cell(ns, "e = np.exp(x - x.max(-1, keepdims=True))\np = e / e.sum(-1, keepdims=True)",
                 backend="numba", repeats=3, quiet=True)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(ns["p"], e / e.sum(-1, keepdims=True), rtol=1e-6)
    assert s.backend == "numba" and s.check.ok
    m = s.measurement
    assert m.check.ok and m.eager.label == "plain NumPy" and m.unfused is not None
    assert m.device.startswith("CPU:") and len(m.plan.per_kernel_s) == len(s.plan.kernels)
    assert s.report().params.source == "calibration (CPU)"        # planned for this CPU
    html = numbers_html(s)
    assert "measured (CPU)" in html and "plain NumPy" in html
    import html as html_mod
    import re
    code = html_mod.unescape(re.sub(r"<[^>]+>", "", code_html(s)))
    assert '@cfunc("void(int64, int64, int64, CPointer(voidptr))", fastmath=False, cache=True' in code
    assert "for row in range(lo, hi):" in code and "the rows (50 iterations" in code
    assert "The same kernel in CUDA C++" in code


def test_auto_runs_numba_without_a_gpu_and_cpu_without_numba(monkeypatch):
    from fuselab import session as session_mod
    from fuselab.errors import BackendError
    if session_mod.cuda_status()[0]:
        pytest.skip("a GPU is present: auto picks CUDA")
    assert session_mod.resolve_backend("auto", "numpy")[0] == "numba"
    assert session_mod.resolve_backend("cpu", "numpy")[0] == "cpu"
    monkeypatch.setattr(session_mod, "numba_status", lambda: (False, "Numba is not importable"))
    backend, note = session_mod.resolve_backend("auto", "numpy")
    assert backend == "cpu" and "predicted" in note
    with pytest.raises(BackendError, match="Numba backend cannot run here"):
        session_mod.resolve_backend("numba", "numpy")


def test_python_code_is_generated_without_numba(monkeypatch):
    """Generating the Python needs no Numba: the explorer shows it on any machine."""
    code = textwrap.dedent("""
        import sys
        sys.modules["numba"] = None          # importing numba now fails
        import numpy as np
        from fuselab.ir import GraphBuilder
        from fuselab.plan import make_plan
        from fuselab.numba_backend import generate, available
        b = GraphBuilder()
        x = b.input("x", (10,), np.float32)
        g = b.build([("y", b.elemwise("exp", [x]))])
        (k,) = generate(make_plan(g))
        assert "def k0_exp" in k.source and available()[0] is False
        print("ok")
    """)
    import os
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_magic_backend_numba():
    IPython = pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "fuselab")
    ip.user_ns.clear()
    ip.run_cell("import numpy as np\nx = np.linspace(0, 1, 1000, dtype=np.float32)", store_history=False)
    res = ip.run_cell("%%fuse -q -o r --backend numba -n 3\nt = x * x + 1.0\ny = np.exp(t) * 0.5 - np.sin(x)",
                      store_history=False)
    assert res.success
    x = ip.user_ns["x"]
    np.testing.assert_allclose(ip.user_ns["y"], np.exp(x * x + 1.0) * 0.5 - np.sin(x), rtol=1e-6)
    assert "t" not in ip.user_ns
    r = ip.user_ns["r"]
    assert r.backend == "numba" and r.measurement is not None and "Numba backend" in r.summary()
    ip.user_ns.clear()


def test_float16_fast_mode_rounds_only_what_it_stores():
    """fp16_math='fast' keeps float32 inside the kernel: the result is the float32 chain
    rounded once; 'numpy' rounds after every op, as NumPy does."""
    from fuselab.numba_backend import NumbaOptions
    b = GraphBuilder()
    x = b.input("x", (4099,), np.float16)
    y = x
    for op, c in [("multiply", 1.37), ("add", 0.61), ("multiply", x), ("subtract", 0.3), ("true_divide", 1.9)]:
        y = b.elemwise(op, [y, c if isinstance(c, int) else b.const(c, np.float16)])
    g = b.build([("y", y)])
    plan = one_kernel(g, Template.POINTWISE)
    xs = np.random.default_rng(5).uniform(-3, 3, 4099).astype(np.float16)
    numpy_mode = run_numba(plan, {"x": xs}, SERIAL)["y"]
    fast = run_numba(plan, {"x": xs}, NumbaOptions(parallel=False, fp16_math="fast"))["y"]
    np.testing.assert_array_equal(numpy_mode, run_graph(g, {"x": xs})["y"])         # bit-equal to NumPy
    f = xs.astype(np.float32)
    want = ((((f * np.float32(np.float16(1.37)) + np.float32(np.float16(0.61))) * f) - np.float32(np.float16(0.3)))
            / np.float32(np.float16(1.9))).astype(np.float16)
    np.testing.assert_array_equal(fast, want)
    assert (fast != numpy_mode).any()     # the modes differ somewhere on 4099 values


# -- operands of their own types, np.var -----------------------------------------------

def test_signed_unsigned_comparisons_are_exact_as_numpy_2s():
    """int64 vs uint64 compare exactly in NumPy 2 (loops `qQ->?`): the node's operand
    dtypes differ, and neither operand may be cast to the other's type (nor, as Numba
    would, both to float64)."""
    b = GraphBuilder()
    a = b.input("a", (8,), np.int64)
    u = b.input("u", (8,), np.uint64)
    ops = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
    g = b.build([(f"{op}_{k}", b.elemwise(op, [x, y])) for op in ops for k, (x, y) in enumerate([(a, u), (u, a)])])
    assert any(len(set(n.operand_dtypes)) > 1 for n in g.nodes if n.op in ops)
    inputs = {"a": np.array([-1, 0, 2 ** 62, 2 ** 63 - 1, 5, -2 ** 63, 7, 2 ** 53 + 1], np.int64),
              "u": np.array([2 ** 64 - 1, 0, 2 ** 62 + 1, 2 ** 63, 5, 0, 2 ** 63 + 7, 2 ** 53], np.uint64)}
    got = run_numba(one_kernel(g, Template.POINTWISE), inputs)
    for name, want in run_graph(g, inputs).items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)


def test_variance_is_a_compiled_one_pass_reduction():
    """np.var in a reduction and in a row kernel: Welford's state, compiled (no kernel runs
    through NumPy); the cases in tests/cases.py check its values in every layout."""
    from fuselab.cell import run_cell
    from fuselab.numba_backend import PyKernel, generate
    x = (np.random.default_rng(3).standard_normal((40, 257)) * 2 + 500).astype(np.float32)
    ns = {"np": np, "x": x}
    cell = "v = x.var(axis=0, ddof=1)\ny = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)"
    s = run_cell(ns, cell, backend="numba", time=False, quiet=True)
    assert s.check.ok, s.check.worst
    codes = generate(s.plan)
    assert all(isinstance(c, PyKernel) for c in codes) and any("fl_block_sqdev" in c.source for c in codes)
    np.testing.assert_allclose(ns["v"], x.var(axis=0, ddof=1), rtol=1e-4)
    np.testing.assert_allclose(ns["y"], (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5),
                               rtol=1e-4, atol=1e-4)


def test_portable_helpers_without_fma_or_f16c():
    """NUMBA_CPU_NAME=generic (a portable build): no FMA, no F16C. The float32 functions
    are then evaluated with separate multiplies and adds and stay within 1 ulp of the
    exact value, and float16 converts by bit operations, still NumPy's bits."""
    code = textwrap.dedent("""
        import numpy as np, numba
        from fuselab.numba_backend import scalar
        assert not scalar.HAS_FMA and not scalar.HAS_F16C
        assert scalar.fl_round_half is scalar.fl_round_half_bits
        rng = np.random.default_rng(2)
        x = np.concatenate([rng.uniform(-110, 95, 1 << 18), rng.uniform(-1, 1, 1 << 18)]).astype(np.float32)
        near = np.arange(np.float32(0.3).view(np.uint32), np.float32(1.1).view(np.uint32), 13, dtype=np.uint32)
        x = np.concatenate([x, near.view(np.float32), -near.view(np.float32)])  # the worst ranges of expm1, tanh
        for name, ref in (("exp", np.exp), ("expm1", np.expm1), ("tanh", np.tanh)):
            fn = getattr(scalar, "fl_" + name + "_f32")
            @numba.njit
            def run(x, out):
                for i in range(x.shape[0]):
                    out[i] = fn(x[i])
            got = np.empty_like(x)
            run(x, got)
            with np.errstate(all="ignore"):
                exact = ref(x.astype(np.float64))
            fin = np.abs(exact) <= np.finfo(np.float32).max
            ulp = np.maximum(np.ldexp(1.0, np.frexp(np.abs(exact))[1] - 24), 2.0 ** -149)
            err = (np.abs(got - exact) / ulp)[fin]
            assert err.max() < 1 and (got[~fin] == np.inf).all(), (name, err.max())
        th, rh = scalar.fl_to_half, scalar.fl_round_half
        @numba.njit
        def half(x, bits, r):
            for i in range(x.shape[0]):
                bits[i] = th(x[i])
                r[i] = rh(x[i])
        y = rng.integers(0, 2 ** 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
        bits, r = np.empty(y.size, np.uint16), np.empty(y.size, np.float32)
        half(y, bits, r)
        with np.errstate(all="ignore"):
            want = y.astype(np.float16)
        assert (bits == want.view(np.uint16)).all()
        assert (r.view(np.uint32) == want.astype(np.float32).view(np.uint32)).all()
        print("ok")
    """)
    import os
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "NUMBA_CPU_NAME": "generic"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "ok", out.stderr[-3000:]
