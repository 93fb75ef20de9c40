"""User constraints: the explorer's toggles give new legal plans or a reason why not."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuselab.interp import run_graph, run_plan
from fuselab.ir import GraphBuilder
from fuselab.plan import PlanError, make_plan
from fuselab.plan.analysis import analyse
from fuselab.plan.partition import problems

import support as T
from support import Expr


def kernel_with(plan, node: int) -> int:
    return next(k for k, kern in enumerate(plan.kernels) if node in kern.nodes and
                not (plan.graph.nodes[node].op in ("reshape", "transpose", "slice")))


def runs(plan) -> None:
    assert problems(plan) == []
    xs = T.random_inputs(plan.graph, seed=2)
    want, got = run_graph(plan.graph, xs), run_plan(plan, xs)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def chain():
    """%0 x -> %1 exp -> %3 mul 2 -> %4 sin -> y; and %5 = x.sum() (a second result)."""
    b = GraphBuilder()
    x = Expr(b, b.input("x", (256,), np.float32))
    y = (x.f("exp") * 2.0).f("sin")
    g = b.build([("y", y.i), ("s", x.sum().i)])
    return g


def test_plan_error_is_a_value_error():
    assert issubclass(PlanError, ValueError)


def test_fuse_on_an_unfused_plan_fuses_only_that():
    plan = make_plan(T.softmax(64, 128), "unfused")
    assert len(plan.kernels) == 5
    p2 = plan.fuse(("k", 1), ("k", 2))          # subtract + exp
    assert len(p2.kernels) == 4 and p2.strategy == "unfused"
    assert kernel_with(p2, 2) == kernel_with(p2, 3)
    assert len(p2.constraints.together) == 1
    p3 = p2.fuse(3, 4)                           # exp + sum: accumulates with the first
    assert len(p3.kernels) == 3 and kernel_with(p3, 2) == kernel_with(p3, 4)
    assert p3.constraints.history == ("fuse kernel 1, kernel 2", "fuse %3, %4")
    runs(p3)
    assert plan.kernels == make_plan(T.softmax(64, 128), "unfused").kernels  # plans are immutable


def test_split_a_kernel_and_cut_an_edge():
    plan = make_plan(T.softmax(64, 128))
    assert len(plan.kernels) == 1
    split = plan.split(("k", 0))
    assert len(split.kernels) == 5
    runs(split)
    cut = plan.cut(3, 4)                           # store exp for the sum
    assert kernel_with(cut, 3) != kernel_with(cut, 4)
    (b,) = [b for b in cut.boundaries() if 3 in b.values]
    runs(cut)
    one = plan.split(5)                            # take the divide out of its kernel
    assert kernel_with(one, 5) != kernel_with(one, 4)
    runs(one)
    assert any("you asked to keep" in b.reason for b in cut.boundaries())


def test_fuse_refuses_with_the_legality_reason():
    g = T.div_by_sum(1024)
    plan = make_plan(g)
    with pytest.raises(PlanError, match="grid-wide dependence"):
        plan.fuse(1, 2)
    mm = make_plan(T.matmul_bias_act(8, 8, 8))
    with pytest.raises(PlanError, match="is opaque: it runs alone"):
        mm.fuse(("k", 0), ("k", 1))


def test_fusing_the_ends_of_a_path_takes_the_middle_and_an_opaque_middle_refuses():
    plan = make_plan(chain(), "unfused")
    p2 = plan.fuse(1, 4)                            # exp ... sin: the multiply joins
    k = kernel_with(p2, 1)
    assert kernel_with(p2, 3) == k == kernel_with(p2, 4)
    runs(p2)
    mm = make_plan(T.matmul_bias_act(8, 8, 8), "unfused")
    g = mm.graph
    mat = next(i for i, n in enumerate(g.nodes) if n.op == "opaque")
    before = next(i for i, n in enumerate(g.nodes) if n.op == "add")
    with pytest.raises(PlanError, match="is opaque"):
        mm.fuse(mat, before)


def test_a_later_toggle_replaces_a_contradicting_one():
    plan = make_plan(chain(), "unfused").fuse(1, 3)
    assert kernel_with(plan, 1) == kernel_with(plan, 3)
    cut = plan.cut(1, 3)
    assert kernel_with(cut, 1) != kernel_with(cut, 3)
    assert cut.constraints.together == ()
    assert any("dropped the earlier 'fuse'" in d.text for d in cut.log)
    runs(cut)


def test_an_indirect_contradiction_is_refused():
    plan = make_plan(chain()).cut(1, 3)
    with pytest.raises(PlanError, match="you asked to keep %1 \\(exp\\) and %3 \\(multiply\\) apart"):
        plan.fuse(1, 4)


def test_with_strategy_keeps_the_constraints():
    plan = make_plan(T.softmax(64, 128)).cut(3, 4)
    mx = plan.with_strategy("max")
    assert mx.strategy == "max" and mx.constraints == plan.constraints
    assert kernel_with(mx, 3) != kernel_with(mx, 4)
    runs(mx)
    assert len(mx.without_constraints().kernels) == 1


def test_bad_targets_say_what_is_wrong():
    plan = make_plan(chain())
    with pytest.raises(PlanError, match="is the input x"):
        plan.fuse(0, 1)
    with pytest.raises(PlanError, match="there is no node %99"):
        plan.fuse(1, 99)
    with pytest.raises(PlanError, match="there is no kernel 7"):
        plan.fuse(("k", 7), 1)
    with pytest.raises(PlanError, match="does not read"):
        plan.cut(4, 1)
    with pytest.raises(PlanError, match="at least two"):
        plan.fuse(1)
    unfused = make_plan(chain(), "unfused")
    fused = unfused.fuse(unfused.kernels[0], ("k", 1))      # a Kernel object or ("k", index)
    assert fused.constraints.together and len(fused.kernels) == len(unfused.kernels) - 1


def test_legal_merge_answers_for_any_pair():
    plan = make_plan(T.softmax(64, 128), "unfused")
    assert plan.legal_merge(0, 1) == (True, "legal as one row kernel")
    ok, why = plan.legal_merge(0, 9)
    assert not ok and "no kernel 9" in why


def test_views_target_the_ops_that_read_them():
    b = GraphBuilder()
    x = Expr(b, b.input("x", (8, 16), np.float32))
    t = x.f("exp").T              # %1 exp, %2 transpose (a view)
    g = b.build([("y", (t * 2.0).i)])
    plan = make_plan(g, "unfused")
    an = analyse(g)
    assert not an.unit[2]
    p2 = plan.fuse(1, 2)          # the view stands for the multiply that reads it
    assert len(p2.kernels) == 1
    runs(p2)


# ---------------------------------------------------------------------------
# random constraint sequences
# ---------------------------------------------------------------------------

@st.composite
def toggles(draw):
    rows = draw(st.sampled_from([1, 2, 3]))
    cols = draw(st.sampled_from([1, 4, 5]))
    g = T.random_graph(draw(st.integers(2, 12)), lambda seq: draw(st.sampled_from(list(seq))), rows, cols)
    steps = []
    for _ in range(draw(st.integers(1, 5))):
        verb = draw(st.sampled_from(["fuse", "split", "cut", "strategy"]))
        steps.append((verb, draw(st.integers(0, 10 ** 6)), draw(st.integers(0, 10 ** 6))))
    return g, draw(st.sampled_from(["auto", "max", "unfused"])), steps


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(toggles())
def test_random_toggle_sequences_give_legal_plans_or_reasons(case):
    g, strategy, steps = case
    an = analyse(g)
    plan = make_plan(g, strategy)
    runs(plan)
    units = list(an.units)
    for verb, a, b in steps:
        try:
            if verb == "fuse":
                new = plan.fuse(units[a % len(units)], units[b % len(units)])
            elif verb == "split":
                new = plan.split(("k", a % len(plan.kernels)))
            elif verb == "cut":
                edges = [(u, v) for v in units for u, _ in an.prods[v] if an.unit[u]]
                if not edges:
                    continue
                new = plan.cut(*edges[a % len(edges)])
            else:
                new = plan.with_strategy(["auto", "max", "unfused"][a % 3])
        except PlanError as e:
            assert str(e)                      # a reason, and the old plan stays as it was
            runs(plan)
            continue
        runs(new)
        assert len(new.constraints.history) >= len(plan.constraints.history)
        plan = new


def test_merging_two_ops_after_a_split_keeps_the_rest_apart():
    import numpy as np
    from fuselab.ir import GraphBuilder
    from fuselab.plan import make_plan
    b = GraphBuilder()
    x = b.input("x", (1 << 16,), np.float32)
    e = b.elemwise("exp", [x])
    s = b.elemwise("sin", [e])
    c = b.elemwise("cos", [s])
    t = b.elemwise("tanh", [c])
    g = b.build([("y", t)])
    e, s, c, t = 1, 2, 3, 4
    plan = make_plan(g, "auto")
    assert len(plan.kernels) == 1
    split = plan.split(("k", 0))
    assert len(split.kernels) == 4
    merged = split.fuse(e, s)
    assert len(merged.kernels) == 3
    assert merged.kernel_of[e] == merged.kernel_of[s]
    assert len({merged.kernel_of[e], merged.kernel_of[c], merged.kernel_of[t]}) == 3
