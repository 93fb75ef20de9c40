"""The static form: the explorer's content as plain outputs (HTML, SVG, PNG) that render
wherever a saved notebook is shown — GitHub, nbviewer, an exported HTML page."""
from __future__ import annotations

import base64
from typing import Any

from . import graph as graph_mod
from .format import esc


def header_html(session: Any) -> str:
    g, plan = session.graph, session.plan
    n_ops = sum(1 for n in g.nodes if n.op not in ("input", "const"))
    parts = [f"<b>fuselab</b> · {n_ops} ops → <b>{len(plan.kernels)} kernel(s)</b> "
             f"({esc(session.plan_label)}; unfused: {len(session.unfused.kernels)}) · backend "
             f"<b>{esc(session.backend)}</b>"]
    if session.backend_note:
        parts.append(f"<span class='fuselab-predicted'>{esc(session.backend_note)}</span>")
    tr = session.traced
    if tr.bound:
        parts.append("results: " + ", ".join(f"<code>{esc(r)}</code>" for r in tr.bound))
    if tr.fused_away:
        parts.append("fused away (not bound; <code>--keep NAME</code> keeps one): "
                     + ", ".join(f"<code>{esc(r)}</code>" for r in tr.fused_away))
    for note in getattr(plan, "notes", ()):
        parts.append(f"<span class='fuselab-legend'>{esc(note)}</span>")
    for b in g.breaks:
        parts.append(f"<span class='fuselab-break'>{esc(graph_mod.break_text(b))}</span>")
    if getattr(session, "timing_error", None):   # (the magic's timing failed; the results were bound)
        parts.append(f"<span class='fuselab-refused'>timing failed, the results are bound: "
                     f"{esc(session.timing_error)}</span>")
    return "<div class='fuselab-header'>" + "<br>".join(parts) + "</div>"


def style_html() -> str:
    """The explorer's stylesheet, for outputs shown without the widget (dropped by
    renderers that strip styles, where the content still reads plainly)."""
    from .code import highlight_css
    from .frontend import CSS

    return f"<style>{CSS}\n{highlight_css(dark=False)}</style>"


def code_html(session: Any) -> str:
    """Every kernel's code, highlighted, the first one unfolded."""
    from .code import kernel_code_html, kernels_with_code

    kernels, missing = kernels_with_code(session)
    blocks = []
    for kinfo in kernels:
        color = graph_mod.kernel_color(kinfo.index)
        blocks.append(f"<details{' open' if kinfo.index == 0 else ''}><summary>"
                      f"<b style='color:{color}'>{esc(kinfo.name)}</b> "
                      f"({esc(kinfo.template.value)})</summary>"
                      f"{kernel_code_html(kinfo, missing)}</details>")
    return "<div class='fuselab-code fuselab-code-view'>" + "".join(blocks) + "</div>"


def chart_png(session: Any) -> bytes | None:
    from .charts import timing_chart_png

    return timing_chart_png(session)


def static_html(session: Any) -> str:
    """One HTML document fragment with everything: the widget's fallback."""
    from .numbers import numbers_html

    view = graph_mod.graph_view(session.plan)
    png = chart_png(session)
    img = (f"<img class='fuselab-chart' alt='predicted and measured time per kernel' "
           f"src='data:image/png;base64,{base64.b64encode(png).decode()}'>" if png else "")
    return (style_html() + "<div class='fuselab-explorer fuselab-static'>" + header_html(session)
            + f"<div class='fuselab-graph'>{view.html}</div>" + graph_mod.LEGEND_HTML
            + numbers_html(session) + img + code_html(session) + "</div>")


def show_static(session: Any) -> None:
    """Display the content as separate plain outputs: HTML, SVG graph, PNG chart."""
    from IPython.display import HTML, SVG, Image, display

    from .numbers import numbers_html

    def box(html: str) -> HTML:
        return HTML(f"<div class='fuselab-explorer fuselab-static'>{html}</div>")

    display(HTML(style_html() + box(header_html(session)).data))
    view = graph_mod.graph_view(session.plan)
    display(SVG(view.svg) if view.svg is not None else box(view.html))
    display(box(graph_mod.LEGEND_HTML + numbers_html(session)))
    png = chart_png(session)
    if png:
        display(Image(png))
    display(box(code_html(session)))
