"""Matplotlib charts of a plan's numbers, as PNG bytes.

Left: time per kernel, predicted next to measured. Right, roofline-style: each kernel's
achieved bandwidth as a fraction of the device's copy bandwidth (measured on a GPU; the
cost model's figure otherwise, labelled predicted). Without pyplot: no global figure
state, nothing shown twice by the inline backend.
"""
from __future__ import annotations

import io
from typing import Any

from .graph import kernel_color
from .numbers import measured_kernels, measured_label, plan_report


def timing_chart_png(session: Any) -> bytes | None:
    """The chart, or None when the cost model has no report for this plan."""
    rep, _missing = plan_report(session)
    if rep is None or not rep.kernels:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    measured = measured_kernels(session.measurement)
    label = measured_label(session)
    copy_bw = rep.params.bandwidth
    n = len(rep.kernels)
    labels = [f"k{c.index} {c.name}"[:26] for c in rep.kernels]
    colors = [kernel_color(c.index) for c in rep.kernels]
    ys = list(range(n))[::-1]

    fig = Figure(figsize=(9.0, 1.3 + 0.32 * n), dpi=90, facecolor="white")
    FigureCanvasAgg(fig)
    ax_t, ax_b = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})

    h = 0.38 if measured else 0.7
    pred_us = [c.time_s * 1e6 for c in rep.kernels]
    ax_t.barh([y + (h / 2 if measured else 0) for y in ys], pred_us, height=h, color=colors,
              alpha=0.45, edgecolor=colors, label="predicted (cost model, pale)")
    if measured:
        meas_us = [(t or 0.0) * 1e6 for t in measured[:n]] + [0.0] * (n - len(measured))
        ax_t.barh([y - h / 2 for y in ys], meas_us, height=h, color=colors, label=label)
    ax_t.set_yticks(ys, labels, fontsize=8)
    ax_t.set_xlabel("time per kernel (µs)")
    # (on the Numba backend a measurement is a CPU one: "no GPU measurement" misled there)
    unmeasured = ("predicted time (not measured yet)" if session.backend in ("cuda", "numba", "dask")
                  else "predicted time (this backend measures nothing)")
    ax_t.set_title(f"predicted vs {label}" if measured else unmeasured, fontsize=10)
    ax_t.legend(fontsize=8, loc="lower right")

    if measured:
        frac = [(c.bytes_total / t / copy_bw) if t else 0.0 for c, t in zip(rep.kernels, measured)]
        title, alpha = f"achieved bandwidth ({label})", 1.0
    else:
        frac = [c.bytes_total / c.time_s / copy_bw if c.time_s else 0.0 for c in rep.kernels]
        title, alpha = "bandwidth (predicted, pale)", 0.45
    ax_b.barh(ys, [100 * f for f in frac], height=0.7, color=colors, alpha=alpha, edgecolor=colors)
    ax_b.axvline(100, color="#444444", linewidth=1, linestyle="--")
    ax_b.set_xlim(0, max(110, 100 * max(frac, default=0) * 1.1))
    ax_b.set_xlabel("% of copy bandwidth" + (" (calibrated)" if rep.params.source != "defaults" else " (H200 default)"))
    ax_b.set_title(title, fontsize=10)
    for ax in (ax_t, ax_b):
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(labelsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", pil_kwargs={"optimize": True})
    return buf.getvalue()
