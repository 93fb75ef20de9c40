"""Cells the CUDA templates cannot compile as written still run as plain CuPy does:
kernels with values the generated C++ has no type for (complex) run their nodes through
CuPy (an OpaqueCall with the reason, shown in the code panel); names outside ASCII (`β`)
become ASCII identifiers; a CuPy 0-d integer (a.argmax()) indexes as CuPy takes it.
Found by running a red team's 1,040 cells with CuPy arrays on the H200 (2026-12-04)."""
from __future__ import annotations

import numpy as np
import pytest

import fuselab
from codegen_util import needs_nvrtc
from cuda_host import HostRunner, needs_cxx
from fuselab.codegen import CodegenOptions, KernelCode, OpaqueCall, generate, launch_candidates
from fuselab.codegen.emit import sanitize
from fuselab.interp import run_graph
from fuselab.plan import make_plan

COMPLEX_CELL = "r = c.astype(float)\ns = (c * 2).real + 1\nt = r * s"


def _plan(source: str, **inputs):
    traced = fuselab.trace_cell(source, {"np": np, **inputs})
    return make_plan(traced.graph, "auto"), traced


def test_complex_kernels_are_library_calls_with_a_reason():
    c = np.array([1 + 1j, -1 - 2j, 3j])
    plan, _ = _plan(COMPLEX_CELL, c=c)
    codes = generate(plan, CodegenOptions())
    fallback = [code for code in codes if isinstance(code, OpaqueCall) and code.reason]
    assert fallback and all("complex128" in code.reason for code in fallback)
    for code in fallback:
        assert launch_candidates(plan, code.index) == ()
        assert list(code.nodes) == sorted(code.nodes)   # graph order: each node after its inputs


def test_real_kernels_are_still_generated():
    plan, _ = _plan("t = a * 2 + 1", a=np.arange(4.0))
    assert all(isinstance(code, KernelCode) for code in generate(plan, CodegenOptions()))


@needs_cxx
def test_complex_library_calls_match_numpy_on_the_emulator():
    c = np.array([1 + 1j, -1 - 2j, 3j, 0.5 - 0.25j])
    plan, traced = _plan(COMPLEX_CELL, c=c)
    got = HostRunner([plan]).run(plan, traced.inputs)
    want = run_graph(plan.graph, traced.inputs)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


def test_the_code_panel_says_why_there_is_no_cuda():
    from fuselab.explorer.code import cuda_code_html

    class Info:
        source = None
        code = OpaqueCall(0, "k0_cast", 1, (0,), (1,), (1,), reason="%0 (input) is complex128, which ...")
        template = type("T", (), {"value": "pointwise"})()
    html = cuda_code_html(Info())
    assert "through CuPy" in html and "complex128" in html


@pytest.mark.parametrize("name, want", [("β", "u3b2"), ("x_1", "x_1"), ("a-b", "a_b"), ("2x", "v_2x"), ("__shared__", "_shared_"), ("_Z", "v_Z"),
                                        ("αβ", "u3b1u3b2")])
def test_identifiers_are_ascii(name, want):
    assert sanitize(name) == want


@needs_nvrtc
def test_non_ascii_names_compile():
    from codegen_util import nvrtc_compile
    plan, _ = _plan("α = a * 2\nβ = α.sum()\nγ = a - α", a=np.arange(5.0))
    codes = [c for c in generate(plan, CodegenOptions()) if isinstance(c, KernelCode)]
    assert any("u3b2" in c.source for c in codes)
    nvrtc_compile(codes)


@pytest.mark.gpu
def test_complex_and_unicode_cells_run_on_the_gpu():
    import cupy as cp
    from fuselab import runtime
    c = cp.asarray(np.array([1 + 1j, -1 - 2j, 3j, 0.5 - 0.25j]))
    traced = fuselab.trace_cell(COMPLEX_CELL, {"np": cp, "c": c})
    got = runtime.execute(make_plan(traced.graph, "auto"), traced.inputs)
    r = c.astype(float)
    want = r * ((c * 2).real + 1)
    cp.testing.assert_array_equal(got["t"], want)
    a = cp.arange(5.0)
    traced = fuselab.trace_cell("α = a * 2\nβ = α.sum()", {"np": cp, "a": a})
    got = runtime.execute(make_plan(traced.graph, "auto"), traced.inputs)
    assert float(got["β"]) == 20.0


@pytest.mark.gpu
def test_a_cupy_0d_integer_slices_as_cupy_takes_it():
    import cupy as cp
    a = cp.asarray(np.array([1.0, 5.0, 2.0, 9.0, 3.0]))
    from fuselab import runtime
    traced = fuselab.trace_cell("k = a.argmax()\nq = a[:k] * 2\n", {"np": cp, "a": a})
    got = runtime.execute(make_plan(traced.graph, "auto"), traced.inputs)
    cp.testing.assert_array_equal(got["q"], a[:3] * 2)


@pytest.mark.gpu
def test_range_of_a_cupy_0d_integer_raises_as_cupy_does():
    """Only slicing converts: CuPy's 0-d arrays have no __index__, so range() refuses them."""
    import cupy as cp
    a = cp.arange(5)
    with pytest.raises(TypeError):
        range(a.sum())
    with pytest.raises(Exception, match="cannot be interpreted as an integer"):
        fuselab.trace_cell("r = list(range(a.sum()))\n", {"np": cp, "a": a})


SCALAR_STORES = [("int32", "a[0] = np.nan"), ("int32", "a[1] = np.inf"), ("int8", "a[0] = 300.0"),
                 ("float64", "a[0] = 1 + 2j"), ("int64", "a.fill(np.nan)"),
                 ("int8", "r = np.full(3, 300, dtype=np.int8)"), ("int32", "a[2] = 7.9\nr = a * 1")]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, cell", SCALAR_STORES, ids=[c for _, c in SCALAR_STORES])
def test_scalar_stores_into_cupy_arrays_fail_as_plain_cupy(dtype, cell):
    """CuPy stores a Python scalar through NumPy's scalar conversion: the same errors."""
    import cupy as cp

    def run(fused: bool):
        ns = {"np": cp, "a": cp.zeros(3, dtype=dtype)}
        try:
            if fused:
                fuselab.trace_cell(cell, ns)
            else:
                exec(cell, ns)
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return f"{type(e).__name__}: {e}"
        return None
    plain = run(False)
    fused = run(True)
    if plain is None:
        assert fused is None
    else:   # fuselab names the error's type and message in its TraceError
        assert fused is not None and plain.split(":")[0] + ":" in fused, (plain, fused)


def test_export_refuses_a_kernel_run_through_cupy_with_its_reason():
    from fuselab.explorer.export import ExportError, export_python
    from fuselab.session import Session
    from fuselab.trace import trace_cell
    s = Session(trace_cell("t = c.astype(float) * 2 + 1", {"np": np, "c": np.array([1 + 1j, 2 - 1j])}))
    assert any(getattr(code, "reason", "") for code in s.codes())
    with pytest.raises(ExportError, match="complex128"):
        export_python(s)


@needs_nvrtc
@pytest.mark.parametrize("name", ["__shared__", "__global__", "_Z", "a__b", "threadIdx", "exp", "int",
                                  "fl_vec", "fl_add_op", "rv", "NULL", "nullptr", "friend", "decltype",
                                  "static_cast", "catch"])
def test_arrays_named_as_cuda_reserves_compile(name):
    """An array of the notebook's called `__shared__` (a CUDA macro) or `_Z` (reserved
    in C++) becomes an ordinary identifier in every kernel that names it."""
    from codegen_util import nvrtc_compile
    src = f"y = {name} * 2 + 1\nz = np.exp(y - y.max(axis=-1, keepdims=True))\ns = (y * {name}).sum(axis=0)"
    plan, _ = _plan(src, **{name: np.ones((8, 30), np.float32)})
    nvrtc_compile([c for c in generate(plan, CodegenOptions()) if isinstance(c, KernelCode)])


def test_complex_outputs_compare_by_parts_with_nan_equal_to_nan():
    """The runtime's check (GPU against the unfused plan) of a complex output: each part
    as a float array, NaN equal to NaN, the float tolerance."""
    from fuselab.runtime.verify import compare_one
    a = np.array([complex(1, 1), complex(np.nan, 2), complex(3, np.nan)], np.complex64)
    assert compare_one("c", a, a.copy()).ok
    near = a.copy()
    near.real *= 1 + 1e-6
    near.imag *= 1 - 1e-6
    assert compare_one("c", near, a).ok                             # within float32's 2e-5
    bad = compare_one("c", np.array([1 + 1.1j]), np.array([1 + 1j]))
    assert not bad.ok and "c.imag" in bad.message
