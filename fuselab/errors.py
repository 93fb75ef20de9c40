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


def _render(self: FuselabError) -> list[str]:
    """IPython shows this instead of a Python traceback: the user's line and the fix."""
    head = f"{type(self).__name__}: "
    lines = self.render().splitlines()
    return [head + lines[0], *lines[1:]]


FuselabError._render_traceback_ = _render  # type: ignore[attr-defined]
