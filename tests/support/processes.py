"""Starting worker processes from a test process."""
from __future__ import annotations

import contextlib
import sys
import types
from typing import Iterator


@contextlib.contextmanager
def plain_main() -> Iterator[None]:
    """Spawning reads `__main__`'s spec; an IPython shell run in this process (the
    fidelity and magic tests do) leaves a stand-in module without one, and a Dask
    LocalCluster or the fuzzer's pool then fails to start its workers. Workers need
    nothing from `__main__`, so a blank module does while they start."""
    main = sys.modules.get("__main__")
    if main is not None and not hasattr(main, "__spec__"):
        sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main
