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
from .prefetch import AHEAD, PREFETCH_ARRAYS, RUN, line_prefetches

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
        i_c = ix.Var(ctx.names.fresh("i_c"), max(n, 1))
        ahead = _stream_prefetches(ctx, i, i_c)
        phase = Phase("i", n, em.take_lines() + stores, "the elements", chunk=RUN if ahead else 0,
                      chunk_var=i_c.name, ahead=tuple(ahead))
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


def _stream_prefetches(ctx: PyContext, i: ix.Var, i_c: ix.Var) -> list[str]:
    """The prefetches of a run of RUN iterations starting at i_c of the flat loop over i:
    for each input read contiguously along i (i's coefficient 1, nothing else varying),
    its lines AHEAD iterations on (prefetch.py). Outputs are left to the stores: fetching
    them for writing too made GELU slower (6.2 -> 6.7 ms)."""
    streams: dict[tuple[str, ix.Affine], list[str]] = {}
    for nid, offset in ctx.loads:
        if nid not in ctx.in_arr or len(streams) >= PREFETCH_ARRAYS or offset.coef(i) != 1 or \
                not all(s == i for s, _ in offset.terms):
            continue
        key = (ctx.in_arr[nid], offset)
        if key not in streams:
            base = f"{render(ix.rename(offset, i, i_c))} + {AHEAD}"
            streams[key] = line_prefetches("fl_prefetch", ctx.in_arr[nid], base, ctx.graph.nodes[nid].dtype, RUN)
    return [line for lines in streams.values() for line in lines]
