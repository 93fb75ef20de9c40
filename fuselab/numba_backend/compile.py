"""Compiling generated kernels: each source becomes a module file in the cache folder
(named by its hash, so Numba's on-disk cache, `cache=True`, finds it again in a later
process), is imported, and compiled for its exact argument types. An in-process table
keyed by the source makes a second compile of the same kernel free.

Importing this module imports Numba.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numba
import numpy as np

from .model import PyKernel
from .pytypes import storage

_LOCK = threading.Lock()
_COMPILED: dict[tuple[str, tuple[str, ...]], Callable[..., Any]] = {}


@dataclass(frozen=True)
class Compiled:
    kernel: PyKernel
    fn: Callable[..., Any]      # the compiled function; takes flat arrays
    compile_s: float            # wall time to get it (0 when this process had it already)
    path: Path


def cache_dir() -> Path:
    """Where generated modules (and Numba's cache of them, in __pycache__) live."""
    root = Path(os.environ.get("FUSELAB_CACHE_DIR", Path.home() / ".cache" / "fuselab"))
    return root / "numba"


def _module_path(kernel: PyKernel) -> Path:
    digest = hashlib.sha256(kernel.source.encode()).hexdigest()[:20]
    return cache_dir() / f"{kernel.name}_{digest}.py"


def _signature(kernel: PyKernel, dtypes: tuple[np.dtype, ...]) -> Any:
    arrays = [numba.types.Array(numba.from_dtype(storage(dt)), 1, "C") for dt in dtypes]
    return numba.types.void(*arrays)


def load_module(path: Path) -> Any:
    """The generated module at `path` (in the cache folder), imported once a process. It is
    in sys.modules before its code runs and before anything in it compiles: Numba's disk
    cache names the module of a compiled function's globals and imports it by that name
    in a later process (one it could not find was pickled as '<dynamic>', and loading it
    failed with ModuleNotFoundError: the calibration probes, on the GPU machine's CPU)."""
    name = f"fuselab_numba_kernels.{path.stem}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)   # type: ignore[union-attr]
        except BaseException:
            del sys.modules[name]
            raise
    return module


def compile_kernel(kernel: PyKernel, dtypes: tuple[np.dtype, ...]) -> Compiled:
    """The kernel compiled for flat C-contiguous arrays of `dtypes` (its inputs, then its
    outputs). Loads Numba's disk cache when an earlier process compiled the same source."""
    path = _module_path(kernel)
    key = (kernel.source, tuple(d.str for d in dtypes))
    with _LOCK:
        if key in _COMPILED:
            return Compiled(kernel, _COMPILED[key], 0.0, path)
        t0 = time.perf_counter()
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(kernel.source)
            tmp.replace(path)     # atomic: another process never imports half a file
        module = load_module(path)
        dispatcher = getattr(module, kernel.name)
        dispatcher.compile(_signature(kernel, dtypes))
        dispatcher.disable_compile()   # a call with other types is a bug: raise, never recompile
        _COMPILED[key] = dispatcher
        return Compiled(kernel, dispatcher, time.perf_counter() - t0, path)
