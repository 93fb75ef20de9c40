"""Errors of the GPU runtime: each says what happened and what to do about it."""
from __future__ import annotations

from ..codegen.nvrtc import CompileError

__all__ = ["CompileError", "FuselabRuntimeError", "out_of_memory", "launch_failed"]


class FuselabRuntimeError(RuntimeError):
    """A failure on the GPU: out of memory, a launch the device refused, a fault."""

    def __init__(self, what: str, fix: str, cause: BaseException | None = None) -> None:
        self.what, self.fix, self.cause = what, fix, cause
        text = f"{what}\n  what to do: {fix}"
        if cause is not None:
            text += f"\n  (from {type(cause).__name__}: {str(cause).strip()[:400]})"
        super().__init__(text)


def out_of_memory(what: str, nbytes: int, cause: BaseException) -> FuselabRuntimeError:
    import cupy
    pool = cupy.get_default_memory_pool()
    free, total = cupy.cuda.runtime.memGetInfo()
    return FuselabRuntimeError(
        f"out of GPU memory allocating {_size(nbytes)} for {what} "
        f"(device: {_size(free)} free of {_size(total)}; CuPy's pool holds {_size(pool.total_bytes())}, "
        f"{_size(pool.used_bytes())} in use)",
        "delete large arrays you no longer need (and call cupy.get_default_memory_pool().free_all_blocks()), "
        "run on smaller inputs, or choose a plan that materialises fewer intermediates",
        cause)


def launch_failed(name: str, grid, block, shared_mem: int, cause: BaseException) -> FuselabRuntimeError:
    return FuselabRuntimeError(
        f"the GPU refused or failed kernel {name} (grid {tuple(grid)}, block {tuple(block)}, "
        f"{shared_mem} bytes of dynamic shared memory)",
        "this is a fuselab bug: please report the cell; run with the unfused plan meanwhile. "
        "After an illegal memory access the CUDA context is unusable: restart the kernel.",
        cause)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return f"{n} B"
