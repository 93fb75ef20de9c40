"""Export of a plan as a standalone CuPy file, and the measured numbers on a GPU."""
from __future__ import annotations

import ast
import subprocess
import sys

import numpy as np
import pytest

from fuselab.explorer.export import ExportError, export_python
from fuselab.interp import run_graph
from fuselab.session import Session
from fuselab.trace import trace_cell

CELLS = {
    "chain": ("t = x * x + 1.0\ny = np.exp(t) * 0.5 - np.sin(x)", {"x": (1 << 16,)}),
    "softmax": ("e = np.exp(x - x.max(axis=1, keepdims=True))\np = e / e.sum(axis=1, keepdims=True)",
                {"x": (256, 1000)}),
    "total": ("y = x / x.sum()", {"x": (300, 301)}),
    "epilogue": ("h = x @ w\ny = np.maximum(h + b, 0.0) * 0.5", {"x": (64, 96), "w": (96, 32), "b": (32,)}),
    "stencil": ("y = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])", {"a": (130, 66)}),
}


def inputs_for(shapes: dict, xp=np) -> dict:
    rng = np.random.default_rng(1)
    return {k: xp.asarray(rng.random(s, dtype=np.float32)) for k, s in shapes.items()}


def session(name: str, strategy: str = "auto", xp=np) -> Session:
    src, shapes = CELLS[name]
    return Session(trace_cell(src, {"np": np, **inputs_for(shapes, xp)}), strategy=strategy)


@pytest.mark.parametrize("name", sorted(CELLS))
def test_export_is_a_standalone_module(name):
    s = session(name)
    text = export_python(s)
    tree = ast.parse(text)
    imported = {a.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for a in node.names} | {node.module.split(".")[0] for node in ast.walk(tree)
                                        if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"cupy", "numpy"}, imported
    run = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run")
    assert [a.arg for a in run.args.args] == list(s.graph.input_names())
    for kinfo in s.kernels:
        if kinfo.source:
            assert kinfo.source in text and repr(kinfo.name) in text
    for out in s.traced.results:
        assert repr(out) in text


def test_export_writes_opaque_calls_as_cupy_calls():
    text = export_python(session("epilogue"))
    assert "cp.matmul(_vals[0], _vals[1])" in text


def test_export_refuses_names_that_would_hide_its_own():
    cp_like = np.ones(8, np.float32)
    s = Session(trace_cell("y = cp + 1", {"np": np, "cp": cp_like}))
    with pytest.raises(ExportError, match="'cp'"):
        export_python(s)


@pytest.mark.parametrize("name", sorted(CELLS))
def test_exported_sources_compile_with_nvrtc(name):
    """The CUDA embedded in the file compiles for sm_90 (NVRTC; no GPU needed)."""
    nvrtc = pytest.importorskip("fuselab.codegen.nvrtc")
    ok, why = nvrtc.available()
    if not ok:
        pytest.skip(why)
    s = session(name)
    text = export_python(s)
    module = ast.parse(text)
    sources = {t.id: ast.literal_eval(n.value) for n in module.body if isinstance(n, ast.Assign)
               for t in n.targets if isinstance(t, ast.Name) and t.id.startswith("_SOURCE_")}
    codes = [c for c in s.codes() if getattr(c, "source", None)]
    assert len(sources) == len(codes)
    for code in codes:
        info = nvrtc.compile_source(sources[f"_SOURCE_{code.index}"], code.name, code.nvrtc_options)
        assert f".entry {code.name}" in info.ptx


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CELLS))
@pytest.mark.parametrize("strategy", ["auto", "unfused"])
def test_exported_file_runs_without_fuselab(name, strategy, tmp_path):
    import cupy

    s = session(name, strategy, xp=cupy)
    (tmp_path / "plan_export.py").write_text(export_python(s))
    src, shapes = CELLS[name]
    host = inputs_for(shapes)
    np.savez(tmp_path / "inputs.npz", **host)
    script = (
        "import sys\n"
        "sys.modules['fuselab'] = None  # any import of fuselab fails\n"
        "import numpy as np, cupy as cp, plan_export\n"
        "ins = {k: cp.asarray(v) for k, v in np.load('inputs.npz').items()}\n"
        "out = plan_export.run(**ins)\n"
        "np.savez('outputs.npz', **{k: cp.asnumpy(v) for k, v in out.items()})\n")
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True)
    got = dict(np.load(tmp_path / "outputs.npz"))
    want = run_graph(s.graph, host, np)
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=1e-6, err_msg=k)


@pytest.mark.gpu
def test_measured_numbers_and_chart():
    import cupy

    from fuselab.explorer.charts import timing_chart_png
    from fuselab.explorer.numbers import numbers_html

    s = session("softmax", "unfused", xp=cupy)
    assert s.backend == "cuda"
    s.execute()
    s.measure(repeats=5)
    html = numbers_html(s)
    assert "Measured</b> on" in html and "eager CuPy" in html and "of copy BW" in html
    assert html.count("µs") >= 2 * len(s.plan.kernels)
    assert "✓" in html
    assert timing_chart_png(s)[:4] == b"\x89PNG"
