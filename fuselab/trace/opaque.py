"""Operations fuselab does not fuse. Each runs through the library as one opaque node,
its result's shape and dtype given by a rule written from NumPy's documentation (never
by running it on made-up data). Operations whose result's shape depends on the values
(`unique`, `nonzero`, boolean masks) run at a graph break and become nodes of the shape
they gave; functions without a rule run as plain NumPy at a graph break.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..ops import Aval, OpaqueFn, broadcast_shapes
from .core import TraceContext, Tracer, is_array, mentions_tracer
from .layout import copy_order, k_order, value_layout
from .mutate import writer
from .operands import RunForReal, node_of
from .realrun import run_for_real
from .registry import FALLBACK, handles
from .shape_rules import RULES, Rule  # (the rules register themselves)

# ---------------------------------------------------------------------------
# Lifting a call: array arguments become the node's inputs, the rest stays static
# ---------------------------------------------------------------------------


class Slot:
    """Where the i-th array operand goes in a call's arguments."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __repr__(self) -> str:
        return f"<array {self.i}>"


def fill(v: Any, vals: Sequence[Any]) -> Any:
    """`v` with every Slot (also inside lists and tuples) replaced by its value."""
    if isinstance(v, Slot):
        return vals[v.i]
    if type(v) in (list, tuple):
        return type(v)(fill(e, vals) for e in v)
    return v


@dataclass(frozen=True)
class Lifted:
    nodes: tuple[int, ...]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def substitute(self, vals: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
        """The call's arguments with the array operands taken from `vals`."""
        return [fill(a, vals) for a in self.args], {k: fill(v, vals) for k, v in self.kwargs.items()}

    def call(self, fn: Callable[..., Any], vals: Sequence[Any]) -> Any:
        args, kwargs = self.substitute(vals)
        return fn(*args, **kwargs)


def lift(ctx: TraceContext, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Lifted:
    nodes: list[int] = []

    def one(v: Any) -> Any:
        if isinstance(v, Tracer) or is_array(v):
            nodes.append(node_of(ctx, v))
            return Slot(len(nodes) - 1)
        if type(v) in (list, tuple) and any(isinstance(e, Tracer) or is_array(e) for e in v):
            return type(v)(one(e) for e in v)
        return v
    largs = tuple(one(a) for a in args)
    lkw = {k: one(v) for k, v in kwargs.items()}
    return Lifted(tuple(nodes), largs, lkw)


def _xp_attr(xp: Any, path: str) -> Any:
    obj = xp
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _wrap_results(ctx: TraceContext, fn: OpaqueFn, nodes: Sequence[int], avals: Aval | tuple[Aval, ...],
                  scalar: bool, values: Any = None) -> Any:
    b, loc = ctx.builder, ctx.loc()
    if isinstance(avals, Aval):
        n = b.opaque(fn, nodes, avals, (), loc)
        if values is not None:
            ctx.evaluator.set(n, values)
        return Tracer(ctx, n, scalar=scalar and not avals.shape)
    outs = []
    for k, av in enumerate(avals):
        n = b.opaque(fn, nodes, av, (), loc, output_index=k)
        if values is not None:
            ctx.evaluator.set(n, values[k])
        outs.append(Tracer(ctx, n, scalar=scalar and not av.shape))
    return tuple(outs)


# ---------------------------------------------------------------------------
# Data-dependent shapes: run now, at a graph break
# ---------------------------------------------------------------------------

def data_dependent(ctx: TraceContext, name: str, fn: Callable[..., Any], args: Sequence[Any],
                   kwargs: Mapping[str, Any], what: str = "") -> Any:
    """Run `fn` now (its result's shape depends on the values); the result becomes an
    opaque node of the shape it has, whose value is kept for the rest of the trace."""
    lifted = lift(ctx, args, kwargs)
    if not lifted.nodes:
        raise RunForReal(args)
    ctx.need(lifted.nodes[0], what or f"the shape of `np.{name}`'s result depends on the values")
    vals = [ctx.evaluator.value(n) for n in lifted.nodes]
    result = lifted.call(fn, vals)
    opaque = OpaqueFn(name, lambda xp, *v: lifted.call(fn, v))
    if isinstance(result, tuple):
        avals = tuple(Aval(tuple(r.shape), np.dtype(r.dtype)) for r in result)
        outs = _wrap_results(ctx, opaque, lifted.nodes, avals, False, result)
        # NumPy's named tuple (np.unique_all's UniqueAllResult): its type, its fields' names
        return type(result)._make(outs) if hasattr(type(result), "_make") else outs
    t = _wrap_results(ctx, opaque, lifted.nodes, Aval(tuple(result.shape), np.dtype(result.dtype)),
                      False, result)
    if t.ndim > 1:   # the layout NumPy made it in (np.argwhere's is transposed): `v * 1` keeps it
        t._order = copy_order(t.ndim, value_layout(result), "K")
    t._temp_view = not getattr(getattr(result, "flags", None), "owndata", True)   # (that view owns no memory)
    return t


def _keeping_dtype(path: str):
    """A data-dependent op whose values are its operand's elements (so its dtype)."""
    def h(ctx: TraceContext, func: Any, *a: Any, **k: Any) -> Any:
        out = data_dependent(ctx, path, func, a, k)
        dt = _first_dtype(a)
        first = out[0] if isinstance(out, tuple) else out
        if dt is not None and first.aval.dtype == dt.newbyteorder("="):
            first._dtype = dt if dt != first.aval.dtype else None
        return out
    return h


# (each runs the function the user's code called: NumPy's, CuPy's, or an array's method)
for _path in ("nonzero", "flatnonzero", "argwhere", "unique_inverse", "bincount"):
    handles(_path, calls_function=True)(lambda ctx, func, *a, _p=_path, **k: data_dependent(ctx, _p, func, a, k))
# (not np.trim_zeros: its result is a view of its operand, which a real run gives as one)
for _path in ("unique", "unique_values", "unique_counts", "unique_all", "extract", "compress",
              "setdiff1d", "intersect1d", "union1d", "setxor1d"):
    handles(_path, calls_function=True)(_keeping_dtype(_path))


def _first_dtype(args: Sequence[Any]) -> np.dtype | None:
    for a in args:
        if isinstance(a, Tracer):
            return a.dtype
        if type(a) in (list, tuple):
            d = _first_dtype(a)
            if d is not None:
                return d
    return None


# ---------------------------------------------------------------------------
# The fallback for functions without a handler
# ---------------------------------------------------------------------------

def library_call(ctx: TraceContext, path: str, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """A NumPy/CuPy function with tracer arguments and no handler: an opaque node by its
    shape rule, or, without one, plain NumPy at a graph break."""
    r = RULES.get(path)
    if r is None and isinstance(func, np.ufunc) and func.nout == 1 and not kwargs and func.signature is None:
        # (a generalized ufunc, np.vecdot's "(n),(n)->()", does not broadcast element by element)
        return _library_ufunc(ctx, func, args)
    if r is None:
        return run_for_real(ctx, f"np.{path}", func, args, kwargs,
                            f"`np.{path}` runs as plain NumPy here: fuselab has no rule for its result's shape")
    if kwargs.get("out") is not None:
        # a rule gives a new array; NumPy writes into `out` and returns that very array
        # (`np.matmul(a, b, out=o) is o`): the real run does both, as NumPy
        return run_for_real(ctx, f"np.{path}", func, args, kwargs,
                            f"`np.{path}(..., out=)` runs as plain NumPy here: it writes into `out`")
    args, kwargs = array_operands(ctx, r.rule, args, kwargs)
    lifted = lift(ctx, args, kwargs)
    avals = [ctx.builder.aval(n) for n in lifted.nodes]
    a, kw = lifted.substitute(avals)
    out_avals = r.rule(*a, **kw)
    if ctx.calling_method and "." not in path:
        # `x.cumprod(...)` runs the array's method (NumPy's C code, no fromnumeric.py): its
        # warnings come from the user's line, as in NumPy; the arguments are the function's less `a`
        fn = OpaqueFn(path, lambda xp, *vals: lifted.call(lambda a, *r, **k: getattr(a, path)(*r, **k), vals))
    else:
        fn = OpaqueFn(path, lambda xp, *vals: lifted.call(_xp_attr(xp, path), vals))
    values = None
    if r.fallible and ctx.in_try():
        # it may raise on these values, inside a `try`: run it now so the error is raised
        # where plain Python raises it
        if lifted.nodes:
            ctx.need(lifted.nodes[0], f"`np.{path}` can fail on the values, inside a `try`")
        values = lifted.call(func, [ctx.evaluator.value(n) for n in lifted.nodes])
    out = _wrap_results(ctx, fn, lifted.nodes, out_avals, r.scalar, values)
    if isinstance(out, Tracer) and r.temp_view is not None and not out._scalar:   # (cupy.tile's too)
        out._temp_view = bool(r.temp_view(*a, **kw))
    _k_ordered_like_operand(ctx, path, out, args)
    dt = _first_dtype(args) if r.keeps_dtype else None
    if isinstance(out, Tracer) and dt is not None and dt != out.aval.dtype and dt.newbyteorder("=") == out.aval.dtype:
        out._dtype = dt
    return out


# functions whose result NumPy lays out in its operand's memory order ('K': a Fortran-
# ordered array's cumsum is Fortran-ordered), where the result has the operand's shape
_K_ORDERED = frozenset({"cumsum", "cumprod", "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod",
                        "sort", "partition", "roll", "fft.fft", "fft.ifft", "concatenate", "concat"})
_JOINED = frozenset({"concatenate", "concat"})
# shapes.layout_of, which registers itself (shapes imports this module)
LAYOUT_OF: list[Callable[[TraceContext, Any], Any]] = []


def _k_ordered_like_operand(ctx: TraceContext, path: str, out: Any, args: Sequence[Any]) -> None:
    """The result's layout, as NumPy's (the value the plan computes may be C-ordered:
    `r = np.cumsum(aF, -1); u = r * 2` lays u out as r is)."""
    if path not in _K_ORDERED or not isinstance(out, Tracer) or out._scalar or out.ndim < 2 or ctx.uses_cupy \
            or out._temp_view:   # (np.roll without an axis: a C-ordered reshape of its ravel)
        return
    layout_of = LAYOUT_OF[0]
    if path in _JOINED:   # (NumPy orders the axes by all the operands' strides)
        arrays = args[0] if args and type(args[0]) in (list, tuple) else ()
        strides = [lay[1] for lay in (layout_of(ctx, x) for x in arrays) if lay is not None and len(lay[1]) == out.ndim]
        if strides and len(strides) == len(arrays):
            out._order = k_order(out.shape, [(tuple(out.shape), st) for st in strides])
        return
    x = args[0] if args else None
    layout = layout_of(ctx, x) if isinstance(x, Tracer) or is_array(x) else None
    if layout is not None and tuple(layout[0]) == tuple(out.shape):
        out._order = copy_order(out.ndim, layout, "K")


@lru_cache(maxsize=None)
def _operand_params(rule: Rule) -> tuple[tuple[int, ...], frozenset[str]]:
    """The positions and names of a rule's array operands: its parameters annotated
    `Aval` (a rule's signature is its NumPy function's)."""
    params = [p for p in inspect.signature(rule).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    ops = [p for p in params if p.annotation in ("Aval", Aval)]
    return (tuple(i for i, p in enumerate(params) if p in ops and p.kind is not p.KEYWORD_ONLY),
            frozenset(p.name for p in ops if p.kind is not p.POSITIONAL_ONLY))


def _as_array(v: Any) -> Any:
    """An array operand as NumPy's function takes it: np.asarray of a Python scalar, a
    NumPy scalar, a list or a tuple (np.dot(a, 2), [1, 1, 1] @ a); other objects as they
    are (the rule, or NumPy at a graph break, decides)."""
    if type(v) in (list, tuple) and mentions_tracer(v):
        # (a list of traced arrays where the rule takes one array, np.fft.fft2([a, a]):
        # NumPy's np.asarray of it, at a graph break; the rule reads one Aval)
        raise RunForReal(v)
    if isinstance(v, Tracer) or is_array(v):
        return v
    if isinstance(v, (bool, int, float, complex, np.generic, list, tuple)):
        try:
            arr = np.asarray(v)
        except (ValueError, TypeError):
            return v
        return arr if arr.dtype.kind in "biufc" else v
    return v


def array_operands(ctx: TraceContext, rule: Rule, args: Sequence[Any],
                   kwargs: Mapping[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """The call's arguments with its array operands coerced as NumPy coerces them, so
    that every rule (and the opaque node) sees arrays there. CuPy takes only arrays
    (cupy.dot(v, 2) is its TypeError): another operand runs for real, where CuPy decides."""
    positions, names = _operand_params(rule)
    coerce = _as_array
    if ctx.uses_cupy:
        def coerce(v: Any) -> Any:
            if not (isinstance(v, Tracer) or is_array(v)):
                raise RunForReal(v)
            return v
    return (tuple(coerce(v) if i in positions else v for i, v in enumerate(args)),
            {k: coerce(v) if k in names else v for k, v in kwargs.items()})


def _library_ufunc(ctx: TraceContext, ufunc: np.ufunc, args: Sequence[Any]) -> Tracer:
    """A ufunc fuselab has no code for (np.logaddexp, scipy.special.erf): one opaque
    node; NumPy's broadcasting and loop resolution give its shape and dtype."""
    lifted = lift(ctx, args, {})
    avals = [ctx.builder.aval(n) for n in lifted.nodes]
    a, _ = lifted.substitute(avals)
    dts = [v.dtype if isinstance(v, Aval) else np.dtype(v.dtype) if isinstance(v, np.generic) else type(v)
           for v in a]
    try:
        dt = np.dtype(ufunc.resolve_dtypes((*dts, None))[-1])
    except TypeError:
        raise RunForReal(args) from None
    shape = broadcast_shapes(*(v.shape for v in avals))
    fn = OpaqueFn(ufunc.__name__, lambda xp, *vals: lifted.call(ufunc if xp is np else getattr(xp, ufunc.__name__),
                                                               vals))
    return _wrap_results(ctx, fn, lifted.nodes, Aval(shape, dt), True)


FALLBACK.append(library_call)

# functions that write into their first argument (the one the user called: in a CuPy
# cell cupy.random.shuffle, which draws from CuPy's generator, once)
for _path in ("copyto", "put", "place", "putmask", "fill_diagonal", "random.shuffle"):
    handles(_path, calls_function=True)(writer(_path))
