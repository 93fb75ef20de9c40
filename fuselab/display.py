"""Showing a session: plain text, the static outputs, or the interactive explorer."""
from __future__ import annotations

from typing import Any


def text_summary(session: Any) -> str:
    return text_header(session) + "\n\n" + str(session.plan)


def timing_note(session: Any) -> str:
    """Why the cell's timing failed ('' if it did not); the results were bound."""
    why = getattr(session, "timing_error", None)
    return f"timing failed, the results are bound: {why}" if why else ""


def text_header(session: Any) -> str:
    """What the cell became: ops and kernels, backend, results, breaks."""
    g, plan = session.graph, session.plan
    n_ops = sum(1 for n in g.nodes if n.op not in ("input", "const"))
    lines = [f"fuselab: {n_ops} ops -> {len(plan.kernels)} kernel(s) ({session.plan_label}; "
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
    if timing_note(session):
        lines.append(timing_note(session))
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
    `static` the same content as plain HTML/SVG/PNG outputs for saved notebooks. Showing
    runs after the cell's results were bound: a view that fails to draw falls back to a
    simpler one with a notice, and an interrupt stops the drawing only; neither fails the
    cell (that said "error" over a namespace the cell had changed)."""
    try:
        _show(session, static)
    except KeyboardInterrupt:
        _notice("Drawing was interrupted: the cell ran and its results are bound; session.display() "
                "draws it again (-o NAME keeps the session).")


def _show(session: Any, static: bool) -> None:
    from IPython.display import HTML, display

    from .explorer.static import show_static

    if static or static_by_default():
        _show_or_fall_back(session, "the static view", lambda: show_static(session))
        return None
    try:
        from .explorer.widget import Explorer
        explorer = Explorer(session)
    except ImportError as e:  # no ipywidgets/anywidget: the static form still shows everything
        display(HTML(f"<div class='fuselab-notice'>The interactive explorer needs ipywidgets and "
                     f"anywidget ({e}); showing the static form.</div>"))
        _show_or_fall_back(session, "the static view", lambda: show_static(session))
        return None
    except Exception as e:  # noqa: BLE001 - a fuselab bug in the explorer: the static form instead
        _notice(f"The interactive explorer could not be drawn ({type(e).__name__}: {e}); showing the "
                "static form.")
        _show_or_fall_back(session, "the static view", lambda: show_static(session))
        return None
    display(explorer)
    return None


def _show_or_fall_back(session: Any, what: str, draw: Any) -> None:
    """draw(); where it fails, a notice and the plain-text summary."""
    try:
        draw()
    except Exception as e:  # noqa: BLE001
        _notice(f"{what} could not be drawn ({type(e).__name__}: {e}); the cell ran and its results are bound. "
                "The plain-text summary follows (session.summary(), session.explain() with -o NAME).")
        try:
            text = text_summary(session)
        except Exception as e2:  # noqa: BLE001
            text = f"(no summary either: {type(e2).__name__}: {e2})"
        print(text)


def _notice(text: str) -> None:
    from IPython.display import HTML, display

    from .explorer.format import esc
    display(HTML(f"<div class='fuselab-notice'>{esc(text)}</div>"))
