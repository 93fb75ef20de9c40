"""The row template: softmax, layernorm, rmsnorm, logsumexp... over rows of length C.

Every reduce node reduces one axis k of one full shape F (rows: the positions of the
other axes; plan.analysis.row_shapes). A row's columns are contiguous when k is the last
axis (or every later axis has length 1); otherwise they lie `stride` elements apart (x -
x.mean(0), a softmax over a middle axis), and each row is a thread's: adjacent threads
take adjacent rows, so every column's loads are coalesced across a warp.
Reductions that depend on earlier ones (softmax's sum of exp(x - max)) run in later
passes over the same row: pass 1 computes the reductions that need no reduction, pass 2
those that need pass 1's, and so on; a final pass computes and stores the full-shape
outputs. Per-row values (the reductions and what follows from them) are plain variables
that every thread of the row holds.

The row's full-shape inputs are read from global memory once and kept close (after
OneFlow's softmax, whose tiers these are, with one more):

* warp: C <= 1024: a group of W <= 32 lanes per row, each lane holding C / W elements
  in registers; reductions are warp shuffles.
* block, shared memory: longer rows that fit in shared memory (several rows per SM, so
  one row's loads overlap another's reductions); block reductions.
* block, registers: rows too big for shared memory that a block's registers still hold
  (up to 32 elements per thread and input).
* looped: neither; a block per row re-reads the row from global memory in every pass.

Strided rows, a thread each: the warp tier with one lane a row (the row in registers,
up to 64 elements), or the thread tier (the row re-read from memory in every pass). Where
the rows' columns lie only a few elements apart (a softmax over axis 1 of (n, 14, 2)),
a warp's loads of one column touch 32 / stride scattered pieces of memory, two bytes
each in float16: the staged tier keeps the warp tier's thread a row, but the block's
rows, whole outer indices and so one contiguous run of memory, come in through shared
memory (consecutive threads, consecutive elements) and their outputs go out the same way. Or a
block per slab (plan.analysis.strided_layout): the Sb adjacent rows of one outer index
(all of them when there are at most 32, else a chunk), with threads striped over the
columns: thread t takes row t % Sb and columns t / Sb, t / Sb + M, ... (M = threads / Sb),
so a warp reads consecutive addresses; each pass's partials meet in shared memory, combined
as a tree over the stripes. The slab tier re-reads the slab in every pass (from DRAM when
the slabs in flight outgrow L2), the slab-smem tier keeps it in shared memory.

Within a pass each thread works on packs of P adjacent columns, 16-byte accesses. When C
is not a multiple of P, rows start off a pack boundary; rather than narrower packs (a
float16 row of odd width moved one half at a time: 21-35% of copy on the H200), the packs
follow memory: a row whose first element lies `shift` elements past a 16-byte boundary
starts with a partial pack at column -shift, ends with another, and both move element by
element, guarded, while every other pack is one aligned access (`aligned` layouts; rows
shorter than ALIGNED_MIN_PACKS packs keep the widest power of two that divides C).
Short contiguous rows off those vectors (at most STAGED_AUTO_COLS columns: a layernorm
over 14 float32 columns, a softmax over 3) take the staged tier too, whose block of rows
is one contiguous run moved in 16-byte vectors whatever the rows' alignment, where the
warp tier would move each row's end packs element by element.
Inputs indexed by the column alone (layernorm's gamma and beta) are loaded once per
thread, before the loop over rows, in the register tiers.
Accumulation is in float32 for float16 (and in the reduce dtype otherwise); the max in
softmax makes exp(x - max) stable as the user wrote it.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from ..ops import Kind
from ..plan.analysis import SLAB_INNER, row_shapes, strided_layout
from . import index as ix
from .accum import Accumulator, accumulator
from .context import KernelContext, kernel_space
from .emit import Names, ValueEmitter, array_name, indent, load_expr
from .config import RowConfig
from .model import KernelCode
from .types import ctype_size, is_half, register_type, storage_type

WARP_MAX_COLS = 1024
REG_ELEMS = 32              # cached elements per thread and input in the register tiers
WARP_ELEMS_MAX = 64         # a warp tier candidate may hold up to this many (longer rows)
REG_BUDGET = 64             # all register caches of a thread together
SMEM_LIMIT = 200 * 1024     # bytes of row cache per block (an SM has 228 KB)
SMEM_THREADS = 512
# A shared-memory row's fill keeps its loads in flight together; a candidate whose thread
# holds more packs than this compiles slowly and never won (rmsnorm float16 of 48203
# columns, H200 2026-12-04: 128 threads x 377 packs 1231 us and 1.9 s of NVRTC against
# 1024 x 48 at 238 us), and a fill longer than the unroll is unrolled that far only.
SMEM_CANDIDATE_PACKS = 64
SMEM_FILL_UNROLL = 64
SLAB_SCRATCH_LIMIT = 40 * 1024   # static shared memory of a slab's combines (48 KB without opt-in)
# A slab kept in shared memory: 32 KiB or less leaves room for several blocks an SM, one
# loading while the others combine and store. H100, 2026-12-05, x - x.mean(0) of (128,
# 512k) float32: slabs of 64 rows (32 KiB) 212 us, of 128 (64 KiB) 228, of 256 (128 KiB,
# one block an SM) 356; its float16 form (256, 256k) 137 us at 64 rows, 159 at 128.
SLAB_SMEM_TARGET = 32 * 1024
ALIGNED_MIN_PACKS = 4            # packs a row needs before its packs follow memory (two partial ones)


class _Fold(str):
    """A reduction's fold of one column: a pack that overhangs the row runs it only for
    the columns inside the row (`if (in_row)`), a pack inside the row runs it as is."""


@dataclass
class _Row:
    shape: tuple[int, ...]       # F
    rows: int
    cols: int
    axis: int                    # the reduced axis k
    stride: int                  # elements between a row's columns (1: contiguous)
    reduces: list[int]
    levels: dict[int, int]       # reduce node -> pass number (1-based)
    full_out: list[int]
    row_out: list[int]


@dataclass
class _Layout:
    tier: str                    # "warp", "block", "smem", "looped", "thread", "slab", "slab-smem"
    pack: int                    # columns per access
    threads: int                 # threads per row (lanes of a warp, or the block)
    packs: int                   # packs per thread (register tiers)
    row_cached: list[int]        # inputs read at (row, col): the row cache
    col_cached: list[int]        # inputs read at (col): the column cache
    col_in_registers: bool
    slab: "_Slab | None" = None   # the slab tiers' geometry
    staged: int = 0              # staged tier: the block's threads (rows), staged through shared memory
    aligned: bool = False        # packs aligned to memory: a row starts at column -shift of its first pack


@dataclass(frozen=True)
class _Slab:
    """A block per slab: `width` adjacent rows (Sb) of one outer index, `stripes` threads
    (M) per row; `chunks` slabs per outer index, `groups` slabs in all."""

    width: int
    stripes: int
    chunks: int
    groups: int

    @property
    def threads(self) -> int:
        return self.width * self.stripes


SLAB_TIERS = ("slab", "slab-smem")


def _slab(ctx: KernelContext, p: "_Row", threads: int, cached_bytes: int = 0) -> _Slab:
    """All of an outer index's rows when they are at most SLAB_INNER, else the widest
    chunk of 32-256 that still gives two blocks an SM; a slab kept in shared memory
    (`cached_bytes` a row) no wider than SLAB_SMEM_TARGET bytes, down to 32 rows."""
    S = p.stride
    outer = p.rows // S if S else 0
    width = S
    if S > SLAB_INNER:
        width = SLAB_INNER
        for w in (256, 128, 64):
            if w <= S and outer * ix.ceil_div(S, w) >= 2 * ctx.options.sm_count and \
                    w * cached_bytes <= SLAB_SMEM_TARGET:
                width = w
                break
    chunks = ix.ceil_div(S, width) if S else 0
    return _Slab(width, max(1, threads // width), chunks, outer * chunks)


def _slab_cached_bytes(ctx: KernelContext, p: "_Row", row_cached: list[int], tier: str) -> int:
    """Shared memory a row of the slab takes (0 where the slab is re-read, not kept)."""
    return _cache_bytes(ctx, row_cached, p.cols) if tier == "slab-smem" else 0


def _scratch_bytes(ctx: KernelContext, p: "_Row", threads: int) -> int:
    """Static shared memory of the slab tiers' combines: a value a thread per reduction."""
    g = ctx.graph
    total = 0
    for r in p.reduces:
        a = accumulator(g, r, Names())
        total += a.nbytes + (8 if a.is_arg else 0)
    return total * threads


STAGE_UNROLL = 4          # a thread's 16-byte loads in flight together filling a stage
STAGE_LIMIT = 40 * 1024   # static shared memory of the staged tier's buffers (48 KB without opt-in)
# Contiguous unaligned rows the heuristic stages (a thread works through its row alone, so
# its serial work grows with the row). H100, 2026-12-05 (benchmarks/kernel_ab.py, every
# candidate timed): staged over the best warp tier at 5-29 float32 columns 1.05-1.4x
# (rows of 18 with a stride-2 outer: 97% of copy against 74%), float16 rows of 47 1.18x;
# float16 rows of 60 0.96x. H200, same day: a softmax over rows of 3 float32 204.8 us
# against 294.5 us for the warp tier's 4 lanes (208.0 us at its best, 2 lanes), rmsnorm
# over 18 float32 columns 150.4 against 279.8 us (191.5 at best); 5 columns 27.4 against
# 27.1 us at the warp tier's best; a 5 MB standardize 18.9 against 17.0 us (one lane).
STAGED_AUTO_COLS = 48


def _staged_threads(ctx: KernelContext, p: "_Row", row_cached: list[int]) -> int:
    """The staged tier's rows (threads) a block: whole outer indices (a multiple of the
    stride) and whole warps, 128 or more; 0 where the stride makes that over 256.
    Contiguous rows (stride 1): 128, or 64 or 32 where 128 rows' stages would not fit."""
    S = p.stride
    if S == 1:
        return next((t for t in (128, 64, 32) if _staged_bytes(ctx, p, row_cached, t) <= STAGE_LIMIT), 0)
    if not 1 < S < 32:
        return 0
    t = 32 * S // math.gcd(32, S)
    while t < 128:
        t *= 2
    return t if t <= 256 else 0


def _staged_bytes(ctx: KernelContext, p: "_Row", row_cached: list[int], threads: int) -> int:
    """Shared memory of the staged tier: the block's rows of each row-cached input and
    each full-shape output, each buffer on a 16-byte boundary."""
    return _cache_bytes(ctx, [*row_cached, *p.full_out], threads * p.cols)


def _stage_candidate(ctx: KernelContext, p: "_Row", row_cached: list[int], col_cached: list[int]) -> bool:
    """Contiguous rows worth a staged candidate (where it fits): rows that are not whole
    16-byte vectors (their packs follow memory, or are narrower), where the warp tier
    moves a row's first and last packs element by element."""
    return p.stride == 1 and p.cols % _vector_pack(ctx, p, row_cached, col_cached) != 0


def _stage_by_default(ctx: KernelContext, p: "_Row", row_cached: list[int], col_cached: list[int]) -> bool:
    """Short unaligned contiguous rows, enough of them for a block of rows an SM: the
    staged tier's vectors beat the warp tier's element-by-element row ends there."""
    if not (_stage_candidate(ctx, p, row_cached, col_cached) and p.cols <= STAGED_AUTO_COLS):
        return False
    threads = _staged_threads(ctx, p, row_cached)
    return threads > 0 and p.rows >= threads * ctx.options.sm_count


def _thread_holds_row(ctx: KernelContext, p: "_Row", row_cached: list[int]) -> bool:
    """Whether one thread's registers hold a row (the strided and staged rows' layout)."""
    return p.cols <= _elems_limit(ctx, row_cached, WARP_ELEMS_MAX) and \
        p.cols * max(len(row_cached), 1) <= 2 * REG_BUDGET


def _cache_bytes(ctx: KernelContext, row_cached: list[int], elems: int) -> int:
    """Dynamic shared memory of `elems` elements of each row-cached input, each array
    starting on a 16-byte boundary (_RowCode._smem_caches lays them out so)."""
    return sum(ix.ceil_div(elems * ctx.graph.nodes[n].dtype.itemsize, 16) * 16 for n in row_cached)


def full_index(p: "_Row", row_v: ix.Var, col_v: ix.Var) -> tuple[ix.Affine, ...]:
    """The index of element (row, col) along each axis of F: the row delinearized over
    the other axes, the column at the reduced axis (the Numba row kernel's too)."""
    k = p.axis
    others = ix.delinearize(ix.Affine.of(row_v), p.shape[:k] + p.shape[k + 1:])
    return (*others[:k], ix.Affine.of(col_v), *others[k:])


def _setup(ctx: KernelContext):
    p = _analyse(ctx)
    row_v, col_v = ix.Var("row", max(p.rows, 1)), ix.Var("col", max(p.cols, 1))
    full = full_index(p, row_v, col_v)
    canonical = ix.linearize(full, p.shape)          # row * C + col (contiguous rows)
    row_cached, col_cached = _cached_inputs(ctx, p, full, canonical, ix.Affine.of(col_v))
    return p, row_v, col_v, full, canonical, row_cached, col_cached


def heuristic(ctx: KernelContext) -> RowConfig:
    p, *_, row_cached, col_cached = _setup(ctx)
    return _heuristic(ctx, p, row_cached, col_cached)


def candidates(ctx: KernelContext) -> list[RowConfig]:
    """Every tier the row fits, with a few thread counts each (the heuristic first)."""
    p, *_, row_cached, col_cached = _setup(ctx)
    h = _heuristic(ctx, p, row_cached, col_cached)
    out = [h]
    C = p.cols
    if p.stride > 1:   # a thread a row (in registers when it fits, or re-read), or slabs
        more = [RowConfig(tier="warp", threads=1, why="candidate"), RowConfig(tier="thread", threads=1, why="candidate"),
                RowConfig(tier="staged", threads=1, why="candidate: the block's rows through shared memory")]
        if p.cols * min(p.stride, SLAB_INNER) >= 256:   # a slab shares out among its threads
            more += [RowConfig(tier=t, threads=n, why="candidate") for t in ("slab-smem", "slab") for n in (256, 512, 1024)]
        return (out + [c for c in more if c.key() != h.key() and _fits(ctx, p, row_cached, col_cached, c)])[:7]
    # fewer lanes too: narrow rows (3 columns: 4 lanes, one idle, two shuffles a reduction
    # per element) may do better with a lane or two holding the row
    pack = _pack(ctx, p, row_cached, col_cached)
    warp_lanes = h.threads if h.tier == "warp" else _warp_lanes(p, pack) if h.tier == "staged" else 0
    lanes = [t for t in (1, 2, 4, 8, 16, 32) if t >= warp_lanes // 4] if warp_lanes else [32]
    for tier, counts in (("warp", lanes), ("block", (128, 256, 512)), ("smem", (128, 256, 512, 1024))):
        for t in counts:
            cfg = RowConfig(tier=tier, threads=t, why="candidate")
            if _fits(ctx, p, row_cached, col_cached, cfg) and cfg.key() != h.key() and \
                    (tier == "warp" or C >= t * pack) and \
                    (tier != "smem" or ix.ceil_div(_span(p, pack), t * pack) <= SMEM_CANDIDATE_PACKS):
                out.append(cfg)
    if len(out) == 1:
        out += [RowConfig(tier="looped", threads=t, why="candidate") for t in (256, 1024) if t != h.threads]
    staged = RowConfig(tier="staged", threads=1, why="candidate: the block's rows through shared memory, "
                                                     "16-byte vectors whatever the rows' alignment")
    if h.tier != "staged" and _stage_candidate(ctx, p, row_cached, col_cached) and \
            _fits(ctx, p, row_cached, col_cached, staged):
        out.insert(1, staged)
    return out[:7]


def _elems_limit(ctx: KernelContext, row_cached: list[int], limit: int) -> int:
    """Cached elements a thread may hold: `limit` 4-byte values (fewer of 8 bytes: a
    float64 softmax holding 32 a lane spilled)."""
    widest = max((ctx.graph.nodes[n].dtype.itemsize for n in row_cached), default=4)
    return limit if widest <= 4 else limit * 4 // widest


def _fits(ctx: KernelContext, p: "_Row", row_cached: list[int], col_cached: list[int], cfg: RowConfig) -> bool:
    g = ctx.graph
    C = p.cols
    pack = _pack(ctx, p, row_cached, col_cached)
    n_row = max(len(row_cached), 1)
    if cfg.tier in SLAB_TIERS:   # strided rows, a block per slab (in shared memory when it fits)
        if p.stride <= 1 or cfg.threads not in (128, 256, 512, 1024):
            return False
        slab = _slab(ctx, p, cfg.threads, _slab_cached_bytes(ctx, p, row_cached, cfg.tier))
        scratch = _scratch_bytes(ctx, p, slab.threads)   # float64 variances take 40 bytes a thread
        return scratch <= SLAB_SCRATCH_LIMIT and (
            cfg.tier == "slab" or _cache_bytes(ctx, row_cached, p.cols * slab.width) + scratch <= SMEM_LIMIT)
    if cfg.tier == "staged":   # the warp tier's thread a row, whole outer indices a block, through shared memory
        threads = _staged_threads(ctx, p, row_cached)
        if p.stride == 1:   # a thread a contiguous row, in registers as a strided one
            return threads > 0 and C > 1 and cfg.threads == 1 and _thread_holds_row(ctx, p, row_cached)
        warp = RowConfig(tier="warp", threads=1)
        return threads > 0 and C > 0 and cfg.threads == 1 and _fits(ctx, p, row_cached, col_cached, warp) and \
            _staged_bytes(ctx, p, row_cached, threads) <= STAGE_LIMIT
    if p.stride > 1 or cfg.tier == "thread":   # strided rows: a thread each, nothing else
        # a thread holds up to 64 four-byte columns: standardizing (64, 1M) along axis 0
        # re-read its row in three passes at 56% of copy (H200, 2026-12-03)
        return p.stride > 1 and (cfg.tier == "thread" or (
            cfg.tier == "warp" and cfg.threads == 1 and _thread_holds_row(ctx, p, row_cached)))
    if cfg.tier == "warp":
        per = ix.ceil_div(_span(p, pack), cfg.threads * pack) * pack
        return cfg.threads <= 32 and per <= _elems_limit(ctx, row_cached, WARP_ELEMS_MAX) and \
            per * n_row <= 2 * REG_BUDGET
    if cfg.tier == "block":
        per = ix.ceil_div(_span(p, pack), cfg.threads * pack) * pack
        return per <= _elems_limit(ctx, row_cached, REG_ELEMS) and per * n_row <= REG_BUDGET
    if cfg.tier == "smem":
        return _cache_bytes(ctx, row_cached, _span(p, pack)) <= SMEM_LIMIT
    return True


def generate(ctx: KernelContext, config: RowConfig | None = None) -> KernelCode:
    p, row_v, col_v, full, canonical, row_cached, col_cached = _setup(ctx)
    g = ctx.graph
    cfg = config if config is not None and _fits(ctx, p, row_cached, col_cached, config) \
        else _heuristic(ctx, p, row_cached, col_cached)
    layout = _layout(ctx, p, row_cached, col_cached, cfg)
    index_t = ctx.index_type(p.rows * max(p.cols, 1))
    accs = {r: accumulator(g, r, ctx.names) for r in p.reduces}
    gen = _RowCode(ctx, p, layout, accs, full, row_v, canonical, ix.Affine.of(col_v))
    body, grid, block, smem = gen.kernel()
    min_blocks = 1
    if isinstance(block, tuple):
        block, min_blocks = block
    passes = max(p.levels.values(), default=0)
    elems = layout.packs * layout.pack
    row_bytes = sum(p.cols * g.nodes[n].dtype.itemsize for n in row_cached)
    backward = ", every second one from the row's end" if passes + bool(p.full_out) > 1 else ""
    what = {"warp": (f"warp tier: {layout.threads} lanes per row, {elems} elements per lane in registers"
                     if p.stride == 1 else f"a thread per row, its {elems} elements in registers"),
            "block": f"block tier: a block of {layout.threads} threads per row, {elems} elements per thread "
                     "in registers",
            "smem": f"block tier: a block per row, the row ({row_bytes} bytes) in shared memory",
            "looped": f"looped tier: a block per row, re-read from global memory in each of "
                      f"{passes + bool(p.full_out)} passes{backward}",
            "thread": f"thread tier: a thread per row, re-read from memory in each of "
                      f"{passes + bool(p.full_out)} passes",
            "slab": f"re-read in each of {passes + bool(p.full_out)} passes{backward}",
            "slab-smem": "the slab in shared memory"}[layout.tier]
    if layout.slab:
        what = (f"slab tier: a block per slab of {layout.slab.width} adjacent rows, "
                f"{layout.slab.stripes} threads a row, {what}")
    if layout.staged:
        what += f", the block's {layout.staged} rows read and written through shared memory (staged tier)"
    if p.stride > 1:
        what += f"; rows along axis {p.axis}, their columns {p.stride} elements apart, adjacent rows on adjacent threads"
        if layout.slab:
            what += f", a row's columns {layout.slab.stripes} threads apart"
    notes = (what, f"{passes} reduction pass(es)" + (" + an output pass" if p.full_out else ""),
             f"packs of {layout.pack} columns"
             + (f", aligned to memory: a row starts up to {layout.pack - 1} columns into its first pack"
                if layout.aligned else "")
             + (", column inputs cached in registers" if layout.col_in_registers and col_cached else ""))
    header = [f"{ctx.name}: row kernel over {g.nodes[g.nodes[p.reduces[0]].inputs[0]].aval} "
              f"({p.rows} rows x {p.cols} columns)", *ctx.listing(), *notes]
    helpers = [f"typedef {index_t} index_t;", ""]
    return ctx.finish(header, helpers, body, grid, block, shared_mem=smem, notes=notes, min_blocks=min_blocks,
                      config=cfg)


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _analyse(ctx: KernelContext) -> _Row:
    """The row problem as legality found it (Kernel.space): full shape F, rows, the
    reductions and their passes; outputs of shape F are stored per element, the others
    (legality allows only per-row values) once per row. The Numba backend reads it too."""
    space = kernel_space(ctx.graph, ctx.kernel, ctx.name)
    shape = space.shape
    full_out = [o for o in ctx.kernel.outputs if ctx.graph.nodes[o].shape == shape]
    row_out = [o for o in ctx.kernel.outputs if ctx.graph.nodes[o].shape != shape]
    rs = row_shapes(shape, space.axes[0])
    return _Row(shape, space.rows, rs.cols, rs.axis, rs.stride, list(space.reduces),
                dict(zip(space.reduces, space.levels)), full_out, row_out)


def _cached_inputs(ctx: KernelContext, p: _Row, full, canonical: ix.Affine,
                   column: ix.Affine) -> tuple[list[int], list[int]]:
    """Inputs the passes read at (row, col) of their own contiguous layout (the row
    cache), and inputs read at (col) alone (the column cache)."""
    rows: list[int] = []
    cols: list[int] = []

    def probe(nid: int, offset: ix.Affine) -> str:
        if offset == canonical and nid not in rows:
            rows.append(nid)
        elif offset == column and nid not in cols and p.cols > 1:
            cols.append(nid)
        return "0"

    em = ValueEmitter(ctx.graph, ctx.kernel.nodes, ctx.kernel.inputs, ctx.options, Names(),
                      probe, fixed={r: "0" for r in p.reduces})
    for r in p.reduces:
        em.value(ctx.graph.nodes[r].inputs[0], full)
    for o in p.full_out:
        em.value(o, full)
    return rows, [c for c in cols if c not in rows]


def _pack(ctx: KernelContext, p: "_Row", row_cached: list[int], col_cached: list[int]) -> int:
    """Columns per access: 16 bytes of the widest cached or stored type. A row whose
    width is not a multiple of that has packs aligned to memory (`_aligned`), or, when
    too short for them, packs of the widest narrower power of two that divides C (every
    row then starts on a pack)."""
    if p.stride > 1:
        return 1
    pack = _vector_pack(ctx, p, row_cached, col_cached)
    if _aligned_packs(p, pack):
        return pack
    while p.cols % pack:
        pack //= 2
    return pack


def _vector_pack(ctx: KernelContext, p: "_Row", row_cached: list[int], col_cached: list[int]) -> int:
    """Columns of one 16-byte access of the widest cached or stored type."""
    sizes = [ctx.graph.nodes[n].dtype.itemsize for n in (*row_cached, *col_cached, *p.full_out)] or [4]
    return 16 // max(sizes)


def _aligned_packs(p: "_Row", pack: int) -> bool:
    """Whether contiguous rows of `pack`-column accesses start off a pack boundary and
    are long enough for packs aligned to memory (their columns fit an int)."""
    return (p.stride == 1 and pack > 1 and p.cols % pack != 0 and p.cols >= ALIGNED_MIN_PACKS * pack
            and p.cols < 2 ** 31 - 64)


def _span(p: "_Row", pack: int) -> int:
    """The columns a row's packs cover: C, or with packs aligned to memory up to pack - 1
    more (the row's first element up to pack - 1 columns into its first pack)."""
    return p.cols + pack - 1 if _aligned_packs(p, pack) else p.cols


def _warp_lanes(p: "_Row", pack: int) -> int:
    """The warp tier's lanes a row: a lane per column pack; rows of fewer than 32 odd
    columns (no packs) a few columns a lane: 3 columns on 4 lanes ran a softmax at 50% of
    copy on the H200."""
    return min(32, _pow2_at_least(ix.ceil_div(_span(p, pack), pack if pack > 1 or p.cols >= 32 else 4)))


def _heuristic(ctx: KernelContext, p: "_Row", row_cached: list[int], col_cached: list[int]) -> RowConfig:
    """A warp per row up to 1024 columns (32 elements a lane); then the row in a block's
    registers (32 elements a thread, 128-512 threads); then in shared memory; then a
    looped block that re-reads the row in each pass. `row_tier` forces a tier.

    Measured on an H200 (benchmarks/sweep.py, 2026-12-01, 2^26 float32, all candidates
    timed): registers beat shared memory 1.84x for softmax over rows of 2048, 1.43x at
    4096, 1.12x at 8192, and 1.3x for layernorm at 4096; shared memory wins only where
    the row no longer fits registers (32768: 1024 threads, 1.10x over 512)."""
    g = ctx.graph
    C = p.cols
    pack = _pack(ctx, p, row_cached, col_cached)
    forced = ctx.options.row_tier
    row_bytes = _cache_bytes(ctx, row_cached, _span(p, pack))
    span = _span(p, pack)
    lanes = _warp_lanes(p, pack)
    packs = ix.ceil_div(span, lanes * pack)
    why = f"forced by row_tier={forced}" if forced != "auto" else "heuristic"
    per_thread = _elems_limit(ctx, row_cached, REG_ELEMS)
    if p.stride > 1:
        rs = row_shapes(p.shape, p.axis)
        if forced in SLAB_TIERS or (forced == "auto" and strided_layout(rs) == "slab"):
            # a big slab (160 KiB of float16: one block an SM) has the most loads in flight
            # with the most threads
            threads = 1024 if forced == "auto" and p.cols * min(p.stride, SLAB_INNER) >= 64 * 1024 else 512
            while threads > 128 and _scratch_bytes(ctx, p, threads) > SLAB_SCRATCH_LIMIT:
                threads //= 2
            def slab(tier: str, how: str) -> RowConfig:
                width = _slab(ctx, p, threads, _slab_cached_bytes(ctx, p, row_cached, tier)).width
                return RowConfig(tier=tier, threads=threads, why=f"{why}: a block per slab of {width} adjacent rows, {how}")
            cached = slab("slab-smem", "kept in shared memory")
            if forced != "slab" and _fits(ctx, p, row_cached, col_cached, cached):
                return cached
            return slab("slab", "re-read in every pass")
        staged = RowConfig(tier="staged", threads=1, why=f"{why}: strided rows of {C} columns, {p.stride} elements "
                                                        "apart, through shared memory")
        if forced == "staged" and _fits(ctx, p, row_cached, col_cached, staged):
            return staged
        kept = RowConfig(tier="warp", threads=1, why=f"{why}: strided rows of {C} columns fit a thread's registers")
        if forced != "thread" and _fits(ctx, p, row_cached, col_cached, kept):   # others do not apply
            return kept
        return RowConfig(tier="thread", threads=1, why=f"{why}: strided rows, a thread each, re-read in each pass")
    staged = RowConfig(tier="staged", threads=1, why=f"{why}: contiguous rows of {C} columns through shared memory")
    if forced == "staged" and _fits(ctx, p, row_cached, col_cached, staged):
        return staged
    if forced == "auto" and _stage_by_default(ctx, p, row_cached, col_cached) and \
            _fits(ctx, p, row_cached, col_cached, staged):
        return replace(staged, why=f"{staged.why}, 16-byte vectors whatever the rows' alignment")
    if C <= WARP_MAX_COLS and packs * pack <= per_thread and forced in ("auto", "warp"):
        return RowConfig(tier="warp", threads=lanes, why=f"{why}: {C} columns fit a warp's registers")
    threads = min(512, max(128, _pow2_at_least(ix.ceil_div(C, per_thread))))
    block = RowConfig(tier="block", threads=threads, why=f"{why}: the row fits a block's registers")
    wide = any(g.nodes[n].dtype.itemsize > 4 for n in row_cached)
    if forced in ("auto", "block") and _fits(ctx, p, row_cached, col_cached, block) and \
            (not wide or forced == "block"):   # float64 rows spill in registers: shared memory
        return block
    if row_bytes <= SMEM_LIMIT and forced in ("auto", "smem"):
        # float64 at 512 threads spilled (ptxas, layernorm over 1030 and 5000 columns)
        threads = 1024 if row_bytes > 64 * 1024 else (256 if wide else SMEM_THREADS)
        return RowConfig(tier="smem", threads=threads, why=f"{why}: the row ({row_bytes} bytes) fits shared memory")
    if forced != "looped" and _fits(ctx, p, row_cached, col_cached, block):
        return block
    return RowConfig(tier="looped", threads=SMEM_THREADS, why=f"{why}: the row is too long to keep on chip")


def _layout(ctx: KernelContext, p: "_Row", row_cached: list[int], col_cached: list[int], cfg: RowConfig) -> _Layout:
    C = p.cols
    pack = _pack(ctx, p, row_cached, col_cached)
    n_row, n_col = max(len(row_cached), 1), len(col_cached)
    # at least one pack: a row of no columns still declares its (unused) caches
    aligned = _aligned_packs(p, pack) and cfg.tier in ("warp", "block", "smem", "looped")
    packs = max(1, ix.ceil_div(_span(p, pack), cfg.threads * pack)) if cfg.tier in ("warp", "block", "smem") else 0
    # a warp works through many rows: caching the column inputs pays off (not where each
    # row's packs start at another column)
    col_regs = cfg.tier == "warp" and packs * pack * (n_row + n_col) <= REG_BUDGET and not aligned
    slab = _slab(ctx, p, cfg.threads, _slab_cached_bytes(ctx, p, row_cached, cfg.tier)) \
        if cfg.tier in SLAB_TIERS else None
    if cfg.tier == "staged" and p.stride == 1:   # a thread a row, its columns one at a time from the stage
        return _Layout("warp", 1, 1, max(1, C), row_cached, col_cached, C * (n_row + n_col) <= REG_BUDGET,
                       staged=_staged_threads(ctx, p, row_cached))
    if cfg.tier == "staged":   # the warp tier's layout, its row cache filled from and outputs sent through stages
        return replace(_layout(ctx, p, row_cached, col_cached, RowConfig(tier="warp", threads=1)),
                       staged=_staged_threads(ctx, p, row_cached))
    return _Layout(cfg.tier, pack, slab.threads if slab else cfg.threads, packs, row_cached, col_cached, col_regs,
                   slab, aligned=aligned)


class _RowCode:
    """Writes the kernel body for one layout."""

    def __init__(self, ctx: KernelContext, p: _Row, layout: _Layout, accs: dict[int, Accumulator], full,
                 row_v: ix.Var, canonical: ix.Affine, column: ix.Affine) -> None:
        self.ctx, self.p, self.lay, self.accs = ctx, p, layout, accs
        self.full, self.row_v, self.canonical, self.column = full, row_v, canonical, column
        g = ctx.graph
        self.registers = layout.tier in ("warp", "block")
        self.cache_name = {n: ctx.names.fresh(f"{array_name(g, n)}_row") for n in layout.row_cached}
        self.col_name = {n: ctx.names.fresh(f"{array_name(g, n)}_cols") for n in layout.col_cached}
        # the staged tier's buffers: the block's rows of each row-cached input and full-shape output
        self.stage_name = {n: ctx.names.fresh(f"{array_name(g, n)}_stage")
                           for n in (*layout.row_cached, *p.full_out)} if layout.staged else {}
        self.pack_name: dict[int, str] = {}
        self.fixed: dict[int, str] = {}        # node -> the row's value, computed once a row
        self.fixed_half: dict[int, str] = {}   # ... and its float16 bits, for float16 nodes
        # values computed in one pass and read again in a later one, kept in registers:
        # node -> (array name, the pass that computes them, held as float16 bits)
        self.carry: dict[int, tuple[str, int | None, bool]] = (
            self._plan_carry() if self.registers else self._plan_slab_carry() if layout.tier == "slab-smem" else {})

    # -- values carried between passes ------------------------------------------
    def _passes(self) -> list[int | None]:
        return list(range(1, max(self.p.levels.values()) + 1)) + ([None] if self.p.full_out else [])

    def _visit(self, level: int | None, carried: set[int]) -> tuple[set[int], set[int], set[int]]:
        """A dry run of one pass: the nodes it computes, the carried ones it reads, and
        the inputs it reads at this row's own elements."""
        g = self.ctx.graph
        loads: set[int] = set()

        def load(nid: int, offset: ix.Affine) -> str:
            if offset == self.canonical:
                loads.add(nid)
            return "0"

        def load_half(nid: int, offset: ix.Affine) -> str:
            load(nid, offset)
            return "h"

        fixed = {r: "0" for r in self.p.reduces} | {c: "0" for c in carried}
        em = ValueEmitter(g, self.ctx.kernel.nodes, self.ctx.kernel.inputs, self.ctx.options, Names(),
                          load, fixed, fixed_half={c: "h" for c in carried}, load_half=load_half)
        if level is None:
            for o in self.p.full_out:
                em.stored(o, self.full)
        else:
            for r, lvl in self.p.levels.items():
                if lvl == level:
                    em.value(g.nodes[r].inputs[0], self.full)
        return {nid for nid, _ in em.lines if nid >= 0}, em.used_fixed & carried, loads

    def _recomputed(self) -> tuple[dict[int, int], list[int]]:
        """The first pass (its index in _passes) that computes each node, and the
        full-shape element-wise nodes a later pass would compute again, in order."""
        g = self.ctx.graph
        first: dict[int, int] = {}
        wanted: list[int] = []
        for k, level in enumerate(self._passes()):
            for n in sorted(self._visit(level, set())[0]):
                nd = g.nodes[n]
                if n not in first:
                    first[n] = k
                elif n not in wanted and nd.kind is Kind.ELEMWISE and nd.shape == self.p.shape:
                    wanted.append(n)
        return first, wanted

    def _plan_carry(self) -> dict[int, tuple[str, int | None, bool]]:
        """Element-wise values of the row that a later pass would compute again (softmax's
        exp(x - max) in its output pass), kept in registers when they fit: the later pass
        reads them instead of repeating the arithmetic (and, for float16, the
        conversions, which cost as much as the loads)."""
        g, lay = self.ctx.graph, self.lay
        passes = self._passes()
        first, wanted = self._recomputed()
        if not wanted:
            return {}
        # only what later passes still read once the others are carried too
        read: set[int] = set()
        for level in passes:
            read |= self._visit(level, set(wanted))[1]
        elems = lay.packs * lay.pack
        # 32-bit registers a thread may spend on caches: a warp tier's 96 leave room below
        # 255 (float64 softmax over 1024 columns spilled at 128); a block tier's limit is
        # 65536 shared by the blocks it asks per SM, and every thread needs some 32 more
        budget = 96 if lay.tier == "warp" else min(96, 65536 // (self._min_blocks() * lay.threads) - 32)
        used = sum(elems * max(1, g.nodes[n].dtype.itemsize // 4) for n in lay.row_cached)
        used += sum(elems for _ in lay.col_cached) if lay.col_in_registers else 0
        out: dict[int, tuple[str, int | None, bool]] = {}
        for n in wanted:
            if n not in read:
                continue
            half = is_half(g.nodes[n].dtype) and self.ctx.options.fp16_math == "numpy"
            regs = elems // 2 if half else elems * max(1, g.nodes[n].dtype.itemsize // 4)
            if used + regs > budget:
                continue
            used += regs
            out[n] = (self.ctx.names.fresh(f"v{n}_kept"), passes[first[n]], half)
        return out

    def _plan_slab_carry(self) -> dict[int, tuple[str, int | None, bool]]:
        """The slab tier's carry: a value a later pass would compute again (softmax's
        exp(x - max)) written over the shared-memory copy of an input that no pass after
        it reads (x), where both have the same storage type. A thread's slots are its own,
        and the value is written after the pass has read the input there."""
        g, ctx = self.ctx.graph, self.ctx
        passes = self._passes()
        computed_in, wanted = self._recomputed()
        out: dict[int, tuple[str, int | None, bool]] = {}
        taken: set[int] = set()
        for n in reversed(wanted):   # the last of a chain first: it saves the most
            half = is_half(g.nodes[n].dtype) and ctx.options.fp16_math == "numpy"
            ctype = "fl_half" if half else register_type(g.nodes[n].dtype)
            born = computed_in[n]
            carried = set(out) | {n}
            for x in self.lay.row_cached:
                if x in taken or storage_type(g.nodes[x].dtype) != ctype:
                    continue
                if any(x in self._visit(level, carried)[2] for level in passes[born + 1:]):
                    continue
                out[n] = (self.cache_name[x], passes[born], half)
                taken.add(x)
                break
        return out

    def _min_blocks(self) -> int:
        """Blocks per SM a block tier asks the compiler to fit (its register limit)."""
        g = self.ctx.graph
        wide = any(g.nodes[n].dtype.itemsize > 4 for n in (*self.lay.row_cached, *self.p.full_out))
        return 1 if wide else 2

    def _carry_type(self, n: int) -> str:
        _, _, half = self.carry[n]
        t = "fl_half" if half else register_type(self.ctx.graph.nodes[n].dtype)
        return f"fl_vec<{t}, {self.lay.pack}>" if self.lay.pack > 1 else t

    def _carry_elem(self, n: int) -> str:
        name = self.carry[n][0]
        if self.lay.tier == "slab-smem":   # in place of an input's shared-memory copy
            return f"{name}[col0 * {self.lay.slab.width} + il]"
        return f"{name}[k].v[p]" if self.lay.pack > 1 else f"{name}[k]"

    # -- values ---------------------------------------------------------------
    def _emitter(self, level: int | None = 0) -> ValueEmitter:
        ctx = self.ctx
        holder: list[ValueEmitter] = []
        seen: dict[tuple[int, ix.Affine], str] = {}

        def load_half(nid: int, offset: ix.Affine) -> str | None:
            """This thread's element of a cached pack, as stored; None if not cached."""
            # a cached pack holds the element at its own kind of offset only: a row-cached
            # input read at the column offset (x[0] / x: row 0 of x) is another element
            cached_at = self.canonical if nid in self.cache_name else self.column
            if nid in self.pack_name and offset == cached_at:
                return f"{self.pack_name[nid]}.v[p]" if self.lay.pack > 1 else self.pack_name[nid]
            return None

        def load(nid: int, offset: ix.Affine) -> str:
            n = ctx.graph.nodes[nid]
            if (v := load_half(nid, offset)) is not None:
                return f"fl_from_half({v})" if is_half(n.dtype) else v
            key = (nid, offset)
            if key not in seen:
                name = ctx.names.fresh(array_name(ctx.graph, nid))
                holder[0].emit(f"const {register_type(n.dtype)} {name} = "
                               f"{load_expr(ctx.in_ptr[nid], n.dtype, ix.render(offset))};")
                seen[key] = name
            return seen[key]

        fixed, fixed_half = dict(self.fixed), dict(self.fixed_half)
        passes = self._passes()
        here = passes.index(level) if level in passes else -1
        for n, (_, born, half) in self.carry.items():
            if here > passes.index(born):    # computed by an earlier pass: read it back
                if half:
                    fixed_half[n] = self._carry_elem(n)
                    fixed[n] = f"fl_from_half({self._carry_elem(n)})"
                else:
                    fixed[n] = self._carry_elem(n)
        em = ValueEmitter(ctx.graph, ctx.kernel.nodes, ctx.kernel.inputs, ctx.options, ctx.names, load,
                          fixed, load_half=load_half, fixed_half=fixed_half)
        holder.append(em)
        return em

    def _pack_type(self, nid: int) -> str:
        st = storage_type(self.ctx.graph.nodes[nid].dtype)
        return f"fl_vec<{st}, {self.lay.pack}>" if self.lay.pack > 1 else st

    def _global_pack(self, nid: int, offset: str) -> str:
        ptr = self.ctx.in_ptr[nid]
        return f"fl_load_vec<{self.lay.pack}>({ptr} + {offset})" if self.lay.pack > 1 else f"{ptr}[{offset}]"

    def _row_pack(self, nid: int) -> str:
        """This row's pack of a full-shape input at column col0 from global memory: with
        packs aligned to memory, one aligned access inside the row, guarded element by
        element at its ends."""
        if self.lay.aligned:
            return f"fl_load_vec_in<{self.lay.pack}>({self.ctx.in_ptr[nid]} + row * {self.p.cols}, col0, {self.p.cols})"
        return self._global_pack(nid, self._at("col0"))

    def _column_pack(self, nid: int) -> str:
        """The pack of an input read at the column alone (layernorm's gamma): with packs
        aligned to this row's memory, an element at a time (its columns start off a pack)."""
        if self.lay.aligned:
            return f"fl_load_elems_in<{self.lay.pack}>({self.ctx.in_ptr[nid]}, col0, {self.p.cols})"
        return self._global_pack(nid, "col0")

    def _col0(self, first: str) -> str:
        """Declare col0, the first column of this thread's pack number `first`: signed and
        `shift` columns earlier where the packs follow memory."""
        if self.lay.aligned:
            return f"const int col0 = int({first}) * {self.lay.pack} - shift;"
        return f"const index_t col0 = ({first}) * {self.lay.pack};"

    def _smem_at(self) -> str:
        """The shared-memory row cache's index of column col0 (aligned packs: shifted to
        its pack boundary)."""
        return "col0 + shift" if self.lay.aligned else "col0"

    def _pack_source(self, nid: int) -> str:
        """Where this thread's pack of `nid` at column col0 comes from in this layout."""
        if nid in self.col_name:
            return f"{self.col_name[nid]}[k]" if self.lay.col_in_registers else self._column_pack(nid)
        if self.registers:
            return f"{self.cache_name[nid]}[k]"
        if self.lay.tier == "slab-smem":
            return f"{self.cache_name[nid]}[col0 * {self.lay.slab.width} + il]"
        if self.lay.tier == "smem":
            if self.lay.pack > 1:
                return f"*reinterpret_cast<const {self._pack_type(nid)}*>({self.cache_name[nid]} + {self._smem_at()})"
            return f"{self.cache_name[nid]}[col0]"
        return self._row_pack(nid)

    def _at(self, col: str) -> str:
        """The offset of this row's element at column `col` in a full-shape array."""
        if self.p.stride > 1:
            return f"row_base + {col} * {self.p.stride}"
        return f"row * {self.p.cols} + {col}"

    # -- passes -----------------------------------------------------------------
    def _pass(self, level: int | None) -> list[str]:
        """One pass over this thread's columns of the row: fold the reductions of
        `level`, or (level None) compute and store the full-shape outputs."""
        g = self.ctx.graph
        P = self.lay.pack
        em = self._emitter(level)
        cached = [*self.lay.row_cached, *self.lay.col_cached]
        self.pack_name = {n: self.ctx.names.fresh(f"{array_name(g, n)}_pk" if P > 1 else array_name(g, n))
                          for n in cached}
        C = self.p.cols
        if self.lay.aligned:   # a partial pack's columns outside the row: loads clamped, folds skipped
            column = [f"const bool in_row = col0 + p >= 0 && col0 + p < {C};",
                      "const index_t col = in_row ? index_t(col0 + p) : 0;"]
        else:
            column = ["const index_t col = col0 + p;"] if P > 1 else ["const index_t col = col0;"]
        body: list[str] = []
        store_vecs: dict[int, str] = {}
        packed: list[str] = []   # folds of whole packs, before the loop over a pack's columns
        if level is not None:
            for r, lvl in self.p.levels.items():
                if lvl != level:
                    continue
                if self._half_pick_packed(r):
                    t = self.ctx.names.fresh(f"pk{r}")
                    packed += [f"const float {t} = fl_hpick_pack<{str(g.nodes[r].op == 'max').lower()}, {P}>"
                               f"({self.pack_name[g.nodes[r].inputs[0]]});", self.accs[r].step(t, "col0")]
                    continue
                v = em.value(g.nodes[r].inputs[0], self.full)
                step = self.accs[r].step(v, "col")
                body += em.take_lines() + [_Fold(step) if self.lay.aligned else step]
            for n, (_, born, half) in self.carry.items():   # keep what later passes read
                if born == level:
                    v = em.half_value(n, self.full) if half else em.value(n, self.full)
                    body += em.take_lines() + [f"{self._carry_elem(n)} = {v};"]
        else:
            for o in self.p.full_out:
                v = em.stored(o, self.full)
                body += em.take_lines()
                if P > 1:
                    store_vecs[o] = self.ctx.names.fresh(f"{array_name(g, o)}_pk")
                    body.append(f"{store_vecs[o]}.v[p] = {v};")
                elif self.stage_name:
                    body.append(f"{self.stage_name[o]}[{self._at('col')} - stage_base] = {v};")
                else:
                    body.append(f"{self.ctx.out_ptr[o]}[{self._at('col')}] = {v};")
        # the column index is only needed by argmax, strided loads and the guards
        edge = [f"if (in_row) {{ {line} }}" if isinstance(line, _Fold) else line for line in body]
        if any(re.search(r"\b(col|in_row)\b", line) for line in edge):
            edge = column + edge
        used = [n for n in cached if any(re.search(rf"\b{self.pack_name[n]}\b", line) for line in edge + packed)]
        head = [f"const {self._pack_type(n)} {self.pack_name[n]} = {self._pack_source(n)};" for n in used]
        head += [f"fl_vec<{storage_type(g.nodes[o].dtype)}, {P}> {name};" for o, name in store_vecs.items()]
        head += packed
        over = lambda lines: ["#pragma unroll", f"for (int p = 0; p < {P}; ++p) {{", *indent(lines, 1), "}"]  # noqa: E731
        inner = over(edge) if P > 1 and edge else edge
        if any(isinstance(line, _Fold) for line in body) and P > 1 and self.lay.tier != "warp":
            # Only a row's first and last packs overhang it: the others fold every column
            # untested. Not in the warp tier, whose every warp holds its rows' ends, so
            # the two paths diverge in each warp and it runs both: its kernels ran 1-18%
            # slower so (H100, 2026-12-05, kernel_ab.py: float16 moments over 148
            # columns 65.1 -> 69.2 us at 8 lanes, 92.0 -> 108.3 at 16), while a block's
            # warps lie wholly inside the row but for the two at its ends.
            whole = ["const index_t col = index_t(col0 + p);", *map(str, body)]
            inner = [f"if (col0 >= 0 && col0 + {P} <= {C}) {{", *indent(over(whole), 1),
                     "} else {", *indent(inner, 1), "}"]
        tail = [f"fl_store_vec_in<{P}>({self.ctx.out_ptr[o]} + row * {C}, col0, {C}, {name});" if self.lay.aligned
                else f"fl_store_vec<{P}>({self.ctx.out_ptr[o]} + {self._at('col0')}, {name});"
                for o, name in store_vecs.items()]
        # the packs are declared inside this pass's loop: code after it (a row's values,
        # its one-per-row outputs) must load what it reads itself (rows of one column read
        # an input at the pack's own offset: it named a pack out of its scope)
        self.pack_name = {}
        ordinal = (level if level is not None else max(self.p.levels.values()) + 1) - 1
        # not where a variance of few elements folds its plain sum in order (NumPy's mean)
        ordered = level is not None and any(a.few for r, a in self.accs.items() if self.p.levels[r] == level)
        return self._over_columns(head + inner + tail, storing=level is None,
                                  backward=ordinal % 2 == 1 and not ordered)

    def _half_pick_packed(self, r: int) -> bool:
        """Whether reduction `r` folds whole packs of halves (fl_hpick_pack): a max or min
        of a float16 input the row caches, in packs of pairs, with NumPy's float16 math."""
        g = self.ctx.graph
        nd = g.nodes[r]
        x = nd.inputs[0]
        return (nd.op in ("max", "min") and self.lay.pack % 2 == 0 and x in self.lay.row_cached
                and not self.lay.aligned   # a partial pack's zeros outside the row would take part
                and is_half(g.nodes[x].dtype) and self.accs[r].value_type == "float"
                and self.ctx.options.fp16_math == "numpy")

    def _over_columns(self, body: list[str], storing: bool, backward: bool = False) -> list[str]:
        """The loop over this thread's packs of the row. The tiers that re-read the row
        from global memory in each pass (looped, slab) run their `backward` passes (every
        second one) from the row's end: the lines a pass read last are the likeliest
        still in L2 when the next one starts, where a pass in the same direction would
        start at the row's first lines, read longest ago."""
        C, P = self.p.cols, self.lay.pack
        if self.registers:
            guard = f"active && col0 < {C}" if storing and self.lay.tier == "warp" else f"col0 < {C}"
            return ["#pragma unroll",
                    f"for (int k = 0; k < {self.lay.packs}; ++k) {{",
                    f"    {self._col0(f'index_t(k) * {self.lay.threads} + lane')}",
                    f"    if ({guard}) {{", *indent(body, 2), "    }", "}"]
        if self.lay.tier in ("thread", *SLAB_TIERS):   # threads past the last row compute a copy, store nothing
            first, step = ("stripe", self.lay.slab.stripes) if self.lay.slab else ("0", 1)
            # a slab's thread has loads of several columns in flight at once
            loop = (["#pragma unroll 4"] if self.lay.slab else []) + [
                f"for (index_t col0 = {first}; col0 < {C}; col0 += {step}) {{", *indent(body, 1), "}"]
            if backward and self.lay.tier == "slab":   # re-read from global memory, as the looped tier
                loop = ["#pragma unroll 4",
                        f"for (index_t k = {first} < {C} ? ({C - 1} - {first}) / {step} + 1 : 0; k > 0; --k) {{",
                        f"    const index_t col0 = {first} + (k - 1) * {step};", *indent(body, 1), "}"]
            return ["if (active) {", *indent(loop, 1), "}"] if storing else loop
        if backward and self.lay.tier == "looped":
            span = self.lay.threads * P
            return [f"for (index_t chunk = {ix.ceil_div(_span(self.p, P), span)}; chunk > 0; --chunk) {{",
                    f"    {self._col0(f'(chunk - 1) * {self.lay.threads} + threadIdx.x')}",
                    f"    if (col0 < {C}) {{", *indent(body, 2), "    }", "}"]
        if self.lay.aligned:
            return [f"for (int col0 = int(threadIdx.x) * {P} - shift; col0 < {C}; col0 += int(blockDim.x) * {P}) {{",
                    *indent(body, 1), "}"]
        return [f"for (index_t col0 = threadIdx.x * {P}; col0 < {C}; col0 += blockDim.x * {P}) {{",
                *indent(body, 1), "}"]

    def _register_cache(self, names: dict[int, str], offset: str) -> list[str]:
        """Declare and fill register caches: packs k of this thread's columns."""
        if not names:
            return []
        out = [f"{self._pack_type(n)} {name}[{self.lay.packs}];" for n, name in names.items()]
        row = names is self.cache_name
        body = [f"if (col0 < {self.p.cols}) {name}[k] = "
                + (f"{self.stage_name[n]}[{offset} - stage_base];" if row and self.stage_name
                   else f"{self._row_pack(n)};" if row and self.lay.aligned
                   else f"{self._global_pack(n, offset)};") for n, name in names.items()]
        return out + ["#pragma unroll", f"for (int k = 0; k < {self.lay.packs}; ++k) {{",
                      f"    {self._col0(f'index_t(k) * {self.lay.threads} + lane')}",
                      *indent(body, 1), "}"]

    def _load_row(self) -> list[str]:
        """Fill the row cache from global memory (registers or shared memory)."""
        C, P = self.p.cols, self.lay.pack
        if self.registers:
            return self._register_cache(self.cache_name, self._at("col0"))
        if self.lay.tier == "slab-smem":
            # the slab's rows side by side, as in memory when the slab takes all of them
            Sb, S, T = self.lay.slab.width, self.p.stride, self.lay.threads
            out = ["__syncthreads();  // the previous slab's readers are done"]
            for n in self.lay.row_cached:
                cache, ptr = self.cache_name[n], self.ctx.in_ptr[n]
                if Sb == S:   # one contiguous run: 16-byte loads where its length allows
                    st = storage_type(self.ctx.graph.nodes[n].dtype)
                    v = 16 // ctype_size(st)
                    while (C * S) % v:
                        v //= 2
                    move = (f"*reinterpret_cast<fl_vec<{st}, {v}>*>({cache} + e) = fl_load_vec<{v}>({ptr} + slab_base + e);"
                            if v > 1 else f"{cache}[e] = {ptr}[slab_base + e];")
                    out += ["#pragma unroll 4", f"for (index_t e = threadIdx.x * {v}; e < {C * S}; e += {T * v}) {{",
                            f"    {move}", "}"]
                else:
                    out += ["#pragma unroll 4", f"for (index_t e = threadIdx.x; e < {C * Sb}; e += {T}) {{",
                            f"    if (slab_first + e % {Sb} < {S}) {cache}[e] = {ptr}[slab_base + e / {Sb} * {S} + e % {Sb}];",
                            "}"]
            return out + ["__syncthreads();"]
        if self.lay.tier == "smem":
            body = []
            for n in self.lay.row_cached:
                dst = (f"*reinterpret_cast<{self._pack_type(n)}*>({self.cache_name[n]} + {self._smem_at()})" if P > 1
                       else f"{self.cache_name[n]}[col0]")
                body.append(f"if (col0 < {C}) {dst} = {self._row_pack(n)};")
            # a fixed trip count, unrolled: the row's loads are all in flight at once (up to
            # SMEM_FILL_UNROLL of them: a fully unrolled fill of 377 packs held 168 registers
            # and took NVRTC 1.9 s, for a kernel 5x slower than the heuristic's)
            unroll = "" if self.lay.packs <= SMEM_FILL_UNROLL else f" {SMEM_FILL_UNROLL}"
            return [f"#pragma unroll{unroll}",
                    f"for (int k = 0; k < {self.lay.packs}; ++k) {{",
                    f"    {self._col0(f'index_t(k) * {self.lay.threads} + threadIdx.x')}",
                    *indent(body, 1), "}", "__syncthreads();"]
        return []

    def _after_pass(self, level: int) -> list[str]:
        """Combine this pass's partial reductions across the row's threads; every thread
        then holds the row's values."""
        out: list[str] = []
        for r, lvl in self.p.levels.items():
            if lvl != level:
                continue
            a = self.accs[r]
            if self.lay.slab:
                out += a.group_allreduce(self.lay.slab.width, self.lay.slab.stripes)
            else:
                out += a.warp_allreduce(self.lay.threads) if self.lay.tier in ("warp", "thread") else a.block_allreduce()
            name = self.ctx.names.fresh(f"v{r}")
            out.append(f"const {register_type(a.out_dtype)} {name} = {a.result()};"
                       f"  // %{r} {self.ctx.graph.nodes[r].op} of the row")
            self.fixed[r] = name
            if is_half(a.out_dtype) and self.ctx.options.fp16_math == "numpy":   # its bits, once a row too
                self.fixed_half[r] = self.ctx.names.fresh(f"{name}_h")
                out.append(f"const fl_half {self.fixed_half[r]} = fl_to_half({name});")
        return out + self._row_values()

    def _row_values(self) -> list[str]:
        """Elementwise values of the row's reductions and constants alone (layernorm's
        sqrt(var + eps), a mean cast to float16), computed once a row. In the element
        loop the compiler did not hoist them where they call inline PTX or IEEE sqrt's
        slow path: a float16 layernorm over 4096 columns computed its sqrt 32 times a
        thread a row. Same operations on the same values: the same bits. Not for 8-byte
        values: their division and sqrt call a slow path, and around a call at the row's
        level ptxas spilled the row cached in registers (float64 layernorm, 7 columns)."""
        g, half_math = self.ctx.graph, self.ctx.options.fp16_math == "numpy"
        em = self._emitter()
        out: list[str] = []
        for n in sorted(self.ctx.kernel.nodes):
            nd = g.nodes[n]
            if n in self.fixed or nd.kind is not Kind.ELEMWISE or nd.dtype.itemsize > 4:
                continue
            inputs = [g.nodes[i] for i in nd.inputs]
            if not any(i in self.fixed for i in nd.inputs) or \
                    not all(i in self.fixed or x.op == "const" for i, x in zip(nd.inputs, inputs)):
                continue
            value = em.value(n, self.full)
            bits = em.half_value(n, self.full) if is_half(nd.dtype) and half_math else None
            out += em.take_lines()
            self.fixed[n] = em.fixed[n] = value
            if bits is not None:
                self.fixed_half[n] = em.fixed_half[n] = bits
        return out

    def _row_outputs(self) -> list[str]:
        g = self.ctx.graph
        if not self.p.row_out:
            return []
        em = self._emitter()
        lines = []
        for o in self.p.row_out:
            v = em.stored(o, ix.delinearize(ix.Affine.of(self.row_v), g.nodes[o].shape))
            lines += em.take_lines()
            lines.append(f"{self.ctx.out_ptr[o]}[row] = {v};")
        first = ("stripe == 0 && active" if self.lay.slab else
                 "lane == 0 && active" if self.lay.tier in ("warp", "thread") else "threadIdx.x == 0")
        return [f"if ({first}) {{", *indent(lines, 1), "}"]

    def _per_row(self) -> list[str]:
        S = self.p.stride
        lines = [f"const index_t row_base = row / {S} * {self.p.cols * S} + row % {S};"] if S > 1 else []
        if self.lay.aligned:   # the row's first element, (row * C) % P elements past a pack boundary
            P = self.lay.pack
            lines.append(f"const int shift = int(row % {P}) * {self.p.cols % P} % {P};")
        lines += self._load_row()
        if self.registers:
            lines += [f"{self._carry_type(n)} {name}[{self.lay.packs}];  // %{n}, kept for a later pass"
                      for n, (name, _, _) in self.carry.items()]
        for level in range(1, max(self.p.levels.values()) + 1):
            for r, lvl in self.p.levels.items():
                if lvl == level:
                    lines += self.accs[r].declare()
            lines += [f"// Pass {level}: " + ", ".join(
                f"%{r} {self.ctx.graph.nodes[r].op}" for r, lvl in self.p.levels.items() if lvl == level)]
            lines += self._pass(level)
            lines += self._after_pass(level)
        if self.p.full_out:
            lines += ["// Output pass: the full-shape results."]
            lines += self._pass(None)
        lines += self._row_outputs()
        return lines

    def _smem_caches(self, buffer: str, elems: int) -> tuple[list[str], int]:
        """Declare each row-cached input's `elems` elements in dynamic shared memory, at
        16-byte boundaries; the declarations and the bytes they take."""
        g = self.ctx.graph
        decls = [f"extern __shared__ __align__(16) unsigned char {buffer}[];"]
        for k, n in enumerate(self.lay.row_cached):
            st = storage_type(g.nodes[n].dtype)
            at = _cache_bytes(self.ctx, self.lay.row_cached[:k], elems)
            decls.append(f"{st}* {self.cache_name[n]} = reinterpret_cast<{st}*>({buffer} + {at});")
        return decls, _cache_bytes(self.ctx, self.lay.row_cached, elems)

    def _slab_kernel(self) -> tuple[list[str], int, int, int]:
        """A block per slab, slabs in a grid-stride loop; the loop is block-uniform, so
        every thread reaches the combines' barriers."""
        sl, S, C = self.lay.slab, self.p.stride, self.p.cols
        decls, smem = self._smem_caches("slab_cache", C * sl.width) if self.lay.tier == "slab-smem" else ([], 0)
        lines = decls + [f"const int il = threadIdx.x % {sl.width};   // this thread's row of the slab",
                         f"const int stripe = threadIdx.x / {sl.width};   // ... and its first column"]
        body = [f"const index_t slab_first = slab % {sl.chunks} * {sl.width};",
                f"const index_t slab_base = slab / {sl.chunks} * {C * S} + slab_first;",
                f"const bool active = slab_first + il < {S};",
                f"const index_t row = slab / {sl.chunks} * {S} + (active ? slab_first + il : {S - 1});",
                *self._per_row()]
        if not any("slab_base" in line for line in body[2:]):
            body = [line for line in body if not line.startswith("const index_t slab_base")]
        grid = min(sl.groups, self.ctx.grid_cap()) if sl.groups else 0
        lines += [f"for (index_t slab = blockIdx.x; slab < {sl.groups}; slab += gridDim.x) {{",
                  *indent(body, 1), "}"]
        return lines, grid, sl.threads, smem

    def _staged_kernel(self, col_cache: list[str]) -> tuple[list[str], int, int, int]:
        """The staged tier: each iteration a block takes T rows (whole outer indices, so
        T * C contiguous elements from the first row's base, which lies on a 16-byte
        vector: T is whole warps), copies them into shared memory in 16-byte vectors with
        consecutive threads on consecutive vectors (fl_stage_in), runs the warp tier's
        thread a row on them, and copies its outputs back out the same way. Threads past
        the last row compute a copy of it (within the block's rows) and store nothing."""
        g = self.ctx.graph
        rows, C, T = self.p.rows, self.p.cols, self.lay.staged
        assert T % 32 == 0, T    # every block's first element on a vector (fl_stage_in)
        grid = min(ix.ceil_div(rows, T), self.ctx.grid_cap()) if rows else 0
        vec = {n: 16 // g.nodes[n].dtype.itemsize for n in self.stage_name}
        decls = [f"__shared__ __align__(16) {storage_type(g.nodes[n].dtype)} {name}[{T * C}];"
                 for n, name in self.stage_name.items()]
        copy_in = [f"fl_stage_in<{vec[n]}, {STAGE_UNROLL}>({self.stage_name[n]}, {self.ctx.in_ptr[n]}, "
                   "stage_base, stage_count);" for n in self.lay.row_cached]
        copy_out = [f"fl_stage_out<{vec[o]}>({self.ctx.out_ptr[o]}, {self.stage_name[o]}, stage_base, stage_count);"
                    for o in self.p.full_out]
        body = self._per_row()
        lines = ["const int lane = 0;   // one thread a row", *col_cache, *decls,
                 f"for (index_t base = index_t(blockIdx.x) * {T}; base < {rows}; base += index_t(gridDim.x) * {T}) {{",
                 f"    const index_t stage_base = base * {C};   // the first row's element: base is a whole outer index",
                 f"    const index_t stage_count = min(index_t({T}), index_t({rows}) - base) * {C};",
                 *indent(copy_in, 1),
                 "    __syncthreads();",
                 f"    const bool active = base + threadIdx.x < {rows};",
                 f"    const index_t row = active ? base + threadIdx.x : {rows - 1};",
                 *indent(body, 1),
                 "    __syncthreads();",
                 *indent(copy_out, 1),
                 "    __syncthreads();   // the next rows overwrite the stages",
                 "}"]
        return lines, grid, T, 0

    def kernel(self) -> tuple[list[str], int, int | tuple[int, int], int]:
        rows, C = self.p.rows, self.p.cols
        col_cache = self._register_cache(self.col_name, "col0") if self.lay.col_in_registers else []
        if self.lay.staged:
            return self._staged_kernel(col_cache)
        if self.lay.tier in ("warp", "thread"):
            lanes = self.lay.threads
            per_warp = 32 // lanes
            block = 128
            grid = min(ix.ceil_div(rows, block // lanes), self.ctx.grid_cap()) if rows else 0
            lines = [f"const int lane = threadIdx.x % {lanes};",
                     "const index_t warp = (index_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;",
                     "const index_t warps = index_t(gridDim.x) * blockDim.x / 32;", *col_cache]
            body = self._per_row()
            if per_warp == 1:
                lines += [f"for (index_t row = warp; row < {rows}; row += warps) {{",
                          "    const bool active = true;", *indent(body, 1), "}"]
            else:
                lines += ["// The loop runs warp-uniformly so every lane reaches the shuffles; lanes",
                          "// past the last row compute a copy of it and store nothing.",
                          f"for (index_t first = warp * {per_warp}; first < {rows}; first += warps * {per_warp}) {{",
                          f"    const bool active = first + threadIdx.x % 32 / {lanes} < {rows};",
                          f"    const index_t row = active ? first + threadIdx.x % 32 / {lanes} : {rows - 1};",
                          *indent(body, 1), "}"]
            return lines, grid, block, 0
        if self.lay.slab:
            return self._slab_kernel()
        grid = min(rows, self.ctx.split_target()) if rows else 0
        if self.lay.tier == "block":
            lines = ["const int lane = threadIdx.x;", *col_cache]
            body = self._per_row()
            lines += [f"for (index_t row = blockIdx.x; row < {rows}; row += gridDim.x) {{",
                      *indent(body, 1), "}"]
            # two blocks per SM: one loads its row while the other reduces (registers <= 64
            # at 512 threads); float64's wider values and arithmetic need one block's room
            return lines, grid, (self.lay.threads, self._min_blocks()), 0
        decls, smem = self._smem_caches("row_cache", _span(self.p, self.lay.pack)) if self.lay.tier == "smem" else ([], 0)
        body = self._per_row()
        if self.lay.tier == "smem":
            body.append("__syncthreads();  // the next row overwrites the cache")
        lines = decls + [f"for (index_t row = blockIdx.x; row < {rows}; row += gridDim.x) {{",
                         *indent(body, 1), "}"]
        return lines, grid, self.lay.threads, smem
