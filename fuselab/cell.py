"""Running one cell end to end — trace, plan, execute, bind — without IPython, so the same
path runs in the magic, in tests and on a GPU machine that has no IPython."""
from __future__ import annotations

from typing import Any, MutableMapping


def run_cell(ns: MutableMapping[str, Any], cell: str, *, keep=(), backend="auto", strategy="auto", static=False,
             quiet=False, output=None, repeats=20, time=True, fp16="numpy"):
    """Trace `cell` against the namespace `ns`, run it, and bind its results into `ns`
    only after everything succeeded. Returns the Session."""
    from .trace import trace_cell

    traced = trace_cell(cell, ns, keep)
    session = run_traced(traced, strategy=strategy, backend=backend, repeats=repeats, time=time,
                         fp16=fp16, quiet=True)
    # Everything succeeded: bind the results in one step.
    updates = traced.bindings_for(ns)
    updates.update(session.outputs)
    for name in traced.fused_away:
        ns.pop(name, None)
    ns.update(updates)
    if output:
        ns[output] = session
    if not quiet:
        session.display(static=static)
    return session


def run_traced(traced, *, strategy="auto", backend="auto", repeats=20, time=True, fp16="numpy",
               static=False, quiet=False):
    """Plan, run (checked against the unfused run on the GPU) and optionally time and show
    a traced cell or function. Binds nothing."""
    from .session import Session

    session = Session(traced, strategy=strategy, backend=backend, repeats=repeats,
                      codegen_options=_codegen_options(fp16))
    session.execute()
    if time and session.backend == "cuda":
        session.measure()
    if not quiet:
        session.display(static=static)
    return session


def _codegen_options(fp16: str):
    from .codegen import CodegenOptions  # pure Python: no CuPy, no GPU needed
    return CodegenOptions(fp16_math=fp16)
