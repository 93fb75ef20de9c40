"""CPU calibration for the cost model, measured once per machine and cached as JSON
(next to the GPU's: fuselab.paths.calibration_path), as the GPU calibration is.

bandwidth_Bps: a 256 MiB stream copy by a parallel Numba loop, bytes read + written per
    second: what a memory-bound fused kernel can reach here.
launch_s: the cost of one more kernel: a call of a compiled parallel kernel that does
    almost nothing (argument checks, the thread pool's wake-up and join).
flops_per_s: float32 multiply-adds in independent chains (2 flops each; fastmath off, as
    the kernels are compiled, so no FMA contraction and no vectorized reductions).
transcendental_factor: how many multiply-add times one np.exp costs.
sm_count: threads the prange loops run on (a row kernel with fewer rows idles the rest).
row_cache_bytes: the per-core L2 cache, which keeps a row between a row kernel's passes.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from ..paths import calibration_path

_MEMORY: dict[str, dict[str, Any]] = {}

_PROBES = '''
import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True, nogil=True)
def fl_copy(a, b):
    for i in prange(a.shape[0]):
        b[i] = a[i]


@njit(parallel=True, cache=True, nogil=True)
def fl_tiny(a, b):
    for i in prange(a.shape[0]):
        b[i] = a[i]


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def fl_fma(out, a, b, n):
    for t in prange(out.shape[0]):
        x0 = np.float32(t); x1 = x0 + np.float32(1); x2 = x0 + np.float32(2); x3 = x0 + np.float32(3)
        for _ in range(n):
            x0 = x0 * a + b; x1 = x1 * a + b; x2 = x2 * a + b; x3 = x3 * a + b
        out[t] = x0 + x1 + x2 + x3


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def fl_exp(out, a, n):
    for t in prange(out.shape[0]):
        x0 = np.float32(t) * np.float32(1e-3); x1 = x0 + np.float32(1e-3)
        x2 = x0 + np.float32(2e-3); x3 = x0 + np.float32(3e-3)
        for _ in range(n):
            x0 = np.exp(x0 * a); x1 = np.exp(x1 * a); x2 = np.exp(x2 * a); x3 = np.exp(x3 * a)
        out[t] = x0 + x1 + x2 + x3
'''


def cpu_name() -> str:
    """The processor's model name and the threads Numba runs on."""
    # (platform.processor() runs `uname -p` in a subprocess, whose catch_warnings moves
    # the warnings filters' version: recording.registries_kept)
    model = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numba
    return f"CPU: {model} ({numba.get_num_threads()} threads, Numba)"


def _l2_bytes() -> int:
    try:
        text = Path("/sys/devices/system/cpu/cpu0/cache/index2/size").read_text().strip().upper()
        return int(text[:-1]) * 1024 if text.endswith("K") else int(text)
    except (OSError, ValueError):
        return 262144


def _probes():
    """The probe kernels, as a module file so that Numba caches them on disk."""
    from .compile import cache_dir, load_module
    path = cache_dir() / "fl_calibration_probes.py"
    if not path.exists() or path.read_text() != _PROBES:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_PROBES)
        tmp.replace(path)     # atomic: another process never imports half a file
    return load_module(path)


def _median_time(fn, repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure_cpu() -> dict[str, Any]:
    import numpy as np
    import numba
    p = _probes()
    threads = numba.get_num_threads()
    n = 1 << 26                                   # 256 MiB of float32, far beyond the caches
    a = np.ones(n, np.float32)
    b = np.empty_like(a)
    copy_s = _median_time(lambda: p.fl_copy(a, b), 7)
    bandwidth = 2 * a.nbytes / copy_s
    del a, b
    x, y = np.ones(threads, np.float32), np.empty(threads, np.float32)
    launch_s = _median_time(lambda: p.fl_tiny(x, y), 2000, warmup=50)
    out = np.empty(threads, np.float32)
    steps = 1 << 22
    fma_s = _median_time(lambda: p.fl_fma(out, np.float32(0.999), np.float32(0.001), steps), 3, warmup=1)
    flops = threads * 4 * steps * 2 / fma_s
    exp_steps = 1 << 19
    exp_s = _median_time(lambda: p.fl_exp(out, np.float32(0.5), exp_steps), 3, warmup=1)
    exp_per_s = threads * 4 * exp_steps / exp_s
    return {"bandwidth_Bps": bandwidth, "launch_s": launch_s, "flops_per_s": flops,
            "transcendental_factor": (flops / 2) / exp_per_s, "fp64": 1.0, "sm_count": threads,
            "row_cache_bytes": _l2_bytes(), "device_name": cpu_name(),
            "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
            "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}


def cached() -> dict[str, Any] | None:
    """The CPU's figures from this process's memory or the disk cache; None where they
    were never measured (or the file is damaged: measured again). Reads only, so the
    Numba warm-up (fuselab.numba_backend.warm_up) takes it off the first plan's path."""
    name = cpu_name()
    if name in _MEMORY:
        return dict(_MEMORY[name])
    try:
        data = json.loads(calibration_path(name).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("device_name") != name:
        return None
    _MEMORY[name] = data
    return dict(data)


def calibrate(force: bool = False) -> dict[str, Any]:
    """The CPU's figures, measured the first time and read from the cache afterwards."""
    data = None if force else cached()
    if data is not None:
        return data
    data = measure_cpu()
    _MEMORY[cpu_name()] = data
    path = calibration_path(cpu_name())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2))
    except OSError:
        pass   # a read-only home still gets the numbers for this process
    return dict(data)


def device_params(force: bool = False):
    """The cost model's parameters for this CPU (plan.cost.DeviceParams)."""
    from ..plan.cost import DeviceParams
    # no GPU terms: a CPU has no shared-memory row tiers, and a plan's run costs its
    # kernels' calls (launch_s) rather than the CUDA runtime's fixed preparation
    # rows along a strided axis: each row's loop walks its columns a stride apart, one
    # stream per column. Up to 16 the prefetchers follow them (x - x.mean(0), 2 cores:
    # (2, 4M) 4.2 ms and (16, 1M) 11.6 ms against 16.8 and 19.6 ms for the column mean and
    # the subtraction apart); beyond, a row at a time read a line per element ((32, 500k)
    # 50 ms against 17 ms, (1000, 1000) 3.2 against 0.68 ms). Such rows now run in tiles of
    # adjacent rows (row.py's _generate_tiled): level with the unfused plan on one thread
    # ((1000, 1000) 1.0-1.3 ms against 1.3), ahead where a tile's columns stay in L2 ((32,
    # 500k) 18 against 23 ms) on a loaded machine: the model keeps them apart until a quiet
    # measurement says more. (slabs of strided rows run in the same tiles.) No element rate:
    # a core's loops are bound by their bytes or their flops
    return DeviceParams.from_dict({**calibrate(force), "run_s": 0.0, "step_s": 0.0, "chip_exp": 0.0, "eff_row_strided": 0.2,
                                   "eff_row_slab": 0.2, "eff_row_slab_smem": 0.2, "strided_cols": 16, "elem_rate": 0.0},
                                  source="calibration (CPU)")
