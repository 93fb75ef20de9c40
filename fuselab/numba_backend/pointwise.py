"""The pointwise template: one parallel loop over the elements of the output shape S.

The fused ops run element by element inside the loop; views are folded into each load's
index. When every index is affine in the flat element number (contiguous and broadcast-
free reads), the loop is flat, which the driver splits evenly across threads and LLVM
can vectorize. Otherwise (a broadcast row, a transpose) it runs over rows of S in parallel
and along the last axis inside, so that index math stays affine and cheap.
"""
from __future__ import annotations

from ..codegen import index as ix
from ..ops import Kind
from .context import Phase, PyContext
from .emit import CodegenError, has_divmod, indent, render
from .model import PyKernel

MIN_INNER = 8   # a last axis shorter than this is not worth a loop of its own


def generate(ctx: PyContext) -> PyKernel:
    g, k = ctx.graph, ctx.kernel
    for nid in k.nodes:
        if g.nodes[nid].kind not in (Kind.ELEMWISE, Kind.SOURCE, Kind.INJECTIVE):
            raise CodegenError(f"pointwise kernel {ctx.name} contains %{nid} ({g.nodes[nid].op})")
    shapes = {g.nodes[o].shape for o in k.outputs}
    if len(shapes) != 1:
        raise CodegenError(f"pointwise kernel {ctx.name} stores outputs of different shapes {sorted(shapes)}")
    (shape,) = shapes
    n = ix.prod(shape)
    i = ix.Var("i", max(n, 1))
    flat = ix.delinearize(ix.Affine.of(i), shape)
    taken = set(ctx.names.used)
    em = ctx.emitter()
    stores = [ctx.store(o, ix.Affine.of(i), em.stored(o, flat)) for o in k.outputs]
    affine = not any(has_divmod(c) for c in em.indices())
    if affine or len(shape) < 2 or shape[-1] < MIN_INNER:
        phase = Phase("i", n, em.take_lines() + stores, "the elements")
        note = f"one flat parallel loop over {n} elements" + ("" if affine else " (index math per element)")
    else:
        rows, cols = ix.prod(shape[:-1]), shape[-1]
        r, c = ix.Var("r", rows), ix.Var("c", cols)
        coords = (*ix.delinearize(ix.Affine.of(r), shape[:-1]), ix.Affine.of(c))
        ctx.names.used = taken      # the flat attempt's names are free again
        em = ctx.emitter()
        at = ix.Affine.of(r) * cols + ix.Affine.of(c)
        stores = [ctx.store(o, at, em.stored(o, coords)) for o in k.outputs]
        phase = Phase("r", rows, [f"for c in range({cols}):", *indent(em.take_lines() + stores, 1)], "the rows")
        note = f"a parallel loop over {rows} rows, a loop along each row of {cols}"
    header = [f"{ctx.name}: pointwise over {g.nodes[k.outputs[0]].aval} ({n} elements)", *ctx.listing(), note]
    return ctx.finish(header, [phase], (note,))
