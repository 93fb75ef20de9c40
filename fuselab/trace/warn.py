"""NumPy's RuntimeWarnings for a traced cell, as plain execution gives them: NumPy's own
wording ("divide by zero encountered in log"), at the user's line, once per place a node's
value was asked for (a node two lines share warns at both, each under its errstate), through
Python's warning machinery (so filters and the once-per-line registry apply as usual).

Nodes are evaluated at graph breaks and in the final run, not when their line runs, so
warnings are collected and emitted in program order: at each graph break (what ran so far,
before later lines, running plain NumPy on the value, give their own) and when the cell
finishes. Plain NumPy that runs while the cell is traced (on a value Python already holds:
`np.float32(2) * np.nan_to_num(i32 / 0)` of an untraced array) warns then; its warnings,
once Python's filters have passed them, wait in the same order (`deferring_plain`); those
NumPy gives inside fuselab's own code (a cast ir.py makes for the user) are given again
from the user's frame, as plain execution places them (`_give_as_caller`). Where the cell
changes the warning filters itself (catch_warnings) or np.errstate raises or calls a
function, nodes are computed as their line runs (`eager`), so that the filters and the
function act there, as in plain execution.
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, MutableMapping

import numpy as np

from ..ir import Node, SourceLoc
from ..ops import OPS, Kind
from ..recording import give_at
from .numpy_sites import numpy_cast_line
from .active import active

# NumPy's floating-point error kinds and the np.errstate key that governs each.
_ERRSTATE_KEY = {"divide by zero": "divide", "overflow": "over", "underflow": "under",
                 "invalid value": "invalid"}
# and the bit of each in the flag np.errstate(all='call') hands its function
_FPE_BIT = {"divide by zero": 1, "overflow": 2, "underflow": 4, "invalid value": 8}

# fuselab's own files: a warning NumPy gives in one of them during the trace (a Python
# float cast into float32 in ir.py, int() of a complex value in core.py) is the user's
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_WARNINGS_FILE = os.path.abspath(warnings.__file__)


def overflow_warns(dtype: np.dtype, label: str) -> bool:
    """Whether NumPy warns about an integer overflow: its integer scalars do, and its
    arrays only in floor division (MIN // -1), where the loop sets the overflow flag
    itself; other integer array arithmetic wraps around silently."""
    return dtype.kind not in "iu" or label.startswith("scalar") or label in ("floor_divide", "divmod")


@dataclass(frozen=True)
class Origin:
    """Where the cell's code lives for Python: its file name as the user's tracebacks
    show it, and how many lines come before the cell's first line there (1 for the
    `%%fuse` line of an IPython cell)."""

    filename: str = "<fuselab-cell>"
    line_offset: int = 0


_ACCUMULATES = frozenset({"cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "nancumsum", "nancumprod"})


def fp_label(node: Node) -> str:
    """How NumPy names the operation in a floating-point warning."""
    if node.op == "astype":
        return "cast"
    if node.op == "var":
        return "divide"   # np.var's own warning: its last step divides by count - ddof
    d = OPS[node.op]
    if d.kind is Kind.REDUCE:
        return "reduce"
    if d.kind is Kind.ELEMWISE and d.xp_name:
        return getattr(np, d.xp_name).__name__
    if node.op == "opaque":
        name = str(node.args["fn"].name).rpartition(".")[2]
        # cumulative sums and products run a ufunc's accumulate, which names the warning
        if name in _ACCUMULATES:
            return "accumulate"
        # a ufunc run by the library (complex division) is named as NumPy names it
        # (np.true_divide is np.divide: "divide")
        uf = getattr(np, name, None)
        return uf.__name__ if isinstance(uf, np.ufunc) else name
    return node.op


Position = tuple[int, int, int]   # (node, 1, 0) at a node; (next node, 0, sequence) between nodes


@dataclass(frozen=True)
class Site:
    """A place a node's value was asked for, whose warnings its errors give: its position
    in program order, its line (None: the node's own) and np.errstate (None: the default);
    for a reduction made by a NumPy call (`per_call`), the line of NumPy's Python code
    that runs its ufunc for the way the user called it (np.sum(x): fromnumeric.py;
    x.sum(): _methods.py), where its floating-point warnings come from at every call
    (None: the user's line, as for x.cumsum())."""

    position: Position
    loc: SourceLoc | None
    modes: Mapping[str, str] | None
    numpy_line: tuple[str, int] | None = None
    per_call: bool = False
    label: str | None = None   # NumPy's word for the operation here, where the line's differs (divmod)


@dataclass(frozen=True)
class _Passed:
    """A warning plain code gave during the trace, past the filters: shown as it is."""

    msg: warnings.WarningMessage


@dataclass
class CellWarnings:
    """Warnings collected while a cell is traced and run, emitted in program order."""

    origin: Origin
    namespace: MutableMapping[str, Any]
    default_modes: Mapping[str, str] = field(default_factory=np.geterr)
    pending: list[tuple[tuple[Position, int], str, type, Any]] = field(default_factory=list)
    seen: set[tuple[Position, str]] = field(default_factory=set)
    _showing: bool = False     # flush is showing: a warning passes straight through
    # Python's warning machinery as the cell found it: while the cell's code has changed it
    # (`with warnings.catch_warnings(): warnings.simplefilter('error')`), warnings must be
    # given as their line runs, under its filters (eager)
    _machinery: tuple = field(default_factory=lambda: _machinery())
    # where the cell's changed filters began to apply (warnings before it were given under
    # the cell's own filters), while they apply
    _region: Position | None = None

    def custom_filters(self) -> bool:
        """Has the cell's code changed Python's warning filters or how warnings are shown
        (catch_warnings, simplefilter, filterwarnings, record=True), here?"""
        filters, copy, show, impl = self._machinery
        return warnings.filters is not filters or warnings.filters != copy or \
            warnings.showwarning is not show or getattr(warnings, "_showwarnmsg_impl", None) is not impl

    def each_time(self, modes: Mapping[str, str] | None) -> bool:
        """Does every run of a line count, not only its first (a loop's iterations)? Python's
        default filter shows a line's warning once, but np.errstate's function is called
        each time, and the cell's own filters ('always', record=True) may show each."""
        return self.custom_filters() or any(m in ("call", "print", "log") for m in (modes or {}).values())

    def acts_each_call(self, modes: Mapping[str, str] | None, kind: Any) -> bool:
        """Does np.errstate (`modes`) act on this error at every computation, whatever
        was shown before: raise, or call, log or print? (A warning shows once a place.)"""
        if not isinstance(kind, str) and not getattr(kind, "fp", False):
            return False
        word = str(getattr(kind, "message", kind)).partition(" encountered in ")[0]
        return self._mode(modes, word) in ("raise", "call", "log", "print")

    def _mode(self, modes: Mapping[str, str] | None, kind: str) -> str:
        """What np.errstate (`modes`, else the default) does with errors of `kind`
        ("overflow", "divide by zero"...)."""
        return (modes or self.default_modes).get(_ERRSTATE_KEY.get(kind, "invalid"), "ignore")

    def eager(self, modes: Mapping[str, str] | None, position: Position) -> bool:
        """Must a node asked for at `position` be computed at once, its errors raised or
        shown as its line runs? Where np.errstate raises or calls a function (or prints:
        in order with the cell's output), or the cell changed the warning filters (an
        `error` filter raises at the line, `ignore` drops only the block's warnings)."""
        if not self.custom_filters():
            self._region = None
            return any(m in ("raise", "call", "print", "log") for m in (modes or {}).values())
        if self._region is None:
            self._region = position   # the first place under the changed filters
        return True

    @contextlib.contextmanager
    def deferring_plain(self, here: Callable[[], Position]) -> Iterator[None]:
        """While the cell's code runs under the tracer, a warning plain NumPy gives (past
        Python's filters and once-per-place registries, so `error` filters still raise at
        its line) waits in `pending` at `here()` instead of showing at once, ahead of the
        warnings of earlier lines whose nodes have not run yet. A recorder inside
        (recording.recorded swaps _showwarnmsg_impl) and flush itself pass through."""
        original = getattr(warnings, "_showwarnmsg", None)
        if original is None:     # another Python's warnings module: shown as they come
            yield
            return
        impl = getattr(warnings, "_showwarnmsg_impl", None)

        def defer(msg: warnings.WarningMessage) -> None:
            if self._showing or getattr(warnings, "_showwarnmsg_impl", None) is not impl:
                original(msg)
            elif not _give_as_caller(msg):
                self.pending.append(((here(), len(self.pending)), str(msg.message), msg.category, _Passed(msg)))
        warnings._showwarnmsg = defer
        try:
            yield
        finally:
            warnings._showwarnmsg = original

    def python(self, position: Position, message: str, loc: "SourceLoc | PythonWarning | None",
               category: type = RuntimeWarning) -> None:
        """A warning NumPy's Python code gives (`Mean of empty slice`): at the user's line
        (a SourceLoc) or at NumPy's own (a located interp.PythonWarning)."""
        self.pending.append(((position, len(self.pending)), message, category, loc))

    def warned(self, position: Position, kind: str) -> bool:
        """Whether the error `kind` warned (or was ignored) at `position` already."""
        return (position, kind) in self.seen

    def fp(self, position: Position, kind: str, label: str, loc: SourceLoc | None,
           modes: Mapping[str, str] | None = None) -> bool:
        """A floating-point error of the node asked for at `position`, under the errstate
        its line ran with; once there. Whether it warns."""
        if (position, kind) in self.seen:
            return False
        self.seen.add((position, kind))
        return self._under_errstate(position, f"{kind} encountered in {label}", RuntimeWarning, loc, modes,
                                    getattr(kind, "flag", None))

    def _under_errstate(self, position: Position, message: str, category: type, where: Any,
                        modes: Mapping[str, str] | None, flag: int | None = None) -> bool:
        """Raise, collect or drop a floating-point warning as np.errstate (`modes`, else
        the default) says for its kind, or hand it to np.seterrcall's function ('call',
        'log') or C's stderr ('print') as NumPy does; whether it warns. `where`: a
        SourceLoc (the user's line) or a located interp.PythonWarning (NumPy's own line)."""
        kind, _, label = message.partition(" encountered in ")
        mode = self._mode(modes, kind)
        if mode == "raise":
            raise FloatingPointError(message)
        if mode in ("call", "log"):
            handler = np.geterrcall()
            if handler is None:   # NumPy's own words (two spaces included)
                raise NameError(f"python callback specified for {kind} (in  {label}) but no function found.")
            if mode == "call":
                handler(kind, flag if flag is not None else _FPE_BIT.get(kind, 0))
            else:
                handler.write(f"Warning: {message}\n")
        elif mode == "print":
            sys.stderr.flush()
            os.write(2, f"Warning: {message}\n".encode())
        if mode == "warn":
            self.pending.append(((position, len(self.pending)), message, category, where))
        return mode == "warn"

    def located(self, position: Position, w: Any, modes: Mapping[str, str] | None = None) -> bool:
        """A floating-point warning NumPy's Python code gives from its own line (`w`, an
        interp.PythonWarning with a filename), under the errstate the user's line ran
        with; once there. Whether it warns."""
        if (position, w) in self.seen:
            return False
        self.seen.add((position, w))
        return self._under_errstate(position, str(w.message), w.category, w, modes)

    def flush(self) -> None:
        """Emit everything collected, in program order; each once."""
        pending, self.pending = sorted(self.pending, key=lambda p: p[0]), []
        registry = self.namespace.setdefault("__warningregistry__", {})
        module = str(self.namespace.get("__name__", "__main__"))
        self._showing = True
        try:
            if self._region is not None and self.custom_filters():
                # the lines before the cell changed the filters warn under the filters they ran with
                before = [p for p in pending if p[0][0] < self._region]
                with self._cells_own_machinery():
                    self._show(before, registry, module)
                pending = pending[len(before):]
            self._show(pending, registry, module)
        finally:
            self._showing = False

    @contextlib.contextmanager
    def _cells_own_machinery(self) -> Iterator[None]:
        """Python's warning filters and display as the cell found them, for the block (as
        recording.recorded swaps them: the once-per-location registries stay valid)."""
        _, filters, show, impl = self._machinery
        saved = (warnings.filters, warnings.showwarning, getattr(warnings, "_showwarnmsg_impl", None))
        warnings.filters, warnings.showwarning = list(filters), show
        if impl is not None:
            warnings._showwarnmsg_impl = impl
        try:
            yield
        finally:
            warnings.filters, warnings.showwarning = saved[:2]
            if saved[2] is not None:
                warnings._showwarnmsg_impl = saved[2]

    def _show(self, pending: list, registry: dict, module: str) -> None:
        for _, message, category, loc in pending:
            if isinstance(loc, _Passed):      # filtered when it was given: shown as it is
                warnings._showwarnmsg(loc.msg)
                continue
            if getattr(loc, "filename", None) is not None:   # NumPy's line, NumPy's registry
                give_at(message, category, loc.filename, loc.lineno)
                continue
            line = (loc.line if loc is not None else 0) + self.origin.line_offset
            warnings.warn_explicit(message, category, self.origin.filename, line, module=module,
                                   registry=registry)


def _machinery() -> tuple:
    return (warnings.filters, list(warnings.filters), warnings.showwarning,
            getattr(warnings, "_showwarnmsg_impl", None))


def _give_as_caller(msg: warnings.WarningMessage) -> bool:
    """A warning NumPy gave while fuselab's own code ran in the user's place during the
    trace (the cast of `f32 * 1e300`'s Python float in ir.py, `int(c[0])` of a complex
    value in core.py): plain NumPy gives it from the frame that ran the operation, the
    innermost one outside fuselab (the cell's line), through that frame's module
    registry and the filters in force. Given so again (it is deferred like any warning
    of the cell's code then), and forgotten at fuselab's line, whose registry would
    otherwise hide the next one. Whether it was fuselab's."""
    if not issubclass(msg.category, RuntimeWarning) or not os.path.abspath(str(msg.filename)).startswith(_PACKAGE):
        return False   # (NumPy's value warnings only: RuntimeWarning, ComplexWarning)
    f = sys._getframe(2)
    # from the frame Python named: a library's Python code may lie between (np.nanvar's
    # stacklevel=2 names fuselab's frame that called it; nanvar's own frame is inner)
    named = f
    while named is not None and not (named.f_code.co_filename == msg.filename and named.f_lineno == msg.lineno):
        named = named.f_back
    f = named if named is not None else f
    while f is not None and (os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE) or
                             os.path.abspath(f.f_code.co_filename) == _WARNINGS_FILE):
        if f.f_code.co_filename == msg.filename and f.f_lineno == msg.lineno:
            registry = f.f_globals.get("__warningregistry__")
            if isinstance(registry, dict):
                registry.pop((str(msg.message), msg.category, msg.lineno), None)
        f = f.f_back
    if f is None:
        return False
    ctx = active()
    line = numpy_cast_line(ctx.calling_path, ctx.calling_method) if ctx is not None and ctx.calling_path and \
        str(msg.message).endswith(" encountered in cast") else None
    if line is not None:   # a NumPy function of Python code fuselab stands in for: its own line
        give_at(str(msg.message), msg.category, *line)
        return True
    g = f.f_globals
    warnings.warn_explicit(msg.message, msg.category, f.f_code.co_filename, f.f_lineno,
                           module=g.get("__name__") or "__main__", registry=g.setdefault("__warningregistry__", {}),
                           module_globals=g)
    return True
