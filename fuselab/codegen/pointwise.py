"""The pointwise template: one thread-element per output element of one shape S.

The fused ops become one element function (element.py); the kernel around it only moves
data. When every load either walks along the output contiguously (aligned) or stays
fixed across a run of V elements, the kernel moves V elements per 16-byte access and
finishes the last n % V elements one by one; otherwise every load computes its own
strided offset. Grid-stride loops over a grid sized from the SM count.

Where the flat index cannot take vectors but each row can, loads are vectors of columns
along rows: a stencil of shifted slices whose rows share loads takes the stencil path
(stencil.py: a thread marches through several rows, every aligned vector loaded once), other kernels the
row-vector path below.

Where an input is read through a transpose (`x.T * 2 + z`: contiguous along another axis
than the output's last), the transpose path moves tiles of 32 x 32 elements through
shared memory, as a transpose kernel does: each tile is read with threads along the
input's contiguous axis and computed and stored with threads along the output's, so both
the loads and the stores coalesce (the strided path ran such a cell at 39% of copy).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from . import element
from . import index as ix
from . import stage, stencil
from .context import KernelContext
from .emit import array_name, indent
from .config import PointwiseConfig
from .model import KernelCode
from .tables import set_up_tables, table_nodes, tables_note
from .types import storage_type


TILE = 32          # the transpose path's tiles: TILE x TILE elements
GATHER_REUSE = 4   # the vector path gathers loads of arrays with at most 1/4 of the elements
TILE_ROWS = 8      # rows of threads a tile's block has (each takes TILE / TILE_ROWS rows)


def heuristic(ctx: KernelContext) -> PointwiseConfig:
    a = _analyse(_fresh(ctx))
    return _heuristic(ctx, a[4], a[5])


def _heuristic(ctx: KernelContext, sten: stencil.Stencil | None, tr: "_Transpose | None" = None) -> PointwiseConfig:
    if tr is not None:
        ta, tc = tr.tile
        return PointwiseConfig(block=TILE * TILE_ROWS, unroll=1,
                               why=f"heuristic: a transpose, tiles of {ta}x{tc} through shared memory "
                                   f"(input contiguous along axis {tr.a}, output along its last)")
    if sten is not None:
        rows = stencil.rows_heuristic(sten, ctx.options.sm_count)
        return PointwiseConfig(block=ctx.options.block_size, unroll=rows,
                               why=f"heuristic: a stencil, {rows} rows a thread along axis {sten.axis} "
                                   "(the input rows they share loaded once)")
    return PointwiseConfig(block=ctx.options.block_size, unroll=1, why="default: one element per thread step")


def _fresh(ctx: KernelContext) -> KernelContext:
    """A context of the same kernel with no names taken: analysing it leaves `ctx` as it was."""
    return KernelContext(ctx.graph, ctx.kernel, ctx.index, ctx.options)


def candidates(ctx: KernelContext) -> list[PointwiseConfig]:
    """More elements per thread (independent loads in flight) for the strided path, whose
    index math and scattered loads leave bandwidth on the table; the vector path already
    moves 16 bytes per access. On the stencil path `unroll` is the rows a thread takes.
    Where the kernel computes values from broadcast operands alone, the heuristic's
    configuration with those values in tables too."""
    analysed = _analyse(ctx)
    out = _candidates(ctx, analysed)
    nodes = table_nodes(ctx) if _flat(analysed) else []
    if nodes:
        out.append(replace(out[0], tables=True, why="candidate: values of broadcast operands alone "
                                                    "computed once per block"))
    for tables in ([], nodes) if nodes else ([],):
        plain, wide = _probe(ctx, tables, False)[2], _probe(ctx, tables, True)
        if wide[2] > plain and _flat(wide):
            out.append(replace(out[0], gather=True, tables=bool(tables),
                               why=f"candidate: {wide[2]}-element vectors, small operands gathered (the plain "
                                   f"vectors take {plain})" + (", with tables" if tables else "")))
    return out


def _probe(ctx: KernelContext, tables: list[int], gather: bool) -> tuple:
    """_analyse on a fresh context with `tables` in place (their loads read shared memory,
    in the tables' types): what the kernel would be, leaving `ctx` as it was."""
    probe = _fresh(ctx)
    if tables:
        set_up_tables(probe, tables)
    return _analyse(probe, gather)


def _flat(analysed: tuple) -> bool:
    """_analyse chose the flat vector or strided path (not the stencil, transpose or row
    path, which load vectors their own way: tables are for the flat ones)."""
    return all(path is None for path in analysed[3:])


def _candidates(ctx: KernelContext, analysed: tuple) -> list[PointwiseConfig]:
    _, _, width, rows, sten, tr = analysed
    base = _heuristic(ctx, sten, tr)
    if tr is not None:
        return [base]
    if sten is not None:
        alts = [(2 * stencil.ROWS, base.block), (4 * stencil.ROWS, base.block), (stencil.ROWS, 2 * base.block)]
        return [base] + [PointwiseConfig(block=b, unroll=sten.rows_for(r), why="candidate")
                         for r, b in dict.fromkeys(alts) if r >= 1 and (sten.rows_for(r), b) != (base.unroll, base.block)]
    if width > 1 or rows is not None:
        return [base, PointwiseConfig(block=256, unroll=2, why="candidate")]
    return [base, PointwiseConfig(block=256, unroll=4, why="candidate"),
            PointwiseConfig(block=512, unroll=2, why="candidate")]


@dataclass(frozen=True)
class _Rows:
    """The row-vector path: outer index o and column c, `width` columns a thread step
    along each row (loads shifted along rows as in a 2-D stencil), `groups` vectors a row
    taken whole, the row's last columns one by one; stores vectors when rows are whole
    vectors long, elements otherwise."""

    fn: element.ElementFunction
    outer: int
    cols: int
    width: int
    groups: int
    vector_stores: bool


@dataclass(frozen=True)
class _Transpose:
    """The transpose path: the element function over one coordinate per axis, the axis
    `a` along which the staged loads are contiguous, and which loads go through tiles."""

    fn: element.ElementFunction
    shape: tuple[int, ...]
    coords: tuple[ix.Var, ...]
    a: int
    staged: tuple[int, ...]      # indices into fn.loads

    @property
    def tile(self) -> tuple[int, int]:
        """The tile's extent along axis `a` and along the last axis: TILE x TILE, or, where
        axis `a` is shorter (a (n, 8) array transposed), as many elements along `a` as it
        has (a power of two, at least 8) and more along the last, the same TILE * TILE in
        all: square tiles of an 8-wide axis left 3/4 of their threads idle and read 16
        bytes per warp. Likewise, where only the last axis is short (a (14, n) array
        transposed), as many along it as it has and more along `a`: 32-wide tiles of a
        14-wide output row stored 14 elements a warp (54% of copy, 1.12-1.19x
        torch.compile's time, H200 2026-12-04/05)."""
        A, C = self.shape[self.a], self.shape[-1]
        if C < TILE <= A:
            tc = 1 << (C - 1).bit_length()
            return TILE * TILE // tc, tc
        ta = min(TILE, 1 << (A - 1).bit_length())
        return ta, TILE * TILE // ta


def _analyse(ctx: KernelContext, gather: bool = False):
    """The path and its element function: (shape, fn, width, rows, sten, tr). With
    `gather`, the flat path's vectors are the widest that gathering small operands allows,
    even where plain vectors of some width follow every load: a float16 batch norm over
    runs of 18 moves 2-element vectors plainly, 8-element ones with its per-channel values
    gathered (a tuning candidate: gathers cost a load an element)."""
    k = ctx.kernel
    shape = ctx.space.shape   # legality's: the one shape of every stored output
    n_elems = ix.prod(shape)
    i = ix.Var("i", max(n_elems, 1))
    before = set(ctx.names.used)
    fn = element.build(ctx, ix.delinearize(ix.Affine.of(i), shape), k.outputs)
    width = element.vector_width(ctx, fn.loads, k.outputs, i, shifts=True,
                                 gather_max=n_elems // GATHER_REUSE if gather else 0)
    if width == 1 and not gather:
        # the loads that vectors cannot follow all belong to broadcast operands (each
        # element used 4 times or more, from cache): gather those element by element
        # and move the rest and the stores as vectors. Before the stencil and row paths,
        # which an outer product's odd rows took at 43% of copy (H200, 2026-12-03).
        width = element.vector_width(ctx, fn.loads, k.outputs, i, shifts=True, gather_max=n_elems // GATHER_REUSE)
    rows = sten = tr = None
    if width == 1:   # the other paths' names as if the flat one had not been tried
        after = ctx.names.used
        ctx.names.used = set(before)
        tr = _transpose_path(ctx, shape)
        if tr is None:
            ctx.names.used = set(before)
            sten = stencil.analyse(ctx, shape)
        if tr is None and sten is None:
            ctx.names.used = set(before)
            rows = _row_path(ctx, shape)
            if rows is None:
                ctx.names.used = after
    return shape, fn, width, rows, sten, tr


def _transpose_path(ctx: KernelContext, shape: tuple[int, ...]) -> _Transpose | None:
    """Tiles through shared memory where an input walks another axis `a` with stride 1
    and the output's last axis with a stride of its own (a transpose, also of a slice):
    every such load of the largest array's axis is staged. None for short axes, or where
    no load is transposed, or offsets mix the axes (reshaped views)."""
    if len(shape) < 2 or shape[-1] < 8:
        return None
    coords = tuple(ix.Var(ctx.names.fresh(f"t{d}"), int(shape[d])) for d in range(len(shape)))
    fn = element.build(ctx, tuple(ix.Affine.of(v) for v in coords), ctx.kernel.outputs)
    c = coords[-1]
    g = ctx.graph

    def plain(l: element.Load) -> bool:
        return all(isinstance(sym, ix.Var) for sym, _ in l.offset.terms)

    def axis_of(l: element.Load) -> int | None:
        if l.from_index or not plain(l) or l.offset.coef(c) in (0, 1):
            return None
        unit = [d for d, v in enumerate(coords[:-1]) if l.offset.coef(v) == 1 and shape[d] >= 8]
        return unit[0] if unit else None

    moved = [(ix.prod(g.nodes[l.node].shape) * g.nodes[l.node].dtype.itemsize, axis_of(l)) for l in fn.loads]
    candidates = [(size, a) for size, a in moved if a is not None]
    if not candidates:
        return None
    a = max(candidates)[1]
    staged = tuple(j for j, (_, ax) in enumerate(moved) if ax == a)
    return _Transpose(fn, tuple(int(d) for d in shape), coords, a, staged)


def _row_path(ctx: KernelContext, shape: tuple[int, ...]) -> _Rows | None:
    """Vectors along each row where the flat index cannot take them: rows whose length
    is no multiple of the vector (a 2-D stencil's x[1:-1, 2:] of an (n, m) array: the
    loads are aligned up to a shift, the output's rows are m - 2 long)."""
    if len(shape) < 2 or shape[-1] < 8:
        return None
    outer, cols = ix.prod(shape[:-1]), shape[-1]
    o, c = ix.Var("o", max(outer, 1)), ix.Var("c", cols)
    fn = element.build(ctx, (*ix.delinearize(ix.Affine.of(o), shape[:-1]), ix.Affine.of(c)), ctx.kernel.outputs)
    width = element.vector_width(ctx, fn.loads, ctx.kernel.outputs, c, shifts=True)
    groups = element.vector_groups(ctx, fn.loads, c, width) if width > 1 else 0
    if groups * width * 2 < cols or not any(l.access not in ("", "uniform") for l in fn.loads):
        return None   # short rows, or nothing to load as vectors: the strided path
    return _Rows(fn, outer, cols, width, groups, cols % width == 0)


def _declined(config: PointwiseConfig, option: str, reason: str) -> PointwiseConfig:
    """The configuration without `option`, its why saying so."""
    return replace(config, **{option: False}, why=" ".join(w for w in (config.why, reason) if w))


def generate(ctx: KernelContext, config: PointwiseConfig | None = None) -> KernelCode:
    g, k = ctx.graph, ctx.kernel
    tables = table_nodes(ctx) if config is not None and config.tables else []
    gather = config is not None and config.gather

    def wider(tabled: list[int]) -> bool:   # gathering, with these tables, gives wider vectors
        return _probe(ctx, tabled, True)[2] > _probe(ctx, tabled, False)[2]
    gather = gather and wider(tables)
    if tables and not _flat(_probe(ctx, tables, gather)):   # tables are for the flat paths only
        tables = []
        gather = gather and wider(tables)
    # asked for where it cannot be: say so
    if config is not None and config.gather and not gather:
        config = _declined(config, "gather", "(no gathers: plain vectors are as wide)")
    if config is not None and config.tables and not tables:
        config = _declined(config, "tables", "(no tables: nothing to take out of the loop here)")
    table_helpers, table_fills = set_up_tables(ctx, tables) if tables else ([], [])
    shape, fn, width, rows, sten, tr = _analyse(ctx, gather)
    cfg = config or _heuristic(ctx, sten, tr)
    n_elems = ix.prod(shape)
    B, U = cfg.block, cfg.unroll
    index_t = ctx.index_type(n_elems + B * U)
    lines = [f"const index_t n = {n_elems}{'ull' if 'long' in index_t else 'u'};",
             "const index_t stride = index_t(gridDim.x) * blockDim.x;" if U == 1 else
             f"const index_t stride = index_t(gridDim.x) * {B * U};"]
    scalar = [f"{fn.name}({', '.join(element.scalar_args(ctx, fn) + [f'{ctx.out_ptr[o]}[i]' for o in k.outputs])});"]
    per = f", {U} per thread a block apart" if U > 1 else ""
    if width > 1:
        nbytes = width * max(g.nodes[a].dtype.itemsize for a in
                             [*k.outputs, *(l.node for l in fn.loads if l.access.startswith(("vector", "shift")))])
        gathered = sum(l.access == "gather" for l in fn.loads)
        notes = [f"vector path: {width} elements per thread step, {nbytes}-byte accesses{per}"
                 + (f"; {gathered} load{'s' if gathered > 1 else ''} gathered element by element" if gathered else "")]
        groups = element.vector_groups(ctx, fn.loads, ix.Var("i", max(n_elems, 1)), width)
        lines += [f"const index_t groups = {groups};   // vectors taken whole"]
        lines += _vector_loop(ctx, fn, width, B, U)
        if groups * width < n_elems:
            tid = "index_t(blockIdx.x) * blockDim.x + threadIdx.x"
            step = "stride" if U == 1 else "index_t(gridDim.x) * blockDim.x"
            rest = n_elems - groups * width
            lines += [f"// The last {rest} element{'s' if rest > 1 else ''}, one per thread.",
                      f"for (index_t i = groups * {width} + {tid}; i < n; i += {step}) {{",
                      *indent(scalar, 1), "}"]
        work = ix.ceil_div(n_elems, width)
    elif sten is not None:
        fn, R, tile = sten.fn, sten.rows_for(U), sten.tile(U)
        S = sten.store_width
        stores = ("element stores through the warp's shared-memory stage" if stencil.staged(ctx, sten) else
                  "vector stores" if S == sten.width else "element stores" if S == 1 else f"stores of {S} elements")
        notes = [f"stencil path: {sten.width} columns by {R} rows along axis {sten.axis} per thread step, "
                 f"each aligned vector loaded once ({stores})"]
        first = "index_t(blockIdx.x) * blockDim.x + threadIdx.x"
        lines = [lines[0], "const index_t stride = index_t(gridDim.x) * blockDim.x;"]
        lines += stencil.loops(ctx, sten, tile, first, "stride", B)
        work = stencil.work_items(sten, tile)
        U = 1
    elif tr is not None:
        fn = tr.fn
        notes = [f"transpose path: tiles of {tr.tile[0]}x{tr.tile[1]} through shared memory, read along axis {tr.a} "
                 f"({len(tr.staged)} input{'s' if len(tr.staged) > 1 else ''} staged), stored along the last"]
        lines = [lines[0]] + _transpose_loops(ctx, tr)
        work = _tile_count(tr) * TILE * TILE_ROWS
        B, U = TILE * TILE_ROWS, 1
    elif rows is not None:
        fn = rows.fn
        staged = not rows.vector_stores and stage.wanted(ctx, 1, rows.width)
        if staged:   # the warp's loop takes an item a lane a step
            U, per = 1, ""
            lines = [lines[0], "const index_t stride = index_t(gridDim.x) * blockDim.x;"]
        stores = ("vector stores" if rows.vector_stores else
                  "element stores through the warp's shared-memory stage" if staged else "element stores")
        notes = [f"row-vector path: {rows.width} columns per thread step along each of {rows.outer} rows of "
                 f"{rows.cols} ({stores}){per}"]
        lines += _row_vector_loops(ctx, rows, B, U)
        work = rows.outer * (rows.groups + rows.cols - rows.groups * rows.width)
    else:
        notes = [f"strided path: every load computes its own offset{per}"]
        lines += _tiles("i", "n", B, U, scalar)
        work = n_elems
    grid = min(ix.ceil_div(work, B * U), ctx.grid_cap()) if n_elems else 0
    if tables:
        notes.append(tables_note(ctx, tables))
        lines = [*table_fills, *lines]
    header = [f"{ctx.name}: pointwise over {g.nodes[k.outputs[0]].aval} ({n_elems} elements)",
              *ctx.listing(), *notes]
    helpers = [f"typedef {index_t} index_t;", "", *table_helpers, *fn.lines, ""]
    if sten is not None:
        helpers += [*stencil.helpers(sten), ""]
    return ctx.finish(header, helpers, lines, grid, B, notes=tuple(notes), config=cfg)


def _tiles(var: str, count: str, B: int, U: int, body: list[str]) -> list[str]:
    """A grid-stride loop over tiles of B * U indices; each thread takes U of them, B
    apart, so that every access of a warp is contiguous."""
    if U == 1:
        return [f"for (index_t {var} = index_t(blockIdx.x) * blockDim.x + threadIdx.x; {var} < {count}; "
                f"{var} += stride) {{", *indent(body, 1), "}"]
    return [f"for (index_t base = index_t(blockIdx.x) * {B * U} + threadIdx.x; base < {count}; base += stride) {{",
            "    #pragma unroll",
            f"    for (int u = 0; u < {U}; ++u) {{",
            f"        const index_t {var} = base + index_t(u) * {B};",
            f"        if ({var} >= {count}) break;",
            *indent(body, 2), "    }", "}"]


def _vector_loop(ctx: KernelContext, fn: element.ElementFunction, width: int, B: int, U: int) -> list[str]:
    g = ctx.graph
    decls, args = element.vector_loads(ctx, fn, width)
    body = [f"const index_t i = j * {width};", *decls]
    outs = []
    for o in ctx.kernel.outputs:
        name = ctx.names.fresh(f"{array_name(g, o)}_vec")
        outs.append(name)
        body.append(f"fl_vec<{storage_type(g.nodes[o].dtype)}, {width}> {name};")
        args.append(f"{name}.v[e]")
    body += ["#pragma unroll",
             f"for (int e = 0; e < {width}; ++e) {fn.name}({', '.join(args)});"]
    body += [f"fl_store_vec<{width}>({ctx.out_ptr[o]} + i, {name});" for o, name in zip(ctx.kernel.outputs, outs)]
    return _tiles("j", "groups", B, U, body)


def _row_vector_loops(ctx: KernelContext, rows: _Rows, B: int, U: int) -> list[str]:
    """Thread steps over (row, vector of columns), then over each row's last columns."""
    g, W, G = ctx.graph, rows.width, rows.groups
    tail = rows.cols - G * W
    decls, args = element.vector_loads(ctx, rows.fn, W)
    body = ["const index_t o = j / groups;", f"const index_t c = j % groups * {W};", *decls]
    stores = []
    warp = _row_stage(ctx, rows)
    if warp is not None:   # rows of no whole vectors: a warp's elements stored as neighbours
        vectors = {out: ctx.names.fresh(f"{array_name(g, out)}_vec") for out in ctx.kernel.outputs}
        for out, name in vectors.items():
            body.append(f"fl_vec<{storage_type(g.nodes[out].dtype)}, {W}> {name};")
            args.append(f"{name}.v[e]")
        stores = warp.store(ctx, vectors, f"o * {rows.cols}u + c")
    for out in (() if warp is not None else ctx.kernel.outputs):
        ptr = f"{ctx.out_ptr[out]} + o * {rows.cols}u + c"
        if rows.vector_stores:
            name = ctx.names.fresh(f"{array_name(g, out)}_vec")
            body.append(f"fl_vec<{storage_type(g.nodes[out].dtype)}, {W}> {name};")
            args.append(f"{name}.v[e]")
            stores.append(f"fl_store_vec<{W}>({ptr}, {name});")
        else:
            args.append(f"({ptr})[e]")
    body += ["#pragma unroll", f"for (int e = 0; e < {W}; ++e) {rows.fn.name}({', '.join(args)});", *stores]
    lines = [f"const index_t groups = {G};   // vectors a row takes whole",
             f"const index_t items = {rows.outer * G}{'ull' if rows.outer * G > 2**32 else 'u'};"]
    if warp is not None:   # (a thread an item a step: the warp's lanes all run every step)
        lines += [*warp.declarations(ctx, B),
                  *stage.warp_loop("index_t(blockIdx.x) * blockDim.x + threadIdx.x", "index_t(gridDim.x) * blockDim.x",
                                   "items", body)]
    else:
        lines += _tiles("j", "items", B, U, body)
    if tail:
        scalar = element.scalar_args(ctx, rows.fn) + [f"{ctx.out_ptr[o]}[o * {rows.cols}u + c]"
                                                       for o in ctx.kernel.outputs]
        step = "stride" if U == 1 else "index_t(gridDim.x) * blockDim.x"
        lines += [f"// The last {tail} column{'s' if tail > 1 else ''} of each row, one per thread.",
                  f"for (index_t t = index_t(blockIdx.x) * blockDim.x + threadIdx.x; t < {rows.outer * tail}u; "
                  f"t += {step}) {{",
                  f"    const index_t o = t / {tail}u, c = {G * W}u + t % {tail}u;",
                  f"    {rows.fn.name}({', '.join(scalar)});", "}"]
    return lines


def _row_stage(ctx: KernelContext, rows: _Rows) -> "stage.WarpStage | None":
    """The warp stage of a row-vector kernel whose rows hold no whole vectors (each
    thread would store its elements one by one)."""
    return None if rows.vector_stores or not stage.wanted(ctx, 1, rows.width) else stage.make(ctx, rows.width)


def _tile_count(tr: _Transpose) -> int:
    A, C = tr.shape[tr.a], tr.shape[-1]
    ta, tc = tr.tile
    return ix.ceil_div(A, ta) * ix.ceil_div(C, tc) * ix.prod(tr.shape) // (A * C)


def _transpose_loops(ctx: KernelContext, tr: _Transpose) -> list[str]:
    """A block per tile (grid-stride): the staged loads read into shared memory with
    consecutive threads along axis `a`, then every element computed and stored with
    consecutive threads along the last axis, the staged values read across the tile (rows
    padded by one element: no bank conflicts)."""
    g, fn = ctx.graph, tr.fn
    a_var, c_var = tr.coords[tr.a], tr.coords[-1]
    A, C = tr.shape[tr.a], tr.shape[-1]
    ta, tc = tr.tile
    B = TILE * TILE_ROWS
    others = [d for d in range(len(tr.shape) - 1) if d != tr.a]
    tiles_c, tiles_a = ix.ceil_div(C, tc), ix.ceil_div(A, ta)
    tiles = _tile_count(tr)
    suffix = "ull" if tiles > 2**31 else "u"
    lines = [f"__shared__ {fn.loads[j].ctype(g)} {_tile_name(fn, j)}[{tc}][{ta + 1}];" for j in tr.staged]
    lines += [f"for (index_t t = blockIdx.x; t < {tiles}{suffix}; t += gridDim.x) {{",
              f"    const index_t c0 = t % {tiles_c}u * {tc}u, a0 = t / {tiles_c}u % {tiles_a}u * {ta}u;"]
    rest = f"t / {tiles_c * tiles_a}u"
    for d in reversed(others):   # the other axes from the tile index, innermost first
        v = tr.coords[d]
        lines.append(f"    const index_t {v.name} = {rest} % {v.extent}u;")
        rest = f"{rest} / {v.extent}u"
    staging = [f"{_tile_name(fn, j)}[kc][ka] = {fn.loads[j].scalar(ctx)};" for j in tr.staged]
    args = [f"{_tile_name(fn, j)}[kc][ka]" if j in tr.staged else l.scalar(ctx) for j, l in enumerate(fn.loads)]
    out = ix.render(ix.linearize(tuple(ix.Affine.of(v) for v in tr.coords), tr.shape))
    args += [f"{ctx.out_ptr[o]}[{out}]" for o in ctx.kernel.outputs]
    guard = f"if ({a_var.name} < {A}u && {c_var.name} < {C}u)"
    coords = f"const index_t {a_var.name} = a0 + ka, {c_var.name} = c0 + kc;"
    lines += ["    __syncthreads();   // the previous tile's readers are done",
              f"    for (int e = threadIdx.x; e < {ta * tc}; e += {B}) {{",
              f"        const int ka = e % {ta}, kc = e / {ta};",
              f"        {coords}",
              f"        {guard} {{", *indent(staging, 3), "        }", "    }",
              "    __syncthreads();",
              f"    for (int e = threadIdx.x; e < {ta * tc}; e += {B}) {{",
              f"        const int kc = e % {tc}, ka = e / {tc};",
              f"        {coords}",
              f"        {guard} {fn.name}({', '.join(args)});", "    }", "}"]
    return lines


def _tile_name(fn: element.ElementFunction, j: int) -> str:
    return f"tile_{fn.loads[j].param}"
