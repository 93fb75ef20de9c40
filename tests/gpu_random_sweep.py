"""Run many random programs on the GPU and list every mismatch (the hypothesis test stops
at the first): python tests/gpu_random_sweep.py FIRST_SEED LAST_SEED"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]

from fuselab import runtime  # noqa: E402
from fuselab.interp import run_graph  # noqa: E402
from fuselab.plan import make_plan, unfused_plan  # noqa: E402
from random_programs import program_rtol, random_program  # noqa: E402


def main(first: int, last: int) -> int:
    bad = 0
    t0 = time.perf_counter()
    for seed in range(first, last):
        graph, inputs = random_program(seed)
        want = run_graph(graph, inputs)
        for plan in (unfused_plan(graph), make_plan(graph, "auto"), make_plan(graph, "max")):
            try:
                check = runtime.compare(runtime.execute(plan, inputs), want, program_rtol(graph))
                ok, why = check.ok, check.worst
            except Exception as e:  # noqa: BLE001 - report and go on
                ok, why = False, f"{type(e).__name__}: {e}"
            if not ok:
                bad += 1
                print(f"seed {seed} {plan.strategy}: {why}\n{plan}\n", flush=True)
    print(f"{last - first} programs, {bad} failing plans, {time.perf_counter() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
