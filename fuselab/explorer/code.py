"""The generated CUDA of a plan as people read it: highlighted, with what the compiler
reports (registers, spills, shared memory, PTX)."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .format import esc

LIGHT_STYLE, DARK_STYLE = "default", "github-dark"
HL_CLASS = "fl-hl"


def highlight(source: str, language: str = "cuda") -> str:
    """HTML of CUDA C++ (or, with language="python", Python) source; colours come from
    highlight_css()."""
    from pygments import highlight as pyg_highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import CudaLexer, PythonLexer

    fmt = HtmlFormatter(style=LIGHT_STYLE, cssclass=HL_CLASS)
    return pyg_highlight(source, PythonLexer() if language == "python" else CudaLexer(), fmt)


@lru_cache(maxsize=2)
def highlight_css(dark: bool = True) -> str:
    """Pygments colours for the code panel: a light style, and (with `dark`) a dark one
    under the dark themes of JupyterLab / Notebook 7 and VS Code."""
    from pygments.formatters import HtmlFormatter

    def rules(style: str, scopes: list[str]) -> list[str]:
        css = HtmlFormatter(style=style).get_style_defs([f"{s}.fuselab-code-view .{HL_CLASS}" for s in scopes])
        # keep the scoped rules (not pygments' global `pre` / line-number ones), drop comments
        return [line.split(" /*")[0] for line in css.splitlines() if ".fuselab-code-view" in line]

    # the light style leaves plain text to the page's colour: fix it, or a dark page's
    # light text would sit on the light code background
    out = rules(LIGHT_STYLE, [""]) + [f".fuselab-code-view .{HL_CLASS} {{ color: #1f1f1f; }}"]
    if dark:
        out += rules(DARK_STYLE, ['body[data-jp-theme-light="false"] ', "body.vscode-dark ",
                                  "body.vscode-high-contrast "])
    return "\n".join(out)


def split_prelude(source: str) -> tuple[str, str, str]:
    """(before, prelude, after): the generic device helpers the code generator put in the
    source, so the panel can fold them; ("", "", source) when they are not found."""
    try:
        from ..codegen.prelude import prelude_for
    except ImportError:
        return "", "", source
    pre = prelude_for(source).strip()
    at = source.find(pre) if pre else -1
    if at < 0:
        return "", "", source
    return source[:at], pre, source[at + len(pre):]


def folded_source_html(source: str) -> str:
    """The kernel's own code, with the generic helpers folded in between."""
    before, pre, after = split_prelude(source)
    if not pre:
        return highlight(source)
    names = sorted(set(re.findall(r"\b(fl_\w+)\s*[({<]", pre)))[:6]
    # the helpers are generic and long: shown plain, which keeps saved notebooks small
    return (highlight(before.rstrip("\n") or "// (no header)")
            + f"<details class='fuselab-prelude'><summary>{len(pre.splitlines())} lines of device helpers "
            f"({esc(', '.join(names))}…)</summary><pre class='{HL_CLASS}'>{esc(pre)}</pre></details>"
            + highlight(after.strip("\n")))


def kernels_with_code(session: Any) -> tuple[tuple, str]:
    """The session's kernels, and why they carry no code when code generation failed
    (the kernels are shown either way)."""
    try:
        session.codes()
    except Exception as e:  # noqa: BLE001 - the reason is shown in the code panel
        return session.kernels, f"code generation failed: {type(e).__name__}: {e}"
    return session.kernels, ""


def kernel_code_html(kinfo: Any, missing: str = "") -> str:
    """The selected kernel's source, highlighted, with the Numba backend's Python for the
    same kernel next to the CUDA (the one the session runs first, the other folded)."""
    cuda = cuda_code_html(kinfo, missing)
    python = getattr(kinfo, "python_source", None)
    if not python:
        return cuda
    py = ("<div class='fuselab-legend'>Python compiled with Numba for the CPU "
          "(<code>@njit(parallel=True)</code>, NumPy's semantics):</div>" + highlight(python, "python"))
    if getattr(kinfo, "python_first", False):
        return py + f"<details class='fuselab-other-code'><summary>The same kernel in CUDA C++</summary>{cuda}</details>"
    return cuda + f"<details class='fuselab-other-code'><summary>The same kernel in Python for the CPU (Numba)</summary>{py}</details>"


def cuda_code_html(kinfo: Any, missing: str = "") -> str:
    """The kernel's CUDA source, highlighted; or a plain statement of why there is none."""
    if kinfo.source:
        return folded_source_html(kinfo.source)
    reason = getattr(getattr(kinfo, "code", None), "reason", "")
    if reason:
        return ("<div class='fuselab-notice'>No CUDA kernel: this kernel's operations run through CuPy one "
                f"by one, as without fuselab ({esc(reason)}).</div>")
    if kinfo.template.value == "opaque":
        return ("<div class='fuselab-notice'>An opaque operation: it runs through the array library "
                "(NumPy/CuPy, e.g. cuBLAS) as its own launch, so fuselab generates no code for it.</div>")
    why = missing or "the code generator produced no source for this kernel"
    return f"<div class='fuselab-notice'>No CUDA source: {esc(why)}</div>"


def compile_info_html(info: Any) -> str:
    """Registers, spills, shared memory and the PTX, from an NVRTC CompileInfo."""
    spills = info.spill_stores + info.spill_loads
    spill_cls = "fuselab-bad" if spills else "fuselab-ok"
    if info.report == "ptxas":
        spill = f"<span class='{spill_cls}'>{info.spill_stores} + {info.spill_loads} B</span>"
        constant = f"{info.constant_bytes} B"
    else:  # this NVRTC gave no ptxas report: the figures come from the cubin
        frame_cls = "fuselab-bad" if info.stack_frame else "fuselab-ok"
        spill = (f"<span class='{frame_cls}'>not reported by this NVRTC; "
                 + ("none possible (no stack frame)" if not info.stack_frame else "see the stack frame") + "</span>")
        constant = "not reported by this NVRTC"
    rows = [("architecture", info.arch), ("registers / thread", info.registers),
            ("spills (stores + loads)", spill),
            ("stack frame", f"{info.stack_frame} B"), ("static shared memory", f"{info.shared_bytes} B"),
            ("constant memory", constant), ("NVRTC compile time", f"{info.compile_s * 1e3:.0f} ms")]
    table = "".join(f"<tr><td>{esc(k)}</td><td>{v if isinstance(v, str) and v.startswith('<') else esc(v)}</td></tr>"
                    for k, v in rows)
    return (f"<table class='fuselab-table fuselab-compile'>{table}</table>"
            f"<details><summary>PTX ({len(info.ptx.splitlines())} lines)</summary>"
            f"<pre class='fuselab-ptx'>{esc(info.ptx)}</pre></details>")


def compile_kernel(kinfo: Any) -> Any:
    """NVRTC's report for a kernel (codegen keeps it); needs no GPU. Raises with the
    reason when NVRTC is missing or rejects the kernel."""
    from ..codegen import compile_info

    code = kinfo.code
    if code is None or not getattr(code, "source", None):
        raise ValueError(f"{kinfo.name} has no generated source to compile")
    return compile_info(code)
