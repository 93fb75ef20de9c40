"""The differential fuzzer on the GPU: generated cells (tests/fuzz), every plan compiled
with NVRTC and run for real, judged against NumPy. FUSELAB_GPU_FUZZ_PROGRAMS (default
300); `bash scripts/fuzz.sh N --gpu` runs long ones."""
from __future__ import annotations

import os

import pytest

from fuzz.driver import run

pytestmark = pytest.mark.gpu

PROGRAMS = int(os.environ.get("FUSELAB_GPU_FUZZ_PROGRAMS", "300"))


def test_generated_cells_match_numpy_on_the_gpu():
    cov, failures = run(PROGRAMS, "gpu", int(os.environ.get("FUSELAB_FUZZ_SEED", "0")),
                        workers=min(8, os.cpu_count() or 1), batch=16, log=lambda m: None)
    assert cov.programs == PROGRAMS
    assert not failures, "\n\n".join(f"seed {f.spec.seed} target {f.spec.target}:\n{f.source}\n{f.failures[0][:2000]}"
                                     for f in failures[:5])
