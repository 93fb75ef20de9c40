"""The %%fuse magic in a real IPython shell: flags, the namespace contract, errors."""
from __future__ import annotations

import numpy as np
import pytest

IPython = pytest.importorskip("IPython")
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402


@pytest.fixture()
def ip():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "fuselab")
    shell.user_ns.clear()
    shell.run_cell("import numpy as np\nx = np.linspace(0, 1, 1000, dtype=np.float32)\n"
                   "m = np.arange(48, dtype=np.float64).reshape(6, 8) / 7", store_history=False)
    yield shell
    shell.user_ns.clear()


def run(ip, line, cell):
    """Run a %%fuse cell the way a notebook does; return the ExecutionResult."""
    return ip.run_cell(f"%%fuse {line}\n{cell}", store_history=False)


def snapshot(ns):
    return {k: (v, v.copy() if isinstance(v, np.ndarray) else None)
            for k, v in ns.items() if not k.startswith("_")}


def assert_unchanged(ns, snap):
    now = {k: v for k, v in ns.items() if not k.startswith("_")}
    assert set(now) == set(snap)
    for k, (v, copy) in snap.items():
        assert now[k] is v, k
        if copy is not None:
            np.testing.assert_array_equal(v, copy)


def test_results_equal_plain_execution(ip):
    res = run(ip, "-q", "t = x * x + 1.0\ny = np.exp(t) * 0.5 - np.sin(x)")
    assert res.success
    x = ip.user_ns["x"]
    want = np.exp(x * x + 1.0) * 0.5 - np.sin(x)
    got = ip.user_ns["y"]
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert "t" not in ip.user_ns  # fused away: not bound


def test_a_name_that_existed_before_is_rebound_never_deleted(ip):
    ip.user_ns["t"] = "stale"
    assert run(ip, "-q", "t = x + 1\ny = t * 2").success
    np.testing.assert_array_equal(ip.user_ns["t"], ip.user_ns["x"] + 1)
    x0 = ip.user_ns["x"]
    assert run(ip, "-q", "x = x * 2\ny = x + 1").success
    np.testing.assert_array_equal(ip.user_ns["x"], x0 * 2)


def test_keep_binds_an_intermediate(ip):
    assert run(ip, "-q --keep t", "t = x + 1\ny = t * 2").success
    np.testing.assert_allclose(ip.user_ns["t"], ip.user_ns["x"] + 1)


def test_python_values_and_functions_are_bound(ip):
    assert run(ip, "-q", "def f(a):\n    return a * 3\nk = 2\ny = f(x) + k").success
    assert ip.user_ns["k"] == 2 and callable(ip.user_ns["f"])
    np.testing.assert_allclose(ip.user_ns["y"], ip.user_ns["x"] * 3 + 2)


def test_output_object(ip):
    assert run(ip, "-q -o r --plan unfused", "y = np.exp(m - m.max(axis=1, keepdims=True))").success
    r = ip.user_ns["r"]
    assert len(r.graph) >= 4
    assert len(r.plan.kernels) == 3  # max, subtract, exp
    assert all(k.nodes for k in r.kernels)
    np.testing.assert_allclose(r.outputs["y"], ip.user_ns["y"])


def test_inplace_updates_the_input_as_plain_numpy_does(ip):
    x0 = ip.user_ns["x"]
    before = x0.copy()
    assert run(ip, "-q", "x += 1").success
    assert ip.user_ns["x"] is x0
    np.testing.assert_allclose(x0, before + 1)


@pytest.mark.parametrize("line, cell", [
    ("--fullgraph", "if x.sum() > 0:\n    y = x"),
    ("", "y = x + m"),
    ("", "y = x +"),
    ("", "k = 5\ny = x.reshape(7, 7)"),
    ("--bogus", "y = x"),
    ("-n 0", "y = x"),
    ("--plan fastest", "y = x"),
    ("--backend cuda", "y = x + 1"),
])
def test_errors_leave_the_namespace_exactly_as_it_was(ip, line, cell):
    from fuselab.session import cuda_status
    if "cuda" in line and cuda_status()[0]:
        pytest.skip("a GPU is present, so --backend cuda is not an error here")
    snap = snapshot(ip.user_ns)
    res = run(ip, line, cell)
    assert not res.success
    assert_unchanged(ip.user_ns, snap)


def test_error_message_is_clean(ip, capsys):
    run(ip, "--fullgraph", "y = x * 2\nif y.max() > 1:\n    z = y")
    out = capsys.readouterr()
    text = out.out + out.err
    assert "line 2" in text and "np.where" in text
    assert "Traceback" not in text


def test_help_has_examples(ip):
    doc = ip.find_cell_magic("fuse").__doc__
    assert "--plan" in doc and "Examples" in doc and "%%fuse" in doc


def test_config_default_backend(ip):
    ip.run_line_magic("config", "FuseMagics.plan = 'unfused'")
    try:
        assert run(ip, "-q -o r", "y = np.exp(x) + 1").success
        assert ip.user_ns["r"].plan.strategy == "unfused"
    finally:
        ip.run_line_magic("config", "FuseMagics.plan = 'auto'")


def test_cpu_backend_says_so(ip, capsys):
    from fuselab.session import cuda_status
    if cuda_status()[0]:
        pytest.skip("GPU present")
    assert run(ip, "-o r", "y = x + 1").success
    assert "CPU backend" in ip.user_ns["r"].summary()


def test_cupy_fuse_functions_are_traced_through(ip):
    cupy = pytest.importorskip("cupy")
    ip.user_ns["cp"] = cupy
    ip.run_cell("@cp.fuse()\ndef ka(a):\n    return a * 2 + 1\n"
                "@cp.fuse()\ndef kb(a):\n    return cp.exp(a) - 1\n", store_history=False)
    assert run(ip, "-q -o r --backend cpu", "y = kb(ka(x))").success
    ops = [n.op for n in ip.user_ns["r"].graph.nodes]
    assert ops.count("exp") == 1 and ops.count("multiply") == 1
    np.testing.assert_allclose(ip.user_ns["y"], np.exp(ip.user_ns["x"] * 2 + 1) - 1, rtol=1e-6)


def test_helpers_from_earlier_cells_are_traced_and_cell_functions_see_the_notebook(ip):
    ip.run_cell("def helper(a):\n    return np.tanh(a) * scale\nscale = 3.0", store_history=False)
    assert run(ip, "-q -o r", "def g(a):\n    return helper(a) + 1\ny = g(x)").success
    assert any(n.op == "tanh" for n in ip.user_ns["r"].graph.nodes)
    np.testing.assert_allclose(ip.user_ns["y"], np.tanh(ip.user_ns["x"]) * 3 + 1, rtol=1e-6)
    g = ip.user_ns["g"]
    assert g.__globals__ is ip.user_ns        # as plain execution would define it
    assert ip.user_ns["helper"].__globals__ is ip.user_ns
    np.testing.assert_allclose(g(np.zeros(2)), [1, 1])
