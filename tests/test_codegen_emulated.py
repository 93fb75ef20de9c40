"""The generated kernels run on a CPU emulator of CUDA (tests/cuda_host.h) and match
NumPy: every op and dtype, casts, reductions in every layout (split ones included), the
three row tiers, views and empty arrays. No GPU needed; the GPU tests run the same cases
for real."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuselab.interp import run_graph
from fuselab.runtime.verify import compare

from cases import all_cases
from cuda_host import HostRunner, needs_cxx
from random_programs import program_plans, program_rtol, random_program

pytestmark = needs_cxx

CASES = all_cases()


@pytest.fixture(scope="module")
def runner():
    return HostRunner([p for c in CASES for p in c.plans])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case_matches_numpy(runner, case):
    want = run_graph(case.graph, case.inputs)
    for plan in case.plans:
        got = runner.run(plan, case.inputs)
        check = compare(got, want, case.rtol)
        assert check.ok, f"{plan.strategy} plan: {check.worst}"
        again = runner.run(plan, case.inputs)   # split reductions reset their counters: same bits
        for name in got:
            np.testing.assert_array_equal(again[name], got[name])


@pytest.mark.slow   # each example compiles its kernels with the host C++ compiler
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 31 - 1))
def test_random_programs_match_numpy(seed):
    graph, inputs = random_program(seed)
    want = run_graph(graph, inputs)
    plans = program_plans(graph)
    runner = HostRunner(plans)
    for plan in plans:
        check = compare(runner.run(plan, inputs), want, program_rtol(graph))
        assert check.ok, f"seed {seed}, {plan.strategy} plan:\n{plan}\n{check.worst}"


@pytest.mark.parametrize("tier", ["warp", "block", "smem", "looped"])
def test_every_row_tier_matches_numpy(tier):
    """Each tier forced on rows that every tier can take (the automatic choice picks one)."""
    from dataclasses import replace

    from cuda_host import EMULATED
    from fuselab.plan.model import Template
    from graphs import layernorm, one_kernel, rmsnorm, softmax
    rng = np.random.default_rng(7)
    plans = [one_kernel(make(9, 1000), Template.ROW) for make in (softmax, layernorm, rmsnorm)]
    runner = HostRunner(plans, replace(EMULATED, row_tier=tier))
    for plan in plans:
        code = runner.codes[plan][0]
        assert code.notes[0].startswith({"smem": "block tier: a block per row", "block": "block tier: a block of"}
                                        .get(tier, tier))
        inputs = {n: rng.uniform(-2, 2, plan.graph.nodes[i].shape).astype(np.float32)
                  for n, i in zip(plan.graph.input_names(), plan.graph.input_ids)}
        check = compare(runner.run(plan, inputs), run_graph(plan.graph, inputs), 1e-4)
        assert check.ok, check.worst
