"""The row template: softmax, layernorm, rmsnorm, logsumexp... over rows of length C.

Every reduce node reduces the last axis of one full shape F (rows = prod(F[:-1])). A
prange loop runs over the rows; inside, one loop along the row per pass: pass 1 folds the
reductions that need no other reduction, pass 2 those that need pass 1's, and so on; a
final pass computes and stores the full-shape outputs, and the per-row outputs are stored
last. A row is read once from memory and stays in the core's cache for the later passes
(the CPU's counterpart of the CUDA row tiers' on-chip row). Each row is folded in order,
so results do not depend on the number of threads.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..codegen import index as ix
from ..ops import Kind
from .accum import accumulator, blocked_loop
from .context import PyContext
from .emit import CodegenError, indent
from .model import PyKernel


@dataclass(frozen=True)
class RowShape:
    shape: tuple[int, ...]       # F
    rows: int
    cols: int
    reduces: tuple[int, ...]
    levels: dict[int, int]       # reduce node -> pass number (1-based)
    full_out: tuple[int, ...]
    row_out: tuple[int, ...]


def analyse(ctx: PyContext) -> RowShape:
    g, k = ctx.graph, ctx.kernel
    reduces = [i for i in k.nodes if g.nodes[i].kind is Kind.REDUCE]
    if not reduces:
        raise CodegenError(f"row kernel {ctx.name} has no reduction")
    shapes = {g.nodes[g.nodes[r].inputs[0]].shape for r in reduces}
    if len(shapes) != 1:
        raise CodegenError(f"row kernel {ctx.name}: reductions over different shapes {sorted(shapes)}")
    (shape,) = shapes
    if not shape:
        raise CodegenError(f"row kernel {ctx.name}: a row kernel needs at least one axis")
    for r in reduces:
        if g.nodes[r].args["axes"] != (len(shape) - 1,):
            raise CodegenError(f"row kernel {ctx.name}: %{r} does not reduce the last axis of {shape}")
    levels: dict[int, int] = {}
    depth: dict[int, int] = {}
    for i in k.nodes:   # the number of reductions on the longest path to each node
        d = max((depth.get(j, 0) for j in g.nodes[i].inputs), default=0)
        if g.nodes[i].kind is Kind.REDUCE:
            levels[i] = d + 1
            d += 1
        depth[i] = d
    rows = ix.prod(shape[:-1])
    full_out, row_out = [], []
    for o in k.outputs:
        n = g.nodes[o]
        if n.shape == shape:
            full_out.append(o)
        elif n.aval.size == rows:
            row_out.append(o)
        else:
            raise CodegenError(f"row kernel {ctx.name}: output %{o} {n.aval} is neither full-shape {shape} "
                               "nor one value per row")
    return RowShape(shape, rows, shape[-1], tuple(reduces), levels, tuple(full_out), tuple(row_out))


def generate(ctx: PyContext) -> PyKernel:
    p = analyse(ctx)
    g = ctx.graph
    row, col = ix.Var("row", max(p.rows, 1)), ix.Var("col", max(p.cols, 1))
    full = (*ix.delinearize(ix.Affine.of(row), p.shape[:-1]), ix.Affine.of(col))
    at = ix.Affine.of(row) * p.cols + ix.Affine.of(col)
    accs = {r: accumulator(g, r, ctx.names) for r in p.reduces}
    fixed: dict[int, str] = {}
    body: list[str] = []
    passes = max(p.levels.values())
    for level in range(1, passes + 1):
        mine = [r for r in p.reduces if p.levels[r] == level]
        body.append(f"# pass {level}: " + ", ".join(f"%{r} {g.nodes[r].op}" for r in mine))
        em = ctx.emitter(fixed)
        loop: list[str] = []
        for r in mine:
            body += accs[r].declare()
            v = em.value(g.nodes[r].inputs[0], full)
            loop += em.take_lines() + accs[r].step(v, "col")
        body += blocked_loop("col", "0", str(p.cols), [accs[r] for r in mine], loop)
        for r in mine:
            name = ctx.names.fresh(f"v{r}")
            body.append(f"{name} = {accs[r].result()}  # %{r} {g.nodes[r].op} of the row")
            fixed[r] = name
    if p.full_out:
        body.append("# output pass: the full-shape results")
        em = ctx.emitter(fixed)
        loop = []
        for o in p.full_out:
            v = em.stored(o, full)
            loop += em.take_lines() + [ctx.store(o, at, v)]
        body += [f"for col in range({p.cols}):", *indent(loop, 1)]
    if p.row_out:
        em = ctx.emitter(fixed)
        for o in p.row_out:
            v = em.stored(o, ix.delinearize(ix.Affine.of(row), g.nodes[o].shape))
            body += em.take_lines() + [ctx.store(o, ix.Affine.of(row), v)]
    note = f"prange over {p.rows} rows of {p.cols}: {passes} reduction pass(es)" + \
        (" + an output pass" if p.full_out else "")
    header = [f"{ctx.name}: row kernel over {g.nodes[g.nodes[p.reduces[0]].inputs[0]].aval} "
              f"({p.rows} rows x {p.cols} columns)", *ctx.listing(), note]
    return ctx.finish(header, [f"for row in prange({p.rows}):", *indent(body, 1)], (note,))
