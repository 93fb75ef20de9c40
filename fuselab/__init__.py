"""fuselab: see, choose and run CUDA kernel fusion of NumPy/CuPy code from a notebook.

`%load_ext fuselab` registers the `%%fuse` cell magic. Importing fuselab imports neither
IPython widgets nor CuPy; they load when a cell needs them.
"""
from __future__ import annotations

__version__ = "0.1.0"

from .ir import Graph, GraphBuilder, Node, verify  # noqa: E402
from .ops import Kind  # noqa: E402


def load_ipython_extension(ipython) -> None:
    from .magic import FuseMagics
    ipython.register_magics(FuseMagics)


def unload_ipython_extension(ipython) -> None:  # pragma: no cover - IPython keeps magics
    pass


def trace_cell(source: str, namespace: dict, keep=()):
    """Trace a cell's source against a namespace; returns a TraceResult (graph, inputs...).

    (Named trace_cell because `fuselab.trace` is the tracing module.)"""
    from .trace import trace_cell as _trace_cell
    return _trace_cell(source, namespace, keep)


def explore(fn, *arrays, **options):
    """Open the explorer for `fn(*arrays)` outside the magic (same view as %%fuse)."""
    from .session import Session
    from .trace import trace_function
    session = Session.from_trace(trace_function(fn, *arrays), **options)
    return session.display()


__all__ = ["Graph", "GraphBuilder", "Node", "Kind", "verify", "trace_cell", "explore", "__version__"]
