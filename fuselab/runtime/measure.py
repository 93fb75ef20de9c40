"""Checking and timing a plan against the unfused plan and plain eager CuPy."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..codegen.model import CodegenOptions
from ..interp import run_graph, run_plan
from ..plan.model import Plan
from ..recording import recorded
from .launch import Executable, synchronize
from .timing import GraphReplay, Timing, per_kernel_times, time_interleaved
from .tolerance import check as judged_check
from .verify import Check, compare, on_host

REPLAY_BELOW_S = 200e-6   # cells faster than this are launch-bound: time a CUDA graph replay too


@dataclass(frozen=True)
class Measurement:
    device: str
    plan: Timing
    unfused: Timing | None
    eager: Timing | None
    replay: Timing | None                  # the plan as one CUDA graph launch
    compile_s: tuple[tuple[str, float], ...]
    peak_bytes: int                        # plan: outputs + intermediates alive at once, + scratch
    unfused_peak_bytes: int | None
    check: Check
    notes: tuple[str, ...] = field(default=())

    @property
    def speedup_vs_unfused(self) -> float | None:
        return self.unfused.median_s / self.plan.median_s if self.unfused else None

    @property
    def speedup_vs_eager(self) -> float | None:
        return self.eager.median_s / self.plan.median_s if self.eager else None

    @property
    def total_compile_s(self) -> float:
        return sum(t for _, t in self.compile_s)

    def summary(self) -> str:
        lines = [f"on {self.device}"]
        for t in (self.plan, self.replay, self.unfused, self.eager):
            if t is not None:
                lines.append(f"  {t}")
        for name, t in self.plan.per_kernel_s:
            lines.append(f"    {name}: {t * 1e6:.1f} us")
        if self.speedup_vs_unfused:
            lines.append(f"  speedup vs unfused {self.speedup_vs_unfused:.2f}x"
                         + (f", vs eager CuPy {self.speedup_vs_eager:.2f}x" if self.speedup_vs_eager else ""))
        lines.append(f"  compile {self.total_compile_s * 1e3:.1f} ms; peak memory {self.peak_bytes / 2**20:.1f} MiB"
                     + (f" (unfused {self.unfused_peak_bytes / 2**20:.1f} MiB)" if self.unfused_peak_bytes else ""))
        lines.append("  check: " + ("ok" if self.check.ok else f"MISMATCH {self.check.worst}"))
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def cell_bytes(plan: Plan) -> int:
    """The least traffic of the cell: every input read once, every output written once."""
    g = plan.graph
    return sum(g.nodes[i].aval.nbytes for i in g.input_ids) + \
        sum(g.nodes[i].aval.nbytes for i in set(g.output_ids) if g.nodes[i].op != "input")


def execute_checked(plan: Plan, unfused: Plan | None, inputs: Mapping[str, Any],
                    options: CodegenOptions | None = None,
                    known: Mapping[int, Any] | None = None,
                    library_warning: Callable[[int, Any], None] | None = None) -> tuple[dict[str, Any], Check]:
    """Run `plan` and compare it with the unfused plan (or, for the unfused plan itself,
    with plain eager CuPy). Returns the plan's outputs and the comparison. `known`:
    values computed at graph breaks, which both runs take (runtime/breaks.py).
    `library_warning(node, warning)` takes the warnings CuPy gives in the plan's library
    calls (Executable.library_warning); the check's run gives none."""
    exe = Executable(plan, options=options)
    exe.library_warning = library_warning
    env = exe.prepare(inputs)
    outs = exe.run(env=env, known=known)
    exe.library_warning = None
    with recorded():   # the check's run is not the cell's: its warnings are nobody's
        ref = _reference(exe, unfused, env, options, known)
    synchronize(f"the {plan.strategy} plan")
    return outs, judge(plan, outs, ref, env, known)


def judge(plan: Plan, got: Mapping[str, Any], want: Mapping[str, Any], env: Mapping[int, Any],
          known: Mapping[int, Any] | None = None) -> Check:
    """The plan's outputs `got` against the reference run's `want` (runtime.verify.compare,
    on the device). Where an output is outside that tolerance, it is judged again on the
    host as the Numba backend's check judges (runtime/tolerance.py): each output at the
    tolerance of the least precise float it is computed from, plus the slack of the sums
    and transcendentals it follows from. The plan and the reference add their sums in
    different orders, and where values cancel (`t - t.mean()`) the outputs are rounding
    residue, which compare's tolerance (relative to the largest output) cannot judge.
    `env`: the run's inputs on the device, by node; `known`: values taken at graph breaks."""
    check = compare(got, want)
    if check.ok:
        return check
    g = plan.graph
    inputs = {g.nodes[i].args["name"]: on_host(a) for i, a in env.items()}
    return judged_check(plan, {k: on_host(v) for k, v in got.items()}, {k: on_host(v) for k, v in want.items()},
                        inputs, {k: on_host(v) for k, v in (known or {}).items()})


def _reference(exe: Executable, unfused: Plan | None, env: dict[int, Any],
               options: CodegenOptions | None, known: Mapping[int, Any] | None = None) -> dict[str, Any]:
    import cupy
    plan = exe.plan
    if unfused is not None and unfused != plan:
        return Executable(unfused, options=options, tune=False).run(env=env, known=known)
    named = {plan.graph.nodes[i].args["name"]: a for i, a in env.items()}
    if known:   # op by op, as eager CuPy, from the values the plan's run took
        return run_plan(plan, named, cupy, known=exe.device_values(known))
    return run_graph(plan.graph, named, cupy)


def measure(plan: Plan, unfused: Plan | None, inputs: Mapping[str, Any], repeats: int = 20,
            options: CodegenOptions | None = None, progress: Callable[[str], None] | None = None,
            eager: bool = True, replay: bool | None = None, per_kernel: bool = True) -> Measurement:
    """Check the plan, then time it, the unfused plan and eager CuPy (each after warm-up,
    median of `repeats`). `replay=None` adds a CUDA-graph replay for launch-bound cells."""
    with recorded() as caught:   # reruns of a cell that already ran: their warnings are nobody's
        out = _measure(plan, unfused, inputs, repeats, options, progress, eager, replay, per_kernel)
    for w in caught:   # but fuselab's own (the tuning cache's) are the user's to see
        if str(w.message).startswith("fuselab"):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return out


def _measure(plan: Plan, unfused: Plan | None, inputs: Mapping[str, Any], repeats: int,
             options: CodegenOptions | None, progress: Callable[[str], None] | None,
             eager: bool, replay: bool | None, per_kernel: bool) -> Measurement:
    import cupy
    from .device import device_info
    say = progress or (lambda _msg: None)
    say("compiling")
    exe = Executable(plan, options=options)
    ref_exe = Executable(unfused, options=options, tune=False) if unfused is not None and unfused != plan else None
    env = exe.prepare(inputs)
    named = {plan.graph.nodes[i].args["name"]: a for i, a in env.items()}
    say("checking")
    outs = exe.run(env=env)
    ref = ref_exe.run(env=env) if ref_exe else run_graph(plan.graph, named, cupy)
    synchronize(f"the {plan.strategy} plan")
    check = judge(plan, outs, ref, env)
    del outs, ref
    nbytes = cell_bytes(plan)
    # timed in alternating rounds, so that drift of the GPU's clocks favours none of them
    plan_label = f"fuselab {plan.strategy}"
    fns: dict[str, Callable[[], Any]] = {plan_label: lambda: exe.run(env=env)}
    if ref_exe is not None:
        fns["unfused"] = lambda: ref_exe.run(env=env)
    if eager:
        fns["eager CuPy"] = lambda: run_graph(plan.graph, named, cupy)
    say("timing " + ", ".join(fns))
    timed = time_interleaved(fns, repeats, bytes_moved={k: nbytes for k in fns})
    t_plan = timed[plan_label]
    if per_kernel:
        names = [c.name for c in exe.codes]
        t_plan = Timing(**{**t_plan.__dict__,
                           "per_kernel_s": per_kernel_times(lambda ev: exe.run(env=env, events=ev), names,
                                                            repeats=min(repeats, 5))})
    t_unfused = timed.get("unfused")
    t_eager = timed.get("eager CuPy")
    notes: list[str] = []
    t_replay = None
    if replay or (replay is None and t_plan.median_s < REPLAY_BELOW_S):
        say("timing a CUDA graph replay")
        try:
            graph = GraphReplay(lambda: exe.run(env=env, release=False))
            t_replay = graph.time(f"fuselab {plan.strategy}, CUDA graph", max(repeats, 20), nbytes)
            del graph
        except Exception as e:  # noqa: BLE001 - e.g. an opaque library call that cannot be captured
            notes.append(f"no CUDA graph replay: {type(e).__name__}: {str(e)[:120]}")
    return Measurement(device=device_info().name, plan=t_plan, unfused=t_unfused, eager=t_eager,
                       replay=t_replay, compile_s=tuple(exe.compile_s.items()), peak_bytes=exe.peak_bytes,
                       unfused_peak_bytes=ref_exe.peak_bytes if ref_exe else None, check=check,
                       notes=tuple(notes))
