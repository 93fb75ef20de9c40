"""Drawing a plan with Graphviz: inputs, ops and outputs, each kernel a coloured cluster.

Fused edges (values that stay in registers) are thin and grey; edges that cross a kernel
boundary (an intermediate written to memory and read back) are thick, dashed, orange and
labelled with their bytes. Scalar constants are folded into their consumer's label; a
free node (view, generator) the planner recomputes in several kernels is drawn once,
outside the clusters, and says where it is recomputed.

Graph breaks (where Python needed a value in the middle of the cell) are drawn as a
barrier across the drawing between the nodes traced before and after, labelled with the
reason and the user's line, with a dotted edge from the value Python read.

Every SVG element a click can hit carries an id that maps back to the plan:
`fl_n<i>` (node i), `fl_e<u>_<v>` (edge u -> v), `fl_k<k>` (kernel k). The colours are
mid-tones on light fills, so the drawing reads on light and dark backgrounds alike.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from ..ir import Graph, format_args, format_node
from ..ops import Kind
from ..plan.model import Plan, is_free
from .format import esc, fmt_bytes

# Kernel colours (matplotlib's tab10): mid-tones for borders and labels, light fills.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
CUT_COLOR = "#e8590c"
BREAK_COLOR = "#c92a2a"
EDGE_COLOR = "#8c8c8c"
IO_FILL = "#eeeeee"
FONT = "Helvetica,Arial,sans-serif"

EdgeKind = Literal["read", "fused", "recompute", "cut"]


def kernel_color(k: int) -> str:
    return PALETTE[k % len(PALETTE)]


def light(color: str, amount: float = 0.78) -> str:
    """`color` mixed with white (opaque, so black text stays readable on dark pages)."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    mix = lambda c: round(c + (255 - c) * amount)  # noqa: E731
    return f"#{mix(r):02x}{mix(g):02x}{mix(b):02x}"


# -- ids that map SVG elements back to the plan --------------------------------------

def node_dom_id(i: int) -> str:
    return f"fl_n{i}"


def edge_dom_id(u: int, v: int) -> str:
    return f"fl_e{u}_{v}"


def kernel_dom_id(k: int) -> str:
    return f"fl_k{k}"


_ID = re.compile(r"fl_(?:n(\d+)|e(\d+)_(\d+)|k(\d+))$")


def parse_dom_id(dom_id: str) -> tuple[str, object] | None:
    """('node', i), ('edge', (u, v)), ('kernel', k), or None for anything else."""
    m = _ID.match(dom_id or "")
    if not m:
        return None
    n, u, v, k = m.groups()
    if n is not None:
        return "node", int(n)
    if u is not None:
        return "edge", (int(u), int(v))
    return "kernel", int(k)


# -- what is drawn where ---------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    """Placement of a plan's nodes in the drawing."""

    plan: Plan

    @property
    def graph(self) -> Graph:
        return self.plan.graph

    @cached_property
    def kernels_of(self) -> dict[int, tuple[int, ...]]:
        """node -> every kernel that computes it (free nodes may be in several)."""
        acc: dict[int, list[int]] = {}
        for k, kern in enumerate(self.plan.kernels):
            for i in kern.nodes:
                acc.setdefault(i, []).append(k)
        return {i: tuple(ks) for i, ks in acc.items()}

    def folded(self, i: int) -> bool:
        """Scalar constants are shown inside their consumers' labels."""
        g = self.graph
        return g.nodes[i].op == "const" and i not in g.output_ids and bool(g.users[i])

    @cached_property
    def home(self) -> dict[int, int | None]:
        """node -> the cluster it is drawn in (None: outside every kernel)."""
        out: dict[int, int | None] = {}
        owner = self.plan.kernel_of
        for i, n in enumerate(self.graph.nodes):
            if n.op == "input" or self.folded(i):
                continue
            ks = self.kernels_of.get(i, ())
            if i in owner:  # computed by one kernel, or stored by this one
                out[i] = owner[i]
            elif len(ks) == 1:
                out[i] = ks[0]
            else:
                out[i] = None
        return out

    def recomputed_in(self, i: int) -> tuple[int, ...]:
        """The kernels that compute node i, when that is more than one."""
        ks = self.kernels_of.get(i, ())
        return ks if len(ks) > 1 else ()

    def edge_kind(self, u: int, v: int) -> EdgeKind:
        if self.graph.nodes[u].op == "input":
            return "read"
        hu, hv = self.home.get(u), self.home.get(v)
        if hu is not None and hu == hv:
            return "fused"
        if set(self.kernels_of.get(u, ())) & set(self.kernels_of.get(v, ())):
            return "recompute"  # u is recomputed inside v's kernel, drawn elsewhere
        return "cut"

    def edges(self) -> list[tuple[int, int, EdgeKind]]:
        """Drawn edges (folded constants left out), each once, in node order."""
        out = []
        for v in self.home:
            for u in dict.fromkeys(self.graph.nodes[v].inputs):
                if not self.folded(u):
                    out.append((u, v, self.edge_kind(u, v)))
        return out


def value_text(graph: Graph, i: int) -> str:
    """A constant as short as its dtype allows: 0.9, not 0.8999999761581421 (float32)."""
    n = graph.nodes[i]
    return str(n.dtype.type(n.args["value"]))


def op_label(graph: Graph, i: int, layout: Layout) -> str:
    """`%3 add(·, 1.0)`: the op with folded constants in place of their operands."""
    n = graph.nodes[i]
    if n.op in ("full", "const"):
        head = f"{n.op} {value_text(graph, i)}"
    elif any(layout.folded(j) for j in n.inputs):
        ops = [value_text(graph, j) if layout.folded(j) else "·" for j in n.inputs]
        head = f"{n.label}({', '.join(ops)})"
    else:
        head = n.label
    return f"%{i} {head}"


def node_attrs(graph: Graph, i: int, layout: Layout) -> dict[str, str]:
    n = graph.nodes[i]
    lines = [op_label(graph, i, layout)]
    extra = format_args(n)
    lines.append(f"{n.aval}{'  ' + extra if extra else ''}")
    names = graph.names_of(i)
    if names:
        lines.append("→ " + ", ".join(names))
    k = layout.home.get(i)
    fill = light(kernel_color(k)) if k is not None else IO_FILL
    attrs = {"shape": "box", "style": "rounded,filled", "fillcolor": fill, "color": "#555555",
             "class": f"fl-node fl-{n.kind.value}"}
    tip = format_node(graph, i) + (f"\n{n.loc}" if n.loc is not None else "")
    if n.kind is Kind.REDUCE:  # square corners, heavier border
        attrs.update(style="filled", penwidth="2")
    elif n.kind is Kind.OPAQUE:
        lines.insert(1, "opaque: library call")
        attrs.update(shape="box3d", style="filled,bold", penwidth="1.6")
        attrs["class"] += " fl-opaque"
        tip += "\nopaque: runs through the array library, always in a kernel of its own"
    elif is_free(graph, i):
        attrs["style"] = "rounded,filled,dashed"
    recomputed = layout.recomputed_in(i)
    if recomputed:
        others = [x for x in recomputed if x != k]
        lines.append(("recomputed in " if k is None else "also recomputed in ")
                     + ", ".join(f"k{x}" for x in others))
        attrs["class"] += " fl-recomputed"
    if names:
        attrs["peripheries"] = "2"
    attrs["label"] = "\n".join(lines)
    attrs["tooltip"] = tip
    return attrs


def boundary_reasons(plan: Plan) -> dict[tuple[int, int], str]:
    """(value, reading kernel) -> the planner's reason the two kernels are separate."""
    try:
        found = plan.boundaries()
    except Exception:  # noqa: BLE001 - tooltips then say only what the edge is
        return {}
    return {(u, b.dst): b.reason for b in found for u in b.values}


def to_digraph(plan: Plan):
    """The plan as a `graphviz.Digraph` (not yet rendered)."""
    import graphviz

    g, lay = plan.graph, Layout(plan)
    d = graphviz.Digraph("fuselab")
    d.attr(bgcolor="transparent", rankdir="TB", nodesep="0.25", ranksep="0.35",
           fontname=FONT, fontsize="10", newrank="true")
    d.attr("node", fontname=FONT, fontsize="10", margin="0.08,0.03", height="0.3")
    d.attr("edge", fontname=FONT, fontsize="9", color=EDGE_COLOR, arrowsize="0.6")

    for i in g.input_ids:
        n = g.nodes[i]
        d.node(f"n{i}", label=f"{n.label}\n{n.aval}  {fmt_bytes(n.aval.nbytes)}", id=node_dom_id(i),
               shape="box", style="rounded,filled", fillcolor=IO_FILL, color="#555555",
               tooltip=f"input {n.label}: {n.aval}, read from memory", **{"class": "fl-node fl-input"})

    by_cluster: dict[int | None, list[int]] = {}
    for i, k in lay.home.items():
        by_cluster.setdefault(k, []).append(i)
    for i in by_cluster.pop(None, []):
        d.node(f"n{i}", id=node_dom_id(i), **node_attrs(g, i, lay))
    for k, kern in enumerate(plan.kernels):
        color = kernel_color(k)
        title = f"k{k} {kern.name} · {kern.template.value}"
        with d.subgraph(name=f"cluster_k{k}") as c:
            c.attr(id=kernel_dom_id(k), label=title, style="rounded,filled", color=color,
                   fillcolor=color + "22", fontcolor=color, penwidth="1.6", labeljust="l",
                   tooltip=f"kernel {k}: {kern.name} ({kern.template.value}); click to see its code",
                   **{"class": "fl-kernel"})
            for i in by_cluster.get(k, []):
                c.node(f"n{i}", id=node_dom_id(i), **node_attrs(g, i, lay))

    labelled: set[tuple[int, int | None]] = set()
    reasons = boundary_reasons(plan)
    for u, v, kind in lay.edges():
        attrs = {"id": edge_dom_id(u, v), "class": f"fl-edge fl-{kind}"}
        if kind == "cut":
            key = (u, lay.home.get(v))
            why = reasons.get(key)
            attrs.update(color=CUT_COLOR, fontcolor=CUT_COLOR, style="dashed", penwidth="2.2",
                         tooltip=f"%{u} is written to memory by k{plan.kernel_of.get(u, '?')} and read "
                                 f"back: {fmt_bytes(g.nodes[u].aval.nbytes)}."
                                 f"{' Why: ' + why + '.' if why else ''} Click to fuse here.")
            if key not in labelled:
                labelled.add(key)
                attrs["label"] = " " + fmt_bytes(g.nodes[u].aval.nbytes)
        elif kind == "fused":
            attrs.update(penwidth="1.2", tooltip=f"%{u} -> %{v} stays in registers. Click to cut here.")
        elif kind == "recompute":
            attrs.update(style="dotted", penwidth="1.4",
                         tooltip=f"%{u} is recomputed inside the kernel of %{v}, not read from memory")
        else:
            attrs.update(tooltip=f"kernel reads input {g.nodes[u].label}")
        d.edge(f"n{u}", f"n{v}", **attrs)

    _draw_breaks(d, g, lay)
    for name, i in g.outputs:
        a = g.nodes[i].aval
        d.node(f"out_{name}", label=f"{name}\n{a}  {fmt_bytes(a.nbytes)}", shape="box",
               style="rounded,filled", fillcolor=IO_FILL, color="#555555", peripheries="2",
               id=f"fl_out_{name}", tooltip=f"output {name}: written to memory",
               **{"class": "fl-output"})
        d.edge(f"n{i}", f"out_{name}", id=f"fl_w{i}_{name}", **{"class": "fl-edge fl-write"})
    return d


def break_text(b) -> str:
    """A graph break in a sentence: why Python needed a value, and on which line."""
    where = f"line {b.loc.line}: {b.loc.text.strip()}" if b.loc is not None else ""
    return f"graph break — {b.reason}" + (f"\n{where}" if where else "")


def _draw_breaks(d, g: Graph, lay: Layout) -> None:
    """Each break is a wide barrier: the nodes traced before it are drawn above, those
    traced after below (invisible edges rank them), the device finishes there."""
    stages = g.stages
    drawn = sorted(lay.home)
    for k, b in enumerate(g.breaks):
        bid = f"break{k}"
        d.node(bid, label=break_text(b), id=f"fl_b{k}", shape="box", style="dashed,filled",
               fillcolor=BREAK_COLOR + "14", color=BREAK_COLOR, fontcolor=BREAK_COLOR, penwidth="1.6",
               tooltip=f"{b.reason}: everything above runs, and the GPU finishes, before Python goes on",
               **{"class": "fl-break"})
        before = [i for i in drawn if stages[i] == k]
        after = [i for i in drawn if stages[i] == k + 1]
        for i in before:
            d.edge(f"n{i}", bid, style="invis", weight="2")
        for i in after:
            d.edge(bid, f"n{i}", style="invis", weight="2")
        if b.node is not None and b.node in lay.home:
            d.edge(f"n{b.node}", bid, style="dotted", color=BREAK_COLOR, arrowhead="none",
                   tooltip="Python read this value", **{"class": "fl-edge fl-break-read"})


class GraphvizUnavailable(RuntimeError):
    """Graphviz's `dot` program (or the graphviz Python package) is not installed."""


DOT_HINT = ("install Graphviz to draw the graph: `apt install graphviz`, `conda install graphviz` "
            "or `brew install graphviz`")


def render_svg(plan: Plan) -> str:
    """The plan as SVG text; raises GraphvizUnavailable (with what to do) without `dot`."""
    try:
        import graphviz
    except ImportError as e:
        raise GraphvizUnavailable(f"the graphviz Python package is missing ({e}); pip install graphviz") from None
    try:
        svg = to_digraph(plan).pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound:
        raise GraphvizUnavailable(f"Graphviz's `dot` program was not found; {DOT_HINT}") from None
    # Drop the XML prologue so the SVG can be inlined in HTML.
    return svg[svg.index("<svg"):]


def listing_html(plan: Plan) -> str:
    """Fallback view without Graphviz: one table row per kernel, with its ops."""
    g = plan.graph
    rows = []
    for k, kern in enumerate(plan.kernels):
        ops = "<br>".join(esc(format_node(g, i)) for i in kern.nodes)
        reads = ", ".join(f"%{i}" for i in kern.inputs) or "–"
        writes = ", ".join(f"%{i}" for i in kern.outputs) or "–"
        rows.append(f"<tr id='{kernel_dom_id(k)}' class='fl-kernel'>"
                    f"<td style='border-left:4px solid {kernel_color(k)}'>k{k} {esc(kern.name)}</td>"
                    f"<td>{esc(kern.template.value)}</td><td>{reads}</td><td>{writes}</td>"
                    f"<td><code>{ops}</code></td></tr>")
    inputs = ", ".join(esc(format_node(g, i)) for i in g.input_ids)
    breaks = "".join(f"<div class='fuselab-break'>{esc(break_text(b))}</div>" for b in g.breaks)
    return ("<table class='fuselab-listing'><thead><tr><th>kernel</th><th>template</th><th>reads</th>"
            "<th>writes</th><th>ops</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
            f"<div class='fuselab-inputs'>inputs: <code>{inputs}</code></div>{breaks}")


@dataclass(frozen=True)
class GraphView:
    """What the graph panel shows: an SVG, or a notice and the fallback listing."""

    svg: str | None
    notice: str = ""
    fallback_html: str = ""

    @property
    def html(self) -> str:
        if self.svg is not None:
            return self.svg
        return f"<div class='fuselab-notice'>{esc(self.notice)}</div>{self.fallback_html}"


def graph_view(plan: Plan) -> GraphView:
    try:
        return GraphView(render_svg(plan))
    except GraphvizUnavailable as e:
        return GraphView(None, f"Graph not drawn: {e}. The kernels are listed instead.", listing_html(plan))


LEGEND_HTML = (
    "<div class='fuselab-legend'>"
    "<span><b style='color:#8c8c8c'>──</b> fused: stays in registers</span> "
    f"<span><b style='color:{CUT_COLOR}'>╌╌</b> materialised: written to memory and read back (bytes)</span> "
    f"<span><b style='color:{BREAK_COLOR}'>┄┄</b> graph break: Python needed a value there</span> "
    "<span>▭ kernel = coloured box · ■ square corners: reduction · ┅ dashed box: view/generator, recomputed where read · "
    "▣ opaque library call</span></div>")
