"""Compiling generated kernels: each source becomes a module file in the cache folder
(named by its hash, so Numba's on-disk cache, `cfunc(..., cache=True)`, finds it again
in a later process) and is imported, which compiles its kernel (a `cfunc`: no dispatch on
argument types, its arrays' types are in its source) or loads it from that cache. An
in-process table keyed by the source makes a second compile of the same kernel free.
The kernels run through driver.py's one parallel driver, compiled once per machine.

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
from typing import Any

import numba
import numpy as np

from . import driver
from ..paths import cache_root
from .model import PyKernel

_LOCK = threading.Lock()
_COMPILED: dict[str, Any] = {}


@dataclass(frozen=True)
class Compiled:
    kernel: PyKernel
    cfunc: Any                  # the kernel: a numba CFunc (its address, inspect_llvm, cache_hits)
    compile_s: float            # wall time to get it (0 when this process had it already)
    path: Path

    def fn(self, *arrays: np.ndarray, parallel: bool = True) -> None:
        """Run the kernel on flat C-contiguous arrays: its inputs, then its outputs (the
        scratch arrays are allocated here)."""
        scratch = [np.empty(n, dt) for dt, n in self.kernel.scratch]
        args = np.array([a.ctypes.data for a in (*arrays, *scratch)] or [0], np.int64)
        sizes = np.array(self.kernel.phases, np.int64)
        chunks = driver.chunk_counts(sizes, numba.get_num_threads() if parallel else 1)
        run = driver.drive_parallel if parallel else driver.drive_serial
        run(self.cfunc.address, sizes, chunks, args.ctypes.data)


def cache_dir() -> Path:
    """Where generated modules (and Numba's cache of them, in __pycache__) live."""
    return cache_root() / "numba"


def _module_path(kernel: PyKernel) -> Path:
    digest = hashlib.sha256(kernel.source.encode()).hexdigest()[:20]
    return cache_dir() / f"{kernel.name}_{digest}.py"


def load_module(path: Path) -> Any:
    """The generated module at `path` (in the cache folder), imported once a process. It is
    in sys.modules before its code runs and before anything in it compiles: Numba's disk
    cache names the module of a compiled function's globals and imports it by that name
    in a later process (one it could not find was pickled as '<dynamic>', and loading it
    failed with ModuleNotFoundError: the calibration probes, on the GPU machine's CPU).
    A cfunc compiles (or loads from the disk cache) while its module runs."""
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


def compile_kernel(kernel: PyKernel) -> Compiled:
    """The kernel compiled (its arrays' types are in its source). Loads Numba's disk cache
    when an earlier process compiled the same source."""
    path = _module_path(kernel)
    with _LOCK:
        if kernel.source in _COMPILED:
            return Compiled(kernel, _COMPILED[kernel.source], 0.0, path)
        t0 = time.perf_counter()
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(kernel.source, encoding="utf-8")   # (a cell's `β` in its comments; Python reads UTF-8)
            tmp.replace(path)     # atomic: another process never imports half a file
        fn = getattr(load_module(path), kernel.name)
        _COMPILED[kernel.source] = fn
        return Compiled(kernel, fn, time.perf_counter() - t0, path)
