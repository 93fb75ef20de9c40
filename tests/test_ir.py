"""IR layer: the builder's inference, verify(), printing, pruning, and the interpreter's
plan checks."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fuselab.interp import PlanExecutionError, run_graph, run_plan
from fuselab.ir import Graph, GraphBuilder, VerifyError, format_graph, prune, verify
from fuselab.ops import OPS, Aval, Kind, ShapeError
from fuselab.plan import Kernel, Plan, Template, make_kernel


def softmax_graph() -> Graph:
    b = GraphBuilder()
    x = b.input("x", (4, 8), np.float32)
    m = b.reduce("max", x, axis=-1, keepdims=True)
    e = b.elemwise("exp", [b.elemwise("subtract", [x, m])])
    s = b.reduce("sum", e, axis=-1, keepdims=True)
    return b.build([("p", b.elemwise("true_divide", [e, s]))])


def test_golden_listing():
    assert format_graph(softmax_graph()) == "\n".join([
        "%0 = input x : f32[4,8]",
        "%1 = max %0 axes=(1,) keepdims : f32[4,1]",
        "%2 = subtract %0, %1 : f32[4,8]",
        "%3 = exp %2 : f32[4,8]",
        "%4 = sum %3 axes=(1,) keepdims : f32[4,1]",
        "%5 = true_divide %3, %4 : f32[4,8]  -> p",
    ])


def test_inference_follows_numpy():
    b = GraphBuilder()
    i = b.input("i", (3,), np.int16)
    f = b.input("f", (2, 1), np.float32)
    assert b.aval(b.elemwise("add", [i, f])) == Aval((2, 3), np.dtype(np.float32))
    assert b.aval(b.elemwise("sqrt", [i])).dtype == np.float32  # int16 -> float32 loop
    assert b.aval(b.reduce("sum", i)).dtype == np.int64         # small ints sum as int64
    assert b.aval(b.elemwise("less", [i, i])).dtype == np.bool_
    with pytest.raises(ShapeError):
        b.elemwise("add", [b.input("a", (3,), np.float32), b.input("c", (4,), np.float32)])


def test_builder_shares_identical_nodes_but_not_inputs():
    b = GraphBuilder()
    x = b.input("x", (3,), np.float32)
    assert b.elemwise("exp", [x]) == b.elemwise("exp", [x])
    assert b.input("x", (3,), np.float32) != x


def test_verify_catches_bad_graphs():
    g = softmax_graph()
    verify(g)
    bad_order = replace(g, nodes=(g.nodes[0], replace(g.nodes[1], inputs=(3,)), *g.nodes[2:]))
    with pytest.raises(VerifyError, match="not defined before"):
        verify(bad_order)
    bad_shape = replace(g, nodes=(*g.nodes[:3], replace(g.nodes[3], aval=Aval((4, 9), np.dtype(np.float32))),
                                  *g.nodes[4:]))
    with pytest.raises(VerifyError, match="rules give"):
        verify(bad_shape)
    bad_dtype = replace(g, nodes=(*g.nodes[:2], replace(g.nodes[2], aval=Aval((4, 8), np.dtype(np.float64))),
                                  *g.nodes[3:]))
    with pytest.raises(VerifyError, match="%2"):
        verify(bad_dtype)


def test_prune_drops_dead_nodes_and_renumbers():
    b = GraphBuilder()
    x = b.input("x", (3,), np.float32)
    b.elemwise("sin", [x])  # dead
    y = b.elemwise("cos", [x])
    g = b.build([("y", y)])
    assert [n.op for n in g.nodes] == ["input", "cos"]
    assert g.outputs == (("y", 1),)
    assert prune(g) is g


def test_op_table_is_consistent():
    for name, op in OPS.items():
        if op.kind is Kind.ELEMWISE and name not in ("where", "astype"):
            assert op.xp_name and hasattr(np, op.xp_name), name
            assert op.cuda is not None and op.cuda.count("{") >= op.arity, name


def test_run_plan_detects_a_kernel_reading_an_unstored_value():
    g = softmax_graph()
    good = Plan(g, (make_kernel(g, [1], Template.REDUCTION), make_kernel(g, [2, 3, 4, 5], Template.ROW)))
    x = np.random.default_rng(0).random((4, 8), dtype=np.float32)
    np.testing.assert_allclose(run_plan(good, {"x": x})["p"], run_graph(g, {"x": x})["p"], rtol=1e-6)
    k = make_kernel(g, [4, 5], Template.ROW)
    broken = Plan(g, (make_kernel(g, [1], Template.REDUCTION), k))  # nobody stores %3
    with pytest.raises(PlanExecutionError, match="%3"):
        run_plan(broken, {"x": x})


def test_make_kernel_stores_only_what_is_used_outside():
    g = softmax_graph()
    k = make_kernel(g, [1, 2, 3, 4, 5], Template.ROW)
    assert k.inputs == (0,) and k.outputs == (5,)
    k2 = make_kernel(g, [1, 2, 3], Template.POINTWISE)
    assert k2.outputs == (3,)
