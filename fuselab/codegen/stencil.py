"""The stencil path of the pointwise template: rows of vectors, several rows a thread.

A stencil of shifted slices (`4 * x[1:-1, 1:-1] - x[:-2, 1:-1] - x[2:, 1:-1] - ...`)
reads each input row for several output rows: row r + 1 of `x` is the `x[2:]` term of
output row r, the centre of row r + 1 and the `x[:-2]` term of row r + 2. The row-vector
path (pointwise.py) gives each thread one vector of columns of one row and loads each
shifted window as its own pair of aligned vectors.

Here each thread takes a vector of columns in `rows` consecutive rows along one outer
axis (the marched axis) and loads every aligned vector it needs once: the loads of all
its rows are keyed by (array, offset of the aligned vector), and a load shared by two
rows, or by two windows of one row (x[1:-1, :-2], x[1:-1, 1:-1] and x[1:-1, 2:] read the
same two aligned vectors), is one register vector. Shifted windows pick their elements
from the two aligned vectors around them. Rows whose length keeps only part of a vector
aligned (8190 float32 columns: two) are stored in parts of that many elements rather
than element by element.

The last block of rows along the marched axis starts `rows` before the axis's end, so
that every thread computes whole blocks with no bounds checks; the few rows computed by
two threads are written twice with the same values. Each output element is computed by
the element function from the same operands as on the other paths, so the results are
the same bits.

Measured on the H200 (2026-12-01, CUDA-event timings of back-to-back launches, % of a
copy of the same bytes in the same run; every variant's output equal to CuPy's bits):
- (8192, 8192) float32, 5 points: the row-vector path 78.5%; this path at 1 row a
  thread 82.6%, 2 rows 85.3%, 4 rows 75.9%, 8 rows 71.9%, 16 rows 57.9% (blocks of 512:
  76.3% at 4, 72.5% at 8; of 1024 at 8 rows: 81.5%);
- (512, 512, 256) float32, 7 points: the row-vector path 63.7%; 1 row 67.8%, 2 rows
  70.4%, 4 rows 59.2%, 8 rows 52.8%; marching the middle axis instead: 52.6% at 4 rows;
  tiles of rows along both outer axes (4x2, 4x4, 8x2, 8x4): 47-58%.
More rows a thread cut the loads but lose: the guess is that the second aligned vector
of each shifted window, which the neighbouring lane loads too, stops hitting L1 once
each thread keeps many vectors in flight. Hence 2 rows by default and 1, 4, and 2 in
blocks of 512 as the autotuner's other candidates.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

from . import element
from . import index as ix
from .context import KernelContext
from .emit import array_name
from .types import storage_type

ROWS = 2                # rows a thread by the heuristic (measurements above)
THREADS_PER_SM = 1024   # one row a thread where two would not give each SM this many threads


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
    """ROWS rows a thread where that still leaves every SM THREADS_PER_SM threads of
    work; 1 for arrays too small for that."""
    if work_items(st, st.tile(ROWS)) >= sm_count * THREADS_PER_SM:
        return st.rows_for(ROWS)
    return 1


def work_items(st: Stencil, tile: tuple[int, ...]) -> int:
    return ix.prod(ix.ceil_div(d, t) for d, t in zip(st.shape, tile)) * st.groups


def loops(ctx: KernelContext, st: Stencil, tile: tuple[int, ...], first: str, step: str) -> list[str]:
    """The kernel body: thread steps over (tile of rows, vector of columns), then each
    row's last columns one by one."""
    g, W, G = ctx.graph, st.width, st.groups
    n_outer = len(st.outer)
    items = work_items(st, tile)
    body = [f"const index_t c = j % groups * {W};"]
    # outer coordinates from the item index, innermost first; tiled axes in blocks
    div = "j / groups"
    for d in range(n_outer - 1, -1, -1):
        v, rows = st.outer[d], tile[d]
        ext = ix.ceil_div(v.extent, rows)
        q = f"{div} % {ext}u" if d > 0 else div
        if rows > 1:
            q = f"min(({q}) * {rows}u, index_t({v.extent - rows}))" if v.extent % rows else f"({q}) * {rows}u"
        body.append(f"const index_t {v.name} = {q};")
        div = f"{div} / {ext}u"
    raw: dict[tuple[int, ix.Affine], str] = {}
    scalar: dict[tuple[int, ix.Affine, bool], str] = {}
    out_strides = ix.strides(st.shape)
    out_off = ix.Affine.of(_C_of(st))
    for d, v in enumerate(st.outer):
        out_off = out_off + ix.Affine.of(v, out_strides[d])
    for at in itertools.product(*(range(t) for t in tile)):
        args = []
        for l in st.fn.loads:
            if l.from_index or l.access in ("", "uniform"):
                lk = replace(l, offset=_at_row(st, l.offset, at))
                key = (l.node, lk.offset, l.from_index)
                if key not in scalar:
                    scalar[key] = ctx.names.fresh(l.param)
                    body.append(f"const {l.ctype(g)} {scalar[key]} = {lk.scalar(ctx)};")
                args.append(scalar[key])
                continue
            names = []
            for key in _raw(st, l, at):
                if key not in raw:
                    raw[key] = ctx.names.fresh(f"{array_name(g, l.node)}_v")
                    body.append(f"const fl_vec<{storage_type(g.nodes[l.node].dtype)}, {W}> {raw[key]} = "
                                f"fl_load_vec<{W}>({ctx.in_ptr[l.node]} + {ix.render(key[1])});")
                names.append(raw[key])
            if l.access == "vector":
                args.append(f"{names[0]}.v[e]")
            else:
                args.append(f"fl_window<{l.access[5:]}>({names[0]}, {names[1]}, e)")
        row_off = ix.render(out_off + sum(k * out_strides[d] for d, k in enumerate(at)))
        stores, row = [], ["// row " + ", ".join(f"{v.name} + {k}" for v, k in zip(st.outer, at) if k or tile[st.outer.index(v)] > 1)]
        S = st.store_width
        for out in ctx.kernel.outputs:
            ptr = f"{ctx.out_ptr[out]} + {row_off}"
            if S > 1:
                name = ctx.names.fresh(f"{array_name(g, out)}_vec")
                row.append(f"fl_vec<{storage_type(g.nodes[out].dtype)}, {W}> {name};")
                args.append(f"{name}.v[e]")
                stores += ([f"fl_store_vec<{W}>({ptr}, {name});"] if S == W else
                           [f"fl_store_part<{S}>({ptr}, {name}, {h});" for h in range(W // S)])
            else:
                args.append(f"({ptr})[e]")
        row += ["#pragma unroll", f"for (int e = 0; e < {W}; ++e) {st.fn.name}({', '.join(args)});", *stores]
        body += row
    lines = [f"const index_t groups = {G};   // vectors a row takes whole",
             f"const index_t items = {items}{'ull' if items > 2**32 else 'u'};",
             f"for (index_t j = {first}; j < items; j += {step}) {{", *("    " + b for b in body), "}"]
    tail = st.cols - G * W
    if tail:
        n_rows = ix.prod(st.shape[:-1])
        head = [f"const index_t c = {G * W}u + t % {tail}u;"]
        div = f"t / {tail}u"
        for d in range(n_outer - 1, -1, -1):
            v = st.outer[d]
            head.append(f"const index_t {v.name} = {div}{f' % {v.extent}u' if d > 0 else ''};")
            div = f"{div} / {v.extent}u"
        sargs = element.scalar_args(ctx, st.fn) + [f"{ctx.out_ptr[o]}[{ix.render(out_off)}]" for o in ctx.kernel.outputs]
        lines += [f"// The last {tail} column{'s' if tail > 1 else ''} of each row, one per thread.",
                  f"for (index_t t = {first}; t < {n_rows * tail}u; t += {step}) {{",
                  *("    " + h for h in head), f"    {st.fn.name}({', '.join(sargs)});", "}"]
    return lines


def _C_of(st: Stencil) -> ix.Var:
    return ix.Var("c", st.cols)
