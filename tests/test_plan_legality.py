"""Planner legality: kernel counts of reference cells, and the reasons of refusals."""
from __future__ import annotations

import numpy as np
import pytest

from fuselab.interp import run_graph, run_plan
from fuselab.ir import GraphBuilder, verify
from fuselab.ops import Aval, OpaqueFn
from fuselab.plan import Template, make_plan
from fuselab.plan.analysis import analyse, mask_of
from fuselab.plan.legality import Budgets, check
from fuselab.plan.partition import problems

import support as T
from support import Expr


def run_equal(plan) -> None:
    """The plan is legal and computes what NumPy computes."""
    assert problems(plan) == []
    xs = T.random_inputs(plan.graph, seed=1)
    want = run_graph(plan.graph, xs)
    got = run_plan(plan, xs)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def templates(plan) -> list[str]:
    return [k.template.value for k in plan.kernels]


def cell(build) -> "Graph":  # noqa: F821 - a tiny builder for one-off graphs
    b = GraphBuilder()
    outs = build(b, lambda name, shape: Expr(b, b.input(name, shape, np.float32)))
    g = b.build([(k, v.i) for k, v in outs.items()])
    verify(g)
    return g


# ---------------------------------------------------------------------------
# kernel counts of the reference cells
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("rows,cols", [(64, 128), (4096, 1024)])
def test_softmax_is_one_row_kernel(rows, cols):
    plan = make_plan(T.softmax(rows, cols))
    assert templates(plan) == ["row"]
    if rows * cols <= 1 << 16:
        run_equal(plan)


def test_layernorm_with_affine_is_one_row_kernel():
    plan = make_plan(T.layernorm(64, 256, affine=True))
    assert templates(plan) == ["row"]
    names = {plan.graph.nodes[i].args["name"] for i in plan.kernels[0].inputs}
    assert names == {"x", "gamma", "beta"}
    run_equal(plan)


@pytest.mark.parametrize("shape", [(1024,), (32, 64)])
def test_division_by_a_full_sum_needs_two_kernels_and_says_why(shape):
    g = cell(lambda b, inp: {"y": (x := inp("x", shape)) / x.sum()})
    plan = make_plan(g)
    assert templates(plan) == ["reduction", "pointwise"]
    ok, reason = plan.legal_merge(0, 1)
    assert not ok
    assert "a full reduction's result is needed by every element" in reason
    assert "grid-wide dependence" in reason
    (boundary,) = plan.boundaries()
    assert not boundary.legal and "grid-wide" in boundary.reason
    run_equal(plan)
    assert templates(make_plan(g, "max")) == ["reduction", "pointwise"]


def test_matmul_bias_activation_is_opaque_alone_plus_one_pointwise_epilogue():
    plan = make_plan(T.matmul_bias_act(64, 32, 48))
    assert templates(plan) == ["opaque", "pointwise"]
    g = plan.graph
    assert [g.nodes[i].op for i in plan.kernels[0].nodes if not g.nodes[i].op == "input"] == ["opaque"]
    assert {g.nodes[i].op for i in plan.kernels[1].nodes} >= {"add", "tanh", "multiply"}
    ok, reason = plan.legal_merge(0, 1)
    assert not ok and "is opaque: it runs alone" in reason
    run_equal(plan)


def test_column_norm_over_few_columns_is_two_kernels_because_its_rows_would_idle_the_gpu():
    """32 columns make 32 rows along a strided axis, a thread each: too few to merge."""
    plan = make_plan(T.column_norm(64, 32))
    assert templates(plan) == ["reduction", "pointwise"]
    ok, reason = plan.legal_merge(0, 1)
    assert not ok
    assert "32 rows whose columns lie 32 elements apart" in reason and "at least 32768 rows" in reason
    run_equal(plan)


def test_column_norm_over_many_columns_may_be_one_row_kernel_along_axis_0():
    plan = make_plan(T.column_norm(64, 1 << 16), "max")
    assert templates(plan) == ["row"] and plan.kernels[0].space.axes == (0,)
    run_equal(plan)


def test_centering_many_short_columns_is_one_row_kernel_along_axis_0():
    """x - x.mean(0) on 2 x 2^20: one pass over 2^20 rows of two strided columns
    (8 bytes an element moved once) rather than a column mean and a subtraction."""
    g = cell(lambda b, inp: {"y": (x := inp("x", (2, 1 << 20))) - x.sum(0) * 0.5})
    plan = make_plan(g)
    assert templates(plan) == ["row"] and plan.kernels[0].space.axes == (0,)
    assert plan.kernels[0].space.rows == 1 << 20


@pytest.mark.parametrize("shape,axis,layout", [
    ((1251, 4736, 17), 1, "slab"),      # 21,267 rows: too few for a thread each; 1251 slabs
    ((4096, 1024, 16), 1, "slab"),      # enough rows, but 16 adjacent ones: a warp's loads straddle slabs
    ((256, 8, 32768), 1, "thread"),     # 8M rows, adjacent ones 32768 wide
    ((700, 9000), 0, "slab"),           # 9000 rows in 282 chunks of 32
    ((40, 3000, 3), 1, None),           # 40 slabs: too few blocks
    ((64, 32), 0, None),                # 32 rows of 64: neither
    ((200000, 4, 3), 1, "thread"),      # slabs of 12 elements: too small to share out
    ((256, 262144), 0, "slab"),         # rows of 256 a thread would re-read: a slab keeps them on chip
    ((65, 100000), 0, "slab"),          # 65 columns: one past a thread's registers
    ((64, 100000), 0, "thread"),        # 64 columns: in a thread's registers
    ((1024, 65536), 0, "thread"),       # a slab of 32 rows of 1024 takes a block an SM: re-read
])
def test_strided_rows_run_a_thread_each_or_a_block_per_slab(shape, axis, layout):
    from fuselab.plan.analysis import row_problem_ok, row_shapes, strided_layout
    rs = row_shapes(shape, axis)
    assert strided_layout(rs) == layout
    assert row_problem_ok(rs) == (layout is not None)
    assert row_problem_ok(rs, 2)    # the template itself runs any of them


def test_softmax_over_a_middle_axis_of_few_adjacent_rows_is_one_slab_kernel():
    """(1251, 4736, 17) float16: 17 adjacent rows of 4736 columns, a block per slab; with
    40 slabs the merge is refused, and the reason names both layouts' needs."""
    import fuselab
    from fuselab.codegen import CodegenOptions, generate
    src = "m = x.max(1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(1, keepdims=True)"
    x = np.lib.stride_tricks.as_strided(np.zeros(1, np.float16), (1251, 4736, 17), (0, 0, 0))
    plan = make_plan(fuselab.trace_cell(src, {"np": np, "x": x}).graph)
    assert templates(plan) == ["row"]
    assert generate(plan, CodegenOptions())[0].notes[0].startswith("slab tier: a block per slab of 17 adjacent rows")
    small = make_plan(fuselab.trace_cell(src, {"np": np, "x": np.zeros((40, 3000, 3), np.float16)}).graph)
    assert templates(small) == ["reduction", "reduction", "pointwise"]
    ok, reason = small.legal_merge(0, 1)
    assert not ok and "at least 32768 rows (a thread each)" in reason and "at least 256 blocks" in reason


def test_two_reduced_axes_are_no_row_kernel():
    g = cell(lambda b, inp: {"y": (x := inp("x", (4, 8, 16))) - x.sum((0, 2), keepdims=True)})
    ok, reason = make_plan(g).legal_merge(0, 1)
    assert not ok and "a row kernel iterates rows and reduces one axis" in reason


def test_sibling_reductions_share_one_kernel_with_two_outputs():
    g = cell(lambda b, inp: {"a": ((x := inp("x", (4096,))) * (y := inp("y", (4096,)))).sum(),
                             "b": (x * x).sum()})
    plan = make_plan(g)
    assert templates(plan) == ["reduction"]
    assert len(plan.kernels[0].outputs) == 2
    run_equal(plan)


def test_mean_and_norm_are_one_reduction_kernel_with_an_epilogue():
    g = cell(lambda b, inp: {"mean": (x := inp("x", (512, 64))).sum(0) * (1 / 512),
                             "norm": (x * x).sum().f("sqrt")})
    plan = make_plan(g)
    assert templates(plan) == ["reduction", "reduction"]
    for k in plan.kernels:
        assert len(k.outputs) == 1   # the epilogue stores only the result
    run_equal(plan)


def test_a_middle_axis_reduction_takes_its_producers():
    g = cell(lambda b, inp: {"s": ((x := inp("x", (8, 16, 4))) * 2.0).f("exp").sum(1)})
    plan = make_plan(g)
    assert templates(plan) == ["reduction"]
    run_equal(plan)


def test_a_per_row_value_without_keepdims_is_not_broadcast_by_row():
    # x.max(-1) has shape (8,): x - m broadcasts it along the columns, as NumPy does
    g = cell(lambda b, inp: {"y": (x := inp("x", (8, 8))) - x.max(-1)})
    an = analyse(g)
    v = check(an, an.all_mask)
    assert not v.ok
    assert "a per-row value" in v.reason and "not the rows" in v.reason
    plan = make_plan(g)
    assert len(plan.kernels) == 2
    run_equal(plan)
    # with the trailing unit axis put back it is a row kernel
    g2 = cell(lambda b, inp: {"y": (x := inp("x", (8, 8))) - x.max(-1).reshape(8, 1)})
    assert templates(make_plan(g2)) == ["row"]
    run_equal(make_plan(g2))


def test_a_single_row_is_a_full_reduction_and_needs_two_kernels():
    g = cell(lambda b, inp: {"y": (x := inp("x", (1, 1024))) - x.max(-1, keepdims=True)})
    plan = make_plan(g)
    assert len(plan.kernels) == 2
    ok, reason = plan.legal_merge(0, 1)
    assert not ok and "grid-wide" in reason and "needs at least two rows" in reason
    run_equal(plan)


def test_a_row_kernel_does_not_remap_a_value_it_computed():
    def build(b, inp):
        x = inp("x", (8, 16))
        m = x.max(-1, keepdims=True)
        mb = Expr(b, b.broadcast_to(m.i, (8, 16)))
        return {"y": x - mb}
    g = cell(build)
    an = analyse(g)
    v = check(an, an.all_mask)
    assert not v.ok and "through the view" in v.reason
    run_equal(make_plan(g))


def test_an_opaque_op_never_has_company():
    plan = make_plan(T.matmul_bias_act(8, 8, 8))
    an = analyse(plan.graph)
    mm = next(i for i, n in enumerate(plan.graph.nodes) if n.op == "opaque")
    add = an.users[mm][0]
    v = check(an, mask_of((mm, add)))
    assert not v.ok and v.reason.startswith(f"%{mm} (matmul) is opaque")


def test_pointwise_outputs_must_share_one_shape():
    g = cell(lambda b, inp: {"a": (r := inp("r", (8, 1))).f("exp"), "b": r.f("exp") + inp("x", (8, 16))})
    an = analyse(g)
    v = check(an, an.all_mask)
    assert not v.ok and "one iteration space" in v.reason


def test_budgets_bound_kernel_size_with_a_reason():
    g = T.gelu(1024)
    an = analyse(g)
    v = check(an, an.all_mask, Budgets(max_nodes=3))
    assert not v.ok and "over the budget of 3" in v.reason
    v = check(an, an.all_mask, Budgets(max_params=1))
    assert not v.ok and "arrays as parameters" in v.reason
    v = check(an, an.all_mask, Budgets(max_registers=33))
    assert not v.ok and "registers" in v.reason
    plan = make_plan(g, budgets=Budgets(max_nodes=3))
    assert all(sum(1 for i in k.nodes if an.unit[i]) <= 3 for k in plan.kernels)
    run_equal(plan)


def test_a_copy_of_a_view_kept_as_a_result_runs_alone():
    g = cell(lambda b, inp: {"t": (x := inp("x", (8, 16))).T, "y": x.T * 2.0})
    plan = make_plan(g)
    assert sorted(templates(plan)) == ["pointwise", "pointwise"]
    run_equal(plan)


def test_a_kernel_cycle_is_refused_naming_the_node_between():
    plan = make_plan(T.softmax(64, 128), "unfused")
    g = plan.graph
    ops = [g.nodes[k.outputs[0]].op for k in plan.kernels]
    assert ops == ["max", "subtract", "exp", "sum", "true_divide"]
    ok, reason = plan.legal_merge(2, 4)  # exp and divide: the sum sits between them
    assert not ok and reason.startswith("would create a cycle through %4 (sum)")


def test_reduction_prologue_stores_only_input_shaped_values():
    def build(b, inp):
        x, r = inp("x", (8, 16)), inp("r", (8, 1))
        e = r.f("exp")
        return {"e": e, "s": (x * e).sum()}
    g = cell(build)
    an = analyse(g)
    v = check(an, an.all_mask)
    assert not v.ok and "would be stored by the reduction's input loop" in v.reason
    run_equal(make_plan(g))


def test_check_reports_the_template_and_space():
    g = T.softmax(64, 128)
    v = check(analyse(g), analyse(g).all_mask)
    assert v.ok and v.space.template is Template.ROW
    assert v.space.shape == (64, 128) and v.space.rows == 64 and v.space.passes == 3


def test_opaque_node_with_views_of_inputs():
    mm = OpaqueFn("matmul", lambda xp, a, b: xp.matmul(a, b))

    def build(b, inp):
        x, w = inp("x", (8, 4)), inp("w", (6, 4))
        h = Expr(b, b.opaque(mm, [x.i, w.T.i], Aval((8, 6), np.dtype(np.float32))))
        return {"y": h * 2.0}
    plan = make_plan(cell(build))
    assert templates(plan) == ["opaque", "pointwise"]
    run_equal(plan)


def test_siblings_reading_one_input_share_a_pointwise_kernel():
    g = cell(lambda b, inp: {"a": (x := inp("x", (64, 32))).f("exp"), "b": x.f("sin") * 2.0})
    plan = make_plan(g)
    assert templates(plan) == ["pointwise"] and len(plan.kernels[0].outputs) == 2
    run_equal(plan)


@pytest.mark.parametrize("build,outputs", [(lambda: T.adam(4096), 3), (lambda: T.black_scholes(4096), 2),
                                           (lambda: T.gelu(4096), 1), (lambda: T.stencil(64, 64), 1)])
def test_elementwise_cells_are_one_kernel_storing_only_results(build, outputs):
    plan = make_plan(build())
    assert templates(plan) == ["pointwise"]
    assert len(plan.kernels[0].outputs) == outputs
    run_equal(plan)
