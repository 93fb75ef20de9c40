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
