"""Measure the tour's %%fuse cells on a GPU machine that has no IPython, and print the
figures for each `<!-- H200: id -->` placeholder of the notebooks' text.

    PYTHONPATH=. python3 notebooks/h200_figures.py --out figures.json

Plain code cells run as Python; `%%fuse` cells run through fuselab.cell.run_cell (the
magic's own path) with the flags it understands; the measurement of the last %%fuse cell
before a placeholder is that placeholder's figure. Display calls are skipped (no IPython).
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLACEHOLDER = re.compile(r"<!-- H200: ([\w.-]+) -->")


def fuse_flags(line: str) -> dict:
    words = shlex.split(line)
    opts: dict = {}
    it = iter(words)
    for w in it:
        if w == "--plan":
            opts["strategy"] = next(it)
        elif w == "--keep":
            opts["keep"] = tuple(next(it).split(","))
        elif w == "-o":
            opts["output"] = next(it)
        elif w == "--fp16":
            opts["fp16"] = next(it)
    return opts


def figure(session) -> dict:
    if session.backend == "cuda" and session.measurement is None:
        session.measure()  # the cells after it changed the plan (a toggle): time what it is now
    m = session.measurement
    out = {"kernels": len(session.plan.kernels), "unfused_kernels": len(session.unfused.kernels),
           "check": None if session.check is None else bool(session.check.ok)}
    if m is not None:
        out.update(plan_us=m.plan.median_s * 1e6, unfused_us=m.unfused.median_s * 1e6 if m.unfused else None,
                   eager_us=m.eager.median_s * 1e6 if m.eager else None,
                   speedup_vs_unfused=m.speedup_vs_unfused, speedup_vs_eager=m.speedup_vs_eager,
                   summary=m.summary())
    return out


def run_notebook(path: Path, deadline: float) -> dict:
    import numpy as np

    from fuselab.cell import run_cell

    nb = json.loads(path.read_text())
    ns: dict = {"__name__": "__main__"}
    last = None
    figures: dict = {}
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for pid in PLACEHOLDER.findall(src):
                figures[pid] = figure(last) if last is not None else {"error": "no %%fuse cell before it"}
            continue
        if cell["cell_type"] != "code" or time.time() > deadline:
            continue
        if src.startswith("%%fuse"):
            first, _, body = src.partition("\n")
            opts = fuse_flags(first[len("%%fuse"):])
            try:
                last = run_cell(ns, body, quiet=True, time=True, repeats=20, **opts)
            except Exception as e:  # report and go on: one cell must not hide the others
                print(f"{path.name}: %%fuse cell failed: {type(e).__name__}: {e}", file=sys.stderr)
                last = None
            continue
        lines = [ln for ln in src.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        code = "\n".join(lines)
        if re.search(r"\b(display|explore|show)\(", code):
            continue  # views need IPython; the figures come from the sessions themselves
        try:
            exec(compile(code, f"<{path.name}>", "exec"), ns)
        except Exception as e:
            print(f"{path.name}: cell skipped ({type(e).__name__}: {e})", file=sys.stderr)
    return figures


def gpu_extras() -> dict:
    """Figures no single %%fuse cell gives: the size sweep of notebook 01 and the two
    composed cupy.fuse functions it compares with."""
    import cupy as cp
    import numpy as np

    from fuselab.cell import run_cell

    cell = "t = x * x + 1.0\ny = np.exp(t) * 0.5 - np.sin(x)"
    sweep = []
    for e in (12, 16, 20, 24, 26):
        x = cp.random.rand(1 << e, dtype=cp.float32)
        s = run_cell({"np": cp, "x": x}, cell, quiet=True, time=True, repeats=20)
        m = s.measurement
        sweep.append({"n": 1 << e, "fused_us": m.plan.median_s * 1e6, "unfused_us": m.unfused.median_s * 1e6,
                      "fused_graph_replay_us": m.replay.median_s * 1e6 if m.replay else None})

    @cp.fuse()
    def poly(x):
        return x * x + 1.0

    @cp.fuse()
    def rational(t, x):
        return 0.5 * t / (1.0 + x * x) - x

    x = cp.random.rand(1 << 24, dtype=cp.float32)
    for _ in range(3):
        rational(poly(x), x)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(20):
        start.record(); rational(poly(x), x); stop.record(); stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    s = run_cell({"x": x, "poly": poly, "rational": rational}, "y = rational(poly(x), x)",
                 quiet=True, time=True, repeats=20)
    return {"why_fusion_sizes": {"sweep": sweep},
            "cupy_fuse_composed": {"cupy_fuse_two_calls_us": float(np.median(times)),
                                   "fuselab_us": s.measurement.plan.median_s * 1e6,
                                   "fuselab_kernels": len(s.plan.kernels), "n": 1 << 24}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="h200_figures.json")
    ap.add_argument("--seconds", type=float, default=150)
    args = ap.parse_args()
    deadline = time.time() + args.seconds
    import matplotlib
    matplotlib.use("Agg")
    result = {}
    for path in sorted(HERE.glob("[0-9][0-9]_*.ipynb")):
        result.update(run_notebook(path, deadline))
        print(path.name, "done", flush=True)
    try:
        result.update(gpu_extras())
    except Exception as e:  # no GPU here, or a failure: the notebook figures still stand
        print(f"extras skipped: {type(e).__name__}: {e}", file=sys.stderr)
    Path(args.out).write_text(json.dumps(result, indent=1, default=str))
    for k, v in result.items():
        print(k, {kk: vv for kk, vv in v.items() if kk != "summary"})


if __name__ == "__main__":
    main()
