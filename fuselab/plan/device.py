"""What the cost model knows about a device, and what one op costs on it.

Plain data at the bottom of the planner: analysis tables weigh ops with `op_weight`, the
cost model (cost.py) turns bytes and weights into time with the rest.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from ..ir import Graph, Node, special_exponent
from ..ops import OPS


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
    - 132 SMs; a row up to 200 KiB stays on chip (registers / shared memory: codegen's
      limit), longer rows are swept once per dependent phase; 228 KiB shared memory an SM;
    - sync 10 us: what a graph break costs beyond its kernels. Python needs a value, so the
      device finishes all queued work and copies the value back before the cell goes on:
      a host round trip (~5-10 us through CuPy) plus the launch that can no longer overlap
      the previous kernel's tail.

    Calibrated from the shape sweep (benchmarks/COST_MODEL.md; benchmarks/cost_fit.py
    refits them from a sweep JSON), the same for every plan of a graph or per kernel:
    - run_s: fixed cost of one run of a plan (the runtime's Python work before the first
      launch: argument binding, output allocation), paid once per run, not per kernel;
      not host time alone but the floor of a run timed between other work (events
      around it, Python's caches cold), fitted on the shape sweeps;
    - step_s: the runtime's Python work for each further launch beyond launch_s (its
      outputs' allocation, its arguments); a kernel shorter than launch_s + step_s leaves
      the device waiting for the next launch (cost.run_time). 0: no such wait (the CPU's
      parameters, whose kernels are called in turn). Fitted on the sweeps too: a host
      probe of Python's speed, timed apart from the sweep's rounds, did not follow either
      (benchmarks/COST_MODEL.md, 2026-12-04 13:35);
    - eff_*: the fraction of `bandwidth` a template (and row tier) reaches on large data:
      pointwise, reduction, row kernels whose row a warp holds (warp), a block's registers
      (block), shared memory (smem), and looped rows (re-read per pass); eff_row_strided
      multiplies it for rows along a strided axis re-read in every pass (a thread a row),
      which are those of more than `strided_cols` four-byte columns (a GPU thread's
      registers hold 64; a CPU core's prefetchers follow about 16 strided streams);
      eff_row_slab multiplies it for strided rows a block per slab of adjacent rows (the
      GPU's block combines its stripes between passes; the CPU runs those row by row,
      strided), eff_row_slab_smem for such slabs kept in shared memory;
    - chip_rows, chip_exp: a block that keeps its row in shared memory loads, reduces and
      stores in phases; the other rows resident on the SM (r = shared memory per SM / row
      bytes) keep DRAM busy meanwhile. From `chip_rows` resident rows on that hides it;
      with fewer the bandwidth reached is x (r / chip_rows) ** chip_exp (a 128 KiB
      float32 row, one per SM, reaches ~0.6 of it);
    - l2_bandwidth: a stencil's shifted slices along an outer axis read other cache lines
      than the centre slice; DRAM sends each line once, the extra reads come from L2.
    - combine_s: the dependent phase of a reduction split over blocks (cost.reduction_splits):
      each block stores its partials, fences and counts itself in with an atomic, the last
      reads them back and combines them; a few memory round trips after all the blocks'
      streaming, once a kernel. 0: none;
    - elem_rate: elements of a kernel's iteration space a GPU works through per second
      when the kernel reads an operand broadcast over that space (each element computes
      its offsets and loads the broadcast operands alone): pairwise distances through a
      3-D broadcast are bound by it, not by their bytes (cost.py's `visits`); 0: no such
      bound (the CPU's parameters).
    """

    name: str = "NVIDIA H200 (documented defaults)"
    bandwidth: float = 4.0e12
    launch_s: float = 4.0e-6
    throughput: float = 6.0e13
    transcendental: float = 4.0
    fp64: float = 2.0
    sm_count: int = 132
    row_cache_bytes: int = 200 * 1024
    sync_s: float = 10e-6
    # run_s: cost_fit.py --fit --robust --params run_s over the 272 points of the five
    # sweeps timed with enough samples for a steady median (af96c1d; 2026-12-04 20:13-20:46,
    # tests/golden/cost_sweep_h200.json; COST_MODEL.md). It is paid once a run by every
    # plan, so it moves no plan choice. step_s, elem_rate and combine_s: --fit over 494
    # points of the earlier sampling (2026-12-04 13:35-13:58); an unfused chain of n tiny
    # kernels took 12.7, 23.7, 57.7 and 114.7 us of host time a run for n = 1, 2, 4, 8
    # (H200 host, 2026-12-04 05:33 UTC): 11-14 us a further launch, of which launch_s (an
    # empty kernel's launch) is 5-6. The new points fit step_s lower (1.1-3.2 us) but hold
    # only 13 plans of two or three short kernels, and step_s moves plan choices: kept
    run_s: float = 9.1e-6
    step_s: float = 10.8e-6
    eff_pointwise: float = 1.0
    eff_reduction: float = 1.0
    eff_row_warp: float = 1.0
    eff_row_block: float = 1.0
    eff_row_smem: float = 1.0
    eff_row_looped: float = 1.0
    eff_row_strided: float = 1.0
    # a slab's block loads, combines through shared memory and stores in turn: 0.6-0.96 of
    # the prediction at full efficiency on the H200 (2026-12-03, seven slab shapes)
    eff_row_slab: float = 0.7
    # a slab kept in shared memory (beside chip_rows' phases): the wide sweep's three such
    # shapes and six of (96-256, 256k-512k) float32 at 0.8-0.98 of copy (H100 2026-12-05;
    # 0.7 predicted them 1.28-1.82x too slow)
    eff_row_slab_smem: float = 0.9
    strided_cols: int = 64
    chip_rows: float = 12.0
    chip_exp: float = 0.2
    smem_per_sm: int = 228 * 1024
    l2_bandwidth: float = 28.2e12
    elem_rate: float = 1.4e12
    # a split reduction's last block combining the others' partials (cost.reduction_splits):
    # the tuner's kernel times on the H200 (2026-12-04, held-out seeds 27 and 28) put split
    # sums 2.2-3.8 us above unsplit sums and pointwise kernels of the same sweeps; the run-
    # level fit of 2026-12-04 gives 3.3-3.6 us, 4 points of 494 more within +-25% (428
    # against 424). Off: the exact searches' lower bounds do not know the term, and with
    # it the plain branch and bound of a 32-op random graph under launch_s = 1 ns ran
    # past 15 minutes (test_plan_search), where it took under a second without
    combine_s: float = 0.0
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
        "sync_s": ("sync_s", 1.0), "sync_us": ("sync_s", 1e-6),
        "run_s": ("run_s", 1.0), "run_us": ("run_s", 1e-6),
        "step_s": ("step_s", 1.0), "step_us": ("step_s", 1e-6),
        "eff_pointwise": ("eff_pointwise", 1.0), "eff_reduction": ("eff_reduction", 1.0),
        "eff_row_warp": ("eff_row_warp", 1.0), "eff_row_block": ("eff_row_block", 1.0), "eff_row_smem": ("eff_row_smem", 1.0),
        "eff_row_looped": ("eff_row_looped", 1.0), "eff_row_strided": ("eff_row_strided", 1.0),
        "eff_row_slab": ("eff_row_slab", 1.0), "eff_row_slab_smem": ("eff_row_slab_smem", 1.0),
        "strided_cols": ("strided_cols", 1),
        "chip_rows": ("chip_rows", 1.0), "chip_exp": ("chip_exp", 1.0),
        "smem_per_sm": ("smem_per_sm", 1), "l2_bandwidth": ("l2_bandwidth", 1.0),
        "elem_rate": ("elem_rate", 1.0), "combine_s": ("combine_s", 1.0),
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
            if fname in ("run_s", "step_s", "chip_exp", "elem_rate", "combine_s") and v == 0:   # may be off
                kw[fname] = 0.0
                continue
            if not math.isfinite(v) or v <= 0:
                raise ValueError(f"calibration value {key}={value!r} must be a positive number")
            kw[fname] = int(round(v)) if fname in ("sm_count", "row_cache_bytes", "smem_per_sm", "strided_cols") else v
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


def op_weight(nd: Node, params: DeviceParams, graph: Graph) -> float:
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
