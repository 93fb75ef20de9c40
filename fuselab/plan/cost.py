"""The cost model: predicted time of a kernel and the report of a whole plan.

    t(kernel) = launch + max(bytes / (bandwidth * eff) + l2_bytes / l2_bandwidth, flops / throughput,
                             visits / elem_rate) / p [+ combine_s for a split reduction]
    t(run)    = run_s + the kernels in order, each starting when the one before ends and
                Python has issued it (step_s after launch_s a launch), + sync_s a graph break

- bytes: each materialised input read once at its own size (a broadcast operand is
  small; a kernel that only reads slices of an array reads only those slices), each stored
  output written once, plus the extra sweeps of a row kernel whose rows do not fit on chip.
- l2_bytes: slices of one array that start at different offsets along an outer axis (a
  stencil's rows above and below) read other cache lines than the centre slice; DRAM
  sends the array once, L2 serves the other groups of slices again.
- eff, the fraction of the bandwidth a template reaches: 1 for pointwise, reduction, and
  row kernels whose row a warp's or a block's registers hold or that loop over long rows;
  a row kept in shared memory reaches (r / chip_rows) ** chip_exp of it when fewer than
  chip_rows rows fit in an SM's shared memory at once (row_tier names the tier as
  codegen/row.py's tiers go).
- flops: each op's table cost (ops.OpDef.flops) per evaluation, times `transcendental` for
  SFU ops and `fp64` for double precision. A pointwise kernel evaluates every op once per
  element of its iteration space (broadcast producers are recomputed), a reduction its
  prologue per input element and its epilogue per result, a row kernel its full-row ops
  per element and its per-row ops per row.
- visits: the elements of the iteration space (the output's for a pointwise kernel, the
  input's for a reduction or a row kernel) of a kernel that reads an operand broadcast
  over it: each element computes its operands' offsets and loads the broadcast ones
  alone (codegen's gathers; pairwise distances through a 3-D broadcast work through
  128M elements from 10M read). At `elem_rate` a second they bound such kernels; a
  kernel of full-size operands moves them as vectors and is bound by its bytes.
- p, the fraction of the GPU a kernel can keep busy: a row kernel runs one row per block
  or warp, so with fewer rows than SMs it leaves SMs idle. Other templates size their grid
  to the data (a reduction never runs on a single block).
- combine_s: a reduction whose outputs are too few to fill the GPU splits each output's
  elements over blocks (codegen/reduction.py; `reduction_splits` mirrors its heuristic);
  each block stores its partials, fences and counts itself in with an atomic, and the
  last to arrive reads the partials back and combines them: a dependent phase after all
  the others, a few memory round trips that no bandwidth hides. Charged once a kernel;
  0 (off) by default: the searches' bounds do not know it (device.py, COST_MODEL.md).
- run_s: what one run of a plan costs before its first launch (the runtime's Python
  work), the same for every plan of a graph; fitted on the sweeps.
- step_s: what the runtime's Python spends on a launch beyond `launch_s` (allocating the
  kernel's outputs, binding its arguments). Python issues kernel k at (k - 1) *
  (launch_s + step_s) after the first; a kernel shorter than that leaves the device
  waiting for the next one (`run_time`). Large kernels hide it: the device is still busy
  when the next launch arrives. Fitted on the sweeps.

The device numbers (bandwidth, launch, throughput) come from a calibration on the device
(fuselab.runtime measures a device-to-device copy and an empty launch) or from
DeviceParams.h200_default(); run_s, chip_rows/chip_exp and l2_bandwidth were fitted on
the H200 shape sweep (benchmarks/COST_MODEL.md, benchmarks/cost_fit.py).

The cost is additive over kernels, which is what lets the exact searches work on sets of
executed nodes; eff <= 1, l2_bytes >= 0 and combine_s >= 0 keep every kernel at least at the
searches' bytes/bandwidth floor. A plan also pays `sync_s` for each graph break it crosses (the
device finishes its work and hands Python a value) and `run_s` once; every plan of a
graph pays the same, so the searches leave them out: plan_time adds the syncs, the report
both. The report's time also waits for Python's launches (step_s, `run_time`); that wait
only ever adds to the sum of kernels, so plan_time stays the searches' additive lower
bound of it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir import GraphBreak
from .analysis import (SLAB_INNER, Analysis, RowShapes, analyse, bits, mask_of, row_shapes, slab_blocks,
                       strided_layout)
from .device import DeviceParams
from .kernels import kernel_members, unfused_plan
from .model import Kernel, Plan, Space, Template, kernel_stage
from .reduce_layout import column_split, inner_split, is_column, merge_axes


@dataclass(frozen=True)
class KernelCost:
    """Predicted cost of one kernel."""

    index: int
    name: str
    template: str
    bytes_read: int
    bytes_written: int
    extra_bytes: int            # extra sweeps of a looped row kernel
    kept_bytes: int             # intermediates it keeps on chip (unfused would store them)
    flops: float                # add-equivalents
    parallelism: float          # fraction of the GPU kept busy (1.0: all of it)
    launch_s: float
    memory_s: float
    compute_s: float
    time_s: float
    tier: str = ""              # template, and for a row kernel its tier (row:warp/block/smem/looped)
    l2_bytes: int = 0           # re-reads served by L2 (a stencil's shifted rows)
    visits_s: float = 0.0       # elements of the iteration space at the device's element rate
    combine_s: float = 0.0      # a split reduction's last block combining the partials (in time_s)

    @property
    def bytes_total(self) -> int:
        return self.bytes_read + self.bytes_written + self.extra_bytes

    @property
    def bound(self) -> str:
        if self.visits_s > max(self.compute_s, self.memory_s):
            return "elements"
        return "compute" if self.compute_s > self.memory_s else "memory"


MARCH_ROWS = 2   # codegen/stencil.py's ROWS: rows a stencil thread marches through by default


def read_bytes(an: Analysis, mask: int) -> dict[int, int]:
    """Bytes a kernel of `mask` reads of each materialised value: the whole array, or only
    the slices it takes when every read goes through a slice."""
    return {u: b for u, (b, _) in _reads(an, mask).items()}


def _reads(an: Analysis, mask: int) -> dict[int, tuple[int, int]]:
    """Per materialised value a kernel reads: (DRAM bytes, L2 bytes). A slice costs the
    sectors it touches (_fetched). A value read through
    several slices that start at different offsets along an axis other than the last
    (a stencil's rows above and below) comes from DRAM once; each further such group of
    slices reads other cache lines, which L2 serves again. Along the first axis the
    stencil path marches (codegen/stencil.py): a thread carries the rows it shares in
    registers through MARCH_ROWS rows, so slices L rows apart there cost (L - 1) /
    MARCH_ROWS further reads, not L - 1."""
    whole: set[int] = set()
    slices: dict[int, dict[int, None]] = {}
    for v in bits(mask):
        for u, chain in an.prods[v]:
            if mask >> u & 1:
                continue
            first = an.slice_read(v, chain)
            if first >= 0:
                slices.setdefault(u, {})[first] = None
            else:
                whole.add(u)
    out = {u: (an.nbytes[u], 0) for u in whole}
    g = an.graph
    for u, ss in slices.items():
        if u in out:
            continue
        groups: dict[tuple, tuple[int, int, int]] = {}    # offsets past the first axis -> (bytes, lo, hi)
        for s in ss:
            start = tuple(g.nodes[s].args.get("start", ()) or ())
            key, first = start[1:-1], start[0] if len(start) > 1 else 0
            b, lo, hi = groups.get(key, (0, first, first))
            groups[key] = (max(b, an.nbytes[s]), min(lo, first), max(hi, first))
        dram = min(an.nbytes[u], sum(_fetched(an, s) for s in ss))
        sizes = sorted(b for b, _, _ in groups.values())
        l2 = sum(sizes[:-1]) + sum(b * (hi - lo) // MARCH_ROWS for b, lo, hi in groups.values())
        out[u] = (dram, l2)
    return out


SECTOR = 32   # bytes: DRAM sends whole sectors to L2


def _fetched(an: Analysis, s: int) -> int:
    """DRAM bytes a slice costs: a step along the last axis skips elements, not the
    sectors that hold them (x[:, ::2] of float32 fetches every sector of its rows:
    predicted at half its time before, 0.71)."""
    nd = an.graph.nodes[s]
    step = nd.args.get("step") or ()
    k = abs(step[-1]) if step else 1
    return an.nbytes[s] * min(k, max(1, SECTOR // nd.dtype.itemsize))


# codegen/row.py's tiers: a warp holds rows of up to 1024 columns in registers, a block of
# up to 512 threads up to 32 four-byte elements a thread, shared memory rows up to
# row_cache_bytes; longer rows are looped
WARP_COLS = 1024
BLOCK_COLS = 512 * 32
# a thread per strided row holds up to 64 four-byte columns in registers (codegen/row.py;
# DeviceParams.strided_cols); longer rows are read again in every pass, and a thread
# walking its columns one load after another streams at about 0.8 of a looped block
# (H200, 2026-12-03 03:52 UTC, x - x.mean(0) of (256, 256k) float32: 229 us re-read
# against 188 us for a column mean and a pointwise kernel; with 2-64 rows in registers
# 88-95% of copy)
STRIDED_LOOPED_EFF = 0.8
STRIDED_ROWS_PER_SM = 1024  # rows (threads) an SM needs in flight before it streams at full speed
SLABS_PER_SM = 2            # slab blocks an SM needs (one loads while another combines)


def row_parallelism(shapes: RowShapes, params: DeviceParams) -> float:
    """The fraction of the GPU a row kernel keeps busy: one row per block or warp needs a
    row per SM; one row per thread (rows along a strided axis) STRIDED_ROWS_PER_SM; a
    block per slab of strided rows SLABS_PER_SM slabs."""
    if shapes.stride > 1 and strided_layout(shapes) == "slab":
        return min(1.0, slab_blocks(shapes) / (params.sm_count * SLABS_PER_SM))
    per_sm = STRIDED_ROWS_PER_SM if shapes.stride > 1 else 1
    return min(1.0, shapes.rows / (params.sm_count * per_sm))


def column_lane_use(shape: tuple[int, ...], axes: tuple[int, ...], item: int) -> float:
    """The share of a column reduction's lanes that hold a kept element. codegen's column
    layout (reduction.py) puts lanes of up to `width` elements across the contiguous kept
    run K after the last reduced axis, a power of two of them up to a warp: a run of 17
    keeps 17 of 32 lanes busy, 33 keeps 33 of 64 (H200, 2026-12-03: such reductions ran at
    0.48-0.59 of the full-bandwidth prediction). 1 for reductions over the last axis.
    Where no power of two tiles the run, codegen now takes whole rows of exactly the run's
    vectors a block (reduce_layout.column_lanes), a power of two its tuning candidate;
    the model keeps the power of two's share until the GPU has timed that layout (with
    this share the planner keeps a slab softmax over (626, 4736, 17) one kernel; with the
    whole rows' it would split it into three)."""
    if not axes or not shape:
        return 1.0
    K = math.prod(shape[max(axes) + 1:])
    if K <= 1:
        return 1.0
    width = max(1, min(4, 16 // max(item, 1)))
    while K % width:
        width //= 2
    lanes = 1
    while lanes < 32 and lanes * width < K:
        lanes *= 2
    tile = lanes * width
    return K / (-(-K // tile) * tile)


def reduction_splits(shape: tuple[int, ...], axes: tuple[int, ...], item: int, sm_count: int,
                     welford: bool = False) -> int:
    """The blocks the heuristic (plan/reduce_layout.py, which codegen follows) splits each
    output's reduced elements over (1: a block or a lane group finishes its outputs
    alone). With more, each block stores its partials and the last to arrive combines
    them: a dependent phase after the others' (cost: DeviceParams.combine_s). The axes
    are read in the array's order (codegen may reorder a transposed view's by memory
    order; the planner's arrays are C-contiguous) and vectors are as wide as 16 bytes
    allow (codegen's may be narrower where an access is unaligned)."""
    merged = merge_axes(shape, axes)
    kept = math.prod(d for d, r in merged if not r)
    reduced = math.prod(d for d, r in merged if r)
    if reduced <= 1 or kept == 0:
        return 1
    if is_column(merged, reduced):
        run = merged[-1][0]
        width = max(1, min(4, 16 // max(item, 1)))
        while run % width:
            width //= 2
        return column_split(kept, run, reduced, width, sm_count, welford)[2]
    width = max(1, 16 // max(item, 1))
    while width > 1 and reduced % width:
        width //= 2
    return inner_split(kept, reduced, width, sm_count)[2]


def _welford(an: Analysis, mask: int) -> bool:
    from ..ops import reduce_rule
    g = an.graph
    # (only a variance can be Welford's; reduce_rule refuses some others' dtypes, complex max)
    return any(g.nodes[r].op == "var" and
               reduce_rule(g.nodes[r].op, g.nodes[g.nodes[r].inputs[0]].dtype, g.nodes[r].dtype).combine == "welford"
               for r in bits(mask & an.reduce_mask))


def _reduced_itemsize(an: Analysis, mask: int) -> int:
    """The widest element a kernel's reductions read (4 when it has none)."""
    g = an.graph
    return max((g.nodes[g.nodes[r].inputs[0]].dtype.itemsize for r in bits(mask & an.reduce_mask)), default=4)


def row_tier(an: Analysis, mask: int, space: Space, params: DeviceParams) -> tuple[str, int]:
    """(tier, row bytes) of a row kernel, as codegen/row.py's tiers go: "warp", "block"
    (a block's registers), "smem" (shared memory) or "looped" (re-read in every pass); rows
    along a strided axis, a thread each: "strided" (in registers) or "strided-looped"; a
    block per slab of them: "slab-smem" (in shared memory) or "slab" (re-read). Row bytes
    are a slab's for the slab tiers."""
    item = _reduced_itemsize(an, mask)
    shapes = row_shapes(space.shape, space.axes[0]) if space.shape else None
    cols = shapes.cols if shapes else 1
    row_bytes = cols * item
    if shapes and shapes.stride > 1 and strided_layout(shapes) == "slab":
        slab_bytes = row_bytes * min(shapes.stride, SLAB_INNER)
        return ("slab-smem" if slab_bytes <= params.row_cache_bytes else "slab"), slab_bytes
    if shapes and shapes.stride > 1:
        # a thread per row along a strided axis: its row in registers, or re-read per pass
        return ("strided" if cols <= params.strided_cols * 4 // max(item, 4) else "strided-looped"), row_bytes
    if cols <= WARP_COLS:
        return "warp", row_bytes
    if cols <= BLOCK_COLS * 4 // max(item, 4):
        return "block", row_bytes
    return ("smem" if row_bytes <= params.row_cache_bytes else "looped"), row_bytes


def estimate(an: Analysis, mask: int, stored: int, space: Space, params: DeviceParams,
             index: int = -1, name: str = "") -> KernelCost:
    """Predicted cost of the kernel computing `mask` and storing `stored` over `space`."""
    reads = _reads(an, mask)
    bytes_read = sum(b for b, _ in reads.values())
    l2_bytes = sum(l2 for _, l2 in reads.values())
    bytes_written = sum(an.nbytes[v] for v in bits(stored))
    extra = 0
    p = 1.0
    flops = 0.0
    eff = 1.0
    tier = space.template.value
    visits = 0
    combine = 0.0
    if space.template is Template.OPAQUE:
        v = next(bits(mask))
        flops = opaque_flops(an, v)
    else:
        n_full = math.prod(space.shape)
        n_small = math.prod(space.result)
        # an operand broadcast over the iteration space is read element by element at
        # offsets computed per element (codegen's gathers); full-size operands stream
        visits = n_full if any(an.size[u] < n_full for u in reads) else 0
        weight = an.weights(params)
        for v in bits(mask):
            flops += (n_full if space.full >> v & 1 else n_small) * weight[v]
        if space.template is Template.ROW:
            p = row_parallelism(row_shapes(space.shape, space.axes[0]), params)
            kind, row_bytes = row_tier(an, mask, space, params)
            tier = f"row:{kind}"
            if kind in ("warp", "strided"):
                eff = params.eff_row_warp
            elif kind == "block":
                eff = params.eff_row_block
            elif kind in ("smem", "slab-smem"):
                resident = max(1, params.smem_per_sm // max(row_bytes, 1))
                eff = params.eff_row_smem * min(1.0, resident / params.chip_rows) ** params.chip_exp
                if kind == "slab-smem":
                    eff *= params.eff_row_slab_smem
            else:   # looped, strided-looped, slab: re-read in every pass
                eff = params.eff_row_looped
                if kind == "strided-looped":
                    eff *= STRIDED_LOOPED_EFF * params.eff_row_strided
                elif kind == "slab":   # a slab too big for shared memory also leaves L2 before its next pass
                    eff *= params.eff_row_slab
                if space.passes > 1:
                    extra = (space.passes - 1) * sum(b for u, (b, _) in reads.items() if an.size[u] == n_full)
        elif space.template is Template.REDUCTION:
            item = _reduced_itemsize(an, mask)
            eff = params.eff_reduction * column_lane_use(space.shape, space.axes, item)
            if params.combine_s > 0 and reduction_splits(space.shape, space.axes, item, params.sm_count,
                                                         _welford(an, mask)) > 1:
                combine = params.combine_s
        else:
            eff = params.eff_pointwise
    eff = min(1.0, eff)      # never faster than the bandwidth: the searches' bounds rely on it
    memory_s = ((bytes_read + bytes_written + extra) / (params.bandwidth * eff)
                + l2_bytes / max(params.l2_bandwidth, params.bandwidth)) / p
    compute_s = flops / (params.throughput * p)
    visits_s = visits / (params.elem_rate * p) if params.elem_rate > 0 else 0.0
    time_s = params.launch_s + max(memory_s, compute_s, visits_s) + combine
    kept = sum(an.nbytes[v] for v in bits(mask & ~stored & ~an.out_mask) if not an.free[v])
    return KernelCost(index, name, space.template.value, bytes_read, bytes_written, extra, kept,
                      flops, p, params.launch_s, memory_s, compute_s, time_s, tier, l2_bytes, visits_s, combine)


def opaque_flops(an: Analysis, v: int) -> float:
    nd = an.graph.nodes[v]
    fn = nd.args["fn"]
    ins = [an.graph.nodes[j].aval for j in nd.inputs]
    if fn.flops is not None:
        return float(fn.flops(ins))
    if fn.name.split(".")[-1] in ("matmul", "dot", "@", "__matmul__") and ins and ins[0].shape:
        return 2.0 * nd.aval.size * ins[0].shape[-1]
    return 0.0


# ---------------------------------------------------------------------------
# Plan report
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class PlanReport:
    """Per-kernel costs and totals of a plan, with the unfused plan for comparison."""

    kernels: tuple[KernelCost, ...]
    launches: int
    bytes_read: int
    bytes_written: int
    extra_bytes: int
    intermediates: int                  # arrays materialised only to be read again
    intermediate_bytes: int
    peak_intermediate_bytes: int        # most intermediate memory alive at once
    time_s: float
    unfused_launches: int
    unfused_bytes: int
    unfused_intermediate_bytes: int
    unfused_time_s: float
    params: DeviceParams
    breaks: tuple[GraphBreak, ...] = ()  # graph breaks the plan crosses, one sync each
    sync_s: float = 0.0                 # their device syncs, in time_s (and unfused_time_s)
    run_s: float = 0.0                  # the fixed cost of one run, in time_s (and unfused_time_s)
    launch_wait_s: float = 0.0          # the device idle between short kernels, waiting for Python's next launch

    @property
    def bytes_total(self) -> int:
        return self.bytes_read + self.bytes_written + self.extra_bytes

    @property
    def bytes_avoided(self) -> int:
        """Memory traffic saved versus the unfused plan."""
        return self.unfused_bytes - self.bytes_total

    @property
    def intermediate_bytes_avoided(self) -> int:
        """Bytes of intermediate arrays the unfused plan writes and this plan does not."""
        return self.unfused_intermediate_bytes - self.intermediate_bytes

    @property
    def speedup(self) -> float:
        return self.unfused_time_s / self.time_s if self.time_s else 1.0

    def __str__(self) -> str:
        rows = [f"{'kernel':<28} {'template':<10} {'read':>10} {'written':>10} {'on chip':>10} "
                f"{'flops':>10} {'time':>10}"]
        for k in self.kernels:
            label = f"k{k.index} {k.name}"[:28]
            extra = f" (+{_b(k.extra_bytes)} sweeps)" if k.extra_bytes else ""
            busy = f" [{k.parallelism:.0%} of SMs]" if k.parallelism < 1 else ""
            rows.append(f"{label:<28} {k.template:<10} {_b(k.bytes_read):>10} "
                        f"{_b(k.bytes_written):>10} {_b(k.kept_bytes):>10} {k.flops:>10.3g} "
                        f"{k.time_s * 1e6:>8.2f}us{extra}{busy}")
        rows.append(f"total: {self.launches} launches, {_b(self.bytes_total)} moved, "
                    f"{self.time_s * 1e6:.2f} us predicted; unfused: {self.unfused_launches} launches, "
                    f"{_b(self.unfused_bytes)}, {self.unfused_time_s * 1e6:.2f} us "
                    f"(x{self.speedup:.2f})")
        rows.append(f"intermediates: {self.intermediates} arrays, {_b(self.intermediate_bytes)} "
                    f"({_b(self.intermediate_bytes_avoided)} avoided vs unfused), peak "
                    f"{_b(self.peak_intermediate_bytes)}")
        if self.run_s:
            rows.append(f"fixed cost of a run (the runtime before its first launch): "
                        f"{self.run_s * 1e6:.2f} us in the totals")
        if self.launch_wait_s > 1e-9:
            rows.append(f"kernels shorter than Python's next launch ({self.params.launch_s * 1e6:.1f} + "
                        f"{self.params.step_s * 1e6:.1f} us a launch) leave the device waiting: "
                        f"{self.launch_wait_s * 1e6:.2f} us in the totals")
        if self.breaks:
            rows.append(f"graph breaks: {len(self.breaks)}, a device sync each "
                        f"({self.sync_s * 1e6:.2f} us in the totals):")
            rows += [f"  {b}" for b in self.breaks]
        return "\n".join(rows)


def _b(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def kernel_space(an: Analysis, kernel: Kernel) -> Space:
    """The space legality found for the kernel; a kernel built by hand that its template
    cannot run is costed as a pointwise kernel over its largest output (the report still
    works, legality says why)."""
    if kernel.space is not None:
        return kernel.space
    mask = kernel_members(an, kernel)
    big = max(bits(mask_of(kernel.outputs) or mask), key=lambda i: an.size[i])
    return Space(Template.POINTWISE, an.shape(big), full=mask)


def kernel_costs(plan: Plan, params: DeviceParams) -> tuple[KernelCost, ...]:
    an = analyse(plan.graph)
    out = []
    for k, kern in enumerate(plan.kernels):
        mask = kernel_members(an, kern)
        out.append(estimate(an, mask, mask_of(kern.outputs), kernel_space(an, kern), params, k, kern.name))
    return tuple(out)


def crossed_breaks(plan: Plan) -> tuple[GraphBreak, ...]:
    """The graph breaks with a kernel before and a kernel after them: at each, the
    device finishes what came before and Python reads a value back."""
    if not plan.graph.breaks or not plan.kernels:
        return ()
    stages = [kernel_stage(plan.graph, k) for k in plan.kernels]
    return plan.graph.breaks[min(stages):max(stages)]


def _intermediates(plan: Plan) -> tuple[int, int, int]:
    """(count, bytes, peak bytes alive) of stored values that are not cell results."""
    g = plan.graph
    outs = g.output_ids
    last_read: dict[int, int] = {}
    for k, kern in enumerate(plan.kernels):
        for j in kern.inputs:
            last_read[j] = k
    alive = peak = total = count = 0
    frees: dict[int, int] = {}
    for k, kern in enumerate(plan.kernels):
        for i in kern.outputs:
            if i in outs or g.nodes[i].op == "input":
                continue
            b = g.nodes[i].aval.nbytes
            count += 1
            total += b
            alive += b
            end = last_read.get(i, k)
            frees[end] = frees.get(end, 0) + b
        peak = max(peak, alive)
        alive -= frees.pop(k, 0)
    return count, total, peak


def run_time(plan: Plan, costs: tuple[KernelCost, ...], params: DeviceParams) -> float:
    """The kernels of one run end to end, after its fixed run_s: the device runs them in
    order, each once the one before has finished and Python has issued it. Python issues
    a launch every launch_s + step_s; at a graph break it waits for the device (sync_s)
    and issues the next kernel after. With step_s = 0 this is the kernels' sum (t(kernel)
    includes launch_s) plus sync_s a break."""
    issue = params.launch_s + params.step_s
    done = issued = 0.0
    stage = None
    for kern, cost in zip(plan.kernels, costs):
        s = kernel_stage(plan.graph, kern)
        if stage is not None and s > stage:   # breaks crossed: Python waits for the device
            done += len(plan.graph.breaks[stage:s]) * params.sync_s
            issued = done
        stage = s
        done = max(done, issued) + cost.time_s
        issued += issue
    return done


def report(plan: Plan, params: DeviceParams | None = None) -> PlanReport:
    """Bytes, launches, intermediates and predicted time of `plan` and of its unfused plan."""
    params = params or DeviceParams.h200_default()
    costs = kernel_costs(plan, params)
    base = plan if plan.strategy == "unfused" and not plan.constraints.active else unfused_plan(plan.graph)
    base_costs = costs if base is plan else kernel_costs(base, params)
    n, ib, peak = _intermediates(plan)
    _, base_ib, _ = _intermediates(base)
    breaks = crossed_breaks(plan)
    sync = len(breaks) * params.sync_s
    run = params.run_s if costs else 0.0
    kernels_s = run_time(plan, costs, params)
    return PlanReport(
        kernels=costs, launches=len(costs),
        bytes_read=sum(c.bytes_read for c in costs), bytes_written=sum(c.bytes_written for c in costs),
        extra_bytes=sum(c.extra_bytes for c in costs), intermediates=n, intermediate_bytes=ib,
        peak_intermediate_bytes=peak, time_s=kernels_s + run,
        unfused_launches=len(base_costs), unfused_bytes=sum(c.bytes_total for c in base_costs),
        unfused_intermediate_bytes=base_ib,
        unfused_time_s=run_time(base, base_costs, params) + (params.run_s if base_costs else 0.0),
        params=params, breaks=breaks, sync_s=sync, run_s=run,
        launch_wait_s=kernels_s - sum(c.time_s for c in costs) - sync)


def plan_time(plan: Plan, params: DeviceParams | None = None) -> float:
    """Predicted time of a plan's kernels and syncs, what `auto` minimises (the syncs are
    the same in every plan). A run also pays the fixed `run_s`, the same for every plan:
    report(plan).time_s = plan_time(plan) + params.run_s."""
    params = params or DeviceParams.h200_default()
    return sum(c.time_s for c in kernel_costs(plan, params)) + len(crossed_breaks(plan)) * params.sync_s


__all__ = ["DeviceParams", "KernelCost", "PlanReport", "estimate", "report", "plan_time", "crossed_breaks"]
