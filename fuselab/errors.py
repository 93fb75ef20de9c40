"""User-facing errors: each says what happened, where in the cell, and what to do."""
from __future__ import annotations

from .ir import SourceLoc


class FuselabError(Exception):
    """Base of every error fuselab shows to a notebook user."""

    def __init__(self, what: str, loc: SourceLoc | None = None, hint: str = "") -> None:
        self.what = what
        self.loc = loc
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        parts = []
        if self.loc is not None:
            parts.append(f"in cell line {self.loc.line}:  {self.loc.text.strip()}")
        parts.append(self.what)
        if self.hint:
            parts.append(f"What to do: {self.hint}")
        return "\n".join(parts)


class TraceError(FuselabError):
    """The cell could not be turned into a graph (data-dependent control flow, an
    unsupported operation, a shape or dtype error NumPy would raise too)."""


class UnsupportedError(TraceError):
    pass


class RunError(FuselabError):
    """The plan failed while it ran (out of memory, a library call's error)."""


class BackendError(FuselabError):
    """The chosen backend cannot run here (no GPU, no CuPy, compile failure...)."""


class OptionError(FuselabError, ValueError):
    """An option of run_cell / explore / Session that has no such value (the magic's own
    flags are checked by its parser and raise UsageError)."""


class FuselabWarning(UserWarning):
    """Something the user must know although the cell ran (a failed result check)."""


class Interrupted(KeyboardInterrupt):
    """A KeyboardInterrupt (the notebook's stop button) during a fuselab cell: still a
    KeyboardInterrupt for code that catches one, shown as what was interrupted and what
    became of the notebook's variables, not as a traceback through fuselab's internals."""

    def __init__(self, stage: str, loc: SourceLoc | None = None,
                 hint: str = "run the cell again when you are ready") -> None:
        self.stage, self.loc, self.hint = stage, loc, hint
        super().__init__(self.render())

    def render(self) -> str:
        where = f"in cell line {self.loc.line}:  {self.loc.text.strip()}\n" if self.loc is not None else ""
        return (f"{where}interrupted while {self.stage}; no variable changed\n"
                f"What to do: {self.hint}")


def syntax_error(e: SyntaxError, source: str, line_offset: int = 0) -> TraceError:
    """A SyntaxError Python's compiler raises after the parser accepted the cell
    (`return`, `yield` or `await` outside a function, `break` outside a loop): at the
    user's line, as the parser's own syntax errors are reported."""
    lines = source.splitlines()
    n = (e.lineno or 0) - line_offset
    text = lines[n - 1] if 0 < n <= len(lines) else (e.text or "").rstrip("\n")
    return TraceError(f"{type(e).__name__}: {e.msg}", SourceLoc(n, text),
                      "fix the syntax; nothing was run and no variable changed")


def _render(self: FuselabError) -> list[str]:
    """IPython shows this instead of a Python traceback: the user's line and the fix."""
    head = f"{type(self).__name__}: "
    lines = self.render().splitlines()
    return [head + lines[0], *lines[1:]]


FuselabError._render_traceback_ = _render  # type: ignore[attr-defined]
Interrupted._render_traceback_ = lambda self: ["KeyboardInterrupt: " + self.render()]  # type: ignore[attr-defined]
