"""Device calibration for the cost model, measured once per device and cached as JSON.

bandwidth_Bps: a large device-to-device copy, bytes read + written per second.
launch_s: the cost of one more kernel in a stream of empty kernels.
flops_per_s: float32 FMA throughput (2 flops each) of a kernel built to be compute-bound;
transcendental_factor: how many FMA-times one expf costs, from the same probe with expf.
host_run_s, host_launch_s (since version 2): the host's Python and CuPy speed at running a
plan, which differs between machines and between starts of one machine. host_run_s: the
host time of one `Executable.run` of a one-kernel plan over 1,024 float32 elements,
without a sync; host_launch_s: the host time each further launch adds, from an unfused
chain of HOST_CHAIN such kernels (run(n) - run(1)) / (n - 1). The cost model's run_s and
step_s follow from them (fuselab.plan.device.host_overheads).

The cache is versioned (CALIBRATION_VERSION): a cache of an older version gets the probes
it lacks measured and is rewritten; where they cannot be measured the record stays without
them and the cost model keeps its constants.
"""
from __future__ import annotations

import json
import statistics
import time
from typing import Any, Callable

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

CALIBRATION_VERSION = 2     # 1: device numbers only; 2: + host_run_s, host_launch_s
HOST_CHAIN = 4              # kernels of the host probe's unfused chain
HOST_RUNS = 100             # runs a batch, timed together without a sync
HOST_BATCHES = 5


def calibrate(force: bool = False, refresh_host: bool = False) -> dict[str, Any]:
    """{bandwidth_Bps, launch_s, flops_per_s, transcendental_factor, sm_count, device_name,
    host_run_s, host_launch_s, version}, measured on the current device the first time and
    read from the cache afterwards (a cache of an older version is completed: `upgrade`).
    The host probe describes the machine start that measured it, which a cache outlives:
    `refresh_host` measures it again (keeping the device numbers) and caches the result."""
    from .device import device_info
    info = device_info()
    if not force and info.name in _MEMORY and not refresh_host:
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
    if not force and info.name in _MEMORY:
        data = _MEMORY[info.name]
    if data is not None and data.get("version", 1) >= CALIBRATION_VERSION and not refresh_host:
        _MEMORY[info.name] = data
        return dict(data)
    if data is None:
        data = measure_device()
    else:   # an older cache or a refresh: the device numbers stand, the host probe is measured now
        data = upgrade({k: v for k, v in data.items() if not k.startswith("host_")}, measure_host)
    _MEMORY[info.name] = data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2))
    except OSError:
        pass  # a read-only home still gets the numbers for this process
    return dict(data)


def upgrade(data: dict[str, Any], host_probe: Callable[[], dict[str, float]]) -> dict[str, Any]:
    """A calibration record of an older version brought to CALIBRATION_VERSION: the host
    probe measured and merged in. A probe that fails leaves the record without it (the
    cost model then keeps its run_s and step_s constants), marked current so that it is
    not tried in every process."""
    out = dict(data)
    try:
        out.update(host_probe())
    except Exception as e:  # noqa: BLE001 - calibration is an improvement, never a requirement
        out["host_probe_error"] = f"{type(e).__name__}: {e}"
    out["version"] = CALIBRATION_VERSION
    return out


def host_overheads(run_one: Callable[[], Any], run_chain: Callable[[], Any], n: int = HOST_CHAIN,
                   runs: int = HOST_RUNS, batches: int = HOST_BATCHES,
                   timer: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """{host_run_s, host_launch_s}: host seconds of one call of `run_one` (a run of a
    one-kernel plan) and the host seconds each further launch adds in `run_chain` (a run
    of n such kernels), each the median over `batches` batches of `runs` calls in a row,
    the two interleaved batch by batch. Nothing waits for the device: what is timed is
    what Python spends issuing the work, as a run issues it."""
    if n < 2:
        raise ValueError("the chain needs at least two kernels")
    from .timing import no_gc
    for _ in range(2):   # first calls: allocator pools, argument caches
        run_one()
        run_chain()
    one: list[float] = []
    chain: list[float] = []
    with no_gc():
        for _ in range(batches):
            for fn, out in ((run_one, one), (run_chain, chain)):
                t0 = timer()
                for _ in range(runs):
                    fn()
                out.append((timer() - t0) / runs)
    t1, tn = statistics.median(one), statistics.median(chain)
    return {"host_run_s": t1, "host_launch_s": max(0.0, (tn - t1) / (n - 1))}


def host_probe_plans(n: int = HOST_CHAIN, size: int = 1024):
    """The host probe's plans: one kernel adding a constant to `size` float32 elements,
    and an unfused chain of n of them (each kernel reads the one before's output)."""
    import numpy as np
    from ..ir import GraphBuilder
    from ..plan.kernels import unfused_plan
    plans = []
    for k in (1, n):
        b = GraphBuilder()
        y = b.input("x", (size,), np.float32)
        one = b.const(1.0, np.float32)
        for _ in range(k):
            y = b.elemwise("add", [y, one])
        plans.append(unfused_plan(b.build([("y", y)])))
    return plans[0], plans[1]


def measure_host() -> dict[str, float]:
    """host_overheads of this machine's runtime, on the host probe's plans: compiled (or
    read from the cubin cache) untuned, their inputs bound once, then run as a cell's
    runs are; the device is synchronised once at the end. The runs take about 0.04 s;
    host_probe_s records the whole probe, compiles included."""
    import cupy
    from .launch import Executable
    started = time.perf_counter()
    p1, pn = host_probe_plans()
    e1, en = Executable(p1, tune=False), Executable(pn, tune=False)
    x = cupy.ones(1024, cupy.float32)
    env1, envn = e1.prepare({"x": x}), en.prepare({"x": x})
    out = host_overheads(lambda: e1.run(env=env1), lambda: en.run(env=envn), n=len(pn.kernels))
    cupy.cuda.get_current_stream().synchronize()
    out["host_probe_s"] = time.perf_counter() - started
    return out


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
            "device_name": info.name, "measured_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    return upgrade(data, measure_host)


calibration = calibrate
