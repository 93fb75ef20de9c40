"""The cost model: predicted time of a kernel and the report of a whole plan.

    t(kernel) = launch + max(bytes / (bandwidth * p), flops / (throughput * p))

- bytes: each materialised input read once at its own size (a broadcast operand is
  small; a kernel that only reads slices of an array reads only those slices), each stored
  output written once, plus the extra sweeps of a row kernel whose rows do not fit on chip.
- flops: each op's table cost (ops.OpDef.flops) per evaluation, times `transcendental` for
  SFU ops and `fp64` for double precision. A pointwise kernel evaluates every op once per
  element of its iteration space (broadcast producers are recomputed), a reduction its
  prologue per input element and its epilogue per result, a row kernel its full-row ops
  per element and its per-row ops per row.
- p, the fraction of the GPU a kernel can keep busy: a row kernel runs one row per block
  or warp, so with fewer rows than SMs it leaves SMs idle. Other templates size their grid
  to the data (a reduction never runs on a single block).

The cost is additive over kernels, which is what lets the exact search (exact.py) work on
sets of executed nodes. Device numbers come from a calibration (fuselab.runtime measures
a device-to-device copy and an empty launch) or from DeviceParams.h200_default().
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from ..ir import special_exponent
from ..ops import OPS
from .analysis import Analysis, analyse, bits, mask_of
from .legality import Budgets, Space, check
from .model import Plan, Template


@dataclass(frozen=True)
class DeviceParams:
    """What the cost model knows about a device.

    Defaults (`h200_default`) are documented H200 figures as seen from Python/CuPy:
    - bandwidth 4.0e12 B/s: effective, counting read + write bytes (a device-to-device copy
      measures ~4.3 TB/s that way; HBM3e peak is 4.8 TB/s);
    - launch 4 us: one CuPy kernel launch from Python, including argument marshalling;
    - throughput 6e13 add-equivalent flop/s (fp32 non-tensor ~67 TFLOP/s peak);
    - transcendental x4: a table flop of an SFU op (exp, log, sin, ...) costs 4 adds;
    - fp64 x2: double precision runs at half the fp32 rate on sm_90;
    - 132 SMs; a row up to 64 KiB stays on chip (registers / shared memory), longer rows
      are swept once per dependent phase.
    """

    name: str = "NVIDIA H200 (documented defaults)"
    bandwidth: float = 4.0e12
    launch_s: float = 4.0e-6
    throughput: float = 6.0e13
    transcendental: float = 4.0
    fp64: float = 2.0
    sm_count: int = 132
    row_cache_bytes: int = 65536
    source: str = "defaults"

    @classmethod
    def h200_default(cls) -> "DeviceParams":
        return cls()

    # accepted spellings in a calibration file -> (field, scale)
    _ALIASES = {
        "bandwidth": ("bandwidth", 1.0), "bandwidth_Bps": ("bandwidth", 1.0),
        "copy_bandwidth": ("bandwidth", 1.0), "copy_bandwidth_Bps": ("bandwidth", 1.0),
        "bandwidth_GBps": ("bandwidth", 1e9), "copy_bandwidth_GBps": ("bandwidth", 1e9),
        "bandwidth_TBps": ("bandwidth", 1e12),
        "launch_s": ("launch_s", 1.0), "launch": ("launch_s", 1.0),
        "launch_overhead_s": ("launch_s", 1.0), "launch_us": ("launch_s", 1e-6),
        "throughput": ("throughput", 1.0), "flops": ("throughput", 1.0),
        "flops_per_s": ("throughput", 1.0), "fp32_flops": ("throughput", 1.0),
        "tflops": ("throughput", 1e12),
        "transcendental": ("transcendental", 1.0), "fp64": ("fp64", 1.0),
        "sm_count": ("sm_count", 1), "multiprocessors": ("sm_count", 1),
        "row_cache_bytes": ("row_cache_bytes", 1),
        "name": ("name", None), "device": ("name", None), "device_name": ("name", None),
        "source": ("source", None),
    }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], source: str = "calibration") -> "DeviceParams":
        """Build from a calibration record; unknown keys are ignored, missing ones default.
        Accepts fuselab.runtime.calibrate's record ({"bandwidth_Bps", "launch_s",
        "flops_per_s", "transcendental_factor", "sm_count", "device_name"}) and other
        spellings, e.g. {"device": "NVIDIA H200", "copy_bandwidth_GBps": 4300, "launch_us": 3.1}."""
        kw: dict[str, Any] = {"source": source}
        factor = d.get("transcendental_factor")
        if factor is not None:
            # fuselab.runtime.calibrate measures how many FMA-times one expf costs; our
            # multiplier applies to table flops (exp: 8), an FMA being 2 flops
            kw["transcendental"] = float(factor) * 2 / OPS["exp"].flops
        for key, value in d.items():
            if key not in cls._ALIASES or value is None:
                continue
            fname, scale = cls._ALIASES[key]
            if scale is None:
                kw[fname] = str(value)
                continue
            v = float(value) * scale
            if not math.isfinite(v) or v <= 0:
                raise ValueError(f"calibration value {key}={value!r} must be a positive number")
            kw[fname] = int(round(v)) if fname in ("sm_count", "row_cache_bytes") else v
        return cls(**kw)

    @classmethod
    def load(cls, path: str | Path, device: str | None = None) -> "DeviceParams":
        """Read a JSON calibration cache: one record, or {device name: record} (pick
        `device`, or the only one)."""
        data = json.loads(Path(path).read_text())
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a calibration cache is a JSON object")
        if any(k in cls._ALIASES for k in data):
            return cls.from_dict(data, source=str(path))
        records = {k: v for k, v in data.items() if isinstance(v, dict)}
        if device is None:
            if len(records) != 1:
                raise ValueError(f"{path} holds {len(records)} devices; say which one")
            device = next(iter(records))
        if device not in records:
            raise ValueError(f"{path} has no calibration for {device!r} (has: {', '.join(records)})")
        rec = dict(records[device])
        rec.setdefault("name", device)
        return cls.from_dict(rec, source=str(path))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


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

    @property
    def bytes_total(self) -> int:
        return self.bytes_read + self.bytes_written + self.extra_bytes

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s > self.memory_s else "memory"


def op_weight(nd, params: DeviceParams, graph) -> float:
    """Add-equivalents of one evaluation of node `nd` of `graph`."""
    k = special_exponent(graph, nd)
    if k in (0.5, -1):                              # a square root or a division
        sub = OPS["sqrt" if k == 0.5 else "reciprocal"]
        w = float(sub.flops) * (params.transcendental if sub.transcendental else 1.0)
    else:
        w = float(k - 1 if k else nd.opdef.flops)   # x**3 is two multiplies
        if nd.opdef.transcendental and not k:
            w *= params.transcendental
    ct = nd.loop_dtype
    if ct.kind == "f" and ct.itemsize == 8:
        w *= params.fp64
    return w


def read_bytes(an: Analysis, mask: int) -> dict[int, int]:
    """Bytes a kernel of `mask` reads of each materialised value: the whole array, or only
    the slices it takes when every read goes through a slice."""
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
    out = {u: an.nbytes[u] for u in whole}
    for u, ss in slices.items():
        if u not in out:
            out[u] = min(an.nbytes[u], sum(an.nbytes[s] for s in ss))
    return out


def estimate(an: Analysis, mask: int, stored: int, space: Space, params: DeviceParams,
             index: int = -1, name: str = "") -> KernelCost:
    """Predicted cost of the kernel computing `mask` and storing `stored` over `space`."""
    g = an.graph
    reads = read_bytes(an, mask)
    bytes_read = sum(reads.values())
    bytes_written = sum(an.nbytes[v] for v in bits(stored))
    extra = 0
    p = 1.0
    flops = 0.0
    if space.template is Template.OPAQUE:
        v = next(bits(mask))
        flops = opaque_flops(an, v)
    else:
        n_full = math.prod(space.shape)
        n_small = math.prod(space.result)
        weight = an.weights(params)
        for v in bits(mask):
            flops += (n_full if space.full >> v & 1 else n_small) * weight[v]
        if space.template is Template.ROW:
            p = min(1.0, space.rows / params.sm_count)
            row_bytes = space.shape[-1] * max(
                g.nodes[g.nodes[r].inputs[0]].dtype.itemsize for r in bits(mask & an.reduce_mask))
            if space.passes > 1 and row_bytes > params.row_cache_bytes:
                full_size = n_full
                extra = (space.passes - 1) * sum(b for u, b in reads.items() if an.size[u] == full_size)
    memory_s = (bytes_read + bytes_written + extra) / (params.bandwidth * p)
    compute_s = flops / (params.throughput * p)
    time_s = params.launch_s + max(memory_s, compute_s)
    kept = sum(an.nbytes[v] for v in bits(mask & ~stored & ~an.out_mask) if not an.free[v])
    return KernelCost(index, name, space.template.value, bytes_read, bytes_written, extra, kept,
                      flops, p, params.launch_s, memory_s, compute_s, time_s)


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
        return "\n".join(rows)


def _b(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


_NO_BUDGET = Budgets(10**9, 10**9, 10**9)


def kernel_members(an: Analysis, kernel) -> int:
    """The units a kernel computes (a copy kernel: the free node it stores)."""
    m = mask_of(i for i in kernel.nodes if an.unit[i] and not an.free[i])
    return m or mask_of(kernel.outputs)


def kernel_space(an: Analysis, mask: int, stored: int) -> Space:
    """The kernel's space by the legality rules; a hand-made illegal kernel is costed as a
    pointwise kernel over its largest output (the report still works, legality says why)."""
    v = check(an, mask, _NO_BUDGET, stored)
    if v.ok and v.space is not None:
        return v.space
    big = max(bits(stored or mask), key=lambda i: an.size[i])
    return Space(Template.POINTWISE, an.shape(big), full=mask)


def kernel_costs(plan: Plan, params: DeviceParams) -> tuple[KernelCost, ...]:
    an = analyse(plan.graph)
    out = []
    for k, kern in enumerate(plan.kernels):
        mask = kernel_members(an, kern)
        stored = mask_of(kern.outputs)
        out.append(estimate(an, mask, stored, kernel_space(an, mask, stored), params, k, kern.name))
    return tuple(out)


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


def report(plan: Plan, params: DeviceParams | None = None) -> PlanReport:
    """Bytes, launches, intermediates and predicted time of `plan` and of its unfused plan."""
    from . import unfused_plan
    params = params or DeviceParams.h200_default()
    costs = kernel_costs(plan, params)
    base = plan if plan.strategy == "unfused" and not plan.constraints.active else unfused_plan(plan.graph)
    base_costs = costs if base is plan else kernel_costs(base, params)
    n, ib, peak = _intermediates(plan)
    _, base_ib, _ = _intermediates(base)
    return PlanReport(
        kernels=costs, launches=len(costs),
        bytes_read=sum(c.bytes_read for c in costs), bytes_written=sum(c.bytes_written for c in costs),
        extra_bytes=sum(c.extra_bytes for c in costs), intermediates=n, intermediate_bytes=ib,
        peak_intermediate_bytes=peak, time_s=sum(c.time_s for c in costs),
        unfused_launches=len(base_costs), unfused_bytes=sum(c.bytes_total for c in base_costs),
        unfused_intermediate_bytes=base_ib, unfused_time_s=sum(c.time_s for c in base_costs),
        params=params)


def plan_time(plan: Plan, params: DeviceParams | None = None) -> float:
    """Predicted time of a plan (the quantity `auto` minimises)."""
    return sum(c.time_s for c in kernel_costs(plan, params or DeviceParams.h200_default()))


__all__ = ["DeviceParams", "KernelCost", "PlanReport", "estimate", "report", "plan_time"]
