"""Running one cell end to end — trace, plan, execute, bind — without IPython, so the same
path runs in the magic, in tests and on a GPU machine that has no IPython."""
from __future__ import annotations

from typing import Any, MutableMapping


def run_cell(ns: MutableMapping[str, Any], cell: str, *, keep=(), backend="auto", strategy="auto", static=False,
             quiet=False, output=None, repeats=20, time=True, fp16="numpy"):
    """Trace `cell` against the namespace `ns`, run it, and bind its results into `ns`
    only after everything succeeded. Returns the Session."""
    from .session import Session
    from .trace import trace_cell

    traced = trace_cell(cell, ns, keep)
    session = Session(traced, strategy=strategy, backend=backend, repeats=repeats,
                      codegen_options=_codegen_options(fp16))
    outputs = session.execute()
    if time and session.backend == "cuda":
        session.measure()
    # Everything succeeded: bind the results in one step.
    updates = traced.bindings_for(ns)
    updates.update(outputs)
    for name in traced.fused_away:
        ns.pop(name, None)
    ns.update(updates)
    if output:
        ns[output] = session
    if not quiet:
        session.display(static=static)
    return session


def _codegen_options(fp16: str):
    try:
        from .codegen import CodegenOptions
    except ImportError:
        return None
    try:
        return CodegenOptions(fp16_math=fp16)
    except TypeError:
        return CodegenOptions()
