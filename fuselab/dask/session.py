"""The Session's Dask path: run the current plan lazily, and time it against plain Dask."""
from __future__ import annotations

from typing import Any

from ..runtime.verify import Check
from .execute import DaskRun, chunk_kind, execute
from .runners import InterpRunner, default_runner
from .stats import DaskMeasurement, measure as measure_both, plain_dask

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
    note = f"lazy Dask arrays; each block runs {getattr(result, 'runner', '')}: " + \
        getattr(runner_for(session), "description", "")
    return result.outputs, result, Check(True, "", (note,))


def measure(session: Any, repeats: int | None = None) -> DaskMeasurement:
    fused = session.outputs if session.outputs is not None else session.execute()
    plain = plain_dask(session.graph, session.traced.inputs)
    return measure_both(fused, plain, min(repeats or MAX_REPEATS, MAX_REPEATS))
