"""What the Numba code generator hands to the compiler and the runner: plain, frozen
descriptions of kernels."""
from __future__ import annotations

from dataclasses import dataclass

from ..plan.model import Template

FP16_MODES = ("numpy", "fast")


@dataclass(frozen=True)
class NumbaOptions:
    """How to generate and compile the CPU kernels.

    parallel: compile with `parallel=True` (prange loops run on every core). Off, the same
        source compiles in about a third of the time and runs on one core: the bulk
        differential tests use that.
    fp16_math: as CodegenOptions.fp16_math: "numpy" rounds every float16 op to half (equal
        to NumPy), "fast" keeps float32 inside a kernel and rounds what it stores.
    split: elements one chunk of a split reduction folds before its partial is combined
        with the others (in chunk order, so results do not depend on the thread count).
    tile: outputs a column reduction accumulates at once (the kept axis is contiguous).
    """

    parallel: bool = True
    fp16_math: str = "numpy"
    split: int = 8192
    tile: int = 256

    def __post_init__(self) -> None:
        if self.fp16_math not in FP16_MODES:
            raise ValueError(f"fp16_math must be one of {FP16_MODES}, not {self.fp16_math!r}")

    def decorator(self) -> str:
        return (f"@njit(parallel={self.parallel}, fastmath=False, cache=True, error_model=\"numpy\", "
                "nogil=True)")


@dataclass(frozen=True)
class PyKernel:
    """A generated kernel: one Python module whose function `name` takes the kernel's
    input arrays then its output arrays, all flat and C-contiguous (float16 as uint16 bits),
    and fills the outputs."""

    index: int                  # position in the plan
    name: str                   # the function name, e.g. k2_exp_mul_sum
    source: str                 # the whole module
    template: Template
    inputs: tuple[int, ...]     # node ids, in parameter order
    outputs: tuple[int, ...]
    notes: tuple[str, ...] = ()
