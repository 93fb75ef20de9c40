"""Random programs for differential tests: random DAGs of op-table ops over random
broadcastable shapes (0- and 1-size dimensions included), with inputs.

The generator avoids only what NumPy itself leaves undefined or raises on (integer
powers with negative exponents, float-to-integer casts out of range, integer reciprocal
of 0) and products over long axes (whose overflow depends on the summation order).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from fuselab.ir import Graph, GraphBuilder
from fuselab.ops import OPS, Kind, ShapeError, ufunc_loop_dtypes

DIMS = (1, 1, 2, 3, 5, 7, 16, 33, 0)
DIM_P = np.array([3, 2, 2, 2, 2, 2, 2, 2, 0.3])
DTYPES = ("float32", "float32", "float32", "float64", "float16", "int32", "int64", "int8", "uint8", "bool")
# signbit and copysign read the sign bit of NaN, which NumPy leaves to the platform (x86's
# default NaN is negative, CUDA's positive); the op sweeps test them without NaN.
SIGN_OF_NAN = ("signbit", "copysign")
UNARY = [n for n, o in OPS.items() if o.kind is Kind.ELEMWISE and o.arity == 1 and o.xp_name
         and n not in SIGN_OF_NAN]
BINARY = [n for n, o in OPS.items() if o.kind is Kind.ELEMWISE and o.arity == 2 and n not in SIGN_OF_NAN]
SMALL_RHS = ("power", "left_shift", "right_shift")   # integer right operand: a small constant
REDUCES = ("sum", "max", "min", "any", "all", "argmax", "argmin", "prod")


# CUDA's libm and glibc differ by an ulp or two, and chains of ops can grow that a little:
# a program is judged at the precision of its least precise floating-point value.
_RTOL = {"float16": 1e-2, "float32": 1e-4, "float64": 1e-9}


def program_plans(graph: Graph) -> list:
    """The plans a random program is checked under: unfused, auto and max."""
    from fuselab.plan import make_plan, unfused_plan
    return [unfused_plan(graph), make_plan(graph, "auto"), make_plan(graph, "max")]


def program_rtol(graph: Graph) -> float:
    floats = [n.dtype.name for n in graph.nodes if n.dtype.kind == "f"]
    return max((_RTOL[f] for f in floats), default=_RTOL["float64"])


def _shape(rng: np.random.Generator, ndim: int) -> tuple[int, ...]:
    return tuple(int(rng.choice(DIMS, p=DIM_P / DIM_P.sum())) for _ in range(ndim))


def _input_data(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -20
        return rng.integers(lo, 21, size=shape).astype(dt)
    x = rng.uniform(-2.5, 2.5, size=shape)
    if x.size and rng.random() < 0.2:
        x.reshape(-1)[rng.integers(0, x.size)] = rng.choice([np.nan, np.inf, -np.inf, 0.0])
    return x.astype(dt)


def _applies(name: str, dtypes: Sequence[np.dtype]) -> bool:
    try:
        ufunc_loop_dtypes(OPS[name].xp_name, list(dtypes))
        return True
    except ShapeError:
        return False


def random_program(seed: int, max_ops: int = 7) -> tuple[Graph, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    base = _shape(rng, int(rng.integers(0, 4)))
    inputs: dict[str, np.ndarray] = {}
    pool: list[int] = []
    for k in range(int(rng.integers(1, 4))):
        # each input: the base shape with some dims set to 1 and leading dims dropped
        shape = tuple(1 if rng.random() < 0.3 else d for d in base)
        if shape and rng.random() < 0.3:
            shape = shape[int(rng.integers(0, len(shape) + 1)):]
        dt = np.dtype(str(rng.choice(DTYPES)))
        name = f"x{k}"
        pool.append(b.input(name, shape, dt))
        inputs[name] = _input_data(rng, shape, dt)

    for _ in range(int(rng.integers(1, max_ops + 1))):
        kind = rng.choice(["unary", "binary", "binary", "where", "cast", "view", "reduce", "const"],
                          p=[0.2, 0.15, 0.15, 0.05, 0.08, 0.15, 0.17, 0.05])
        x = pool[int(rng.integers(0, len(pool)))]
        ax = b.aval(x)
        try:
            if kind == "unary":
                name = str(rng.choice(UNARY))
                if not _applies(name, [ax.dtype]) or (name == "reciprocal" and ax.dtype.kind in "biu"):
                    continue
                pool.append(b.elemwise(name, [x]))
            elif kind in ("binary", "const"):
                name = str(rng.choice(BINARY))
                if kind == "const" or (name in SMALL_RHS and ax.dtype.kind in "biu"):
                    value = int(rng.integers(0, 4)) if ax.dtype.kind in "biu" else float(rng.choice([0.5, 2.0, -1.5]))
                    y = b.const(value, ax.dtype if ax.dtype.kind != "b" else np.int8)
                else:
                    y = pool[int(rng.integers(0, len(pool)))]
                ay = b.aval(y)
                if not _applies(name, [ax.dtype, ay.dtype]):
                    continue
                if name in SMALL_RHS and ay.dtype.kind in "biu" and b.nodes[y].op != "const":
                    continue
                pool.append(b.elemwise(name, [x, y]))
            elif kind == "where":
                c = b.elemwise("greater", [x, b.const(0, ax.dtype)]) if _applies("greater", [ax.dtype, ax.dtype]) else x
                y = pool[int(rng.integers(0, len(pool)))]
                pool.append(b.where(c, x, y))
            elif kind == "cast":
                to = np.dtype(str(rng.choice(DTYPES)))
                if ax.dtype.kind == "f" and to.kind in "iu":
                    continue  # out-of-range float -> int is undefined in NumPy
                pool.append(b.astype(x, to))
            elif kind == "view":
                pool.append(_random_view(b, rng, x))
            elif kind == "reduce":
                op = str(rng.choice(REDUCES))
                nd = ax.ndim
                if op in ("argmax", "argmin"):
                    axis = None if (nd == 0 or rng.random() < 0.4) else int(rng.integers(0, nd))
                else:
                    axis = None if (nd == 0 or rng.random() < 0.3) else \
                        tuple(sorted(rng.choice(nd, size=int(rng.integers(1, nd + 1)), replace=False).tolist()))
                reduced = ax.size if axis is None else math.prod(
                    ax.shape[a] for a in ((axis,) if isinstance(axis, int) else axis))
                if op == "prod" and reduced > 8:
                    continue
                pool.append(b.reduce(op, x, axis=axis, keepdims=bool(rng.random() < 0.4)))
        except ShapeError:
            continue
    outs = [("out", pool[-1])]
    if len(pool) > 2 and rng.random() < 0.5:
        other = pool[int(rng.integers(len(inputs), len(pool)))] if len(pool) > len(inputs) else pool[0]
        if other != pool[-1]:
            outs.append(("out2", other))
    return b.build(outs), inputs


def _random_view(b: GraphBuilder, rng: np.random.Generator, x: int) -> int:
    a = b.aval(x)
    choice = rng.choice(["transpose", "slice", "reshape", "broadcast"])
    if a.ndim == 0 or choice == "broadcast":
        extra = int(rng.choice([1, 3]))
        target = (extra, *a.shape) if rng.random() < 0.5 or a.ndim == 0 else tuple(
            (extra if d == 1 else d) for d in a.shape)
        return b.broadcast_to(x, target)
    if choice == "transpose":
        return b.transpose(x, tuple(rng.permutation(a.ndim).tolist()))
    if choice == "slice":
        starts, steps, lengths = [], [], []
        for d in a.shape:
            if d == 0:
                starts.append(0), steps.append(1), lengths.append(0)
                continue
            step = int(rng.choice([1, 1, 2, -1, -2]))
            start = int(rng.integers(0, d))
            room = start // -step + 1 if step < 0 else (d - 1 - start) // step + 1
            starts.append(start), steps.append(step), lengths.append(int(rng.integers(1, room + 1)))
        return b.slice(x, starts, steps, lengths)
    size = a.size
    options = [(size,), (1, size), (size, 1)]
    if a.ndim >= 2:
        options.append((a.shape[0], -1))
    target = options[int(rng.integers(0, len(options)))]
    if -1 in target:
        target = tuple(size // max(1, a.shape[0]) if d == -1 else d for d in target) if a.shape[0] else (0, 0)
    if math.prod(target) != size:
        target = (size,)
    return b.reshape(x, target)
