"""What the Numba code generator hands to the compiler and the runner: plain, frozen
descriptions of kernels."""
from __future__ import annotations

from dataclasses import dataclass

from ..plan.model import Template

FP16_MODES = ("numpy", "fast")


@dataclass(frozen=True)
class NumbaOptions:
    """How to generate and compile the CPU kernels.

    parallel: run each kernel's parallel loops on every core (driver.drive_parallel).
        Off, the same compiled kernel runs its loops on the calling thread
        (driver.drive_serial): the bulk differential tests and Dask's blocks use that. The
        generated source and its compile do not depend on it.
    fp16_math: as CodegenOptions.fp16_math: "numpy" rounds every float16 op to half (equal
        to NumPy), "fast" keeps float32 inside a kernel and rounds what it stores.
    split: elements one chunk of a split reduction folds before its partial is combined
        with the others (in chunk order, so results do not depend on the thread count).
    tile: outputs a column reduction accumulates at once (the kept axis is contiguous).
    threads: the threads each parallel loop is cut into chunks for (0: Numba's thread count
        when parallel, one chunk when not). A serial run with more meets the chunk bounds
        (iterations lo..hi-1 with lo > 0) that parallel runs on a many-core machine meet:
        the differential fuzzer's way to test them on one thread.
    wide_vectors: on CPUs with AVX-512, a kernel that computes float32 exp, expm1 or tanh
        asks LLVM for 512-bit vectors (scalar.fl_wide_vectors; LLVM's own choice there is
        256, which memory-bound kernels keep: context._WIDE_HELPERS). Off, LLVM chooses.
        The results are the same either way; the speed of compute-bound loops is not.
    """

    parallel: bool = True
    fp16_math: str = "numpy"
    split: int = 8192
    tile: int = 256
    threads: int = 0
    wide_vectors: bool = True

    def __post_init__(self) -> None:
        if self.fp16_math not in FP16_MODES:
            raise ValueError(f"fp16_math must be one of {FP16_MODES}, not {self.fp16_math!r}")

    def decorator(self) -> str:
        """The generated kernel's decorator: a C callback of driver.KERNEL_SIGNATURE,
        compiled without Numba's parfor pass and cached on disk."""
        return '@cfunc("void(int64, int64, int64, CPointer(voidptr))", fastmath=False, cache=True, error_model="numpy")'


@dataclass(frozen=True)
class PyKernel:
    """A generated kernel: one Python module whose function `name` is a Numba `cfunc` of
    (phase, lo, hi, args) that runs iterations lo..hi-1 of its parallel loop number
    `phase` (driver.py runs them in chunks). `args` holds the data addresses of the
    kernel's input arrays, then its output arrays, all flat and C-contiguous (float16 as
    uint16 bits), then its scratch arrays (a split reduction's partials, which the
    phases share)."""

    index: int                  # position in the plan
    name: str                   # the function name, e.g. k2_exp_mul_sum
    source: str                 # the whole module
    template: Template
    inputs: tuple[int, ...]     # node ids, in parameter order
    outputs: tuple[int, ...]
    notes: tuple[str, ...] = ()
    phases: tuple[int, ...] = ()             # iterations of each parallel loop, in run order
    scratch: tuple[tuple[str, int], ...] = ()   # (NumPy dtype name, length) of each scratch array


@dataclass(frozen=True)
class NumpyKernel:
    """A fused kernel the backend does not compile: its nodes run through NumPy, one after
    another, as the reference interpreter runs them (run.Executable._numpy). `reason`
    says why (numpy_reason in codegen.py: a dtype the generated code has no type for, or
    a zero-size array)."""

    index: int
    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    nodes: tuple[int, ...]
    reason: str
    template: Template = Template.OPAQUE
