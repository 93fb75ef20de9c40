"""Compiling generated kernels with fuselab's own NVRTC bindings, loading them through
CuPy, cached in memory by source and on disk as cubins.

Not CuPy's compile path: it appends -ftz=true to every compile, which flushes float32
subnormals to zero (NumPy keeps them), and fuselab's kernels must compute what NumPy
does. CodegenOptions.nvrtc_options names every IEEE flag explicitly.

Kernels not yet compiled are compiled together: each in its own C++ namespace inside one
translation unit (their `extern "C"` names stay distinct), modules in parallel threads.
The kernels are spread evenly over the threads, at most BATCH a module: on a machine with
many cores no thread compiles a module of several kernels while others idle (a module's
compile is serial), and on one with few cores a module of several still parses the
prelude once. Cold, NVRTC takes 0.4-0.9 s for a large kernel (a column variance with its
rows unrolled, H200 machine, 2026-12-02), which is most of a new cell's first run. The cubins are
cached on disk (FUSELAB_CACHE_DIR, by default ~/.cache/fuselab/cubin), so a new Python
process compiles nothing it has compiled before; `compile_s` reports what compiling cost
when it happened.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..codegen import nvrtc
from ..codegen.model import KernelCode
from ..codegen.nvrtc import CompileError
from ..paths import cache_root
from .errors import FuselabRuntimeError

_CACHE: dict[tuple[str, tuple[str, ...], int], "Compiled"] = {}
BATCH = 8   # kernels per NVRTC module


@dataclass(frozen=True)
class Compiled:
    name: str
    function: Any          # cupy.cuda.function.Function (its module stays referenced)
    compile_s: float       # this kernel's share of the compile that produced it
    cached: bool           # served from the in-memory cache


def compile_kernel(code: KernelCode) -> Compiled:
    return compile_kernels([code])[0]


def compile_kernels(codes: Sequence[KernelCode]) -> list[Compiled]:
    """Every kernel compiled (or fetched from the caches), in order."""
    import cupy
    dev = cupy.cuda.Device().id
    keys = [(c.source, c.nvrtc_options, dev) for c in codes]
    missing: dict[tuple, KernelCode] = {}
    for k, c in zip(keys, codes):
        if k not in _CACHE:
            missing.setdefault(k, c)
    if missing:
        threads = max(1, int(os.environ.get("FUSELAB_COMPILE_THREADS", os.cpu_count() or 1)))
        batches = _batches(list(missing.values()), -(-len(missing) // threads))
        workers = min(len(batches), threads)
        arch = _arch()

        def work(batch: list[KernelCode]) -> list[Compiled]:
            with cupy.cuda.Device(dev):
                return _compile_batch(batch, arch)
        if workers > 1:
            with ThreadPoolExecutor(workers) as pool:
                results = list(pool.map(work, batches))
        else:
            results = [work(b) for b in batches]
        for batch, compiled in zip(batches, results):
            for c, comp in zip(batch, compiled):
                _CACHE[(c.source, c.nvrtc_options, dev)] = comp
    out = []
    for k in keys:
        hit = _CACHE[k]
        out.append(hit if k in missing else Compiled(hit.name, hit.function, hit.compile_s, True))
    return out


def _arch() -> str:
    from .device import device_info
    return f"sm_{device_info().compute_capability}"


def cubin_dir() -> Path:
    return cache_root() / "cubin"


def _cubin(source: str, name: str, options: tuple[str, ...], arch: str) -> bytes:
    """The cubin of `source`, from the disk cache or compiled now (and saved)."""
    key = hashlib.sha256("\0".join((source, " ".join(options), arch, str(nvrtc.version()))).encode()).hexdigest()
    path = cubin_dir() / f"{key[:32]}.cubin"
    try:
        return path.read_bytes()
    except OSError:
        pass
    cubin = nvrtc.compile_source(source, name, options, arch=arch, want_cubin=True).cubin
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cubin-")
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        os.replace(tmp, path)
    except OSError:
        pass   # a read-only cache only costs compiles in the next process
    return cubin


def _batches(codes: list[KernelCode], per: int = BATCH) -> list[list[KernelCode]]:
    """Groups of at most `per` (and BATCH) kernels with distinct names and the same options."""
    size = max(1, min(per, BATCH))
    batches: list[list[KernelCode]] = []
    for c in codes:
        for b in batches:
            if len(b) < size and b[0].nvrtc_options == c.nvrtc_options and all(x.name != c.name for x in b):
                b.append(c)
                break
        else:
            batches.append([c])
    return batches


def _compile_batch(batch: list[KernelCode], arch: str) -> list[Compiled]:
    import cupy
    from cupy_backends.cuda.api import driver
    if len(batch) == 1:
        source = batch[0].source
    else:
        source = "\n".join(f"namespace fl_unit{i} {{\n{c.source}\n}}  // namespace fl_unit{i}"
                           for i, c in enumerate(batch))
    t0 = time.perf_counter()
    try:
        cubin = _cubin(source, batch[0].name, batch[0].nvrtc_options, arch)
    except CompileError:
        if len(batch) > 1:  # find the kernel at fault, to show its own numbered source
            return [x for c in batch for x in _compile_batch([c], arch)]
        raise
    try:
        module = cupy.cuda.function.Module()
        module.load(cubin)
        functions = [module.get_function(c.name) for c in batch]
    except Exception as e:  # noqa: BLE001 - a cubin this driver cannot load
        raise FuselabRuntimeError(f"the GPU driver could not load the compiled kernels {[c.name for c in batch]}",
                                  "delete fuselab's cubin cache (~/.cache/fuselab/cubin) and run again; "
                                  "if it persists, please report the cell", e) from None
    share = (time.perf_counter() - t0) / len(batch)
    out = []
    for c, f in zip(batch, functions):
        # more than the default 48 KB of shared memory, static and dynamic together, needs
        # an explicit opt-in (a row of 49104 bytes with its reductions' static arrays was
        # refused as an invalid argument without it: GPU fuzzer, seed 850)
        if c.shared_mem and c.shared_mem + _static_shared(f) > 48 * 1024:
            try:
                driver.funcSetAttribute(f.ptr, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, c.shared_mem)
            except Exception as e:  # noqa: BLE001
                raise FuselabRuntimeError(
                    f"kernel {c.name} needs {c.shared_mem} bytes of shared memory, which this GPU refuses",
                    "choose a plan without this row kernel (its rows are too long for shared memory here)",
                    e) from None
        out.append(Compiled(c.name, f, share, False))
    return out


def _static_shared(function) -> int:
    """Bytes of static shared memory a loaded kernel declares (its __shared__ arrays)."""
    try:
        return int(function.shared_size_bytes)
    except Exception:  # noqa: BLE001 - an older CuPy: assume the most a block may declare
        return 48 * 1024


def _log_of(e: Exception) -> str:
    fn = getattr(e, "get_message", None)
    if callable(fn):
        try:
            return str(fn())
        except Exception:  # noqa: BLE001
            pass
    return str(e)
