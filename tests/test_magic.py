"""The %%fuse magic in a real IPython shell: flags, the namespace contract, errors."""
from __future__ import annotations

import numpy as np
import pytest

IPython = pytest.importorskip("IPython")
from support.shell import ip  # noqa: E402,F401  (the fixture)




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
    assert run(ip, "-o r --backend cpu", "y = x + 1").success
    assert "CPU backend" in ip.user_ns["r"].summary()
    assert run(ip, "-o r", "y = x + 1").success    # auto: Numba when it is installed, else NumPy
    assert ip.user_ns["r"].summary().splitlines()[1].startswith(("Numba backend", "CPU backend"))


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


def test_config_values_are_checked_when_set(ip, caplog):
    magics = ip.magics_manager.registry["FuseMagics"]
    for setting in ("FuseMagics.plan = 'bogus'", "FuseMagics.backend = 'gpu'", "FuseMagics.repeats = 0"):
        ip.run_line_magic("config", setting)
    said = caplog.text
    assert "FuseMagics.plan = 'bogus' is not a choice" in said and "'unfused'" in said
    assert "FuseMagics.repeats = 0 must be a positive number" in said
    assert (magics.plan, magics.backend, magics.repeats) == ("auto", "auto", 20)
    assert run(ip, "-q", "y = x + 1").success  # later cells are unaffected


def test_last_line_expression_is_displayed_and_recorded(ip):
    ip.init_user_ns()  # Out, _ and friends (the fixture clears the namespace)
    res = ip.run_cell("%%fuse -q\ny = x * 2\ny.sum()", store_history=True)
    assert res.success and isinstance(res.result, np.float32)
    assert ip.user_ns["_"] is res.result
    np.testing.assert_allclose(res.result, (ip.user_ns["x"] * 2).sum(), rtol=1e-6)
    res = ip.run_cell("%%fuse -q\ny = x * 2\ny.sum();", store_history=True)
    assert res.success and res.result is None


@pytest.mark.parametrize("line", ["--keep t,u", "--keep t, u", "--keep 't, u'", "--keep t --keep u", "--keep t u"])
def test_keep_spellings(ip, line):
    assert run(ip, f"-q {line}", "t = x + 1\nu = t * 2\ny = u + t").success
    assert {"t", "u", "y"} <= set(ip.user_ns)


@pytest.mark.parametrize("line, cell, words", [
    ("-o for", "y = x + 1", ["-o needs a variable name", "'for'"]),
    ("-o y", "y = x + 1", ["-o y", "binds 'y'"]),
    ("", "y = x + 1\n%timeit y + 1", ["line 2", "%timeit y + 1", "Python only"]),
    ("", "y = x + 1\n!ls", ["line 2", "!ls", "Python only"]),
])
def test_flag_and_cell_mistakes_are_explained(ip, capsys, line, cell, words):
    snap = snapshot(ip.user_ns)
    assert not run(ip, line, cell).success
    out = capsys.readouterr()
    text = out.out + out.err
    for w in words:
        assert w in text, (w, text)
    assert "Traceback" not in text
    assert_unchanged(ip.user_ns, snap)


INTERNAL = ("Traceback", "Tracer", "_LazyInput", "__fuselab", "fuselab/", "InputTracer")


@pytest.mark.parametrize("cell, words", [
    ("y = x * 2\nw = nope + 1", ["line 2", "NameError", "nope"]),
    ("y = x.fill_me()", ["line 1", "'numpy.ndarray' object has no attribute 'fill_me'"]),
    ("y = x(3)", ["line 1", "'numpy.ndarray' object is not callable"]),
    ("y = x + m", ["line 1", "could not be broadcast"]),
    ("y = x + 'a'", ["line 1", "UFuncTypeError"]),
    ("lst = [x * 2]\nboom", ["line 2", "NameError"]),
    ("oa = np.array([1, None])\ny = oa * 2", ["line 2", "TypeError"]),
    ("y = np.ones(10**13)", ["line 1", "MemoryError"]),
    ("v = x[:4]\nv.dtype = np.int32", ["line 2", "in place"]),
])
def test_every_error_names_the_line_and_shows_no_internals(ip, capsys, cell, words):
    snap = snapshot(ip.user_ns)
    assert not run(ip, "-q", cell).success
    text = capsys.readouterr().out
    for w in words:
        assert w in text, (w, text)
    for bad in INTERNAL:
        assert bad not in text, (bad, text)
    assert_unchanged(ip.user_ns, snap)


def test_containers_that_existed_before_get_values_not_tracers(ip):
    ip.run_cell("lst = []\nd = {}\nclass B: pass\nobj = B()", store_history=False)
    assert run(ip, "-q", "lst.append(x * 2)\nd['a'] = x + 1\nobj.v = x.sum()").success
    ns = ip.user_ns
    assert type(ns["lst"][0]) is np.ndarray and type(ns["d"]["a"]) is np.ndarray
    assert type(ns["obj"].v) is np.float32
    np.testing.assert_allclose(ns["lst"][0], ns["x"] * 2)
    # a failing cell leaves values, never tracers, in what existed before
    assert not run(ip, "-q", "lst.append(x * 3)\nboom").success
    assert type(ns["lst"][-1]) is np.ndarray


def test_without_a_gpu_the_message_says_so(ip, capsys):
    from fuselab.session import cuda_status
    if cuda_status()[0]:
        pytest.skip("a GPU is present")
    assert not run(ip, "--backend cuda", "y = x + 1").success
    text = capsys.readouterr().out
    assert "no NVIDIA GPU" in text and "driver" not in text
