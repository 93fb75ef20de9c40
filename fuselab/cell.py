"""Running one cell end to end — trace, plan, execute, bind — without IPython, so the same
path runs in the magic, in tests and on a GPU machine that has no IPython."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, MutableMapping

from .errors import FuselabError, RunError
from .session import Session
from .trace import Origin, TraceResult, trace_cell


@dataclass(frozen=True)
class CellRun:
    """A cell that ran: its session, and its last expression's value when IPython would
    display one (Out[n])."""

    session: Session
    value: Any = None
    displays: bool = False


def execute_cell(ns: MutableMapping[str, Any], cell: str, *, keep=(), backend="auto", strategy="auto",
                 static=False, quiet=False, output=None, repeats=20, time=True, fp16="numpy",
                 fullgraph=False, origin: Origin = Origin()) -> CellRun:
    """Trace `cell` against the namespace `ns`, run it, and bind its results into `ns`
    only after everything succeeded, as plain execution would have left it."""
    traced = trace_cell(cell, ns, keep, fullgraph=fullgraph, origin=origin)
    binder = traced.binder
    assert binder is not None
    try:
        session = run_traced(traced, strategy=strategy, backend=backend, repeats=repeats, time=time,
                             fp16=fp16, quiet=True)
        value = binder.commit(ns, session.outputs or {})
        traced.release()   # (the trace's objects would look like other holders of the arrays to the next cell)
    except FuselabError:
        binder.abandon()
        raise
    except Exception as e:  # running the plan failed (out of memory, a library call's error)
        binder.abandon()
        raise run_error(traced, e) from None
    except BaseException:
        binder.abandon()
        raise
    finally:
        if traced.warnings is not None:
            traced.warnings.flush()
    if output:
        ns[output] = session
    if not quiet:
        session.display(static=static)
    return CellRun(session, value, binder.displays)


def run_error(traced: TraceResult, e: Exception) -> RunError:
    """An error while the plan ran, at the line of the operation that raised it."""
    node = getattr(e, "fuselab_node", None)
    loc = traced.graph.nodes[node].loc if node is not None and node < len(traced.graph.nodes) else None
    return RunError(f"{type(e).__name__}: {e}", loc,
                    "no variable changed; with smaller arrays, or this operation in a cell of its own, "
                    "it may run" if isinstance(e, MemoryError) else "no variable changed")


def run_cell(ns: MutableMapping[str, Any], cell: str, **options: Any) -> Session:
    """`execute_cell`, returning the Session."""
    return execute_cell(ns, cell, **options).session


def run_traced(traced: TraceResult, *, strategy="auto", backend="auto", repeats=20, time=True, fp16="numpy",
               static=False, quiet=False) -> Session:
    """Plan, run (checked against the unfused run on the GPU) and optionally time and show
    a traced cell or function. Binds nothing."""
    session = Session(traced, strategy=strategy, backend=backend, repeats=repeats,
                      codegen_options=_codegen_options(fp16))
    session.execute()
    if time and session.backend in ("cuda", "numba", "dask") and traced.graph.outputs:
        session.measure()
    if not quiet:
        session.display(static=static)
    return session


def _codegen_options(fp16: str):
    from .codegen import CodegenOptions  # pure Python: no CuPy, no GPU needed
    return CodegenOptions(fp16_math=fp16)
