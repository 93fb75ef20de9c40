"""Random graphs for property tests and planning-time benchmarks.

`random_graph` draws random DAGs of table ops over broadcastable shapes (graph breaks
too, on request); `notebook_graph` and `random_cell` compose notebook blocks (layernorm,
gelu, softmax, column scaling, a matmul with a bias, an RMS scaling) into cells of a
given size.
"""
from __future__ import annotations

import random
from typing import Any, Callable, Sequence

import numpy as np

from fuselab.ir import Graph, GraphBuilder, SourceLoc
from fuselab.ops import OpaqueFn, ShapeError

from .expr import F32, Expr, layernorm_rows, tanh_gelu


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
# notebook-like cells: blocks applied to a running activation
# ---------------------------------------------------------------------------

def _block_gelu(x: Expr, g: Expr, b: Expr) -> Expr:
    return tanh_gelu(x)


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


BLOCKS = (layernorm_rows, _block_gelu, _block_softmax, _block_scale, _block_gelu, _block_matmul)


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
