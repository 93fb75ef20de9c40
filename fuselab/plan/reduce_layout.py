"""How a reduction kernel's work is laid out over the GPU: its axes merged, the strategy
(a group of threads per output, or threads across a contiguous kept axis) and the
heuristic's split of each output's elements over blocks.

One rule, two readers: codegen/reduction.py generates the kernel from it, and the cost
model (cost.py) charges a split reduction's combine phase where it splits. Plain
arithmetic on sizes, so the planner's searches can call it per candidate group.
"""
from __future__ import annotations

# Split reductions: blocks that each reduce a long run and leave one partial, which the
# last block to finish combines. Few waves of long-running blocks beat many short ones.
# Measured on the H200 (2026-11-30, interleaved timings, float32):
# - whole-array sums (2^28): 16 per SM 251.7 us; 8: 257.4; 32: 255.9; 64: 267.5;
# - column means (2^18 x 1024): exactly one wave of resident 256-thread blocks (8 per SM)
#   257.0 us; 16-64 per SM 283-300 us; 4 per SM 289 us.
# The shape sweep (2026-12-01, 2^26 float32, the autotuner timing 8 and 16 per SM among
# others) found 8 per SM as fast or faster at every shape: a sum of 2^26, 73.8 against
# 76.5 us; rows of 128k, 72.4 against 77.8 us; var over axes 0 and 2, 72.8 against 81.8.
# Since reductions read a group of steps ahead
# (reduction.strided_loop: about 60 registers, so 4 blocks of 256 threads fit an SM), one
# wave of 4 per SM is fastest (H200, 2026-12-02, kernels timed side by side, % of copy, 4
# per SM against 8): column sums keeping 4k columns 101 against 92, keeping 256 94 against
# 85; the middle axis of (64, 4096, 256) 97 against 90; a sum of 2^26 101 against 97; rows
# of 128k 107 against 100. The split count rounds down, so that the grid never spills
# into a second, nearly empty wave.
REDUCE_SPLIT_BLOCKS_PER_SM = 4
COLUMN_BLOCKS_PER_SM = 4
MIN_PER_BLOCK = 4096      # elements a split block of the inner strategy reduces at least
COLUMN_ROWS = 8           # a column block's rows of threads (threadIdx.y)
INNER_BLOCK = 256         # threads of a block per output


def pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def merge_axes(shape: tuple[int, ...], axes: tuple[int, ...],
               order: tuple[int, ...] | None = None) -> list[tuple[int, bool]]:
    """(size, reduced) runs of `shape`'s axes read in `order` (memory order; default the
    shape's own), size-1 axes dropped and neighbours of the same kind merged."""
    merged: list[tuple[int, bool]] = []
    for a in (order if order is not None else range(len(shape))):
        d = shape[a]
        if d == 1:
            continue
        red = a in axes
        if merged and merged[-1][1] == red:
            merged[-1] = (merged[-1][0] * d, red)
        else:
            merged.append((d, red))
    return merged


def layout_of(merged: list[tuple[int, bool]]) -> str:
    """"KR", "RK", "KRK", ...: the merged runs, kept (K) or reduced (R)."""
    return "".join("R" if r else "K" for _, r in merged)


def column_layout(merged: list[tuple[int, bool]]) -> bool:
    """Reduced axes, then a contiguous run of kept ones (and kept ones before)."""
    return layout_of(merged) in ("RK", "KRK") and merged[-1][0] >= 2


def is_column(merged: list[tuple[int, bool]], reduced: int) -> bool:
    """The heuristic's strategy: threads across the kept run for reductions along strided
    axes, unless they reduce so few rows that each thread would hold one output anyway."""
    return column_layout(merged) and (merged[-1][0] >= 32 or reduced >= 64)


def inner_split(kept: int, reduced: int, width: int, sm_count: int) -> tuple[str, int, int]:
    """(mode, lanes an output, blocks an output) of the inner strategy: "lanes", enough
    for about 8 vectors each; "block", a block per output, when the outputs are too few
    to fill the GPU with lanes, split over blocks that each reduce >= MIN_PER_BLOCK."""
    group = min(32, pow2_at_least(-(-reduced // (8 * width))))
    if not (group == 32 and kept * 32 < sm_count * 1024):
        return "lanes", group, 1
    return "block", group, max(1, min(sm_count * REDUCE_SPLIT_BLOCKS_PER_SM // max(kept, 1), reduced // MIN_PER_BLOCK))


def column_split(kept: int, run: int, reduced: int, width: int, sm_count: int,
                 welford: bool) -> tuple[int, int, int]:
    """(lanes, base blocks, splits) of the column strategy over `kept` outputs whose last
    contiguous kept run is `run` long: lanes enough for the run (a warp spans 32 / lanes
    rows when it is short), then the reduced axis split until about COLUMN_BLOCKS_PER_SM
    blocks per SM run, each folding at least 16 rows per row of threads. A variance
    (Welford's state: 5 words a lane element, not 1) is fastest at half the sums' split
    count (H200: var over axis 0 of (16384, 4096) 78% of copy at 2 blocks per SM, 66% at
    4; std over axis 0 of (65536, 1024) 76% against 64%; 2026-12-02)."""
    lanes = min(32, pow2_at_least(-(-run // width)))
    base = (kept // run if run else 0) * -(-run // (lanes * width))
    target = sm_count * COLUMN_BLOCKS_PER_SM // (2 if welford else 1)
    splits = max(1, min(target // max(base, 1), reduced // (COLUMN_ROWS * (32 // lanes) * 16)))
    return lanes, base, splits


def column_thread_rows(lanes: int, warps: int) -> int:
    """Rows of threads of a column block of `warps` warps, `lanes` threads a row: a warp
    spans 32 / lanes rows for a power of two, the block whole rows otherwise (threads
    past the last whole row idle)."""
    return warps * (32 // lanes) if lanes <= 32 and 32 % lanes == 0 else 32 * warps // lanes


def _use(need: int, lanes: int) -> float:
    """The share of a column block's threads holding a kept element: tiles of `lanes`
    over a run of `need` vectors, and the block's rows of `lanes` threads."""
    rows = column_thread_rows(lanes, COLUMN_ROWS)
    return need * rows / (-(-need // lanes) * 32 * COLUMN_ROWS) if rows else 0.0


def whole_row_lanes(run: int, width: int) -> int | None:
    """Lanes for a column block that takes whole rows of exactly the run's vectors
    (threads t % lanes along the kept run, t / lanes along the reduced axis: each step's
    loads one contiguous piece of memory), where more of its threads then hold a kept
    element than with a power of two of lanes; else None. A run of 21 float16 keeps 21
    of 32 lanes busy in a power of two (a column sum of (9, 226426, 21) read at 2.0 TB/s
    against a copy's 3.05, H200 2026-12-05), 252 of 256 threads as 12 rows of 21; a run
    of 33 floats 33 of 64, or 231 of 256. A tuning candidate: not yet timed on the GPU."""
    need = max(1, -(-run // width))
    if need <= 32 * COLUMN_ROWS and _use(need, need) > _use(need, min(32, pow2_at_least(need))) + 0.05:
        return need
    return None
