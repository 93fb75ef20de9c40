"""How NumPy sees the operands of a traced operation: tracers are nodes, Python scalars
are NEP 50 "weak" scalars that take the array's dtype, NumPy scalars and concrete arrays
are strong constants and inputs. Anything fuselab does not trace (an ndarray subclass, an
object array, an unknown object) raises `RunForReal`, and the operation then runs as
plain NumPy at a graph break."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .core import InputTracer, TraceContext, Tracer, is_array, traceable

_WEAK_TYPES = (bool, int, float, complex)


class RunForReal(Exception):
    """An operand fuselab does not trace: the operation runs as plain NumPy instead."""


@dataclass(frozen=True)
class Weak:
    """A Python scalar operand: NEP 50 'weak', it takes the array's dtype."""

    value: bool | int | float | complex


def wrap(ctx: TraceContext, node: int, *, scalar: bool = False, origin: tuple | None = None,
         dtype: np.dtype | None = None) -> Tracer:
    """The tracer for a new array (or, with `scalar`, a NumPy scalar when it is 0-d);
    `dtype`: the dtype plain NumPy gives it when that is the node's in another byte order."""
    t = Tracer(ctx, node, scalar=scalar and ctx.builder.aval(node).ndim == 0, origin=origin)
    if dtype is not None and np.dtype(dtype) != t.aval.dtype:
        t._dtype = np.dtype(dtype)
    return t


def copy_as(ctx: TraceContext, source: Tracer, node: int, make: Any, scalar: bool = False) -> Tracer:
    """A new array of `node`'s values, bound as `make(the array NumPy has for source)`
    (`a.copy()`, `a.ravel()`: byte order, layout and memory stay NumPy's), or as the
    run's value, in source's byte order."""
    t = Tracer(ctx, node, scalar=scalar, origin=("copy", source, ctx.versions.get(id(source), 0), make))
    t._dtype = source._dtype
    return t


def cupy_decides_out_of_range_ints(ctx: TraceContext, ops: Sequence[int | Weak]) -> None:
    """In a CuPy cell, a Python int outside an integer operand's dtype (`u8 > -2`,
    `np.clip(u8, -3, 7)`), or outside 64 bits with any operand (`h + 10**40`), runs for
    real: CuPy 14 raises OverflowError there, where NumPy 2 answers exactly (fuselab's
    rule for NumPy cells)."""
    if not ctx.uses_cupy:
        return
    ints = [o.value for o in ops if isinstance(o, Weak) and type(o.value) is int]
    if any(not -2**63 <= v < 2**64 for v in ints):
        raise RunForReal(ops)   # CuPy takes Python ints as 64-bit integers: `h + 10**40` overflows
    for o in ops:
        if ints and not isinstance(o, Weak) and ctx.builder.aval(o).dtype.kind in "iu":
            info = np.iinfo(ctx.builder.aval(o).dtype)
            if any(not info.min <= v <= info.max for v in ints):
                raise RunForReal(ops)


def operand(ctx: TraceContext, x: Any) -> int | Weak:
    """A node id for an array-like operand, or a Weak marker for a Python scalar."""
    if isinstance(x, Tracer):
        if x._ctx is not ctx:
            raise ctx.refuse("a traced array from another %%fuse cell was used here",
                             "compute it inside this cell")
        return x._node
    if type(x) in _WEAK_TYPES:
        return Weak(x)
    if isinstance(x, np.generic) and not isinstance(x, Tracer):  # NumPy scalars are strong
        if np.dtype(x.dtype) in _CONST_DTYPES:
            return ctx.builder.const(x.item(), x.dtype, ctx.loc())
        raise RunForReal(x)
    if is_array(x):
        if traceable(x) and not (ctx.uses_cupy and not isinstance(x, ctx.array_type)):
            if ctx.foreign_operand is not None:
                ctx.foreign_operand(x)   # (an array the cell got from a dict, a list, a call: held.py)
            return ctx.tracer_for(x)._node
        raise RunForReal(x)   # (a NumPy array meeting CuPy's: CuPy decides, as plain execution)
    if type(x) in (list, tuple):
        if ctx.uses_cupy:
            raise RunForReal(x)   # CuPy's operators refuse lists (`y[[0, 1]] += [1, 2]`: TypeError)
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError):
            raise RunForReal(x) from None
        if arr.dtype in _CONST_DTYPES:
            return ctx.tracer_for(arr)._node  # the tracer keeps `arr` alive for the graph
    raise RunForReal(x)


_CONST_DTYPES = frozenset(np.dtype(d) for d in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"))


def node_of(ctx: TraceContext, x: Any) -> int:
    """A node for an array operand (a Python scalar becomes a constant of NumPy's default
    dtype for it, as np.asarray would give)."""
    o = operand(ctx, x)
    if isinstance(o, Weak):
        return ctx.builder.const(o.value, np.asarray(o.value).dtype, ctx.loc())
    return o


def weak_type(value: Any) -> Any:
    """What NumPy's dtype resolution takes for a weak Python scalar."""
    return bool if isinstance(value, bool) else int if isinstance(value, int) else \
        complex if isinstance(value, complex) else float


def resolution_dtypes(ctx: TraceContext, ops: Sequence[int | Weak]) -> list[Any]:
    return [weak_type(o.value) if isinstance(o, Weak) else ctx.builder.aval(o).dtype for o in ops]


def materialise(ctx: TraceContext, ops: Sequence[int | Weak], dtypes: Sequence[np.dtype]) -> list[int]:
    """Weak scalars become constants of the loop dtype NumPy chose for them (an integer
    that does not fit is NumPy's OverflowError)."""
    out = []
    loc = ctx.loc()
    for o, dt in zip(ops, dtypes):
        if isinstance(o, Weak):
            check_fits(o.value, dt)
            out.append(ctx.builder.const(o.value, dt, loc))
        else:
            out.append(o)
    return out


def check_fits(value: Any, dt: np.dtype) -> None:
    if dt.kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(dt)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {dt}")


def convert_scalar(ctx: TraceContext, value: Any, dt: np.dtype, how: str) -> Any:
    """The element NumPy stores for the scalar `value` in an array of dtype `dt` by `how`
    ('setitem': x[i] = v, 'fill': x.fill(v), 'full': np.full(n, v, dtype)), with NumPy's
    own errors and warnings there, which depend on the value and the way (np.nan into
    int32 raises ValueError by item assignment and only warns in np.full; np.int64(300)
    into int8 raises OverflowError; a complex into floats TypeError or ComplexWarning).
    NumPy itself does that one conversion, on the real value, into a one-element array,
    under the errstate in force; its warnings go to the user's line."""
    from ..recording import library_line, recorded
    with recorded() as caught:
        if how == "full":
            out = np.full(1, value, dtype=dt)
        else:
            out = np.zeros(1, dtype=dt)
            if how == "fill":
                out.fill(value)
            else:
                out[0] = value
    for w in caught:   # from the user's line, or NumPy's where it warns from its own code (np.full)
        ctx.library_warning(str(w.message), w.category, library_line(w) or None)
    return out[0].item()


def is_input(t: Any) -> bool:
    return isinstance(t, InputTracer)
