"""What the explorer shows of a Dask run, and its timing against plain Dask on the same
scheduler: the chunk grid of each array, tasks after Dask's own optimisation (fused plan
vs the same cell as plain Dask code), bytes per block, wall times of `.compute()`.

Timing computes both versions several times (median): the fused plan's lazy outputs, and
the cell's graph evaluated with Dask's own operations (exactly what the cell builds when
run without %%fuse). The computed results are compared before a speedup is shown.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..interp import eval_node
from ..ir import Graph
from ..runtime.verify import Check
from .execute import lazy_nodes
from .xp import dask_xp, is_dask_array


@dataclass(frozen=True)
class Grid:
    """An array's blocks: shape, block shape (the largest), blocks per axis, bytes per block."""

    name: str
    shape: tuple[int, ...]
    block: tuple[int, ...]
    blocks: tuple[int, ...]
    block_bytes: int

    def __str__(self) -> str:
        grid = "x".join(map(str, self.blocks)) or "1"
        return (f"{self.name}: {_shape(self.shape)} in {grid} blocks of {_shape(self.block)} "
                f"({_bytes(self.block_bytes)} each)")


@dataclass(frozen=True)
class DaskMeasurement:
    scheduler: str
    fused_s: float            # median wall time of computing the fused plan's outputs
    plain_s: float            # the same for the cell as plain Dask code
    fused_tasks: int          # tasks after Dask's optimisation
    plain_tasks: int
    repeats: int
    check: Check              # fused results against plain Dask's

    @property
    def speedup(self) -> float:
        return self.plain_s / self.fused_s if self.fused_s > 0 else float("inf")

    def __str__(self) -> str:
        return (f"{self.scheduler}: fused {self.fused_s * 1e3:.1f} ms ({self.fused_tasks} tasks), plain Dask "
                f"{self.plain_s * 1e3:.1f} ms ({self.plain_tasks} tasks): {self.speedup:.2f}x, median of "
                f"{self.repeats}; results {'equal' if self.check.ok else 'DIFFER: ' + self.check.worst}")


def _shape(s: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, s)) + ")"


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def grid(name: str, x: Any) -> Grid:
    block = tuple(max(c, default=0) for c in x.chunks)
    return Grid(name, tuple(x.shape), block, tuple(x.numblocks), int(np.prod(block, dtype=np.int64)) * x.dtype.itemsize)


def grids(arrays: Mapping[str, Any]) -> tuple[Grid, ...]:
    return tuple(grid(k, v) for k, v in arrays.items() if is_dask_array(v))


def task_count(arrays: Sequence[Any]) -> int:
    """Tasks Dask runs for these arrays, after its own optimisation (blockwise fusion):
    neither blocks already computed (persisted in this process) nor renamed keys count."""
    import dask
    lazy = [a for a in arrays if is_dask_array(a)]
    if not lazy:
        return 0
    not_tasks = _data_and_alias_types()
    tasks: set = set()
    for o in dask.optimize(*lazy):
        tasks.update(k for k, v in o.__dask_graph__().items() if not isinstance(v, not_tasks))
    return len(tasks)


def _data_and_alias_types() -> tuple[type, ...]:
    try:  # Dask's task spec (2024.12 on); older graphs hold plain tuples and values
        from dask._task_spec import Alias, DataNode
    except ImportError:
        return ()
    return (Alias, DataNode)


def plain_dask(graph: Graph, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The cell as plain Dask code builds it: each node by Dask's own operation."""
    lazy = lazy_nodes(graph, inputs)
    env: list[Any] = [None] * len(graph.nodes)
    xp = dask_xp()
    with np.errstate(all="ignore"):
        for i, n in enumerate(graph.nodes):
            env[i] = inputs[n.args["name"]] if n.op == "input" else \
                eval_node(xp if lazy[i] else np, n, [env[j] for j in n.inputs])
    return {name: env[i] for name, i in graph.outputs}


def scheduler_name() -> str:
    """The scheduler `.compute()` uses here: a distributed client's cluster, or Dask's default."""
    try:
        from distributed import default_client
        c = default_client()
        workers = c.scheduler_info().get("workers", {})
        threads = sum(w.get("nthreads", 0) for w in workers.values())
        return f"distributed ({len(workers)} workers, {threads} threads)"
    except (ImportError, ValueError):
        import dask
        return f"dask {dask.config.get('scheduler', None) or 'threads'} scheduler"


def _timed(outs: Sequence[Any]) -> float:
    """Wall time to compute `outs` where they live: persisted on the cluster and waited
    for (nothing comes back to this process), or computed by the local scheduler."""
    import dask
    t0 = time.perf_counter()
    done = dask.persist(*outs)
    try:
        from distributed import default_client, wait
        default_client()
        wait(done)
    except (ImportError, ValueError):
        pass  # the local schedulers persist by computing
    return time.perf_counter() - t0


def check_lazily(got: Mapping[str, Any], want: Mapping[str, Any]) -> Check:
    """`got` against `want` output by output, within verify's tolerances, computed where
    the arrays live: only the count of elements outside it and the worst error come back."""
    import dask
    import dask.array as da

    from ..runtime.verify import OutputCheck, _rtol_for
    stats = {}
    for k, w in want.items():
        g = got[k]
        if g.shape != w.shape or g.dtype != w.dtype:
            stats[k] = None
            continue
        if w.dtype.kind != "f":
            bad = g != w
            stats[k] = (bad.sum(), da.zeros((), np.float64))
            continue
        rt = _rtol_for(w.dtype, None)
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        finite = da.isfinite(w64)
        scale = da.maximum(da.where(finite, abs(w64), 0.0).max(), float(np.finfo(w.dtype).tiny))
        err = abs(g64 - w64) / (rt * scale + rt * abs(w64))
        same = (da.isnan(g64) & da.isnan(w64)) | (~finite & (g64 == w64))
        err = da.where(same, 0.0, da.where(da.isnan(err), np.inf, err))
        stats[k] = ((err > 1).sum(), err.max() if err.size else da.zeros((), np.float64))
    values = dict(zip(stats, dask.compute(*[v if v is not None else 0 for v in stats.values()])))
    checks = []
    for k, v in values.items():
        if stats[k] is None:
            checks.append(OutputCheck(k, False, float("inf"), f"{k}: got {got[k].dtype}{list(got[k].shape)}, "
                                                              f"expected {want[k].dtype}{list(want[k].shape)}"))
            continue
        n, worst = int(v[0]), float(v[1])
        checks.append(OutputCheck(k, n == 0, worst if n else 0.0,
                                  f"{k}: {'within tolerance' if n == 0 else f'{n} elements outside the tolerance'}"))
    bad = [c for c in checks if not c.ok]
    return Check(not bad, bad[0].message if bad else "", tuple(c.message for c in checks), tuple(checks))


def measure(fused: Mapping[str, Any], plain: Mapping[str, Any], repeats: int = 3) -> DaskMeasurement:
    """Compute both on the current scheduler, alternating, `repeats` times each; then
    compare the results where they live."""
    names = [k for k in fused if is_dask_array(fused[k])]
    f_outs, p_outs = [fused[k] for k in names], [plain[k] for k in names]
    ft, pt = [], []
    for _ in range(max(1, repeats)):
        ft.append(_timed(f_outs))
        pt.append(_timed(p_outs))
    check = check_lazily(dict(zip(names, f_outs)), dict(zip(names, p_outs)))
    return DaskMeasurement(scheduler_name(), statistics.median(ft), statistics.median(pt),
                           task_count(f_outs), task_count(p_outs), max(1, repeats), check)
