"""The interactive explorer: a graph you can click, presets, a kernel list with split and
merge toggles, the code of the selected kernel, and the numbers.

The session is the model. Every control calls `session.choose / fuse / split / undo /
measure`; the session notifies `on_change`, and `refresh()` redraws every panel from the
session's new state. A refused choice leaves the plan as it was and shows the planner's
reason. Displaying an Explorer gives the widget plus a static HTML fallback, so saved
notebooks still show the plan where widgets do not run (GitHub, nbviewer).
"""
from __future__ import annotations

from typing import Any

from ..plan.model import is_free
from . import graph as graph_mod
from .format import esc

PRESETS = (("Unfused", "unfused"), ("Auto", "auto"), ("Max", "max"))
NOTHING_TO_RUN = ("the cell computes no array on the device (its results are your arrays, views or copies "
                  "of them, or values Python computed at graph breaks)")


def _graph_view_class():
    import anywidget
    import traitlets as t

    from .code import highlight_css
    from .frontend import CSS, GRAPH_ESM

    class GraphView(anywidget.AnyWidget):
        """The plan's SVG; clicks come back as {'event': 'click'|'dblclick', 'id': ...}."""

        _esm = GRAPH_ESM
        _css = CSS + "\n" + highlight_css()
        html = t.Unicode("").tag(sync=True)
        selected = t.Int(0).tag(sync=True)

    return GraphView


def _code_view_class():
    import anywidget
    import traitlets as t

    from .frontend import CODE_ESM

    class CodeView(anywidget.AnyWidget):
        """The selected kernel's code with copy and export buttons."""

        _esm = CODE_ESM
        title = t.Unicode("").tag(sync=True)
        html = t.Unicode("").tag(sync=True)
        source = t.Unicode("").tag(sync=True)
        export_source = t.Unicode("").tag(sync=True)
        export_name = t.Unicode("fuselab_plan.py").tag(sync=True)
        export_note = t.Unicode("").tag(sync=True)

    return CodeView


class Explorer:
    """Widgets over one Session. Methods are what the controls call, so tests (and
    users) can drive the explorer without a browser."""

    def __init__(self, session: Any) -> None:
        import ipywidgets as w

        self.session = session
        self.selected_node: int | None = None   # the selected kernel follows this node across re-plans
        self._drawn: dict[tuple, tuple[str, bytes | None]] = {}   # plan -> (graph html, chart png)

        self.header = w.HTML().add_class("fuselab-header")
        small = w.Layout(width="auto")
        self.preset_buttons = {s: w.Button(description=label, tooltip=f"{label} plan", layout=small)
                               for label, s in PRESETS}
        for s, b in self.preset_buttons.items():
            b.on_click(lambda _b, s=s: self.preset(s))
        self.undo_button = w.Button(description="Undo", tooltip="back to the previous plan", layout=small)
        self.undo_button.on_click(lambda _b: self.undo())
        self.run_button = w.Button(description="Run on GPU", icon="play", layout=small,
                                   tooltip="time this plan, the unfused plan and eager CuPy on the GPU")
        self.run_button.on_click(lambda _b: self.run())
        self.presets = w.HBox([*self.preset_buttons.values(), self.undo_button, self.run_button])
        self.presets.add_class("fuselab-presets")
        self.message = w.HTML().add_class("fuselab-message")
        self.progress = w.HTML(layout=w.Layout(display="none")).add_class("fuselab-progress")

        self.graph_view = _graph_view_class()()
        self.graph_view.on_msg(self._on_graph_msg)
        self.graph_box = w.VBox([self.graph_view], layout=w.Layout(
            flex="1 1 55%", min_width="300px", max_height="680px", overflow="auto"))
        self.graph_box.add_class("fuselab-graph")
        self.kernel_list = w.VBox().add_class("fuselab-kernels")
        self.code_view = _code_view_class()()
        self.code_view.add_class("fuselab-code")
        self.compile_button = w.Button(description="Compile info (NVRTC)",
                                       tooltip="compile the selected kernel for sm_90: registers, spills, PTX")
        self.compile_button.on_click(lambda _b: self.show_compile_info())
        self.compile_info = w.HTML().add_class("fuselab-compile-info")
        side = w.VBox([self.kernel_list, self.code_view, self.compile_button, self.compile_info],
                      layout=w.Layout(flex="1 1 40%", min_width="340px"))
        side.add_class("fuselab-side")
        main = w.HBox([self.graph_box, side], layout=w.Layout(flex_flow="row wrap", width="100%"))
        main.add_class("fuselab-main")

        self.numbers = w.HTML().add_class("fuselab-numbers")
        self.chart = w.Image(format="png").add_class("fuselab-chart")
        self.chart.layout.max_width = "760px"
        self.legend = w.HTML(graph_mod.LEGEND_HTML)
        hint = w.HTML("<span class='fuselab-legend'>Click an edge to fuse or cut there, a kernel to see "
                      "its code; double-click an op to give it a kernel of its own.</span>")
        self.widget = w.VBox([self.header, self.presets, self.message, self.progress, hint, main,
                              self.legend, self.numbers, self.chart])
        self.widget.add_class("fuselab-explorer")
        session.on_change(lambda _s: self.refresh())
        self.refresh()

    # -- what the controls do ------------------------------------------------------
    def preset(self, strategy: str) -> None:
        self._attempt(self.session.choose, strategy)

    def fuse(self, *targets: Any) -> None:
        self._attempt(self.session.fuse, *targets)

    def split(self, *targets: Any) -> None:
        self._attempt(self.session.split, *targets)

    def split_kernel(self, k: int) -> None:
        self.split(("k", k))

    def merge_with_next(self, k: int) -> None:
        self.fuse(("k", k), ("k", k + 1))

    def toggle_edge(self, u: int, v: int) -> None:
        """Fuse across a materialised edge; cut a fused one."""
        g = self.session.graph
        # A click that arrives after a redraw (or an id typed by hand) may name an edge the
        # current graph does not have: say so instead of raising IndexError in the comm handler.
        if not (0 <= u < len(g.nodes) and 0 <= v < len(g.nodes) and u in g.nodes[v].inputs):
            self._say_refused(f"%{u} → %{v} is not an edge of this cell's graph (the drawing may have "
                              "changed since the click): click an edge of the graph as it is drawn now")
            return
        kind = graph_mod.Layout(self.session.plan).edge_kind(u, v)
        if kind == "read":
            name = g.nodes[u].args.get("name", "")
            self._say_refused(f"%{u}{f' ({name})' if name else ''} is an input of the cell: every kernel "
                              "reads it from memory, there is nothing to fuse or cut there")
        elif kind == "cut":
            self.fuse((u, v))
        else:
            done = self._already_cut(u, v)
            if done:
                self._say_refused(done)
            else:
                self.split((u, v))

    def _already_cut(self, u: int, v: int) -> str:
        """Why cutting the edge u -> v would change nothing, or "": u is a view (or a
        chain of them) recomputed in v's kernel from a value another kernel already writes
        to memory. The planner takes such a cut as the cut of that value's edge, which holds
        already: the click was accepted and added an undo step that changed no kernel."""
        g, plan = self.session.graph, self.session.plan
        p = u
        while is_free(g, p) and g.nodes[p].inputs:
            p = g.nodes[p].inputs[0]
        kv = plan.kernel_of.get(v)
        if p == u or is_free(g, p) or g.nodes[p].op == "input" or kv is None or p in plan.kernels[kv].nodes:
            return ""   # an op's edge, or one the planner answers itself
        kp = plan.kernel_of.get(p)
        by = f"k{kp}" if kp is not None else "another kernel"
        return (f"%{u} ({g.nodes[u].label}) is a view of %{p} ({g.nodes[p].label}), which {by} writes to memory: "
                f"k{kv} reads %{p} from there and recomputes the view as it loads it, so %{p} and %{v} are already "
                f"apart; click an edge between two operations of one kernel to cut it")

    def own_kernel(self, i: int) -> None:
        """Give op i a kernel of its own (a double click on it)."""
        g, plan = self.session.graph, self.session.plan
        if 0 <= i < len(g.nodes) and is_free(g, i) and i not in plan.kernel_of:
            # A view/constant is recomputed inside each kernel that reads it: the planner's
            # split would cut its *reader* off and name that op, which reads as if the
            # click had hit another node. Say what the clicked node is instead.
            n = g.nodes[i]
            what = "a constant" if n.op in ("const", "full") else \
                "a view" if n.kind.value == "injective" else "a generated array"
            readers = ", ".join(f"%{j} ({g.nodes[j].label})" for j in g.users[i][:3])
            ks = graph_mod.Layout(plan).kernels_of.get(i, ())
            where = f" (here: {', '.join(f'k{k}' for k in ks)})" if ks else ""
            self._say_refused(f"%{i} ({n.label}) is {what}: it is not computed on its own but recomputed "
                              f"inside every kernel that reads it{where}, so it cannot have a kernel of its "
                              f"own; double-click the operation that reads it{': ' + readers if readers else ''}")
            return
        self.split(i)

    def undo(self) -> None:
        self.session.undo()

    def select_kernel(self, k: int) -> None:
        kernels = self.session.plan.kernels
        if not 0 <= k < len(kernels):
            # a click that arrives after a redraw: say so (it was dropped in silence, and
            # the panel went on showing another kernel's code as if the click had worked)
            self._say_refused(f"k{k} is not a kernel of this plan, which has {len(kernels)} (the drawing may have "
                              "changed since the click): click a kernel of the graph as it is drawn now")
            return
        nodes = [i for i in kernels[k].nodes if i in self.session.plan.kernel_of] or list(kernels[k].nodes)
        self.selected_node = nodes[0] if nodes else None
        self._show_selection()

    def run(self) -> None:
        """Measure on the GPU, or on the CPU with Numba (plan, unfused and eager), showing progress."""
        s = self.session
        if s.backend not in ("cuda", "numba", "dask"):
            self._say_refused(f"no measurement: {s.backend_note or 'the CUDA backend is not available'}")
            return
        if not s.graph.outputs:   # (the magic does not time these either: cell.run_traced)
            self._say_refused(f"nothing to time: {NOTHING_TO_RUN}")
            return
        self.run_button.disabled = True
        try:
            s.measure(progress=self._progress)
        except KeyboardInterrupt:   # (the stop button while timing: a button's handler has no traceback to show)
            self._say_refused("timing interrupted: nothing was measured; press the button again to time the plan")
        except Exception as e:  # shown in the explorer, the plan stays as it is
            self._say_refused(f"measurement failed: {e}")
        finally:
            self.progress.value = ""
            self.progress.layout.display = "none"
            self.run_button.disabled = False

    def _progress(self, text: str) -> None:
        self.progress.value = f"<span class='fuselab-legend'>⏳ {esc(text)}</span>"
        self.progress.layout.display = ""

    def show_compile_info(self) -> None:
        from .code import compile_info_html, compile_kernel

        kernels = self.session.kernels
        if not kernels:   # (an IndexError in the button's handler: only a line in the log)
            self.compile_info.value = "<div class='fuselab-notice'>This plan has no kernel to compile.</div>"
            return
        kinfo = kernels[min(self.selected_kernel, len(kernels) - 1)]
        try:
            info = compile_kernel(kinfo)
        except Exception as e:  # NVRTC missing or a compile error: say which
            self.compile_info.value = f"<div class='fuselab-notice'>{esc(e)}</div>"
            return
        self.compile_info.value = compile_info_html(info)

    # -- graph clicks --------------------------------------------------------------
    def _on_graph_msg(self, _widget: Any, content: dict, _buffers: Any = None) -> None:
        self.handle_click(str(content.get("id", "")), double=content.get("event") == "dblclick")

    def handle_click(self, dom_id: str, double: bool = False) -> None:
        target = graph_mod.parse_dom_id(dom_id)
        if target is None:
            return
        kind, value = target
        if kind == "edge":
            self.toggle_edge(*value)  # type: ignore[misc]
        elif kind == "kernel":
            self.select_kernel(int(value))  # type: ignore[arg-type]
        elif kind == "node":
            i = int(value)  # type: ignore[arg-type]
            if not 0 <= i < len(self.session.graph.nodes):
                self._say_refused(f"%{i} is not an operation of this cell's graph (the drawing may have changed "
                                  "since the click): click an operation of the graph as it is drawn now")
                return
            if double:
                self.own_kernel(i)
            else:
                k = graph_mod.Layout(self.session.plan).home.get(i)
                if k is not None:
                    self.selected_node = i
                    self._show_selection()

    # -- drawing -------------------------------------------------------------------
    @property
    def selected_kernel(self) -> int:
        plan = self.session.plan
        if self.selected_node is not None:
            k = graph_mod.Layout(plan).home.get(self.selected_node)
            if k is not None:
                return k
        return 0

    def _attempt(self, action, *args: Any) -> None:
        """Run a plan change; a refusal (PlanError, a missing planner) is shown, not raised."""
        try:
            action(*args)
        except Exception as e:  # noqa: BLE001 - every refusal is shown with its reason
            self._say_refused(getattr(e, "reason", None) or str(e) or type(e).__name__)

    def _say_refused(self, reason: str) -> None:
        self._set_message(f"<span class='fuselab-refused'>Not changed:</span> {esc(reason)} "
                          "<span class='fuselab-legend'>(the plan is as it was)</span>")

    def _set_message(self, html: str) -> None:
        self.message.value = html
        self.message.layout.display = "" if html else "none"

    def refresh(self) -> None:
        """Redraw every panel from the session."""
        from .numbers import numbers_html
        from .static import header_html

        s = self.session
        self.header.value = header_html(s)
        for strategy, b in self.preset_buttons.items():
            # (a plan changed by hand is no longer the preset it started from)
            b.button_style = "info" if s.plan.strategy == strategy and not s.plan.constraints.active else ""
        self.undo_button.disabled = len(s.history) <= 1
        # Dask sessions are timed too (run() and session.measure take them): the button was
        # disabled there, with a "no GPU here" tooltip, although the panel said "not yet".
        self.run_button.disabled = s.backend not in ("cuda", "numba", "dask") or not s.graph.outputs
        if s.backend == "numba":
            self.run_button.description = "Run on CPU"
            self.run_button.tooltip = "time this plan, the unfused plan and plain NumPy on the CPU (Numba)"
        elif s.backend == "dask":
            self.run_button.description = "Time with Dask"
            self.run_button.tooltip = "compute the results on the current Dask scheduler, fused against plain Dask"
        elif s.backend != "cuda":
            from .numbers import unmeasured_reason
            self.run_button.tooltip = f"not timed: {unmeasured_reason(s)}"
        if not s.graph.outputs:
            self.run_button.tooltip = f"nothing to time: {NOTHING_TO_RUN}"
        self._set_message(f"<span class='fuselab-legend'>{esc(s.message)}</span>" if s.message else "")
        graph_html, png = self._drawings()
        self.graph_view.html = graph_html
        self._draw_kernel_list()
        self._show_selection()
        self.code_view.export_source, self.code_view.export_note = _export(s)
        self.numbers.value = numbers_html(s)
        self.chart.value = png or b""
        self.chart.layout.display = "" if png else "none"

    def _drawings(self) -> tuple[str, bytes | None]:
        """The graph and the chart of the current plan and measurement, remembered for
        the last few plans so presets and undo redraw at once."""
        from .static import chart_png

        s = self.session
        if s.measurement is not None:  # measured once per plan: nothing to remember
            return graph_mod.graph_view(s.plan).html, chart_png(s)
        key = (s.plan.kernels, s.plan.constraints)  # boundary reasons depend on constraints
        if key not in self._drawn:
            if len(self._drawn) >= 32:
                self._drawn.pop(next(iter(self._drawn)))
            self._drawn[key] = (graph_mod.graph_view(s.plan).html, chart_png(s))
        return self._drawn[key]

    def _draw_kernel_list(self) -> None:
        import ipywidgets as w

        s = self.session
        rows = []
        kernels = s.plan.kernels
        for k, kern in enumerate(kernels):
            color = graph_mod.kernel_color(k)
            name = w.Button(description=f"k{k} {kern.name} · {kern.template.value}",
                            tooltip="show this kernel's code", layout=w.Layout(width="auto", flex="1 1 auto"))
            name.style.button_color = graph_mod.light(color, 0.6)
            name.style.text_color = "#111111"  # dark text on the light swatch, in any theme
            name.add_class("fuselab-kernel-name")
            name.on_click(lambda _b, k=k: self.select_kernel(k))
            ops = [i for i in kern.nodes if not is_free(s.graph, i)]
            split = w.Button(description="split", tooltip="one kernel per op", layout=w.Layout(width="60px"),
                             disabled=len(ops) <= 1)
            split.on_click(lambda _b, k=k: self.split_kernel(k))
            merge = w.Button(description="merge ↓", tooltip=f"fuse with k{k + 1}", layout=w.Layout(width="84px"),
                             disabled=k + 1 >= len(kernels))
            merge.on_click(lambda _b, k=k: self.merge_with_next(k))
            row = w.HBox([name, split, merge])
            row.add_class("fuselab-kernel-row")
            rows.append(row)
        old = self.kernel_list.children
        self.kernel_list.children = rows
        for row in old:  # free the replaced widgets in the kernel and the browser
            for child in row.children:
                child.close()
            row.close()

    def _show_selection(self) -> None:
        from .code import kernel_code_html, kernels_with_code

        s = self.session
        k = self.selected_kernel
        self.graph_view.selected = k
        kernels, missing = kernels_with_code(s)
        if not kernels:
            self.code_view.title, self.code_view.source, self.code_view.html = "", "", ""
            # (the button stayed enabled from the previous plan: a click raised IndexError)
            self.compile_info.value = ""
            self.compile_button.disabled = True
            return
        kinfo = kernels[min(k, len(kernels) - 1)]
        self.code_view.title = kinfo.name
        python = getattr(kinfo, "python_source", None) if getattr(kinfo, "python_first", False) else None
        self.code_view.source = python or kinfo.source or ""
        self.code_view.html = kernel_code_html(kinfo, missing)
        self.compile_info.value = ""
        self.compile_button.disabled = not kinfo.source

    # -- display -------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        from .static import static_html

        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/html"] = static_html(self.session)
        bundle["text/plain"] = self.session.summary()
        return bundle


def _export(session: Any) -> tuple[str, str]:
    from .export import export_python

    try:
        return export_python(session), ""
    except Exception as e:  # noqa: BLE001 - say why the button is off
        return "", f"export unavailable: {e}"
