"""The set-up aliasing cells of test_fidelity_aliasing.py with CuPy arrays: views of one
device memory (`v = a[::2]`, `at = a.T`, slices in a list) are views of one input under
%%fuse on the CUDA backend too, so a write through one name is read through the others
(a held-out red team's cells read stale values there before: `a *= 2; r = v.sum()` gave
6 for CuPy's 12, H200 2026-12-04)."""
from __future__ import annotations

import pytest

pytest.importorskip("IPython")

from fidelity import FUSE_LINE, Harness, assert_as_plain  # noqa: E402
from test_fidelity import CUPY_SETUP  # noqa: E402
from test_fidelity_aliasing import CASES  # noqa: E402

# CuPy has no writeable flag to clear; the rest are the set-up memory cases ("C")
ALIASING = [c for c in CASES[:CASES.index(next(c for c in CASES if c.name == "namedtuple of scalars"))]
            if "flags.writeable" not in c.setup]


@pytest.fixture(scope="module")
def harness():
    return Harness()


def test_the_cases_are_the_aliasing_ones():
    assert len(ALIASING) >= 20 and all("np." in c.setup for c in ALIASING)


@pytest.mark.gpu
@pytest.mark.parametrize("case", ALIASING, ids=[c.name for c in ALIASING])
def test_shared_device_memory_cell_as_plain_cupy(harness, case):
    from fuselab.runtime.verify import RTOL
    assert_as_plain(harness, case, CUPY_SETUP, FUSE_LINE.replace(" --backend cpu", ""), RTOL)
