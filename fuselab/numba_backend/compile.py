"""Compiling generated kernels: each source becomes a module file in the cache folder
(named by its hash, so Numba's on-disk cache, `cfunc(..., cache=True)`, finds it again
in a later process) and is imported, which compiles its kernel (a `cfunc`: no dispatch on
argument types, its arrays' types are in its source) or loads it from that cache. An
in-process table keyed by the source makes a second compile of the same kernel free.
The kernels run through driver.py's one parallel driver, compiled once per machine.

A kernel compiled in this process also leaves its machine code in fuselab's own object
cache (native/, next to the modules: the object file Numba made, and the symbols it
needs from the process), and a later process loads that instead (`_load_native`): one
object file added to Numba's JIT and the address of the kernel's C entry point, which is
all the driver calls, in about a millisecond. Numba's own disk cache, loaded by importing
the module, builds a CFunc around it: it parses the library's LLVM bitcode, kept for
inlining into other functions (fuselab never links a kernel into anything), and sets up
its cache locator (2026-12-04, 2-core AMD EPYC: 11-34 ms for a softmax kernel, 9.7 ms on
the H200 machine's Xeon, most of it that bitcode). The object cache is keyed by the
module's source (which names scalar.py's hash), Numba's, llvmlite's and Python's versions
and the CPU Numba compiles for; an object whose undefined symbols the process does not
all have is not loaded (the kernel then comes from Numba's cache, as before).

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
# A kernel over fewer bytes (inputs and outputs) runs on the calling thread: waking
# Numba's threads costs more than the work (softmax over 8 rows of 512: 30 us in
# parallel, 24 serial; a chain over 256 KB 36 and 34; from 1 MB on the threads win,
# 198 against 348 us for 256 rows of 1024; 2-core AMD EPYC, loaded, 2026-12-05), and on
# a busy machine a parallel launch waits for threads the OS has not scheduled
SERIAL_BELOW_BYTES = 256 * 1024
_COMPILED: dict[str, Any] = {}


@dataclass(frozen=True)
class Compiled:
    kernel: PyKernel
    cfunc: Any                  # the kernel: a numba CFunc (its address, inspect_llvm, cache_hits), or a
                                # NativeKernel from fuselab's object cache (its address, cache_hits)
    compile_s: float            # wall time to get it (0 when this process had it already)
    path: Path

    def fn(self, *arrays: np.ndarray, parallel: bool = True, threads: int = 0) -> None:
        """Run the kernel on flat C-contiguous arrays: its inputs, then its outputs (the
        scratch arrays are allocated here); each loop in chunks for `threads` threads
        (0: Numba's, or one chunk when serial; NumbaOptions.threads)."""
        scratch = [np.empty(n, dt) for dt, n in self.kernel.scratch]
        args = np.array([a.ctypes.data for a in (*arrays, *scratch)] or [0], np.int64)
        sizes = np.array(self.kernel.phases, np.int64)
        if parallel and not threads and sum(a.nbytes for a in arrays) < SERIAL_BELOW_BYTES:
            parallel = False   # (the same chunks' results: one chunk a phase changes no result)
        chunks = driver.chunk_counts(sizes, threads or (numba.get_num_threads() if parallel else 1))
        run = driver.drive_parallel if parallel else driver.drive_serial
        run(self.cfunc.address, sizes, chunks, args.ctypes.data)


@dataclass(frozen=True)
class NativeKernel:
    """A kernel loaded from fuselab's object cache: the address of its C entry point (the
    `cfunc` wrapper Numba compiled, driver.KERNEL_SIGNATURE), which is what the driver
    calls. Numba shows no IR for it (nor for a kernel from Numba's own disk cache)."""
    address: int
    symbol: str
    path: Path
    cache_hits: int = 1          # as a CFunc loaded from Numba's disk cache counts it
    _library: Any = None         # (no Numba CodeLibrary: nothing to inspect)

    def inspect_llvm(self) -> str:
        raise RuntimeError(f"{self.symbol} was loaded from fuselab's object cache ({self.path}): no LLVM IR; "
                           "compile it afresh (an empty FUSELAB_CACHE_DIR) to see it")


_NATIVE_MAGIC = b"fuselab-native-1\n"
_NATIVE: dict[str, int] = {}       # entry point symbol -> its address, objects loaded in this process
_TARGET_TAG: list[str] = []


def _target_tag() -> str:
    """What machine code depends on besides the source: Numba's, llvmlite's and Python's
    versions and the CPU Numba compiles for (its codegen's triple, CPU name, features)."""
    if not _TARGET_TAG:
        import llvmlite
        from numba.core.registry import cpu_target
        magic = cpu_target.target_context.codegen().magic_tuple()
        key = repr((numba.__version__, llvmlite.__version__, sys.implementation.cache_tag, sys.platform, magic))
        _TARGET_TAG.append(hashlib.sha256(key.encode()).hexdigest()[:16])
    return _TARGET_TAG[0]


def _native_path(path: Path) -> Path:
    return path.parent / "native" / f"{path.stem}.{_target_tag()}.o"


def _save_native(path: Path, fn: Any) -> None:
    """Keep the machine code of a kernel this process compiled (a CFunc whose library
    still holds its object file: not one Numba loaded from its own cache): the object
    file, its entry point's symbol and the symbols it takes from the process. Best effort:
    without it a later process loads the kernel from Numba's cache."""
    try:
        lib = fn._library
        _name, kind, (obj, _bitcode) = lib.serialize_using_object_code()
        module = lib._final_module
        undefined = sorted({f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm.")}
                           | {g.name for g in module.global_variables if g.is_declaration})
        symbol = fn._wrapper_name
    except Exception:   # noqa: BLE001 - Numba's internals moved, or the object is gone
        return
    if kind != "object" or not symbol or any(not n or "\n" in n or " " in n for n in (symbol, *undefined)):
        return
    out = _native_path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        digest = hashlib.sha256(obj).hexdigest().encode()
        tmp.write_bytes(_NATIVE_MAGIC + digest + b"\n" + symbol.encode() + b"\n" + " ".join(undefined).encode() + b"\n"
                        + obj)
        tmp.replace(out)      # atomic: another process never reads half a file
    except OSError:
        pass


def _load_native(path: Path) -> NativeKernel | None:
    """The kernel of module `path` from fuselab's object cache, or None (not there, or not
    loadable here: then Numba's cache or a compile gives it)."""
    try:
        out = _native_path(path)
        data = out.read_bytes()
    except (OSError, ValueError):
        return None
    if not data.startswith(_NATIVE_MAGIC):
        return None
    try:
        digest, symbol, undefined, obj = data[len(_NATIVE_MAGIC):].split(b"\n", 3)
        symbol_s = symbol.decode()
        needed = undefined.decode().split()
    except (ValueError, UnicodeDecodeError):
        return None
    # a damaged object file could abort the process inside LLVM's loader: only whole ones
    if hashlib.sha256(obj).hexdigest().encode() != digest:
        return None
    if symbol_s in _NATIVE:
        return NativeKernel(_NATIVE[symbol_s], symbol_s, out)
    import llvmlite.binding as ll
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target
    with global_compiler_lock:
        ctx = cpu_target.target_context
        ctx.refresh()           # Numba's runtime (NRT) and C helpers registered with the JIT
        # an undefined symbol the JIT cannot resolve is a fatal LLVM error, not an exception
        if any(ll.address_of_symbol(n) is None for n in needed):
            return None
        try:
            engine = ctx.codegen()._engine._ee
            engine.add_object_file(ll.ObjectFileRef.from_data(obj))
            engine.finalize_object()
            address = engine.get_function_address(symbol_s)
        except Exception:   # noqa: BLE001 - Numba's internals moved: its cache then
            return None
    if not address:
        return None
    _NATIVE[symbol_s] = address
    return NativeKernel(address, symbol_s, out)


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
        fn = _load_native(path) if path.exists() else None
        if fn is None:
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(kernel.source, encoding="utf-8")   # (a cell's `β` in its comments; Python reads UTF-8)
                tmp.replace(path)     # atomic: another process never imports half a file
            fn = getattr(load_module(path), kernel.name)
            if not fn.cache_hits:     # compiled here: its object file is still in its library
                _save_native(path, fn)
        _COMPILED[kernel.source] = fn
        return Compiled(kernel, fn, time.perf_counter() - t0, path)
