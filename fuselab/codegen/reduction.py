"""The reduction template: reduce nodes over any axes, with fused producers (the
prologue, computed per input element) and consumers (the epilogue, per output element).

The reduced shape X splits into kept and reduced axes; after merging neighbours of the
same kind and dropping size-1 axes, the layout picks one of two strategies:

* inner ("KR", "R", and any odd layout): a group of threads per output. A sub-warp of
  G <= 32 lanes when there are enough outputs to fill the GPU (rows of softmax-like
  sums), else a whole block, with the reduced range split across S blocks per output
  when even that leaves the GPU idle (a full reduction: many blocks, one launch).
* column ("RK", "KRK" with >= 32 contiguous kept elements): threads across the kept
  contiguous axis so loads coalesce, rows of the reduced axis split over the block's
  8 rows of threads and, when the kept axis is short, across S blocks.

Split reductions finish in the same launch: each block writes its partial to a scratch
buffer and the last block to arrive (an atomic counter in the scratch, reset by that
block) combines the partials in a fixed order, so results are deterministic.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from . import element
from . import index as ix
from .accum import Accumulator, accumulator
from .config import ColumnConfig, InnerConfig
from .context import KernelContext, kernel_space
from .emit import ValueEmitter, array_name, indent, load_expr
from ..ops import reduce_rule
from .model import KernelCode
from .tables import set_up_tables, table_nodes, tables_note
from .types import register_type, storage_type
from ..plan.reduce_layout import (COLUMN_ROWS, INNER_BLOCK, MIN_PER_BLOCK, column_layout, column_split,
                                  column_thread_rows, inner_split, is_column, layout_of, merge_axes, pow2_at_least,
                                  whole_row_lanes)

TREE_FOLD_ROWS = 16     # rows of threads beyond which a block's fold is a tree
FOLD_LIMIT = 40 * 1024  # bytes of a column fold buffer: static shared memory (48 KB without opt-in)
# A thread reads a group of steps of the reduced axis before it folds any: GROUP_READ_BYTES
# of them (two groups live at once), at most UNROLL steps. Reads of 16-byte vectors go 4 to a
# group; single halves and floats of runs no vector follows go 16 to a group, which keeps
# as many bytes in flight
UNROLL = 16
GROUP_READ_BYTES = 64


def strided_loop(var: str, lo: str, hi: str, step: str, reads: list[element.Decl], body: list[str],
                 guard: str = "", setup: tuple[str, ...] = (), steps: int = 0) -> list[str]:
    """`for (var = lo; var < hi; var += step) {reads; body}`, folding in the same order, in
    groups of UNROLL steps whose reads are all issued before the group folds (the next
    group's reads, while this one folds), then the steps left one at a time.

    Why: under `#pragma unroll` a plain loop keeps its exit test after every step, and
    ptxas issued each read only after the step before had folded; reads hoisted by hand
    into the same group it spread out again. One read in flight a thread left a column
    variance at 56% of DRAM bandwidth, its warps stalled on loads 68% of the time (H200,
    ncu, 2026-12-02). Reads kept for the next group stay grouped. `setup` lines (derived
    from `var`) precede a step's reads. Groups are smaller where a step reads more than
    GROUP_READ_BYTES / UNROLL bytes, so that the registers holding them stay few. `steps`,
    the most steps a thread takes where the caller knows it: groups no larger than the
    power of two at or below it (a group larger than a thread's steps would never run,
    leaving every read alone: rows of 77 over 16 lanes); 1 gives a plain loop (a vector
    loop's tail)."""
    U = max(1, min(UNROLL, GROUP_READ_BYTES // max(1, sum(d.nbytes for d in reads))))
    if steps > 0:
        U = min(U, 1 << (steps.bit_length() - 1))
    first = f"{var}_0"
    at = lambda u: [f"const index_t {var} = {first} + {u} * ({step});", *setup]  # noqa: E731
    read_group = lambda u0: ["#pragma unroll", f"for (int u = 0; u < {U}; ++u) {{",  # noqa: E731
                             *indent([*at(f"({u0} + u)" if u0 else "u"), *(f"{d.name}_u[u] = {d.expr};" for d in reads)], 1), "}"]
    fold = ["#pragma unroll", f"for (int u = 0; u < {U}; ++u) {{",
            *indent([*at("u"), *(f"const {d.ctype} {d.name} = {d.name}_c[u];" for d in reads), *body], 1), "}"]
    whole = [f"for (; {first} + {U - 1} * ({step}) < {hi}; {first} += {U} * ({step})) {{",
             *indent([*(f"{d.ctype} {d.name}_c[{U}];" for d in reads),
                      "#pragma unroll", f"for (int u = 0; u < {U}; ++u) {{",
                      *(f"    {d.name}_c[u] = {d.name}_u[u];" for d in reads), "}",
                      f"if ({first} + {2 * U - 1} * ({step}) < {hi}) {{", *indent(read_group(U), 1), "}",
                      *fold], 1), "}"]
    rest = [f"for (; {first} < {hi}; {first} += {step}) {{",
            *indent([f"const index_t {var} = {first};", *setup, *(str(d) for d in reads), *body], 1), "}"]
    loops = [f"index_t {first} = {lo};", *(f"{d.ctype} {d.name}_u[{U}];" for d in reads),
             f"if ({first} + {U - 1} * ({step}) < {hi}) {{", *indent(read_group(0), 1), "}",
             *whole, *rest] if U > 1 else [f"index_t {first} = {lo};", *rest]
    return [f"if ({guard}) {{", *indent(loops, 1), "}"] if guard else ["{", *indent(loops, 1), "}"]


@dataclass
class _Problem:
    shape: tuple[int, ...]          # the reduced nodes' input shape X
    axes: tuple[int, ...]
    layout: str                     # merged axes: "KR", "RK", "KRK", ...
    merged: list[tuple[int, bool]]  # (size, reduced) after merging
    kept: int                       # K: number of outputs
    reduced: int                    # R: elements per output
    reduces: list[int]
    prologue_out: list[int]         # stored nodes of shape X
    epilogue_out: list[int]         # stored nodes of K elements
    order: tuple[int, ...] = ()     # X's axes in memory order (the layout is read in it)


def generate(ctx: KernelContext, config: InnerConfig | ColumnConfig | None = None) -> KernelCode:
    p = _analyse(ctx)
    # the heuristic's strategy is plan/reduce_layout.py's is_column, which the cost model reads too
    if isinstance(config, InnerConfig) or (config is None and not is_column(p.merged, p.reduced)):
        return _inner(ctx, p, config)      # the inner strategy takes any layout
    return _column(ctx, p, config) if column_layout(p.merged) else _inner(ctx, p, None)


def heuristic(ctx: KernelContext) -> InnerConfig | ColumnConfig:
    p = _analyse(ctx)
    if is_column(p.merged, p.reduced):
        return _column_heuristic(ctx, p, _column_setup(ctx, p)[2])
    return _inner_heuristic(ctx, p, _inner_setup(ctx, p)[2])


def candidates(ctx: KernelContext) -> list[InnerConfig | ColumnConfig]:
    """The heuristic's choice and its neighbours: half and twice the lanes per output or
    the split count, a block per output where lanes were chosen, other block sizes."""
    p = _analyse(ctx)
    K, R = p.kept, p.reduced
    if is_column(p.merged, p.reduced):
        h = _column_heuristic(ctx, p, _column_setup(ctx, p)[2])
        top = max(1, R // (h.rows * 16))
        # four times as many too, but not for a variance: it never won there in the shape
        # sweep, and its Welford merges make each candidate a long compile on a cell's
        # first run (0.25 s, against about 0.1 s for a sum's)
        more = () if _welford(ctx, p) else (min(top, h.splits * 4),)
        splits = sorted({h.splits, max(1, h.splits // 2), min(top, h.splits * 2), *more})
        out = [h] + [replace(h, splits=s, why="candidate") for s in splits if s != h.splits]
        # few reduced rows: fewer rows of threads (8 rows of threads over 4 rows idle half)
        out += [replace(h, rows=r, splits=1, why="candidate") for r in (1, 2, 4) if r < h.rows and R <= 16 * r]
        if h.rows < COLUMN_ROWS:   # a variance's warp a block: and the 8 rows of threads it replaced
            out.append(replace(h, rows=COLUMN_ROWS, why="candidate: 8 rows of threads, merged through shared memory"))
        # kept runs shorter than a warp: a warp covers 32 / lanes rows, so 8 rows of warps
        # are 256 rows of threads, most of them idle or a step each over a few hundred rows,
        # then folding through shared memory: x.std(axis=1) of (22588, 231, 2) ran its
        # column kernel at 8% of copy, 1.5x torch.compile (H200, 2026-12-03). The rows of
        # warps that give each thread about 8 rows, and half of them.
        whole = whole_row_lanes(p.merged[-1][0], h.width)
        if whole is not None and h.rows == COLUMN_ROWS:   # the block takes whole rows of the run
            out += [replace(h, lanes=whole, why=f"candidate: whole rows of {whole} threads a block")]
        sub = 32 // h.lanes   # the heuristic's lanes are a power of two
        if sub > 1 and h.splits == 1 and R < 8 * h.rows * sub:
            fit = max([r for r in (1, 2, 4) if r * sub * 8 <= R] or [1])
            out += [replace(h, rows=r, why="candidate: fewer rows of warps for the short kept run")
                    for r in sorted({fit, max(1, fit // 2)}) if r < h.rows]
        if R <= 64:   # or one thread per output, its loads coalesced across the kept axis
            out.append(InnerConfig(mode="lanes", group=1, block=INNER_BLOCK, splits=1, width=1, why="candidate"))
        elif sub > 1 and h.splits == 1:
            # Or lanes along the reduced axis, a group per output: a column block of a kept
            # run this short holds 32 threads a row of warps, too few blocks fit an SM
            # to keep its loads in flight (x.std(axis=1) of (22588, 231, 2): 29% of copy
            # with one row of warps, H200 2026-12-03), while the inner strategy packs
            # 256 / group outputs a block and the groups of neighbouring kept elements
            # read the same lines. The inner heuristic's group, and 8 lanes where it takes
            # more; not where the outputs are too few for lanes (a block per output would
            # read a line for each of the kept run's elements apart).
            inner = _inner_heuristic(ctx, p, _inner_setup(ctx, p)[2])
            why = "candidate: the inner strategy for the short kept run"
            if inner.mode == "lanes":
                out += [replace(inner, group=g, why=why) for g in sorted({inner.group, min(8, inner.group)}, reverse=True)]
        return _distinct(_with_tables_candidate(out))
    h = _inner_heuristic(ctx, p, _inner_setup(ctx, p)[2])
    out = [h]
    if h.mode == "lanes":
        out += [replace(h, group=g, why="candidate") for g in (h.group // 2, h.group * 2) if 1 <= g <= 32]
        if h.group == 32:
            out.append(replace(h, mode="block", splits=1, why="candidate"))
            # Outputs short of two waves of warps: two warps an output, combined through
            # shared memory, fill the SMs that a warp an output leaves half idle (a
            # variance over (0, 2, 3) of (4, 4239, 24, 81): 47.7 against 52.3 us for the
            # lanes, H200 2026-12-04)
            if K < 2 * ctx.options.sm_count * 64:
                out.append(replace(h, mode="block", block=64, splits=1, why="candidate: two warps an output"))
    else:
        top = max(1, R // 1024)
        out += [replace(h, splits=s, why="candidate")
                for s in sorted({max(1, h.splits // 2), min(top, h.splits * 2)}) if s != h.splits]
        out.append(replace(h, block=512 if h.block == 256 else 256, why="candidate"))
        if K * 32 >= ctx.options.sm_count * 128:   # enough outputs that lanes may do
            out.append(replace(h, mode="lanes", splits=1, why="candidate"))
    return _distinct(_with_tables_candidate(out))


# Where the kernel computes values of small operands alone (a mean's finish, read by the
# variance's every element): the heuristic computes them once per block into tables. The
# column variance of float16 (9, 226426, 21) over axis 1 recomputed its mean's float64
# division and casts at every element: 107 us against 46 us for the mean's own kernel
# over the same bytes (H200, 2026-12-05).
_TABLES_WHY = "; values of small operands alone computed once per block (tables)"


def _with_tables_candidate(out: list) -> list:
    """The candidates, and the heuristic's without tables where it has them."""
    h = out[0]
    return out + [replace(h, tables=False, why="candidate: the heuristic's, without tables")] if h.tables else out


def _tables_for(ctx: KernelContext, config: InnerConfig | ColumnConfig | None) -> list[int]:
    """The nodes to table: the kernel's (tables.table_nodes) unless `config` says no."""
    return [] if config is not None and not config.tables else table_nodes(ctx)


def _distinct(configs: list) -> list:
    """The configurations in order, each launch once (the first's reason kept)."""
    seen: dict[tuple, object] = {}
    for c in configs:
        seen.setdefault((type(c), c.key()), c)
    return list(seen.values())


# ---------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------

def _analyse(ctx: KernelContext) -> _Problem:
    """The reduction as legality found it (Kernel.space): the input shape X, its reduced
    axes, the reductions, and which stored values the input loop computes (the
    prologue's); then the layout of X's axes. The Numba backend reads it too."""
    space = kernel_space(ctx.graph, ctx.kernel, ctx.name)
    shape, axes = space.shape, space.axes
    prologue_out = [o for o in ctx.kernel.outputs if space.full >> o & 1 and o not in space.reduces]
    epilogue_out = [o for o in ctx.kernel.outputs if o not in prologue_out]
    kept = ix.prod(d for a, d in enumerate(shape) if a not in axes)
    reduced = ix.prod(shape[a] for a in axes)
    values = list(dict.fromkeys(ctx.graph.nodes[r].inputs[0] for r in space.reduces))
    order = _memory_order(ctx, shape, axes, values) if not prologue_out else tuple(range(len(shape)))
    merged = merge_axes(shape, axes, order)
    return _Problem(shape, axes, layout_of(merged), merged, kept, reduced, list(space.reduces), prologue_out, epilogue_out,
                    order)


def _notes(p: _Problem, strategy: str) -> tuple[str, ...]:
    """The strategy, and the memory order of the axes where it is not X's own."""
    if p.order in ((), tuple(range(len(p.shape)))):
        return (strategy,)
    return (strategy, f"axes read in memory order {p.order} (the array reduced is a transposed view)")


def _memory_order(ctx: KernelContext, shape: tuple[int, ...], axes: tuple[int, ...],
                  values: list[int]) -> tuple[int, ...]:
    """X's axes in the order the largest array the reduction reads lays them out, where
    that differs from X's own only in how kept and reduced axes interleave: a reduction
    over a transposed view (`x.T.mean(axis=1)`) then reads x as the column strategy does,
    coalesced, not with lanes striding through memory (1.8x slower on the H200). The
    kept axes keep their relative order, and so do the reduced ones, so outputs and
    reduction indices (argmax's) are numbered as before; only the layout read from the
    order changes. Identity where no load walks every axis with a plain stride (broadcasts,
    reshaped views) or the kernel stores X-shaped values (their stores follow X)."""
    identity = tuple(range(len(shape)))
    if len(shape) < 2 or not values or 0 in shape:
        return identity
    probe = KernelContext(ctx.graph, ctx.kernel, ctx.index, ctx.options)   # leaves ctx's names as they are
    coords = [ix.Var(f"x{a}", max(d, 1)) for a, d in enumerate(shape)]
    fn = element.build(probe, tuple(ix.Affine.of(v) for v in coords), (), values)
    loads = [l for l in fn.loads if not l.from_index]
    if not loads:
        return identity
    g = ctx.graph
    big = max(loads, key=lambda l: ix.prod(g.nodes[l.node].shape) * g.nodes[l.node].dtype.itemsize)
    strides = [abs(big.offset.coef(v)) for v in coords]
    if any(st == 0 and shape[a] > 1 for a, st in enumerate(strides)):
        return identity
    order = tuple(sorted(identity, key=lambda a: -strides[a]))
    kept = [a for a in order if a not in axes and shape[a] > 1]   # size-1 axes take no part in the layout
    red = [a for a in order if a in axes and shape[a] > 1]
    return order if kept == sorted(kept) and red == sorted(red) else identity


def _coords(p: _Problem, out: ix.Affine, r: ix.Affine) -> tuple[ix.Affine, ...]:
    """Coordinates in X of the element with output index `out` and reduction index `r`."""
    kept_shape = [d for a, d in enumerate(p.shape) if a not in p.axes]
    red_shape = [p.shape[a] for a in p.axes]
    kc = iter(ix.delinearize(out, kept_shape))
    rc = iter(ix.delinearize(r, red_shape))
    return tuple(next(rc) if a in p.axes else next(kc) for a in range(len(p.shape)))


def _reduced_values(ctx: KernelContext, p: _Problem) -> list[int]:
    """The nodes whose values are folded in (each once, even if reduced twice)."""
    return list(dict.fromkeys(ctx.graph.nodes[r].inputs[0] for r in p.reduces))


def _global_load(ctx: KernelContext, em_ref: list[ValueEmitter]):
    """A load callback emitting `const T name = in_x[offset];` into the emitter."""
    seen: dict[tuple[int, ix.Affine], str] = {}

    def load(nid: int, offset: ix.Affine) -> str:
        key = (nid, offset)
        if key not in seen:
            n = ctx.graph.nodes[nid]
            name = ctx.names.fresh(array_name(ctx.graph, nid))
            em_ref[0].emit(f"const {register_type(n.dtype)} {name} = "
                           f"{load_expr(ctx.in_ptr[nid], n.dtype, ix.render(offset))};")
            seen[key] = name
        return seen[key]
    return load


def _epilogue(ctx: KernelContext, p: _Problem, accs: list[Accumulator], out: ix.Var, at: str = "") -> list[str]:
    """Statements computing and storing every per-output value at output index `out`."""
    g = ctx.graph
    holder: list[ValueEmitter] = []
    fixed: dict[int, str] = {}
    lines: list[str] = []
    for a in accs:
        name = ctx.names.fresh(f"v{a.node}")
        lines.append(f"const {register_type(a.out_dtype)} {name} = {a.result(at)};")
        fixed[a.node] = name
    em = ValueEmitter(g, ctx.kernel.nodes, ctx.kernel.inputs, ctx.options, ctx.names,
                      _global_load(ctx, holder), fixed)
    holder.append(em)
    stores = []
    for o in p.epilogue_out:
        v = em.stored(o, ix.delinearize(ix.Affine.of(out), g.nodes[o].shape))
        stores.append(f"{ctx.out_ptr[o]}[{out.name}] = {v};")
    return lines + em.take_lines() + stores


class _Scratch:
    """Regions of one scratch buffer, each 16-byte aligned."""

    def __init__(self, ctx: KernelContext) -> None:
        self.ctx = ctx
        self.regions: list[tuple[str, str, int, int]] = []   # (name, ctype, offset, count)
        self.size = 0

    def region(self, name: str, ctype: str, count: int, itemsize: int) -> str:
        name = self.ctx.names.fresh(name)
        self.regions.append((name, ctype, self.size, count))
        self.size += ix.ceil_div(count * itemsize, 16) * 16
        return name

    def declarations(self) -> list[str]:
        if not self.regions:
            return []
        buf = self.ctx.add_scratch(self.size)
        return [f"{ct}* {name} = reinterpret_cast<{ct}*>({buf} + {off});" for name, ct, off, _ in self.regions]


def _partials(scratch: _Scratch, accs: list[Accumulator], count: int) -> dict[int, tuple[str, str | None]]:
    out = {}
    for a in accs:
        v = scratch.region(f"partial{a.node}", a.ctype, count, a.nbytes)
        i = scratch.region(f"partial{a.node}_index", "long long", count, 8) if a.is_arg else None
        out[a.node] = (v, i)
    return out


def _cg(ptr: str, idx: str) -> str:
    """A load from L2, bypassing L1: partials that other blocks wrote."""
    return f"fl_ldcg({ptr} + {idx})"


def _header(ctx: KernelContext, p: _Problem, strategy: str) -> list[str]:
    g = ctx.graph
    shape = g.nodes[g.nodes[p.reduces[0]].inputs[0]].aval
    return [f"{ctx.name}: reduction of {shape} over axes {tuple(p.axes)} "
            f"({p.kept} outputs x {p.reduced} elements, layout {p.layout or 'scalar'})",
            *ctx.listing(), *_notes(p, strategy)]


# ---------------------------------------------------------------------------
# Inner strategy: a group of threads per output
# ---------------------------------------------------------------------------

# How _aligned_loop reads each load of runs aligned to memory (_AlignedRuns.loads).
RunRead = Literal["vector", "element", "uniform"]


@dataclass(frozen=True)
class _AlignedRuns:
    """Runs whose vectors follow memory, as _aligned_runs found them, handed on to
    _aligned_loop so it need not sort the loads again: the vector width, and each load of
    the element function in its order (the function's parameters) with how it is read:
    "vector" (at the run's own offsets o * R + r: aligned vectors inside the run, element
    by element at its ends), "element" (moves with r otherwise: its element at a clamped
    r) or "uniform" (one value)."""
    width: int
    loads: tuple[tuple[element.Load, RunRead], ...]


def _inner_setup(ctx: KernelContext, p: _Problem
                 ) -> tuple[element.ElementFunction, list[ix.Affine], int, _AlignedRuns | None]:
    """The element function over (output, reduction index), the stores of prologue
    values, the widest vector every access allows, and, where those vectors follow
    memory, the runs aligned to memory (_aligned_runs: where runs start off a vector
    boundary, an output's run begins `shift` elements into its first vector), else None."""
    o_var, r_var = ix.Var("o", max(p.kept, 1)), ix.Var("r", max(p.reduced, 1))
    fn = element.build(ctx, _coords(p, ix.Affine.of(o_var), ix.Affine.of(r_var)), p.prologue_out,
                       _reduced_values(ctx, p), what=", the values it reduces")
    store_offsets = [ix.linearize(_coords(p, ix.Affine.of(o_var), ix.Affine.of(r_var)), p.shape)] \
        if p.prologue_out else []
    # vectors need aligned starts, not whole runs: a run whose length is no multiple of the
    # vector (a full reduction of an odd size) takes vectors up to its last whole one, and
    # the tail one element at a time (_inner); an odd size read whole as single halves ran
    # x.std() of 85M float16 at 29% of copy (H200 sweep, 2026-12-03)
    width = element.vector_width(ctx, fn.loads, p.prologue_out, r_var, store_offsets) if p.reduced else 1
    while width > max(p.reduced, 1):   # at least one whole vector
        width //= 2
    aligned = _aligned_runs(ctx, p, fn, o_var, r_var)
    if aligned is not None and aligned.width > width:
        return fn, store_offsets, aligned.width, aligned
    return fn, store_offsets, width, None


ALIGNED_MIN_VECTORS = 4   # vectors a run needs before its vectors follow memory


def _aligned_runs(ctx: KernelContext, p: _Problem, fn: element.ElementFunction, o_var: ix.Var,
                  r_var: ix.Var) -> _AlignedRuns | None:
    """The runs aligned to memory, or None. Contiguous runs of R elements,
    output o's starting at o * R, begin off a vector boundary when R is no multiple of
    the vector, and no vector follows them all (x.argmax(1) of (553, 8159) read single
    floats; logsumexp over rows of 66789 ran at 53% of copy, H200 2026-12-04). Here each
    output's vectors start `shift = (o * R) % W` elements before its run, as the row
    kernels' packs do: vectors inside the run are aligned accesses, the partial ones at
    its ends move element by element (prelude fl_load_vec_in), elements outside the run
    are not folded. Loads at the run's own offsets (o * R + r) follow the vectors; loads
    that do not move with r stay one value; others read element by element. Only where
    the merged layout is one kept run of outputs then one reduced run (in X's order), at
    least one load follows the vectors, and every stored value does."""
    if [red for _, red in p.merged] != [False, True] or p.order not in ((), tuple(range(len(p.shape)))):
        return None
    g = ctx.graph
    sizes = [g.nodes[n].dtype.itemsize for n in p.prologue_out] + \
        [g.nodes[l.node].dtype.itemsize for l in fn.loads if not l.from_index]
    if not sizes:
        return None
    W = 16 // max(sizes)
    R = p.reduced
    if W < 2 or R % W == 0 or R < ALIGNED_MIN_VECTORS * W or R >= 2 ** 31 - 64:
        return None
    canonical = ix.linearize(_coords(p, ix.Affine.of(o_var), ix.Affine.of(r_var)), p.shape)
    if not any(not l.from_index and l.offset == canonical for l in fn.loads):
        return None

    def read(l: element.Load) -> RunRead:
        # a table (ctx.tables: values in shared memory) has no global array to read vectors of
        if not l.from_index and l.offset == canonical and l.node not in ctx.tables:
            return "vector"
        return "element" if r_var in l.offset.symbols() else "uniform"

    return _AlignedRuns(W, tuple((l, read(l)) for l in fn.loads))


def _inner_heuristic(ctx: KernelContext, p: _Problem, width: int) -> InnerConfig:
    """Lanes enough for about 8 vectors each; a block per output when the outputs are too
    few to fill the GPU with lanes, split over blocks that each reduce >= 4096 elements."""
    K, R = p.kept, p.reduced
    mode, group, splits = inner_split(K, R, width, ctx.options.sm_count)
    tables = bool(table_nodes(ctx))
    if mode == "lanes":
        return InnerConfig(mode="lanes", group=group, block=INNER_BLOCK, splits=1, width=width, tables=tables,
                           why=f"heuristic: {group} lane(s) for ~8 vectors each, {K} outputs fill the GPU"
                               + _TABLES_WHY * tables)
    return InnerConfig(mode="block", group=32, block=INNER_BLOCK, splits=splits, width=width, tables=tables,
                       why=f"heuristic: {K} outputs are too few for lanes: a block per output"
                           + (f", split {splits} ways (>= {MIN_PER_BLOCK} elements each)" if splits > 1 else "")
                           + _TABLES_WHY * tables)


def _inner(ctx: KernelContext, p: _Problem, config: InnerConfig | None) -> KernelCode:
    g = ctx.graph
    K, R = p.kept, p.reduced
    index_t = ctx.index_type(K, R)
    o_var = ix.Var("o", max(K, 1))
    values = _reduced_values(ctx, p)
    tables = _tables_for(ctx, config)
    table_helpers, table_fills = set_up_tables(ctx, tables) if tables else ([], [])
    fn, store_offsets, best_width, aligned_runs = _inner_setup(ctx, p)
    cfg = config if config is not None and config.width <= best_width else _inner_heuristic(ctx, p, best_width)
    cfg = replace(cfg, tables=bool(tables))
    # runs aligned to memory (_aligned_runs): their vectors follow memory at that one width;
    # a width of 1 reads element by element, as anywhere
    aligned = aligned_runs is not None and cfg.width > 1
    if aligned and cfg.width != best_width:
        cfg = replace(cfg, width=best_width)
    width = cfg.width
    if width == 1:
        for l in fn.loads:
            l.access = ""
    accs = [accumulator(g, r, ctx.names) for r in p.reduces]
    block_mode = cfg.mode == "block"
    group = 32 if block_mode else cfg.group
    threads = cfg.block
    splits = cfg.splits if block_mode else 1
    chunk = ix.ceil_div(ix.ceil_div(R, splits), width) * width   # elements per split, whole vectors

    tail = 0 if aligned else R % width          # the elements past the last whole vector of each output
    tail_lo = R - tail
    # aligned runs: vectors per output, the first starting `shift` elements before the run
    vectors = ix.ceil_div(R + width - 1, width) if aligned else R // width
    if aligned:
        chunk = ix.ceil_div(vectors, splits) * width

    # The loop over this thread's elements of one output: r from `lo` to `hi`, step `step`
    # (in vectors, or with `vector` False in elements).
    def element_loop(lo: str, hi: str, step: str, guard: str = "", vector: bool = True, steps: int = 0) -> list[str]:
        out_vals = {c: ctx.names.fresh(f"v{c}") for c in values}
        elem_args: list[str]
        if aligned:
            return _aligned_loop(ctx, p, fn, aligned_runs, accs, out_vals, lo, hi, step, guard, steps)
        if width > 1 and vector:
            reads, elem_args = element.vector_load_decls(ctx, fn, width)
            stored_vecs = {o: ctx.names.fresh(f"{array_name(g, o)}_vec") for o in p.prologue_out}
            body = [f"fl_vec<{storage_type(g.nodes[o].dtype)}, {width}> {v};" for o, v in stored_vecs.items()]
            inner = [f"{register_type(g.nodes[c].dtype)} {v};" for c, v in out_vals.items()]
            inner.append(f"{fn.name}({', '.join(elem_args + [f'{v}.v[e]' for v in stored_vecs.values()] + list(out_vals.values()))});")
            inner += [a.step(out_vals[g.nodes[a.node].inputs[0]], "r + e") for a in accs]
            body += ["#pragma unroll", f"for (int e = 0; e < {width}; ++e) {{", *indent(inner, 1), "}"]
            off = ix.render(store_offsets[0]) if store_offsets else ""
            body += [f"fl_store_vec<{width}>({ctx.out_ptr[o]} + {off}, {v});" for o, v in stored_vecs.items()]
            return strided_loop("rv", lo, hi, step, reads, body, guard, setup=(f"const index_t r = rv * {width};",),
                                steps=steps)
        reads, args = element.scalar_load_decls(ctx, fn)
        if store_offsets:
            args += [f"{ctx.out_ptr[o]}[{ix.render(store_offsets[0])}]" for o in p.prologue_out]
        body = [f"{register_type(g.nodes[c].dtype)} {v};" for c, v in out_vals.items()]
        body.append(f"{fn.name}({', '.join(args + list(out_vals.values()))});")
        body += [a.step(out_vals[g.nodes[a.node].inputs[0]], "r") for a in accs]
        return strided_loop("r", lo, hi, step, reads, body, guard, steps=steps)

    per = (f" ({width}-element vectors" + (f", the last {tail} element(s) one at a time)" if tail else ")")
           if width > 1 else "")
    if aligned:
        per = (f" ({width}-element vectors aligned to memory: a run starts up to {width - 1} elements into its "
               "first vector)")
    lines: list[str] = []
    helpers = [f"typedef {index_t} index_t;", "", *table_helpers, *fn.lines, ""]
    if not block_mode:
        # A group of `group` lanes per output; the loop runs warp-uniformly so that every
        # lane reaches the shuffles, and lanes past the last output only skip the work.
        per_warp = 32 // group
        strategy = (f"inner: {'one thread' if group == 1 else f'{group} lanes'} per output{per}")
        grid = min(ix.ceil_div(K, threads // group), ctx.grid_cap()) if K else 0
        lines += [f"const int lane = threadIdx.x % {group};",
                  "const index_t warp = (index_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;",
                  "const index_t warps = index_t(gridDim.x) * blockDim.x / 32;",
                  f"for (index_t first = warp * {per_warp}; first < {K}; first += warps * {per_warp}) {{"]
        body = [f"const index_t o = first + threadIdx.x % 32 / {group};",
                f"const bool active = o < {K};"]
        if aligned:
            body.append(_shift_line(R, width))
        for a in accs:
            body += a.declare()
        hi = f"{vectors}" if width > 1 else f"{R}"
        body += element_loop("lane", hi, f"{group}", guard="active", steps=ix.ceil_div(vectors, group))
        if tail:
            body += element_loop(f"{tail_lo} + lane", f"{R}", f"{group}", guard="active", vector=False, steps=1)
        for a in accs:
            body += a.warp_allreduce(group)
        body += ["if (active && lane == 0) {", *indent(_epilogue(ctx, p, accs, o_var), 1), "}"]
        lines += indent(body, 1) + ["}"]
        return _finish(ctx, p, strategy, helpers, [*table_fills, *lines], grid, threads, cfg, tables)

    # Block mode: block b reduces part b % S of output b / S.
    grid = K * splits if K else 0
    strategy = (f"inner: one block per output{per}" if splits == 1 else
                f"inner: {splits} blocks per output{per}, partials finished by the last block")
    lines += [f"const index_t o = blockIdx.x / {splits};"]
    if splits > 1:
        lines += [f"const index_t part = blockIdx.x % {splits};"]
    if aligned:
        lines.append(_shift_line(R, width))
    for a in accs:
        lines += a.declare()
    lo_e, hi_e = f"part * {chunk // width}", f"min(index_t({vectors}), (part + 1) * {chunk // width})"
    if splits == 1:
        lo_e, hi_e = "0", f"{vectors}"
    lines += element_loop(f"{lo_e} + threadIdx.x", hi_e, "blockDim.x", steps=ix.ceil_div(chunk // width, threads))
    if tail:   # the last part's block
        lines += element_loop(f"{tail_lo} + threadIdx.x", f"{R}", "blockDim.x", vector=False, steps=1,
                              guard=f"part == {splits - 1}" if splits > 1 else "")
    for a in accs:
        lines += a.block_allreduce()
    if splits == 1:
        lines += ["if (threadIdx.x == 0) {", *indent(_epilogue(ctx, p, accs, o_var), 1), "}"]
    else:
        scratch = _Scratch(ctx)
        parts = _partials(scratch, accs, K * splits)
        counter = scratch.region("arrivals", "unsigned int", max(K, 1), 4)
        decl = scratch.declarations()
        lines = decl + lines
        lines += ["__shared__ bool last;",
                  "if (threadIdx.x == 0) {"]
        for a in accs:
            pv, pi = parts[a.node]
            lines.append(f"    {pv}[o * {splits} + part] = {a.var};")
            if pi:
                lines.append(f"    {pi}[o * {splits} + part] = {a.idx};")
        lines += ["    __threadfence();  // partials visible before the arrival is counted",
                  f"    last = atomicAdd(&{counter}[o], 1u) == {splits - 1};",
                  "}",
                  "__syncthreads();",
                  "if (last) {",
                  f"    // The last block combines the {splits} partials in a fixed order."]
        fin = ["__threadfence();"]
        for a in accs:
            fin += [f"{a.var} = {a.identity()};"] + ([f"{a.idx} = -1;"] if a.is_arg else [])
        fin += ["#pragma unroll 4", f"for (index_t q = threadIdx.x; q < {splits}; q += blockDim.x) {{"]
        for a in accs:
            pv, pi = parts[a.node]
            fin.append("    " + a.merge(_cg(pv, f"o * {splits} + q"), _cg(pi, f"o * {splits} + q") if pi else None))
        fin.append("}")
        for a in accs:
            fin += _rename_smem(a.block_allreduce(), "_fin")
        fin += ["if (threadIdx.x == 0) {", *indent(_epilogue(ctx, p, accs, o_var), 1),
                f"    {counter}[o] = 0;  // ready for the next launch", "}"]
        lines += indent(fin, 1) + ["}"]
    return _finish(ctx, p, strategy, helpers, [*table_fills, *lines], grid, threads, cfg, tables)


def _finish(ctx: KernelContext, p: _Problem, strategy: str, helpers: list[str], lines: list[str], grid: int,
            threads: int | tuple[int, int, int], cfg: InnerConfig | ColumnConfig, tables: list[int]) -> KernelCode:
    notes = _notes(p, strategy) + ((tables_note(ctx, tables),) if tables else ())
    return ctx.finish(_header(ctx, p, strategy), helpers, lines, grid, threads, notes=notes, config=cfg)


def _shift_line(R: int, width: int) -> str:
    """Where output o's run starts within its first vector: (o * R) % width."""
    return f"const int shift = int(o % {width}) * {R % width} % {width};"


def _aligned_loop(ctx: KernelContext, p: _Problem, fn: element.ElementFunction, runs: _AlignedRuns,
                  accs: list[Accumulator], out_vals: dict[int, str], lo: str, hi: str, step: str,
                  guard: str, steps: int) -> list[str]:
    """The loop over this thread's vectors of output o's run, aligned to memory (see
    _aligned_runs): vector rv covers r = rv * width - shift ... + width - 1; loads at
    the run's own offsets are one aligned access inside the run and element by element at
    its ends; other r-dependent loads read their element at a clamped r; elements outside
    the run are computed but neither folded nor stored."""
    g = ctx.graph
    R, width = p.reduced, runs.width
    r_var = ix.Var("r", max(R, 1))      # the symbol _aligned_runs' offsets are in
    at_elem = ix.Var("rc", max(R, 1))   # the element's r, clamped into the run
    reads: list[element.Decl] = []
    args: list[str] = []
    for l, how in runs.loads:
        if how == "vector":
            st = storage_type(g.nodes[l.node].dtype)
            size = g.nodes[l.node].dtype.itemsize
            reads.append(element.Decl(f"fl_vec<{st}, {width}>", l.param,
                                      f"fl_load_vec_in<{width}>({ctx.in_ptr[l.node]} + o * {R}, c0, {R})", size * width))
            args.append(f"{l.param}.v[e]")
        elif how == "element":
            args.append(l.scalar(ctx, ix.rename(l.offset, r_var, at_elem)))
        else:
            reads.append(element.Decl(l.ctype(g), l.param, l.scalar(ctx),
                                      0 if l.from_index else g.nodes[l.node].dtype.itemsize))
            args.append(l.param)
    stored_vecs = {o: ctx.names.fresh(f"{array_name(g, o)}_vec") for o in p.prologue_out}
    body = [f"fl_vec<{storage_type(g.nodes[o].dtype)}, {width}> {v};" for o, v in stored_vecs.items()]
    declare = [f"{register_type(g.nodes[c].dtype)} {v};" for c, v in out_vals.items()]
    call = f"{fn.name}({', '.join(args + [f'{v}.v[e]' for v in stored_vecs.values()] + list(out_vals.values()))});"
    steps_in = " ".join(a.step(out_vals[g.nodes[a.node].inputs[0]], "rc") for a in accs)
    edge = ["const int re = c0 + e;", f"const bool in_run = re >= 0 && re < {R};",
            "const index_t rc = in_run ? index_t(re) : 0;", *declare, call, f"if (in_run) {{ {steps_in} }}"]
    whole = ["const index_t rc = index_t(c0 + e);", *declare, call, steps_in]
    over = lambda lines: ["#pragma unroll", f"for (int e = 0; e < {width}; ++e) {{", *indent(lines, 1), "}"]  # noqa: E731
    # Only a run's first and last vectors overhang it: the others fold every element
    # untested (the test is an add, two compares and a predicated fold an element: about
    # as many instructions as float16 `any`'s own work, read off its generated code).
    body += [f"if (c0 >= 0 && c0 + {width} <= {R}) {{", *indent(over(whole), 1),
             "} else {", *indent(over(edge), 1), "}"]
    body += [f"fl_store_vec_in<{width}>({ctx.out_ptr[o]} + o * {R}, c0, {R}, {v});" for o, v in stored_vecs.items()]
    return strided_loop("rv", lo, hi, step, reads, body, guard,
                        setup=(f"const int c0 = int(rv) * {width} - shift;",), steps=steps)


def _fold_rows(ctx: KernelContext, accs: list[Accumulator], tile: int, width: int, rows: int,
               lane: str = "threadIdx.x", ry: str = "threadIdx.y", idle: bool = False) -> list[str]:
    """Combine the `rows` rows of threads (`ry` a thread's row, `lane` its place along
    the kept axis) through shared memory, in row order (so the result does not depend on
    timing), one accumulator at a time through one buffer `fold`. Every thread of the
    block must run this (`idle`: threads past the last row too, which store nothing);
    row 0 ends up holding the results."""
    if rows == 1:
        return []
    lines: list[str] = []
    for a in accs:
        sv = ctx.names.fresh(f"fold_{a.var}")
        si = ctx.names.fresh(f"fold_{a.idx}") if a.is_arg else None
        lines.append(f"{a.ctype}* {sv} = reinterpret_cast<{a.ctype}*>(fold);")
        if si:
            lines.append(f"long long* {si} = reinterpret_cast<long long*>(fold + {rows * tile * 8});")
        lines += ["__syncthreads();  // the buffer's previous user is done",
                  f"for (int e = 0; e < {width} && {ry} < {rows}; ++e) {{" if idle else
                  f"for (int e = 0; e < {width}; ++e) {{",
                  f"    {sv}[{ry} * {tile} + {lane} * {width} + e] = {a.var}[e];"]
        if si:
            lines.append(f"    {si}[{ry} * {tile} + {lane} * {width} + e] = {a.idx}[e];")
        lines += ["}", "__syncthreads();"]
        if rows > TREE_FOLD_ROWS:
            lines += _tree_fold(a, sv, si, tile, width, rows, lane, ry)
            continue
        body = [f"{a.var}[e] = {sv}[{lane} * {width} + e];"]
        if si:
            body.append(f"{a.idx}[e] = {si}[{lane} * {width} + e];")
        other_i = f"{si}[y * {tile} + {lane} * {width} + e]" if si else None
        if a.rule.combine == "welford":
            # rolled: unrolled, its merges (a division each) made NVRTC take 0.64 s rather
            # than 0.25 s for `x.std(axis=0)`; a sum's fold stays unrolled, its shared
            # memory loads in flight together (rolled, 256 rows of threads folding one
            # lane's columns ran 1.5x slower on the H200)
            body.append("#pragma unroll 1")
        body.append(f"for (int y = 1; y < {rows}; ++y) "
                    + a.merge(f"{sv}[y * {tile} + {lane} * {width} + e]", other_i, "[e]"))
        lines += [f"if ({ry} == 0) {{", f"    for (int e = 0; e < {width}; ++e) {{",
                  *indent(body, 2), "    }", "}"]
    return lines


def _tree_fold(a: Accumulator, sv: str, si: str | None, tile: int, width: int, rows: int,
               lane: str, ry: str) -> list[str]:
    """Many rows of threads (a column reduction over narrow kept runs: 2 lanes a row, 128
    rows) fold as a tree, row y taking in row y + h for h = rows / 2, ..., 1: log2 steps
    where one thread a lane folding the rows one after another took most of the kernel
    (a column variance over (2048, 4096, 8) at 26% of copy on the H200, 2026-12-03).
    Row 0's registers end with the result."""
    mine, other = f"{ry} * {tile} + {lane} * {width} + e", f"({ry} + h) * {tile} + {lane} * {width} + e"
    step = [f"{a.var}[e] = {sv}[{mine}];"] + ([f"{a.idx}[e] = {si}[{mine}];"] if si else [])
    step.append(a.merge(f"{sv}[{other}]", f"{si}[{other}]" if si else None, "[e]"))
    step += [f"{sv}[{mine}] = {a.var}[e];"] + ([f"{si}[{mine}] = {a.idx}[e];"] if si else [])
    # rows no power of two (a block of whole rows of 21 threads: 12): the first step's
    # upper half is short, rows past the last have nothing to give
    top = pow2_at_least(rows)
    take = f"{ry} < h" if top == rows else f"{ry} < h && {ry} + h < {rows}"
    return [f"for (int h = {top // 2}; h > 0; h /= 2) {{",
            f"    if ({take}) {{", f"        for (int e = 0; e < {width}; ++e) {{", *indent(step, 3),
            "        }", "    }", "    __syncthreads();", "}"]


def _rename_smem(lines: list[str], suffix: str) -> list[str]:
    """Second block reduction in one kernel: fresh shared arrays."""
    out = []
    for line in lines:
        out.append(line.replace("smem_", f"smem{suffix}_"))
    return out


# ---------------------------------------------------------------------------
# Column strategy: threads across the contiguous kept axis
# ---------------------------------------------------------------------------



def _column_setup(ctx: KernelContext, p: _Problem):
    """The element function over (kept column, reduced row), the prologue stores, and the
    widest vector along the kept axis (at most 4 columns per thread, 128 per block: the
    fold buffer stays small)."""
    K2 = p.merged[-1][0]
    K1 = p.kept // K2 if K2 else 0
    k1_var, k2_var, r_var = ix.Var("k1", max(K1, 1)), ix.Var("k2", max(K2, 1)), ix.Var("r", max(p.reduced, 1))
    coords = _coords(p, ix.Affine.of(k1_var) * K2 + ix.Affine.of(k2_var), ix.Affine.of(r_var))
    fn = element.build(ctx, coords, p.prologue_out, _reduced_values(ctx, p), what=", the values it reduces")
    store_offsets = [ix.linearize(coords, p.shape)] if p.prologue_out else []
    width = element.vector_width(ctx, fn.loads, p.prologue_out, k2_var, store_offsets, max_width=4, whole=True)
    return fn, store_offsets, width


def _column_heuristic(ctx: KernelContext, p: _Problem, width: int) -> ColumnConfig:
    """Lanes enough for the kept run (a warp spans 32 / lanes rows when it is short), then
    split the reduced axis until about COLUMN_BLOCKS_PER_SM blocks per SM run, each
    folding at least 16 rows per row of threads."""
    welford = _welford(ctx, p)
    tables = bool(table_nodes(ctx))
    lanes, base_blocks, splits = column_split(p.kept, p.merged[-1][0], p.reduced, width, ctx.options.sm_count,
                                              welford)
    if welford and lanes == 32 and splits == 1:
        # Columns enough to fill the GPU without a split: a warp a block, each thread
        # folding its column's rows alone. Welford's merges through shared memory cost
        # more than 8 rows of threads save (H200, 2026-12-04, std and mean over axis 0,
        # float32, us at 1 / 8 rows of threads: (65, 936143) 87.1 / 129.0, (65, 936144)
        # 80.4 / 132.1, (129, 936143) 147.6 / 182.6, (33, 1800001) 85.0 / 151.4,
        # (257, 250001) 84.9 / 90.0; sums within 10% either way)
        return ColumnConfig(width=width, rows=1, splits=1, lanes=lanes, tables=tables,
                            why=f"heuristic: {base_blocks} warp(s) of columns, a thread folding its "
                                "column's rows alone (a variance: no Welford merges through shared memory)"
                                + _TABLES_WHY * tables)
    return ColumnConfig(width=width, rows=COLUMN_ROWS, splits=splits, lanes=lanes, tables=tables,
                        why=f"heuristic: {base_blocks} block(s) of columns"
                            + (f", {32 // lanes} rows per warp" if lanes < 32 else "")
                            + (f", the reduced axis split {splits} ways to fill the GPU" if splits > 1 else "")
                            + _TABLES_WHY * tables)


def _welford(ctx: KernelContext, p: _Problem) -> bool:
    g = ctx.graph
    return any(reduce_rule(g.nodes[r].op, g.nodes[g.nodes[r].inputs[0]].dtype, g.nodes[r].dtype).combine == "welford"
               for r in p.reduces)


def _column(ctx: KernelContext, p: _Problem, config: ColumnConfig | None) -> KernelCode:
    g = ctx.graph
    K, R = p.kept, p.reduced
    K2 = p.merged[-1][0]
    K1 = K // K2 if K2 else 0
    index_t = ctx.index_type(K, R)
    values = _reduced_values(ctx, p)
    tables = _tables_for(ctx, config)
    # the block is 32 x rows threads: each fills its share of the tables once
    table_helpers, table_fills = set_up_tables(ctx, tables, "threadIdx.y * blockDim.x + threadIdx.x",
                                               "blockDim.x * blockDim.y") if tables else ([], [])
    fn, store_offsets, best_width = _column_setup(ctx, p)
    cfg = config if config is not None and config.width <= best_width and config.rows in (1, 2, 4, 8) \
        and config.lanes >= 1 and column_thread_rows(config.lanes, config.rows) >= 1 \
        else _column_heuristic(ctx, p, best_width)
    cfg = replace(cfg, tables=bool(tables))
    width = cfg.width
    if width == 1:
        for l in fn.loads:
            l.access = ""
    accs = [accumulator(g, r, ctx.names) for r in p.reduces]
    lanes = cfg.lanes
    # rows a warp covers at once (lanes a power of two); 0: the block takes whole rows of
    # `lanes` threads, t % lanes along the kept run, t / lanes along the reduced axis
    sub = 32 // lanes if lanes <= 32 and 32 % lanes == 0 else 0
    # the fold buffer: a slot per thread, room for the widest accumulator (and an
    # argmax's index after the values); fewer rows of warps where it would not fit
    per = max(16, max(a.nbytes + (8 if a.is_arg else 0) for a in accs))
    fit = cfg.rows
    while fit > 1 and fit * 32 * cfg.width * per > FOLD_LIMIT and column_thread_rows(lanes, fit // 2) >= 1:
        fit //= 2
    if fit != cfg.rows:
        cfg = replace(cfg, rows=fit, why=f"{cfg.why}; {fit} rows of warps: the fold fits static shared memory")
    rows = column_thread_rows(lanes, cfg.rows)   # rows of threads in all
    idle = not sub and rows * lanes < 32 * cfg.rows   # threads past the block's last whole row
    lane, ry = ("threadIdx.x", "threadIdx.y") if sub == 1 else ("lane", "ry")
    tile = lanes * width
    tiles = ix.ceil_div(K2, tile)
    base_blocks = K1 * tiles
    splits = cfg.splits
    chunk = ix.ceil_div(R, splits)
    grid = base_blocks * splits if K else 0
    strategy = (f"column: {tile} kept elements per block, {rows} rows of threads"
                + (f" ({sub} per warp)" if sub > 1 else f" (whole rows of {lanes} threads)" if not sub else "")
                + (f", {splits} blocks along the reduced axis, partials finished by the last block"
                   if splits > 1 else ""))

    at = "[e]"
    lines = ([f"const index_t part = blockIdx.x % {splits};"] if splits > 1 else [])
    if sub > 1:
        lines += [f"const int lane = threadIdx.x % {lanes};",
                  f"const int ry = threadIdx.y * {sub} + threadIdx.x / {lanes};   // this thread's row of threads"]
    elif not sub:
        lines += ["const int t = threadIdx.y * 32 + threadIdx.x;",
                  f"const int lane = t % {lanes};",
                  f"const int ry = t / {lanes};   // this thread's row of threads"]
    lines += [f"const index_t tile = blockIdx.x / {splits} % {tiles};",
              f"const index_t k1 = blockIdx.x / {splits} / {tiles};",
              f"const index_t k2 = tile * {tile} + {lane} * {width};",
              f"const bool active = k2 < {K2}" + (f" && {ry} < {rows};" if idle else ";")]
    for a in accs:
        lines += a.declare(f"[{width}]")
    out_vals = {c: ctx.names.fresh(f"v{c}") for c in values}
    if width > 1:
        reads, args = element.vector_load_decls(ctx, fn, width)
        stored_vecs = {o: ctx.names.fresh(f"{array_name(g, o)}_vec") for o in p.prologue_out}
        body = [f"fl_vec<{storage_type(g.nodes[o].dtype)}, {width}> {v};" for o, v in stored_vecs.items()]
        inner = [f"{register_type(g.nodes[c].dtype)} {v};" for c, v in out_vals.items()]
        inner.append(f"{fn.name}({', '.join(args + [f'{v}.v[e]' for v in stored_vecs.values()] + list(out_vals.values()))});")
        inner += [a.step(out_vals[g.nodes[a.node].inputs[0]], "r", at) for a in accs]
        body += ["#pragma unroll", f"for (int e = 0; e < {width}; ++e) {{", *indent(inner, 1), "}"]
        off = ix.render(store_offsets[0]) if store_offsets else ""
        body += [f"fl_store_vec<{width}>({ctx.out_ptr[o]} + {off}, {v});" for o, v in stored_vecs.items()]
    else:
        reads, args = element.scalar_load_decls(ctx, fn)
        if store_offsets:
            args += [f"{ctx.out_ptr[o]}[{ix.render(store_offsets[0])}]" for o in p.prologue_out]
        body = [f"{register_type(g.nodes[c].dtype)} {v};" for c, v in out_vals.items()]
        body.append(f"{fn.name}({', '.join(args + list(out_vals.values()))});")
        body += [a.step(out_vals[g.nodes[a.node].inputs[0]], "r", "[0]") for a in accs]
    r_lo = f"part * {chunk}" if splits > 1 else "0"
    r_hi = f"min(index_t({R}), (part + 1) * {chunk})" if splits > 1 else f"{R}"
    lines += strided_loop("r", f"{r_lo} + {ry}", r_hi, f"{rows}", reads, body, guard="active",
                          steps=ix.ceil_div(chunk if splits > 1 else R, rows))
    if rows > 1:
        lines.append(f"__shared__ __align__(16) unsigned char fold[{rows * tile * per}];")
    lines += _fold_rows(ctx, accs, tile, width, rows, lane, ry, idle)
    o_var = ix.Var("o", max(K, 1))
    finish = [f"const index_t o = k1 * {K2} + k2 + e;", *_epilogue(ctx, p, accs, o_var, at)]
    if splits == 1:
        lines += [f"if ({ry} == 0 && active) {{",
                  f"    for (int e = 0; e < {width}; ++e) {{",
                  *indent(finish, 2), "    }", "}"]
    else:
        # Partials stored split-major, so that each block's writes and the finishing
        # block's reads are coalesced across the kept axis.
        scratch = _Scratch(ctx)
        parts = _partials(scratch, accs, K * splits)
        counter = scratch.region("arrivals", "unsigned int", max(base_blocks, 1), 4)
        lines = scratch.declarations() + lines
        write, comb = [], []
        for a in accs:
            pv, pi = parts[a.node]
            write.append(f"{pv}[part * {K} + k1 * {K2} + k2 + e] = {a.var}[e];")
            comb += [f"{a.var}[e] = {a.identity()};"] + ([f"{a.idx}[e] = -1;"] if a.is_arg else [])
            if pi:
                write.append(f"{pi}[part * {K} + k1 * {K2} + k2 + e] = {a.idx}[e];")
        comb.append(f"for (index_t q = {ry}; active && q < {splits}; q += {rows}) {{")
        for a in accs:
            pv, pi = parts[a.node]
            src = f"q * {K} + k1 * {K2} + k2 + e"
            comb.append("    " + a.merge(_cg(pv, src), _cg(pi, src) if pi else None, at))
        comb.append("}")
        lines += [f"if ({ry} == 0 && active) {{",
                  f"    for (int e = 0; e < {width}; ++e) {{", *indent(write, 2), "    }",
                  "    __threadfence();  // partials visible before the arrival is counted",
                  "}",
                  "__shared__ bool last;",
                  "__syncthreads();",
                  "if (threadIdx.x == 0 && threadIdx.y == 0) "
                  f"last = atomicAdd(&{counter}[blockIdx.x / {splits}], 1u) == {splits - 1};",
                  "__syncthreads();",
                  "if (last) {",
                  f"    // The last block to arrive combines the {splits} partials of its columns:",
                  "    // each row of threads a fixed subset, then the rows in order.",
                  "    __threadfence();",
                  f"    for (int e = 0; e < {width}; ++e) {{", *indent(comb, 2), "    }",
                  *indent(_fold_rows(ctx, accs, tile, width, rows, lane, ry, idle), 1),
                  f"    if ({ry} == 0 && active) {{",
                  f"        for (int e = 0; e < {width}; ++e) {{", *indent(finish, 3), "        }",
                  "    }",
                  f"    if (threadIdx.x == 0 && threadIdx.y == 0) {counter}[blockIdx.x / {splits}] = 0;  "
                  "// ready for the next launch",
                  "}"]
    helpers = [f"typedef {index_t} index_t;", "", *table_helpers, *fn.lines, ""]
    return _finish(ctx, p, strategy, helpers, [*table_fills, *lines], grid, (32, cfg.rows, 1), cfg, tables)
