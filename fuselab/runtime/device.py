"""Which GPU we run on, and whether there is one at all. CuPy is imported lazily."""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from ..codegen.model import CodegenOptions


@lru_cache(maxsize=1)
def cuda_available() -> tuple[bool, str]:
    """(True, "") when CuPy can run kernels here, else (False, why not)."""
    try:
        import cupy
    except Exception as e:  # noqa: BLE001 - any import failure means "no"
        return False, f"CuPy is not importable ({type(e).__name__}: {e})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001
        return False, f"no CUDA device ({type(e).__name__}: {str(e).strip()[:120]})"
    if n == 0:
        return False, "no CUDA device"
    return True, ""


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    sm_count: int
    compute_capability: str
    total_memory: int
    shared_per_block_optin: int


@lru_cache(maxsize=None)
def device_info(index: int | None = None) -> DeviceInfo:
    import cupy
    dev = cupy.cuda.Device(index) if index is not None else cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return DeviceInfo(dev.id, name, int(props["multiProcessorCount"]), dev.compute_capability,
                      int(props["totalGlobalMem"]), int(props.get("sharedMemPerBlockOptin", 49152)))


def device_options(options: CodegenOptions | None = None) -> CodegenOptions:
    """Codegen options for the current device: its SM count sizes the grids."""
    info = device_info()
    options = options or CodegenOptions()
    return replace(options, sm_count=info.sm_count, arch=f"sm_{info.compute_capability}")
