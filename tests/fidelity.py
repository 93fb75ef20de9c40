"""The fidelity harness: run a cell in IPython plainly and under `%%fuse`, from the same
set-up, and describe everything the notebook holds afterwards, so the two can be compared.

One `InteractiveShell` serves both runs; between runs its namespace is reset, the
execution count set back and the warning registries cleared, so each run starts from the
same state. A run's `Outcome` describes:

- every name (not `_`-prefixed) and its value: type, dtype (with byte order), shape and
  the values themselves; containers and object attributes recursively;
- which names are the very objects the set-up made (`is`) and which share memory with
  them, and which names are the same object as which other names;
- what was displayed as Out[n], what was printed, and the warnings (category, message,
  and where: the cell's line, or the library file and line Python attributes it to);
- the error, if the cell raised one.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import types
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FUSE_LINE = "%%fuse -q --backend cpu -o __fl_session\n"
SESSION = "__fl_session"
_IPYTHON_NAMES = {"In", "Out", "exit", "quit", "get_ipython"}


@dataclass(frozen=True)
class Case:
    """One corpus cell. `tol` names a documented difference in the order of a
    reduction's additions (values then agree to a relative 1e-6, not bit for bit);
    `numpy_only` cells use NumPy features CuPy has not (np.matrix, masked arrays)."""

    name: str
    cell: str
    setup: str = ""
    tol: str = ""
    numpy_only: bool = False
    # cells run before `cell`, in order, after the set-up (a notebook's earlier cells);
    # `fuse_which` says, per cell (these, then `cell`), which the fused run runs under
    # %%fuse ('f') and which plainly ('p'): all of them by default
    before: tuple[str, ...] = ()
    fuse_which: str = ""


@dataclass
class Outcome:
    names: dict[str, Any]                      # name -> description of its value
    identity: dict[str, tuple]                 # name -> (set-up names it is, set-up names it shares memory with)
    groups: list[tuple[str, ...]]              # names bound to one same object
    display: Any
    stdout: str
    warnings: list[tuple[str, str, int | str]]   # (category, message, cell line or "file.py:line")
    error: str | None                          # the exception's type name
    error_text: str = ""
    fused_away: tuple[str, ...] = ()
    before: frozenset[str] = frozenset()         # the names the set-up made
    objects: dict[str, Any] = field(default_factory=dict, repr=False)


def _is_array(v: Any) -> bool:
    return isinstance(v, np.ndarray) or (type(v).__module__.startswith("cupy") and hasattr(v, "__cuda_array_interface__"))


def _host(v: Any) -> Any:
    return v.get() if hasattr(v, "get") and type(v).__module__.startswith("cupy") else v


def describe(v: Any, depth: int = 0) -> Any:
    """A comparable description of a value (values included)."""
    if depth > 6:
        return ("deep", type(v).__name__)
    if _is_array(v) and v.dtype == object:   # (its elements described one by one: arrays, scalars...)
        return ("array", type(v).__name__, "object", v.shape, tuple(describe(e, depth + 1) for e in v.flat))
    if _is_array(v):
        a = _host(v)
        data = np.ma.getdata(a) if isinstance(a, np.ma.MaskedArray) else a
        extra = tuple(np.ma.getmaskarray(a).ravel().tolist()) if isinstance(a, np.ma.MaskedArray) else ()
        return ("array", f"{type(v).__module__.split('.')[0]}.{type(v).__name__}", a.dtype.str, a.shape,
                _Values(np.array(data, copy=True)), extra)
    if isinstance(v, np.generic):
        return ("scalar", type(v).__name__, _Values(np.asarray(v)))
    if isinstance(v, (bool, int, str, bytes, type(None))):
        return (type(v).__name__, v)
    if isinstance(v, (float, complex)):
        return (type(v).__name__, _Values(np.asarray(v)))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(describe(e, depth + 1) for e in v))
    if isinstance(v, (set, frozenset)):
        return (type(v).__name__, len(v))
    if isinstance(v, dict):
        return ("dict", tuple((repr(k), describe(e, depth + 1)) for k, e in v.items()))
    if isinstance(v, (types.FunctionType, type, types.ModuleType, types.BuiltinFunctionType)):
        return (type(v).__name__, getattr(v, "__qualname__", getattr(v, "__name__", "")))
    if hasattr(v, "__dict__"):
        return ("object", type(v).__name__, tuple((k, describe(e, depth + 1)) for k, e in sorted(vars(v).items())))
    return ("other", type(v).__name__)


class _Values:
    """Array values, compared exactly (NaN equal to NaN) or to a relative tolerance."""

    tolerance = 0.0

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Values) or self.a.shape != other.a.shape or self.a.dtype != other.a.dtype:
            return False
        a, b = self.a, other.a
        tol = _Values.tolerance.get(a.dtype, 0.0) if isinstance(_Values.tolerance, dict) else _Values.tolerance
        if a.dtype.kind in "fc" and tol:
            # (the freedom of reduction order is relative to the reduced values, of unit
            # size in the corpora: a sum that cancels to 1e-16 may be -1e-16 in another order)
            return bool(np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True))
        if a.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))

    def __repr__(self) -> str:
        return np.array2string(self.a, threshold=20)


class Harness:
    """Runs cells plainly and under %%fuse in one IPython shell."""

    def __init__(self) -> None:
        from IPython.core.interactiveshell import InteractiveShell
        self.ip = InteractiveShell.instance()
        self.ip.run_line_magic("load_ext", "fuselab")

    def run(self, case: Case, fuse: bool, setup: str, fuse_line: str = FUSE_LINE) -> Outcome:
        ip = self.ip
        self._reset()
        warnings._filters_mutated()  # a fresh once-per-line registry everywhere
        np.random.seed(0)  # NumPy's global generator too: both runs draw the same numbers
        if "import cupy" in setup:  # and CuPy's (np is cupy in the GPU corpus)
            import cupy
            cupy.random.seed(0)
        res = ip.run_cell(setup + "\n" + case.setup, store_history=False)
        assert res.success, f"set-up failed: {res.error_in_exec!r}"
        before = {k: v for k, v in ip.user_ns.items() if self._user_name(k)}
        errors: list[BaseException] = []
        show, ip.showtraceback = ip.showtraceback, lambda *a, **k: errors.append(sys.exc_info()[1])
        out = io.StringIO()
        fused_counts: dict[int, bool] = {}   # execution count -> the cell ran under %%fuse
        try:
            with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("default")
                cells = (*case.before, case.cell)
                which = case.fuse_which or "f" * len(cells)
                for k, text in enumerate(cells):
                    fused_here = fuse and which[k] == "f"
                    fused_counts[ip.execution_count] = fused_here
                    if k == len(cells) - 1 and case.before:   # the names the last cell starts from
                        before = {n: v for n, v in ip.user_ns.items() if self._user_name(n)}
                    res = _holding(before, lambda: ip.run_cell((fuse_line if fused_here else "") + text,
                                                               store_history=True))
                    if not res.success:   # (a notebook stops at a failing cell too)
                        break
        finally:
            ip.showtraceback = show
        def offset(filename: str) -> int:   # the %%fuse line, in a cell that has one
            if not case.before:
                return 1 if fuse else 0
            n = re.match(r"<ipython-input-(\d+)-", os.path.basename(filename))
            return int(fused_counts.get(int(n.group(1)), False)) if n else int(fuse)
        warns = []
        for w in caught:
            if not issubclass(w.category, (RuntimeWarning, UserWarning)) or "ipykernel" in str(w.filename):
                continue
            in_cell = "<ipython-input" in w.filename or "/ipykernel" in w.filename or w.filename.startswith("<")
            # where: the cell's line, or the file and line of the library's code (NumPy's
            # fromnumeric.py for np.sum's overflow, _methods.py for x.sum()'s)
            where = w.lineno - offset(w.filename) if in_cell else f"{os.path.basename(w.filename)}:{w.lineno}"
            n = re.match(r"<ipython-input-(\d+)-", os.path.basename(w.filename)) if case.before else None
            if n and int(n.group(1)) in fused_counts:   # (which cell: their order)
                where = (list(fused_counts).index(int(n.group(1))), where)
            warns.append((w.category.__name__, str(w.message), where))
        err = res.error_in_exec or res.error_before_exec or (errors[0] if errors else None)
        session = ip.user_ns.get(SESSION)
        after = {k: v for k, v in ip.user_ns.items() if self._user_name(k)}
        return Outcome(
            names={k: describe(v) for k, v in after.items()},
            identity={k: self._identity(v, before) for k, v in after.items()},
            groups=self._groups(after),
            display=describe(res.result) if res.result is not None else None,
            stdout=re.sub(r"Out\[\d+\]", "Out[n]", out.getvalue()),
            warnings=warns,
            error=type(err).__name__ if err is not None else None,
            error_text=_rendered(err) if err is not None else "",
            fused_away=tuple(session.traced.fused_away) if session is not None else (),
            before=frozenset(before),
            objects=after,
        )

    def _reset(self) -> None:
        """Every name the user's cells made goes, Out is emptied (ip.reset() does this too,
        with a full garbage collection that would take most of the suite's time)."""
        ns, hidden = self.ip.user_ns, self.ip.user_ns_hidden
        if "Out" not in ns:  # another test cleared the shared shell's namespace
            self.ip.init_user_ns()
        for k in [k for k in ns if k not in hidden or k in ("__warningregistry__", SESSION)]:
            del ns[k]
        ns["Out"].clear()
        ns.update({"_": "", "__": "", "___": ""})

    @staticmethod
    def _user_name(k: str) -> bool:
        return not k.startswith("_") and k not in _IPYTHON_NAMES

    @staticmethod
    def _identity(v: Any, before: dict[str, Any]) -> tuple:
        same = tuple(sorted(k for k, b in before.items() if b is v))
        shares = ()
        if _is_array(v):
            shares = tuple(sorted(k for k, b in before.items() if _is_array(b) and type(b) is type(v)
                                  and _shares(v, b)))
        return same, shares

    @staticmethod
    def _groups(after: dict[str, Any]) -> list[tuple[str, ...]]:
        by_id: dict[int, list[str]] = {}
        for k, v in after.items():
            if _is_array(v) or isinstance(v, (list, dict)):
                by_id.setdefault(id(v), []).append(k)
        return sorted(tuple(sorted(g)) for g in by_id.values() if len(g) > 1)


def _holding(before: dict[str, Any], run: Any) -> Any:
    """`run()` while the set-up's objects are kept alive by this module's frames only, as
    locals (the cell cannot reach them), not by a dict: in a notebook nothing else holds
    the user's arrays, and %%fuse decides by their reference counts whether anything
    does (fuselab/trace/held.py)."""
    items = list(before.items())
    before.clear()
    try:
        return _hold_each(items, run)
    finally:
        before.update(items)


def _hold_each(items: list[tuple[str, Any]], run: Any) -> Any:
    if not items:
        return run()
    name, value = items.pop()
    try:
        return _hold_each(items, run)
    finally:
        items.append((name, value))


def _shares(a: Any, b: Any) -> bool:
    if type(a).__module__.startswith("cupy"):
        return _byte_ranges_overlap(a, b)
    return bool(np.shares_memory(a, b))


def _byte_ranges_overlap(a: Any, b: Any) -> bool:
    """Whether two CuPy arrays' spans of device memory overlap (cupy.shares_memory fails on
    0-d complex arrays: "zero-dimensional arrays cannot be concatenated")."""
    def span(v: Any) -> tuple[int, int]:
        if v.size == 0:
            return (0, 0)
        lo = hi = v.data.ptr
        for n, s in zip(v.shape, v.strides):
            (lo, hi) = (lo + (n - 1) * s, hi) if s < 0 else (lo, hi + (n - 1) * s)
        return (lo, hi + v.itemsize)
    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1 and a1 > a0 and b1 > b0


def _rendered(err: BaseException) -> str:
    render = getattr(err, "_render_traceback_", None)
    return "\n".join(render()) if render is not None else f"{type(err).__name__}: {err}"


def differences(case: Case, plain: Outcome, fused: Outcome, reduction_rtol: dict | None = None) -> list[str]:
    """Every way the fused run left the notebook differently from the plain one.
    `reduction_rtol` (by dtype): float arrays may differ by reduction order that much (the
    GPU's kernels against CuPy's own, which sums in another order)."""
    out: list[str] = []
    before = plain.before
    _Values.tolerance = reduction_rtol or (1e-6 if case.tol else 0.0)
    if reduction_rtol and case.tol:  # a float64 value of a float32 reduction (case.tol says which)
        _Values.tolerance = {dt: max(r, 1e-6) for dt, r in reduction_rtol.items()}
    if plain.error is not None:
        if fused.error is None:
            return [f"plain raised {plain.error}, %%fuse did not"]
        if plain.error not in fused.error_text and fused.error != plain.error:
            out.append(f"error: plain {plain.error}, %%fuse says {fused.error_text!r}")
        if set(fused.names) != before:
            out.append(f"after an error the names changed: {sorted(set(fused.names) ^ before)}")
        for bad in ("Traceback", "Tracer", "_LazyInput", "__fuselab", "fuselab/"):
            if bad in fused.error_text:
                out.append(f"the error shows {bad!r}: {fused.error_text!r}")
        return out
    if fused.error is not None:
        return [f"%%fuse raised: {fused.error_text}"]
    missing = set(plain.names) - set(fused.names)
    not_listed = missing - set(fused.fused_away) - set()
    if not_listed:
        out.append(f"names missing and not listed as fused away: {sorted(not_listed)}")
    if missing & before:
        out.append(f"names that existed before were deleted: {sorted(missing & before)}")
    extra = set(fused.names) - set(plain.names)
    if extra:
        out.append(f"extra names: {sorted(extra)}")
    for k in sorted(set(plain.names) & set(fused.names)):
        if plain.names[k] != fused.names[k]:
            out.append(f"{k}: plain {plain.names[k]!r}\n   %%fuse {fused.names[k]!r}")
        if plain.identity[k] != fused.identity[k]:
            out.append(f"{k}: identity/memory with the set-up's objects: plain {plain.identity[k]}, "
                       f"%%fuse {fused.identity[k]}")
    pg = [g for g in plain.groups if not set(g) & missing]
    if pg != fused.groups:
        out.append(f"aliases: plain {pg}, %%fuse {fused.groups}")
    if plain.display != fused.display:
        out.append(f"Out: plain {plain.display!r}, %%fuse {fused.display!r}")
    if plain.stdout != fused.stdout and not (_Values.tolerance and
                                             same_text_within(plain.stdout, fused.stdout, _Values.tolerance)):
        out.append(f"stdout: plain {plain.stdout!r}, %%fuse {fused.stdout!r}")
    # in order, each at its place: the user's line, or NumPy's file and line where NumPy's
    # Python code gives it (np.mean's division, np.sum's overflow), which Python's
    # registry shows once a session
    if plain.warnings != fused.warnings:
        out.append(f"warnings: plain {plain.warnings}, %%fuse {fused.warnings}")
    return out


# a decimal floating-point number as NumPy / Python print one (not part of a name)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")
_NAMED_DTYPE = re.compile(r"dtype=(float16|float32|float64|complex64|complex128)")
_COMPLEX_PART = {"complex64": "float32", "complex128": "float64"}


def same_text_within(plain: str, fused: str, tolerance: float | dict) -> bool:
    """Printed or displayed text that differs only in numbers within the reduction-order
    tolerance the values have (`tolerance`: one relative tolerance, or one per dtype).
    Everything but the numbers must be the same text, each number must be a float
    written with a decimal point or exponent on both sides (integers compare exactly),
    and the tolerance (absolute and relative, as _Values's) is the one of the dtype its
    line names ("dtype=float32"); where the
    line names none, float32's when both numbers are float32 values as NumPy writes them
    (shortest round-trip text, more digits than a float16 has), else float64's."""
    pl, fl = plain.splitlines(), fused.splitlines()
    if len(pl) != len(fl):
        return False
    for a, b in zip(pl, fl):
        if a == b:
            continue
        if _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
            return False
        named = _NAMED_DTYPE.search(a)
        for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b)):
            if x == y:
                continue
            if not (_is_float_text(x) and _is_float_text(y)):
                return False
            dt = _COMPLEX_PART.get(named.group(1), named.group(1)) if named else _unnamed_dtype(x, y)
            rtol = tolerance.get(np.dtype(dt), 0.0) if isinstance(tolerance, dict) else tolerance
            u, v = float(x), float(y)
            # as _Values: relative to the reduced values, of unit size in the corpora (a
            # displayed sum that cancels to 6.7e-16 may print -1.0e-16 in another order)
            if not abs(u - v) <= rtol * (1.0 + max(abs(u), abs(v))):
                return False
    return True


def _is_float_text(t: str) -> bool:
    return "." in t or "e" in t.lower()


def _unnamed_dtype(x: str, y: str) -> str:
    def float32_text(t: str) -> bool:
        digits = len(t.lower().split("e")[0].lstrip("+-").replace(".", "").lstrip("0"))
        return digits > 5 and str(np.float32(t)) == t.lstrip("+")
    return "float32" if float32_text(x) and float32_text(y) else "float64"


def assert_as_plain(harness: "Harness", case: Case, setup: str, fuse_line: str = FUSE_LINE,
                    reduction_rtol: dict | None = None) -> None:
    """Run `case` plainly and under `fuse_line` from `setup`; fail with every difference."""
    plain = harness.run(case, fuse=False, setup=setup)
    fused = harness.run(case, fuse=True, setup=setup, fuse_line=fuse_line)
    diffs = differences(case, plain, fused, reduction_rtol)
    assert not diffs, f"\n--- cell ---\n{case.cell}\n--- differences ---\n" + "\n".join(diffs)


def named_cases(cells, **kw) -> list[Case]:
    """Cases from (name, cell) pairs, each with the same other fields `kw`."""
    return [Case(name=n, cell=c, **kw) for n, c in cells]


def params(cases, known: dict[str, str]) -> list:
    """pytest params of `cases` by name, those in `known` strict xfails with its reason."""
    import pytest
    return [pytest.param(c, id=c.name, marks=pytest.mark.xfail(strict=True, reason=known[c.name]))
            if c.name in known else pytest.param(c, id=c.name) for c in cases]
