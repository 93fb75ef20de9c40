"""The Numba CPU backend: each kernel of a plan generated as a Python function and
compiled with `numba.njit(parallel=True, fastmath=False, cache=True)`.

Generating code needs no Numba (the explorer shows it anywhere); compiling and running
do. Pointwise kernels are one prange loop, row kernels a prange loop over rows with the
row's passes inside, reductions per-chunk partials combined in a fixed order; opaque
kernels run through NumPy. Semantics are NumPy's, as the CUDA backend's are.

    available() -> (bool, reason)
    generate(plan, options) -> (PyKernel | OpaqueCall, ...)          no Numba needed
    Executable(plan, options).run(inputs) -> {name: array}           (run.py)
    measure(plan, unfused, inputs) -> Measurement                     (measure.py)
    calibrate() -> {bandwidth_Bps, launch_s, ...}                     (calibrate.py)
"""
from __future__ import annotations

from functools import lru_cache

from .codegen import generate, generate_kernel
from .emit import CodegenError
from .model import NumbaOptions, PyKernel


@lru_cache(maxsize=1)
def available() -> tuple[bool, str]:
    """(True, "") when Numba imports here, else (False, why not)."""
    try:
        import numba  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure means "no"
        return False, f"Numba is not importable ({type(e).__name__}: {e}); pip install 'fuselab[cpu]'"
    return True, ""


__all__ = ["available", "generate", "generate_kernel", "CodegenError", "NumbaOptions", "PyKernel"]
