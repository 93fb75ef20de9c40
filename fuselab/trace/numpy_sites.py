"""Where NumPy's own Python code places the warnings that fuselab gives for it.

`np.var(x)` of an empty slice warns "Degrees of freedom <= 0 for slice" from NumPy's
fromnumeric.py, `x.var()` from the user's line, and `x.std()` and `np.std(x)` from
numpy/_core/_methods.py (each a `stacklevel` that lands on a different frame). Python
shows a warning once per location, so where it lands decides how often a notebook sees
it: once a session from NumPy's files, once per user line from the cell. The locations
differ between NumPy versions; they are found once a process by calling NumPy itself on
an empty array with the warnings recorded.

Reductions' floating-point warnings ("overflow encountered in reduce") likewise come from
the line of NumPy's Python code that runs the ufunc: fromnumeric.py for np.sum(x),
_methods.py for x.sum() and for both forms of mean; the user's line for x.cumsum() and
np.add.reduce(x), which run no Python of NumPy's.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

import numpy as np

from ..interp import PythonWarning
from ..recording import recorded

def _recorded(call: Callable[[], Any], errors: str) -> list[warnings.WarningMessage]:
    """The warnings `call()` gives, every one, under np.errstate(all=errors), leaving what
    the session remembers of its warnings as it was (recording.py)."""
    with recorded(fresh=True) as seen, np.errstate(all=errors):
        call()
    return seen


def _located(w: warnings.WarningMessage) -> tuple[str, int] | None:
    """Where `w` came from, or None where that was the probe's own line (NumPy places it
    at its caller's: the user's line in a cell)."""
    return None if w.filename == __file__ else (w.filename, w.lineno)


@functools.cache
def numpy_site(function: str, method: bool, message: str) -> PythonWarning | None:
    """The warning `message` as NumPy gives it for `function` ("mean", "var", "std") of an
    empty array, called as a method or a function: located in NumPy's file, or None where
    NumPy places it at the caller's line."""
    a = np.zeros(0)
    call = (lambda: getattr(a, function)()) if method else (lambda: getattr(np, function)(a))
    for w in _recorded(call, "ignore"):
        if str(w.message).startswith(message):
            where = _located(w)
            return PythonWarning(str(w.message), w.category, *where) if where else None
    return None


@functools.cache
def numpy_step_line(function: str, dtype: str, full: bool, step: int) -> tuple[str, int] | None:
    """The file and line of NumPy's `step`-th floating-point warning (0: the first
    division) of `function` ("mean" / "var") over an empty array of `dtype`, reduced
    whole (`full`) or along an axis: where NumPy's Python code divides a sum by its
    count (numpy/_core/_methods.py), so where its division warnings come from."""
    fn = getattr(np, function)
    a = np.zeros(0, dtype) if full else np.zeros((0, 2), dtype)
    fp = [w for w in _recorded(lambda: fn(a) if full else fn(a, axis=0), "warn")
          if " encountered in " in str(w.message)]
    return _located(fp[step]) if step < len(fp) else None


# The reductions whose floating-point warnings numpy_reduce_line places.
REDUCING = frozenset({"sum", "prod", "mean", "cumsum", "cumprod", "cumulative_sum", "cumulative_prod"})


@functools.cache
def numpy_reduce_line(function: str, method: bool) -> tuple[str, int] | None:
    """The file and line from which the floating-point warnings of `function` ("sum",
    "prod", "mean", "cumsum"...) come, called as a method or as a function: the line
    in NumPy's Python code that runs the ufunc's reduce or accumulate, or None where
    it is the caller's (the user's line in a cell) or `function` is no such reduction."""
    if function not in REDUCING or (method and not hasattr(np.ndarray, function)):
        return None
    a = np.array([1e308, 1e308])   # overflows float64's sum, product and running sums
    call = (lambda: getattr(a, function)()) if method else (lambda: getattr(np, function)(a))
    for w in _recorded(call, "warn"):
        if " encountered in " in str(w.message):
            return _located(w)
    return None
