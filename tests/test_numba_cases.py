"""The Numba backend on the shared differential cases (tests/cases.py): every op and
dtype, casts, reductions in every layout, the row template, views, empty arrays, integer
overflow, powers. Each is compared with NumPy and with the emulated CUDA kernels of the
same plan (tests/cuda_host.py): three implementations of one semantics."""
from __future__ import annotations

import numpy as np
import pytest

from numba_util import FULL, run_numba

from fuselab.interp import run_graph
from fuselab.runtime.verify import RTOL, compare

from cases import all_cases

ALL = all_cases()


def _selected(case) -> bool:
    """CI's part: every kind of case, fewer layouts and dtypes where cases repeat a
    kernel shape (FUSELAB_NUMBA_FULL=1 runs them all)."""
    if FULL:
        return True
    cid = case.id
    if cid.startswith("reductions-"):
        return any(cid.startswith(f"reductions-{d}-") for d in ("bool", "int8", "uint64", "int64", "float16",
                                                                "float32", "float64")) and \
            any(lay in cid for lay in ("(1000,)-None", "(20000,)-None", "(33, 65)-0", "(33, 65)-1",
                                       "(6, 4000, 40)-1", "(5, 7, 300)-(0, 2)"))
    if cid.startswith("row-"):
        return any(f"x{c}" in cid for c in ("x1", "x33", "x1030", "x50000"))
    return True


CASES = [c for c in ALL if _selected(c)]


def twice(rtol):
    """Two implementations each within `rtol` of NumPy are within twice that of each other
    (reductions add in different orders)."""
    return 2 * rtol if rtol is not None else {dt: 2 * r for dt, r in RTOL.items()}


@pytest.fixture(scope="module")
def emulated():
    """The emulated CUDA kernels of every case (the same plan list as
    test_codegen_emulated, so its compiled libraries are reused)."""
    from cuda_host import HAVE_CXX, HostRunner
    if not HAVE_CXX:
        return None
    return HostRunner([p for c in ALL for p in c.plans])


def _plans(case):
    # the unfused plans of the op sweeps are a kernel per op: three dtypes cover them
    if case.id.startswith("elementwise-") and not FULL and not any(
            d in case.id for d in ("-int8-", "-float16-", "-float32-")):
        return case.plans[:1]
    return case.plans


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case_matches_numpy_and_emulated_cuda(case, emulated):
    want = run_graph(case.graph, case.inputs)
    for plan in _plans(case):
        got = run_numba(plan, case.inputs)
        check = compare(got, want, case.rtol)
        assert check.ok, f"{plan.strategy} plan vs NumPy: {check.worst}"
        if emulated is not None:
            cuda = emulated.run(plan, case.inputs)
            check = compare(got, cuda, twice(case.rtol))
            assert check.ok, f"{plan.strategy} plan vs emulated CUDA: {check.worst}"
        again = run_numba(plan, case.inputs)
        for name in got:   # deterministic: the same bits on a second run
            np.testing.assert_array_equal(again[name], got[name])
