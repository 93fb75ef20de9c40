"""GPU benchmark of fuselab's generated kernels.

For each workload: time and GB/s of the fuselab plan (make_plan 'auto'), the unfused
plan, eager CuPy, cupy.fuse (where it applies) and torch.compile (when PyTorch is
installed and the time budget allows), with a 1 GiB device-to-device copy as the
bandwidth ceiling. A row's contenders and the copy are timed in alternating rounds, so
that clock drift favours none of them. Every fuselab result is checked against eager
CuPy before it is timed. Prints a table and writes it as markdown (and JSON).

    python benchmarks/bench_gpu.py --out bench.md [--scale -4] [--deadline 300]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]    # this checkout (fuselab, tests.support), the workloads
# A fresh CuPy kernel cache, so the compile times below are cold compiles.
os.environ.setdefault("CUPY_CACHE_DIR", tempfile.mkdtemp(prefix="fuselab-bench-cupy-"))

from workloads import Workload, all_workloads  # noqa: E402

START = time.perf_counter()


def elapsed() -> float:
    return time.perf_counter() - START


def copy_bandwidth(nbytes: int = 1 << 30) -> float:
    import cupy as cp
    from fuselab.runtime.timing import time_gpu
    a = cp.ones(nbytes // 4, cp.float32)
    b = cp.empty_like(a)
    t = time_gpu(lambda: cp.copyto(b, a), "copy", repeats=20, warmup=3)
    return 2 * nbytes / t.median_s


def plan_for(graph):
    from fuselab.plan import make_plan
    return make_plan(graph, "auto")


def torch_callable(w: Workload, inputs: dict) -> tuple[Callable[[], Any] | None, str]:
    """w's torch.compile'd computation on the same arrays (shared through DLPack), compiled."""
    try:
        import torch
    except ImportError:
        return None, "no PyTorch"
    tensors = [torch.from_dlpack(inputs[n]) for n in w.graph.input_names()]
    fn = torch.compile(w.torch_fn)
    t0 = time.perf_counter()
    fn(*tensors)
    torch.cuda.synchronize()
    return (lambda: fn(*tensors)), f"compiled in {time.perf_counter() - t0:.1f} s"


def fuse_callable(w: Workload, inputs: dict) -> tuple[Callable[[], Any] | None, str]:
    import cupy as cp
    if w.fuse_fn is None:
        return None, "n/a"
    try:
        fused = cp.fuse(w.fuse_fn)
        args = [inputs[n] for n in w.graph.input_names()]
        fused(*args)
        return (lambda: fused(*args)), ""
    except Exception as e:  # noqa: BLE001 - cupy.fuse does not take every program
        return None, f"cupy.fuse failed: {type(e).__name__}"


def bench(w: Workload, repeats: int, torch_until: float) -> dict:
    import cupy as cp
    from fuselab import runtime
    from fuselab.interp import run_graph
    from fuselab.plan import unfused_plan
    from fuselab.runtime.measure import cell_bytes
    from fuselab.runtime.timing import GraphReplay, time_interleaved
    from fuselab.codegen import CodegenOptions
    g = w.graph
    inputs = w.make_inputs(cp)
    plan = plan_for(g)
    unfused = unfused_plan(g)
    options = CodegenOptions(**w.options)
    t0 = time.perf_counter()
    exe = runtime.Executable(plan, options=options)
    first_compile = time.perf_counter() - t0
    un = runtime.Executable(unfused, options=options)
    env = exe.prepare(inputs)
    got = exe.run(env=env)
    want = run_graph(g, inputs, cp)
    check = runtime.compare(got, want, {"float16": 1e-2, "float32": 1e-4})
    del got, want
    nbytes = cell_bytes(plan)
    row = {"workload": w.name, "kind": w.kind, "kernels": len(plan.kernels), "bytes": nbytes,
           "check": "ok" if check.ok else f"MISMATCH {check.worst}", "compile_s": first_compile,
           "notes": [c.notes[0] for c in exe.codes if hasattr(c, "notes") and c.notes]}
    fuse_fn, row["fuse_note"] = fuse_callable(w, inputs)
    torch_fn, row["torch_note"] = None, "skipped (time budget)"
    if elapsed() < torch_until and w.torch_fn is not None:
        try:
            torch_fn, row["torch_note"] = torch_callable(w, inputs)
        except Exception as e:  # noqa: BLE001
            row["torch_note"] = f"torch.compile failed: {type(e).__name__}: {str(e)[:80]}"
    # A 1 GiB device copy, timed in the same rounds: the bandwidth ceiling right now.
    src = cp.ones(1 << 28, cp.float32)
    dst = cp.empty_like(src)
    fns = {"copy": lambda: cp.copyto(dst, src), "auto": lambda: exe.run(env=env),
           "unfused": lambda: un.run(env=env), "eager": lambda: run_graph(g, inputs, cp)}
    if fuse_fn:
        fns["fuse"] = fuse_fn
    if torch_fn:
        fns["torch"] = torch_fn
    # Alternating rounds: clock drift over the run favours none of the contenders.
    timed = time_interleaved(fns, repeats, bytes_moved={"auto": nbytes})
    del src, dst
    row["copy_Bps"] = 2 * (1 << 30) / timed["copy"].median_s
    for k in ("auto", "unfused", "eager", "fuse", "torch"):
        row[f"{k}_s"] = timed[k].median_s if k in timed else None
    if w.kind == "launch-bound":
        replay = GraphReplay(lambda: exe.run(env=env, release=False))
        row["replay_s"] = replay.time("replay", max(repeats, 50)).median_s
        x = inputs[g.input_names()[0]]
        runtime.execute(plan, {"x": x}, options=options)
        walls = []
        for _ in range(20):
            t0 = time.perf_counter()
            runtime.execute(plan, {"x": x}, options=options)
            walls.append(time.perf_counter() - t0)
        row["rerun_wall_s"] = statistics.median(walls)
    row["auto_gbps"] = nbytes / row["auto_s"] / 1e9
    row["copy_fraction"] = row["auto_gbps"] * 1e9 / row["copy_Bps"]
    return row


def _ms(t: float | None) -> str:
    return "—" if t is None else (f"{t * 1e3:.3f}" if t >= 1e-3 else f"{t * 1e6:.1f} µs")


def table(rows: list[dict], copy_bps: float, device: str, date: str) -> str:
    head = ("| workload | fuselab auto | GB/s | copy GB/s | % of copy | unfused | eager CuPy | cupy.fuse | "
            "torch.compile | target | check |")
    lines = [f"Device: {device}; date: {date}; device-to-device copy at the start: {copy_bps / 1e9:.0f} GB/s "
             "(bytes read + written). Each row's contenders and a 1 GiB copy are timed in alternating "
             "rounds (medians of CUDA-event timings after warm-up; ms unless marked µs); GB/s counts each "
             "input read once and each output written once; % of copy divides it by that row's copy.",
             "", head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        if r["kind"] == "pointwise":
            target = "≥ 90% copy" + (" ✓" if r["copy_fraction"] >= 0.90 else " ✗")
        elif r["kind"] in ("row", "reduction"):
            target = "≥ 85% copy" + (" ✓" if r["copy_fraction"] >= 0.85 else " ✗")
        else:
            best = r.get("replay_s") or r["auto_s"]
            target = ("≤ cupy.fuse" + (" ✓" if r["fuse_s"] and best <= r["fuse_s"] else " ✗")) if r["fuse_s"] else "—"
        if r.get("torch_s") and r["kind"] != "launch-bound":
            target += ", ≤ torch" + (" ✓" if r["auto_s"] <= r["torch_s"] else " ✗")
        auto = _ms(r["auto_s"]) + (f" (graph {_ms(r['replay_s'])})" if r.get("replay_s") else "")
        lines.append(f"| {r['workload']} | {auto} | {r['auto_gbps']:.0f} | {r['copy_Bps'] / 1e9:.0f} | "
                     f"{100 * r['copy_fraction']:.0f}% | {_ms(r['unfused_s'])} | {_ms(r['eager_s'])} | "
                     f"{_ms(r['fuse_s'])} | {_ms(r.get('torch_s'))} | {target} | {r['check']} |")
    lines.append("")
    compiles = [r["compile_s"] for r in rows]
    lines.append(f"Cold compile (NVRTC through CuPy, fresh cache) per plan: median {statistics.median(compiles):.3f} s, "
                 f"max {max(compiles):.3f} s.")
    for r in rows:
        if "rerun_wall_s" in r:
            lines.append(f"Cached re-run of `runtime.execute` ({r['workload']}, wall clock, includes sync): "
                         f"{r['rerun_wall_s'] * 1e3:.2f} ms.")
    notes = [f"- {r['workload']}: {'; '.join(r['notes'])}" + (f"; torch: {r['torch_note']}" if r.get('torch_note') else "")
             + (f"; {r['fuse_note']}" if r.get("fuse_note") else "") for r in rows]
    return "\n".join(lines + ["", "Kernel strategies:", *notes])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench_gpu.md")
    ap.add_argument("--scale", type=int, default=0, help="negative: shrink sizes by 2**-scale (smoke runs)")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--deadline", type=float, default=420, help="seconds; torch.compile stops at 70%% of it")
    ap.add_argument("--only", default="", help="comma-separated substrings of workload names")
    args = ap.parse_args()
    import cupy as cp
    from fuselab import runtime
    device = runtime.device_info().name
    date = time.strftime("%Y-%m-%d")
    copy_bps = copy_bandwidth()
    print(f"{device}: copy {copy_bps / 1e9:.0f} GB/s", flush=True)
    rows = []
    for w in all_workloads(args.scale):
        if args.only and not any(s in w.name for s in args.only.split(",")):
            continue
        if elapsed() > args.deadline:
            print(f"deadline reached, skipping {w.name}")
            continue
        try:
            r = bench(w, args.repeats, torch_until=0.7 * args.deadline)
        except Exception as e:  # noqa: BLE001 - one broken workload must not hide the others
            print(f"{w.name}: FAILED {type(e).__name__}: {e}", flush=True)
            continue
        rows.append(r)
        print(f"{r['workload']}: auto {_ms(r['auto_s'])} ({100 * r['copy_fraction']:.0f}% of copy), "
              f"unfused {_ms(r['unfused_s'])}, eager {_ms(r['eager_s'])}, fuse {_ms(r['fuse_s'])}, "
              f"torch {_ms(r.get('torch_s'))} [{r['check']}] t={elapsed():.0f}s", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    md = table(rows, copy_bps, device, date)
    print(md)
    Path(args.out).write_text(md + "\n")
    Path(args.out).with_suffix(".json").write_text(json.dumps(
        {"device": device, "date": date, "copy_Bps": copy_bps, "rows": rows}, indent=1, default=str))


if __name__ == "__main__":
    main()
