"""Graph breaks in the planner: Python needed a value (`if s > 0:`), so what was traced
before ran, and the device finished, before the cell went on. No kernel spans a break,
kernels keep stage order, each break crossed costs a sync, and the reasons say so."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuselab.interp import run_graph, run_plan
from fuselab.ir import Graph, GraphBuilder, SourceLoc, verify
from fuselab.plan import PlanError, make_plan, unfused_plan
from fuselab.plan.cost import DeviceParams, crossed_breaks, plan_time, report
from fuselab.plan.model import kernel_stage
from fuselab.plan.partition import problems

import support as T

LINE = SourceLoc(3, "if s > 0:")
WHY = "Python needed the value of `s > 0`"


def chain_with_break() -> Graph:
    """a = x * 2; s = a.max(); `if s > 0:` y = exp(a) + 1: without the break, a, y and
    (horizontally) nothing else share a pointwise kernel; with it, y waits for the sync."""
    b = GraphBuilder()
    x = b.input("x", (64, 128), np.float32)
    a = b.elemwise("multiply", [x, b.const(2.0, np.float32)])
    s = b.reduce("max", x)
    b.graph_break(s, WHY, LINE)
    y = b.elemwise("add", [b.elemwise("exp", [a]), b.const(1.0, np.float32)])
    return b.build([("a", a), ("s", s), ("y", y)])


def softmax_with_break() -> Graph:
    """m = x.max(-1, keepdims=True); print(m); then the rest of a softmax."""
    b = GraphBuilder()
    x = b.input("x", (64, 128), np.float32)
    m = b.reduce("max", x, axis=-1, keepdims=True)
    b.graph_break(m, "Python needed the value of `m` (print)", SourceLoc(2, "print(m)"))
    e = b.elemwise("exp", [b.elemwise("subtract", [x, m])])
    y = b.elemwise("true_divide", [e, b.reduce("sum", e, axis=-1, keepdims=True)])
    return b.build([("y", y)])


def stages(plan) -> list[int]:
    return [kernel_stage(plan.graph, k) for k in plan.kernels]


def check_runs(plan) -> None:
    assert problems(plan) == []
    rng = np.random.default_rng(0)
    xs = {n: rng.standard_normal(plan.graph.nodes[i].shape).astype(np.float32)
          for n, i in zip(plan.graph.input_names(), plan.graph.input_ids)}
    want, got = run_graph(plan.graph, xs), run_plan(plan, xs)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6)


def test_without_the_break_the_chain_is_two_kernels_and_with_it_three():
    g = chain_with_break()
    verify(g)
    plain = Graph(g.nodes, g.outputs, g.source)       # the same cell, no break
    assert len(make_plan(plain).kernels) == 2        # x*2 with exp+1, and the max
    for strategy in ("auto", "max"):
        plan = make_plan(g, strategy)
        assert len(plan.kernels) == 3, strategy      # x*2 | the max | exp+1 after the sync
        assert stages(plan) == [0, 0, 1]
        check_runs(plan)
    assert len(unfused_plan(g).kernels) == 4


def test_a_boundary_forced_by_a_break_names_it_with_the_users_line():
    plan = make_plan(chain_with_break())
    reasons = [b.reason for b in plan.boundaries()]
    forced = [r for r in reasons if "graph break" in r]
    assert forced and all(r.startswith("%") for r in forced)
    text = forced[0]
    assert "traced after the graph break at line 3" in text and WHY in text
    assert "the GPU must finish everything before a break before the cell goes on" in text
    assert f"graph break: {WHY} (line 3: if s > 0:)" in plan.explain()


def test_no_toggle_fuses_across_a_break():
    plan = make_plan(chain_with_break())
    a, y = 2, len(plan.graph.nodes) - 1
    with pytest.raises(PlanError, match="graph break at line 3"):
        plan.fuse(a, y)
    k_a, k_y = plan.kernel_of[a], plan.kernel_of[y]
    ok, why = plan.legal_merge(k_a, k_y)
    assert not ok and "graph break at line 3" in why


def test_a_break_inside_a_softmax_leaves_the_max_alone_and_the_rest_one_row_kernel():
    plan = make_plan(softmax_with_break())
    assert [k.template.value for k in plan.kernels] == ["reduction", "row"]
    assert stages(plan) == [0, 1]
    assert all(k.space is not None and k.space.template is k.template for k in plan.kernels)
    check_runs(plan)


def test_kernels_keep_stage_order_even_when_a_later_stage_reads_only_inputs():
    b = GraphBuilder()
    x = b.input("x", (1024,), np.float32)
    w = b.input("w", (1024,), np.float32)
    s = b.reduce("sum", b.elemwise("exp", [x]))
    b.graph_break(s, WHY, LINE)
    t = b.elemwise("sin", [w])                       # reads only an input
    u = b.elemwise("add", [t, s])
    g = b.build([("s", s), ("t", t), ("u", u)])
    for strategy in ("auto", "max", "unfused"):
        plan = make_plan(g, strategy)
        assert stages(plan) == sorted(stages(plan)), strategy
        check_runs(plan)


def test_each_break_crossed_costs_one_sync_in_the_report():
    params = DeviceParams(sync_s=25e-6, step_s=0.0)   # no wait for Python's launches: the sum
    plan = make_plan(chain_with_break(), params=params)
    rep = report(plan, params)
    assert [b.reason for b in rep.breaks] == [WHY]
    assert rep.sync_s == pytest.approx(25e-6)
    assert rep.time_s == pytest.approx(sum(k.time_s for k in rep.kernels) + 25e-6 + params.run_s)
    assert rep.unfused_time_s > rep.time_s
    assert plan_time(plan, params) + params.run_s == pytest.approx(rep.time_s)
    assert "graph breaks: 1, a device sync each" in str(rep) and "if s > 0:" in str(rep)
    # with slow launches the second kernel waits for Python; at the break Python waits
    # for the device and then issues the kernel after it at once
    slow = DeviceParams(sync_s=25e-6, step_s=50e-6)
    t = [k.time_s for k in report(plan, slow).kernels]
    assert [kernel_stage(plan.graph, k) for k in plan.kernels] == [0, 0, 1]
    assert report(plan, slow).time_s == pytest.approx(slow.run_s + slow.launch_s + 50e-6 + t[1] + 25e-6 + t[2])


def test_a_break_with_nothing_to_finish_before_it_costs_no_sync():
    b = GraphBuilder()
    x = b.input("x", (1024,), np.float32)
    b.graph_break(None, "Python needed len(x)", SourceLoc(1, "for i in range(len(x)):"))
    y = b.elemwise("exp", [x])
    plan = make_plan(b.build([("y", y)]))
    assert crossed_breaks(plan) == () and report(plan).sync_s == 0.0


def test_the_log_lists_the_breaks():
    plan = make_plan(softmax_with_break())
    assert any(d.kind == "constraint" and "print(m)" in d.text for d in plan.log)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(["auto", "max", "unfused"]))
def test_random_graphs_with_breaks_plan_legally_and_compute_what_numpy_computes(data, strategy):
    draw = data.draw
    rows, cols = draw(st.sampled_from([(1, 3), (3, 5), (4, 7)]))
    g = T.random_graph(draw(st.integers(2, 16)), lambda seq: draw(st.sampled_from(list(seq))),
                       rows, cols, break_odds=3)
    verify(g)
    plan = make_plan(g, strategy)
    assert stages(plan) == sorted(stages(plan))
    check_runs(plan)
