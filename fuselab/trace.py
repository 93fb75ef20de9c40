"""Tracing: run a cell's Python with its arrays replaced by tracers that record a Graph.

Python itself runs normally (loops unroll, helper functions are traced through); only
array operations are recorded. The tracing state lives in a ContextVar, so nothing
global changes while a cell is traced and nested or concurrent traces cannot mix.
"""
from __future__ import annotations

import builtins
import contextvars
import sys
from dataclasses import dataclass, field
from types import CodeType, FunctionType, ModuleType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .cellinfo import cell_names
from .errors import TraceError, UnsupportedError
from .ir import Graph, GraphBuilder, SourceLoc
from .ops import Aval, ShapeError, SUPPORTED_DTYPES, UFUNC_OPS, OpaqueFn, ufunc_loop_dtypes

_CTX: contextvars.ContextVar["TraceContext | None"] = contextvars.ContextVar("fuselab_trace", default=None)

_CELL_FILENAME = "<fuselab-cell>"


def is_cupy_array(x: Any) -> bool:
    mod = type(x).__module__
    return mod.startswith("cupy") and hasattr(x, "__cuda_array_interface__")


def is_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) or is_cupy_array(x)


class TraceContext:
    """Everything one trace accumulates: the graph builder and the concrete inputs."""

    def __init__(self, source: str, filename: str, namespace: Mapping[str, Any]) -> None:
        self.builder = GraphBuilder(source)
        self.filename = filename
        self.lines = source.splitlines()
        self.inputs: dict[str, Any] = {}             # input name -> concrete array
        self._by_id: dict[int, int] = {}             # id(array) -> input node
        self._names_by_id = {id(v): k for k, v in namespace.items() if is_array(v)}
        self.uses_cupy = False
        self.originals: dict[int, Any] = {}          # id(re-bound helper) -> the user's function

    # -- where are we in the user's cell? ------------------------------------
    def loc(self) -> SourceLoc | None:
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename == self.filename:
                line = f.f_lineno
                text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
                return SourceLoc(line, text)
            f = f.f_back
        return None

    # -- inputs --------------------------------------------------------------
    def input_for(self, arr: Any, name: str | None = None) -> int:
        key = id(arr)
        if key in self._by_id:
            return self._by_id[key]
        if is_cupy_array(arr):
            self.uses_cupy = True
        dt = np.dtype(arr.dtype)
        name = name or self._names_by_id.get(key) or f"arr{len(self.inputs)}"
        while name in self.inputs:
            name += "_"
        node = self.builder.input(name, tuple(arr.shape), dt)
        self._by_id[key] = node
        self.inputs[name] = arr
        return node

    def tracer(self, node: int) -> "Tracer":
        return Tracer(self, node)


def current() -> TraceContext:
    ctx = _CTX.get()
    if ctx is None:
        raise RuntimeError("no %%fuse trace is active")
    return ctx


# ---------------------------------------------------------------------------
# Operands
# ---------------------------------------------------------------------------

_WEAK_TYPES = (bool, int, float)


@dataclass(frozen=True)
class Weak:
    """A Python scalar operand: NEP 50 'weak', it takes the array's dtype."""

    value: bool | int | float


def operand(ctx: TraceContext, x: Any) -> int | Weak:
    """A node id for an array-like operand, or a Weak marker for a Python scalar."""
    if isinstance(x, Tracer):
        if x._ctx is not ctx:
            raise TraceError("a traced array from another %%fuse cell was used here",
                             ctx.loc(), "compute it inside this cell")
        return x._node
    if isinstance(x, _WEAK_TYPES) and not isinstance(x, np.generic):
        return Weak(x)
    if isinstance(x, complex):
        raise UnsupportedError("complex Python scalars are not supported by %%fuse", ctx.loc(),
                               "move complex arithmetic out of the %%fuse cell")
    if isinstance(x, np.generic):  # NumPy scalars are strong, with their own dtype
        return ctx.builder.const(x.item(), x.dtype, ctx.loc())
    if is_array(x):
        return ctx.input_for(x)
    if isinstance(x, (list, tuple)):
        return ctx.input_for(np.asarray(x))
    raise UnsupportedError(f"{type(x).__name__} is not an array or a number", ctx.loc(),
                           "pass NumPy/CuPy arrays or Python numbers")


def _weak_dtype_for(value: Any) -> Any:
    # Python bool is the lowest kind, so as a plain bool dtype it never promotes anything
    return np.dtype(bool) if isinstance(value, bool) else int if isinstance(value, int) else float


def materialise(ctx: TraceContext, ops: Sequence[int | Weak], dtypes: Sequence[np.dtype]) -> list[int]:
    """Turn Weak scalars into constants of the loop dtype NumPy chose for them."""
    out = []
    loc = ctx.loc()
    for o, dt in zip(ops, dtypes):
        if isinstance(o, Weak):
            if dt.kind in "iu" and isinstance(o.value, int) and not isinstance(o.value, bool):
                info = np.iinfo(dt)
                if not info.min <= o.value <= info.max:
                    raise TraceError(f"Python integer {o.value} out of bounds for {dt}", loc,
                                     f"use a value that fits {dt}, or cast the array first (.astype)")
            out.append(ctx.builder.const(o.value, dt, loc))
        else:
            out.append(o)
    return out


def _dtypes_for_resolution(ctx: TraceContext, ops: Sequence[int | Weak]) -> list[Any]:
    return [_weak_dtype_for(o.value) if isinstance(o, Weak) else ctx.builder.aval(o).dtype for o in ops]


# ---------------------------------------------------------------------------
# Ufuncs
# ---------------------------------------------------------------------------

def apply_ufunc(ctx: TraceContext, opname: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> "Tracer":
    loc = ctx.loc()
    bad = set(kwargs) - {"dtype", "casting"}
    if kwargs.get("out") is not None or bad - {"out"}:
        raise UnsupportedError(f"np.{opname} with {', '.join(sorted(bad))}= is not supported inside %%fuse",
                               loc, "assign the result to a new name instead of writing into out=/where=")
    ops = [operand(ctx, a) for a in args]
    from .ops import OPS
    xp_name = OPS[opname].xp_name
    try:
        if xp_name == "power" and isinstance(ops[1], Weak) and not isinstance(ops[0], Weak):
            special = _scalar_power(ctx, ops[0], ops[1].value)
            if special is not None:
                return special
        dts = _dtypes_for_resolution(ctx, ops)
        if any(not isinstance(d, type) and d not in SUPPORTED_DTYPES for d in dts):
            return _opaque_ufunc(ctx, xp_name, ops, kwargs)
        loop = ufunc_loop_dtypes(xp_name, dts)
        nodes = materialise(ctx, ops, loop[:-1])
        node = ctx.builder.elemwise(opname, nodes, loc)
        if kwargs.get("dtype") is not None:
            node = ctx.builder.astype(node, kwargs["dtype"], loc)
    except ShapeError as e:
        raise TraceError(str(e), loc, "check the shapes and dtypes of the operands") from None
    return Tracer(ctx, node)


def _scalar_power(ctx: TraceContext, base: int, exponent: Any) -> "Tracer | None":
    """x**2 -> square, x**0.5 -> sqrt, x**1 -> x, as NumPy's fast scalar power does for
    floating arrays (identical results, far cheaper on the GPU)."""
    dt = ctx.builder.aval(base).dtype
    if dt.kind != "f":
        return None
    loc = ctx.loc()
    table = {2: "square", 0.5: "sqrt", -1: "reciprocal"}
    if exponent == 1:
        return Tracer(ctx, base)
    name = table.get(exponent)
    if name is None:
        return None
    return Tracer(ctx, ctx.builder.elemwise(name, [base], loc))


def _opaque_ufunc(ctx: TraceContext, xp_name: str, ops: Sequence[int | Weak], kwargs) -> "Tracer":
    """Ufuncs over dtypes fuselab does not generate code for (complex): run the library."""
    consts = [o.value if isinstance(o, Weak) else None for o in ops]
    arrays = [o for o in ops if not isinstance(o, Weak)]

    def call(xp, *vals):
        it = iter(vals)
        return getattr(xp, xp_name)(*[c if c is not None else next(it) for c in consts])

    return opaque_call(ctx, OpaqueFn(xp_name, call), arrays, lambda *a: call(np, *a))


# ---------------------------------------------------------------------------
# Opaque operations
# ---------------------------------------------------------------------------

def dummy(aval: Aval) -> np.ndarray:
    """A zero-stride stand-in of the right shape and dtype: costs one element."""
    return np.broadcast_to(np.zeros((), aval.dtype), aval.shape)


def opaque_call(ctx: TraceContext, fn: OpaqueFn, inputs: Sequence[int],
                shape_fn: Callable[..., Any], kwargs: tuple = ()) -> Any:
    """Record an opaque node. `shape_fn(*dummies)` computes the result with NumPy on
    zero-stride stand-ins, which gives NumPy's exact result shape and dtype."""
    loc = ctx.loc()
    avals = [ctx.builder.aval(i) for i in inputs]
    try:
        with np.errstate(all="ignore"):
            probe = shape_fn(*[dummy(a) for a in avals])
    except Exception as e:  # NumPy's own complaint about these shapes/dtypes
        raise TraceError(f"{fn.name}: {e}", loc, "check the operands' shapes and dtypes") from None
    if isinstance(probe, tuple):
        return tuple(Tracer(ctx, ctx.builder.opaque(fn, inputs, Aval(np.shape(p), np.asarray(p).dtype),
                                                    kwargs, loc, output_index=k))
                     for k, p in enumerate(probe))
    probe = np.asarray(probe)
    return Tracer(ctx, ctx.builder.opaque(fn, inputs, Aval(probe.shape, probe.dtype), kwargs, loc))


# ---------------------------------------------------------------------------
# The tracer array
# ---------------------------------------------------------------------------

_DATA_DEPENDENT_HINT = ("use np.where(condition, a, b) for an element-wise choice, or compute "
                        "the value in a cell before %%fuse and pass it in")


class Tracer:
    """Stands in for an array while a cell is traced; every operation records a node."""

    __slots__ = ("_ctx", "_node")
    __array_priority__ = 1000  # win operator dispatch against ndarray and cupy.ndarray

    def __init__(self, ctx: TraceContext, node: int) -> None:
        self._ctx = ctx
        self._node = node

    # -- metadata (static, safe) --------------------------------------------
    @property
    def aval(self) -> Aval:
        return self._ctx.builder.aval(self._node)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return self.aval.ndim

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def itemsize(self) -> int:
        return self.aval.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.aval.nbytes

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<traced {self.aval} %{self._node}>"

    # -- data-dependent conversions: clear errors ----------------------------
    def _data_dependent(self, what: str) -> TraceError:
        return TraceError(f"data-dependent Python: {what} needs the values of a traced array, "
                          "which exist only once the fused kernels run", self._ctx.loc(), _DATA_DEPENDENT_HINT)

    def __bool__(self):
        raise self._data_dependent("converting to a Python bool (if, while, and/or, bool())")

    def __int__(self):
        raise self._data_dependent("int()")

    def __float__(self):
        raise self._data_dependent("float()")

    def __complex__(self):
        raise self._data_dependent("complex()")

    def __index__(self):
        raise self._data_dependent("using it as an index (range(), a slice bound)")

    def item(self, *a):
        raise self._data_dependent(".item()")

    def tolist(self):
        raise self._data_dependent(".tolist()")

    def __iter__(self):
        raise self._data_dependent("iterating over it")

    def __array__(self, *a, **k):
        raise UnsupportedError("a traced array was converted to a concrete NumPy array (np.asarray, "
                               "a library that is not NumPy/CuPy)", self._ctx.loc(),
                               "compute that part in a cell before or after the %%fuse cell")

    def get(self, *a, **k):
        raise UnsupportedError(".get() copies to the host, which %%fuse cannot do mid-cell",
                               self._ctx.loc(), "call .get() on the result after the cell")

    def __setitem__(self, key, value):
        raise UnsupportedError("item assignment (a[...] = v) mutates an array, which %%fuse cannot "
                               "fuse", self._ctx.loc(),
                               "build the new array functionally, e.g. a = np.where(mask, v, a)")

    # -- NumPy protocols -----------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any):
        from . import numpy_api
        return numpy_api.dispatch_ufunc(self._ctx, ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from . import numpy_api
        return numpy_api.dispatch_function(self._ctx, func, args, kwargs)

    # -- methods and operators are attached by numpy_api ---------------------


# ---------------------------------------------------------------------------
# Running a cell under a trace
# ---------------------------------------------------------------------------

@dataclass
class TraceResult:
    graph: Graph
    inputs: dict[str, Any]                 # input name -> concrete array
    bindings: dict[str, Any]               # non-array names the cell bound (plain Python values)
    results: tuple[str, ...]               # names bound to graph outputs
    fused_away: tuple[str, ...]            # names assigned to arrays that are not results
    array_module: str                      # "numpy" or "cupy": what outputs should be
    # the dict the cell's own functions see as globals; binding re-points them at the
    # user's namespace, where plain execution would have defined them
    tracing_globals: dict[str, Any] | None = field(default=None, repr=False)

    def bindings_for(self, namespace: dict[str, Any]) -> dict[str, Any]:
        """Non-array bindings, with functions the cell defined re-bound to `namespace`."""
        from .numpy_api import with_globals
        out = {}
        for k, v in self.bindings.items():
            if isinstance(v, FunctionType) and v.__globals__ is self.tracing_globals:
                v = with_globals(v, namespace)
            out[k] = v
        return out


def compile_cell(source: str, filename: str = _CELL_FILENAME) -> CodeType:
    try:
        return compile(source, filename, "exec")
    except SyntaxError as e:
        text = (e.text or "").rstrip("\n")
        raise TraceError(f"SyntaxError: {e.msg}", SourceLoc(e.lineno or 0, text),
                         "fix the syntax; nothing was run and no variable changed") from None


def trace_cell(source: str, namespace: Mapping[str, Any], keep: Sequence[str] = ()) -> TraceResult:
    """Trace `source` against `namespace` (never modified) and return the graph plus the
    bindings the cell would make."""
    from . import numpy_api

    code = compile_cell(source)
    names = cell_names(source)
    ctx = TraceContext(source, _CELL_FILENAME, namespace)
    ns = numpy_api.tracing_namespace(ctx, namespace)
    token = _CTX.set(ctx)
    try:
        exec(code, ns)
    except (TraceError, KeyboardInterrupt):
        raise
    except ShapeError as e:
        raise TraceError(str(e), _error_loc(e, source), "check the operands' shapes and dtypes") from None
    except Exception as e:
        loc = _error_loc(e, source)
        raise TraceError(f"{type(e).__name__}: {e}", loc,
                         "fix the error; nothing was run and no variable changed") from e
    finally:
        _CTX.reset(token)

    results = list(names.results) + [k for k in keep if k not in names.results]
    outputs: list[tuple[str, int]] = []
    bindings: dict[str, Any] = {}
    fused_away = []
    for name in names.assigned + tuple(k for k in keep if k not in names.assigned):
        if name not in ns:
            if name in keep:
                raise TraceError(f"--keep {name}: the cell does not define {name!r}", None,
                                 "name a variable the cell assigns")
            continue
        value = ns[name]
        if isinstance(value, Tracer):
            if name in results:
                outputs.append((name, value._node))
            else:
                fused_away.append(name)
        elif isinstance(value, tuple) and any(isinstance(v, Tracer) for v in value):
            err = UnsupportedError(f"{name!r} holds a tuple of traced arrays", None,
                                   "unpack it (a, b = ...) so each array has a name")
            err.tuple_arity = len(value)  # lets trace_function unpack a function's results
            raise err
        elif isinstance(value, numpy_api.TracingModule):
            bindings[name] = value._module
        else:
            bindings[name] = numpy_api.untraced(value, ctx)
    graph = ctx.builder.build(outputs)
    used_inputs = set(graph.input_names())
    inputs = {k: v for k, v in ctx.inputs.items() if k in used_inputs}
    return TraceResult(graph, inputs, bindings, tuple(n for n, _ in outputs), tuple(fused_away),
                       "cupy" if ctx.uses_cupy else "numpy", tracing_globals=ns)


def _error_loc(e: BaseException, source: str) -> SourceLoc | None:
    tb = e.__traceback__
    loc = None
    lines = source.splitlines()
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _CELL_FILENAME:
            n = tb.tb_lineno
            loc = SourceLoc(n, lines[n - 1] if 0 < n <= len(lines) else "")
        tb = tb.tb_next
    return loc


def trace_function(fn: Callable[..., Any], *arrays: Any, names: Sequence[str] | None = None) -> TraceResult:
    """Trace a Python function applied to arrays (used by fuselab.explore)."""
    import inspect

    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    names = list(names or params[: len(arrays)])
    names += [f"arg{i}" for i in range(len(names), len(arrays))]
    ns = dict(zip(names, arrays))
    ns["__fuselab_fn__"] = fn
    # A function returning a tuple gives outputs out0, out1, ...; unpacking needs the count,
    # which only the traced call knows, so trace once to learn it.
    call = f"out = __fuselab_fn__({', '.join(names)})"
    try:
        return trace_cell(call, ns)
    except TraceError as e:
        n = _tuple_arity(e)
        if n is None:
            raise
    targets = ", ".join(f"out{i}" for i in range(n))
    return trace_cell(f"{targets} = __fuselab_fn__({', '.join(names)})", ns)


def _tuple_arity(e: TraceError) -> int | None:
    return getattr(e, "tuple_arity", None)
