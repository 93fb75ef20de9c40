"""NumPy dtypes as CUDA C++ types, and values as C++ literals.

Every dtype has a *storage* type (what sits in memory) and a *register* type (what the
generated code computes with). They differ only for float16: it is stored as `fl_half`
(16 raw bits) and held in registers as float, which represents every half value exactly.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

_STORAGE = {
    "bool": "bool",
    "int8": "signed char", "uint8": "unsigned char",
    "int16": "short", "uint16": "unsigned short",
    "int32": "int", "uint32": "unsigned int",
    "int64": "long long", "uint64": "unsigned long long",
    "float16": "fl_half", "float32": "float", "float64": "double",
}


class UnsupportedDtype(TypeError):
    pass


def has_cuda_type(dtype: Any) -> bool:
    """Whether generated kernels can hold values of `dtype` (native byte order only)."""
    dt = np.dtype(dtype)
    return dt.name in _STORAGE and dt.isnative


def _name(dtype: Any) -> str:
    name = np.dtype(dtype).name
    if name not in _STORAGE:
        raise UnsupportedDtype(f"the CUDA backend has no type for {name}")
    return name


def storage_type(dtype: Any) -> str:
    return _STORAGE[_name(dtype)]


def register_type(dtype: Any) -> str:
    name = _name(dtype)
    return "float" if name == "float16" else _STORAGE[name]


_SIZES = {"bool": 1, "signed char": 1, "unsigned char": 1, "short": 2, "unsigned short": 2, "int": 4,
          "unsigned int": 4, "float": 4, "long long": 8, "unsigned long long": 8, "double": 8, "fl_half": 2}


def ctype_size(ctype: str) -> int:
    return _SIZES[ctype]


def cast_tag(dtype: Any) -> str:
    """The type named in `fl_cast<T>(x)`: float16 is `fl_half` so the cast rounds to half."""
    return storage_type(dtype)


def is_float(dtype: Any) -> bool:
    return np.dtype(dtype).kind == "f"


def is_half(dtype: Any) -> bool:
    return np.dtype(dtype) == np.float16


def literal(value: Any, dtype: Any) -> str:
    """`value` as a C++ expression of `dtype`'s register type, exactly."""
    dt = np.dtype(dtype)
    v = np.asarray(value).astype(dt).item()
    if dt.kind == "b":
        return "true" if v else "false"
    if dt.kind == "f":
        return _float_literal(float(v), dt)
    if dt.kind == "i":
        return _int_literal(int(v), dt.itemsize, signed=True)
    if dt.kind == "u":
        return _int_literal(int(v), dt.itemsize, signed=False)
    raise UnsupportedDtype(f"no literal for {dt}")


def _float_literal(v: float, dt: np.dtype) -> str:
    single = dt.itemsize <= 4  # float16 values live in float registers
    if math.isnan(v):
        return "fl_nan<float>()" if single else "fl_nan<double>()"
    if math.isinf(v):
        sign = "-" if v < 0 else ""
        return f"{sign}fl_inf<float>()" if single else f"{sign}fl_inf<double>()"
    if single:
        # float16 values are exact in float32; repr of the float32 value round-trips.
        text = repr(float(np.float32(v)))
        text = text if ("e" in text or "." in text) else text + ".0"
        return f"{text}f"
    text = repr(v)
    return text if ("e" in text or "." in text) else text + ".0"


def _int_literal(v: int, itemsize: int, signed: bool) -> str:
    if itemsize == 8:
        if signed and v == -(2 ** 63):
            return "(-9223372036854775807LL - 1)"
        return f"{v}LL" if signed else f"{v}ULL"
    if itemsize == 4 and not signed:
        return f"{v}u"
    if itemsize == 4 and v == -(2 ** 31):
        return "(-2147483647 - 1)"
    if itemsize == 4:
        return str(v)
    # 8- and 16-bit types have no literal suffix: name the type, so templates deduce it
    return f"static_cast<{_STORAGE[('int' if signed else 'uint') + str(itemsize * 8)]}>({v})"


def lowest(dtype: Any) -> str:
    """Identity of max(): -inf for floats, the smallest value for integers, false for bool."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return literal(-np.inf, dt)
    if dt.kind == "b":
        return "false"
    return literal(np.iinfo(dt).min, dt)


def highest(dtype: Any) -> str:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return literal(np.inf, dt)
    if dt.kind == "b":
        return "true"
    return literal(np.iinfo(dt).max, dt)
