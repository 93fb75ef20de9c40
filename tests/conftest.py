"""Shared test set-up: GPU tests run only where CuPy sees a device."""
from __future__ import annotations

import functools

import pytest


@functools.lru_cache(maxsize=1)
def gpu_status() -> tuple[bool, str]:
    try:
        import cupy
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy, no driver, no device
        return False, f"needs a GPU; CuPy sees none here ({type(e).__name__}: {str(e)[:120]})"
    return (True, "") if n > 0 else (False, "needs a GPU; CuPy sees 0 devices")


def pytest_collection_modifyitems(config, items):
    ok, why = gpu_status()
    if ok:
        return
    skip = pytest.mark.skip(reason=why)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
