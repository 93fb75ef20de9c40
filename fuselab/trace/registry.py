"""The NumPy functions fuselab traces, by their path below numpy / cupy ('sum',
'linalg.norm'), and the dispatch of a call on tracers: a handler records nodes; a function
without one goes to the opaque layer (a shape rule, or a real run at a graph break)."""
from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping, Sequence

from ..ops import ShapeError
from .core import TraceContext
from .operands import RunForReal
from .realrun import run_for_real

Handler = Callable[..., Any]
HANDLERS: dict[str, Handler] = {}
# handlers that run the function itself (at a break): they get the function the user's
# code called, after ctx — cupy.random.shuffle in a CuPy cell, never NumPy's stand-in
CALLS_FUNCTION: set[str] = set()
# functions without a handler: (ctx, path, func, args, kwargs) -> result; set by opaque.py
FALLBACK: list[Callable[[TraceContext, str, Any, Sequence[Any], Mapping[str, Any]], Any]] = []


def handles(*names: str, calls_function: bool = False) -> Callable[[Handler], Handler]:
    """Register a handler for these paths; with `calls_function`, the handler runs the
    real function and is called as handler(ctx, func, *args, **kwargs)."""
    def deco(fn: Handler) -> Handler:
        for n in names:
            HANDLERS[n] = fn
            if calls_function:
                CALLS_FUNCTION.add(n)
            else:
                CALLS_FUNCTION.discard(n)
        return fn
    return deco


def _cupy_accepts(func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> bool:
    """Whether a CuPy function's signature takes these arguments. CuPy's API is NumPy's
    with fewer parameters (cupy.clip has no min=, cupy.count_nonzero no keepdims=): a call
    it refuses must fail as in plain execution, not follow NumPy's rules."""
    if not (getattr(func, "__module__", "") or "").startswith("cupy"):
        return True
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return True   # (a compiled function: no signature to check)
    try:
        sig.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def qualname(func: Any) -> str:
    """'sum', 'linalg.norm', 'fft.fft': the function's path below numpy / cupy."""
    mod = (getattr(func, "__module__", "") or "").split(".")
    name = getattr(func, "__name__", type(func).__name__)
    sub = [m for m in mod[1:] if not m.startswith("_")]
    return ".".join(sub + [name])


def call_function(ctx: TraceContext, path: str, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                  *, method: bool = False) -> Any:
    """`func(*args, **kwargs)` with tracers among the arguments; `method`: the user wrote
    it as a method (`x.var()`, not `np.var(x)`), which moves some of NumPy's warnings."""
    handler = HANDLERS.get(path)
    outer = ctx.calling_method, ctx.calling_path
    ctx.calling_method, ctx.calling_path = method, path
    try:
        if ctx.uses_cupy and not method and not _cupy_accepts(func, args, kwargs):
            raise RunForReal(func)   # CuPy's own signature refuses it (np.clip(x, min=0)): CuPy's error
        if handler is not None:
            if path in CALLS_FUNCTION:
                return handler(ctx, func, *args, **kwargs)
            return handler(ctx, *args, **kwargs)
        return FALLBACK[0](ctx, path, func, args, kwargs)
    except (RunForReal, ShapeError, TypeError):
        # fuselab's rules do not cover this call (or NumPy rejects it): NumPy decides
        return run_for_real(ctx, f"np.{path}", func, args, kwargs)
    finally:
        ctx.calling_method, ctx.calling_path = outer
