"""Showing a session: plain text, the static outputs, or the interactive explorer."""
from __future__ import annotations

from typing import Any


def text_summary(session: Any) -> str:
    return text_header(session) + "\n\n" + str(session.plan)


def text_header(session: Any) -> str:
    """What the cell became: ops and kernels, backend, results, breaks."""
    g, plan = session.graph, session.plan
    n_ops = sum(1 for n in g.nodes if n.op not in ("input", "const"))
    lines = [f"fuselab: {n_ops} ops -> {len(plan.kernels)} kernel(s) ({plan.strategy} plan; "
             f"unfused: {len(session.unfused.kernels)}), backend {session.backend}"]
    if session.backend_note:
        lines.append(session.backend_note)
    tr = session.traced
    if tr.bound:
        lines.append("results: " + ", ".join(tr.bound))
    if tr.fused_away:
        lines.append("fused away (not bound; use --keep NAME to keep): " + ", ".join(tr.fused_away))
    for b in g.breaks:
        lines.append(str(b))
    info = session.dask_info() if session.backend == "dask" else None
    if info is not None:
        lines.extend(info.lines())
    if session.backend == "dask" and session.measurement is not None:
        lines.append(f"measured on {session.measurement}")
    if session.check is not None and not session.check.ok:
        lines.append(f"RESULT CHECK FAILED: {session.check.worst}")
    return "\n".join(lines)


def static_by_default() -> bool:
    """`%config FuseMagics.static = True` applies to every fuselab display in the session
    (session.display(), fuselab.explore()), not only to %%fuse cells."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    magics = ip.magics_manager.registry.get("FuseMagics") if ip is not None else None
    return bool(getattr(magics, "static", False))


def show(session: Any, static: bool = False) -> None:
    """Display the explorer widget (with a static fallback in its display data), or with
    `static` the same content as plain HTML/SVG/PNG outputs for saved notebooks."""
    from IPython.display import HTML, display

    from .explorer.static import show_static

    if static or static_by_default():
        show_static(session)
        return None
    try:
        from .explorer.widget import Explorer
        explorer = Explorer(session)
    except ImportError as e:  # no ipywidgets/anywidget: the static form still shows everything
        display(HTML(f"<div class='fuselab-notice'>The interactive explorer needs ipywidgets and "
                     f"anywidget ({e}); showing the static form.</div>"))
        show_static(session)
        return None
    display(explorer)
    return None
