"""The Numba CPU backend: each kernel of a plan generated as a Python function, compiled
as a Numba `cfunc` (fastmath off, disk-cached) that runs a chunk lo..hi of its parallel
loop; one driver, the same for every kernel (driver.py, `@njit(parallel=True,
cache=True)`, compiled once per machine), runs the chunks on Numba's threads.

Generating code needs no Numba (the explorer shows it anywhere); compiling and running
do. Pointwise kernels are one parallel loop, row kernels a parallel loop over rows with
the row's passes inside, reductions per-chunk partials combined in a fixed order (a
second loop); opaque kernels run through NumPy. Semantics are NumPy's, as the CUDA
backend's are.

    available() -> (bool, reason)
    generate(plan, options) -> (PyKernel | OpaqueCall, ...)          no Numba needed
    Executable(plan, options).run(inputs) -> {name: array}           (run.py)
    measure(plan, unfused, inputs) -> Measurement                     (measure.py)
    calibrate() -> {bandwidth_Bps, launch_s, ...}                     (calibrate.py)
"""
from __future__ import annotations

import threading
from functools import lru_cache

from ..recording import registries_kept
from .codegen import generate, generate_kernel
from .emit import CodegenError
from .model import NumbaOptions, PyKernel


@lru_cache(maxsize=1)
def available() -> tuple[bool, str]:
    """(True, "") when Numba imports here, else (False, why not)."""
    try:
        with registries_kept():
            import numba  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure means "no"
        return False, f"Numba is not importable ({type(e).__name__}: {e}); pip install 'fuselab[cpu]'"
    return True, ""


_WARM_UP: list[threading.Thread] = []
_WARM_UP_LOCK = threading.Lock()


def warm_up() -> threading.Thread | None:
    """Start Numba's one-time set-up on a background thread (once per process), so that
    the first kernel does not pay it: loading its typing and lowering registries takes
    0.4-0.8 s in a new process (most of the time a kernel takes from Numba's disk cache
    otherwise), and the driver loads from its disk cache (compiled once per machine). The
    CPU's cached calibration is read too. Compiles wait for it through Numba's compiler
    lock. None without Numba."""
    if not available()[0]:
        return None
    with _WARM_UP_LOCK:
        if not _WARM_UP:
            _WARM_UP.append(threading.Thread(target=_set_up_numba, name="fuselab-numba-warm-up", daemon=True))
            _WARM_UP[0].start()
        return _WARM_UP[0]


def _set_up_numba() -> None:
    # (importing the driver imports SciPy, whose catch_warnings would make NumPy's lines
    # show again the warnings they had shown: recording.registries_kept)
    with registries_kept():
        from . import driver, pointwise, reduction, row, run, scalar  # noqa: F401 - the modules a first kernel needs
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.registry import cpu_target
        with global_compiler_lock:
            cpu_target.target_context.refresh()
        # what a first plan reads besides: the CPU's cached calibration (never measured here:
        # a measurement would compete with the user's cell for the cores) and the planner's
        # search modules
        from .calibrate import cached
        from ..plan.search import planner  # noqa: F401
        cached()


__all__ = ["available", "warm_up", "generate", "generate_kernel", "CodegenError", "NumbaOptions", "PyKernel"]
