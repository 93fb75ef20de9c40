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
from typing import Any, Mapping

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

TYPE = _Type(type)
MEMORYVIEW = _MemoryView(memoryview)
_STAND_INS: dict[int, Any] = {id(TYPE): type, id(MEMORYVIEW): memoryview, id(_id): id}


def traced_builtins(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """The builtins a traced cell runs with: the namespace's, with the stand-ins."""
    base = namespace.get("__builtins__", builtins)
    names = dict(vars(base)) if not isinstance(base, dict) else dict(base)
    names.update(type=TYPE, memoryview=MEMORYVIEW, id=_id)
    return names


def real_builtin(value: Any) -> Any:
    """The builtin behind a stand-in (for binding the cell's names), else the value."""
    return _STAND_INS.get(id(value), value)
