"""Running one cell end to end — trace, plan, execute, bind — without IPython, so the same
path runs in the magic, in tests and on a GPU machine that has no IPython."""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any, MutableMapping

from .errors import FuselabError, FuselabWarning, Interrupted, RunError, syntax_error
from .session import Session, check_options
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
                 fullgraph=False, origin: Origin = Origin(), plan: str | None = None) -> CellRun:
    """Trace `cell` against the namespace `ns`, run it, and bind its results into `ns`
    only after everything succeeded, as plain execution would have left it. `plan` is
    `strategy` under the name the magic's flag and `fuselab.explore` give it."""
    strategy = plan if plan is not None else strategy
    check_options(repeats=repeats, fp16=fp16)   # (before anything runs: nothing to undo)
    traced = trace_source(cell, ns, keep, fullgraph=fullgraph, origin=origin)
    binder = traced.binder
    assert binder is not None
    try:
        session = run_traced(traced, strategy=strategy, backend=backend, repeats=repeats, time=time,
                             fp16=fp16, quiet=True, origin=origin)
        value = binder.commit(ns, session.outputs or {})
        traced.release()   # (the trace's objects would look like other holders of the arrays to the next cell)
    except FuselabError:
        binder.abandon()
        raise
    except Interrupted:
        binder.abandon()
        raise
    except KeyboardInterrupt:   # (while binding: the run itself says its stage, run_traced)
        binder.abandon()
        raise Interrupted("binding the results") from None
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


def trace_source(cell: str, ns: MutableMapping[str, Any], keep=(), *, fullgraph: bool = False,
                 origin: Origin = Origin()) -> TraceResult:
    """trace_cell, with the two ways out that it leaves raw turned into a user's error:
    a SyntaxError of Python's compiler (`return` outside a function: the parser accepts
    it), and a KeyboardInterrupt while the cell's code runs under the trace."""
    if isinstance(keep, str):   # keep="t, u" as --keep takes it (a string is no sequence of names: "t", "m"...)
        keep = tuple(keep.replace(",", " ").split())
    try:
        return trace_cell(cell, ns, keep, fullgraph=fullgraph, origin=origin)
    except SyntaxError as e:   # (the cell's own SyntaxErrors come back as TraceErrors)
        raise syntax_error(e, cell, origin.line_offset) from None
    except KeyboardInterrupt as e:
        raise Interrupted("tracing the cell", _cell_line(e, origin, cell)) from None


def _cell_line(e: BaseException, origin: Origin, cell: str):
    from .trace.run import error_loc
    return error_loc(e, origin, cell.splitlines())


def run_error(traced: TraceResult, e: Exception) -> RunError:
    """An error while the plan ran, at the line of the operation that raised it."""
    node = getattr(e, "fuselab_node", None)
    loc = traced.graph.nodes[node].loc if node is not None and node < len(traced.graph.nodes) else None
    from .runtime.errors import CompileError, FuselabRuntimeError   # (plain classes: no CuPy)
    if isinstance(e, FuselabRuntimeError):   # its own words say what happened and what to do
        return RunError(f"{type(e).__name__}: {e.what}", loc, f"no variable changed; {e.fix}")
    if isinstance(e, CompileError):
        return RunError(f"CompileError: NVRTC could not compile kernel {e.name} that fuselab generated:\n"
                        f"{e.log.strip()[:2000]}", loc,
                        "no variable changed; this is a fuselab bug: please report the cell. Meanwhile "
                        "--plan unfused, or another backend (--backend numba / cpu), may run it")
    if type(e).__module__.split(".")[0] in ("numba", "llvmlite"):   # compiling a generated kernel failed
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip()[:2000]   # (Numba's terminal highlighting)
        return RunError(f"{type(e).__name__} (Numba, compiling a kernel fuselab generated): {text}",
                        loc, "no variable changed; this is a fuselab bug: please report the cell. Meanwhile "
                             "--backend cpu (NumPy, kernel by kernel), or --plan unfused, may run it")
    if type(e).__module__.split(".")[0] in ("cupy", "cupy_backends") and not isinstance(e, MemoryError):
        return RunError(f"{type(e).__name__} (CUDA, while the plan ran on the GPU): {str(e).strip()[:2000]}", loc,
                        "no variable changed; if it happens again, restart the kernel (a failed launch can leave "
                        "the GPU unusable for this process), or run on the CPU with --backend numba")
    what = f"{type(e).__name__}: {e}" if str(e) else \
        f"{type(e).__name__}: out of memory" if isinstance(e, MemoryError) else type(e).__name__
    return RunError(what, loc,
                    "no variable changed; with smaller arrays, or this operation in a cell of its own, "
                    "it may run" if isinstance(e, MemoryError) else "no variable changed")


def run_cell(ns: MutableMapping[str, Any], cell: str, **options: Any) -> Session:
    """`execute_cell`, returning the Session."""
    return execute_cell(ns, cell, **options).session


def run_traced(traced: TraceResult, *, strategy="auto", backend="auto", repeats=20, time=True, fp16="numpy",
               static=False, quiet=False, origin: Origin | None = None) -> Session:
    """Plan, run (checked against the unfused run on the GPU) and optionally time and show
    a traced cell or function. Binds nothing. Timing is not part of the cell's meaning:
    where it fails, the session says so (`timing_error`) and the results stand."""
    check_options(repeats=repeats, fp16=fp16)
    stage = "planning the cell"
    try:
        session = Session(traced, strategy=strategy, backend=backend, repeats=repeats,
                          codegen_options=_codegen_options(fp16))
        stage = f"running the {session.plan.strategy} plan on the {session.backend} backend"
        session.execute()
        if session.check is not None and not session.check.ok:
            # (shown with -q too: the display was its only sign)
            _warn(f"fuselab: the {session.plan.strategy} plan's results differ from the reference run: "
                  f"{session.check.worst}. The values bound are the plan's; --plan unfused or --backend cpu "
                  "(plan='unfused' / backend='cpu' in fuselab.explore) gives NumPy's. Please report the cell.",
                  origin)
        if time and session.backend in ("cuda", "numba", "dask") and traced.graph.outputs:
            stage = "timing the plan (its results were computed, and are not bound)"
            try:
                session.measure()
            except Exception as e:   # noqa: BLE001 - the run stands; the summary says why
                session.timing_error = f"{type(e).__name__}: {e}"
                # (-q shows no summary: a broken device, say, must not go unsaid)
                _warn(f"fuselab: timing failed, the results are bound: {session.timing_error}. --no-time "
                      "runs the cell without timing.", origin)
    except KeyboardInterrupt:
        if stage.startswith("timing"):
            raise Interrupted(stage, hint="run the cell again; --no-time runs it without timing") from None
        raise Interrupted(stage) from None
    if not quiet:
        session.display(static=static)
    return session


def _warn(text: str, origin: Origin | None) -> None:
    """A FuselabWarning at the cell's %%fuse line, or at the caller of fuselab.explore."""
    if origin is None:
        warnings.warn(text, FuselabWarning, stacklevel=4)   # (_warn <- run_traced <- explore <- the user's call)
    else:
        warnings.warn_explicit(text, FuselabWarning, origin.filename, max(origin.line_offset, 1))


def _codegen_options(fp16: str):
    from .codegen import CodegenOptions  # pure Python: no CuPy, no GPU needed
    return CodegenOptions(fp16_math=fp16)
