"""Running a plan on the GPU: compile its kernels, launch them in order, allocate each
intermediate from CuPy's pool and free it after its last reader."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..codegen import generate
from ..codegen.model import CodegenOptions, KernelCode, OpaqueCall
from ..codegen.nvrtc import CompileError
from ..interp import eval_nodes
from ..plan.model import Plan
from .._version import __version__
from .breaks import from_breaks
from .compile import compile_kernels
from .device import device_info, device_options
from .tune import Pending, Tuning, cache, plan_tuning, time_candidates
from .errors import FuselabRuntimeError, launch_failed, out_of_memory

_SCRATCH: dict[tuple[int, str], Any] = {}


def _device() -> str:
    """The tuning cache's name for this GPU."""
    info = device_info()
    return f"{info.name} sm_{info.compute_capability}"


def launch_codes(plan: Plan, options: CodegenOptions | None = None) -> tuple[KernelCode | OpaqueCall, ...]:
    """The code an Executable of `plan` launches on this GPU, timing nothing: this
    device's grid sizes, and each kernel's tuned launch configuration where the tuning
    cache holds one (its heuristic's until the first run tunes it)."""
    options = device_options(options)
    return plan_tuning(plan, generate(plan, options), options, _device(), __version__, time_new=False)[0]


@dataclass(frozen=True)
class _Launch:
    """One generated kernel, with everything its launch needs worked out beforehand."""

    code: KernelCode
    function: Any
    inputs: tuple[int, ...]
    outputs: tuple[tuple[int, tuple[int, ...], np.dtype, int], ...]   # (node, shape, dtype, nbytes)
    release: tuple[int, ...]
    scratch: bool = False       # takes a scratch buffer (worked out once: a run's every launch asked)


@dataclass(frozen=True)
class _Library:
    """An opaque kernel: its nodes evaluated with CuPy, as eager code would."""

    code: OpaqueCall
    release: tuple[int, ...]


class Executable:
    """A plan made ready to run: code generated and compiled, buffers and frees planned,
    so that `run` does little more than allocate outputs and launch."""

    def __init__(self, plan: Plan, codes: Sequence[KernelCode | OpaqueCall] | None = None,
                 options: CodegenOptions | None = None, tune: bool = True) -> None:
        """`codes` given: run exactly those. Otherwise the plan's generated code, with the
        launch configurations tuned on this GPU (on the first run, or from the cache)."""
        self.plan = plan
        # who takes the warnings of library calls (CuPy's, run node by node): the cell
        # whose line gave them, on the run whose results it binds (Session.execute)
        self.library_warning: Callable[[int, Any], None] | None = None
        self.options = device_options(options)
        self.tuning: dict[int, Tuning] = {}
        self._pending: dict[int, Pending] = {}
        if codes is not None:
            self.codes = tuple(codes)
        else:
            self.codes = generate(plan, self.options)
            if tune:
                self.codes, self.tuning, pending = plan_tuning(plan, self.codes, self.options, _device(), __version__)
                self._pending = {p.index: p for p in pending}
        if len(self.codes) != len(plan.kernels):
            raise ValueError(f"{len(self.codes)} codes for a plan of {len(plan.kernels)} kernels")
        kernels = [c for c in self.codes if isinstance(c, KernelCode)]
        compiled_all, extra = self._compile(kernels)
        compiled = dict(zip((c.index for c in kernels), compiled_all))
        self._candidate_fns = {id(c): f.function for c, f in zip(extra, compiled_all[len(kernels):])}
        self.compile_s = {c.name: compiled[c.index].compile_s for c in kernels}
        if extra:
            self.compile_s["(candidates)"] = sum(f.compile_s for f in compiled_all[len(kernels):])
        self.cache_hits = sum(1 for c in compiled.values() if c.cached)
        g = plan.graph
        keep = set(g.output_ids) | set(g.input_ids)
        last: dict[int, int] = {}
        for k, kern in enumerate(plan.kernels):
            for j in kern.inputs:
                last[j] = k
        release: list[list[int]] = [[] for _ in plan.kernels]
        for k, kern in enumerate(plan.kernels):
            for o in kern.outputs:
                if o not in keep:
                    release[last.get(o, k)].append(o)
        steps: list[_Launch | _Library] = []
        for code, rel in zip(self.codes, release):
            if isinstance(code, OpaqueCall):
                steps.append(_Library(code, tuple(rel)))
                continue
            outs = tuple((o, g.nodes[o].shape, g.nodes[o].dtype, g.nodes[o].aval.nbytes) for o in code.outputs)
            steps.append(_Launch(code, compiled[code.index].function, code.inputs, outs, tuple(rel),
                                 code.scratch_bytes > 0))
        self.steps = steps
        self.scratch_bytes = sum(c.scratch_bytes for c in kernels)
        self.peak_bytes = 0

    # -- running -------------------------------------------------------------
    def prepare(self, inputs: Mapping[str, Any]) -> dict[int, Any]:
        """The graph's inputs as C-contiguous, 16-byte aligned CuPy arrays, by node id."""
        import cupy
        env: dict[int, Any] = {}
        g = self.plan.graph
        for nid in g.input_ids:
            n = g.nodes[nid]
            name = n.args["name"]
            if name not in inputs:
                raise KeyError(f"input {name!r} is missing")
            value = inputs[name]
            if getattr(value, "ndim", None) == 0 and isinstance(value, np.ndarray):
                # 0-d arrays go up as one-element arrays: the GPU fuzzer saw a 0-d float16
                # -0.0 arrive as +0.0 (not reproduced off the device; a plain copy is exact)
                a = cupy.asarray(value.reshape(1)).reshape(())
            else:
                a = cupy.asarray(value)
            if a.shape != n.shape or a.dtype != n.dtype:
                raise ValueError(f"input {name!r} is {a.dtype}{list(a.shape)}, the graph was traced "
                                 f"with {n.dtype}{list(n.shape)}")
            env[nid] = _device_ready(a)
        return env

    def device_values(self, known: Mapping[int, Any],
                      schedule: tuple[tuple[bool, tuple[int, ...]], ...] | None = None) -> dict[int, Any]:
        """The values computed at graph breaks (`known`, by node, NumPy or CuPy) that a
        run of this plan takes (breaks.from_breaks), as device arrays."""
        import cupy
        g = self.plan.graph
        out: dict[int, Any] = {}
        for _, taken in schedule or from_breaks(self.plan, known):
            for o in taken:
                n = g.nodes[o]
                out[o] = _device_ready(cupy.asarray(known[o], dtype=n.dtype).reshape(n.shape))
        return out

    def run(self, inputs: Mapping[str, Any] | None = None, env: dict[int, Any] | None = None,
            events: list | None = None, release: bool = True,
            known: Mapping[int, Any] | None = None) -> dict[str, Any]:
        """Launch every kernel (asynchronously: no sync at graph breaks, see breaks.py).
        With `events`, records a CUDA event before each kernel and one after the last,
        for per-kernel times. `release=False` keeps every intermediate alive (a CUDA
        graph capture needs its buffers to stay). `known`: values computed at graph
        breaks, by node, which the run takes instead of computing them again."""
        import cupy
        env = dict(env) if env is not None else self.prepare(inputs or {})
        schedule = from_breaks(self.plan, known) if known else None
        taken = self.device_values(known, schedule) if schedule else {}   # before any launch
        empty = cupy.empty
        live = peak = sum(a.nbytes for a in taken.values())
        step: _Launch | _Library | None = None
        try:
            for k, step in enumerate(self.steps):
                if events is not None:
                    events.append(cupy.cuda.Event())
                    events[-1].record()
                runs, from_break = schedule[k] if schedule else (True, ())
                if not runs:
                    pass   # everything it would store was computed at a graph break
                elif type(step) is _Launch:
                    outs = []
                    for o, shape, dtype, nbytes in step.outputs:
                        env[o] = a = empty(shape, dtype)
                        outs.append(a)
                        live += nbytes
                    if k in self._pending:
                        step = self._tune(k, step, [env[i] for i in step.inputs], outs)
                    code = step.code
                    if code.grid[0]:
                        args = [env[i] for i in step.inputs] + outs
                        if step.scratch:
                            args += _scratch(code)
                        step.function(code.grid, code.block, tuple(args), shared_mem=code.shared_mem)
                else:
                    live += self._library(step.code, env)
                for o in from_break:   # the value Python saw, not this kernel's
                    if o in env:
                        live -= env[o].nbytes
                    env[o] = taken[o]
                if live > peak:
                    peak = live
                if release:
                    for j in step.release:
                        if j in env:   # (never stored when no launched kernel needed it)
                            live -= env.pop(j).nbytes
        except cupy.cuda.memory.OutOfMemoryError as e:
            raise out_of_memory(f"the outputs of {step.code.name}", _step_bytes(step), e) from None
        except cupy.cuda.driver.CUDADriverError as e:
            code = step.code
            raise launch_failed(code.name, getattr(code, "grid", ()), getattr(code, "block", ()),
                                getattr(code, "shared_mem", 0), e) from None
        if events is not None:
            events.append(cupy.cuda.Event())
            events[-1].record()
        self.peak_bytes = peak + self.scratch_bytes
        return {name: env[i] for name, i in self.plan.graph.outputs}

    def _compile(self, kernels: list[KernelCode]) -> tuple[list, list[KernelCode]]:
        """The kernels and the tuning candidates compiled together; a candidate the
        compiler refuses (a limit the configuration's checks missed) is left out of the
        timing instead of failing the cell: only the kernels themselves must compile."""
        extra = [c for p in self._pending.values() for c in p.candidates[1:]]
        try:
            return compile_kernels(kernels + extra), extra
        except (CompileError, FuselabRuntimeError):
            if not extra:
                raise
        done = compile_kernels(kernels)
        kept: list[KernelCode] = []
        for p in self._pending.values():
            ok = [p.candidates[0]]
            for c in p.candidates[1:]:
                try:
                    done += compile_kernels([c])
                except (CompileError, FuselabRuntimeError):
                    continue
                ok.append(c)
                kept.append(c)
            p.candidates[:] = ok
        return done, kept

    def _tune(self, k: int, step: "_Launch", ins: list, outs: list) -> "_Launch":
        """Time kernel k's candidates on these buffers, keep the fastest (here and on disk).
        Threads sharing this executable (Dask's threaded scheduler, a GPU worker with
        several threads) take the kernel from the pending set atomically: one tunes, the
        others launch the step as it stands."""
        pending = self._pending.pop(k, None)
        if pending is None:
            return self.steps[k]
        fns = {id(pending.candidates[0]): step.function, **self._candidate_fns}

        def launch_one(c: KernelCode) -> None:
            if c.grid[0]:
                fns[id(c)](c.grid, c.block, (*ins, *outs, *_scratch(c)), shared_mem=c.shared_mem)

        times = time_candidates(launch_one, pending.candidates)
        best = min(range(len(times)), key=times.__getitem__)
        win = pending.candidates[best]
        labels = tuple((c.config.label(), t) for c, t in zip(pending.candidates, times))
        cache().put(pending.key, win.config, labels)
        self.tuning[k] = Tuning(win.name, win.config, "tuned", labels)
        if best:
            step = _Launch(win, fns[id(win)], step.inputs, step.outputs, step.release, win.scratch_bytes > 0)
            self.steps[k] = step
            codes = list(self.codes)
            codes[k] = win
            self.codes = tuple(codes)
        return step

    def _library(self, code: OpaqueCall, env: dict[int, Any]) -> int:
        """Evaluate an opaque kernel's nodes with CuPy; returns the bytes it stored. The
        warnings CuPy gives go to `library_warning` (node id, warning), else nowhere: a
        check's or a timing's rerun gives none (plain execution runs each line once)."""
        import cupy
        local = eval_nodes(cupy, self.plan.graph, code.nodes or (code.node,), env,
                           on_warning=self.library_warning or _ignore_warning)
        stored = 0
        for o in code.outputs:
            # not ascontiguousarray: it makes 0-d results 1-d (np.median's came back as (1,))
            env[o] = _device_ready(cupy.asarray(local[o]).reshape(self.plan.graph.nodes[o].shape))
            stored += env[o].nbytes
        return stored


def _ignore_warning(node: int, w: Any) -> None:
    pass


def _step_bytes(step: Any) -> int:
    return sum(nb for *_, nb in getattr(step, "outputs", ()))


def _device_ready(a: Any) -> Any:
    """Kernels index arrays as C-contiguous and load them 16 bytes at a time."""
    if not a.flags.c_contiguous or a.data.ptr % 16:
        a = a.copy()
    return a


def _scratch(code: KernelCode) -> tuple[Any, ...]:
    """The kernel's scratch argument: a zeroed buffer per kernel, device and stream (the
    kernel leaves it zeroed again). Launches on one stream run in order, so they may share
    one; launches on two streams (threads with streams of their own, a Dask GPU worker with
    several threads and per-thread default streams) may overlap, and each has its own."""
    if not code.scratch_bytes:
        return ()
    import cupy
    key = (cupy.cuda.Device().id, cupy.cuda.get_current_stream().ptr, code.source)
    buf = _SCRATCH.get(key)
    if buf is None:
        buf = _SCRATCH[key] = cupy.zeros(code.scratch_bytes, np.uint8)
    return (buf,)


def synchronize(what: str) -> None:
    """Wait for the GPU; turn an asynchronous fault into a FuselabRuntimeError."""
    import cupy
    try:
        cupy.cuda.get_current_stream().synchronize()
    except cupy.cuda.runtime.CUDARuntimeError as e:
        raise FuselabRuntimeError(f"the GPU reported an error while running {what}",
                                  "this is a fuselab bug: please report the cell; the CUDA context may be "
                                  "unusable until the Python kernel restarts", e) from None
    except cupy.cuda.driver.CUDADriverError as e:
        raise FuselabRuntimeError(f"the GPU reported an error while running {what}",
                                  "this is a fuselab bug: please report the cell; restart the Python kernel",
                                  e) from None


def execute(plan: Plan, inputs: Mapping[str, Any], codes: Sequence[KernelCode | OpaqueCall] | None = None,
            options: CodegenOptions | None = None, known: Mapping[int, Any] | None = None) -> dict[str, Any]:
    """Run `plan` on the GPU: outputs by name, as CuPy arrays. `known`: values computed
    at graph breaks (TraceResult.break_values), taken instead of computed again."""
    exe = Executable(plan, codes, options)
    outs = exe.run(inputs, known=known)
    synchronize(f"the {plan.strategy} plan")
    return outs
