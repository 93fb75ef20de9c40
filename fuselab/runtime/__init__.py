"""The GPU runtime: compile generated kernels with CuPy, run plans, check and time them.

Nothing here imports CuPy at import time; every function imports it when it runs.

    cuda_available() -> (bool, reason)
    execute(plan, inputs, codes=None, options=None, known=None) -> {name: cupy array}
    execute_checked(plan, unfused, inputs, options=None, known=None) -> ({name: cupy array}, Check)
    measure(plan, unfused, inputs, repeats=20, ...) -> Measurement
    calibrate(force=False) -> {bandwidth_Bps, launch_s, flops_per_s, ...}

`known`: values computed at graph breaks (TraceResult.break_values), which a run takes
instead of computing them again (breaks.py).
"""
from __future__ import annotations

from .calibrate import calibrate, calibration
from .device import cuda_available, device_info, device_options
from .errors import CompileError, FuselabRuntimeError
from .launch import Executable, execute, launch_codes, synchronize
from .measure import Measurement, execute_checked, measure
from .timing import GraphReplay, Timing
from .verify import Check, OutputCheck, compare

__all__ = ["cuda_available", "device_info", "device_options", "execute", "execute_checked", "measure",
           "calibrate", "calibration", "Executable", "Measurement", "Timing", "GraphReplay", "Check",
           "OutputCheck", "compare", "launch_codes", "synchronize", "CompileError", "FuselabRuntimeError"]
