"""The browser side of the explorer: two small anywidget views and the explorer's CSS.

Kept as strings (not files) so the package needs no data files to install. The views
only draw what Python sends and report clicks by element id; Python decides what a
click means (graph.parse_dom_id).
"""

# The graph: an SVG whose elements carry ids (fl_n3, fl_e1_3, fl_k0). A click or double
# click on an edge, node or kernel is sent to Python as {event, id}; the selected kernel
# is outlined. Thin edges get an invisible wide twin so they are easy to hit.
GRAPH_ESM = r"""
function render({ model, el }) {
  el.classList.add("fuselab-graph-view");
  const box = document.createElement("div");
  box.className = "fuselab-graph-box";
  el.appendChild(box);

  function mark() {
    const sel = model.get("selected");
    box.querySelectorAll(".fl-selected").forEach((g) => g.classList.remove("fl-selected"));
    const g = box.querySelector("#fl_k" + sel);
    if (g) g.classList.add("fl-selected");
  }
  function draw() {
    box.innerHTML = model.get("html");
    box.querySelectorAll("g.edge").forEach((g) => {
      const path = g.querySelector("path");
      if (!path) return;
      const hit = path.cloneNode(false);
      hit.setAttribute("class", "fl-hit");
      hit.setAttribute("stroke", "transparent");
      hit.setAttribute("stroke-width", "12");
      hit.removeAttribute("stroke-dasharray");
      g.insertBefore(hit, g.firstChild);
    });
    // The SVG scales to the panel; graphviz's pt sizes become a maximum.
    const svg = box.querySelector("svg");
    if (svg) { svg.removeAttribute("height"); svg.style.maxWidth = svg.getAttribute("width") || "100%"; svg.setAttribute("width", "100%"); }
    mark();
  }
  function target(ev) {
    return ev.target.closest("g.edge, g.node, g.cluster, tr.fl-kernel");
  }
  function send(kind) {
    return (ev) => {
      const t = target(ev);
      if (!t || !t.id) return;
      ev.preventDefault();
      model.send({ event: kind, id: t.id });
    };
  }
  box.addEventListener("click", send("click"));
  box.addEventListener("dblclick", send("dblclick"));
  model.on("change:html", draw);
  model.on("change:selected", mark);
  draw();
}
export default { render };
"""

# The code panel: highlighted source of the selected kernel, its compile info, a copy
# button (clipboard API, with a textarea fallback for non-secure pages) and a download
# of the whole plan as a standalone Python file.
CODE_ESM = r"""
function render({ model, el }) {
  el.classList.add("fuselab-code-view");
  const bar = document.createElement("div");
  bar.className = "fuselab-code-bar";
  const title = document.createElement("span");
  title.className = "fuselab-code-title";
  const copy = document.createElement("button");
  copy.className = "fuselab-copy";
  copy.textContent = "Copy";
  copy.title = "copy this kernel's CUDA source";
  const exp = document.createElement("button");
  exp.className = "fuselab-export";
  exp.textContent = "Export .py";
  exp.title = "download the whole plan as a standalone Python file (CuPy RawModule)";
  const status = document.createElement("span");
  status.className = "fuselab-code-status";
  bar.append(title, copy, exp, status);
  const body = document.createElement("div");
  body.className = "fuselab-code-body";
  el.append(bar, body);

  function flash(text) {
    status.textContent = text;
    setTimeout(() => { status.textContent = ""; }, 2000);
  }
  function fallbackCopy(text) {
    const ta = document.createElement("textarea");
    ta.value = text;
    ta.style.position = "fixed";
    ta.style.opacity = "0";
    document.body.appendChild(ta);
    ta.select();
    const ok = document.execCommand("copy");
    ta.remove();
    return ok;
  }
  copy.addEventListener("click", async () => {
    const text = model.get("source");
    try {
      await navigator.clipboard.writeText(text);
      flash("copied ✓");
    } catch (e) {
      flash(fallbackCopy(text) ? "copied ✓" : "copy failed: select the code and press Ctrl+C");
    }
  });
  exp.addEventListener("click", () => {
    const text = model.get("export_source");
    if (!text) { flash(model.get("export_note") || "nothing to export"); return; }
    const url = URL.createObjectURL(new Blob([text], { type: "text/x-python" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = model.get("export_name");
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    flash("saved " + model.get("export_name"));
  });
  function draw() {
    title.textContent = model.get("title");
    body.innerHTML = model.get("html");
    copy.disabled = !model.get("source");
    exp.disabled = !model.get("export_source");
    if (model.get("export_note")) exp.title = model.get("export_note");
  }
  ["title", "html", "source", "export_source", "export_note"].forEach((k) => model.on("change:" + k, draw));
  draw();
}
export default { render };
"""

# Styles for the whole explorer (anywidget puts them in the page once). Colours come
# from the host's theme variables (JupyterLab, Notebook 7, VS Code), with fallbacks.
CSS = r"""
.fuselab-explorer {
  --fl-fg: var(--jp-content-font-color1, var(--vscode-editor-foreground, #222));
  --fl-muted: var(--jp-content-font-color2, var(--vscode-descriptionForeground, #666));
  --fl-border: var(--jp-border-color2, var(--vscode-panel-border, #ccc));
  --fl-bg2: var(--jp-layout-color2, var(--vscode-editorWidget-background, #f3f3f3));
  color: var(--fl-fg);
  font-size: 13px;
  gap: 6px;
}
.fuselab-explorer .fuselab-header { line-height: 1.4; }
.fuselab-explorer .fuselab-message { min-height: 1.3em; }
.fuselab-explorer .fuselab-refused { color: #e8590c; font-weight: 600; }
.fuselab-explorer .fuselab-main { gap: 8px; align-items: flex-start; }
.fuselab-graph { flex: 1 1 55%; min-width: 280px; max-height: 640px; overflow: auto;
  border: 1px solid var(--fl-border); border-radius: 4px; padding: 4px; }
.fuselab-side { flex: 1 1 45%; min-width: 300px; }
.fuselab-graph-box svg { height: auto; display: block; margin: auto; }
.fuselab-graph-box g.edge, .fuselab-graph-box g.node, .fuselab-graph-box g.cluster { cursor: pointer; }
.fuselab-graph-box g.edge path.fl-hit { pointer-events: stroke; }
.fuselab-graph-box g.edge:hover path:not(.fl-hit) { stroke-width: 3.5px; }
.fuselab-graph-box g.node:hover polygon, .fuselab-graph-box g.node:hover path { stroke-width: 2.5px; }
.fuselab-graph-box g.cluster.fl-selected > path, .fuselab-graph-box g.cluster.fl-selected > polygon { stroke-width: 4px; }
.fuselab-graph-box tr.fl-kernel { cursor: pointer; }
.fuselab-notice { border-left: 4px solid #e8590c; padding: 4px 8px; margin: 4px 0; background: var(--fl-bg2); }
.fuselab-legend { color: var(--fl-muted); font-size: 12px; }
.fuselab-break { display: block; color: #c92a2a; border-left: 4px dashed #c92a2a; padding: 2px 8px; margin: 2px 0; }
.fuselab-legend span { margin-right: 12px; }
.fuselab-kernels .fuselab-kernel-row { gap: 4px; align-items: center; }
.fuselab-kernels .fuselab-kernel-row .widget-button { height: 24px; }
.fuselab-kernels .fuselab-kernel-name { text-align: left; }
.fuselab-code-view .fuselab-code-bar { display: flex; gap: 6px; align-items: center; margin: 4px 0; }
.fuselab-code-view .fuselab-code-title { font-weight: 600; flex: 1; overflow-wrap: anywhere; }
.fuselab-code-view .fuselab-code-status { color: var(--fl-muted); }
.fuselab-code-view .fuselab-code-body { max-height: 420px; overflow: auto; border: 1px solid var(--fl-border); border-radius: 4px; }
.fuselab-code-view .fuselab-code-body pre { margin: 0; padding: 6px; font-size: 12px; line-height: 1.35; }
.fuselab-code-view details { margin: 4px 6px; }
.fuselab-table { border-collapse: collapse; font-size: 12px; }
.fuselab-table th, .fuselab-table td { padding: 2px 8px; border-bottom: 1px solid var(--fl-border); text-align: right; }
.fuselab-table th:first-child, .fuselab-table td:first-child { text-align: left; }
.fuselab-table tr.fl-total td { font-weight: 600; }
.fuselab-predicted { color: var(--fl-muted); font-style: italic; }
.fuselab-ok { color: #2ca02c; font-weight: 700; }
.fuselab-bad { color: #d62728; font-weight: 700; }
"""
