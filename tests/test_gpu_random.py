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


def test_programs_that_failed_on_the_gpu_pass_now():
    """Every program the GPU fuzzer found failing (tests/fuzz/regressions-gpu.json), as it
    was generated there, on the GPU: toolchain miscompilations show only here."""
    from fuzz.harness import run_batch, run_gpu
    from fuzz.regressions import gpu_regressions

    cases = gpu_regressions()
    outcomes = run_batch([p for _, p in cases], run_gpu)
    bad = [(r, o) for (r, _), o in zip(cases, outcomes) if o.failures]
    assert not bad, "\n\n".join(f"seed {r['seed']} ({r['found']}):\n{o.program.source}\n{o.failures[0][:1500]}"
                                for r, o in bad[:3])
