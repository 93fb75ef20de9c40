"""Software prefetches: statements that ask for the cache lines of a stream of elements
before the loop reaches them.

A loop that computes as much as it moves (GELU's tanh, a softmax's exp) keeps few loads
in flight: the out-of-order window fills with arithmetic, and the hardware prefetchers
(which on a virtual machine's CPU may stay a page behind, or be off) do not make up for
it, so the time per element became the memory's plus the arithmetic's. GELU over 64 MiB
of float32 on the project's 2-core Xeon (2026-12-06, both threads): 10.0 ms, the copy of
as many bytes 5.1 ms; prefetching 2 KiB ahead of a flat loop run in pieces of 1 KiB:
6.2 ms. Memory-bound loops gain too (an 8-op float32 chain 5.9 -> 5.4 ms, float16
6.5 -> 5.5 ms), where the hardware alone had left gaps. A prefetch changes no result and
never faults (past an array's end included).
"""
from __future__ import annotations

import numpy as np

from .pytypes import storage

LINE = 64               # bytes of a cache line
PREFETCH_ARRAYS = 4     # streams prefetched at most in one loop (the others are left to the hardware)
RUN = 256               # iterations of a flat loop between two rounds of prefetches
AHEAD = 512             # iterations ahead of the current run that its round prefetches


def line_prefetches(fn: str, array: str, base: str, dtype: np.dtype, span: int) -> list[str]:
    """`fn(array, ...)` (fl_prefetch, or fl_prefetchw to fetch lines for writing) of every
    cache line of elements base .. base + span - 1 of `array` (base a Python expression)."""
    step = max(1, LINE // storage(dtype).itemsize)      # elements a line
    return [f"{fn}({array}, ix({base} + {j}))" for j in range(0, span, step)]
