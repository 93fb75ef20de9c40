"""Python builtins that see through tracers, for the traced cell's `__builtins__`.

`type(x)` of a tracer would say `Tracer` where plain Python says `numpy.ndarray` or
`numpy.float64`, and `memoryview(x)` needs the buffer protocol, which a Python class
cannot give on Python 3.11. The cell's builtins get stand-ins for those two: each answers
as the real builtin does (isinstance, subclassing, attributes), and given a tracer
answers as it would for the array plain execution has there (`type`: the tracer's
`__class__`; `memoryview`: a graph break, and a view of the value's memory, as
`Tracer.__buffer__` gives it from Python 3.12 on; `id`: the user's array object's).
"""
from __future__ import annotations

import builtins
import sys
from typing import Any, Mapping

from ..recording import in_fuselab
from .active import active
from .core import InputTracer, Tracer, buffer_of


class _StandIn:
    """Behaves as the builtin class `real` for isinstance, issubclass, class statements
    and attributes; calling it is `_call`."""

    def __init__(self, real: type) -> None:
        object.__setattr__(self, "_real", real)

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, self._real)

    def __subclasscheck__(self, cls: type) -> bool:
        return issubclass(cls, self._real)

    def __mro_entries__(self, bases: tuple) -> tuple:
        return (self._real,)   # `class Meta(type)` in the cell subclasses the real type

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __repr__(self) -> str:
        return repr(self._real)

    def __eq__(self, other: Any) -> bool:
        return other is self or other is self._real

    def __hash__(self) -> int:
        return hash(self._real)


class _Type(_StandIn):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], Tracer):
            return args[0].__class__   # np.ndarray, np.float64, cupy.ndarray: plain Python's answer
        return type(*args, **kwargs)


class _MemoryView(_StandIn):
    def __call__(self, obj: Any) -> memoryview:
        return buffer_of(obj) if isinstance(obj, Tracer) else memoryview(obj)


def _id(obj: Any) -> int:
    """`id(x)` of an array of the user's is its object's id, as in plain execution (the
    tracer stands for that object; an adopted GPU array of another library: that object)."""
    if isinstance(obj, InputTracer):
        arr = obj._array
        adopted = obj._ctx.adopted.get(id(arr))
        return id(adopted[0] if adopted is not None else arr)
    return id(obj)


_id.__name__ = _id.__qualname__ = "id"
_id.__doc__ = id.__doc__


def _print(*args: Any, **kwargs: Any) -> None:
    """`print`: the warnings of the lines above come first, as in plain execution, where
    they showed as those lines ran. Those waiting are given now, with those of the small
    values not computed yet (core.TraceContext._compute_small: they cost nothing)."""
    ctx = active()
    if ctx is not None and not ctx.uses_cupy and not _called_back(ctx):
        ctx._compute_small()
        ctx.warnings.flush()
    builtins.print(*args, **kwargs)


_RUNNERS = frozenset({"trace_cell", "trace_function"})   # (run.py: where the cell's code runs)


def _called_back(ctx: Any) -> bool:
    """Is the cell's code running here as a call from fuselab's own (np.seterrcall's
    function, given a warning while it is being given): then nothing is flushed. The
    first of fuselab's frames above is the one running the cell, or one calling back."""
    f = sys._getframe(2)
    while f is not None and not in_fuselab(f.f_code.co_filename):
        f = f.f_back
    return f is not None and f.f_code.co_name not in _RUNNERS


for _k in ("__name__", "__qualname__", "__doc__"):
    setattr(_print, _k, getattr(builtins.print, _k))

TYPE = _Type(type)
MEMORYVIEW = _MemoryView(memoryview)
_STAND_INS: dict[int, Any] = {id(TYPE): type, id(MEMORYVIEW): memoryview, id(_id): id, id(_print): print}


def traced_builtins(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """The builtins a traced cell runs with: the namespace's, with the stand-ins."""
    base = namespace.get("__builtins__", builtins)
    names = dict(vars(base)) if not isinstance(base, dict) else dict(base)
    names.update(type=TYPE, memoryview=MEMORYVIEW, id=_id, print=_print)
    return names


def real_builtin(value: Any) -> Any:
    """The builtin behind a stand-in (for binding the cell's names), else the value."""
    return _STAND_INS.get(id(value), value)
