"""Chunk runners: "run this one-kernel plan on these block arrays". The Dask executor
knows nothing about how a kernel computes; a runner does, and travels to the workers
with the tasks (it must pickle, and keep its caches per process).

- `InterpRunner`: fuselab's reference interpreter on the block's array module (NumPy or
  CuPy), op by op inside the kernel: always available, the semantics every other runner
  is tested against.
- `NumbaRunner`: the Numba CPU backend's kernel, compiled on the worker for each block
  shape it meets (Numba's disk cache keeps it), one thread per block: Dask's workers run
  the blocks in parallel. Used for NumPy chunks wherever that backend is installed.
- `CudaRunner`: the kernel's generated CUDA, compiled on the worker (CuPy caches the
  compiled code by its source) for each block shape it meets.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

import numpy as np

from ..interp import run_plan
from ..plan.model import Plan
from .states import array_module


class ChunkRunner(Protocol):
    name: str

    def run(self, plan: Plan, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The plan's outputs by name, computed from `inputs` (arrays of one block)."""
        ...


@dataclass(frozen=True)
class InterpRunner:
    name: str = "numpy"
    description: str = "the NumPy interpreter, op by op inside each kernel"

    def run(self, plan: Plan, inputs: Mapping[str, Any]) -> dict[str, Any]:
        xp = array_module(next(iter(inputs.values()))) if inputs else np
        return run_plan(plan, inputs, xp)


@dataclass(frozen=True)
class CudaRunner:
    """Generated CUDA per block; executables are cached per process by program."""

    options: Any = None
    name: str = "cuda"
    description: str = "fuselab's generated CUDA kernels, compiled on each worker"

    def run(self, plan: Plan, inputs: Mapping[str, Any]) -> dict[str, Any]:
        from ..runtime.launch import Executable
        exe = _EXECUTABLES.get((self.name, id(plan)))
        if exe is None or exe[0] is not plan:
            exe = (plan, Executable(plan, None, self.options))
            _remember((self.name, id(plan)), exe)
        return exe[1].run(inputs)


@dataclass(frozen=True)
class NumbaRunner:
    """The Numba CPU backend's compiled kernels, single-threaded per block."""

    name: str = "numba"
    description: str = "fuselab's Numba CPU kernels, compiled on each worker (one thread per block)"

    def run(self, plan: Plan, inputs: Mapping[str, Any]) -> dict[str, Any]:
        from ..numba_backend.model import NumbaOptions
        from ..numba_backend.run import Executable
        exe = _EXECUTABLES.get((self.name, id(plan)))
        if exe is None or exe[0] is not plan:
            exe = (plan, Executable(plan, NumbaOptions(parallel=False)))
            _remember((self.name, id(plan)), exe)
        return exe[1].run(inputs)


# by (runner, plan): one process may run a plan with two runners (a session's block check)
_EXECUTABLES: OrderedDict[tuple[str, int], tuple[Plan, Any]] = OrderedDict()


def _remember(key: tuple[str, int], exe: tuple[Plan, Any]) -> None:
    _EXECUTABLES[key] = exe
    if len(_EXECUTABLES) > 256:
        _EXECUTABLES.popitem(last=False)


def numba_status() -> tuple[bool, str]:
    """Can blocks of NumPy chunks run the Numba CPU backend here? (yes, or why not)"""
    try:
        from ..numba_backend import available
    except ImportError:
        return False, "this fuselab has no Numba CPU backend"
    return available()


def default_runner(chunks: str, options: Any = None) -> ChunkRunner:
    """The runner for chunks of `chunks` ("numpy" or "cupy"): generated CUDA for CuPy
    chunks; for NumPy chunks the Numba CPU backend where it exists, else the interpreter."""
    if chunks == "cupy":
        return CudaRunner(options)
    ok, why = numba_status()
    return NumbaRunner() if ok else InterpRunner(description=f"the NumPy interpreter, op by op inside each "
                                                              f"kernel ({why})")
