"""NumPy dtypes as the generated Python sees them: register types, literals and casts.

Every value in a generated kernel is a Numba scalar of its dtype, except float16: Numba
has no float16 on the CPU, so a half array travels as its uint16 bits and a half value
is held in a float32 (which represents every half exactly). Literals are written typed
(`np.float32(1.5)`), because a bare `1.5` is a float64 to Numba and would widen the
arithmetic around it.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ops import dtype_name

SUPPORTED = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
             "float16", "float32", "float64")


class UnsupportedDtype(TypeError):
    pass


def _dt(dtype: Any) -> np.dtype:
    dt = np.dtype(dtype)
    if dtype_name(dt) not in SUPPORTED:
        raise UnsupportedDtype(f"the Numba backend has no type for {dt.name}")
    return dt


def compiles(dtype: Any) -> bool:
    """Whether generated code has a type for `dtype` (in native byte order: the kernels
    read arrays through pointers of the native type). Kernels with values of other
    dtypes run through NumPy (codegen.numpy_reason)."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return False
    return dt.isnative and dtype_name(dt) in SUPPORTED


def transport(dtype: Any) -> np.dtype:
    """The dtype an array of `dtype` travels between kernels in: storage() where the
    kernels have a type for it, else the dtype itself (only NumPy reads it)."""
    return storage(dtype) if compiles(dtype) else np.dtype(dtype)


def is_half(dtype: Any) -> bool:
    return np.dtype(dtype) == np.float16


def register(dtype: Any) -> np.dtype:
    """The dtype a value of `dtype` is computed in (float16: float32)."""
    dt = _dt(dtype)
    return np.dtype(np.float32) if dt == np.float16 else dt


def storage(dtype: Any) -> np.dtype:
    """The dtype of the array a kernel receives (float16: its uint16 bits)."""
    dt = _dt(dtype)
    return np.dtype(np.uint16) if dt == np.float16 else dt


def ctor(dtype: Any) -> str:
    """The constructor naming a register type in generated code: `np.float32`."""
    dt = register(dtype)
    return "np.bool_" if dt == np.bool_ else f"np.{dtype_name(dt)}"


def literal(value: Any, dtype: Any) -> str:
    """`value` converted as NumPy converts it to `dtype`, as a typed expression."""
    dt = _dt(dtype)
    v = np.asarray(value).astype(dt).item()
    if dt.kind == "b":
        return "True" if v else "False"
    if dt.kind == "f":
        f = float(np.float32(v)) if dt == np.float16 else float(v)   # half values are exact float32s
        if math.isnan(f):
            text = "np.nan"
        elif math.isinf(f):
            text = "np.inf" if f > 0 else "-np.inf"
        else:
            text = repr(f)
        return f"{ctor(dt)}({text})"
    return f"{ctor(dt)}({int(v)})"


def cast(expr: str, src: Any, dst: Any) -> str:
    """`expr` (a register value of `src`) as NumPy's astype gives it in `dst`, as a
    register value of `dst`. Rules as the CUDA prelude's fl_cast."""
    s, d = _dt(src), _dt(dst)
    if s == d:
        return expr
    if d.kind == "b":
        return f"({expr} != 0)"
    if d == np.float16:
        if s == np.float64:
            return f"fl_round_half64({expr})"
        return f"fl_round_half({expr})" if s == np.float32 or s == np.float16 else \
            f"fl_round_half(np.float32({expr}))"
    if d.kind == "f":
        return f"{ctor(d)}({expr})"
    # integer destinations
    if s.kind == "f":
        if d == np.uint64:
            return f"fl_f2u64({expr})"
        wide = d.itemsize == 8 or (d.itemsize == 4 and d.kind == "u")
        return f"{ctor(d)}({'fl_f2i64' if wide else 'fl_f2i32'}({expr}))"
    return f"{ctor(d)}({expr})"      # integer and bool sources: truncation / extension


def lowest(dtype: Any) -> str:
    dt = register(dtype)
    if dt.kind == "f":
        return literal(-np.inf, dt)
    if dt.kind == "b":
        return "False"
    return literal(np.iinfo(dt).min, dt)


def highest(dtype: Any) -> str:
    dt = register(dtype)
    if dt.kind == "f":
        return literal(np.inf, dt)
    if dt.kind == "b":
        return "True"
    return literal(np.iinfo(dt).max, dt)
