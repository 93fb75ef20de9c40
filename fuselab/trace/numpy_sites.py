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


def numpy_step_line(function: str, dtype: str, full: bool, op: str, k: int,
                    options: tuple[tuple[str, Any], ...] = ()) -> tuple[str, int] | None:
    """The file and line of the `k`-th step of NumPy's Python code for `function` ("mean",
    "var", "linalg.norm"; called with keyword `options`) over `dtype` that runs the ufunc
    `op` ("divide", "subtract", "square", "dot", or "reduce" for its sums), reduced whole
    (`full`) or along an axis: where that step's floating-point warnings come from
    (numpy/_core/_methods.py, numpy/linalg/_linalg.py)."""
    lines = [where for name, where in numpy_steps(function, dtype, full, options) if name == op]
    return lines[k] if k < len(lines) else None


@functools.cache
def numpy_steps(function: str, dtype: str, full: bool,
                options: tuple[tuple[str, Any], ...] = ()) -> tuple[tuple[str, tuple[str, int] | None], ...]:
    """The steps of NumPy's Python code for `function` over `dtype` that give floating-
    point warnings, in order of their first warning: (the ufunc it names, e.g. "divide",
    "square", "reduce"; where). Found by running NumPy on arrays that make each step
    warn: an empty one (its divisions: 0 / 0), one holding inf (inf - inf in the
    deviations), the dtype's largest value twice (the mean's sum overflows) and pairs +-c
    whose squares overflow the dtype, or whose sum of squares does."""
    dt = np.dtype(dtype)
    fn = functools.reduce(getattr, function.split("."), np)
    kw = dict(options)
    with np.errstate(all="ignore"):
        top = float(np.finfo(dt).max) if dt.kind == "f" else 0.0
        probes = [np.zeros(0, dt), np.array([np.inf, 1.0]).astype(dt)]
        if top:
            probes += [np.array([top, top]).astype(dt)]
            probes += [np.array([c, -c]).astype(dt) for c in (2 * top ** 0.5, 0.8 * top ** 0.5)]
    seen: list[tuple[str, tuple[str, int] | None]] = []
    for a in probes:
        a = a if full else a.reshape(-1, 1)
        # (an `axis` among the options: the probe's two axes, (0, 1) of a column)
        try:
            seen_here = _recorded(lambda: fn(a, **kw) if full or "axis" in kw else fn(a, axis=0, **kw), "warn")
        except Exception:   # noqa: BLE001 - a probe NumPy refuses (the min of an empty array) tells nothing
            continue
        for w in seen_here:
            text = str(w.message)
            if " encountered in " in text:
                step = (text.rpartition(" ")[2], _located(w))
                if step not in seen:
                    seen.append(step)
    return tuple(seen)


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
    return _probe_line(call, " encountered in ")


def _probe_line(call: Callable[[], Any], words: str) -> tuple[str, int] | None:
    """Where the first warning of `call()` whose message holds `words` came from: a line
    of NumPy's, or None (the caller's line, or no such warning)."""
    try:
        seen = _recorded(call, "warn")
    except Exception:   # noqa: BLE001 - a NumPy without the probe's function or arguments
        return None
    for w in seen:
        if words in str(w.message):
            return _located(w)
    return None


# NumPy functions that run the array's method (C code) from fromnumeric.py's _wrapfunc:
# every floating-point warning of their steps comes from that line (np.round(h, 2) of
# float16 values past 655: "overflow encountered in multiply"), the method's (h.round(2))
# from the caller's
_WRAPPED_PROBES: dict[str, Callable[[], Any]] = {
    "round": lambda: np.round(np.array([1e308]), 1),
    "around": lambda: np.around(np.array([1e308]), 1),
}


@functools.cache
def numpy_wrapped_line(function: str | None) -> tuple[str, int] | None:
    """The file and line from which NumPy's `function` ("round"), called as a function,
    gives the floating-point warnings of its steps, or None where they come from the
    caller's line (or `function` is no such function)."""
    probe = _WRAPPED_PROBES.get(function or "")
    return None if probe is None else _probe_line(probe, " encountered in ")


# NumPy functions written in Python that cast a value with one of their ufuncs: a cast's
# warning comes from their line (`np.full(3, np.nan, dtype=int)`: "invalid value
# encountered in cast"; `np.clip(h, -1e6, 1e6)` of float16 values, its bounds: from
# numpy/_core/_methods.py _clip, whose line depends on the bounds given, called as a
# function or as a method). Keys: (function, called as a method).
_H = np.zeros(1, np.float16)
_CASTING_PROBES: dict[tuple[str, bool], Callable[[], Any]] = {
    ("full", False): lambda: np.full(1, np.nan, dtype=np.int64),
    ("full_like", False): lambda: np.full_like(np.zeros(1, np.int64), np.nan),
    ("clip", False): lambda: np.clip(_H, -1e6, 1e6),
    ("clip", True): lambda: _H.clip(-1e6, 1e6),
    ("clip:max", False): lambda: np.clip(_H, None, 1e6),
    ("clip:max", True): lambda: _H.clip(None, 1e6),
    ("clip:min", False): lambda: np.clip(_H, -1e6, None),
    ("clip:min", True): lambda: _H.clip(-1e6, None),
}


@functools.cache
def numpy_cast_line(function: str, method: bool = False) -> tuple[str, int] | None:
    """The file and line from which NumPy's `function` ("full", "clip"; "clip:max" with
    only an upper bound), called as a method or a function, gives the warnings of its
    casts, or None where they come from the caller's line (or it is not known)."""
    probe = _CASTING_PROBES.get((function, method))
    if probe is None:
        return None
    return _probe_line(probe, " encountered in cast")
