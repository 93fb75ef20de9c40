"""Programs the GPU fuzzer found failing, kept as golden tests: replayed exactly (seed,
target, SM count) on the emulator in CI and on the GPU in the GPU tests. Each record says
when it was found and how it failed (`regressions-gpu.json`); the fix is in the git log."""
from __future__ import annotations

import json
from pathlib import Path

from .driver import Spec, build_program
from .generator import Program, Target

HERE = Path(__file__).resolve().parent
GPU_REGRESSIONS = HERE / "regressions-gpu.json"


def gpu_regressions() -> list[tuple[dict, Program]]:
    """(record, program) for every recorded GPU failure, generated as it was on the GPU."""
    out = []
    for r in json.loads(GPU_REGRESSIONS.read_text()):
        if r["sm"] is not None and r["sm"] < 1:
            # a failure's Result holds both: spec.sm (-1, "the worker decides") and the sm it decided
            raise ValueError(f"seed {r['seed']}: 'sm' must be the SM count the program was generated for "
                             f"(the failure's top-level 'sm', an integer or null), not the spec's {r['sm']}")
        target = Target(**r["target"]) if r["target"] else None
        spec = Spec(r["seed"], target, tuple(r["drop"]), r["sm"])
        out.append((r, build_program(spec, r["sm"])))
    return out
