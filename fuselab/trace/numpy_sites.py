"""Where NumPy's own Python code places the warnings that fuselab gives for it.

`np.var(x)` of an empty slice warns "Degrees of freedom <= 0 for slice" from NumPy's
fromnumeric.py, `x.var()` from the user's line, and `x.std()` and `np.std(x)` from
numpy/_core/_methods.py (each a `stacklevel` that lands on a different frame). Python
shows a warning once per location, so where it lands decides how often a notebook sees
it: once a session from NumPy's files, once per user line from the cell. The locations
differ between NumPy versions; they are found once a process by calling NumPy itself on
an empty array with the warnings recorded.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ..interp import PythonWarning

# function name -> how to call it on an empty array, as a function and as a method
_CALLS = {
    "mean": (lambda a: np.mean(a), lambda a: a.mean()),
    "var": (lambda a: np.var(a), lambda a: a.var()),
    "std": (lambda a: np.std(a), lambda a: a.std()),
}


@functools.cache
def numpy_site(function: str, method: bool, message: str) -> PythonWarning | None:
    """The warning `message` as NumPy gives it for `function` of an empty array, called as
    a method or a function: located in NumPy's file, or None where NumPy places it at the
    caller's line (the user's line in a cell)."""
    call = _CALLS[function][1 if method else 0]
    with warnings.catch_warnings(record=True) as seen, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        call(np.zeros(0))
    for w in seen:
        if str(w.message).startswith(message):
            if w.filename == __file__:
                return None
            return PythonWarning(str(w.message), w.category, w.filename, w.lineno)
    return None


@functools.cache
def numpy_step_line(function: str, dtype: str, full: bool, step: int) -> tuple[str, int] | None:
    """The file and line of NumPy's `step`-th floating-point warning (0: the first
    division) of `function` ("mean" / "var") over an empty array of `dtype`, reduced
    whole (`full`) or along an axis: where NumPy's Python code divides a sum by its
    count (numpy/_core/_methods.py), so where its division warnings come from."""
    fn = {"mean": np.mean, "var": np.var}[function]
    a = np.zeros(0, dtype) if full else np.zeros((0, 2), dtype)
    with warnings.catch_warnings(record=True) as seen, np.errstate(all="warn"):
        warnings.simplefilter("always")
        fn(a) if full else fn(a, axis=0)
    fp = [w for w in seen if " encountered in " in str(w.message)]
    if step >= len(fp) or fp[step].filename == __file__:
        return None
    return fp[step].filename, fp[step].lineno
