"""Plans on Dask arrays: each kernel runs per block (chunk) on Dask's schedulers, and the
cell's results are lazy Dask arrays as plain Dask code gives.

    execute(plan, inputs, runner=None) -> DaskRun (lazy outputs, how each kernel ran,
                                                 the rechunks row kernels needed)
    chunkable(plan) -> a plan whose every kernel runs per block

Modules, one job each: `xp` (Dask arrays as an array module), `layout` (which nodes run in
a block and how block axes line up), `program` (the per-block program), `states` (partial
reductions and their combine), `runners` (who runs a block's kernel), `execute` (the plan
as Dask layers), `planning` (plans every kernel of which runs per block), `stats`
(tasks, block sizes, timings). Dask is imported only when a Dask path runs.
"""
from __future__ import annotations

from .xp import is_dask_array

__all__ = ["is_dask_array", "available"]


def available() -> bool:
    try:
        import dask.array  # noqa: F401
    except ImportError:
        return False
    return True
