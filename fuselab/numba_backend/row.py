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

from ..codegen import index as ix
from ..codegen.row import _analyse as analyse   # the row contract is the CUDA template's
from .accum import accumulator, fold_loop
from .context import PyContext
from .emit import indent
from .model import PyKernel


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
        values = {r: em.value(g.nodes[r].inputs[0], full) for r in mine}
        computes = em.computes()
        setup, loop = fold_loop("col", "0", str(p.cols), [accs[r] for r in mine], em.take_lines(), values, ctx.names,
                                computes)
        body += setup
        for r in mine:
            body += accs[r].declare()
        body += loop
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
