"""The one parallel driver that runs every generated kernel (importing this module
imports Numba, and compiles the driver or loads it from Numba's disk cache).

A kernel is compiled as a Numba `cfunc` of KERNEL_SIGNATURE, `(phase, lo, hi, args)`:
it runs iterations lo..hi-1 of its parallel loop number `phase` (a reduction split in
chunks has two: the chunks' partials, then their combine), reading the addresses of its
arrays from `args`. The kernel itself is compiled without Numba's parfor pass, which
roughly doubles a compile; the parallelism is here, in `drive_parallel`, a
`@njit(parallel=True, cache=True)` function whose prange runs a loop's chunks on Numba's
threads and calls the kernel through its address. Its types are the same for every
kernel, so it is compiled once per machine (then loaded from the disk cache) and never
again per kernel; `drive_serial` runs the chunks in order on the calling thread (the
`parallel=False` option: the bulk tests, Dask's blocks).

The iterations of a phase are independent (they were a prange's), so how they are cut
into chunks changes no result: reductions keep their partials per fixed-size chunk of
the reduced elements (reduction.py), combined in order in the next phase.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

# a kernel: void(phase, lo, hi, args), args an array of its arrays' data pointers
KERNEL_SIGNATURE = "void(int64, int64, int64, CPointer(voidptr))"

_I64 = ir.IntType(64)
_VOIDPTR = ir.IntType(8).as_pointer()
_KERNEL_FN = ir.FunctionType(ir.VoidType(), [_I64, _I64, _I64, _VOIDPTR.as_pointer()])


@intrinsic
def _call_kernel(typingctx, fn, phase, lo, hi, args):
    """Call the kernel at address `fn` (int64) with (phase, lo, hi, args address)."""
    if not all(isinstance(t, types.Integer) for t in (fn, phase, lo, hi, args)):
        return None

    def codegen(context, builder, signature, a):
        fn_ptr = builder.inttoptr(a[0], _KERNEL_FN.as_pointer())
        builder.call(fn_ptr, [a[1], a[2], a[3], builder.inttoptr(a[4], _VOIDPTR.as_pointer())])
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64, types.int64, types.int64), codegen


_DRIVE = "void(int64, int64[::1], int64[::1], int64)"


@njit(_DRIVE, parallel=True, cache=True, nogil=True)
def drive_parallel(fn, sizes, chunks, args):
    """Run phase p's sizes[p] iterations in chunks[p] chunks on Numba's threads, phase
    after phase (a phase reads what the previous one wrote)."""
    for p in range(sizes.shape[0]):
        n = sizes[p]
        m = chunks[p]
        for c in prange(m):
            _call_kernel(fn, p, n * c // m, n * (c + 1) // m, args)


@njit(_DRIVE, cache=True, nogil=True)
def drive_serial(fn, sizes, chunks, args):
    """drive_parallel's chunks, one after the other on the calling thread."""
    for p in range(sizes.shape[0]):
        n = sizes[p]
        m = chunks[p]
        for c in range(m):
            _call_kernel(fn, p, n * c // m, n * (c + 1) // m, args)


def chunk_counts(sizes: np.ndarray, threads: int) -> np.ndarray:
    """Chunks per phase: one per thread (Numba's prange gives each thread an equal share
    of them, as it did the kernel's own prange), never more than the iterations."""
    return np.minimum(sizes, max(threads, 1)).astype(np.int64)
