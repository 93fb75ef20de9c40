"""CPU benchmark of the Numba backend (no GPU, no IPython needed).

For the pointwise and row workloads of bench_gpu.py (benchmarks/workloads.py) scaled to
64 MiB of float32 input, and a few reductions: wall time of the fuselab plan (make_plan
'auto' with this CPU's calibrated cost model), the unfused plan and plain NumPy, with a
64 MiB parallel stream copy as the bandwidth ceiling, timed in alternating rounds
(medians). Every result is checked against NumPy first. Compile times: each plan's cold
compile (a fresh cache folder), and a later process loading the same kernels from
Numba's disk cache. Prints a markdown table; writes it as JSON to the path given.

    PYTHONPATH=. python benchmarks/bench_cpu.py results.json [--repeats 10] [--only softmax]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests"), str(HERE)]
# A fresh kernel cache, so that the compile times below are cold compiles.
os.environ.setdefault("FUSELAB_CACHE_DIR", tempfile.mkdtemp(prefix="fuselab-bench-cpu-"))

import numpy as np  # noqa: E402

from workloads import (Workload, bias_relu, chain, column_mean, gelu, layernorm_w, rmsnorm_w,  # noqa: E402
                       softmax_w, sum_squares)

MIB64 = 1 << 24   # float32 elements in 64 MiB


def workloads() -> list[Workload]:
    """bench_gpu's pointwise and row workloads (and two reductions) at 64 MiB."""
    rows, long_rows = MIB64 // 1024, MIB64 // 16384
    return [chain(MIB64), gelu(MIB64), bias_relu(rows, 1024), chain(2 * MIB64, np.float16, "8-op chain float16"),
            softmax_w(rows, 1024), softmax_w(long_rows, 16384), layernorm_w(rows, 1024),
            layernorm_w(long_rows, 16384), rmsnorm_w(rows, 1024), rmsnorm_w(long_rows, 16384),
            sum_squares(MIB64), column_mean(rows, 1024)]


def numpy_random(seed: int = 0):
    """An `xp` whose random.standard_normal takes a dtype, as CuPy's does."""
    rng = np.random.default_rng(seed)
    return SimpleNamespace(random=SimpleNamespace(
        standard_normal=lambda shape, dtype=np.float64: rng.standard_normal(shape, dtype=dtype)))


def load_average() -> float | None:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def bench(w: Workload, repeats: int) -> dict:
    from fuselab.numba_backend.calibrate import _probes, device_params
    from fuselab.numba_backend.measure import reference, time_interleaved
    from fuselab.numba_backend.model import NumbaOptions
    from fuselab.numba_backend.scalar import HAS_AVX512
    from fuselab.numba_backend.run import Executable
    from fuselab.plan import make_plan, unfused_plan
    from fuselab.runtime.measure import cell_bytes
    from fuselab.runtime.verify import compare
    g = w.graph
    inputs = w.make_inputs(numpy_random())
    plan = make_plan(g, "auto", params=device_params())
    t0 = time.perf_counter()
    exe = Executable(plan)
    compile_s = time.perf_counter() - t0
    un = Executable(unfused_plan(g))
    # on an AVX-512 CPU, the same kernels as LLVM vectorizes them by itself (256 bits wide)
    narrow = Executable(plan, NumbaOptions(wide_vectors=False)) if HAS_AVX512 else None
    check = compare(exe.run(inputs), reference(plan, inputs), {"float16": 1e-2, "float32": 1e-4})
    nbytes = cell_bytes(plan)
    src = np.ones(nbytes // 8, np.float32)       # a copy moving as many bytes as the cell
    dst = np.empty_like(src)
    copy = _probes().fl_copy
    fns = {"copy": lambda: copy(src, dst), "auto": lambda: exe.run(inputs, reuse=True),
           "auto_fresh": lambda: exe.run(inputs), "unfused": lambda: un.run(inputs, reuse=True),
           "numpy": lambda: reference(plan, inputs)}
    if narrow is not None:
        fns["auto_256"] = lambda: narrow.run(inputs, reuse=True)
    with np.errstate(all="ignore"):
        timed = time_interleaved(fns, repeats, max_seconds=60)
    row = {"workload": w.name, "kind": w.kind, "kernels": len(plan.kernels), "bytes": nbytes,
           "check": "ok" if check.ok else f"MISMATCH {check.worst}", "compile_s": compile_s,
           "kernel_compile_s": exe.compile_s, "notes": [c.notes[0] for c in exe.codes if getattr(c, "notes", ())],
           "copy_Bps": 2 * src.nbytes / timed["copy"].median_s}
    for k in ("auto", "auto_fresh", "unfused", "numpy", "auto_256"):
        if k not in timed:
            continue
        row[f"{k}_s"] = timed[k].median_s
        row[f"{k}_iqr_s"] = timed[k].spread_s
    row["auto_gbps"] = nbytes / row["auto_s"] / 1e9
    row["copy_fraction"] = row["auto_gbps"] * 1e9 / row["copy_Bps"]
    row["speedup_vs_numpy"] = row["numpy_s"] / row["auto_s"]
    return row


_RELOAD = """
import json, sys, time
sys.path[:0] = {paths!r}
from workloads import chain, softmax_w
from fuselab.numba_backend.calibrate import device_params
from fuselab.numba_backend.run import Executable
from fuselab.plan import make_plan
from fuselab.numba_backend import warm_up
out = {{}}
t0 = time.perf_counter()
warm_up().join()        # what %load_ext fuselab starts in the background on a machine without CuPy
out["Numba's one-time set-up (background)"] = time.perf_counter() - t0
for w in (chain({n}), softmax_w({rows}, 1024)):
    t0 = time.perf_counter()
    exe = Executable(make_plan(w.graph, "auto", params=device_params()))
    out[w.name] = [time.perf_counter() - t0, exe.compile_s]
print(json.dumps(out))
"""


def cached_compile() -> dict:
    """A new process getting kernels that an earlier one compiled: Numba's disk cache."""
    script = _RELOAD.format(paths=sys.path[:3], n=MIB64, rows=MIB64 // 1024)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ)
    if out.returncode:
        return {"error": out.stderr[-500:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ms(t: float) -> str:
    return f"{t * 1e3:.1f}"


def table(rows: list[dict], meta: dict) -> str:
    head = ("| workload | kernels | fuselab auto (ms) | GB/s | copy GB/s | % of copy | fresh outputs (ms) | "
            "unfused (ms) | NumPy (ms) | vs NumPy | target | check |")
    lines = [f"Machine: {meta['cpu']}; date: {meta['date']}; Numba {meta['numba']}, NumPy {meta['numpy']}; "
             f"load average {meta['load_start']:.1f} at the start, {meta['load_end']:.1f} at the end. "
             "Wall-clock medians of alternating rounds; GB/s counts each input read once and each output "
             "written once; % of copy divides it by a parallel stream copy of as many bytes, timed in the "
             "same rounds. fuselab's plans write into arrays reused from run to run, as the GPU's memory "
             "pool does; \"fresh outputs\" is the same plan allocating them (the OS then zeroes each new "
             "page on its first touch); NumPy allocates as it does.", "", head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        ok = r["speedup_vs_numpy"] >= 2 and r["copy_fraction"] >= 0.6
        target = ("≥ 2× NumPy, ≥ 60% copy " + ("✓" if ok else "✗")) if r["kind"] in ("pointwise", "row") else "—"
        lines.append(f"| {r['workload']} | {r['kernels']} | {_ms(r['auto_s'])} | {r['auto_gbps']:.1f} | "
                     f"{r['copy_Bps'] / 1e9:.1f} | {100 * r['copy_fraction']:.0f}% | {_ms(r['auto_fresh_s'])} | "
                     f"{_ms(r['unfused_s'])} | "
                     f"{_ms(r['numpy_s'])} | {r['speedup_vs_numpy']:.1f}× | {target} | {r['check']} |")
    per_kernel = [t for r in rows for t in r["kernel_compile_s"].values()]
    lines += ["", f"Cold compile per kernel (parallel=True, fresh cache): median {statistics.median(per_kernel):.2f} s, "
                  f"max {max(per_kernel):.2f} s over {len(per_kernel)} kernels (the first includes Numba's start-up)."]
    cc = meta.get("cached_compile", {})
    for name, v in cc.items():
        if isinstance(v, float):
            lines.append(f"{name}, in a new process: {v * 1e3:.0f} ms; then")
        if isinstance(v, list):
            lines.append(f"Disk-cached, in a new process ({name}): plan ready in {v[0] * 1e3:.0f} ms "
                         f"({', '.join(f'{k} {s * 1e3:.1f} ms' for k, s in v[1].items())}).")
    if any("auto_256_s" in r for r in rows):
        lines += ["", "This CPU has AVX-512: kernels of float32 exp, expm1 or tanh ask LLVM for 512-bit vectors "
                      "(NumbaOptions.wide_vectors). The same plans with the width left to LLVM everywhere (256 bits), "
                      "timed in the same rounds: " +
                      ", ".join(f"{r['workload']} {_ms(r['auto_256_s'])} ms" for r in rows if "auto_256_s" in r) + "."]
    lines += ["", "Kernel strategies:", *[f"- {r['workload']}: {'; '.join(r['notes'])}" for r in rows]]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("json", help="where to write the results as JSON")
    ap.add_argument("--repeats", type=int, default=12)
    ap.add_argument("--only", default="", help="comma-separated substrings of workload names")
    args = ap.parse_args()
    import numba
    from fuselab.numba_backend.calibrate import calibrate, cpu_name
    meta = {"cpu": cpu_name(), "date": time.strftime("%Y-%m-%d %H:%M"), "numba": numba.__version__,
            "numpy": np.__version__, "threads": numba.get_num_threads(), "load_start": load_average() or 0.0}
    meta["calibration"] = calibrate()
    print(f"{meta['cpu']}: calibrated copy {meta['calibration']['bandwidth_Bps'] / 1e9:.1f} GB/s", flush=True)
    rows = []
    for w in workloads():
        if args.only and not any(s in w.name for s in args.only.split(",")):
            continue
        r = bench(w, args.repeats)
        rows.append(r)
        print(f"{r['workload']}: auto {_ms(r['auto_s'])} ms ({100 * r['copy_fraction']:.0f}% of copy), unfused "
              f"{_ms(r['unfused_s'])}, NumPy {_ms(r['numpy_s'])} ({r['speedup_vs_numpy']:.1f}x) [{r['check']}]"
              + (f"; 256-bit vectors {_ms(r['auto_256_s'])}" if "auto_256_s" in r else ""),
              flush=True)
        # the rows so far, in case the run is cut short (a time limit on a borrowed machine)
        Path(args.json).write_text(json.dumps({**meta, "rows": rows, "partial": True}, indent=1, default=str))
    meta["cached_compile"] = cached_compile()
    meta["load_end"] = load_average() or 0.0
    md = table(rows, meta)
    print(md)
    Path(args.json).write_text(json.dumps({**meta, "rows": rows}, indent=1, default=str))


if __name__ == "__main__":
    main()
