"""The Session's Dask path: run the current plan lazily, and time it against plain Dask."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..runtime.verify import Check
from .execute import DaskRun, KernelRun, Rechunk, chunk_kind, execute
from .runners import InterpRunner, default_runner
from .stats import DaskMeasurement, Grid, grids, measure as measure_both, plain_dask, task_count

# A Dask measurement computes the whole cell twice per repeat: a few repeats, not 20.
MAX_REPEATS = 3


def runner_for(session: Any):
    """Blocks of NumPy chunks run on the CPU runner; of CuPy chunks, the generated CUDA
    (`--backend cpu`: the interpreter on the chunks' own array module)."""
    if session.requested_backend == "cpu":
        return InterpRunner()
    return default_runner(chunk_kind(session.traced.inputs), session.codegen_options)


def run(session: Any) -> tuple[dict[str, Any], DaskRun, Check]:
    known = session.traced.break_values()
    result = execute(session.plan, session.traced.inputs, runner_for(session), known=known)
    note = f"lazy Dask arrays; results are checked against plain Dask when timed ({result.runner} runner)"
    return result.outputs, result, Check(True, "", (note,))


def measure(session: Any, repeats: int | None = None) -> DaskMeasurement:
    fused = session.outputs if session.outputs is not None else session.execute()
    plain = plain_dask(session.graph, session.traced.inputs)
    return measure_both(fused, plain, min(repeats or MAX_REPEATS, MAX_REPEATS))


@dataclass(frozen=True)
class DaskInfo:
    """What the explorer shows of a Dask run: block grids of the inputs and results, how
    each kernel ran, the rechunks row kernels needed (with what they move), and the tasks
    Dask runs for the results, fused plan against the cell as plain Dask (both after
    Dask's own optimisation)."""

    inputs: tuple[Grid, ...]
    outputs: tuple[Grid, ...]
    kernels: tuple[KernelRun, ...]
    rechunks: tuple[Rechunk, ...]
    fused_tasks: int
    plain_tasks: int
    runner: str

    def lines(self) -> list[str]:
        out = [f"Dask blocks run {self.runner}; tasks: {self.fused_tasks} fused, {self.plain_tasks} as plain Dask"]
        out += [f"  in  {g}" for g in self.inputs] + [f"  out {g}" for g in self.outputs]
        out += [f"  k{k.index} {k.name}: {k.how}" + (f", {'x'.join(map(str, k.grid))} blocks" if k.grid else "")
                for k in self.kernels]
        out += [f"  rechunk {r}" for r in self.rechunks]
        return out


def info(session: Any) -> DaskInfo | None:
    run_ = session.dask_run
    if run_ is None:
        return None
    outs = run_.outputs
    plain = plain_dask(session.graph, session.traced.inputs)
    return DaskInfo(grids(session.traced.inputs), grids(outs), run_.kernels, run_.rechunks,
                    task_count(list(outs.values())), task_count([plain[k] for k in outs]),
                    runner_for(session).description)
