"""Running plans through the Numba backend in tests.

Bulk differential tests run with `parallel=False`: the same compiled kernels, their
parallel loops run on the calling thread (driver.drive_serial); tests in
test_numba_backend.py run them on Numba's threads and check that it gives the same bits.
Compiled kernels are cached by source in the process and by Numba on disk, so a second
test session compiles nothing.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="the Numba backend's tests need numba (pip install '.[cpu]')")

from fuselab.numba_backend import NumbaOptions  # noqa: E402
from fuselab.numba_backend.run import Executable  # noqa: E402
from fuselab.plan.model import Plan  # noqa: E402

SERIAL = NumbaOptions(parallel=False)
PARALLEL = NumbaOptions(parallel=True)
# FUSELAB_NUMBA_FULL=1: every case and more random programs (CI runs a representative part)
FULL = os.environ.get("FUSELAB_NUMBA_FULL", "") == "1"


def run_numba(plan: Plan, inputs: Mapping[str, Any], options: NumbaOptions = SERIAL) -> dict[str, np.ndarray]:
    return Executable(plan, options).run(inputs)
