"""The GPU runtime's check (runtime.measure.judge): an output outside compare's tolerance
(relative to the output's largest value) is judged again on the host with the slack of
the sums it follows from (runtime/tolerance.py), as the Numba backend's check is, so that
values that cancel to rounding residue (`t - t.mean()`) pass when the plan's sums add in
another order than the reference's, and real errors still fail. NumPy arrays stand in for
the device's here (judge copies CuPy arrays to the host and leaves others as they are);
test_gpu_runtime runs the same cells on a GPU."""
from __future__ import annotations

import numpy as np
import pytest

import fuselab
from fuselab.plan import make_plan
from fuselab.runtime.measure import judge
from fuselab.runtime.verify import compare


def _cancelling(x: np.ndarray):
    traced = fuselab.trace_cell("t = np.exp(x)\na = t - t.mean()\n", {"np": np, "x": x})
    plan = make_plan(traced.graph, "auto")
    env = {i: x for i in plan.graph.input_ids}
    with np.errstate(all="ignore"):
        t = np.exp(x)
        want = {"a": t - t.mean()}
    return plan, env, want, t


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_mean_added_in_another_order_passes(dtype):
    x = np.full((300, 64), 0.1, dtype)
    plan, env, want, t = _cancelling(x)
    # the plan's mean a few units of rounding off (another order of the same sum)
    mean = t.mean(dtype=np.float64)
    off = (mean * (1 + 4 * np.finfo(dtype).eps)).astype(dtype)
    got = {"a": t - off}
    assert not compare(got, want).ok          # compare alone judges the residue by itself
    check = judge(plan, got, want, env)
    assert check.ok, check.worst


def test_a_real_error_still_fails():
    x = np.full((300, 64), 0.1, np.float32)
    plan, env, want, t = _cancelling(x)
    got = {"a": want["a"] + np.float32(1e-2)}
    check = judge(plan, got, want, env)
    assert not check.ok and "a:" in check.worst
    x2 = np.linspace(0, 1, 300 * 64, dtype=np.float32).reshape(300, 64)
    plan2, env2, want2, _ = _cancelling(x2)
    assert not judge(plan2, {"a": want2["a"] * np.float32(1.001)}, want2, env2).ok
