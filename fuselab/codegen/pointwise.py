"""The pointwise template: one thread-element per output element of one shape S.

The fused ops become one element function (element.py); the kernel around it only moves
data. When every load either walks along the output contiguously (aligned) or stays
fixed across a run of V elements, the kernel moves V elements per 16-byte access and
finishes the last n % V elements one by one; otherwise every load computes its own
strided offset. Grid-stride loops over a grid sized from the SM count.

Where the flat index cannot take vectors but each row can, loads are vectors of columns
along rows: a stencil of shifted slices whose rows share loads takes the stencil path
(stencil.py: a few rows a thread, every aligned vector loaded once), other kernels the
row-vector path below.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import element
from . import index as ix
from . import stencil
from .context import KernelContext
from .emit import array_name, indent
from .config import PointwiseConfig
from .model import KernelCode
from .types import storage_type


def heuristic(ctx: KernelContext) -> PointwiseConfig:
    return _heuristic(ctx, _analyse(_fresh(ctx))[4])


def _heuristic(ctx: KernelContext, sten: stencil.Stencil | None) -> PointwiseConfig:
    if sten is not None:
        rows = stencil.rows_heuristic(sten, ctx.options.sm_count)
        return PointwiseConfig(block=ctx.options.block_size, unroll=rows,
                               why=f"stencil: {rows} rows a thread along axis {sten.axis} (the input rows they "
                                   "share loaded once)")
    return PointwiseConfig(block=ctx.options.block_size, unroll=1, why="default: one element per thread step")


def _fresh(ctx: KernelContext) -> KernelContext:
    """A context of the same kernel with no names taken: analysing it leaves `ctx` as it was."""
    return KernelContext(ctx.graph, ctx.kernel, ctx.index, ctx.options)


def candidates(ctx: KernelContext) -> list[PointwiseConfig]:
    """More elements per thread (independent loads in flight) for the strided path, whose
    index math and scattered loads leave bandwidth on the table; the vector path already
    moves 16 bytes per access. On the stencil path `unroll` is the rows a thread takes."""
    _, _, width, rows, sten = _analyse(ctx)
    base = _heuristic(ctx, sten)
    if sten is not None:
        alts = [(1, base.block), (2 * stencil.ROWS, base.block), (stencil.ROWS, 2 * base.block)]
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


def _analyse(ctx: KernelContext):
    k = ctx.kernel
    shape = ctx.space.shape   # legality's: the one shape of every stored output
    n_elems = ix.prod(shape)
    i = ix.Var("i", max(n_elems, 1))
    before = set(ctx.names.used)
    fn = element.build(ctx, ix.delinearize(ix.Affine.of(i), shape), k.outputs)
    width = element.vector_width(ctx, fn.loads, k.outputs, i, shifts=True)
    rows = sten = None
    if width == 1:   # the stencil and row paths' names as if the flat one had not been tried
        after = ctx.names.used
        ctx.names.used = set(before)
        sten = stencil.analyse(ctx, shape)
        if sten is None:
            ctx.names.used = set(before)
            rows = _row_path(ctx, shape)
            if rows is None:
                ctx.names.used = after
    return shape, fn, width, rows, sten


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


def generate(ctx: KernelContext, config: PointwiseConfig | None = None) -> KernelCode:
    g, k = ctx.graph, ctx.kernel
    shape, fn, width, rows, sten = _analyse(ctx)
    cfg = config or _heuristic(ctx, sten)
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
        notes = [f"vector path: {width} elements per thread step, {nbytes}-byte accesses{per}"]
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
        stores = "vector stores" if S == sten.width else "element stores" if S == 1 else f"stores of {S} elements"
        notes = [f"stencil path: {sten.width} columns by {R} rows along axis {sten.axis} per thread step, "
                 f"each aligned vector loaded once ({stores})"]
        first = "index_t(blockIdx.x) * blockDim.x + threadIdx.x"
        lines = [lines[0], "const index_t stride = index_t(gridDim.x) * blockDim.x;"]
        lines += stencil.loops(ctx, sten, tile, first, "stride")
        work = stencil.work_items(sten, tile)
        U = 1
    elif rows is not None:
        fn = rows.fn
        stores = "vector" if rows.vector_stores else "element"
        notes = [f"row-vector path: {rows.width} columns per thread step along each of {rows.outer} rows of "
                 f"{rows.cols} ({stores} stores){per}"]
        lines += _row_vector_loops(ctx, rows, B, U)
        work = rows.outer * (rows.groups + rows.cols - rows.groups * rows.width)
    else:
        notes = [f"strided path: every load computes its own offset{per}"]
        lines += _tiles("i", "n", B, U, scalar)
        work = n_elems
    grid = min(ix.ceil_div(work, B * U), ctx.grid_cap()) if n_elems else 0
    header = [f"{ctx.name}: pointwise over {g.nodes[k.outputs[0]].aval} ({n_elems} elements)",
              *ctx.listing(), *notes]
    helpers = [f"typedef {index_t} index_t;", "", *fn.lines, ""]
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
    for out in ctx.kernel.outputs:
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
             f"const index_t items = {rows.outer * G}{'ull' if rows.outer * G > 2**32 else 'u'};",
             *_tiles("j", "items", B, U, body)]
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
