"""Tables and a heat map from a shape-sweep run (benchmarks/sweep.py's JSON).

    python benchmarks/sweep_report.py sweep.json --md out.md --png docs/sweep.png

The heat map has one row per family and one cell per size, coloured by fuselab's time over
torch.compile's (below 1: fuselab faster); the tables give every case's times, % of copy,
the launch configurations the autotuner chose, and the cost model's prediction against
the measurement.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path
from typing import Any


def _us(t: float | None) -> str:
    return "—" if t is None else f"{t * 1e6:.1f}"


def summary(rows: list[dict]) -> dict[str, Any]:
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    preds = [r["predicted_s"] / r["fuselab_s"] for r in rows if r.get("fuselab_s") and r.get("predicted_s")]
    memory = [r for r in rows if r.get("kind", "memory") == "memory" and "torch_copy_fraction" in r]
    return {
        "cases": len(rows),
        "checked_ok": sum(1 for r in rows if r.get("check") == "ok"),
        "geomean_ratio": math.exp(statistics.fmean(map(math.log, ratios))) if ratios else None,
        "max_ratio": max(ratios, default=None),
        "slower_than_1_10": [f"{r['family']} {r['size']}" for r in rows if r.get("ratio", 0) > 1.10],
        "within_25pct": sum(1 for p in preds if 0.75 <= p <= 1.25),
        "predicted": len(preds),
        "pred_over_meas": sorted(preds),
        "torch_at_85": [f"{r['family']} {r['size']}" for r in memory if r["torch_copy_fraction"] >= 0.85],
        "fuselab_below_85_where_torch_at_85": [f"{r['family']} {r['size']}" for r in memory
                                               if r["torch_copy_fraction"] >= 0.85 and r["copy_fraction"] < 0.85],
        "first_run_max_s": max((r["first_run_s"] for r in rows if "first_run_s" in r), default=None),
        "rerun_compiled": sum(r.get("rerun_compiled", 0) for r in rows),
    }


def markdown(data: dict) -> str:
    rows = data["rows"]
    s = summary(rows)
    out = [f"Device: {data['device']}; date: {data['date']}; copy of the same bytes timed in the same rounds.", ""]
    out.append(f"- {s['cases']} cases, {s['checked_ok']} checked equal to eager CuPy.")
    if s["geomean_ratio"]:
        out.append(f"- fuselab / torch.compile time: geometric mean **{s['geomean_ratio']:.3f}**, "
                   f"worst {s['max_ratio']:.2f}; slower than 1.10x: "
                   f"{', '.join(s['slower_than_1_10']) or 'none'}.")
    out.append(f"- Where torch.compile reaches 85% of copy ({len(s['torch_at_85'])} cases), fuselab below 85%: "
               f"{', '.join(s['fuselab_below_85_where_torch_at_85']) or 'none'}.")
    if s["predicted"]:
        p = s["pred_over_meas"]
        out.append(f"- Cost model: predicted within ±25% of measured for {s['within_25pct']} of {s['predicted']} "
                   f"cases; predicted/measured quartiles {p[len(p) // 4]:.2f} / {statistics.median(p):.2f} / "
                   f"{p[3 * len(p) // 4]:.2f}, range {p[0]:.2f}-{p[-1]:.2f}.")
    if s["first_run_max_s"] is not None:
        out.append(f"- First run of a new cell (trace, plan, compile, tune, run): at most {s['first_run_max_s']:.2f} s; "
                   f"cached re-runs compiled {s['rerun_compiled']} kernels.")
    out += ["", "| family | size | fuselab µs | torch.compile µs | ratio | % of copy (fuselab / torch) | "
                "predicted µs | launch configuration (tuned) | check |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['family']} | {r['size']} | error: {r['error'][:80]} | | | | | | |")
            continue
        cfgs = "; ".join(k["config"] for k in r.get("kernels", []) if k.get("config"))
        out.append(f"| {r['family']} | {r['size']} | {_us(r.get('fuselab_s'))} | {_us(r.get('torch_s'))} | "
                   f"{r.get('ratio', float('nan')):.2f} | {100 * r.get('copy_fraction', 0):.0f}% / "
                   f"{100 * r.get('torch_copy_fraction', 0):.0f}% | {_us(r.get('predicted_s'))} | {cfgs} | "
                   f"{r.get('check', '?')} |")
    return "\n".join(out) + "\n"


def heatmap(data: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm
    rows = [r for r in data["rows"] if "ratio" in r]
    families = list(dict.fromkeys(r["family"] for r in rows))
    width = max(sum(1 for r in rows if r["family"] == f) for f in families)
    grid = [[math.nan] * width for _ in families]
    labels = [[""] * width for _ in families]
    for i, fam in enumerate(families):
        for j, r in enumerate(r for r in rows if r["family"] == fam):
            grid[i][j] = r["ratio"]
            labels[i][j] = f"{r['size']}\n{r['ratio']:.2f}"
    fig, ax = plt.subplots(figsize=(1.6 * width + 2, 0.55 * len(families) + 1.2))
    im = ax.imshow(grid, cmap="RdYlGn_r", norm=TwoSlopeNorm(vcenter=1.0, vmin=0.4, vmax=1.6), aspect="auto")
    for i in range(len(families)):
        for j in range(width):
            if labels[i][j]:
                ax.text(j, i, labels[i][j], ha="center", va="center", fontsize=6.5)
    ax.set_yticks(range(len(families)), families, fontsize=8)
    ax.set_xticks([])
    ax.set_title(f"fuselab time / torch.compile time ({data['device']}, {data['date']}); below 1: fuselab faster",
                 fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.02)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--md", default=None)
    ap.add_argument("--png", default=None)
    args = ap.parse_args()
    data = json.loads(Path(args.json).read_text())
    text = markdown(data)
    if args.md:
        Path(args.md).write_text(text)
    else:
        print(text)
    if args.png:
        heatmap(data, Path(args.png))


if __name__ == "__main__":
    main()
