"""Tables and a heat map from a shape-sweep run (benchmarks/sweep.py's JSON).

    python benchmarks/sweep_report.py sweep.json [--md out.md] [--png docs/sweep.png] [--recompute]

The heat map has one row per family and one cell per size, coloured by fuselab's time over
torch.compile's (below 1: fuselab faster); the tables give every case's times, % of copy,
the launch configurations the autotuner chose, and the cost model's prediction against
the measurement (predicted / measured), with how many cases it predicts within ±25% and
the distribution of predicted / measured (quantiles and a histogram line). --recompute
predicts every case again with today's cost model (offline: the cell is traced and
planned on the CPU, benchmarks/cost_fit.py) in place of the prediction the run recorded.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent)]


def _us(t: float | None) -> str:
    return "—" if t is None else f"{t * 1e6:.1f}"


BINS = (0.5, 0.75, 0.9, 1.1, 1.25, 1.5)


def pred_over_meas(r: dict) -> float | None:
    return r["predicted_s"] / r["fuselab_s"] if r.get("fuselab_s") and r.get("predicted_s") else None


def quantiles(values: list[float]) -> dict[str, float]:
    s = sorted(values)
    at = lambda f: s[min(len(s) - 1, int(round(f * (len(s) - 1))))]  # noqa: E731
    return {"min": s[0], "10%": at(0.1), "25%": at(0.25), "median": at(0.5), "75%": at(0.75),
            "90%": at(0.9), "max": s[-1]}


def histogram(values: list[float]) -> str:
    """`<0.5: 0 | 0.5-0.75: 2 | ...`: counts of predicted / measured per bin."""
    edges = (0.0,) + BINS + (math.inf,)
    parts = []
    for lo, hi in zip(edges, edges[1:]):
        n = sum(1 for v in values if lo <= v < hi)
        label = f"<{hi:g}" if lo == 0 else (f">={lo:g}" if hi == math.inf else f"{lo:g}-{hi:g}")
        parts.append(f"{label}: {n}")
    return " | ".join(parts)


def summary(rows: list[dict]) -> dict[str, Any]:
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    preds = [q for q in map(pred_over_meas, rows) if q is not None]
    memory = [r for r in rows if r.get("kind", "memory") == "memory" and "torch_copy_fraction" in r]
    return {
        "cases": len(rows),
        "checked_ok": sum(1 for r in rows if str(r.get("check", "")).startswith("ok")),
        "geomean_ratio": math.exp(statistics.fmean(map(math.log, ratios))) if ratios else None,
        "max_ratio": max(ratios, default=None),
        "slower_than_1_10": [f"{r['family']} {r['size']}" for r in rows if r.get("ratio", 0) > 1.10],
        "within_25pct": sum(1 for p in preds if 0.75 <= p <= 1.25),
        "predicted": len(preds),
        "pred_over_meas": sorted(preds),
        "outside_25pct": [f"{r['family']} {r['size']} ({pred_over_meas(r):.2f})" for r in rows
                          if pred_over_meas(r) is not None and not 0.75 <= pred_over_meas(r) <= 1.25],
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
    out.append(f"- {s['cases']} cases, {s['checked_ok']} checked equal to eager CuPy (or, where CuPy's own result is off, to NumPy's).")
    if s["geomean_ratio"]:
        out.append(f"- fuselab / torch.compile time: geometric mean **{s['geomean_ratio']:.3f}**, "
                   f"worst {s['max_ratio']:.2f}; slower than 1.10x: "
                   f"{', '.join(s['slower_than_1_10']) or 'none'}.")
    out.append(f"- Where torch.compile reaches 85% of copy ({len(s['torch_at_85'])} cases), fuselab below 85%: "
               f"{', '.join(s['fuselab_below_85_where_torch_at_85']) or 'none'}.")
    if s["predicted"]:
        p = s["pred_over_meas"]
        q = quantiles(p)
        source = data.get("predictions", "recorded by the run")
        out.append(f"- Cost model ({source}): predicted within ±25% of measured for **{s['within_25pct']} of "
                   f"{s['predicted']}** cases ({100 * s['within_25pct'] / s['predicted']:.0f}%); predicted / measured "
                   + ", ".join(f"{k} {v:.2f}" for k, v in q.items()) + ".")
        out.append(f"- predicted / measured histogram: {histogram(p)}.")
        if s["outside_25pct"]:
            out.append(f"- outside ±25%: {', '.join(s['outside_25pct'])}.")
    if s["first_run_max_s"] is not None:
        out.append(f"- First run of a new cell (trace, plan, compile, tune, run): at most {s['first_run_max_s']:.2f} s; "
                   f"cached re-runs compiled {s['rerun_compiled']} kernels.")
    out += ["", "| family | size | fuselab µs | torch.compile µs | ratio | % of copy (fuselab / torch) | "
                "predicted µs | predicted / measured | launch configuration (tuned) | check |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            first = r["error"].splitlines()[0].replace("|", "/")[:80]   # one table row
            out.append(f"| {r['family']} | {r['size']} | error: {first} | | | | | | | |")
            continue
        cfgs = "; ".join(k["config"] for k in r.get("kernels", []) if k.get("config"))
        pm = pred_over_meas(r)
        out.append(f"| {r['family']} | {r['size']} | {_us(r.get('fuselab_s'))} | {_us(r.get('torch_s'))} | "
                   f"{r.get('ratio', float('nan')):.2f} | {100 * r.get('copy_fraction', 0):.0f}% / "
                   f"{100 * r.get('torch_copy_fraction', 0):.0f}% | {_us(r.get('predicted_s'))} | "
                   f"{'—' if pm is None else f'{pm:.2f}'} | {cfgs} | {r.get('check', '?')} |")
    return "\n".join(out) + "\n"


def recompute(data: dict, path: str) -> dict:
    """`data` with every case's predicted_s from today's cost model (traced and planned
    offline, with the run's own device calibration). A case whose plan changed since the
    run keeps no prediction: it would compare another plan with the measurement."""
    import cost_fit
    rows = {r.name: r for r in cost_fit.load_rows([path])}
    out = []
    for r in data["rows"]:
        r = dict(r)
        row = rows.get(f"{r['family']} {r['size']}")
        r.pop("predicted_s", None)
        if row is not None and not row.plan_changed:
            r["predicted_s"] = cost_fit.predict(row)
        out.append(r)
    return {**data, "rows": out, "predictions": "today's model, recomputed offline"}


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
    ap.add_argument("--recompute", action="store_true", help="predict with today's cost model (offline)")
    args = ap.parse_args()
    data = json.loads(Path(args.json).read_text())
    if args.recompute:
        data = recompute(data, args.json)
    text = markdown(data)
    if args.md:
        Path(args.md).write_text(text)
    else:
        print(text)
    if args.png:
        heatmap(data, Path(args.png))


if __name__ == "__main__":
    main()
