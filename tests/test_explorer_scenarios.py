"""User scenarios of the explorer and the magic, driven as a person clicking would
(through the widget objects) and as a notebook runs cells (an IPython shell): each test
is a problem a scenario found, and fails without its fix.

The export is run for real without a GPU: a stand-in `cupy` module launches the
exported file's kernels on the CPU emulator of CUDA (tests/cuda_host.py), so the
file's own glue (argument order, outputs, scratch, library calls) is what is tested."""
from __future__ import annotations

import html
import re
import sys
import types

import numpy as np
import pytest

from fuselab.explorer.export import ExportError, export_python
from fuselab.explorer.format import fmt_ratio
from fuselab.interp import run_graph
from fuselab.session import Session
from fuselab.trace import trace_cell

pytest.importorskip("ipywidgets")
pytest.importorskip("anywidget")

from fuselab.explorer.widget import Explorer  # noqa: E402

X = np.random.default_rng(0).random((16, 32), dtype=np.float32)
STENCIL = ("y = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])\n"
           "c = np.abs(y - a[1:-1, 1:-1])")


def session(src: str, backend: str = "cpu", strategy: str = "auto", **arrays) -> Session:
    arrays = arrays or {"x": X}
    s = Session(trace_cell(src, {"np": np, **arrays}), strategy=strategy, backend=backend)
    s.execute()
    return s


def text(widget_html: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", widget_html))


# -- clicks --------------------------------------------------------------------------

def test_a_click_on_an_edge_the_graph_does_not_have_is_refused_not_raised():
    """A click arriving after a redraw named nodes the graph no longer had: IndexError
    in the comm handler (a traceback in the browser's log, no message)."""
    e = Explorer(session("y = x * 2 + 1"))
    before = e.session.plan
    e.handle_click("fl_e7_9")
    assert e.session.plan is before
    msg = text(e.message.value)
    assert "Not changed" in msg and "%7 → %9 is not an edge" in msg
    e.handle_click("fl_e0_4")   # both nodes exist, but %0 is not an input of %4
    assert e.session.plan is before and "%0 → %4 is not an edge" in text(e.message.value)


def test_an_input_edge_names_the_input():
    e = Explorer(session("y = x * 2 + 1"))
    e.handle_click("fl_e0_2")
    assert "%0 (x) is an input of the cell" in text(e.message.value)


def test_double_click_on_a_view_says_what_the_view_is():
    """Double-clicking the slice %1 of a stencil said "%3 (add) already has a kernel of
    its own" (unfused), or cut its reader off (auto): the message named another node."""
    for strategy in ("unfused", "auto"):
        e = Explorer(session(STENCIL, strategy=strategy, a=X))
        before = e.session.plan
        e.handle_click("fl_n1", double=True)
        msg = text(e.message.value)
        assert e.session.plan is before, strategy
        assert "%1 (slice) is a view" in msg and "recomputed" in msg and "%3 (add)" in msg, msg
    e.handle_click("fl_n3", double=True)   # an op still gets its kernel
    assert e.session.plan is not before


# -- numbers -------------------------------------------------------------------------

def test_cpu_measurement_label_keeps_its_capitals():
    """`"measured (CPU)".capitalize()` showed "Measured (cpu)"."""
    from fuselab.explorer.numbers import measured_line
    s = types.SimpleNamespace(backend="numba")
    timing = types.SimpleNamespace(median_s=1e-3, repeats=5)
    m = types.SimpleNamespace(plan=timing, device="CPU: test", replay=None, unfused=None, eager=None,
                              total_compile_s=0.0, peak_bytes=0, unfused_peak_bytes=None, notes=())
    assert "<b>Measured (CPU)</b> on CPU: test" in measured_line(s, m)


def test_small_ratios_are_not_shown_as_zero():
    assert fmt_ratio(0.0033) != "0.00×" and "slower" in fmt_ratio(0.0033)
    assert fmt_ratio(0.57) == "0.57×" and fmt_ratio(2.814) == "2.81×" and fmt_ratio(None) == "–"


def test_a_cell_without_kernels_has_nothing_to_time_or_export():
    """A cell of plain Python (or whose results are the user's arrays): the Run button
    timed nothing ("plan 2.4 µs → 0.85×"), the table was zeros with "1.00× predicted
    speed-up", and Export wrote a module whose run() returned {}."""
    for backend in ("cpu", "numba"):
        e = Explorer(session("k = 3\nw = x", backend=backend))
        assert not e.session.plan.kernels
        assert e.run_button.disabled and "nothing to time" in e.run_button.tooltip
        e.run()
        assert e.session.measurement is None
        assert ("nothing to time" if backend == "numba" else "no measurement") in text(e.message.value)
        assert "Nothing to fuse or time" in text(e.numbers.value) and "speed-up" not in e.numbers.value
        assert e.code_view.export_source == "" and "no kernel to export" in e.code_view.export_note


def test_dask_sessions_can_be_timed_from_the_explorer():
    """The button was disabled with "no GPU here: Dask..." while the panel said "not yet"."""
    da = pytest.importorskip("dask.array")
    x = da.ones((64, 16), chunks=(32, 16), dtype="f4")
    s = Session(trace_cell("y = np.exp(x) + 1", {"np": np, "x": x}))
    s.execute()
    e = Explorer(s)
    assert s.backend == "dask"
    assert not e.run_button.disabled and "no GPU" not in e.run_button.tooltip
    assert "GPU" not in e.run_button.description


def test_unmeasured_chart_title_does_not_say_gpu_on_the_cpu_backends():
    pytest.importorskip("matplotlib")
    from fuselab.explorer import charts
    seen: dict[str, list[str]] = {}
    import matplotlib.axes
    real = matplotlib.axes.Axes.set_title

    def spy(self, label, *a, **k):
        seen.setdefault("titles", []).append(label)
        return real(self, label, *a, **k)
    matplotlib.axes.Axes.set_title = spy
    try:
        charts.timing_chart_png(session("y = np.exp(x) + 1", backend="numba"))
    finally:
        matplotlib.axes.Axes.set_title = real
    assert "predicted time (not measured yet)" in seen["titles"]
    assert not any("GPU" in t for t in seen["titles"])


# -- export ----------------------------------------------------------------------------

def test_export_refuses_a_cell_with_graph_breaks_and_says_why():
    """`s = float(x.sum())` compiles the traced sum into `x / s` as a constant: the
    exported run() silently divided other inputs by the old sum."""
    s = session("s = float(x.sum())\ny = x / s")
    with pytest.raises(ExportError) as info:
        export_python(s)
    msg = str(info.value)
    assert "line 1: s = float(x.sum())" in msg and "wrong results for other inputs" in msg
    forced = export_python(s, allow_breaks=True)
    assert "WARNING: written for the traced inputs only" in forced and "float(x.sum())" in forced


def test_export_of_a_cell_with_no_kernels_is_refused():
    with pytest.raises(ExportError, match="no kernel to export"):
        export_python(session("w = x"))


def test_export_writes_operations_on_the_operands_and_checks_their_shapes():
    """A boolean mask was refused as "does not go through the array module" though
    `a[mask]` is CuPy; its result's length depends on the data, so the file checks it."""
    s = session("m = x > 0.5\ny = x[m] * 2")
    text_ = export_python(s, allow_breaks=True)
    assert "_vals[0][(_vals[" in text_ and "_result(" in text_
    with pytest.raises(ExportError, match=r"unique\) \(line 1: u = np.unique\(x\)\) runs through NumPy's own"):
        from fuselab.explorer.export import opaque_expr
        s = session("u = np.unique(x)\ny = u * 2")
        opaque_expr(s.graph, next(i for i, n in enumerate(s.graph.nodes) if n.op == "opaque"))


# the exported file, run on the CPU emulator of CUDA through a stand-in `cupy`

def _fake_cupy(sess: Session):
    """A `cupy` module whose RawModule launches the session's kernels on the emulator."""
    cuda_host = pytest.importorskip("cuda_host")
    if not cuda_host.HAVE_CXX:
        pytest.skip("no host C++ compiler to emulate kernels")
    codes = {c.source: c for c in sess.codes() if getattr(c, "source", None)}
    launchers = cuda_host.build([(c, sess.plan) for c in codes.values()])
    cp = types.ModuleType("cupy")

    class RawModule:
        def __init__(self, code, options=()):
            self.code = codes[code]      # the exported source is the generated one, verbatim
            self.options = tuple(options)

        def get_function(self, name):
            code = self.code
            assert name == code.name and self.options == tuple(code.nvrtc_options)

            def launch(grid, block, args, shared_mem=0):
                assert (tuple(grid), tuple(block), shared_mem) == (tuple(code.grid), tuple(code.block),
                                                                   code.shared_mem)
                assert len(args) == len(code.params)
                import ctypes
                ptrs = (ctypes.c_void_p * len(args))(*(a.ctypes.data for a in args))
                err = ctypes.create_string_buffer(512)
                assert launchers[code.source](ptrs, err, len(err)) == 0, err.value
            return launch

    cp.RawModule = RawModule
    cp.asarray = lambda a, dtype=None: cuda_host._aligned(np.asarray(a, dtype))
    cp.empty = lambda shape, dtype=None: cuda_host._aligned_empty(shape, dtype)
    cp.zeros = lambda n, dtype=None: cuda_host._aligned(np.zeros(n, dtype))
    cp.__getattr__ = lambda name: getattr(np, name)   # cp.matmul, cp.uint8, cp.sort ...
    return cp


EXPORTED = {
    "softmax": ("m = x.max(axis=1, keepdims=True)\ne = np.exp(x - m)\np = e / e.sum(axis=1, keepdims=True)",
                {"x": (8, 40)}),
    "columns": ("s = x.sum(axis=0)\ny = x / s", {"x": (24, 12)}),
    "epilogue": ("h = x @ w\ny = np.maximum(h + b, 0.0) * 0.5", {"x": (8, 12), "w": (12, 4), "b": (4,)}),
    "stencil": (STENCIL, {"a": (10, 12)}),
}


@pytest.mark.parametrize("name", sorted(EXPORTED))
def test_exported_file_runs_and_gives_the_cells_results(name, tmp_path, monkeypatch):
    src, shapes = EXPORTED[name]
    rng = np.random.default_rng(3)
    inputs = {k: rng.random(s, dtype=np.float32) for k, s in shapes.items()}
    s = session(src, backend="cpu", **inputs)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(s))
    monkeypatch.setitem(sys.modules, "fuselab_plan_" + name, None)
    (tmp_path / f"plan_{name}.py").write_text(export_python(s))
    module = __import__(f"plan_{name}")
    other = {k: rng.random(v.shape, dtype=np.float32) for k, v in inputs.items()}   # not the traced data
    got = module.run(**other)
    want = run_graph(s.graph, other, np)
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=1e-6, err_msg=k)
    with pytest.raises(ValueError, match="must be float32"):
        module.run(**{k: v.astype(np.float64) for k, v in other.items()})


def test_exported_mask_checks_the_length_it_was_compiled_for(tmp_path, monkeypatch):
    x = np.linspace(0, 1, 40, dtype=np.float32)
    s = session("y = x[x > 0.5] * 2", x=x)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(s))
    (tmp_path / "plan_mask.py").write_text(export_python(s, allow_breaks=True))
    module = __import__("plan_mask")
    np.testing.assert_array_equal(module.run(x=x[::-1].copy())["y"], x[::-1][x[::-1] > 0.5] * 2)
    with pytest.raises(ValueError, match=r"%\d+ \(boolean mask\) has shape \(10,\).*compiled for \(20,\)"):
        module.run(x=np.where(x > 0.75, x, 0).astype(np.float32))
