"""The explorer's views without a browser: the Graphviz drawing and its ids, the static
form, the numbers, code highlighting and the fallback when `dot` is missing."""
from __future__ import annotations

import html
import re

import numpy as np
import pytest

from fuselab.explorer import graph as gv
from fuselab.explorer import static
from fuselab.plan import make_plan, unfused_plan
from fuselab.session import Session
from fuselab.trace import trace_cell

pytest.importorskip("graphviz")

CHAIN = "t = x * x + 1.0\ny = np.exp(t) * 0.5 - np.sin(x)"


def session_of(src: str, strategy: str = "auto", **arrays) -> Session:
    ns = {"np": np, **arrays}
    return Session(trace_cell(src, ns), strategy=strategy, backend="cpu")   # predicted figures, no compiling


def x2d(rows: int = 256, cols: int = 512) -> np.ndarray:
    return np.random.default_rng(0).random((rows, cols), dtype=np.float32)


def element(svg: str, dom_id: str) -> str:
    """The <g> element with that id, as text (graphviz writes '-' as &#45;)."""
    m = re.search(rf'<g id="{dom_id}" class="([^"]*)">(.*?)</g>\n(?=<!--|</g>)', svg, re.S)
    assert m, f"{dom_id} not in the SVG"
    return m.group(0)


def classes(svg: str, dom_id: str) -> set[str]:
    return set(html.unescape(re.search(rf'<g id="{dom_id}" class="([^"]*)"', svg).group(1)).split())


# -- the drawing -----------------------------------------------------------------------

def test_one_cluster_per_kernel_and_ids_for_every_drawn_node():
    s = session_of(CHAIN, "unfused", x=x2d())
    svg = gv.render_svg(s.plan)
    assert svg.startswith("<svg")
    assert svg.count('class="cluster') == len(s.plan.kernels) == 6
    for k in range(len(s.plan.kernels)):
        assert f'id="fl_k{k}"' in svg
    g = s.graph
    for i, n in enumerate(g.nodes):
        drawn = f'id="fl_n{i}"' in svg
        assert drawn == (n.op != "const"), (i, n.op)  # constants are folded into labels


def test_scalar_constants_fold_into_their_consumer():
    s = session_of(CHAIN, "unfused", x=x2d())
    svg = gv.render_svg(s.plan)
    assert "add(·, 1.0)" in svg and "multiply(·, 0.5)" in svg
    # float32 constants read as written, not as their nearest double
    svg = gv.render_svg(session_of("y = x * 0.9 + 1e-8", x=x2d(4, 8)).plan)
    assert "multiply(·, 0.9)" in svg and "add(·, 1e&#45;08)" in svg


def test_materialised_edges_are_marked_and_labelled_with_bytes():
    x = x2d()
    unfused = session_of(CHAIN, "unfused", x=x)
    svg = gv.render_svg(unfused.plan)
    edge = element(svg, "fl_e1_3")  # x*x -> +1.0: written to memory and read back
    assert "fl-cut" in classes(svg, "fl_e1_3")
    assert "524 KB" in edge and gv.CUT_COLOR in edge and "stroke-dasharray" in edge
    assert "fl-read" in classes(svg, "fl_e0_1")  # reading the input

    fused = session_of(CHAIN, "auto", x=x)
    assert len(fused.plan.kernels) == 1
    svg = gv.render_svg(fused.plan)
    edge = element(svg, "fl_e1_3")
    assert "fl-fused" in classes(svg, "fl_e1_3")
    assert "KB" not in edge and gv.CUT_COLOR not in edge


def test_cut_edge_tooltip_gives_the_planners_reason():
    s = session_of("y = x / x.sum()", "auto", x=x2d())
    assert len(s.plan.kernels) == 2
    bounds = s.plan.boundaries()
    assert bounds
    svg = gv.render_svg(s.plan)
    cut = re.findall(r'<g id="(fl_e\d+_\d+)" class="[^"]*fl&#45;cut', svg)
    assert cut
    # graphviz escapes quotes in titles; compare a quote-free prefix of the reason
    reason = bounds[0].reason.split("'")[0].split('"')[0][:30]
    assert reason and reason.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in svg


def test_view_in_several_kernels_is_drawn_once_and_says_where():
    s = session_of("v = x.T\np = np.exp(v)\nq = np.sin(v)", "unfused", x=x2d(8, 16))
    g = s.graph
    (view,) = [i for i, n in enumerate(g.nodes) if n.op == "transpose"]
    lay = gv.Layout(s.plan)
    assert len(lay.recomputed_in(view)) == 2 and lay.home[view] is None
    svg = gv.render_svg(s.plan)
    assert svg.count(f'id="fl_n{view}"') == 1
    assert "recomputed in k0, k1" in element(svg, f"fl_n{view}")
    for u, v, kind in lay.edges():
        if u == view:
            assert kind == "recompute"


def test_opaque_ops_are_marked():
    w = np.ones((512, 64), np.float32)
    s = session_of("y = np.maximum(x @ w, 0.0)", "auto", x=x2d(), w=w)
    g = s.graph
    (mm,) = [i for i, n in enumerate(g.nodes) if n.op == "opaque"]
    svg = gv.render_svg(s.plan)
    node = element(svg, f"fl_n{mm}")
    assert "fl-opaque" in classes(svg, f"fl_n{mm}")
    assert "opaque: library call" in node


def test_colours_read_on_light_and_dark_pages():
    """No black strokes or text on the transparent background: edges and kernel labels
    use mid-tones; black text only sits on the light node fills."""
    s = session_of(CHAIN + "\nz = y / y.sum(axis=1, keepdims=True)", "unfused", x=x2d())
    svg = gv.render_svg(s.plan)
    assert 'fill="white"' not in svg  # no background of its own
    for m in re.finditer(r'<g id="fl_(?:e\d+_\d+|k\d+)" class="[^"]*">(.*?)</g>', svg, re.S):
        assert 'stroke="black"' not in m.group(1) and 'fill="black"' not in m.group(1), m.group(0)[:200]


@pytest.mark.parametrize("dom_id, want", [
    ("fl_n12", ("node", 12)), ("fl_e3_17", ("edge", (3, 17))), ("fl_k0", ("kernel", 0)),
    ("fl_out_y", None), ("a_fl_n1", None), ("", None), ("fl_e3", None)])
def test_dom_ids_map_back_to_the_plan(dom_id, want):
    assert gv.parse_dom_id(dom_id) == want


def test_round_trip_of_ids():
    assert gv.parse_dom_id(gv.node_dom_id(7)) == ("node", 7)
    assert gv.parse_dom_id(gv.edge_dom_id(2, 9)) == ("edge", (2, 9))
    assert gv.parse_dom_id(gv.kernel_dom_id(4)) == ("kernel", 4)


@pytest.fixture(autouse=True)
def shell():
    """An IPython shell, so display() calls can be captured."""
    from IPython.core.interactiveshell import InteractiveShell
    return InteractiveShell.instance()


# -- no Graphviz -------------------------------------------------------------------------

@pytest.fixture()
def no_dot(monkeypatch, tmp_path):
    """A PATH on which Graphviz's `dot` cannot be found."""
    monkeypatch.setenv("PATH", str(tmp_path))


def test_missing_dot_gives_a_notice_and_a_listing(no_dot):
    s = session_of(CHAIN, "unfused", x=x2d())
    with pytest.raises(gv.GraphvizUnavailable, match="dot"):
        gv.render_svg(s.plan)
    view = gv.graph_view(s.plan)
    assert view.svg is None
    assert "dot" in view.notice and "install" in view.notice
    assert view.html.count("<tr id='fl_k") == len(s.plan.kernels)
    assert "exp" in view.html and "%4" in view.html


def test_static_form_without_dot_is_complete(no_dot):
    from IPython.utils.capture import capture_output

    from fuselab.explorer.static import show_static

    s = session_of(CHAIN, "unfused", x=x2d())
    with capture_output() as cap:
        show_static(s)
    kinds = [set(o.data) for o in cap.outputs]
    assert not any("image/svg+xml" in k for k in kinds)
    html = "".join(o.data.get("text/html", "") for o in cap.outputs)
    assert "Graph not drawn" in html and "fuselab-listing" in html
    assert "fl-hl" in html  # the code is still there


# -- the static form -------------------------------------------------------------------------

def test_static_form_is_plain_outputs():
    from IPython.utils.capture import capture_output

    from fuselab.explorer.static import show_static

    s = session_of(CHAIN + "\nz = y / y.sum(axis=1, keepdims=True)", "auto", x=x2d())
    with capture_output() as cap:
        show_static(s)
    mimes = [next(m for m in ("image/svg+xml", "image/png", "text/html") if m in o.data) for o in cap.outputs]
    assert "image/svg+xml" in mimes and "image/png" in mimes
    svg = next(o.data["image/svg+xml"] for o in cap.outputs if "image/svg+xml" in o.data)
    assert svg.count('class="cluster') == len(s.plan.kernels)
    html = "".join(o.data.get("text/html", "") for o in cap.outputs)
    for kinfo in s.kernels:
        assert kinfo.name in html
    assert "fuselab-table" in html and "predicted" in html.lower()
    assert "<span class=\"k\">" in html or "class=\"kt\"" in html  # Pygments tokens


def test_magic_static_flag_and_config(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "fuselab")
    ip.user_ns.update(np=np, x=x2d(16, 32))
    with capture_output() as cap:
        assert ip.run_cell("%%fuse --static\ny = np.exp(x) + 1", store_history=False).success
    assert any("image/svg+xml" in o.data for o in cap.outputs)
    assert not any("application/vnd.jupyter.widget-view+json" in o.data for o in cap.outputs)
    ip.run_line_magic("config", "FuseMagics.static = True")
    try:
        with capture_output() as cap:
            assert ip.run_cell("%%fuse\ny = np.exp(x) + 1", store_history=False).success
        assert any("image/svg+xml" in o.data for o in cap.outputs)
    finally:
        ip.run_line_magic("config", "FuseMagics.static = False")
    with capture_output() as cap:
        assert ip.run_cell("%%fuse\ny = np.exp(x) + 1", store_history=False).success
    (bundle,) = [o.data for o in cap.outputs]
    assert "application/vnd.jupyter.widget-view+json" in bundle and "<svg" in bundle["text/html"]


# -- numbers and charts -----------------------------------------------------------------

def test_numbers_without_a_gpu_are_labelled_predicted():
    from fuselab.explorer.numbers import numbers_html

    s = session_of(CHAIN, "unfused", x=x2d())
    html = numbers_html(s)
    rep = s.report()
    assert html.count("<tr>") == 1 + len(rep.kernels)  # header + one row per kernel (+ total row)
    assert "fl-total" in html and f"{rep.launches} launch" in html
    assert "Predicted" in html and "no GPU here" in html
    assert html.count("fuselab-predicted") >= len(rep.kernels)


def test_numbers_say_what_is_missing_when_the_cost_model_fails(monkeypatch):
    from fuselab.explorer.charts import timing_chart_png
    from fuselab.explorer.numbers import numbers_html

    s = session_of(CHAIN, "unfused", x=x2d())

    def broken(plan=None):
        raise RuntimeError("no device parameters")
    monkeypatch.setattr(s, "report", broken)
    html = numbers_html(s)
    assert "No predictions" in html and "no device parameters" in html
    assert timing_chart_png(s) is None


def test_chart_is_a_png():
    from fuselab.explorer.charts import timing_chart_png

    s = session_of(CHAIN, "unfused", x=x2d())
    png = timing_chart_png(s)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


# -- code ----------------------------------------------------------------------------------

def test_code_is_highlighted_with_the_prelude_folded():
    from fuselab.explorer.code import folded_source_html, split_prelude

    s = session_of(CHAIN, "auto", x=x2d())
    src = s.kernels[0].source
    before, pre, after = split_prelude(src)
    assert pre and before + pre + after == src
    assert 'extern "C"' in after
    html = folded_source_html(src)
    assert html.count("class=\"fl-hl\"") == 2  # the kernel's own code, highlighted
    folded = html[html.index("fuselab-prelude"):html.index("</details>")]
    assert "<pre class='fl-hl'>" in folded and "<span" not in folded.split("</summary>")[1]


def test_opaque_kernel_says_it_has_no_generated_code():
    from fuselab.explorer.code import kernel_code_html

    w = np.ones((512, 64), np.float32)
    s = session_of("y = np.maximum(x @ w, 0.0)", "auto", x=x2d(), w=w)
    (op,) = [k for k in s.kernels if k.template.value == "opaque"]
    assert "opaque" in kernel_code_html(op).lower() and "no code" in kernel_code_html(op)


def test_highlight_css_is_scoped_per_theme():
    from fuselab.explorer.code import highlight_css

    css = highlight_css()
    for line in css.splitlines():
        for selector in line.split("{")[0].split(","):
            assert ".fuselab-code-view .fl-hl" in selector, selector
    assert 'body[data-jp-theme-light="false"]' in css and "body.vscode-dark" in css


def test_importing_fuselab_loads_no_ui_library():
    import subprocess
    import sys

    code = ("import sys, fuselab, fuselab.display, fuselab.session, fuselab.magic\n"
            "bad = [m for m in ('ipywidgets', 'anywidget', 'matplotlib', 'graphviz') if m in sys.modules]\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def _text_y(svg: str, dom_id: str) -> float:
    """The vertical position of an element's first text line (SVG y grows downwards)."""
    m = re.search(rf'<g id="{dom_id}".*?<text[^>]* y="([-\d.]+)"', svg, re.S)
    assert m, dom_id
    return float(m.group(1))


def test_graph_breaks_are_drawn_between_the_stages_with_reason_and_line():
    src = "y = x * 2\nif y.sum() > 3:\n    z = np.exp(y) + 1\nw = z / z.sum(axis=1, keepdims=True)"
    s = session_of(src, "unfused", x=x2d())
    g = s.graph
    assert len(g.breaks) == 1
    svg = gv.render_svg(s.plan)
    assert 'id="fl_b0"' in svg and "fl-break" in classes(svg, "fl_b0")
    assert "y.sum() &gt; 3" in svg and "(if)" in svg and "line 2: if y.sum() &gt; 3:" in svg
    before = [i for i in range(len(g.nodes)) if g.stages[i] == 0 and g.nodes[i].op not in ("input", "const")]
    after = [i for i in range(len(g.nodes)) if g.stages[i] == 1 and g.nodes[i].op not in ("input", "const")]
    assert before and after
    barrier = _text_y(svg, "fl_b0")
    assert all(_text_y(svg, f"fl_n{i}") < barrier for i in before)
    assert all(_text_y(svg, f"fl_n{i}") > barrier for i in after)
    html = static.static_html(s)
    assert "graph break" in html and "y.sum() &gt; 3" in html and "line 2" in html
    assert "graph break" in s.summary()


def test_graph_breaks_in_the_listing_without_graphviz():
    s = session_of("y = x * 2\nprint(y.max())\nw = y + 1", "unfused", x=x2d())
    html = gv.listing_html(s.plan)
    assert "fuselab-break" in html and "print(y.max())" in html
