"""Device calibration for the cost model, measured once per device and cached as JSON.

bandwidth_Bps: a large device-to-device copy, bytes read + written per second.
launch_s: the cost of one more kernel in a stream of empty kernels.
flops_per_s: float32 FMA throughput (2 flops each) of a kernel built to be compute-bound;
transcendental_factor: how many FMA-times one expf costs, from the same probe with expf.

The host's speed is not calibrated: a probe of Python's time a run (cache version 2)
measured 12.9 and 8.6 us a further launch a minute apart on one machine and moved the
cost model's predictions away from the sweep it ran beside (benchmarks/COST_MODEL.md,
2026-12-04 13:35), so the model's run_s and step_s are constants fitted on the sweeps. A
cache written with that probe keeps its device numbers; the model ignores the rest.
"""
from __future__ import annotations

import json
import time
from typing import Any

from ..paths import calibration_path

_PROBE = r"""
extern "C" __global__ void fl_empty() {}
extern "C" __global__ void fl_fma(float* out, float a, float b) {
    float x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3;
    for (int i = 0; i < 1024; ++i) {
        x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3;
}
extern "C" __global__ void fl_exp(float* out, float a) {
    float x0 = threadIdx.x * 1e-3f, x1 = x0 + 1e-3f, x2 = x0 + 2e-3f, x3 = x0 + 3e-3f;
    for (int i = 0; i < 256; ++i) {
        x0 = expf(x0 * a); x1 = expf(x1 * a); x2 = expf(x2 * a); x3 = expf(x3 * a);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3;
}
"""

_MEMORY: dict[str, dict[str, Any]] = {}

CALIBRATION_VERSION = 3     # 1: device numbers; 2: + a host probe (dropped); 3: device numbers


def calibrate(force: bool = False) -> dict[str, Any]:
    """{bandwidth_Bps, launch_s, flops_per_s, transcendental_factor, sm_count, device_name,
    measured_at, version}, measured on the current device the first time and read from
    the cache afterwards (of any version: the device numbers have not changed meaning)."""
    from .device import device_info
    info = device_info()
    if not force and info.name in _MEMORY:
        return dict(_MEMORY[info.name])
    path = calibration_path(info.name)
    data: dict[str, Any] | None = None
    if not force and path.exists():
        try:
            cached = json.loads(path.read_text())
            if isinstance(cached, dict) and cached.get("device_name") == info.name:
                data = cached
        except (OSError, ValueError):
            pass  # a damaged cache is measured again
    if data is not None:
        _MEMORY[info.name] = data
        return dict(data)
    data = measure_device()
    _MEMORY[info.name] = data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2))
    except OSError:
        pass  # a read-only home still gets the numbers for this process
    return dict(data)


def measure_device() -> dict[str, Any]:
    import cupy
    from .device import device_info
    from .timing import time_gpu
    info = device_info()
    # Bandwidth: 1 GiB copied, read + written.
    n = 1 << 28
    a = cupy.ones(n, cupy.float32)
    b = cupy.empty_like(a)
    copy = time_gpu(lambda: cupy.copyto(b, a), "copy", repeats=10, warmup=2)
    bandwidth = 2 * a.nbytes / copy.median_s
    a = b = None  # give the 2 GiB back before the probes
    module = cupy.RawModule(code=_PROBE, options=("--fmad=true",))
    empty, fma, exp = (module.get_function(k) for k in ("fl_empty", "fl_fma", "fl_exp"))
    # Launch cost: a stream of 2000 empty kernels.
    launches = 2000
    t = time_gpu(lambda: [empty((1,), (32,), ()) for _ in range(launches)], "launch", repeats=5, warmup=1)
    launch_s = t.median_s / launches
    # Compute: enough blocks for every SM, 4 independent FMA chains per thread.
    blocks, threads = info.sm_count * 8, 256
    out = cupy.empty(blocks * threads, cupy.float32)
    tf = time_gpu(lambda: fma((blocks,), (threads,), (out, cupy.float32(0.999), cupy.float32(0.001))),
                  "fma", repeats=10)
    flops = blocks * threads * 4 * 1024 * 2 / tf.median_s
    te = time_gpu(lambda: exp((blocks,), (threads,), (out, cupy.float32(0.5))), "exp", repeats=10)
    exp_per_s = blocks * threads * 4 * 256 / te.median_s
    data = {"bandwidth_Bps": bandwidth, "launch_s": launch_s, "flops_per_s": flops,
            "transcendental_factor": (flops / 2) / exp_per_s, "sm_count": info.sm_count,
            "device_name": info.name, "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
            "version": CALIBRATION_VERSION}
    return data


calibration = calibrate
