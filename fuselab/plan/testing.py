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

from ..ir import Graph, GraphBuilder, SourceLoc
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

MATMUL = OpaqueFn("matmul", lambda xp, a, b: xp.matmul(a, b))


def _mm(a: Expr, b: Expr) -> Expr:
    return Expr(a.b, a.b.opaque(MATMUL, [a.i, b.i], Aval(a.shape[:-1] + b.shape[-1:], np.dtype(F32))))


def _pdf(d: Expr) -> Expr:
    return 0.3989422804 * (-0.5 * d * d).f("exp")


def _cnd(d: Expr) -> Expr:
    k = 1.0 / (1.0 + 0.2316419 * d.f("absolute"))
    poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
    c = 1.0 - _pdf(d) * poly
    return where(d > 0.0, c, 1.0 - c)


def _black_scholes_terms(s: Expr, x: Expr, t: Expr, r: float, vol: float) -> tuple[Expr, ...]:
    """d1, d2, the discounted strike and sqrt(T) of the Black-Scholes formula."""
    sqt = t.f("sqrt")
    d1 = ((s / x).f("log") + (r + 0.5 * vol * vol) * t) / (vol * sqt)
    return d1, d1 - vol * sqt, x * (-r * t).f("exp"), sqt


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
    def cell(inp):
        x, w, bias = inp("x", (m, k)), inp("w", (k, n)), inp("b", (n,))
        h = _mm(x, w)
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
    def cell(inp):
        s, x, t = inp("S", (n,)), inp("X", (n,)), inp("T", (n,))
        d1, d2, disc, _ = _black_scholes_terms(s, x, t, 0.02, 0.30)
        call = s * _cnd(d1) - disc * _cnd(d2)
        put = disc * (1.0 - _cnd(d2)) - s * (1.0 - _cnd(d1))
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


# ---------------------------------------------------------------------------
# larger cells (50-100 nodes), as notebooks write them
# ---------------------------------------------------------------------------

def _layernorm(x: Expr, g: Expr, b: Expr) -> Expr:
    d = x - x.mean(-1, keepdims=True)
    return d / (d.f("square").mean(-1, keepdims=True) + 1e-5).f("sqrt") * g + b


def _tanh_gelu(u: Expr) -> Expr:
    return 0.5 * u * (1.0 + (0.7978845608 * (u + 0.044715 * u * u * u)).f("tanh"))


def transformer_block(tokens: int = 2048, dim: int = 1024, hidden: int = 4096) -> Graph:
    """Pre-norm attention and MLP with residuals: layernorm, q/k/v, softmax(q k^T), the
    output projection, layernorm, a GELU MLP (matmuls are opaque)."""
    def cell(inp):
        x = inp("x", (tokens, dim))
        g1, b1, g2, b2, c2 = (inp(k, (dim,)) for k in ("g1", "b1", "g2", "b2", "c2"))
        wq, wk, wv, wo = (inp(k, (dim, dim)) for k in ("wq", "wk", "wv", "wo"))
        w1, c1, w2 = inp("w1", (dim, hidden)), inp("c1", (hidden,)), inp("w2", (hidden, dim))
        h = _layernorm(x, g1, b1)
        q, k, v = _mm(h, wq), _mm(h, wk), _mm(h, wv)
        s = _mm(q, k.T) * (1.0 / math.sqrt(dim))
        e = (s - s.max(-1, keepdims=True)).f("exp")
        x2 = x + _mm(_mm(e / e.sum(-1, keepdims=True), v), wo)
        u = _mm(_layernorm(x2, g2, b2), w1) + c1
        return {"y": x2 + _mm(_tanh_gelu(u), w2) + c2}
    return _cell(cell)


def adam_clipped(shapes: Sequence[tuple[int, ...]] = ((1 << 20,), (1024, 1024), (4096,)),
                 b1: float = 0.9, b2: float = 0.999, lr: float = 1e-3, t: int = 10,
                 clip: float = 1.0) -> Graph:
    """Adam over three parameter tensors after clipping the global gradient norm."""
    def cell(inp):
        params = [[inp(f"{k}{j}", s) for k in "pgmv"] for j, s in enumerate(shapes)]
        sq = None
        for _, g, _, _ in params:
            s = (g * g).sum()
            sq = s if sq is None else sq + s
        norm = sq.f("sqrt")
        scale = where(norm > clip, clip / norm, 1.0)
        outs = {"norm": norm}
        for j, (p, g, m, v) in enumerate(params):
            g = g * scale
            m2 = b1 * m + (1 - b1) * g
            v2 = b2 * v + (1 - b2) * g * g
            outs[f"p{j}"] = p - lr * (m2 / (1 - b1 ** t)) / ((v2 / (1 - b2 ** t)).f("sqrt") + 1e-8)
            outs[f"m{j}"], outs[f"v{j}"] = m2, v2
        return outs
    return _cell(cell)


def option_greeks(n: int = 1 << 22) -> Graph:
    """Black-Scholes prices with delta, gamma, vega, theta, rho and two summaries."""
    def cell(inp):
        s, x, t = inp("S", (n,)), inp("X", (n,)), inp("T", (n,))
        r, vol = 0.02, 0.30
        d1, d2, disc, sqt = _black_scholes_terms(s, x, t, r, vol)
        n1, n2 = _cnd(d1), _cnd(d2)
        call = s * n1 - disc * n2
        put = call - s + disc
        return {"call": call, "put": put, "delta": n1, "gamma": _pdf(d1) / (s * vol * sqt),
                "vega": s * _pdf(d1) * sqt, "theta": -s * _pdf(d1) * vol / (2.0 * sqt) - r * disc * n2,
                "rho": x * t * (-r * t).f("exp") * n2, "mean_call": call.mean(), "max_put": put.max()}
    return _cell(cell)


def heat_steps(steps: int = 4, rows: int = 2048, cols: int = 2048) -> Graph:
    """Explicit heat-equation steps (5-point stencils on slices), then the energy and
    each column's maximum."""
    def cell(inp):
        u = inp("u", (rows, cols))
        for _ in range(steps):
            lap = u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4.0 * u[1:-1, 1:-1]
            u = u[1:-1, 1:-1] + 0.1 * lap
        return {"u": u, "energy": (u * u).sum(), "colmax": u.max(0)}
    return _cell(cell)


def column_stats(rows: int = 8192, cols: int = 512) -> Graph:
    """Column correlation and z-scores, then a row softmax of the centred z-scores."""
    def cell(inp):
        x, y = inp("x", (rows, cols)), inp("y", (rows, cols))
        dx, dy = x - x.mean(0, keepdims=True), y - y.mean(0, keepdims=True)
        vx, vy = (dx * dx).mean(0), (dy * dy).mean(0)
        z = dx / vx.f("sqrt")
        c = z - z.mean(-1, keepdims=True)
        e = (c - c.max(-1, keepdims=True)).f("exp")
        return {"corr": (dx * dy).mean(0) / (vx * vy).f("sqrt"), "z": z,
                "p": e / e.sum(-1, keepdims=True), "total": (z * z).sum()}
    return _cell(cell)


LARGE_CELLS: dict[str, Callable[[], Graph]] = {
    "transformer_block": transformer_block, "adam_clipped": adam_clipped,
    "option_greeks": option_greeks, "heat_steps": heat_steps, "column_stats": column_stats,
}


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
                 rows: int = 4, cols: int = 5, n_outputs: int | None = None,
                 break_odds: int = 0) -> Graph:
    """A random DAG of about n_ops table ops over shapes broadcastable to (rows, cols):
    elementwise ops, reductions over either axis or all, per-row values broadcast back,
    views (transpose, slice, reshape) and an occasional opaque op. `choose(seq)` picks one
    element (random.choice by default; hypothesis passes a draw). With `break_odds` n,
    Python needs the value of each op with odds 1 in n: a graph break after it."""
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
        if break_odds and choose(range(break_odds)) == 0:
            b.graph_break(i, f"Python needed the value of v{made}", SourceLoc(made, f"if v{made} > 0:"))
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
    return _layernorm(x, g, b)


def _block_gelu(x: Expr, g: Expr, b: Expr) -> Expr:
    return _tanh_gelu(x)


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


def random_cell(n_nodes: int, seed: int, rows: int = 4096, cols: int = 1024) -> Graph:
    """A random notebook-like cell of about n_nodes: blocks (layernorm, gelu, softmax,
    column scaling, a matmul with a bias, an RMS scaling) applied to one of the last few
    activations, residual sums of two activations, statistics (means over rows, columns
    or all) kept as results, and some activations kept as results."""
    rnd = random.Random(seed)
    b = GraphBuilder()
    x = Expr(b, b.input("x", (rows, cols), F32))
    g = Expr(b, b.input("g", (cols,), F32))
    beta = Expr(b, b.input("beta", (cols,), F32))
    acts = [x]
    outs: list[tuple[str, int]] = []
    while len(b.nodes) < n_nodes:
        src = rnd.choice(acts[-3:])
        kind = rnd.choice(("block", "block", "block", "residual", "stat"))
        if kind == "residual" and len(acts) > 1:
            acts.append(src + rnd.choice(acts))
        elif kind == "stat":
            stat = src.mean(rnd.choice((0, -1, None)))
            outs.append((f"s{len(outs)}", stat.i))
        else:
            block = rnd.choice(BLOCKS + (_block_rms,))
            acts.append(block(src, g, beta))
        if rnd.random() < 0.2:
            outs.append((f"a{len(outs)}", acts[-1].i))
    outs.append(("out", acts[-1].i))
    names: dict[int, str] = {}
    for name, i in outs:
        names.setdefault(i, name)       # an activation kept twice is one result
    return b.build([(name, i) for i, name in names.items()])


def _block_rms(x: Expr, g: Expr, b: Expr) -> Expr:
    return x / ((x * x).mean(-1, keepdims=True) + 1e-6).f("sqrt") * g
