"""Differential test of the whole CPU pipeline: hypothesis writes random cells (source
text), which are traced, planned (unfused / auto / max), executed kernel by kernel and
compared with the same text run by plain NumPy (every bound name)."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import fuselab
from fuselab.cell import run_cell
from fuselab.ir import verify

UNARY = ["np.tanh({})", "np.sin({})", "np.abs({})", "np.sqrt(np.abs({}))", "np.exp(np.minimum({}, 3))",
         "-{}", "({} * 0.5)", "np.log1p(np.abs({}))", "np.square({})", "{}.astype(np.float32)"]
BINARY = ["({} + {})", "({} - {})", "({} * {})", "np.maximum({}, {})", "np.where({} > 0, {}, 1.5)",
          "({} / (np.abs({}) + 1))"]
# (expression, resulting shape class) for reductions of a full (R, C) value
REDUCE = [("{}.sum(axis=1, keepdims=True)", "col"), ("{}.max(axis=0, keepdims=True)", "row"),
          ("{}.mean()", "scalar"), ("np.min({}, axis=-1, keepdims=True)", "col"),
          ("{}.std(axis=0, keepdims=True)", "row")]
VIEW = ["{}[:, ::-1]", "{}[::-1]"]


@st.composite
def cells(draw):
    r = draw(st.sampled_from([0, 1, 3, 5]))
    c = draw(st.sampled_from([1, 2, 7]))
    dtype = draw(st.sampled_from(["float32", "float64", "int32"]))
    shapes = {"full": (r, c), "col": (r, 1), "row": (1, c), "vec": (c,), "scalar": ()}
    env = [("A", "full"), ("B", "full"), ("u", "vec"), ("w", "col")]
    lines = []
    for k in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "reduce", "view", "scalar"]))
        a, sa = draw(st.sampled_from(env))
        if kind == "unary":
            expr, shape = draw(st.sampled_from(UNARY)).format(a), sa
        elif kind == "binary":
            b, sb = draw(st.sampled_from(env))
            tmpl = draw(st.sampled_from(BINARY))
            expr = tmpl.format(a, b) if tmpl.count("{}") == 2 else tmpl.format(a, b, b)
            shape = "full" if "full" in (sa, sb) or {sa, sb} in ({"col", "row"}, {"col", "vec"}) else \
                (sa if sa == sb else ("full" if sa != "scalar" and sb != "scalar" else sa if sb == "scalar" else sb))
        elif kind == "reduce" and sa == "full" and r > 0:
            expr, shape = draw(st.sampled_from(REDUCE))
            expr = expr.format(a)
        elif kind == "view" and sa in ("full", "vec", "col"):
            expr = draw(st.sampled_from(VIEW)).format(a) if sa != "vec" else f"{a}[::-1]"
            shape = sa
        else:
            expr, shape = f"({a} + {draw(st.sampled_from(['1', '2.5', 'True']))})", sa
        name = f"v{k}"
        lines.append(f"{name} = {expr}")
        env.append((name, shape))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    def arr(shape):
        v = rng.standard_normal(shape) * 3
        return v.astype(dtype)
    ns = {"np": np, "A": arr(shapes["full"]), "B": arr(shapes["full"]), "u": arr(shapes["vec"]),
          "w": arr(shapes["col"])}
    return "\n".join(lines), ns


def _plain(source, ns):
    env = dict(ns)
    with np.errstate(all="ignore"):
        exec(source, env)
    return env


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cells())
def test_random_cells_match_numpy(cell):
    source, ns = cell
    try:
        want = _plain(source, ns)
    except ValueError:  # shapes NumPy itself rejects: fuselab must reject them too
        import pytest
        with pytest.raises(fuselab.errors.TraceError):
            fuselab.trace_cell(source, ns)
        return
    traced = fuselab.trace_cell(source, ns)
    verify(traced.graph)
    for strategy in ("unfused", "auto", "max"):
        got = dict(ns)
        with np.errstate(all="ignore"):
            run_cell(got, source, backend="cpu", strategy=strategy, quiet=True, time=False)
        for name in traced.bound:
            w = np.asarray(want[name])
            g = np.asarray(got[name])
            assert g.shape == w.shape and g.dtype == w.dtype, (strategy, name, source)
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5, equal_nan=True,
                                       err_msg=f"{strategy}: {source}")
