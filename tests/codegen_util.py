"""Compiling generated kernels with NVRTC in tests (no GPU needed)."""
from __future__ import annotations

from typing import Sequence

import pytest

from fuselab.codegen import KernelCode, OpaqueCall, compile_info
from fuselab.codegen.nvrtc import CompileInfo, available, compile_source

NVRTC_OK, NVRTC_WHY = available()
needs_nvrtc = pytest.mark.skipif(not NVRTC_OK, reason=f"cannot compile CUDA here: {NVRTC_WHY}")


def nvrtc_compile(codes: Sequence[KernelCode | OpaqueCall], arch: str = "sm_90",
                  reports: bool = False) -> list[CompileInfo]:
    """Compile every kernel: all in one NVRTC call (each in its own namespace), and one
    by one only to report the failing kernel with its own numbered source. With
    `reports`, each kernel alone, returning every kernel's resource report (spills)."""
    kernels = [c for c in codes if isinstance(c, KernelCode)]
    assert kernels, "no CUDA kernel was generated: nothing would be compiled"
    unique = {c.source: c for c in kernels}
    names = [c.name for c in unique.values()]
    if not reports and len(set(names)) == len(names) and len(unique) > 1:
        source = "\n".join(f"namespace fl_unit{i} {{\n{c.source}\n}}" for i, c in enumerate(unique.values()))
        try:
            compile_source(source, "batch", kernels[0].nvrtc_options, arch=arch, want_cubin=False)
            return []
        except Exception:  # noqa: BLE001 - fall through to find the culprit
            pass
    return [compile_info(c, arch) for c in unique.values()]
