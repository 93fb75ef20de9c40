"""Errors outside a cell look like errors inside one: `fuselab.explore` and the Session's
methods raise fuselab errors that name the call (or the user's line) and say what to do,
with no internal frames or names."""
from __future__ import annotations

import numpy as np
import pytest

import fuselab
from fuselab.errors import FuselabError
from fuselab.session import Session
from fuselab.trace import trace_cell

INTERNAL = ("Tracer", "_LazyInput", "__fuselab", "InputTracer", "Traceback")


def _clean(e: BaseException) -> str:
    text = str(e)
    for bad in INTERNAL:
        assert bad not in text, (bad, text)
    return text


def _bad_helper(a):
    return a.no_such_method()  # the line the error names


def test_explore_names_the_functions_line():
    with pytest.raises(FuselabError) as e:
        fuselab.explore(_bad_helper, np.ones(4), quiet=True, time=False, backend="cpu")
    text = _clean(e.value)
    assert "a.no_such_method()" in text and "'numpy.ndarray' object has no attribute 'no_such_method'" in text


def test_explore_of_a_function_that_returns_no_array():
    with pytest.raises(FuselabError) as e:
        fuselab.explore(lambda a: float(a.sum()), np.ones(4), quiet=True, time=False, backend="cpu")
    assert "returned float" in _clean(e.value)


def test_explore_of_a_list_says_lists_are_not_traced():
    with pytest.raises(FuselabError) as e:
        fuselab.explore(lambda x: np.exp(x), [1.0, 2.0], quiet=True, time=False, backend="cpu")
    text = _clean(e.value)
    assert "returned ndarray" in text and "x are Python lists or tuples" in text and "np.asarray" in text


def test_explore_runs_and_gives_numpys_results():
    s = fuselab.explore(lambda a, b: (np.tanh(a) * b, a.sum()), np.ones(4), np.arange(4.0), quiet=True,
                        time=False, backend="cpu")
    np.testing.assert_allclose(s.outputs["out0"], np.tanh(1.0) * np.arange(4.0))


@pytest.fixture()
def session():
    return Session(trace_cell("y = np.exp(x) + 1\nz = y / y.sum()", {"np": np, "x": np.ones((8, 4))}))


@pytest.mark.parametrize("call, words", [
    (lambda s: s.fuse(0, 99), ["session.fuse(0, 99)", "What to do"]),
    (lambda s: s.split("x"), ["session.split('x')", "no node"]),
    (lambda s: s.choose("fastest"), ["session.choose('fastest')", "'auto'"]),
])
def test_session_refusals_name_the_call_and_keep_the_plan(session, call, words):
    before = session.plan
    with pytest.raises(FuselabError) as e:
        call(session)
    text = _clean(e.value)
    for w in words:
        assert w in text, (w, text)
    assert session.plan is before


def test_session_reprs_are_short(session):
    assert len(repr(session)) < 200
    for k in session.kernels:
        r = repr(k)
        assert r.startswith("<kernel k") and len(r) < 200 and "__global__" not in r
    text = session.explain()
    assert "kernel 0" in text and "decisions" in text and "results: z" in text


def test_explore_with_an_unknown_plan_says_which_plans_there_are():
    """(was: the planner's bare ValueError, with no 'What to do')"""
    with pytest.raises(FuselabError) as e:
        fuselab.explore(lambda x: x * 2, np.ones(4), plan="fastest", quiet=True)
    assert "'fastest'" in str(e.value) and "'auto', 'unfused', 'max'" in str(e.value)


def test_the_no_gpu_hint_names_the_cpus_backend_for_the_magic_and_for_explore(monkeypatch):
    from fuselab import session as session_mod
    monkeypatch.setattr(session_mod, "cuda_status", lambda: (False, "no NVIDIA GPU"))
    for numba_ok, name in ((True, "numba"), (False, "cpu")):
        monkeypatch.setattr(session_mod, "numba_status", lambda ok=numba_ok: (ok, "" if ok else "not installed"))
        with pytest.raises(FuselabError) as e:
            session_mod.resolve_backend("cuda", "numpy")
        assert f"--backend {name}" in str(e.value) and f"backend='{name}' in fuselab.explore" in str(e.value)
