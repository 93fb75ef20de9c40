"""Running a cell's Python under a trace: `trace_cell` (a notebook cell's source against
its namespace) and `trace_function` (a Python function applied to arrays, for
`fuselab.explore`). The namespace is never modified here; `TraceResult.binder` applies
the cell's bindings once the graph has run."""
from __future__ import annotations

import ast
import inspect
import linecache
import traceback
from dataclasses import dataclass, field
from functools import partial
from types import CodeType, FunctionType
from typing import Any, Callable, Mapping, Sequence

from ..errors import TraceError
from ..ir import Graph, SourceLoc
from ..ops import OPS, Kind, ShapeError
from . import methods  # noqa: F401  (attaches the NumPy surface to the tracer)
from .aliases import Aliases
from .bind import Binder, find_holders, plan_bindings, scrub
from .cellinfo import CellInfo, analyse
from .core import Refused, TraceContext, Tracer, stop_tracing, traceable, tracing
from . import held
from .modules import tracing_namespace, untraced, with_globals
from .realrun import restore_originals
from .warn import CellWarnings, Origin

_HINT = "fix the error; no variable changed"


@dataclass
class TraceResult:
    graph: Graph
    inputs: dict[str, Any]                 # input name -> the value the graph reads
    bindings: dict[str, Any]               # plain Python values the cell binds (not arrays)
    results: tuple[str, ...]               # names bound to arrays the graph computes (its outputs)
    fused_away: tuple[str, ...]            # new names of intermediates that are not bound
    array_module: str                      # "numpy", "cupy" or "dask": what outputs should be
    binder: Binder | None = field(default=None, repr=False)
    warnings: CellWarnings | None = field(default=None, repr=False)
    # graph node -> the trace's node, for warnings the run reports by graph node
    trace_nodes: tuple[int, ...] = field(default=(), repr=False)
    # the dict the cell's own functions see as globals (plain execution: the namespace)
    tracing_globals: dict[str, Any] | None = field(default=None, repr=False)
    # every name bound to an array: the results, and aliases, views and copies of the
    # user's arrays (bound without running anything)
    bound: tuple[str, ...] = ()
    # what release() keeps of the binder
    kept_break_values: dict[int, Any] = field(default_factory=dict, repr=False)
    kept_displays: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        held.own(self)

    @property
    def breaks(self):
        return self.graph.breaks

    @property
    def displays(self) -> bool:
        """The cell's last line is an expression IPython would show (Out[n])."""
        return bool(self.binder.displays) if self.binder is not None else self.kept_displays

    def held_arrays(self) -> list[Any]:
        """The notebook's arrays this result references once its cell is bound (held.own)."""
        return [*self.inputs.values(), *self.kept_break_values.values()]

    def release(self) -> None:
        """The cell is bound: keep what a later run of its session needs (the values taken
        at graph breaks) and drop the trace's own objects (tracers, the tracing namespace,
        the aliases' memories). They hold the notebook's arrays, and a later cell's trace
        would take them for other references the user has (held.py: a graph break at
        each in-place update of such an array)."""
        if self.binder is None:
            return
        self.kept_break_values = self.break_values()
        self.kept_displays = self.binder.displays
        ctx, self.binder, self.tracing_globals = self.binder.ctx, None, None
        ctx.release()

    def bindings_for(self, namespace: dict[str, Any]) -> dict[str, Any]:
        """Plain bindings, with functions the cell defined re-bound to `namespace`."""
        out = {}
        for k, v in self.bindings.items():
            if isinstance(v, FunctionType) and v.__globals__ is self.tracing_globals:
                v = with_globals(v, namespace)
            out[k] = v
        return out

    def break_values(self) -> dict[int, Any]:
        """The values computed at graph breaks (until the cell is bound), by graph node:
        a run that reads these instead of recomputing them computes what follows from
        exactly the values Python branched on."""
        if self.binder is None:
            return self.kept_break_values
        ctx = self.binder.ctx
        values = ctx.evaluator.values
        return {i: values[t] for i, t in enumerate(self.trace_nodes)
                if t in values and t not in ctx.for_warnings and self.graph.nodes[i].op != "input"}

    def fp_error(self, node: int, kind: str) -> None:
        """The run reports a floating-point error of graph node `node`."""
        if self.binder is not None and node < len(self.trace_nodes):
            self.binder.ctx._fp_error(self.trace_nodes[node], kind)


def _compile(info: CellInfo, origin: Origin) -> CodeType:
    tree = info.tree
    if origin.line_offset:
        ast.increment_lineno(tree, origin.line_offset)
    return compile(tree, origin.filename, "exec")


def _syntax_error(e: SyntaxError) -> TraceError:
    text = (e.text or "").rstrip("\n")
    # (its own name: IndentationError and TabError are SyntaxErrors Python names so)
    return TraceError(f"{type(e).__name__}: {e.msg}", SourceLoc(e.lineno or 0, text),
                      "fix the syntax; nothing was run and no variable changed")


def error_loc(e: BaseException, origin: Origin, lines: Sequence[str]) -> SourceLoc | None:
    """The user's line where an exception was raised (the innermost frame of the cell)."""
    loc = None
    for frame, lineno in traceback.walk_tb(e.__traceback__):
        if frame.f_code.co_filename == origin.filename:
            n = lineno - origin.line_offset
            loc = SourceLoc(n, lines[n - 1] if 0 < n <= len(lines) else "")
    return loc


def user_error(e: BaseException, origin: Origin, lines: Sequence[str]) -> TraceError:
    """An exception the cell's code raised, as plain Python would raise it, shown as a
    fuselab error at the user's line."""
    if isinstance(e, Refused):
        return e.error
    what = str(e) if isinstance(e, ShapeError) else f"{type(e).__name__}: {e}"
    err = TraceError(what, error_loc(e, origin, lines), _HINT)
    err.__cause__ = None
    return err


def _kept_nodes(graph_nodes: Sequence[Any], outputs: Sequence[tuple[str, int]]) -> tuple[int, ...]:
    """The trace's node ids that the pruned graph keeps, in order (ir.prune's rule)."""
    live = {i for _, i in outputs}
    for i in range(len(graph_nodes) - 1, -1, -1):
        if i in live:
            live.update(graph_nodes[i].inputs)
    return tuple(sorted(live))


# nodes that never warn: computing them for their warnings would be wasted. The views
# among them matter most: a dropped view of an array updated in place (the target of
# `a[1:-1] = ...` in a loop) computed every update before it, the whole cell, in NumPy
_SILENT_OPS = frozenset(n for n, d in OPS.items() if d.kind in (Kind.SOURCE, Kind.INJECTIVE))


def _compute_dead(ctx: TraceContext, kept: Sequence[int]) -> None:
    """Compute, for their NumPy warnings only, the nodes the graph drops: a value the
    cell overwrote, deleted or never bound (`y = (x / 0).shape`, a loop's earlier `t =
    np.log(row)`, a fused-away name read only for its type). Plain execution computed
    them, and warned ("divide by zero encountered in divide"); their warnings take their
    place in program order (warn.CellWarnings sorts by it). CuPy gives no floating-point
    warnings and Dask values are lazy: nothing to do there."""
    if ctx.uses_cupy or ctx.uses_dask:
        return
    live, ev, nodes = set(kept), ctx.evaluator, ctx.builder.nodes
    # a node whose computation raised at its line (np.errstate(all='raise')) never got a
    # value in plain execution either, nor did what was computed from it
    failed = {i for i in ctx.fp_errors if not ev.has(i)}
    for i, n in enumerate(nodes):
        if i in failed or any(j in failed for j in n.inputs):
            failed.add(i)
        elif i not in live and n.op not in _SILENT_OPS and not ev.has(i) and n.inputs:
            try:
                ev.value(i)
            except Exception:   # (an error the cell caught at its line: LinAlgError of inv)
                failed.add(i)
                continue
            ctx.for_warnings.add(i)


def trace_cell(source: str, namespace: Mapping[str, Any], keep: Sequence[str] = (), *,
               fullgraph: bool = False, origin: Origin = Origin()) -> TraceResult:
    """Trace `source` against `namespace` (never modified) and return the graph plus the
    bindings the cell would make."""
    try:
        info = analyse(source)
    except SyntaxError as e:
        raise _syntax_error(e) from None
    code = _compile(info, origin)
    # (before fuselab makes any object that refers to the namespace's arrays)
    held_ids = held.held_elsewhere(namespace)
    ctx = TraceContext(source, namespace, origin=origin, fullgraph=fullgraph, truth_uses=info.truth_uses,
                       try_lines=info.try_lines, aliases=Aliases)
    if held_ids:
        ctx.held = held.Held(ctx, held_ids)
    ctx.foreign_operand = partial(held.foreign_operand, ctx)
    ns = tracing_namespace(ctx, namespace)
    # NumPy's own warnings during the trace go through the notebook's registry, as plain
    ns["__warningregistry__"] = namespace.get("__warningregistry__", {})
    initial = dict(ns)
    token = tracing(ctx)
    error: BaseException | None = None
    try:
        with ctx.warnings.deferring_plain(ctx.here):
            exec(code, ns)
        if ctx.held is not None:
            ctx.held.settle()   # (changed behind the trace's back after its last read)
    except (Refused, Exception) as e:
        error = user_error(e, origin, ctx.lines)
        traceback.clear_frames(e.__traceback__)
        del e
    except BaseException as e:   # KeyboardInterrupt, SystemExit: undone as an error is, then raised as they are
        error = e
    finally:
        stop_tracing(token)
    if error is not None:
        holders, _ = find_holders(ctx, ns, initial)
        scrub(ctx, holders)
        restore_originals(ctx)   # (arrays a real run changed: back as they were)
        ctx.warnings.flush()
        raise error
    return _result(ctx, info, namespace, initial, ns, keep)


def _result(ctx: TraceContext, info: CellInfo, namespace: Mapping[str, Any], initial: Mapping[str, Any],
            ns: dict[str, Any], keep: Sequence[str]) -> TraceResult:
    binder, bound, fused = plan_bindings(ctx, info, namespace, initial, ns, keep)
    outputs = [(name, binder.tracers[tid]._node) for tid, name in binder.outputs.items()]
    results = tuple(k for k in bound if k in {name for name, _ in outputs})
    graph = ctx.builder.build(outputs)
    kept = _kept_nodes(ctx.builder.nodes, outputs)
    _compute_dead(ctx, kept)
    used = set(graph.input_names())
    inputs = {k: v for k, v in ctx.inputs.items() if k in used}
    plain = {k: untraced(v, ctx) for k, v in binder.names.items() if not isinstance(v, Tracer)}
    module = "dask" if ctx.uses_dask else "cupy" if ctx.uses_cupy else "numpy"
    return TraceResult(graph, inputs, plain, results, fused, module, binder,
                       ctx.warnings, kept, ns, bound)


def trace_function(fn: Callable[..., Any], *arrays: Any, names: Sequence[str] | None = None) -> TraceResult:
    """Trace a Python function applied to arrays (used by fuselab.explore). Its result
    (an array, or a tuple of arrays) gives the outputs `out` or `out0, out1, ...`."""
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    names = list(names or params[: len(arrays)])
    names += [f"arg{i}" for i in range(len(names), len(arrays))]
    code = getattr(fn, "__code__", None)
    filename = code.co_filename if code is not None else "<function>"
    origin = Origin(filename, 0)
    namespace = dict(zip(names, arrays))
    ctx = TraceContext("", namespace, origin=origin, code_files=frozenset({filename}), aliases=Aliases)
    # an array the function reads from its globals, a closure or a container and then
    # writes untraced (`r = W * x; W[:] = 5`): its contents as read are kept (held.py)
    ctx.foreign_operand = partial(held.foreign_operand, ctx)
    args = [ctx.tracer_for(a, n) if traceable(a) else a for a, n in zip(arrays, names)]
    token = tracing(ctx)
    try:
        result = fn(*args)
        if ctx.held is not None:
            ctx.held.settle()   # (changed behind the trace's back after its last read)
    except Refused as e:
        raise e.error from None
    except Exception as e:
        raise TraceError(f"{type(e).__name__}: {e}", _function_error_loc(e, filename),
                         f"fix the error in {getattr(fn, '__name__', 'the function')}") from None
    finally:
        stop_tracing(token)
    outs = result if isinstance(result, (tuple, list)) else (result,)
    if not outs or not all(isinstance(o, Tracer) for o in outs):
        untraced = [n for n, a in zip(names, arrays) if isinstance(a, (list, tuple))]
        why = (f"; its argument(s) {', '.join(untraced)} are Python lists or tuples, which fuselab "
               "does not trace (only NumPy/CuPy arrays are)") if untraced else ""
        raise TraceError(f"{getattr(fn, '__name__', 'the function')} returned {type(result).__name__}, "
                         f"not arrays computed from its arguments{why}", None,
                         "pass arrays (np.asarray(...)) and return the array (or a tuple of arrays) to fuse and run"
                         if untraced else "return the array (or a tuple of arrays) to fuse and run")
    out_names = ["out"] if not isinstance(result, (tuple, list)) else [f"out{i}" for i in range(len(outs))]
    ns = dict(zip(out_names, outs))
    return _result(ctx, analyse(""), namespace, {}, ns, tuple(out_names))


def _function_error_loc(e: BaseException, filename: str) -> SourceLoc | None:
    loc = None
    for frame, lineno in traceback.walk_tb(e.__traceback__):
        if frame.f_code.co_filename == filename:
            loc = SourceLoc(lineno, linecache.getline(filename, lineno).rstrip("\n"))
    return loc
