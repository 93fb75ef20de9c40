"""The numbers: per kernel and in total, bytes moved, launches and predicted time from the
planner's cost report; measured time, achieved bandwidth and speed-ups when the session
has a GPU measurement; the result check. Predicted figures are labelled as such."""
from __future__ import annotations

from typing import Any

from .dask_view import dask_html
from .format import esc, fmt_bytes, fmt_ratio, fmt_time


def plan_report(session: Any) -> tuple[Any | None, str]:
    """(the cost report of the current plan, why it is missing)."""
    try:
        return session.report(), ""
    except Exception as e:  # noqa: BLE001 - the numbers panel says what is missing
        return None, f"the cost model could not report on this plan ({type(e).__name__}: {e})"


def measured_kernels(measurement: Any) -> list[float]:
    """Measured seconds per kernel of the plan, in kernel order ([] if not timed)."""
    plan = getattr(measurement, "plan", None)  # a Dask measurement times whole computes
    return [t for _name, t in plan.per_kernel_s] if plan is not None else []


def measured_label(session: Any) -> str:
    """What measured times are: on the CPU (Numba backend) they are labelled so."""
    return "measured (CPU)" if getattr(session, "backend", "") == "numba" else "measured"


def bandwidth_label(params: Any) -> str:
    """What the bandwidth fractions are fractions of."""
    if params.source == "defaults":
        return f"of {params.bandwidth / 1e12:.2g} TB/s (documented H200 copy bandwidth; not calibrated here)"
    return f"of the copy bandwidth measured on this device ({params.bandwidth / 1e12:.2g} TB/s)"


def numbers_html(session: Any) -> str:
    rep, missing = plan_report(session)
    if rep is None:
        return f"<div class='fuselab-numbers'><div class='fuselab-notice'>No predictions: {esc(missing)}</div></div>"
    if not session.plan.kernels:
        # an empty table of zeros and a "1.00× speed-up" said nothing true about such a cell
        return ("<div class='fuselab-numbers'><div class='fuselab-notice'>Nothing to fuse or time: the cell "
                "computes no array on the device (its results are your arrays, views or copies of them, or "
                "values Python computed at graph breaks).</div>" + check_line(session) + "</div>")
    m = session.measurement
    per_kernel = measured_kernels(m)
    copy_bw = rep.params.bandwidth
    measured = bool(per_kernel)

    head = ["kernel", "template", "read", "written", "launches", "bound", "predicted"]
    if measured:
        head += [measured_label(session), "GB/s", "of copy BW"]
    rows = ["<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for c in rep.kernels:
        extra = f" (+{fmt_bytes(c.extra_bytes)} re-reads)" if c.extra_bytes else ""
        busy = f", {c.parallelism:.0%} of SMs" if c.parallelism < 1 else ""
        cells = [f"k{c.index} {esc(c.name)}", esc(c.template), fmt_bytes(c.bytes_read) + extra,
                 fmt_bytes(c.bytes_written), "1", esc(c.bound) + busy,
                 f"<span class='fuselab-predicted'>{fmt_time(c.time_s)}</span>"]
        if measured:
            t = per_kernel[c.index] if c.index < len(per_kernel) else None
            gbps = c.bytes_total / t / 1e9 if t else None
            cells += [fmt_time(t), "–" if gbps is None else f"{gbps:.0f}",
                      "–" if gbps is None else f"{gbps * 1e9 / copy_bw:.0%}"]
        rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    total = ["total", "", fmt_bytes(rep.bytes_read + rep.extra_bytes), fmt_bytes(rep.bytes_written),
             str(rep.launches), "", f"<span class='fuselab-predicted'>{fmt_time(rep.time_s)}</span>"]
    if measured:
        gbps = rep.bytes_total / m.plan.median_s / 1e9 if m.plan.median_s else None
        total += [fmt_time(m.plan.median_s), "–" if gbps is None else f"{gbps:.0f}",
                  "–" if gbps is None else f"{gbps * 1e9 / copy_bw:.0%}"]
    rows.append("<tr class='fl-total'>" + "".join(f"<td>{x}</td>" for x in total) + "</tr>")

    p = rep.params
    lines = [
        f"<b>Predicted</b> <span class='fuselab-predicted'>(cost model, {esc(p.name)}: "
        f"{p.bandwidth / 1e12:.2g} TB/s, {p.launch_s * 1e6:.2g} µs per launch)</span>: "
        f"{rep.launches} launch(es), {fmt_bytes(rep.bytes_total)} moved, {fmt_time(rep.time_s)}. "
        f"Unfused: {rep.unfused_launches} launches, {fmt_bytes(rep.unfused_bytes)}, "
        f"{fmt_time(rep.unfused_time_s)} → <b>{fmt_ratio(rep.speedup)}</b> predicted speed-up.",
        f"Intermediates written to memory: {rep.intermediates} array(s), {fmt_bytes(rep.intermediate_bytes)} "
        f"({fmt_bytes(rep.intermediate_bytes_avoided)} fewer than unfused).",
    ]
    lines.append(measured_line(session, m))
    if measured:
        lines.append(f"<span class='fuselab-legend'>GB/s: the cost model's bytes over the measured time; "
                     f"% {esc(bandwidth_label(p))}.</span>")
        fractions = [c.bytes_total / t / copy_bw for c, t in zip(rep.kernels, per_kernel) if t]
        if any(f > 1 for f in fractions):   # (427% of copy bandwidth read as an error without this)
            cache = "the CPU's caches" if session.backend == "numba" else "the GPU's L2 cache"
            lines.append(f"<span class='fuselab-legend'>Above 100%: the arrays fit in {cache}, faster than "
                         "the memory the copy bandwidth was measured on.</span>")
    lines.append(check_line(session))
    return ("<div class='fuselab-numbers'><table class='fuselab-table'>" + "".join(rows) + "</table>"
            + "".join(f"<div>{x}</div>" for x in lines if x) + dask_html(session) + boundaries_html(session)
            + decisions_html(session) + "</div>")


def measured_line(session: Any, m: Any) -> str:
    if session.backend == "dask":
        return "" if m is not None else "<b>Measured</b>: not yet (the Dask panel shows computes when timed)."
    if m is None:
        if session.backend == "cuda":
            return "<b>Measured</b>: not yet — press <i>Run on GPU</i>."
        if session.backend == "numba":
            return "<b>Measured (CPU)</b>: not yet — press <i>Run on CPU</i>."
        return f"<b>Measured</b>: nothing ({esc(unmeasured_reason(session))}; every time above is a prediction)."
    t = m.plan.median_s
    label = measured_label(session)
    label = label[:1].upper() + label[1:]   # (not str.capitalize(): it gave "Measured (cpu)")
    parts = [f"<b>{esc(label)}</b> on {esc(m.device)} (median of {m.plan.repeats}): plan {fmt_time(t)}"]
    if m.replay is not None:
        parts.append(f"as one CUDA graph {fmt_time(m.replay.median_s)}")
    if m.unfused is not None:
        parts.append(f"unfused {fmt_time(m.unfused.median_s)} → <b>{fmt_ratio(m.speedup_vs_unfused)}</b>")
    if m.eager is not None:
        parts.append(f"{esc(m.eager.label)} {fmt_time(m.eager.median_s)} → <b>{fmt_ratio(m.speedup_vs_eager)}</b>")
    text = ", ".join(parts) + "."
    text += (f" Compile {m.total_compile_s * 1e3:.0f} ms; peak memory {fmt_bytes(m.peak_bytes)}"
             + (f" (unfused {fmt_bytes(m.unfused_peak_bytes)})" if m.unfused_peak_bytes else "") + ".")
    text += "".join(f" <span class='fuselab-legend'>{esc(n)}.</span>" for n in m.notes)
    return text


def unmeasured_reason(session: Any) -> str:
    """Why a session on the NumPy backend has no measurement, true on every machine: "no
    GPU here" was said on a GPU machine too, where the user had asked for --backend cpu."""
    from ..numba_backend import available as numba_available   # (no warm-up: nothing will compile)
    from ..runtime.device import cuda_available
    if cuda_available()[0]:
        return "the cpu backend (NumPy, kernel by kernel) times nothing; --backend cuda measures on this GPU"
    numba = "; --backend numba measures on the CPU" if numba_available()[0] else ""
    return f"no GPU here, and the cpu backend (NumPy, kernel by kernel) times nothing{numba}"


def check_line(session: Any) -> str:
    c = session.check
    if c is None and session.measurement is not None:
        c = session.measurement.check
    if c is None:
        return ""
    if c.ok:
        how = f" ({esc('; '.join(c.details))})" if c.details else ""
        return f"Result check: <span class='fuselab-ok'>✓</span> outputs match{how}."
    return f"Result check: <span class='fuselab-bad'>✗</span> {esc(c.worst)}"


def boundaries_html(session: Any) -> str:
    """Why each kernel boundary is there, in the planner's words."""
    try:
        found = session.plan.boundaries()
    except Exception as e:  # noqa: BLE001 - say what is missing
        return f"<div class='fuselab-notice'>No boundary reasons: {esc(type(e).__name__)}: {esc(e)}</div>"
    if not found:
        return ""
    items = "".join(
        f"<li><b>k{b.src} → k{b.dst}</b> ({', '.join(f'%{v}' for v in b.values)}): "
        f"<span class='{'fuselab-legend' if b.legal else 'fuselab-refused'}'>{esc(b.reason)}</span></li>"
        for b in found)
    return (f"<details class='fuselab-boundaries'><summary>Why these {len(found)} kernel boundaries</summary>"
            f"<ul>{items}</ul></details>")


def decisions_html(session: Any) -> str:
    """The planner's log for this plan: merges taken, refused, recomputations."""
    log = [d for d in session.plan.log if d.kind != "boundary"]
    if not log:
        return ""
    items = "".join(f"<li><i>{esc(d.kind)}</i>: {esc(d.text)}</li>" for d in log)
    return (f"<details class='fuselab-decisions'><summary>How the planner decided ({len(log)} steps)</summary>"
            f"<ul>{items}</ul></details>")
