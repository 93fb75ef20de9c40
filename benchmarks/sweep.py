"""The shape sweep (BENCHMARKS.md "Shape sweep"): fuselab's default path against
torch.compile and a copy of the same bytes, over families of notebook cells at many
shapes (benchmarks/sweep_cases.py). One device run:

    PYTHONPATH=. python3 benchmarks/sweep.py --out $OUT/sweep.json [--deadline 480] [--only softmax]
    PYTHONPATH=. python3 benchmarks/sweep.py --out $OUT/random.json --random 60 --seed 7   # untuned shapes
    PYTHONPATH=. python3 benchmarks/sweep.py --wide --only "strided rows" --alt max       # auto against max
    PYTHONPATH=. python3 benchmarks/sweep.py --wide --only "slab rows" --alt strided-apart  # ... no strided rows

For each case: the cell is traced (CuPy inputs), planned `auto` and run as a user's first
run would (compile, launch configurations tuned on this GPU, first result), wall-clock
timed; its result is checked against eager CuPy; torch.compile(dynamic=False) compiles
the same computation on the same memory (DLPack); then fuselab, torch.compile and a
device copy of the cell's bytes are timed in alternating rounds (CUDA events, medians).
Each case also records the cost model's prediction and every tuned kernel's candidates
with their times. benchmarks/sweep_report.py turns the JSON into tables and a heat map.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
os.environ.setdefault("CUPY_CACHE_DIR", tempfile.mkdtemp(prefix="fuselab-sweep-cupy-"))
os.environ.setdefault("FUSELAB_CACHE_DIR", tempfile.mkdtemp(prefix="fuselab-sweep-tune-"))

from sweep_cases import NEW_FAMILIES, Case, cases, make_inputs, random_cases, wide_cases  # noqa: E402

START = time.perf_counter()


def alt_plan(graph, alt: str):
    """The plan of strategy `alt`, or with "strided-apart" auto's plan without row kernels
    along a strided axis (their reductions and uses in kernels apart)."""
    from dataclasses import replace

    from fuselab.plan import make_plan
    from fuselab.plan.legality import DEFAULT_BUDGETS
    if alt == "strided-apart":
        return make_plan(graph, "auto", budgets=replace(DEFAULT_BUDGETS, min_strided_rows=1 << 62))
    return make_plan(graph, alt)


def run_case(case: Case, repeats: int, with_torch: bool, params, alt: str = "") -> dict[str, Any]:
    import cupy as cp
    import numpy as np
    import fuselab
    from fuselab import runtime
    from fuselab.interp import run_graph
    from fuselab.plan import make_plan
    from fuselab.runtime.measure import cell_bytes
    from fuselab.runtime.timing import repeats_for, time_interleaved

    inputs = make_inputs(case, cp)
    cp.cuda.get_current_stream().synchronize()
    row: dict[str, Any] = {"family": case.family, "size": case.size, "kind": case.kind, "source": case.source}
    # -- fuselab, as a user's first run ------------------------------------------------
    # (the namespace alone holds the arrays while the cell traces, as a notebook's names
    # do: with `inputs` holding them too, trace/held.py would take them for arrays another
    # object holds and keep a copy of each as read)
    names, ns = list(inputs), {"np": np, **inputs}
    inputs = None
    t0 = time.perf_counter()
    traced = fuselab.trace_cell(case.source, ns)
    plan = make_plan(traced.graph, "auto")
    exe = runtime.Executable(plan)
    env = exe.prepare(traced.inputs)
    got = exe.run(env=env)
    cp.cuda.get_current_stream().synchronize()
    row["first_run_s"] = time.perf_counter() - t0
    inputs = {k: ns[k] for k in names}
    del ns
    t0 = time.perf_counter()
    again = runtime.Executable(plan)
    again.run(env=env)
    cp.cuda.get_current_stream().synchronize()
    row["rerun_s"] = time.perf_counter() - t0
    # a cached re-run compiles nothing (its kernels are cache hits) and tunes nothing
    kernels = sum(1 for c in again.codes if hasattr(c, "source"))
    row["rerun_compiled"] = kernels - again.cache_hits + ("(candidates)" in again.compile_s)
    row["rerun_tuned"] = sum(1 for t in again.tuning.values() if t.source == "tuned")
    ref = run_graph(traced.graph, {k: traced.inputs[k] for k in traced.graph.input_names()}, cp)
    check = runtime.compare({k: got[k] for k in case.outputs}, {k: ref[k] for k in case.outputs},
                            {"float16": 1e-2, "float32": 1e-4})
    if not check.ok:
        # eager CuPy is not NumPy everywhere (its float32 std over an axis of 3 was 11%
        # off NumPy's where the elements nearly agree, fuselab's 3e-7: H200 2026-12-04):
        # a disagreement with CuPy counts only if NumPy's own result disagrees too
        host = {k: cp.asnumpy(v) for k, v in traced.inputs.items()}
        np_ref = run_graph(traced.graph, {k: host[k] for k in traced.graph.input_names()}, np)
        again_np = runtime.compare({k: cp.asnumpy(got[k]) for k in case.outputs}, {k: np_ref[k] for k in case.outputs},
                                   {"float16": 1e-2, "float32": 1e-4})
        row["check_cupy"] = f"MISMATCH {check.worst}"
        check = again_np
        row["check"] = "ok (NumPy's; eager CuPy differs)" if check.ok else f"MISMATCH {check.worst}"
    else:
        row["check"] = "ok"
    row["kernels"] = [{"name": c.name, "template": c.template.value, "notes": list(getattr(c, "notes", ())),
                       "config": c.config.label() if getattr(c, "config", None) else None,
                       "tuning": exe.tuning[k].summary() if k in exe.tuning else None,
                       "candidates": list(exe.tuning[k].times) if k in exe.tuning else []}
                      for k, c in enumerate(exe.codes)]
    rep = plan.report(params)
    row["predicted_s"] = rep.time_s
    row["predicted_kernels_s"] = [k.time_s for k in rep.kernels]
    row["bytes"] = nbytes = cell_bytes(plan)
    # -- torch.compile on the same memory -------------------------------------------------
    torch_fn = None
    if with_torch:
        try:
            import torch
            import torch._dynamo
            torch._dynamo.reset()   # each case compiles afresh, for its own shapes
            tensors = [torch.from_dlpack(inputs[n]) for n in case.inputs]
            fn = torch.compile(case.torch_fn, dynamic=False)
            t0 = time.perf_counter()
            out_t = fn(*tensors)
            torch.cuda.synchronize()
            if isinstance(out_t, tuple):   # several outputs: the first is checked
                out_t = out_t[0]
            row["torch_compile_s"] = time.perf_counter() - t0
            want = ref[case.outputs[0]]
            tcheck = runtime.compare({"y": cp.from_dlpack(out_t.contiguous())}, {"y": want},
                                     {"float16": 1e-2, "float32": 1e-4})
            row["torch_check"] = "ok" if tcheck.ok else f"MISMATCH {tcheck.worst}"
            torch_fn = lambda: fn(*tensors)  # noqa: E731
        except Exception as e:  # noqa: BLE001 - a case torch cannot compile stays in the table
            row["torch_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    # -- a copy of the same bytes: the bandwidth ceiling at this size ----------------------
    half = max(nbytes // 2, 4) // 4
    src = cp.ones(half, cp.float32)
    dst = cp.empty_like(src)
    fns = {"fuselab": lambda: exe.run(env=env), "copy": lambda: cp.copyto(dst, src)}
    if torch_fn is not None:
        fns["torch"] = torch_fn
    if alt:   # another strategy's plan, where it differs, timed in the same rounds
        plan_alt = alt_plan(traced.graph, alt)
        if [k.nodes for k in plan_alt.kernels] != [k.nodes for k in plan.kernels]:
            exe_alt = runtime.Executable(plan_alt)
            env_alt = exe_alt.prepare(traced.inputs)
            got_alt = exe_alt.run(env=env_alt)
            acheck = runtime.compare({k: got_alt[k] for k in case.outputs}, {k: ref[k] for k in case.outputs},
                                     {"float16": 1e-2, "float32": 1e-4})
            row["alt"] = {"strategy": alt, "templates": [k.template.value for k in plan_alt.kernels],
                          "predicted_s": plan_alt.report(params).time_s,
                          "check": "ok" if acheck.ok else f"MISMATCH {acheck.worst}",
                          "notes": [list(getattr(c, "notes", ())) for c in exe_alt.codes]}
            fns["alt"] = lambda: exe_alt.run(env=env_alt)
    timed = time_interleaved(fns, repeats, rounds=4)
    # short, host-bound cells scatter: timed again with enough samples for a steady median
    more = repeats_for(min(t.median_s for t in timed.values()), repeats)
    if more > repeats:
        timed = time_interleaved(fns, more, rounds=8)
    row["repeats"] = more
    for k, t in timed.items():
        row[f"{k}_s"] = t.median_s
        row[f"{k}_iqr_s"] = t.spread_s
    row["copy_Bps"] = 2 * src.nbytes / timed["copy"].median_s
    row["fuselab_Bps"] = nbytes / timed["fuselab"].median_s
    row["copy_fraction"] = row["fuselab_Bps"] / row["copy_Bps"]
    if "alt" in timed:
        row["alt"]["s"] = timed["alt"].median_s
    if "torch" in timed:
        row["ratio"] = timed["fuselab"].median_s / timed["torch"].median_s
        row["torch_copy_fraction"] = nbytes / timed["torch"].median_s / row["copy_Bps"]
    del src, dst, env, got, ref, exe, again
    cp.get_default_memory_pool().free_all_blocks()
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="sweep.json")
    ap.add_argument("--deadline", type=float, default=480.0, help="seconds: start no case after this")
    ap.add_argument("--repeats", type=int, default=16)
    ap.add_argument("--only", default="", help="comma-separated substrings of case names")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--wide", action="store_true", help="the wide cases (sweep_cases.wide_cases) instead")
    ap.add_argument("--random", type=int, default=0, metavar="N",
                    help="N cases of random family, dtype and shape (sweep_cases.random_cases) instead")
    ap.add_argument("--seed", type=int, default=0, help="the seed of --random")
    ap.add_argument("--families", default="", help="comma-separated family names: --random draws only these "
                    "(e.g. standardize,batchnorm; 'new' for sweep_cases.NEW_FAMILIES)")
    ap.add_argument("--alt", default="", metavar="STRATEGY",
                    help="also time this strategy's plan (e.g. max, or strided-apart: auto without row "
                         "kernels along a strided axis) where it differs from auto's")
    args = ap.parse_args()
    fams = tuple(f for f in args.families.split(",") if f)
    if fams == ("new",):
        fams = NEW_FAMILIES
    try:
        chosen = random_cases(args.seed, args.random, fams) if args.random else wide_cases() if args.wide else cases()
    except ValueError as e:
        ap.error(str(e))
    from fuselab import runtime
    from fuselab.plan.cost import DeviceParams
    try:
        import torch._dynamo
        for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                     "accumulated_recompile_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, 100000)
    except ImportError:
        pass
    info = runtime.device_info()
    # the calibration is recorded (benchmarks/cost_fit.py predicts with its device numbers)
    calib = runtime.calibration()
    params = DeviceParams.from_dict(calib)
    result = {"device": info.name, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "calibration": calib, "rows": []}
    out = Path(args.out)
    todo = [c for c in chosen if not args.only or any(s in c.name for s in args.only.split(","))]
    for case in todo:
        if time.perf_counter() - START > args.deadline:
            result.setdefault("skipped", []).append(case.name)
            continue
        try:
            row = run_case(case, args.repeats, not args.no_torch, params, args.alt)
        except Exception as e:  # noqa: BLE001 - one failing case must not hide the others
            row = {"family": case.family, "size": case.size, "error": f"{type(e).__name__}: {e}",
                   "trace": traceback.format_exc(limit=-4)}
        result["rows"].append(row)
        out.write_text(json.dumps(result, indent=1, default=str))
        r = row
        print(f"{case.name}: fuselab {r.get('fuselab_s', 0) * 1e6:.1f} us ({100 * r.get('copy_fraction', 0):.0f}% copy) "
              f"torch {r.get('torch_s', 0) * 1e6:.1f} us ratio {r.get('ratio', float('nan')):.2f} "
              f"first {r.get('first_run_s', 0):.2f}s [{r.get('check', r.get('error', '?'))}] "
              + (f"{r['alt']['strategy']} {r['alt'].get('s', 0) * 1e6:.1f} us {r['alt']['templates']} "
                 f"[{r['alt']['check']}] " if "alt" in r else "") +
              f"t={time.perf_counter() - START:.0f}s", flush=True)
    print(f"done: {len(result['rows'])} cases in {time.perf_counter() - START:.0f} s")


if __name__ == "__main__":
    main()
