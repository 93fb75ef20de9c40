"""The reference cells of the planner, codegen and benchmarks, built with GraphBuilder:
softmax, layernorm and rmsnorm (with their source lines, as traced: the golden kernels
are generated from them), the other small cells (logsumexp, gelu, adam, black-scholes,
stencils, reductions, matmul epilogues), and larger cells of 50-100 nodes as notebooks
write them (a transformer block, adam with clipping, option greeks, heat steps, column
statistics).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from fuselab.ir import Graph, GraphBuilder, SourceLoc
from fuselab.ops import Aval, OpaqueFn

from .expr import F32, Expr, graph_of, layernorm_rows, tanh_gelu, where


def loc(line: int, text: str) -> SourceLoc:
    return SourceLoc(line, text)


# ---------------------------------------------------------------------------
# the row cells, as traced
# ---------------------------------------------------------------------------

def softmax(rows: int = 4096, cols: int = 1024, dtype=np.float32) -> Graph:
    """e = exp(x - x.max(-1)); e / e.sum(-1): one row kernel."""
    b = GraphBuilder("m = x.max(-1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(-1, keepdims=True)")
    x = b.input("x", (rows, cols), dtype)
    m = b.reduce("max", x, axis=-1, keepdims=True, loc=loc(1, "m = x.max(-1, keepdims=True)"))
    d = b.elemwise("subtract", [x, m], loc=loc(2, "e = np.exp(x - m)"))
    e = b.elemwise("exp", [d], loc=loc(2, "e = np.exp(x - m)"))
    s = b.reduce("sum", e, axis=-1, keepdims=True, loc=loc(3, "y = e / e.sum(-1, keepdims=True)"))
    y = b.elemwise("true_divide", [e, s], loc=loc(3, "y = e / e.sum(-1, keepdims=True)"))
    return b.build([("y", y)])


def layernorm(rows: int = 4096, cols: int = 1024, dtype=np.float32, eps: float = 1e-5,
              affine: bool = True) -> Graph:
    """(x - mean) / sqrt(var + eps) over rows, then `* gamma + beta` when affine."""
    b = GraphBuilder()
    x = b.input("x", (rows, cols), dtype)
    if affine:
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
    line = loc(5, "y = xc / r * gamma + beta" if affine else "y = xc / r")
    y = b.elemwise("true_divide", [xc, r], loc=line)
    if affine:
        y = b.elemwise("add", [b.elemwise("multiply", [y, gamma], loc=line), beta], loc=line)
    return b.build([("y", y)])


def rmsnorm(rows: int = 4096, cols: int = 1024, dtype=np.float32, eps: float = 1e-6) -> Graph:
    """x / sqrt(mean(x * x) + eps) * w over rows."""
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
# other small cells
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


def logsumexp(rows: int = 4096, cols: int = 1024) -> Graph:
    def cell(inp):
        x = inp("x", (rows, cols))
        m = x.max(-1, keepdims=True)
        return {"lse": m + (x - m).f("exp").sum(-1, keepdims=True).f("log")}
    return graph_of(cell)


def div_by_sum(n: int = 1 << 20) -> Graph:
    def cell(inp):
        x = inp("x", (n,))
        return {"y": x / x.sum()}
    return graph_of(cell)


def matmul_bias_act(m: int = 4096, k: int = 1024, n: int = 1024) -> Graph:
    def cell(inp):
        x, w, bias = inp("x", (m, k)), inp("w", (k, n)), inp("b", (n,))
        h = _mm(x, w)
        return {"y": (h + bias).f("tanh") * 0.5}
    return graph_of(cell)


def gelu(n: int = 1 << 22) -> Graph:
    def cell(inp):
        x = inp("x", (n,))
        c = math.sqrt(2 / math.pi)
        return {"y": 0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).f("tanh"))}
    return graph_of(cell)


def adam(n: int = 1 << 22, b1: float = 0.9, b2: float = 0.999, lr: float = 1e-3, t: int = 10) -> Graph:
    def cell(inp):
        p, g, m, v = (inp(k, (n,)) for k in ("p", "g", "m", "v"))
        m2 = b1 * m + (1 - b1) * g
        v2 = b2 * v + (1 - b2) * g * g
        mhat = m2 / (1 - b1 ** t)
        vhat = v2 / (1 - b2 ** t)
        return {"p2": p - lr * mhat / (vhat.f("sqrt") + 1e-8), "m2": m2, "v2": v2}
    return graph_of(cell)


def black_scholes(n: int = 1 << 22) -> Graph:
    def cell(inp):
        s, x, t = inp("S", (n,)), inp("X", (n,)), inp("T", (n,))
        d1, d2, disc, _ = _black_scholes_terms(s, x, t, 0.02, 0.30)
        call = s * _cnd(d1) - disc * _cnd(d2)
        put = disc * (1.0 - _cnd(d2)) - s * (1.0 - _cnd(d1))
        return {"call": call, "put": put}
    return graph_of(cell)


def stencil(rows: int = 4096, cols: int = 4096) -> Graph:
    def cell(inp):
        u = inp("u", (rows, cols))
        lap = u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4.0 * u[1:-1, 1:-1]
        return {"u2": u[1:-1, 1:-1] + 0.1 * lap}
    return graph_of(cell)


def reductions(shape: tuple[int, ...] = (256, 512, 64)) -> Graph:
    """A reduction over each axis, and over all of them, of one producer."""
    def cell(inp):
        x = inp("x", shape)
        e = (x * x).f("sqrt")
        outs = {f"s{a}": e.sum(a) for a in range(len(shape))}
        outs["total"] = e.sum()
        return outs
    return graph_of(cell)


def column_norm(rows: int = 8192, cols: int = 1024) -> Graph:
    """x / sqrt(sum(x*x, axis=0)): a column reduction broadcast back (two kernels)."""
    def cell(inp):
        x = inp("x", (rows, cols))
        return {"y": x / ((x * x).sum(0, keepdims=True)).f("sqrt")}
    return graph_of(cell)


# ---------------------------------------------------------------------------
# larger cells (50-100 nodes), as notebooks write them
# ---------------------------------------------------------------------------

def transformer_block(tokens: int = 2048, dim: int = 1024, hidden: int = 4096) -> Graph:
    """Pre-norm attention and MLP with residuals: layernorm, q/k/v, softmax(q k^T), the
    output projection, layernorm, a GELU MLP (matmuls are opaque)."""
    def cell(inp):
        x = inp("x", (tokens, dim))
        g1, b1, g2, b2, c2 = (inp(k, (dim,)) for k in ("g1", "b1", "g2", "b2", "c2"))
        wq, wk, wv, wo = (inp(k, (dim, dim)) for k in ("wq", "wk", "wv", "wo"))
        w1, c1, w2 = inp("w1", (dim, hidden)), inp("c1", (hidden,)), inp("w2", (hidden, dim))
        h = layernorm_rows(x, g1, b1)
        q, k, v = _mm(h, wq), _mm(h, wk), _mm(h, wv)
        s = _mm(q, k.T) * (1.0 / math.sqrt(dim))
        e = (s - s.max(-1, keepdims=True)).f("exp")
        x2 = x + _mm(_mm(e / e.sum(-1, keepdims=True), v), wo)
        u = _mm(layernorm_rows(x2, g2, b2), w1) + c1
        return {"y": x2 + _mm(tanh_gelu(u), w2) + c2}
    return graph_of(cell)


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
    return graph_of(cell)


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
    return graph_of(cell)


def heat_steps(steps: int = 4, rows: int = 2048, cols: int = 2048) -> Graph:
    """Explicit heat-equation steps (5-point stencils on slices), then the energy and
    each column's maximum."""
    def cell(inp):
        u = inp("u", (rows, cols))
        for _ in range(steps):
            lap = u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4.0 * u[1:-1, 1:-1]
            u = u[1:-1, 1:-1] + 0.1 * lap
        return {"u": u, "energy": (u * u).sum(), "colmax": u.max(0)}
    return graph_of(cell)


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
    return graph_of(cell)


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
