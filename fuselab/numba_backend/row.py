"""The row template: softmax, layernorm, rmsnorm, logsumexp... over rows of length C.

Every reduce node reduces one axis of one full shape F (rows: the positions of the other
axes, as in the CUDA template; a row's columns may lie a stride apart). A parallel loop
runs over the rows; inside, one loop along the row per pass: pass 1 folds the
reductions that need no other reduction, pass 2 those that need pass 1's, and so on; a
final pass computes and stores the full-shape outputs, and the per-row outputs are stored
last. A row is read once from memory and stays in the core's cache for the later passes
(the CPU's counterpart of the CUDA row tiers' on-chip row). Where a row has a chunk of
columns or more and full-shape outputs, the output pass of a row is pipelined with pass 1
of the next (generate): one loop loads the next row and folds its pass-1 reductions while
it stores this row's outputs, so that a row's loop that moves memory also has arithmetic
to hide it behind (the passes and results are the same, only their loops are merged).

Each pass computes a chunk of CHUNK elements in a loop that LLVM vectorizes and, in rows
of CHUNK columns or more, folds sums and max/min into CHUNK lanes (in that same loop, or
a second one over the chunk where the values take computing: accum.fold_loop with lanes),
which are combined in lane order after the row (shorter rows fold in order): the order depends on the shapes only, so
results do not depend on the number of threads. A value that costs more than a load (an
`exp`, a `tanh`: ROW_BUFFER_OPS) which a pass computes and a later pass needs again at
the same element (softmax's exp(x - max), for its sum and then for its output) is kept
in a row buffer, written by the first pass and read by the later ones, instead of being
computed again.

What bounds softmax (16384 x 1024 float32) on one AVX2 core (2-core AMD EPYC,
2026-12-04): 28 ms against 7.5 ms for a copy of as many bytes, all compute, the row
being in L1 after the max pass: the exp about 10 ms (0.6 ns an element,
scalar.fl_exp_f32), the compensated lane sums 4, the division 2.3 (NumPy's bits need a
division, not a multiply by the reciprocal), the max pass 2.2. The max pass took 10 ms
while a lane's update was a select storing back the lane's own value, which x86's back
end makes a masked store (scalar.fl_lane_max); the exp, 27 ms in float64. Then (same
day) 28 -> 23 ms on one core, 14 -> 12 ms on two, changing no result: the next row is
prefetched while the current one is computed on (_prefetches: the time per row had been
the memory's plus the compute's), the exp pass computes a chunk in one loop and folds it
into the lanes in another (accum._lane_fold), and a lane's compensated add is TwoSum
(scalar.fl_lane_add, no compare and select).
"""
from __future__ import annotations

from ..codegen import index as ix
from ..ir import Kind
from ..plan.device import DeviceParams, op_weight
from ..codegen.row import _analyse as analyse   # the row contract is the CUDA template's
from ..codegen.row import full_index
from .accum import CHUNK, accumulator, blocked_loop, fold_loop
from .context import Phase, PyContext, is_allocation
from .emit import indent, render
from .model import PyKernel
from .prefetch import PREFETCH_ARRAYS, line_prefetches
from .pytypes import ctor

# an op's arithmetic in add-equivalents (the planner's table, a transcendental 4 adds a
# table flop): where a row kernel's prefetches go (generate)
_WEIGHTS = DeviceParams()

# ops whose values a later pass reads from a row buffer rather than computing them again
ROW_BUFFER_OPS = frozenset(
    "exp exp2 expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh "
    "arctanh arctan2 hypot cbrt power floor_divide remainder".split())


def _plan_buffers(ctx: PyContext, p, full, passes: int
                  ) -> tuple[dict[int, set[int]], dict[int, set[int]], dict[int, float]]:
    """Which values go through row buffers: (pass -> nodes it stores, pass -> nodes it
    reads, pass -> its arithmetic an element in add-equivalents), passes numbered
    1..passes and the output pass passes + 1. Found by emitting each pass's values once,
    without keeping the code: a node of ROW_BUFFER_OPS that a pass computes at the row's
    element and an earlier pass computed there too is read from the earlier pass's buffer
    (the latest such node first, since it may make the earlier ones unnecessary)."""
    g = ctx.graph
    taken = set(ctx.names.used)
    stores: dict[int, set[int]] = {}
    reads: dict[int, set[int]] = {}
    costs: dict[int, float] = {}
    first: dict[int, int] = {}            # node -> the first pass computing it at `full`
    fixed = {r: f"_r{r}" for r in p.reduces}

    def emit(level: int, preset: set[int]):
        em = ctx.emitter(fixed)
        em.preset = {(n, full): f"_b{n}" for n in preset}
        if level <= passes:
            for r in p.reduces:
                if p.levels[r] == level:
                    em.value(g.nodes[r].inputs[0], full)
        else:
            for o in p.full_out:
                em.value(o, full)
        return [n for n, c in em.computed() if c == full and n in ctx.kernel.nodes and n not in p.reduces]
    try:
        for level in range(1, passes + 2):
            if level > passes and not p.full_out:
                break
            mine: set[int] = set()
            while True:
                computed = emit(level, mine)
                cands = [n for n in computed if n in first and g.nodes[n].op in ROW_BUFFER_OPS]
                if not cands:
                    break
                n = max(cands)
                mine.add(n)
                stores.setdefault(first[n], set()).add(n)
            reads[level] = mine
            costs[level] = sum(op_weight(g.nodes[n], _WEIGHTS, g) for n in computed if g.nodes[n].kind is Kind.ELEMWISE)
            for n in computed:
                first.setdefault(n, level)
    finally:
        ctx.names.used = taken
    return stores, reads, costs


def generate(ctx: PyContext) -> PyKernel:
    p = analyse(ctx)
    if p.stride > 1 and p.rows > 1 and p.cols > STREAMED_COLS:
        return _generate_tiled(ctx, p)
    g = ctx.graph
    row, col = ix.Var("row", max(p.rows, 1)), ix.Var("col", max(p.cols, 1))
    full = full_index(p, row, col)
    at = ix.linearize(full, p.shape)   # row * C + col when the row's columns are contiguous
    accs = {r: accumulator(g, r, ctx.names) for r in p.reduces}
    fixed: dict[int, str] = {}
    body: list[str] = []
    passes = max(p.levels.values())
    stores, reads, costs = _plan_buffers(ctx, p, full, passes)
    buffers = {n: ctx.names.fresh(f"row_v{n}") for n in sorted(set().union(*stores.values()))}
    for n, name in buffers.items():
        body.append(f"{name} = np.empty({p.cols}, {ctor(g.nodes[n].dtype)})  # %{n} {g.nodes[n].op}, kept for a later pass")

    def emitter(level: int):
        em = ctx.emitter(fixed)
        em.preset = {(n, full): f"{buffers[n]}[ix(col)]" for n in reads.get(level, ())}
        return em

    def keep(em, level: int) -> list[str]:
        return [f"{buffers[n]}[ix(col)] = {em.name_of(n, full)}" for n in sorted(stores.get(level, ()))]

    # rows of a chunk or more fold in lanes: filling and combining them for a row of a
    # few columns cost more than the row ((2, 4M) along axis 0: 5x)
    lanes = p.cols >= CHUNK
    pipelined = lanes and bool(p.full_out) and p.rows > 1 and not stores.get(1)

    def reduction_pass(level: int, r_var: ix.Var, alongside: list[str] = (),
                       prefetch: list[str] = ()) -> tuple[list[str], list[str], list[str]]:
        """(allocations, statements, the statements assigning its results to their names
        in `fixed`) of reduction pass `level` over row `r_var`; `alongside`: statements run
        for each column in the pass's loop (the output pass of the row before, pipelined);
        `prefetch`: statements run once a chunk of its loop."""
        mine = [r for r in p.reduces if p.levels[r] == level]
        em = emitter(level)
        at_row = full if r_var is row else full_index(p, r_var, col)
        values = {r: em.value(g.nodes[r].inputs[0], at_row) for r in mine}
        computes = em.computes()
        kept = keep(em, level)
        kept_values = {em.name_of(n, full): buffers[n] for n in stores.get(level, ())}
        setup, loop = fold_loop("col", "0", str(p.cols), [accs[r] for r in mine], em.take_lines() + kept, values,
                                ctx.names, computes or bool(kept), lanes=lanes, prefetch=prefetch,
                                kept=kept_values, alongside=alongside)
        allocs = [l for l in setup if is_allocation(l)]
        lines = [f"# pass {level}: " + ", ".join(f"%{r} {g.nodes[r].op}" for r in mine) +
                 (f" (of row {r_var.name})" if r_var is not row else ""),
                 *[l for l in setup if l not in allocs], *[l for r in mine for l in accs[r].declare()], *loop]
        for r in mine:
            fixed.setdefault(r, ctx.names.fresh(f"v{r}"))
        return allocs, lines, [f"{fixed[r]} = {accs[r].result()}  # %{r} {g.nodes[r].op} of the row" for r in mine]

    # The prefetches of the rows to come go into the pass with the most arithmetic a
    # column, where they overlap it best: the last reduction pass (softmax's exp) fetches
    # the next row's inputs and outputs; the output pass, pipelined with the next row's
    # pass 1 (layernorm's, rmsnorm's), the inputs of the row after that, and the next
    # row's outputs, a whole row ahead of their use.
    last_pass = lanes and (not pipelined or (passes > 1 and costs[passes] > costs[1] + costs[passes + 1]))
    allocs: list[str] = []
    first_allocs, first, first_results = reduction_pass(
        1, row, prefetch=_prefetches(ctx, p, row, col, row) if last_pass and passes == 1 else [])
    allocs += first_allocs
    body += (["if row == lo:   # the first row's pass 1 (the others': in the output pass of the row before)",
              *indent(first + first_results, 1)] if pipelined else first + first_results)
    for level in range(2, passes + 1):
        more, lines, results = reduction_pass(
            level, row, prefetch=_prefetches(ctx, p, row, col, row) if last_pass and level == passes else [])
        allocs += more
        body += lines + results
    full_loop, row_lines = _outputs(ctx, p, emitter(passes + 1), ctx.emitter(fixed), full, at, row)
    if pipelined:
        # the output pass of a row is also the next row's pass 1 (loads along the next
        # row, folded into pass 1's lanes): one loop instead of two, whose loads and
        # stores keep the memory busy while the row's arithmetic runs. 2-core Xeon,
        # 2026-12-06, softmax 1024 x 16384 float32: 8.3 -> 7.4 ms (the copy 5.2).
        # Pass 1's results for the next row are assigned after this row's row outputs.
        # A call's last row folds its own row again (in cache; the results unused)
        # rather than have a loop of its own, which would cost compile time (0.1-0.2 s).
        row_n = ix.Var("row_n", row.extent)
        more, nxt, results = reduction_pass(1, row_n, full_loop,
                                            [] if last_pass else _prefetches(ctx, p, row_n, col, row, row))
        allocs += more
        body += ["# output pass: the full-shape results, and pass 1 of the next row",
                 "row_n = row + 1 if row + 1 < hi else row", *nxt, *row_lines, *results]
    else:
        body += (["# output pass: the full-shape results", f"for col in range({p.cols}):", *indent(full_loop, 1)]
                 if full_loop else []) + row_lines
    seen: set[str] = set()
    body[:0] = [l for l in allocs if not (l in seen or seen.add(l))]
    note = f"a parallel loop over {p.rows} rows of {p.cols}: {passes} reduction pass(es)" + \
        (" + an output pass" if p.full_out else "") + \
        (f"; row buffers for {', '.join(f'%{n} {g.nodes[n].op}' for n in buffers)}" if buffers else "")
    header = [f"{ctx.name}: row kernel over {g.nodes[g.nodes[p.reduces[0]].inputs[0]].aval} "
              f"({p.rows} rows x {p.cols} columns)", *ctx.listing(), note]
    return ctx.finish(header, [Phase("row", p.rows, body, "the rows")], (note,))


# Prefetching (2026-12-04, 2-core AMD EPYC, softmax 16384 x 1024 float32): a row is read
# from memory by its first pass, and the later passes compute on it in the core's cache,
# while the memory sits idle (the hardware prefetchers follow a row, not the next one):
# the time per row was the memory's plus the compute's. The last reduction pass (softmax's
# exp pass, the longest) therefore prefetches the next row of each input read along the
# row, a chunk's cache lines per chunk, and the next row's full-shape outputs for writing
# (x86's prefetchw: the lines come exclusive, as a store's miss would fetch them), so that
# memory and computing overlap: 14.2 -> 12.0 ms on 2 threads (the copy of as many bytes:
# 6 ms). The outputs had been the current row's, which the output pass right after wants
# before they come: the next row's made rows of 1024 float32 8-10% faster (2-core Xeon,
# 2026-12-06: softmax 8.8 -> 8.1 ms, layernorm 8.7 -> 8.0; rows of 16384 the same). A
# prefetch changes no result, and never faults (the row after the last is never read).


def _prefetches(ctx: PyContext, p, row: ix.Var, col: ix.Var, out_row: ix.Var, same: ix.Var | None = None) -> list[str]:
    """Statements run once a chunk of CHUNK columns (at col_c) of a reduction pass over
    `row`: prefetch that chunk's lines of the next row of each input loaded along the row
    (contiguously: the column's coefficient 1; loads along row `same` count as along
    `row`), and for writing, of each full-shape output in the row after `out_row`. None
    where the row's elements are not contiguous, or there is one row."""
    g = ctx.graph
    col_c = ix.Var("col_c", col.extent)
    streams: dict[tuple[str, ix.Affine], list[str]] = {}    # (array, offset at col_c) -> its prefetches

    def along(offset, r: ix.Var) -> bool:
        return all(isinstance(s, ix.Var) and s in (r, col) for s, _ in offset.terms) and \
            offset.coef(col) == 1 and offset.coef(r) != 0

    def lines(array: str, offset, dtype, fn: str) -> None:
        key = (array, offset)
        if key in streams or len(streams) >= PREFETCH_ARRAYS:
            return
        streams[key] = line_prefetches(fn, array, render(ix.rename(offset, col, col_c)), dtype, CHUNK)
    for nid, offset in ctx.loads:
        offset = ix.rename(offset, same, row) if same is not None else offset
        if along(offset, row) and nid in ctx.in_arr:
            lines(ctx.in_arr[nid], offset + offset.coef(row), g.nodes[nid].dtype, "fl_prefetch")
    out_at = ix.linearize(full_index(p, out_row, col), p.shape)
    if along(out_at, out_row):
        for o in p.full_out:
            lines(ctx.out_arr[o], out_at + out_at.coef(out_row), g.nodes[o].dtype, "fl_prefetchw")
    return [l for ls in streams.values() for l in ls]


def _outputs(ctx: PyContext, p, full_em, row_em, full, at, row: ix.Var) -> tuple[list[str], list[str]]:
    """(the output pass's statements for one element (row, col): the full-shape results;
    the statements storing the per-row results of row `row`)."""
    g = ctx.graph
    full_loop: list[str] = []
    for o in p.full_out:
        v = full_em.stored(o, full)
        full_loop += full_em.take_lines() + [ctx.store(o, at, v)]
    row_lines: list[str] = []
    for o in p.row_out:
        v = row_em.stored(o, ix.delinearize(ix.Affine.of(row), g.nodes[o].shape))
        row_lines += row_em.take_lines() + [ctx.store(o, ix.Affine.of(row), v)]
    return full_loop, row_lines


# Rows along a strided axis (x - x.mean(axis=0)) of more than STREAMED_COLS columns: a
# row at a time reads an element a cache line, one stream per column, which the
# prefetchers stop following past about 16 ((1000, 1000): 3.2 ms against 0.68 ms for the
# column mean and the subtraction apart, 2 cores). TILE_ROWS neighbouring rows, whose
# elements lie side by side in memory, are walked together instead, column after column:
# each step reads TILE_ROWS adjacent elements, and the loop over the tile's rows updates
# independent accumulators, which LLVM vectorizes, as the column reduction's tiles
# (reduction.py). 2026-12-03, one thread, (1000, 1000): 3.2 ms a row at a time, 2.0 ms in
# tiles of 64, 1.3 of 256, 1.0 of 1024 (the unfused plan 1.3 ms); (4096, 4096) tiles of
# 1024 streamed best, but tiles of 256 keep up to 256 columns of a tile in L2 for the
# later passes ((32, 500k): 18 ms against 23 ms unfused). Row buffers hold a tile's
# values when they fit TILE_BUFFER elements, else the values are computed again.
TILE_ROWS = 256
STREAMED_COLS = 16
TILE_BUFFER = 1 << 16


def _generate_tiled(ctx: PyContext, p) -> PyKernel:
    """The row kernel over tiles of TILE_ROWS adjacent strided rows: each row folds its
    columns in order (blocks of accum.BLOCK), whatever the tile or the threads."""
    g = ctx.graph
    T = min(TILE_ROWS, p.rows)
    tiles = -(-p.rows // T)
    row, col = ix.Var("row", max(p.rows, 1)), ix.Var("col", max(p.cols, 1))
    full = full_index(p, row, col)
    at = ix.linearize(full, p.shape)
    accs = {r: accumulator(g, r, ctx.names).at("j") for r in p.reduces}
    passes = max(p.levels.values())
    stores, reads, _ = _plan_buffers(ctx, p, full, passes) if p.cols * T <= TILE_BUFFER else ({}, {}, {})
    buffers = {n: ctx.names.fresh(f"tile_v{n}") for n in sorted(set().union(*stores.values()))}
    body = [f"{name} = np.empty({p.cols * T}, {ctor(g.nodes[n].dtype)})  # %{n} {g.nodes[n].op}, kept for a later pass"
            for n, name in buffers.items()]
    body += [f"r0 = u * {T}", f"n_r = min({p.rows} - r0, {T})"]
    each = "for j in range(n_r):"
    fixed: dict[int, str] = {}

    def emitter(level: int):
        em = ctx.emitter(fixed)
        em.preset = {(n, full): f"{buffers[n]}[ix(col * {T} + j)]" for n in reads.get(level, ())}
        return em

    def over_tile(lines: list[str]) -> list[str]:
        return [each, "    row = r0 + j", *indent(lines, 1)]
    for level in range(1, passes + 1):
        mine = [accs[r] for r in p.reduces if p.levels[r] == level]
        body.append(f"# pass {level}: " + ", ".join(f"%{a.node} {g.nodes[a.node].op}" for a in mine))
        em = emitter(level)
        values = {a.node: em.value(g.nodes[a.node].inputs[0], full) for a in mine}
        kept = [f"{buffers[n]}[ix(col * {T} + j)] = {em.name_of(n, full)}" for n in sorted(stores.get(level, ()))]
        step = em.take_lines() + kept + [l for a in mine for l in a.step(values[a.node], "col")]
        for a in mine:
            body += a.declare_array(str(T))
        body += blocked_loop("col", "0", str(p.cols), mine, over_tile(step), each=each)
        results = []
        for a in mine:
            name = ctx.names.fresh(f"v{a.node}")
            body.append(f"{name} = np.empty({T}, {ctor(g.nodes[a.node].dtype)})  # %{a.node} {g.nodes[a.node].op} of each row")
            results.append(f"{name}[ix(j)] = {a.result()}")
            fixed[a.node] = f"{name}[ix(j)]"
        body += [each, *indent(results, 1)]
    full_loop, row_lines = _outputs(ctx, p, emitter(passes + 1), ctx.emitter(fixed), full, at, row)
    if full_loop:
        body += ["# output pass: the full-shape results", f"for col in range({p.cols}):",
                 *indent(over_tile(full_loop), 1)]
    if row_lines:
        body += over_tile(row_lines)
    note = (f"a parallel loop over {tiles} tiles of {T} adjacent rows (their columns {p.stride} elements apart), "
            f"{p.cols} columns: {passes} reduction pass(es)" + (" + an output pass" if p.full_out else "")
            + (f"; tile buffers for {', '.join(f'%{n} {g.nodes[n].op}' for n in buffers)}" if buffers else ""))
    header = [f"{ctx.name}: row kernel over {g.nodes[g.nodes[p.reduces[0]].inputs[0]].aval} "
              f"({p.rows} rows x {p.cols} columns, along a strided axis)", *ctx.listing(), note]
    return ctx.finish(header, [Phase("u", tiles, body, "the tiles of rows")], (note,))
