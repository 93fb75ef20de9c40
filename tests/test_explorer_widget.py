"""The interactive explorer's state, driven without a browser: presets, kernel toggles,
graph clicks, an illegal choice, undo, code selection, display data."""
from __future__ import annotations

import re

import numpy as np
import pytest

from fuselab.session import Session
from fuselab.trace import trace_cell

pytest.importorskip("ipywidgets")
pytest.importorskip("anywidget")

from fuselab.explorer.widget import Explorer  # noqa: E402

CHAIN = "t = x * x + 1.0\ny = np.exp(t) * 0.5 - np.sin(x)"
SOFTMAX_AND_MAX = ("e = np.exp(x - x.max(axis=1, keepdims=True))\n"
                   "p = e / e.sum(axis=1, keepdims=True)\nm = x.max()")


def explorer(src: str = CHAIN, strategy: str = "auto", **arrays) -> Explorer:
    arrays.setdefault("x", np.random.default_rng(0).random((256, 512), dtype=np.float32))
    # the NumPy backend: these tests are about the explorer, not about compiling kernels
    return Explorer(Session(trace_cell(src, {"np": np, **arrays}), strategy=strategy, backend="cpu"))


def drawn_kernels(e: Explorer) -> int:
    """Kernel clusters in what the graph panel shows."""
    return e.graph_view.html.count('class="cluster')


def consistent(e: Explorer) -> None:
    """Every panel shows the session's current plan."""
    n = len(e.session.plan.kernels)
    assert drawn_kernels(e) == n
    assert len(e.kernel_list.children) == n
    assert e.numbers.value.count("<tr>") == 1 + n
    k = e.selected_kernel
    assert e.graph_view.selected == k
    assert e.code_view.title == e.session.kernels[k].name
    assert e.code_view.source == (e.session.kernels[k].source or "")


def test_presets_replan_and_redraw():
    e = explorer()
    assert e.session.plan.strategy == "auto" and len(e.session.plan.kernels) == 1
    consistent(e)
    e.preset_buttons["unfused"].click()
    assert e.session.plan.strategy == "unfused" and len(e.session.plan.kernels) == 6
    assert e.preset_buttons["unfused"].button_style == "info" and e.preset_buttons["auto"].button_style == ""
    consistent(e)
    e.preset_buttons["max"].click()
    assert len(e.session.plan.kernels) == 1
    consistent(e)
    assert [b.description for b in e.preset_buttons.values()] == ["Unfused", "Auto", "Max"]


def test_clicking_edges_cuts_and_fuses():
    e = explorer()
    e.handle_click("fl_e1_3")  # fused edge x*x -> +1: cut it
    assert len(e.session.plan.kernels) == 2
    assert e.session.plan.kernel_of[1] != e.session.plan.kernel_of[3]
    assert re.search(r'id="fl_e1_3" class="[^"]*fl&#45;cut', e.graph_view.html)
    consistent(e)
    e.handle_click("fl_e1_3")  # now materialised: fuse it again
    assert len(e.session.plan.kernels) == 1
    assert re.search(r'id="fl_e1_3" class="[^"]*fl&#45;fused', e.graph_view.html)
    consistent(e)


def test_clicking_an_input_edge_changes_nothing_and_says_why():
    e = explorer()
    before = e.session.plan
    e.handle_click("fl_e0_1")
    assert e.session.plan is before
    assert "Not changed" in e.message.value and "input" in e.message.value


def test_double_click_gives_an_op_its_own_kernel():
    e = explorer()
    (exp,) = [i for i, n in enumerate(e.session.graph.nodes) if n.op == "exp"]
    e.handle_click(f"fl_n{exp}", double=True)
    plan = e.session.plan
    k = plan.kernel_of[exp]
    assert [i for i in plan.kernels[k].nodes if not e.session.graph.nodes[i].op == "const"] == [exp]
    consistent(e)


def test_kernel_list_split_toggle():
    e = explorer()
    name, split, merge = e.kernel_list.children[0].children
    assert merge.disabled  # one kernel: nothing to merge with
    split.click()
    assert len(e.session.plan.kernels) == 6
    assert all(row.children[1].disabled for row in e.kernel_list.children)  # single ops
    consistent(e)


def test_kernel_list_merge_toggle():
    e = explorer(strategy="unfused")
    assert all(not row.children[2].disabled for row in e.kernel_list.children[:-1])
    assert e.kernel_list.children[-1].children[2].disabled
    e.kernel_list.children[0].children[2].click()  # merge k0 (x*x) with k1 (+1.0)
    assert len(e.session.plan.kernels) == 5
    assert e.session.plan.kernel_of[1] == e.session.plan.kernel_of[3]
    assert not e.kernel_list.children[e.session.plan.kernel_of[1]].children[1].disabled
    consistent(e)


def test_illegal_toggle_shows_the_reason_and_keeps_the_plan():
    e = explorer(SOFTMAX_AND_MAX)
    plan, history = e.session.plan, len(e.session.history)
    kernels = plan.kernels
    row_k = next(k for k, kern in enumerate(kernels) if kern.template.value == "row")
    full_k = next(k for k, kern in enumerate(kernels) if kern.template.value == "reduction")
    e.fuse(("k", row_k), ("k", full_k))
    assert e.session.plan is plan and len(e.session.history) == history
    assert "Not changed" in e.message.value
    with pytest.raises(ValueError) as info:
        plan.fuse(("k", row_k), ("k", full_k))
    reason = str(info.value)
    assert reason and reason.split(":")[0].replace("'", "&#x27;") in e.message.value
    consistent(e)


def test_undo_goes_back_one_plan():
    e = explorer()
    first = e.session.plan
    assert e.undo_button.disabled
    e.preset("unfused")
    assert not e.undo_button.disabled
    e.undo_button.click()
    assert e.session.plan is first and drawn_kernels(e) == 1
    consistent(e)


def test_selecting_a_kernel_shows_its_code():
    e = explorer(strategy="unfused")
    kernels = e.session.kernels
    e.handle_click("fl_k2")
    assert e.selected_kernel == 2 and e.graph_view.selected == 2
    assert e.code_view.title == kernels[2].name and e.code_view.source == kernels[2].source
    assert kernels[2].name.split("_", 1)[1] in e.code_view.html
    e.kernel_list.children[4].children[0].click()
    assert e.code_view.source == kernels[4].source
    # the selection follows its node through a re-plan
    node = e.selected_node
    e.preset("auto")
    assert e.selected_kernel == e.session.plan.kernel_of[node] == 0
    consistent(e)


def test_graph_messages_from_the_browser_are_handled():
    e = explorer()
    e._on_graph_msg(e.graph_view, {"event": "click", "id": "fl_e1_3"}, [])
    assert len(e.session.plan.kernels) == 2
    e._on_graph_msg(e.graph_view, {"event": "click", "id": "a_fl_n1"}, [])  # not ours: ignored
    assert len(e.session.plan.kernels) == 2


def test_run_without_a_gpu_says_so():
    e = explorer()
    assert e.session.backend == "cpu"
    assert e.run_button.disabled
    e.run()
    assert e.session.measurement is None
    assert "Not changed" in e.message.value and "no measurement" in e.message.value
    assert "no GPU here" in e.numbers.value


def test_code_generation_failure_is_shown(monkeypatch):
    e = explorer()

    def broken(optional=False):
        if optional:
            return None
        raise RuntimeError("template missing")
    monkeypatch.setattr(e.session, "codes", broken)
    e.preset("unfused")
    assert "code generation failed" in e.code_view.html and "template missing" in e.code_view.html
    assert e.code_view.source == "" and e.compile_button.disabled
    assert e.code_view.export_source == "" and "template missing" in e.code_view.export_note
    assert drawn_kernels(e) == 6  # the rest still works


def test_display_data_carries_a_static_fallback():
    e = explorer()
    bundle = e._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    html = bundle["text/html"]
    assert "<svg" in html and "fuselab-static" in html and "data:image/png;base64," in html
    assert e.session.kernels[0].name in html
    assert "fuselab" in bundle["text/plain"]


def test_stable_css_classes():
    e = explorer()
    assert "fuselab-explorer" in e.widget._dom_classes
    assert "fuselab-presets" in e.presets._dom_classes
    assert "fuselab-graph" in e.graph_box._dom_classes
    assert "fuselab-code" in e.code_view._dom_classes
    assert "fuselab-numbers" in e.numbers._dom_classes
    assert "fuselab-kernels" in e.kernel_list._dom_classes


def test_compile_info_button(monkeypatch):
    nvrtc = pytest.importorskip("fuselab.codegen.nvrtc")
    ok, why = nvrtc.available()
    if not ok:
        pytest.skip(why)
    e = explorer()
    e.compile_button.click()
    html = e.compile_info.value
    assert "registers" in html and "PTX" in html and f".entry {e.session.kernels[0].name}" in html


def test_without_dot_the_listing_is_clickable(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # Graphviz's dot cannot be found
    e = explorer(strategy="unfused")
    assert "Graph not drawn" in e.graph_view.html and "install" in e.graph_view.html
    assert e.graph_view.html.count("<tr id='fl_k") == len(e.session.plan.kernels)
    e.handle_click("fl_k3")
    assert e.selected_kernel == 3 and e.code_view.source == e.session.kernels[3].source
    e.preset_buttons["auto"].click()
    assert e.graph_view.html.count("<tr id='fl_k") == len(e.session.plan.kernels) == 1
