"""Showing a session: plain text, static HTML, or the interactive explorer."""
from __future__ import annotations

import html
from typing import Any


def text_summary(session: Any) -> str:
    g, plan = session.graph, session.plan
    n_ops = sum(1 for n in g.nodes if n.op not in ("input", "const"))
    lines = [f"fuselab: {n_ops} ops -> {len(plan.kernels)} kernel(s) ({plan.strategy} plan; "
             f"unfused: {len(session.unfused.kernels)}), backend {session.backend}"]
    if session.backend_note:
        lines.append(session.backend_note)
    tr = session.traced
    if tr.results:
        lines.append("results: " + ", ".join(tr.results))
    if tr.fused_away:
        lines.append("fused away (not bound; use --keep NAME to keep): " + ", ".join(tr.fused_away))
    if session.check is not None and not session.check.ok:
        lines.append(f"RESULT CHECK FAILED: {session.check.worst}")
    lines.append("")
    lines.append(str(plan))
    return "\n".join(lines)


def static_html(session: Any) -> str:
    return f"<pre class='fuselab-summary'>{html.escape(text_summary(session))}</pre>"


def show(session: Any, static: bool = False) -> Any:
    from IPython.display import HTML, display
    display(HTML(static_html(session)))
    return None
