"""Compiling generated kernels with NVRTC in tests (no GPU needed)."""
from __future__ import annotations

from typing import Sequence

import pytest

from fuselab.codegen import KernelCode, OpaqueCall, compile_info
from fuselab.codegen.nvrtc import CompileInfo, available, compile_source
from fuselab.codegen.prelude import SNIPPETS

NVRTC_OK, NVRTC_WHY = available()
needs_nvrtc = pytest.mark.skipif(not NVRTC_OK, reason=f"cannot compile CUDA here: {NVRTC_WHY}")


def batch_source(kernels: Sequence[KernelCode]) -> str:
    """One translation unit for many kernels, for a check that NVRTC takes them: the
    prelude once, each kernel in its own namespace with C++ linkage (two plans may name
    different kernels alike; extern "C" names would clash)."""
    prelude = "\n\n".join(s.code.strip() for s in SNIPPETS)
    bodies = []
    for i, c in enumerate(kernels):
        src = c.source
        for s in SNIPPETS:
            src = src.replace(s.code.strip(), "")
        src = src.replace('extern "C" __global__', "__global__")
        bodies.append(f"namespace fl_unit{i} {{\n{src}\n}}")
    return prelude + "\n" + "\n".join(bodies)


def nvrtc_refusals(kernels: Sequence[KernelCode], arch: str = "sm_90", chunk: int = 64) -> list[tuple[KernelCode, Exception]]:
    """The kernels NVRTC refuses, with its error: chunks of kernels compiled to PTX as one
    unit each, and one by one only in a chunk that fails."""
    unique = list({(c.source, c.nvrtc_options): c for c in kernels}.values())
    bad: list[tuple[KernelCode, Exception]] = []
    for opts in dict.fromkeys(c.nvrtc_options for c in unique):
        same = [c for c in unique if c.nvrtc_options == opts]
        for i in range(0, len(same), chunk):
            part = same[i:i + chunk]
            try:
                compile_source(batch_source(part), "batch", opts, arch=arch, want_cubin=False)
                continue
            except Exception:  # noqa: BLE001 - find the kernels at fault, with their own source
                pass
            for c in part:
                try:
                    compile_source(c.source, c.name, opts, arch=arch, want_cubin=False)
                except Exception as e:  # noqa: BLE001
                    bad.append((c, e))
    return bad


def nvrtc_compile(codes: Sequence[KernelCode | OpaqueCall], arch: str = "sm_90",
                  reports: bool = False) -> list[CompileInfo]:
    """Compile every kernel to PTX, raising NVRTC's error (with the kernel's numbered
    source) for the first it refuses. With `reports`, each kernel alone to a cubin,
    returning every kernel's resource report (spills)."""
    kernels = [c for c in codes if isinstance(c, KernelCode)]
    assert kernels, "no CUDA kernel was generated: nothing would be compiled"
    if reports:
        return [compile_info(c, arch) for c in {c.source: c for c in kernels}.values()]
    for _, error in nvrtc_refusals(kernels, arch):
        raise error
    return []
