"""Graphs for planner tests and benchmarks, built with GraphBuilder (no tracer needed).

`Expr` wraps a node id so that formulas read like the NumPy they stand for; the named
builders are the planner's reference cells (softmax, layernorm, adam, black-scholes,
stencils, reductions, matmul epilogues); `random_graph` draws random DAGs of table ops
over broadcastable shapes for property tests and for planning-time benchmarks.
"""
from __future__ import annotations

import math
import random
from typing import Any, Callable, Sequence

import numpy as np

from ..ir import Graph, GraphBuilder
from ..ops import Aval, OpaqueFn, ShapeError

F32 = np.float32


class Expr:
    """A node of a GraphBuilder with NumPy-like operators (scalars become constants of the
    other operand's dtype, as NEP 50 weak scalars do)."""

    def __init__(self, b: GraphBuilder, i: int) -> None:
        self.b, self.i = b, i

    @property
    def shape(self) -> tuple[int, ...]:
        return self.b.aval(self.i).shape

    def _n(self, other: Any) -> int:
        if isinstance(other, Expr):
            return other.i
        return self.b.const(other, self.b.aval(self.i).dtype)

    def _bin(self, op: str, other: Any, swap: bool = False) -> "Expr":
        a, c = self.i, self._n(other)
        return Expr(self.b, self.b.elemwise(op, [c, a] if swap else [a, c]))

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("subtract", o)
    def __rsub__(self, o): return self._bin("subtract", o, True)
    def __mul__(self, o): return self._bin("multiply", o)
    def __rmul__(self, o): return self._bin("multiply", o, True)
    def __truediv__(self, o): return self._bin("true_divide", o)
    def __rtruediv__(self, o): return self._bin("true_divide", o, True)
    def __gt__(self, o): return self._bin("greater", o)
    def __neg__(self): return self.f("negative")

    def f(self, op: str) -> "Expr":
        return Expr(self.b, self.b.elemwise(op, [self.i]))

    def reduce(self, op: str, axis: Any = None, keepdims: bool = False) -> "Expr":
        return Expr(self.b, self.b.reduce(op, self.i, axis, keepdims))

    def sum(self, axis: Any = None, keepdims: bool = False) -> "Expr":
        return self.reduce("sum", axis, keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> "Expr":
        return self.reduce("max", axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> "Expr":
        n = math.prod(self.shape) // max(1, math.prod(self.sum(axis, keepdims).shape))
        return self.sum(axis, keepdims) / float(n)

    def __getitem__(self, key) -> "Expr":
        key = key if isinstance(key, tuple) else (key,)
        key = key + (slice(None),) * (len(self.shape) - len(key))
        starts, steps, lens = [], [], []
        for k, d in zip(key, self.shape):
            s, e, st = k.indices(d)
            starts.append(s)
            steps.append(st)
            lens.append(len(range(s, e, st)))
        return Expr(self.b, self.b.slice(self.i, starts, steps, lens))

    @property
    def T(self) -> "Expr":
        return Expr(self.b, self.b.transpose(self.i, tuple(reversed(range(len(self.shape))))))

    def reshape(self, *shape: int) -> "Expr":
        return Expr(self.b, self.b.reshape(self.i, shape))


def where(c: Expr, x: Expr, y: Any) -> Expr:
    return Expr(c.b, c.b.where(c.i, x.i, x._n(y)))


def _cell(build: Callable[[Callable[..., Expr]], dict[str, Expr]]) -> Graph:
    b = GraphBuilder()

    def inp(name: str, shape: Sequence[int], dtype=F32) -> Expr:
        return Expr(b, b.input(name, shape, dtype))

    outs = build(inp)
    return b.build([(k, v.i) for k, v in outs.items()])


# ---------------------------------------------------------------------------
# reference cells
# ---------------------------------------------------------------------------

def softmax(rows: int = 4096, cols: int = 1024) -> Graph:
    def cell(inp):
        x = inp("x", (rows, cols))
        e = (x - x.max(-1, keepdims=True)).f("exp")
        return {"y": e / e.sum(-1, keepdims=True)}
    return _cell(cell)


def layernorm(rows: int = 4096, cols: int = 1024, affine: bool = True) -> Graph:
    def cell(inp):
        x = inp("x", (rows, cols))
        m = x.mean(-1, keepdims=True)
        d = x - m
        v = d.f("square").mean(-1, keepdims=True)
        y = d / (v + 1e-5).f("sqrt")
        if affine:
            y = y * inp("gamma", (cols,)) + inp("beta", (cols,))
        return {"y": y}
    return _cell(cell)


def rmsnorm(rows: int = 4096, cols: int = 1024) -> Graph:
    def cell(inp):
        x = inp("x", (rows, cols))
        r = ((x * x).mean(-1, keepdims=True) + 1e-6).f("sqrt")
        return {"y": x / r * inp("w", (cols,))}
    return _cell(cell)


def logsumexp(rows: int = 4096, cols: int = 1024) -> Graph:
    def cell(inp):
        x = inp("x", (rows, cols))
        m = x.max(-1, keepdims=True)
        return {"lse": m + (x - m).f("exp").sum(-1, keepdims=True).f("log")}
    return _cell(cell)


def div_by_sum(n: int = 1 << 20) -> Graph:
    def cell(inp):
        x = inp("x", (n,))
        return {"y": x / x.sum()}
    return _cell(cell)


def matmul_bias_act(m: int = 4096, k: int = 1024, n: int = 1024) -> Graph:
    mm = OpaqueFn("matmul", lambda xp, a, b: xp.matmul(a, b))

    def cell(inp):
        x, w, bias = inp("x", (m, k)), inp("w", (k, n)), inp("b", (n,))
        h = Expr(x.b, x.b.opaque(mm, [x.i, w.i], Aval((m, n), np.dtype(F32))))
        return {"y": (h + bias).f("tanh") * 0.5}
    return _cell(cell)


def gelu(n: int = 1 << 22) -> Graph:
    def cell(inp):
        x = inp("x", (n,))
        c = math.sqrt(2 / math.pi)
        return {"y": 0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).f("tanh"))}
    return _cell(cell)


def adam(n: int = 1 << 22, b1: float = 0.9, b2: float = 0.999, lr: float = 1e-3, t: int = 10) -> Graph:
    def cell(inp):
        p, g, m, v = (inp(k, (n,)) for k in ("p", "g", "m", "v"))
        m2 = b1 * m + (1 - b1) * g
        v2 = b2 * v + (1 - b2) * g * g
        mhat = m2 / (1 - b1 ** t)
        vhat = v2 / (1 - b2 ** t)
        return {"p2": p - lr * mhat / (vhat.f("sqrt") + 1e-8), "m2": m2, "v2": v2}
    return _cell(cell)


def black_scholes(n: int = 1 << 22) -> Graph:
    def cnd(d: Expr) -> Expr:
        k = 1.0 / (1.0 + 0.2316419 * d.f("absolute"))
        poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
        c = 1.0 - 0.3989422804 * (-0.5 * d * d).f("exp") * poly
        return where(d > 0.0, c, 1.0 - c)

    def cell(inp):
        s, x, t = inp("S", (n,)), inp("X", (n,)), inp("T", (n,))
        r, vol = 0.02, 0.30
        sqt = t.f("sqrt")
        d1 = ((s / x).f("log") + (r + 0.5 * vol * vol) * t) / (vol * sqt)
        d2 = d1 - vol * sqt
        disc = x * (-r * t).f("exp")
        call = s * cnd(d1) - disc * cnd(d2)
        put = disc * (1.0 - cnd(d2)) - s * (1.0 - cnd(d1))
        return {"call": call, "put": put}
    return _cell(cell)


def stencil(rows: int = 4096, cols: int = 4096) -> Graph:
    def cell(inp):
        u = inp("u", (rows, cols))
        lap = u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4.0 * u[1:-1, 1:-1]
        return {"u2": u[1:-1, 1:-1] + 0.1 * lap}
    return _cell(cell)


def reductions(shape: tuple[int, ...] = (256, 512, 64)) -> Graph:
    """A reduction over each axis, and over all of them, of one producer."""
    def cell(inp):
        x = inp("x", shape)
        e = (x * x).f("sqrt")
        outs = {f"s{a}": e.sum(a) for a in range(len(shape))}
        outs["total"] = e.sum()
        return outs
    return _cell(cell)


def column_norm(rows: int = 8192, cols: int = 1024) -> Graph:
    """x / sqrt(sum(x*x, axis=0)): a column reduction broadcast back (two kernels)."""
    def cell(inp):
        x = inp("x", (rows, cols))
        return {"y": x / ((x * x).sum(0, keepdims=True)).f("sqrt")}
    return _cell(cell)


CELLS: dict[str, Callable[[], Graph]] = {
    "softmax": softmax, "layernorm": layernorm, "rmsnorm": rmsnorm, "logsumexp": logsumexp,
    "gelu": gelu, "adam": adam, "black_scholes": black_scholes, "stencil": stencil,
    "reductions": reductions, "column_norm": column_norm, "div_by_sum": div_by_sum,
    "matmul_bias_act": matmul_bias_act,
}


# ---------------------------------------------------------------------------
# random graphs
# ---------------------------------------------------------------------------

UNARY = ("negative", "exp", "tanh", "sqrt", "absolute", "square")
BINARY = ("add", "subtract", "multiply", "maximum", "true_divide")
FLIP = OpaqueFn("flip", lambda xp, a: xp.flip(a, -1))


def random_graph(n_ops: int, choose: Callable[[Sequence[Any]], Any] | None = None,
                 rows: int = 4, cols: int = 5, n_outputs: int | None = None) -> Graph:
    """A random DAG of about n_ops table ops over shapes broadcastable to (rows, cols):
    elementwise ops, reductions over either axis or all, per-row values broadcast back,
    views (transpose, slice, reshape) and an occasional opaque op. `choose(seq)` picks one
    element (random.choice by default; hypothesis passes a draw)."""
    choose = choose or random.Random(0).choice
    b = GraphBuilder()
    R, C = rows, cols
    nodes = [b.input("x", (R, C), F32), b.input("y", (R, C), F32),
             b.input("w", (C,), F32), b.input("r", (R, 1), F32)]
    made = 0
    attempts = 0
    while made < n_ops and attempts < 20 * n_ops + 20:
        attempts += 1
        kind = choose(("unary", "unary", "binary", "binary", "binary", "binary", "reduce",
                       "reduce", "view", "opaque"))
        x = choose(nodes[-8:]) if choose((True, False)) else choose(nodes)
        sx = b.aval(x).shape
        try:
            if kind == "unary":
                i = b.elemwise(choose(UNARY), [x])
            elif kind == "binary":
                y = choose(nodes)
                i = b.elemwise(choose(BINARY), [x, y])
            elif kind == "reduce":
                if not sx:
                    continue
                axis = choose((-1, -1, 0, None))
                i = b.reduce(choose(("sum", "max", "sum")), x, axis, choose((True, False)))
            elif kind == "view":
                if len(sx) == 2 and choose((True, False)):
                    i = b.transpose(x, (1, 0))
                elif sx and sx[-1] > 1:
                    n = len(sx)
                    i = b.slice(x, (0,) * (n - 1) + (1,), (1,) * n, sx[:-1] + (sx[-1] - 1,))
                else:
                    i = b.reshape(x, sx + (1,)) if len(sx) < 2 else b.reshape(x, sx[:-1])
            else:
                if len(sx) != 2 or choose((True, False)):
                    continue
                i = b.opaque(FLIP, [x], b.aval(x))
        except ShapeError:
            continue
        if i in nodes:
            continue
        nodes.append(i)
        made += 1
    # every value nothing reads is a result (so nothing is pruned), plus a few others
    made_ids = nodes[4:] or nodes[:1]
    read = {j for i in made_ids for j in b.nodes[i].inputs}
    outs = {i for i in made_ids if i not in read}
    k = n_outputs if n_outputs is not None else len(made_ids) // 8
    for _ in range(k):
        outs.add(choose(made_ids))
    return b.build([(f"o{j}", i) for j, i in enumerate(sorted(outs))])


def random_inputs(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {graph.nodes[i].args["name"]: rng.standard_normal(graph.nodes[i].shape).astype(graph.nodes[i].dtype)
            for i in graph.input_ids}


# ---------------------------------------------------------------------------
# notebook-like graphs of a given size
# ---------------------------------------------------------------------------

def _block_norm(x: Expr, g: Expr, b: Expr) -> Expr:
    m = x.mean(-1, keepdims=True)
    d = x - m
    return d / (d.f("square").mean(-1, keepdims=True) + 1e-5).f("sqrt") * g + b


def _block_gelu(x: Expr, g: Expr, b: Expr) -> Expr:
    return 0.5 * x * (1.0 + (0.7978845608 * (x + 0.044715 * x * x * x)).f("tanh"))


def _block_softmax(x: Expr, g: Expr, b: Expr) -> Expr:
    e = (x - x.max(-1, keepdims=True)).f("exp")
    return e / e.sum(-1, keepdims=True)


def _block_scale(x: Expr, g: Expr, b: Expr) -> Expr:
    c = x / (x * x).sum(0, keepdims=True).f("sqrt")     # column norm: two kernels
    return c * g - b


def _block_matmul(x: Expr, g: Expr, b: Expr) -> Expr:
    sq = OpaqueFn("matmul_square", lambda xp, a: xp.matmul(a, a.T)[:, : a.shape[1]])
    h = Expr(x.b, x.b.opaque(sq, [x.i], x.b.aval(x.i)))
    return h + b


BLOCKS = (_block_norm, _block_gelu, _block_softmax, _block_scale, _block_gelu, _block_matmul)


def notebook_graph(n_nodes: int, rows: int = 4096, cols: int = 1024) -> Graph:
    """A graph of about n_nodes built from notebook blocks (layernorm, gelu, softmax,
    column scaling, a matmul with a bias) applied one after another to a running
    activation, every fourth intermediate activation kept as a result."""
    b = GraphBuilder()
    x = Expr(b, b.input("x", (rows, cols), F32))
    g = Expr(b, b.input("g", (cols,), F32))
    beta = Expr(b, b.input("beta", (cols,), F32))
    outs: list[tuple[str, int]] = []
    k = 0
    while True:
        x = BLOCKS[k % len(BLOCKS)](x, g, beta)
        k += 1
        if len(b.nodes) >= n_nodes:
            break
        if k % 4 == 0:
            outs.append((f"a{k}", x.i))
    outs.append(("out", x.i))
    return b.build(outs)
