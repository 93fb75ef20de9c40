"""Graph breaks in the GPU runtime (fuselab/runtime/breaks.py): the values computed at a
break are taken, not computed again; a kernel left with nothing to store is not
launched. On the CPU through the CUDA emulator, which takes them as the runtime does;
the marked tests run the cell on a GPU."""
from __future__ import annotations

import numpy as np
import pytest

import fuselab
from fuselab.cell import run_cell
from fuselab.interp import run_plan
from fuselab.plan import make_plan, unfused_plan
from fuselab.runtime.breaks import from_breaks

from cuda_host import HostRunner, needs_cxx

# s is computed at the break (NumPy's pairwise sum); t shares its reduction kernel
SUM_THEN_DIVIDE = "s = x.sum()\nt = s * 2\nif s > 0:\n    y = x / s\nelse:\n    y = -x"
# np.unique's result is computed at the break (its length depends on the values)
UNIQUE = "u = np.unique(np.round(x * 4))\nz = u.sum() + x"


def traced(src: str, n: int = 100_003, keep=()):
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    return fuselab.trace_cell(src, {"np": np, "x": x}, keep)


def node_of(tr, name: str) -> int:
    return dict(tr.graph.outputs)[name]


def test_without_break_values_every_kernel_runs():
    tr = traced(SUM_THEN_DIVIDE, keep=("s",))
    plan = make_plan(tr.graph, "auto")
    assert from_breaks(plan, {}) == ((True, ()),) * len(plan.kernels)


def test_a_kernel_whose_values_were_all_computed_at_a_break_is_not_launched():
    tr = traced(UNIQUE)
    plan = make_plan(tr.graph, "auto")
    known = tr.break_values()
    schedule = from_breaks(plan, known)
    unique = next(k for k, kern in enumerate(plan.kernels) if kern.template.value == "opaque")
    assert schedule[unique] == (False, plan.kernels[unique].outputs)
    # what feeds only the skipped kernel is neither launched nor moved (np.round(x * 4))
    for k in range(unique):
        assert schedule[k] == (False, ()), plan
    assert all(runs for runs, _ in schedule[unique + 1:])


def test_a_value_python_saw_is_taken_even_where_its_kernel_runs():
    tr = traced(SUM_THEN_DIVIDE, keep=("s",))
    plan = make_plan(tr.graph, "auto")
    s = node_of(tr, "s")
    (k,) = [k for k, kern in enumerate(plan.kernels) if s in kern.outputs]
    assert node_of(tr, "t") in plan.kernels[k].outputs            # a sibling nobody computed yet
    assert from_breaks(plan, tr.break_values())[k] == (True, (s,))


@needs_cxx
@pytest.mark.parametrize("strategy", ["auto", "unfused"])
def test_the_emulated_run_continues_from_the_values_python_branched_on(strategy):
    tr = traced(SUM_THEN_DIVIDE, keep=("s",))
    plan = make_plan(tr.graph, "auto") if strategy == "auto" else unfused_plan(tr.graph)
    known = tr.break_values()
    runner = HostRunner([plan])
    got = runner.run(plan, tr.inputs, known=known)
    want = run_plan(plan, tr.inputs, np, known=known)       # the NumPy backend
    x = tr.inputs["x"]
    assert got["s"] == np.float32(x.sum())                  # NumPy's sum, bit for bit
    np.testing.assert_array_equal(got["y"], x / x.sum())    # divided by it, not by the kernel's sum
    np.testing.assert_allclose(got["t"], want["t"], rtol=1e-6)


@needs_cxx
def test_the_emulated_run_skips_the_library_call_made_at_the_break():
    tr = traced(UNIQUE)
    plan = make_plan(tr.graph, "auto")
    runner = HostRunner([plan])
    got = runner.run(plan, tr.inputs, known=tr.break_values())
    assert not any("unique" in name for name in runner.launched), runner.launched
    x = tr.inputs["x"]
    np.testing.assert_allclose(got["z"], np.unique(np.round(x * 4)).sum() + x, rtol=1e-6)
    runner.run(plan, tr.inputs)                              # without them, everything runs
    assert any("unique" in name for name in runner.launched)


@needs_cxx
def test_the_cuda_session_hands_the_runtime_the_break_values(monkeypatch):
    """Session.execute on the CUDA backend, its runtime replaced by the emulator: the
    values the runtime is handed are the trace's, and the cell's bindings follow them."""
    import fuselab.runtime
    import fuselab.session
    from fuselab.runtime.verify import Check

    handed = {}

    def emulated(plan, unfused, inputs, options=None, known=None, library_warning=None):
        handed["known"] = known
        return HostRunner([plan]).run(plan, inputs, known=known), Check(True, "", ("emulated",))

    monkeypatch.setattr(fuselab.session, "cuda_status", lambda: (True, ""))
    monkeypatch.setattr(fuselab.runtime, "execute_checked", emulated)
    x = np.random.default_rng(3).random(100_003, dtype=np.float32)
    ns = {"np": np, "x": x}
    session = run_cell(ns, SUM_THEN_DIVIDE + "\nkeep = s", quiet=True, time=False, backend="cuda")
    assert session.backend == "cuda"
    assert dict(session.graph.outputs)["s"] in handed["known"]   # (the trace forgets them once bound)
    assert ns["s"] == x.sum()                                  # NumPy's sum, as plain execution
    np.testing.assert_array_equal(ns["y"], x / x.sum())


@pytest.mark.gpu
@pytest.mark.parametrize("module", ["numpy", "cupy"])
def test_on_the_gpu_a_cell_goes_on_from_the_values_python_saw(module):
    import cupy as cp
    xp = np if module == "numpy" else cp
    x = xp.asarray(np.random.default_rng(2).random(1_000_003, dtype=np.float32))
    ns = {"np": xp, "x": x}
    session = run_cell(ns, SUM_THEN_DIVIDE + "\nkeep = s", quiet=True, time=False, backend="cuda")
    assert session.check.ok, session.check.worst
    s = xp.asarray(x).sum()                                  # what plain execution computes
    assert float(ns["s"]) == float(s)
    xp.testing.assert_array_equal(ns["y"], x / s)
