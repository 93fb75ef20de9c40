"""The trace being run in this thread or task, if any: what fuselab's own hooks (the
warnings' re-attribution in warn.py, the tracer's methods in core.py) ask about."""
from __future__ import annotations

import contextvars
from typing import Any

CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar("fuselab_trace", default=None)


def active() -> Any:
    """The TraceContext being run, or None."""
    return CURRENT.get()
