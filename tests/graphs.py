"""Small graphs and hand-built plans shared by the codegen, runtime and GPU tests.

Each builder returns (graph, plan, inputs): the plan is built with make_kernel directly
so these tests do not depend on the planner's choices.
"""
from __future__ import annotations

import numpy as np

from fuselab.ir import Graph, GraphBuilder, SourceLoc
from fuselab.plan import Plan, Template, make_kernel
from fuselab.plan.model import is_free


def loc(line: int, text: str) -> SourceLoc:
    return SourceLoc(line, text)


def one_kernel(graph: Graph, template: Template) -> Plan:
    """Every non-input node in a single kernel."""
    members = [i for i, n in enumerate(graph.nodes) if n.op != "input" and not is_free(graph, i)]
    if not members:  # a lone view / constant output: a copy kernel
        members = [i for i in graph.output_ids]
    return Plan(graph, (make_kernel(graph, members, template),), "test")


def softmax(rows: int, cols: int, dtype=np.float32) -> Graph:
    b = GraphBuilder("m = x.max(-1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(-1, keepdims=True)")
    x = b.input("x", (rows, cols), dtype)
    m = b.reduce("max", x, axis=-1, keepdims=True, loc=loc(1, "m = x.max(-1, keepdims=True)"))
    d = b.elemwise("subtract", [x, m], loc=loc(2, "e = np.exp(x - m)"))
    e = b.elemwise("exp", [d], loc=loc(2, "e = np.exp(x - m)"))
    s = b.reduce("sum", e, axis=-1, keepdims=True, loc=loc(3, "y = e / e.sum(-1, keepdims=True)"))
    y = b.elemwise("true_divide", [e, s], loc=loc(3, "y = e / e.sum(-1, keepdims=True)"))
    return b.build([("y", y)])


def layernorm(rows: int, cols: int, dtype=np.float32, eps: float = 1e-5) -> Graph:
    b = GraphBuilder()
    x = b.input("x", (rows, cols), dtype)
    gamma = b.input("gamma", (cols,), dtype)
    beta = b.input("beta", (cols,), dtype)
    inv_n = b.const(1.0 / cols, dtype)
    mu = b.elemwise("multiply", [b.reduce("sum", x, axis=-1, keepdims=True,
                                          loc=loc(1, "mu = x.mean(-1, keepdims=True)")), inv_n],
                    loc=loc(1, "mu = x.mean(-1, keepdims=True)"))
    xc = b.elemwise("subtract", [x, mu], loc=loc(2, "xc = x - mu"))
    var = b.elemwise("multiply", [b.reduce("sum", b.elemwise("multiply", [xc, xc], loc=loc(3, "var = (xc * xc).mean(-1, keepdims=True)")),
                                           axis=-1, keepdims=True, loc=loc(3, "var = (xc * xc).mean(-1, keepdims=True)")), inv_n],
                     loc=loc(3, "var = (xc * xc).mean(-1, keepdims=True)"))
    r = b.elemwise("sqrt", [b.elemwise("add", [var, b.const(eps, dtype)], loc=loc(4, "r = np.sqrt(var + eps)"))],
                   loc=loc(4, "r = np.sqrt(var + eps)"))
    y = b.elemwise("add", [b.elemwise("multiply", [b.elemwise("true_divide", [xc, r], loc=loc(5, "y = xc / r * gamma + beta")), gamma],
                                      loc=loc(5, "y = xc / r * gamma + beta")), beta], loc=loc(5, "y = xc / r * gamma + beta"))
    return b.build([("y", y)])


def rmsnorm(rows: int, cols: int, dtype=np.float32, eps: float = 1e-6) -> Graph:
    b = GraphBuilder()
    x = b.input("x", (rows, cols), dtype)
    w = b.input("w", (cols,), dtype)
    ms = b.elemwise("multiply", [b.reduce("sum", b.elemwise("multiply", [x, x]), axis=-1, keepdims=True),
                                 b.const(1.0 / cols, dtype)], loc=loc(1, "ms = (x * x).mean(-1, keepdims=True)"))
    inv = b.elemwise("reciprocal", [b.elemwise("sqrt", [b.elemwise("add", [ms, b.const(eps, dtype)])])],
                     loc=loc(2, "y = x / np.sqrt(ms + eps) * w"))
    y = b.elemwise("multiply", [b.elemwise("multiply", [x, inv]), w], loc=loc(2, "y = x / np.sqrt(ms + eps) * w"))
    return b.build([("y", y)])


# ---------------------------------------------------------------------------
# Op sweeps: one kernel computing every applicable op of the table for a dtype
# ---------------------------------------------------------------------------

FLOAT_DTYPES = (np.float16, np.float32, np.float64)
INT_DTYPES = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)
ALL_DTYPES = (np.bool_, *INT_DTYPES, *FLOAT_DTYPES)
EXPONENT_OPS = ("power", "left_shift", "right_shift")   # integer right operands kept small and >= 0


def _applies(opname: str, dtypes) -> bool:
    from fuselab.ops import OPS, ShapeError, ufunc_loop_dtypes
    try:
        ufunc_loop_dtypes(OPS[opname].xp_name, [np.dtype(d) for d in dtypes])
        return True
    except ShapeError:
        return False


def elementwise_ops(arity: int) -> list[str]:
    from fuselab.ops import OPS, Kind
    return [n for n, o in OPS.items()
            if o.kind is Kind.ELEMWISE and o.arity == arity and n not in ("where", "astype")]


def all_elementwise(dtype, shape=(37, 5), bshape=(5,)) -> Graph:
    """a, b: operands (b broadcast along rows); k: small non-negative exponents/shifts."""
    b = GraphBuilder()
    a = b.input("a", shape, dtype)
    bb = b.input("b", bshape, dtype)
    k = b.input("k", bshape, dtype)
    outs = []
    for name in elementwise_ops(1):
        if _applies(name, [dtype]):
            outs.append((name, b.elemwise(name, [a], loc=loc(1, f"{name} = np.{name}(a)"))))
    for name in elementwise_ops(2):
        if _applies(name, [dtype, dtype]):
            rhs = k if (name in EXPONENT_OPS and np.dtype(dtype).kind != "f") else bb
            outs.append((name, b.elemwise(name, [a, rhs], loc=loc(2, f"{name} = np.{name}(a, b)"))))
    cond = b.elemwise("greater", [a, bb])
    outs.append(("where", b.where(cond, a, bb, loc=loc(3, "where = np.where(a > b, a, b)"))))
    return b.build(outs)


def all_casts(dtype, shape=(9, 7)) -> Graph:
    b = GraphBuilder()
    a = b.input("a", shape, dtype)
    outs = [(f"to_{np.dtype(t).name}", b.astype(a, t, loc=loc(1, f"a.astype(np.{np.dtype(t).name})")))
            for t in ALL_DTYPES if np.dtype(t) != np.dtype(dtype)]
    return b.build(outs)


def all_reductions(dtype, shape, axis, keepdims=False) -> Graph:
    b = GraphBuilder()
    x = b.input("x", shape, dtype)
    outs = []
    for op in ("sum", "prod", "max", "min", "any", "all", "argmax", "argmin"):
        if op in ("argmax", "argmin") and axis is not None and not isinstance(axis, int):
            continue
        outs.append((op, b.reduce(op, x, axis=axis, keepdims=keepdims, loc=loc(1, f"{op} = a.{op}(axis={axis})"))))
    return b.build(outs)


def reduction_plan(graph: Graph) -> Plan:
    """Sibling reductions of one input as one reduction kernel."""
    return one_kernel(graph, Template.REDUCTION)


def sample(dtype, shape, rng: np.random.Generator, low=-3.0, high=3.0) -> np.ndarray:
    """Test data with mixed signs, ties and, for floats, a few special values."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -100), min(info.max, 100)
        return rng.integers(lo, hi + 1, size=shape, dtype=dt)
    x = rng.uniform(low, high, size=shape).astype(dt)
    flat = x.reshape(-1)
    if flat.size >= 8:
        flat[:4] = np.array([0.0, -0.0, 1.0, 0.5], dtype=dt)
    return x


def small_nonneg(dtype, shape, rng: np.random.Generator) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(0, 6, size=shape).astype(dt)
