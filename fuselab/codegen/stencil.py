"""The stencil path of the pointwise template: rows of vectors, several rows a thread.

A stencil of shifted slices (`4 * x[1:-1, 1:-1] - x[:-2, 1:-1] - x[2:, 1:-1] - ...`)
reads each input row for several output rows: row r + 1 of `x` is the `x[2:]` term of
output row r, the centre of row r + 1 and the `x[:-2]` term of row r + 2. The row-vector
path (pointwise.py) gives each thread one vector of columns of one row and loads each
shifted window as its own pair of aligned vectors.

Here each thread takes a vector of columns and marches through `rows` consecutive rows
along one outer axis (the marched axis). The aligned vectors a row reads are keyed by
(array, offset), so a load shared by two windows of one row (x[1:-1, :-2], x[1:-1, 1:-1]
and x[1:-1, 2:] read the same two aligned vectors) is one register vector; vectors of one
array a whole number of rows apart form a chain (x[:-2, 1:-1], x[1:-1, 1:-1], x[2:, 1:-1]),
kept in registers that pass their values down a step after each row, so that each row
loads only the top of each chain: every input vector comes from memory once per march,
not once per row that reads it. Shifted windows pick their elements from the two aligned
vectors around them. Rows whose length keeps only part of a vector aligned (8190 float32
columns: two) are stored in parts of that many elements rather than element by element.

The last block of rows along the marched axis starts `rows` before the axis's end, so
that every thread computes whole blocks with no bounds checks; the few rows computed by
two threads are written twice with the same values. Each output element is computed by
the element function from the same operands as on the other paths, so the results are
the same bits.

Measured on the H200 (2026-12-02, CUDA-event medians, % of a copy of the same bytes in
the same run, every variant's output equal to CuPy's):
- the earlier path (rows of a thread unrolled, every row's loads issued at once): 2 rows
  84-87% on 2-D 5-point stencils, and more rows ran slower (8 rows 72% on (8192, 8192));
- a hand-written march in a rolled loop, 8 rows: 88-93% on (8192, 8192), (5000, 7000),
  (16384, 4096), (2048, 32768); 3-D (512, 512, 256) 7 points 83% (2.5-D tiles through
  shared memory: 77-84%);
- this path, tuned (09:27 UTC): 2 rows a thread won everywhere, 2-D (8192, 8192) 91% of
  copy (8 rows: 8% slower), (5000, 7000) 92%; 3-D (512, 512, 256) 74%, (300, 300, 300) 76%;
- with a row's last columns computed inside the march (10:01 UTC): 2-D 92%, (5000, 7000)
  94%, 3-D (512, 512, 256) 82% (sweep timings: a whole `Executable.run`).
Hence 2 rows by default, and 4, 8, and 2 in blocks of 512 as the autotuner's candidates.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import element
from . import index as ix
from . import stage as stage_mod
from .context import KernelContext
from .emit import array_name
from .types import storage_type

ROWS = 2                # rows a thread marches through, by the heuristic (measurements above)
THREADS_PER_SM = 1024   # one row a thread where ROWS would not give each SM this many threads


@dataclass(frozen=True)
class Stencil:
    """A kernel the stencil path takes: the element function over coordinates
    (outer vars..., c), the marched outer axis, and the row-vector layout."""

    fn: element.ElementFunction
    shape: tuple[int, ...]
    outer: tuple[ix.Var, ...]     # one loop variable per outer axis
    axis: int                      # the marched axis (an outer one)
    width: int
    groups: int

    @property
    def cols(self) -> int:
        return self.shape[-1]

    @property
    def store_width(self) -> int:
        """Elements a store: the widest part of a vector that every row start keeps
        aligned (rows of 8190 float32: two, rows of 8192: the whole vector)."""
        return math.gcd(self.cols, self.width)

    def rows_for(self, unroll: int) -> int:
        return max(1, min(unroll, self.shape[self.axis]))

    def tile(self, unroll: int) -> tuple[int, ...]:
        """Rows a thread along each outer axis: `unroll` (at most the axis's extent)
        along the marched axis."""
        return tuple(self.rows_for(unroll) if d == self.axis else 1 for d in range(len(self.outer)))


def analyse(ctx: KernelContext, shape: tuple[int, ...]) -> Stencil | None:
    """The stencil layout of this kernel, or None where it does not apply: fewer than two
    axes, short rows, loads that do not vector along rows (the row path's conditions),
    or no outer axis along which two rows share a load."""
    if len(shape) < 2 or shape[-1] < 8 or ix.prod(shape) == 0:
        return None
    outer = tuple(ix.Var(ctx.names.fresh(f"o{d}"), int(shape[d])) for d in range(len(shape) - 1))
    c = ix.Var("c", int(shape[-1]))
    coords = (*(ix.Affine.of(v) for v in outer), ix.Affine.of(c))
    fn = element.build(ctx, coords, ctx.kernel.outputs)
    width = element.vector_width(ctx, fn.loads, ctx.kernel.outputs, c, shifts=True)
    if width == 1:
        return None
    groups = element.vector_groups(ctx, fn.loads, c, width)
    if groups * width * 2 < shape[-1] or not any(l.access not in ("", "uniform") for l in fn.loads):
        return None
    for axis, v in enumerate(outer):
        if v.extent < 2 or any(_nonlinear(l.offset, v) for l in fn.loads):
            continue
        st = Stencil(fn, tuple(int(d) for d in shape), outer, axis, width, groups)
        one = tuple(int(d == axis) for d in range(len(outer)))
        if set(_raw_keys(st, (0,) * len(outer))) & set(_raw_keys(st, one)):
            return st
    return None


def _nonlinear(offset: ix.Affine, v: ix.Var) -> bool:
    """Whether `v` enters the offset other than as a term of its own (inside a / or %)."""
    return any(isinstance(s, ix.DivMod) and v in s.base.symbols() for s, _ in offset.terms)


def _at_row(st: Stencil, offset: ix.Affine, at: tuple[int, ...]) -> ix.Affine:
    """The offset in the thread's row `at` (rows past the first along each outer axis;
    the loop variables hold the first row)."""
    return offset + sum(k * offset.coef(v) for k, v in zip(at, st.outer))


def _raw(st: Stencil, load: element.Load, at: tuple[int, ...]) -> list[tuple[int, ix.Affine]]:
    """The aligned vectors (array, offset) the load reads in row `at`."""
    off = _at_row(st, load.offset, at)
    if load.access == "vector":
        return [(load.node, off)]
    if load.access.startswith("shift"):
        s = int(load.access[5:])
        return [(load.node, off + (-s)), (load.node, off + (st.width - s))]
    return []


def _raw_keys(st: Stencil, at: tuple[int, ...]) -> list[tuple[int, ix.Affine]]:
    return [key for l in st.fn.loads if not l.from_index for key in _raw(st, l, at)]


WINDOW = [
    "// Element e of the window S elements past the aligned vector a (b: the next one).",
    "template <int S, class T, int N> __device__ __forceinline__ T fl_window(const fl_vec<T, N>& a, "
    "const fl_vec<T, N>& b, int e) {",
    "    return e + S < N ? a.v[e + S] : b.v[e + S - N];",
    "}",
]
STORE_PART = [
    "// Part h of vector v (S elements) stored at p + h * S: rows whose starts keep only S elements aligned.",
    "template <int S, class T, int N> __device__ __forceinline__ void fl_store_part(T* p, const fl_vec<T, N>& v, int h) {",
    "    fl_vec<T, S> part;",
    "    #pragma unroll",
    "    for (int e = 0; e < S; ++e) part.v[e] = v.v[h * S + e];",
    "    fl_store_vec<S>(p + h * S, part);",
    "}",
]


def helpers(st: "Stencil") -> list[str]:
    return [*WINDOW, *(STORE_PART if 1 < st.store_width < st.width else [])]


def rows_heuristic(st: Stencil, sm_count: int) -> int:
    """The most rows a thread, up to ROWS (halving), that still leave every SM
    THREADS_PER_SM threads of work; 1 for arrays too small for two."""
    rows = ROWS
    while rows > 1 and work_items(st, st.tile(rows)) < sm_count * THREADS_PER_SM:
        rows //= 2
    return st.rows_for(rows)


def work_items(st: Stencil, tile: tuple[int, ...]) -> int:
    return ix.prod(ix.ceil_div(d, t) for d, t in zip(st.shape, tile)) * st.groups


@dataclass(frozen=True)
class _Chain:
    """Aligned vectors of one array a whole number of marched rows apart: the vector at
    offset `base + m * step` for m in lo..hi (`step`: the array's stride along the marched
    axis). Row k + 1 reads at m what row k read at m + 1, so a thread marching along the
    axis keeps one register per m, passes each down a step after a row and loads only the
    top one anew. `step` 0: the same vector in every row, loaded once."""
    node: int
    base: ix.Affine
    step: int
    lo: int
    hi: int

    def offset(self, m: int) -> ix.Affine:
        return self.base + m * self.step


def _chains(st: Stencil) -> tuple[list[_Chain], dict[tuple[int, ix.Affine], tuple[int, int]]]:
    """The chains of the aligned vectors that one row reads, and where each of its vectors
    sits: (chain number, m)."""
    axis = st.outer[st.axis]
    members: dict[tuple[int, ix.Affine, int], set[int]] = {}
    where: dict[tuple[int, ix.Affine], tuple[tuple[int, ix.Affine, int], int]] = {}
    for key in dict.fromkeys(_raw_keys(st, (0,) * len(st.outer))):
        node, off = key
        step = off.coef(axis)
        m = off.const // step if step else 0
        chain = (node, off + (-m * step), step)
        members.setdefault(chain, set()).add(m)
        where[key] = (chain, m)
    order = list(members)
    chains = [_Chain(n, b, s, min(members[(n, b, s)]), max(members[(n, b, s)])) for n, b, s in order]
    return chains, {key: (order.index(chain), m) for key, (chain, m) in where.items()}


def staged(ctx: KernelContext, st: Stencil) -> bool:
    """Whether this kernel's outputs go out through the warp's shared-memory stage
    (stage.py): where a thread's own stores would be narrower than 8 bytes."""
    return stage_mod.wanted(ctx, st.store_width, st.width)


def loops(ctx: KernelContext, st: Stencil, tile: tuple[int, ...], first: str, step: str, block: int) -> list[str]:
    """The kernel body: thread steps over (block of rows along the marched axis, vector of
    columns), marching through the block's rows with its aligned vectors in registers;
    the thread of a row's last whole vector also computes the row's last columns.
    With staged stores (stage.py) every lane of a warp runs every step."""
    g, W, G = ctx.graph, st.width, st.groups
    n_outer = len(st.outer)
    R = tile[st.axis]
    axis = st.outer[st.axis]
    items = work_items(st, tile)
    body = [f"const index_t c = j % groups * {W};"]
    # outer coordinates from the item index, innermost first; the marched axis in blocks
    div = "j / groups"
    for d in range(n_outer - 1, -1, -1):
        v, rows = st.outer[d], tile[d]
        ext = ix.ceil_div(v.extent, rows)
        q = f"{div} % {ext}u" if d > 0 else div
        if rows > 1:
            q = f"min(({q}) * {rows}u, index_t({v.extent - rows}))" if v.extent % rows else f"({q}) * {rows}u"
        body.append(f"{'index_t' if v is axis and R > 1 else 'const index_t'} {v.name} = {q};")
        div = f"{div} / {ext}u"
    chains, where = _chains(st)
    reg = {(i, m): ctx.names.fresh(f"{array_name(g, ch.node)}_v") for i, ch in enumerate(chains)
           for m in range(ch.lo, ch.hi + 1)}

    def carried(ch: _Chain) -> bool:
        """Whether the chain's registers pass their values down through the march."""
        return R > 1 and ch.step != 0

    def load(i: int, m: int, const: bool) -> str:
        ch = chains[i]
        return (f"{'const ' if const else ''}fl_vec<{storage_type(g.nodes[ch.node].dtype)}, {W}> {reg[i, m]} = "
                f"fl_load_vec<{W}>({ctx.in_ptr[ch.node]} + {ix.render(ch.offset(m))});")
    # before the march: the vectors every row reads, and all but the top of each carried
    # chain; in each row, the tops
    for i, ch in enumerate(chains):
        body += [load(i, m, not carried(ch)) for m in range(ch.lo, ch.hi + (not carried(ch)))]
    row = [load(i, ch.hi, True) for i, ch in enumerate(chains) if carried(ch)]
    args, scalar = [], {}
    for l in st.fn.loads:
        if l.from_index or l.access in ("", "uniform"):
            key = (l.node, l.offset, l.from_index)
            if key not in scalar:
                scalar[key] = ctx.names.fresh(l.param)
                row.append(f"const {l.ctype(g)} {scalar[key]} = {l.scalar(ctx)};")
            args.append(scalar[key])
            continue
        names = [reg[where[key]] for key in _raw(st, l, (0,) * len(st.outer))]
        args.append(f"{names[0]}.v[e]" if l.access == "vector" else f"fl_window<{l.access[5:]}>({names[0]}, {names[1]}, e)")
    out_strides = ix.strides(st.shape)
    out_off = ix.Affine.of(_C_of(st))
    for d, v in enumerate(st.outer):
        out_off = out_off + ix.Affine.of(v, out_strides[d])
    stores, S = [], st.store_width
    warp = stage_mod.make(ctx, W) if staged(ctx, st) else None
    if warp is not None:
        vectors = {out: ctx.names.fresh(f"{array_name(g, out)}_vec") for out in ctx.kernel.outputs}
        for out, vname in vectors.items():
            row.append(f"fl_vec<{storage_type(g.nodes[out].dtype)}, {W}> {vname};")
            args.append(f"{vname}.v[e]")
        stores += warp.store(ctx, vectors, ix.render(out_off))
    for out in (() if warp is not None else ctx.kernel.outputs):
        ptr = f"{ctx.out_ptr[out]} + {ix.render(out_off)}"
        if S > 1:
            vname = ctx.names.fresh(f"{array_name(g, out)}_vec")
            row.append(f"fl_vec<{storage_type(g.nodes[out].dtype)}, {W}> {vname};")
            args.append(f"{vname}.v[e]")
            stores += ([f"fl_store_vec<{W}>({ptr}, {vname});"] if S == W else
                       [f"fl_store_part<{S}>({ptr}, {vname}, {h});" for h in range(W // S)])
        else:
            args.append(f"({ptr})[e]")
    row += ["#pragma unroll", f"for (int e = 0; e < {W}; ++e) {st.fn.name}({', '.join(args)});", *stores]
    tail = st.cols - G * W
    if tail:
        # The row's last columns, by the thread of its last whole vector: their loads hit
        # the lines it has just read. (In a loop of their own, one element a thread, they
        # read lines scattered over all rows: for a 3-D stencil's rows of 254 columns,
        # 7 scattered loads for every 254 elements.)
        sargs = element.scalar_args(ctx, st.fn) + [f"{ctx.out_ptr[o]}[{ix.render(out_off)}]" for o in ctx.kernel.outputs]
        row += [f"if ({'active && ' if warp is not None else ''}c == {(G - 1) * W}u) {{",
                f"    for (index_t c = {G * W}u; c < {st.cols}u; ++c) {st.fn.name}({', '.join(sargs)});", "}"]
    if R > 1:
        # each register takes the value of the one a row above it; the top its new load
        row += [f"{reg[i, m]} = {reg[i, m + 1]};" for i, ch in enumerate(chains) if carried(ch)
                for m in range(ch.lo, ch.hi)]
        body += ["#pragma unroll 1   // marching: unrolled, every row's loads would be live at once",
                 f"for (int k = 0; k < {R}; ++k, ++{axis.name}) {{", *("    " + r for r in row), "}"]
    else:
        body += row
    lines = [f"const index_t groups = {G};   // vectors a row takes whole",
             f"const index_t items = {items}{'ull' if items > 2**32 else 'u'};"]
    if warp is not None:
        lines += [*warp.declarations(ctx, block), *stage_mod.warp_loop(first, step, "items", body)]
    else:
        lines.append(f"for (index_t j = {first}; j < items; j += {step}) {{")
        lines += [*("    " + b for b in body), "}"]
    return lines


def _C_of(st: Stencil) -> ix.Var:
    return ix.Var("c", st.cols)
