"""Random programs (tests/random_programs.py) through the Numba backend, under the
unfused, auto and max plans, against NumPy; a part of them also against the emulated CUDA
kernels of the same plans."""
from __future__ import annotations

import pytest

from numba_util import FULL, run_numba

from fuselab.interp import run_graph
from fuselab.runtime.verify import compare

from random_programs import program_plans, program_rtol, random_program

SEEDS = range(300 if FULL else 40)
EMULATED_SEEDS = range(300 if FULL else 10)


@pytest.fixture(scope="module")
def emulated():
    from cuda_host import HAVE_CXX, HostRunner
    if not HAVE_CXX:
        return None
    plans = [p for s in EMULATED_SEEDS for p in program_plans(random_program(s)[0])]
    return HostRunner(plans)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_program_matches_numpy(seed, emulated):
    graph, inputs = random_program(seed)
    want = run_graph(graph, inputs)
    for plan in program_plans(graph):
        got = run_numba(plan, inputs)
        check = compare(got, want, program_rtol(graph))
        assert check.ok, f"seed {seed}, {plan.strategy} plan:\n{plan}\n{check.worst}"
        if emulated is not None and seed in EMULATED_SEEDS:
            check = compare(got, emulated.run(plan, inputs), 2 * program_rtol(graph))   # both within rtol of NumPy
            assert check.ok, f"seed {seed}, {plan.strategy} plan vs emulated CUDA:\n{plan}\n{check.worst}"
