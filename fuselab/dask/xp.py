"""Dask arrays as an array module: what the reference interpreter (`interp.eval_node`) and
opaque nodes call when their operands are Dask arrays, so that a node evaluated on Dask
arrays gives exactly the lazy array plain Dask code would build (nothing is computed).

NumPy's ufuncs dispatch to Dask through `__array_ufunc__`; everything else is
`dask.array`'s own function. A function Dask does not have (`np.sort`) is NumPy's, which
Dask runs as plain Dask code does: it computes its operands and warns.
"""
from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy as np


def is_dask_array(x: Any) -> bool:
    """A `dask.array.Array` (checked without importing Dask)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(x, da.Array)


def chunk_module(x: Any) -> ModuleType:
    """The array module of a Dask array's chunks (NumPy or CuPy), from its meta."""
    meta = getattr(x, "_meta", x)
    return sys.modules["cupy"] if type(meta).__module__.startswith("cupy") else np


class DaskModule:
    """`dask.array` seen as NumPy: `getattr(xp, "exp")`, `xp.sum(x, axis=...)`,
    `xp.asarray`, `xp.linalg.norm` ... as plain Dask code would call them."""

    def __init__(self, module: Any = None, numpy_module: Any = np) -> None:
        import dask.array as da
        self._module = module if module is not None else da
        self._numpy = numpy_module

    def __repr__(self) -> str:
        return f"<fuselab Dask array module {self._module.__name__}>"

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._numpy, name, None)
        if isinstance(real, np.ufunc):
            return real  # np.exp(dask_array) is Dask's elementwise op, through __array_ufunc__
        own = getattr(self._module, name, None)
        if isinstance(own, ModuleType):
            return DaskModule(own, real if isinstance(real, ModuleType) else np)
        if own is not None:
            return own
        if real is not None:
            return real  # Dask computes its operands here, as for plain Dask code
        raise AttributeError(f"neither dask.array nor numpy has {name!r}")

    @property
    def __name__(self) -> str:
        return self._module.__name__


_XP: DaskModule | None = None


def dask_xp() -> DaskModule:
    global _XP
    if _XP is None:
        _XP = DaskModule()
    return _XP
