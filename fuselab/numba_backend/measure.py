"""Checking and timing a plan on the CPU: the fused plan, the unfused plan and plain
NumPy (the cell as NumPy runs it), timed in alternating rounds with the wall clock.

The check compares the plan's results with plain NumPy's, the reference semantics; its
tolerance (fuselab.runtime.verify's, per output that of the least precise float it is
computed from) covers the backend's freedoms: the order in which a reduction adds, and
float32 transcendentals within an ulp (README: "Numba backend"). An output outside it
that follows from a float sum or variance is judged again with the reduction-order
slack of runtime/tolerance.py: the documented tolerance relative to the magnitudes of the reduced
inputs, carried through the ops that follow (values that cancel to about 0, such as
`t - t.mean()`, would otherwise be judged relative to their own rounding residue). An
integer or bool output that differs is judged against what NumPy gives it with one
library-rounded value on its path (a transcendental's, a reduction's) moved within its
tolerance: a truncating cast or a comparison makes a whole unit of an ulp.
"""
from __future__ import annotations

import os
import statistics
import time
from typing import Any, Callable, Mapping

import numpy as np

from ..interp import run_graph, run_plan
from ..plan.model import Plan
from ..recording import recorded
from ..runtime.measure import Measurement, cell_bytes
from ..runtime.timing import Timing, summarize_rounds
from ..runtime.tolerance import check
from ..runtime.verify import Check
from .model import NumbaOptions
from .run import Executable


def time_interleaved(fns: Mapping[str, Callable[[], Any]], repeats: int = 20, rounds: int = 4,
                     warmup: int = 1, bytes_moved: Mapping[str, int] | None = None,
                     max_seconds: float = 20.0) -> dict[str, Timing]:
    """Median wall time of each fn, in alternating rounds (a few repeats of each in
    turn), so that other processes' load and the clock's drift fall on all alike."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    return summarize_rounds(fns, repeats, rounds, max_seconds, bytes_moved, _wall_seconds)


def _wall_seconds(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def reference(plan: Plan, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The cell as plain NumPy runs it, op by op, for checks and timings: silently (the
    cell's warnings are the trace's and execute_checked's to give, once, in their place)."""
    with np.errstate(all="ignore"), recorded():
        return run_graph(plan.graph, inputs, np)


def execute_checked(plan: Plan, inputs: Mapping[str, Any], options: NumbaOptions | None = None,
                    on_fp_error: Callable[[int, str], None] | None = None,
                    known: Mapping[int, Any] | None = None) -> tuple[dict[str, np.ndarray], Check]:
    """Run `plan` and compare its results with the reference interpreter's (NumPy), which
    also reports the floating-point errors NumPy would warn about (`on_fp_error`), as the
    NumPy backend does. `known`: values computed at graph breaks, which the kernels that
    store them need not compute again."""
    outs = Executable(plan, options).run(inputs, known=known)
    want = run_plan(plan, inputs, np, on_fp_error=on_fp_error, known=known)
    return outs, check(plan, outs, want, inputs, known)


def measure(plan: Plan, unfused: Plan | None, inputs: Mapping[str, Any], repeats: int = 20,
            options: NumbaOptions | None = None, progress: Callable[[str], None] | None = None,
            per_kernel: bool = True) -> Measurement:
    """Compile, check, then time the plan, the unfused plan and plain NumPy (median of
    `repeats` after warm-up), and the plan's kernels one by one."""
    from .calibrate import cpu_name
    say = progress or (lambda _msg: None)
    say("compiling")
    exe = Executable(plan, options)
    ref_exe = Executable(unfused, options) if unfused is not None and unfused != plan else None
    say("checking")
    checked = check(plan, exe.run(inputs), reference(plan, inputs), inputs)
    nbytes = cell_bytes(plan)
    label = f"fuselab {plan.strategy}"
    # the plans write into reused arrays, as the GPU runtime's memory pool lets them; NumPy
    # allocates as it does
    fns: dict[str, Callable[[], Any]] = {label: lambda: exe.run(inputs, reuse=True)}
    if ref_exe is not None:
        fns["unfused"] = lambda: ref_exe.run(inputs, reuse=True)
    fns["plain NumPy"] = lambda: reference(plan, inputs)
    say("timing " + ", ".join(fns))
    with np.errstate(all="ignore"):
        timed = time_interleaved(fns, repeats, bytes_moved={k: nbytes for k in fns}, max_seconds=4.0)
    t_plan = timed[label]
    if per_kernel:
        samples: list[list[float]] = []
        for _ in range(min(repeats, 5)):
            one: list[float] = []
            exe.run(inputs, timings=one, reuse=True)
            samples.append(one)
        names = [c.name for c in exe.codes]
        t_plan = Timing(**{**t_plan.__dict__, "per_kernel_s": tuple(
            (n, statistics.median(s[k] for s in samples)) for k, n in enumerate(names))})
    compile_s = dict(exe.compile_s)
    if ref_exe is not None:
        compile_s.update({f"unfused {k}": v for k, v in ref_exe.compile_s.items()})
    notes = ["CPU times: wall clock of whole plans, medians of repeats in alternating rounds; the plans "
             "write into arrays reused from run to run (a fresh array costs the OS's first touch of its pages)"]
    if hasattr(os, "getloadavg"):
        load = os.getloadavg()[0]
        notes.append(f"load average {load:.1f} while timing" + (" (other work was running)" if load > 1.5 else ""))
    return Measurement(device=cpu_name(), plan=t_plan, unfused=timed.get("unfused"), eager=timed["plain NumPy"],
                       replay=None, compile_s=tuple(compile_s.items()), peak_bytes=exe.peak_bytes,
                       unfused_peak_bytes=ref_exe.peak_bytes if ref_exe else None, check=checked, notes=tuple(notes))
