"""The reduction template: reduce nodes over any axes, with fused producers (the prologue,
computed per input element) and consumers (the epilogue, per output element).

The reduced shape X splits into K outputs and R elements per output (flat indices `o` and
`r`, coordinates in X by index math). A parallel loop runs over work units; a unit folds a
tile of T consecutive outputs over a chunk of the R elements:

* T = 1 ("inner") unless the last axis of X is kept: each output's elements are folded
  along the reduced axes, in order.
* T > 1 ("column") when the last axis of X is kept: the unit walks its rows of X and
  folds T neighbouring outputs at once, so reads stay contiguous.
* When there are few tiles and many elements (a full reduction, a column mean), R is
  split into chunks of a fixed size; each unit leaves a partial per output (in scratch
  arrays the runner allocates), and a second parallel loop combines the partials of each
  output in chunk order. Chunk size and count depend on the shapes only, so the result
  is the same on every machine, whatever its thread count.

Float sums are NumPy-accurate (accum.Acc: blocks with a compensated total) where NumPy
sums pairwise (the reduced axes innermost in memory). In the column strategy NumPy adds
one row after another (its loop runs along the kept axis, an add per row); there, when R
is not split, the fold is NumPy's: plain adds in row order (float16 rounded at each add),
so the results are NumPy's bits (a sequential sum's rounding error, O(R eps), is far past
the documented tolerance otherwise). A split column sum (few outputs, R of 2 * split or
more) keeps the compensated chunks: its order cannot be NumPy's without giving up the
parallel loop, and it is then more accurate than NumPy's.
"""
from __future__ import annotations

from ..codegen import index as ix
# the CUDA template's analysis of the kernel: the same contract (layout, prologue, epilogue)
from ..codegen.reduction import _Problem as Problem, _analyse as analyse, _coords as coords
from .accum import Acc, accumulator, blocked_loop, fold_loop
from .context import Phase, PyContext
from .emit import indent, render
from .model import PyKernel
from .prefetch import LINE, PREFETCH_ARRAYS
from .pytypes import storage

MIN_UNITS = 16   # fewer units than this: split the reduced range
# Column tiles walk rows of X a row stride apart, a tile's width of each (1 KB of float32 in
# tiles of 256): the hardware prefetchers, which follow a stream within a 4 KB page, start
# afresh on every row. The tile's lines PREFETCH_ROWS rows ahead are prefetched instead,
# which changes no result (2026-12-04, one core of a 2-core AMD EPYC, column mean of
# 16384 x 1024 float32, minima of 30 runs in alternating rounds: 9.3 -> 7.4 ms; in tiles
# of 128, 11.1 -> 7.3 ms; one tile of all 1024 columns, a contiguous walk, 5.0-5.7 ms).
PREFETCH_ROWS = 8


def generate(ctx: PyContext) -> PyKernel:
    p = analyse(ctx)
    g = ctx.graph
    K, R = p.kept, p.reduced
    opts = ctx.options
    tile = min(opts.tile, K) if (p.layout.endswith("K") and "R" in p.layout) else 1
    tiles = ix.ceil_div(K, tile) if K else 0
    splits = ix.ceil_div(R, opts.split) if (tiles < MIN_UNITS and R >= 2 * opts.split) else 1
    chunk = ix.ceil_div(R, splits) if R else 0
    o_var, r_var = ix.Var("o", max(K, 1)), ix.Var("r", max(R, 1))
    at = coords(p, ix.Affine.of(o_var), ix.Affine.of(r_var))
    tile = max(tile, 1)   # no outputs (K == 0): one output per unit, of which there are none
    accs = [accumulator(g, r, ctx.names) for r in p.reduces]
    if tile > 1 and splits == 1:     # NumPy's order: rows one after another (see above)
        accs = [a.with_numpy_order(opts.fp16_math == "numpy") for a in accs]
    folded = [a.at("j") for a in accs] if tile > 1 else accs

    # the fold of one element (o, r): prologue values, their stores, one step per reduction
    em = ctx.emitter()
    values = {a.node: em.value(g.nodes[a.node].inputs[0], at) for a in folded}
    stores = [ctx.store(o, ix.linearize(at, p.shape), em.stored(o, at)) for o in p.prologue_out]
    computes = em.computes() or bool(stores)
    element = em.take_lines() + stores
    step = element + [l for a in folded for l in a.step(values[a.node], "r")]

    lo = "part * {c}".format(c=chunk) if splits > 1 else "0"
    hi = f"min({R}, part * {chunk} + {chunk})" if splits > 1 else f"{R}"
    partials = {a.node: (ctx.names.fresh(f"part{a.node}"),
                         ctx.names.fresh(f"part{a.node}_index") if a.is_arg else None) for a in accs}
    scratch: list[tuple[str, str, int]] = []
    if splits > 1:
        for a in accs:
            scratch += a.partial_arrays(*partials[a.node], K * splits)
    unit = [f"part = u % {splits}"] if splits > 1 else []
    if tile == 1:
        unit += [f"o = u // {splits}" if splits > 1 else "o = u"]
        setup, loop = fold_loop("r", lo, hi, accs, element, values, ctx.names, computes)
        for a in accs:
            unit += a.declare()
        unit += setup + loop
        unit += _finish_one(ctx, p, accs, partials, splits, "o")
    else:
        unit += [f"o0 = u // {splits} * {tile}" if splits > 1 else f"o0 = u * {tile}",
                 f"n_o = min({K} - o0, {tile})"]
        for a in accs:
            unit += a.declare_array(str(tile))
        ahead = _column_prefetches(ctx, o_var, r_var, tile)
        unit += blocked_loop("r", lo, hi, folded, [*ahead, "for j in range(n_o):", "    o = o0 + j", *indent(step, 1)],
                             each="for j in range(n_o):")
        unit += ["for j in range(n_o):", "    o = o0 + j",
                 *indent(_finish_one(ctx, p, folded, partials, splits, "o"), 1)]
    phases = [Phase("u", tiles * splits, unit, "the work units" + (" (tile, chunk)" if splits > 1 else ""))]
    if splits > 1:
        comb: list[str] = []
        for a in accs:
            comb += a.declare()
        comb.append(f"for part in range({splits}):")
        for a in accs:
            comb += indent(a.merge_partial(*partials[a.node], f"o * {splits} + part"), 1)
        comb += _epilogue(ctx, p, accs, "o")
        phases.append(Phase("o", K, comb, f"the outputs, each combining its {splits} partials in chunk order"))
    strategy = ("column: tiles of %d outputs walk the rows" % tile if tile > 1 else "inner: one output per unit")
    if any(a.ordered for a in accs):
        strategy += " (sums add row after row, in NumPy's order)"
    if splits > 1:
        strategy += f", the {R} reduced elements split into {splits} chunks combined in order"
    shape = g.nodes[g.nodes[p.reduces[0]].inputs[0]].aval
    header = [f"{ctx.name}: reduction of {shape} over axes {tuple(p.axes)} ({K} outputs x {R} elements, "
              f"layout {p.layout or 'scalar'})", *ctx.listing(), strategy]
    return ctx.finish(header, phases, (strategy,), scratch)


def _finish_one(ctx: PyContext, p: Problem, accs: list[Acc], partials, splits: int, o: str) -> list[str]:
    """After a unit's loop: its partials (split), or the epilogue of output `o`."""
    if splits == 1:
        return _epilogue(ctx, p, accs, o)
    out: list[str] = []
    for a in accs:
        pv, pi = partials[a.node]
        out += a.store_partial(pv, pi, f"{o} * {splits} + part")
    return out


def _epilogue(ctx: PyContext, p: Problem, accs: list[Acc], o: str) -> list[str]:
    """Compute and store every per-output value at output index `o`."""
    g = ctx.graph
    lines: list[str] = []
    fixed: dict[int, str] = {}
    for a in accs:
        name = ctx.names.fresh(f"v{a.node}")
        lines.append(f"{name} = {a.result()}")
        fixed[a.node] = name
    em = ctx.emitter(fixed)
    o_var = ix.Affine.of(ix.Var(o, max(p.kept, 1)))
    stores = [ctx.store(out, o_var, em.stored(out, ix.delinearize(o_var, g.nodes[out].shape)))
              for out in p.epilogue_out]
    return lines + em.take_lines() + stores


def _column_prefetches(ctx: PyContext, o_var: ix.Var, r_var: ix.Var, tile: int) -> list[str]:
    """Statements run once a row r of a column tile (outputs o0..o0+tile-1): prefetch the
    tile's cache lines of row r + PREFETCH_ROWS of each input read along the tile (the
    output's coefficient 1) and down the rows. A prefetch changes no result and never
    faults (rows past the chunk's or the array's end are harmless)."""
    if PREFETCH_ROWS <= 0:
        return []
    o0 = ix.Var("o0", o_var.extent)
    out: list[str] = []
    seen: set[tuple[int, ix.Affine]] = set()
    for nid, offset in ctx.loads:
        if (nid, offset) in seen or len(seen) >= PREFETCH_ARRAYS or nid not in ctx.in_arr:
            continue
        if offset.coef(o_var) != 1 or offset.coef(r_var) <= 0 or \
                not all(isinstance(s, ix.Var) and s in (o_var, r_var) for s, _ in offset.terms):
            continue
        seen.add((nid, offset))
        step = max(1, LINE // storage(ctx.graph.nodes[nid].dtype).itemsize)   # elements a line
        ahead = ix.rename(offset, o_var, o0) + PREFETCH_ROWS * offset.coef(r_var)
        pf = ctx.names.fresh("pf")
        out += [f"for {pf} in range(0, {tile}, {step}):",
                f"    fl_prefetch({ctx.in_arr[nid]}, ix({render(ahead)} + {pf}))"]
    return out
