"""Where the floor of a small cell's time comes from (sweep noise study, not a test).

    PYTHONPATH=. python3 benchmarks/floor_noise.py

Times a 4 MiB device copy and a small fuselab cell, each run bracketed by two CUDA events
as fuselab.runtime.timing does, under variants: as is, GC off, pinned to one core,
events reused, the host time of the call, and 20 runs back to back. Prints percentiles
(microseconds) and a histogram. On the H200 alone in its process (2026-12-03 15:37 UTC):
the copy's median 12.2 us (10%-90%: 11.3-14.4), the cell's 15.1 (14.4-17.0), whatever
the variant; see COST_MODEL.md ("The run's floor").
"""
from __future__ import annotations

import gc
import os
import time

import numpy as np

import cupy as cp

import fuselab
from fuselab import runtime
from fuselab.plan import make_plan

BINS = [0, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 35, 40, 60, 1e9]


def show(label: str, ts: list[float]) -> None:
    q = np.percentile(ts, [10, 25, 50, 75, 90])
    print(f"{label:28s} p10/25/50/75/90 {' '.join(f'{v:5.1f}' for v in q)}  hist {np.histogram(ts, bins=BINS)[0].tolist()}",
          flush=True)


def evented(fn, n: int, reuse: bool = False) -> list[float]:
    s0, e0 = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for _ in range(n):
        s, e = (s0, e0) if reuse else (cp.cuda.Event(), cp.cuda.Event())
        s.record()
        fn()
        e.record()
        e.synchronize()
        out.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
    return out


def main() -> None:
    mode = "alone"
    src = cp.ones(1 << 20, cp.float32)
    dst = cp.empty_like(src)
    x = cp.random.rand(714583).astype(cp.float32)
    s = cp.random.rand(714583).astype(cp.float32)
    traced = fuselab.trace_cell("y = np.clip(x * s + 0.5, 0.0, 6.0)", {"np": np, "x": x, "s": s})
    exe = runtime.Executable(make_plan(traced.graph, "auto"))
    env = exe.prepare(traced.inputs)
    exe.run(env=env)
    fns = {"copy": lambda: cp.copyto(dst, src), "cell": lambda: exe.run(env=env)}
    n = 600
    for name, fn in fns.items():
        evented(fn, 50)
        show(f"{mode} {name}", evented(fn, n))
        show(f"{mode} {name} events reused", evented(fn, n, reuse=True))
        gc.disable()
        show(f"{mode} {name} gc off", evented(fn, n))
        gc.enable()
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[len(cpus) // 2]})
        show(f"{mode} {name} pinned", evented(fn, n))
        os.sched_setaffinity(0, set(cpus))
        host = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            t1 = time.perf_counter()
            cp.cuda.get_current_stream().synchronize()
            host.append((t1 - t0) * 1e6)
        show(f"{mode} {name} host call", host)
        many = []
        for _ in range(60):
            st, en = cp.cuda.Event(), cp.cuda.Event()
            st.record()
            for _ in range(20):
                fn()
            en.record()
            en.synchronize()
            many.append(cp.cuda.get_elapsed_time(st, en) * 1e3 / 20)
        show(f"{mode} {name} 20 back to back", many)


if __name__ == "__main__":
    main()
