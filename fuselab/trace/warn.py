"""NumPy's RuntimeWarnings for a traced cell, as plain execution gives them: NumPy's own
wording ("divide by zero encountered in log"), at the user's line, once per place a node's
value was asked for (a node two lines share warns at both, each under its errstate), through
Python's warning machinery (so filters and the once-per-line registry apply as usual).

Nodes are evaluated at graph breaks and in the final run, not when their line runs, so
warnings are collected and emitted in program order: at each graph break (what ran so far,
before later lines, running plain NumPy on the value, give their own) and when the cell
finishes. Plain NumPy that runs while the cell is traced (on a value Python already holds:
`np.float32(2) * np.nan_to_num(i32 / 0)` of an untraced array) warns then; its warnings,
once Python's filters have passed them, wait in the same order (`deferring_plain`).
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, MutableMapping

import numpy as np

from ..ir import Node, SourceLoc
from ..ops import OPS, Kind
from ..recording import give_at

# NumPy's floating-point error kinds and the np.errstate key that governs each.
_ERRSTATE_KEY = {"divide by zero": "divide", "overflow": "over", "underflow": "under",
                 "invalid value": "invalid"}


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
        return "accumulate" if name in _ACCUMULATES else name
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
            else:
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
        return self._under_errstate(position, f"{kind} encountered in {label}", RuntimeWarning, loc, modes)

    def _under_errstate(self, position: Position, message: str, category: type, where: Any,
                        modes: Mapping[str, str] | None) -> bool:
        """Raise, collect or drop a floating-point warning as np.errstate (`modes`, else
        the default) says for its kind; whether it warns. `where`: a SourceLoc (the user's
        line) or a located interp.PythonWarning (NumPy's own line)."""
        kind = message.split(" encountered")[0]
        mode = (modes or self.default_modes).get(_ERRSTATE_KEY.get(kind, "invalid"), "ignore")
        if mode == "raise":
            raise FloatingPointError(message)
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
            self._show(pending, registry, module)
        finally:
            self._showing = False

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
