"""Calibrate the cost model's sweep-fitted parameters offline, from sweep JSONs.

    PYTHONPATH=. python3 benchmarks/cost_fit.py NEW.json [OLDER.json ...] [--fit] [--loo]

Every row of a sweep (benchmarks/sweep.py) is rebuilt on the CPU: the case's cell
(benchmarks/sweep_cases.py) is traced with empty NumPy arrays of its shapes and planned
`auto`, exactly as the sweep plans it on the device; the cost model predicts one run of
that plan with the device numbers the sweep measured in the same run (`calibration`:
bandwidth, launch, flop rate) and the sweep-fitted parameters of DeviceParams (run_s,
eff_*, chip_rows, chip_exp, l2_bandwidth). The prediction is compared with the
measured time of one run (fuselab_s).

A case appears once: from the first file that has it without an error. A row whose
recorded kernels (their templates, in order) differ from today's plan is left out of
the fit and shown as "plan changed". A host probe some sweeps of 2026-12-04 recorded
(host_run_s, host_launch_s) is ignored, as the model ignores it.
--fit minimises the squared log of predicted / measured over the parameters (a fitted
run_s or step_s then replaces the calibrated ones); --loo refits with each family left out in turn and
predicts that family.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import numpy as np  # noqa: E402

# what a sweep's calibration gives the model: the device numbers
CALIBRATION_KEYS = ("bandwidth_Bps", "launch_s", "flops_per_s", "transcendental_factor", "sm_count")
FITTED = ("run_s", "step_s", "chip_exp", "l2_bandwidth", "elem_rate", "combine_s")
# also fittable: the per-template/tier efficiencies; on the H200 sweeps they fit to 0.98-1.0
# and change no case's verdict (COST_MODEL.md), so they stay at 1
EFFS = ("eff_pointwise", "eff_reduction", "eff_row_warp", "eff_row_block", "eff_row_smem", "eff_row_looped")
# where a fit starts: nothing known (no fixed cost per run, L2
# no faster than DRAM, shared-memory rows as good as any), so that a parameter no case of
# the training set depends on stays uninformed in the leave-one-family-out check
NEUTRAL = {"run_s": 1e-6, "step_s": 1e-6, "chip_rows": 1.0, "chip_exp": 0.01, "l2_bandwidth": 4.1e12, "elem_rate": 4e12,
           "combine_s": 1e-7, **{e: 1.0 for e in EFFS}}
ROBUST_SCALE = 0.15     # the log-ratio at which --robust's loss stops growing quadratically
SCALE = {"run_s": 1e-6, "step_s": 1e-6, "combine_s": 1e-6,      # fit in us, TB/s, T elements/s
         "l2_bandwidth": 1e12, "elem_rate": 1e12}


@dataclasses.dataclass
class Row:
    name: str
    family: str
    source_file: str
    measured_s: float
    calibration: dict
    plan: Any
    plan_changed: bool
    recorded_pred_s: float | None
    source: str = ""
    inputs: dict = dataclasses.field(default_factory=dict)   # name -> (shape, dtype)
    sweep: str = ""             # the sweep's date (a fixture's key)


def load_rows(paths: list[str]) -> list[Row]:
    """The rows of sweep JSONs (benchmarks/sweep.py) and of fixtures this script wrote
    (--fixture: {"sweeps", "points"}), each case once (the first file's)."""
    seen: dict[str, Row] = {}
    for path in paths:
        data = json.loads(Path(path).read_text())
        if "points" in data:
            for pt in data["points"]:
                if pt["case"] not in seen:
                    inputs = {n: (tuple(shape), dt) for n, (shape, dt) in pt["inputs"].items()}
                    seen[pt["case"]] = _row(pt["case"], pt["family"], path, pt["measured_s"],
                                            data["sweeps"][pt["sweep"]]["calibration"], pt["source"], inputs,
                                            pt["kernels"], None, pt["sweep"])
            continue
        by_name = cases_by_name(data["rows"])
        for r in data["rows"]:
            name = f"{r['family']} {r['size']}"
            if "error" in r or not r.get("fuselab_s") or name in seen or name not in by_name:
                continue
            case = by_name[name]
            seen[name] = _row(name, r["family"], path, r["fuselab_s"], data["calibration"], case.source,
                              dict(case.inputs), [k["template"] for k in r.get("kernels", [])],
                              r.get("predicted_s"), data["date"])
    return list(seen.values())


def _row(name: str, family: str, path: str, measured_s: float, calibration: dict, source: str,
         inputs: dict, kernels: list[str], recorded_pred_s: float | None, sweep: str) -> Row:
    """A measured case, its cell planned `auto` today with empty arrays of its shapes."""
    import fuselab
    from fuselab.plan import make_plan
    arrays = {n: np.empty(shape, dtype=dt) for n, (shape, dt) in inputs.items()}
    plan = make_plan(fuselab.trace_cell(source, {"np": np, **arrays}).graph, "auto")
    changed = [k.template.value for k in plan.kernels] != list(kernels)
    cal = {k: calibration[k] for k in CALIBRATION_KEYS if k in calibration}
    return Row(name, family, path, measured_s, cal, plan, changed, recorded_pred_s, source, inputs, sweep)


def cases_by_name(rows: list[dict]) -> dict[str, Any]:
    """The sweep cases a sweep's rows can come from (sweep_cases.cases_named)."""
    from sweep_cases import cases_named
    return cases_named([r["size"] for r in rows])


def params_for(row: Row, overrides: dict[str, float] | None = None):
    from fuselab.plan.device import DeviceParams
    p = DeviceParams.from_dict(row.calibration)
    base = DeviceParams.h200_default()
    kw = {f: getattr(base, f) for f in FITTED + EFFS}     # the shipped sweep-fitted values
    kw.update(overrides or {})
    return dataclasses.replace(p, **kw)


def predict(row: Row, overrides: dict[str, float] | None = None) -> float:
    """One run of the plan, as the sweep records it (report(plan).time_s)."""
    from fuselab.plan.cost import kernel_costs, run_time
    p = params_for(row, overrides)
    return run_time(row.plan, kernel_costs(row.plan, p), p) + (p.run_s if row.plan.kernels else 0.0)


def ratios(rows: list[Row], overrides: dict[str, float] | None = None) -> list[float]:
    return [predict(r, overrides) / r.measured_s for r in rows]


def fit(rows: list[Row], names: tuple[str, ...] = FITTED, start: dict[str, float] | None = None,
        robust: bool = False) -> dict[str, float]:
    from scipy.optimize import minimize
    from fuselab.plan.device import DeviceParams
    base = DeviceParams.h200_default()
    x0 = [{**NEUTRAL, **(start or {})}.get(n, getattr(base, n)) / SCALE.get(n, 1.0) for n in names]

    def unpack(x):
        d = {n: abs(v) * SCALE.get(n, 1.0) for n, v in zip(names, x)}
        for n in d:
            if n.startswith("eff_"):
                d[n] = min(d[n], 1.0)
        return d

    def loss(x):
        if robust:      # Cauchy: a kernel far slower than its bytes (a template's weak shape) pulls little
            return sum(math.log1p((math.log(q) / ROBUST_SCALE) ** 2) for q in ratios(rows, unpack(x)))
        return sum(math.log(q) ** 2 for q in ratios(rows, unpack(x)))

    res = minimize(loss, x0, method="Nelder-Mead", options={"maxiter": 4000, "xatol": 1e-4, "fatol": 1e-7})
    res = minimize(loss, res.x, method="Nelder-Mead", options={"maxiter": 4000, "xatol": 1e-4, "fatol": 1e-7})
    return unpack(res.x)


def quantiles(q: list[float]) -> str:
    if not q:
        return "no cases"
    s = sorted(q)
    at = lambda f: s[min(len(s) - 1, int(round(f * (len(s) - 1))))]  # noqa: E731
    return f"min {s[0]:.2f}, 10% {at(0.1):.2f}, median {at(0.5):.2f}, 90% {at(0.9):.2f}, max {s[-1]:.2f}"


def within(q: list[float], tol: float = 0.25) -> int:
    return sum(1 for v in q if 1 - tol <= v <= 1 + tol)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("json", nargs="+")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--loo", action="store_true")
    ap.add_argument("--effs", action="store_true", help="fit the per-template efficiencies too")
    ap.add_argument("--robust", action="store_true",
                    help="--fit with a Cauchy loss on the log ratio: the cases a template runs far "
                         "off its bytes (slow kernels the model does not describe) pull little")
    ap.add_argument("--params", default=None,
                    help="comma-separated: fit only these of FITTED (e.g. run_s: a term every plan "
                         "pays once moves no plan choice)")
    ap.add_argument("--fixture", default=None, help="write a small fixture of measured points for the tests")
    args = ap.parse_args()
    rows = load_rows(args.json)
    used = [r for r in rows if not r.plan_changed]
    names = tuple(args.params.split(",")) if args.params else FITTED
    names += EFFS if args.effs else ()
    over = fit(used, names, robust=args.robust) if args.fit else None
    if over:
        print("fitted:", ", ".join(f"{k}={v / SCALE.get(k, 1):.4g}" for k, v in over.items()))
    for path in args.json:
        sub = [r for r in rows if r.source_file == path]
        q_now = ratios(sub, over)
        rec = [r.recorded_pred_s / r.measured_s for r in sub if r.recorded_pred_s]
        print(f"{path}: {len(sub)} cases; recorded predictions within 25%: {within(rec)}/{len(rec)}; "
              f"this model: {within(q_now)}/{len(sub)} ({quantiles(q_now)})")
    print(f"{'case':44s} {'file':>4s} {'measured':>9s} {'pred':>8s} {'p/m':>5s}")
    for r, q in zip(rows, ratios(rows, over)):
        flag = " plan changed" if r.plan_changed else ("" if 0.75 <= q <= 1.25 else "  <-- outside 25%")
        print(f"{r.name:44s} {Path(r.source_file).parent.name[:4]:>4s} {r.measured_s * 1e6:9.1f} "
              f"{r.measured_s * q * 1e6:8.1f} {q:5.2f}{flag}")
    q_all = ratios(used, over)
    print(f"all fitted cases: {within(q_all)}/{len(used)} within 25% ({quantiles(q_all)})")
    if args.loo:
        fams = sorted({r.family for r in used})
        held: list[float] = []
        for fam in fams:
            train = [r for r in used if r.family != fam]
            test = [r for r in used if r.family == fam]
            o = fit(train, names, robust=args.robust)
            q = ratios(test, o)
            held += q
            print(f"leave out {fam:20s}: {within(q)}/{len(q)} within 25% ({', '.join(f'{v:.2f}' for v in q)})")
        print(f"leave-one-family-out: {within(held)}/{len(held)} within 25% ({quantiles(held)})")
    if args.fixture:
        write_fixture(Path(args.fixture), used)


def write_fixture(path: Path, rows: list[Row]) -> None:
    """The measured points the tests check the model against (tests/test_cost_calibration.py):
    each case's cell, input shapes, kernels and measured time, with each sweep's device
    calibration."""
    sweeps: dict[str, dict] = {}
    for r in rows:
        entry = sweeps.setdefault(r.sweep, {"calibration": r.calibration, "device": "NVIDIA H200", "cases": 0})
        entry["cases"] += 1
    points = [{"case": r.name, "family": r.family, "sweep": r.sweep, "source": r.source,
               "inputs": {n: [list(s), d] for n, (s, d) in r.inputs.items()},
               "kernels": [k.template.value for k in r.plan.kernels], "measured_s": r.measured_s} for r in rows]
    body = ",\n".join(json.dumps(pt, separators=(",", ":")) for pt in points)
    path.write_text('{"about": "fuselab auto on an NVIDIA H200, one run of the plan (benchmarks/sweep.py '
                    'fuselab_s); written by benchmarks/cost_fit.py --fixture",\n"sweeps": '
                    + json.dumps(sweeps) + ',\n"points": [\n' + body + "\n]}\n")

if __name__ == "__main__":
    main()
