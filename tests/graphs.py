"""Hand-built plans and op sweeps for the codegen, runtime and GPU tests: the plans are
built with make_kernel directly, so these tests do not depend on the planner's choices.
The row cells they run (softmax, layernorm, rmsnorm) come from the shared library.
"""
from __future__ import annotations

import numpy as np

from fuselab.ir import Graph, GraphBuilder
from fuselab.plan import Plan, Template, make_kernel
from fuselab.plan.model import is_free
from support.cells import layernorm, loc, rmsnorm, softmax  # noqa: F401 - the codegen tests' cells


def one_kernel(graph: Graph, template: Template) -> Plan:
    """Every non-input node in a single kernel."""
    members = [i for i, n in enumerate(graph.nodes) if n.op != "input" and not is_free(graph, i)]
    if not members:  # a lone view / constant output: a copy kernel
        members = [i for i in graph.output_ids]
    return Plan(graph, (make_kernel(graph, members, template),), "test")


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
