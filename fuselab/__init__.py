"""fuselab: see, choose and run CUDA kernel fusion of NumPy/CuPy code from a notebook.

`%load_ext fuselab` registers the `%%fuse` cell magic. Importing fuselab imports neither
IPython widgets nor CuPy; they load when a cell needs them.
"""
from __future__ import annotations

from ._version import __version__

from .ir import Graph, GraphBuilder, Node, verify  # noqa: E402
from .ops import Kind  # noqa: E402


def load_ipython_extension(ipython) -> None:
    from .magic import FuseMagics
    ipython.register_magics(FuseMagics)
    import importlib.util
    if importlib.util.find_spec("cupy") is None:   # no GPU stack: cells will run on Numba if it is here
        from .numba_backend import warm_up
        warm_up()


def unload_ipython_extension(ipython) -> None:  # pragma: no cover - IPython keeps magics
    pass


def trace_cell(source: str, namespace: dict, keep=(), *, fullgraph: bool = False):
    """Trace a cell's source against a namespace; returns a TraceResult (graph, inputs...).
    The namespace is not changed. (Named trace_cell because `fuselab.trace` is the
    tracing package.)"""
    from .cell import trace_source
    return trace_source(source, namespace, keep, fullgraph=fullgraph)


def explore(fn, *arrays, plan: str = "auto", backend: str = "auto", repeats: int = 20,
            time: bool = True, static: bool = False, quiet: bool = False):
    """Open the explorer for `fn(*arrays)` outside the magic: the same trace, plan, run,
    check, timing and view as a %%fuse cell. Returns the Session."""
    from .cell import run_traced
    from .errors import Interrupted
    from .trace import trace_function
    _check_call(fn, arrays)
    try:
        traced = trace_function(fn, *arrays)
    except KeyboardInterrupt:   # (as a cell's: what was interrupted, not a traceback through the tracer)
        raise Interrupted(f"tracing {getattr(fn, '__name__', 'the function')}") from None
    try:
        return run_traced(traced, strategy=plan, backend=backend, repeats=repeats, time=time, static=static,
                          quiet=quiet)
    finally:
        if traced.warnings is not None:
            traced.warnings.flush()


def _check_call(fn, arrays: tuple) -> None:
    """A call explore() would make that does not fit the function's signature is the
    caller's mistake, said as such (the trace said "fix the error in <lambda>")."""
    import inspect

    from .errors import TraceError
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):   # (not callable: the trace says so; a builtin: no signature to check)
        return
    try:
        sig.bind(*arrays)
    except TypeError as e:
        name = getattr(fn, "__name__", "fn")
        raise TraceError(f"fuselab.explore({name}, {len(arrays)} array(s)): {e}", None,
                         f"pass the arrays {name}{sig} takes after it: fuselab.explore({name}, x, ...)") from None


__all__ = ["Graph", "GraphBuilder", "Node", "Kind", "verify", "trace_cell", "explore", "__version__"]
