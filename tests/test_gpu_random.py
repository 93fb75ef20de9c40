"""Hypothesis differential test on the GPU: random programs (random DAGs of table ops
over random broadcastable shapes, 0- and 1-size dimensions included) planned unfused,
auto and max, compiled, run, and compared with NumPy. 300+ programs per run."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuselab.interp import run_graph

from random_programs import program_plans, program_rtol, random_program

pytestmark = pytest.mark.gpu


EXAMPLES = int(os.environ.get("FUSELAB_GPU_RANDOM_EXAMPLES", "320"))


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2 ** 31 - 1))
def test_random_programs_match_numpy_on_the_gpu(seed):
    from fuselab import runtime
    from fuselab.codegen import KernelCode
    from fuselab.runtime.compile import compile_kernels
    graph, inputs = random_program(seed)
    want = run_graph(graph, inputs)
    plans = program_plans(graph)
    options = runtime.device_options()
    # compile the three plans' kernels together (one NVRTC round), then run each plan
    compile_kernels([c for p in plans for c in runtime.codes_for(p, options) if isinstance(c, KernelCode)])
    for plan in plans:
        got = runtime.execute(plan, inputs)
        check = runtime.compare(got, want, program_rtol(graph))
        assert check.ok, f"seed {seed}, {plan.strategy} plan:\n{plan}\n{check.worst}"
