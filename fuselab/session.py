"""The session: one object that holds everything about a traced cell — graph, current
plan, generated code, results, measurements — for the magic and the explorer to read.

Stages produce immutable values; the session only remembers the latest of each and
recomputes what a plan change invalidates. Widgets never compute: they call `choose()`,
`fuse()` or `split()` here and redraw from the new state.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .errors import BackendError, FuselabError, OptionError
from .ir import Graph
from .plan import Plan, PlanError, make_plan, unfused_plan
from .runtime.verify import Check, on_host  # plain data; importing it loads no CuPy
from .trace import TraceResult
from .trace.held import own as own_arrays

BACKENDS = ("auto", "cuda", "cpu", "numba")  # on Dask inputs every choice is the Dask path ("dask")
STRATEGIES = ("auto", "unfused", "max")
FP16_CHOICES = ("numpy", "fast")


def _on_host(values: Mapping[Any, Any]) -> dict[Any, Any]:
    """NumPy copies of CuPy arrays (the CPU backends' inputs), other values as they are."""
    return {k: on_host(v) for k, v in values.items()}


def check_options(*, repeats: Any = 20, fp16: Any = "numpy") -> None:
    """Options run_cell and explore take, checked before anything runs (the magic's
    parser checks its flags): a bad value failed late, as a StatisticsError of the timer
    or a ValueError of code generation, after the cell had run."""
    if isinstance(repeats, bool) or not isinstance(repeats, numbers.Integral) or repeats < 1:   # (np.int64 too)
        raise OptionError(f"repeats={repeats!r}: the number of timed repeats must be a positive integer",
                          None, "pass repeats=20 (the default) or another positive number; -n 20 in %%fuse")
    if fp16 not in FP16_CHOICES:
        raise OptionError(f"fp16={fp16!r}: there is no such float16 mode", None,
                          f"choose one of {', '.join(repr(c) for c in FP16_CHOICES)} (--fp16 in %%fuse)")


def _target_text(target: Any) -> str:
    """A fuse/split target as the listing and the drawing name it (the explorer's message
    said "split ('k', 0)" after a click on a kernel's split button)."""
    if isinstance(target, tuple) and len(target) == 2 and target[0] == "k":
        return f"k{target[1]}"
    if isinstance(target, tuple) and len(target) == 2 and all(isinstance(t, numbers.Integral) for t in target):
        return f"%{target[0]} → %{target[1]}"
    if isinstance(target, numbers.Integral) and not isinstance(target, bool):
        return f"%{target}"
    return str(target)


class PlanChoiceError(FuselabError, PlanError):
    """A plan change the planner refused; the plan stays as it was. `reason` is the
    planner's own words (what the explorer shows). Still a PlanError for code that
    catches the planner's refusals."""

    def __init__(self, what: str, reason: str, hint: str) -> None:
        self.reason = reason
        super().__init__(what, None, hint)


@dataclass(frozen=True)
class KernelInfo:
    """What the explorer shows of one kernel: the plan's kernel plus its code."""

    index: int
    kernel: Any
    code: Any | None = None         # codegen KernelCode (None for opaque / not generated)
    py_code: Any | None = None      # the Numba backend's PyKernel (None: not generated)
    python_first: bool = False      # the session runs the Python (Numba) code, not the CUDA

    @property
    def name(self) -> str:
        return getattr(self.code, "name", None) or f"k{self.index}_{self.kernel.name}"

    @property
    def nodes(self) -> tuple[int, ...]:
        return self.kernel.nodes

    @property
    def template(self):
        return self.kernel.template

    @property
    def source(self) -> str | None:
        return getattr(self.code, "source", None)

    def __repr__(self) -> str:
        k = self.kernel
        ids = lambda nodes: ", ".join(f"%{i}" for i in nodes) or "-"  # noqa: E731
        return (f"<kernel k{self.index} {self.name}: {k.template.value}, {len(k.nodes)} node(s), "
                f"reads {ids(k.inputs)}, writes {ids(k.outputs)}>")

    @property
    def python_source(self) -> str | None:
        return getattr(self.py_code, "source", None)


def cuda_status() -> tuple[bool, str]:
    """Can the CUDA backend run here? (available, reason if not, in a user's words)."""
    try:
        from .runtime import cuda_available
    except ImportError as e:  # runtime package missing its dependencies
        return False, f"the CUDA runtime could not be imported ({e})"
    ok, why = cuda_available()
    if not ok and why.startswith("no CUDA device"):
        # CuPy's own words here are about driver versions even when there is no GPU at all
        why = "no NVIDIA GPU"
    return ok, why


def numba_status() -> tuple[bool, str]:
    """Can the Numba CPU backend run here? (available, reason if not)."""
    from .numba_backend import available, warm_up
    ok = available()
    if ok[0]:
        warm_up()     # Numba's own set-up overlaps tracing and planning
    return ok


def resolve_backend(requested: str, array_module: str) -> tuple[str, str]:
    """(backend, note) for a requested backend and the cell's kind of input arrays."""
    if requested not in BACKENDS:
        raise BackendError(f"unknown backend {requested!r}", None, f"choose one of {', '.join(BACKENDS)}")
    if array_module == "dask":
        return "dask", "Dask: the results are lazy Dask arrays whose tasks run each kernel per block"
    if requested == "cpu":
        if array_module == "cupy":
            return "cpu", "CPU backend: CuPy inputs are copied to the host and back"
        return "cpu", "CPU backend (requested): the plan runs with NumPy, kernel by kernel; times are predicted"
    if requested == "numba":
        ok, why = numba_status()
        if not ok:
            raise BackendError(f"the Numba backend cannot run here: {why}", None,
                               "pip install 'fuselab[cpu]', or use --backend cpu (backend='cpu' in fuselab.explore)")
        copied = "; CuPy inputs are copied to the host and back" if array_module == "cupy" else ""
        return "numba", f"Numba backend (requested): each kernel compiled for the CPU; times are measured{copied}"
    ok, why = cuda_status()
    if ok:
        return "cuda", ""
    if requested == "cuda" or array_module == "cupy":
        raise BackendError(f"the CUDA backend cannot run here: {why}", None,
                           f"run on a machine with an NVIDIA GPU and CuPy, or {_cpu_backend_hint()} with NumPy arrays")
    if numba_status()[0]:
        return "numba", f"Numba backend ({why}): each kernel compiled for the CPU; times are measured"
    return "cpu", f"CPU backend ({why}): the plan runs with NumPy, kernel by kernel; times are predicted"


def _cpu_backend_hint() -> str:
    """How to ask for the CPU's best backend, in the magic's flags and in explore()'s
    arguments (the hint reaches users of both)."""
    name = "numba" if numba_status()[0] else "cpu"
    return f"use --backend {name} (backend={name!r} in fuselab.explore)"


class Session:
    def __init__(self, traced: TraceResult, strategy: str = "auto", backend: str = "auto",
                 repeats: int = 20, codegen_options: Any = None) -> None:
        if strategy not in STRATEGIES:   # (the planner's bare ValueError said nothing of what to do)
            raise PlanChoiceError(f"plan={strategy!r}: there is no such plan", "no such plan",
                                  f"choose one of {', '.join(repr(s) for s in STRATEGIES)}")
        check_options(repeats=repeats)
        self.traced = traced
        self.graph: Graph = traced.graph
        self.requested_backend = backend
        self.backend, self.backend_note = resolve_backend(backend, traced.array_module)
        self.repeats = repeats
        self.codegen_options = codegen_options
        self.unfused: Plan = unfused_plan(self.graph)
        self.plan: Plan = self.unfused if strategy == "unfused" else self._make_plan(strategy)
        self.history: list[Plan] = [self.plan]
        self.message = ""                 # the last choice's outcome, e.g. a refusal reason
        self.outputs: dict[str, Any] | None = None
        own_arrays(self)   # (its outputs are the arrays the cell bound: not another holder of them)
        self.check: Check | None = None
        self.measurement: Any = None
        self.timing_error: str | None = None   # why the magic's timing failed (the results stand)
        self.dask_run: Any = None           # Dask path: how each kernel ran (fuselab.dask.execute.DaskRun)
        self._listeners: list[Callable[["Session"], None]] = []

    # -- reading --------------------------------------------------------------
    @property
    def inputs(self) -> Mapping[str, Any]:
        return self.traced.inputs

    @property
    def kernels(self) -> tuple[KernelInfo, ...]:
        codes = self.codes(optional=True)
        py = self.python_codes(optional=True)
        return tuple(KernelInfo(i, k, codes[i] if codes else None, py[i] if py else None,
                                self.backend == "numba") for i, k in enumerate(self.plan.kernels))

    def report(self, plan: Plan | None = None):
        """The planner's cost report (bytes, launches, predicted time) for a plan."""
        from .plan import cost
        return cost.report(plan or self.plan, self.device_params())

    def device_params(self):
        from .plan.cost import DeviceParams
        if self.backend == "numba":
            from .numba_backend.calibrate import device_params
            return device_params()
        if self.backend == "cuda":
            try:
                from .runtime import calibration
                return DeviceParams.from_dict(calibration())
            except Exception:  # calibration is an improvement, never a requirement
                pass
        return DeviceParams.h200_default()

    def codes(self, optional: bool = False) -> tuple | None:
        """Generated CUDA for each kernel of the current plan: on the CUDA backend, what
        the runtime launches (this GPU's grid sizes, the launch configurations tuned for
        it once a run has tuned them); elsewhere, the heuristics' code for the options.
        Generated once, in codegen's cache. `optional`: None instead of an error."""
        try:
            if self.backend == "cuda":
                from .runtime import launch_codes
                return launch_codes(self.plan, self.codegen_options)
            from .codegen import generate
            return generate(self.plan, self.codegen_options)
        except Exception:
            if optional:
                return None
            raise

    def python_codes(self, optional: bool = False) -> tuple | None:
        """The Numba backend's Python for each kernel of the current plan (generating
        it needs no Numba; kept in codegen's cache)."""
        try:
            from .codegen.cache import cached, graph_key
            from .numba_backend import generate
            options = self.numba_options()
            return cached(("numba", graph_key(self.plan.graph), self.plan.kernels, options),
                          lambda: generate(self.plan, options))
        except Exception:
            if optional:
                return None
            raise

    def numba_options(self):
        from .numba_backend import NumbaOptions
        return NumbaOptions(fp16_math=getattr(self.codegen_options, "fp16_math", "numpy"))

    def _make_plan(self, strategy: str) -> Plan:
        """Plans for the machine that runs them: the Numba backend plans with the CPU's
        calibrated figures; on Dask, kernels that would read other blocks are cut there."""
        plan = make_plan(self.graph, strategy, params=self.device_params() if self.backend == "numba" else None)
        if self.backend == "dask":
            from .dask.planning import chunkable
            plan = chunkable(plan)
        return plan

    @property
    def plan_label(self) -> str:
        """"auto plan", or "auto plan with your changes" once fuse/split (a click, a
        toggle) constrain it: the strategy alone named a plan the user had changed by hand."""
        changed = self.plan.constraints.active
        return f"{self.plan.strategy} plan" + (" with your changes" if changed else "")

    # -- choosing ---------------------------------------------------------------
    def on_change(self, callback: Callable[["Session"], None]) -> None:
        self._listeners.append(callback)

    def _set(self, plan: Plan, message: str = "") -> Plan:
        self.plan = plan
        self.history.append(plan)
        self.message = message
        self.measurement = None
        self.check = None
        for cb in self._listeners:
            cb(self)
        return plan

    def choose(self, strategy: str) -> Plan:
        if strategy not in STRATEGIES:
            raise PlanChoiceError(f"session.choose({strategy!r}): there is no such plan", "no such plan",
                                  f"choose one of {', '.join(repr(s) for s in STRATEGIES)}")
        plan = self.unfused if strategy == "unfused" else self._make_plan(strategy)
        return self._set(plan, f"{strategy} plan")

    def fuse(self, *targets: Any) -> Plan:
        """Put the targets (node ids, kernel indices as ('k', i), or edges) in one kernel;
        raises PlanError with the planner's reason when illegal, leaving the plan as it was."""
        return self._apply("fuse", targets)

    def split(self, *targets: Any) -> Plan:
        return self._apply("split", targets)

    def _apply(self, verb: str, targets: Sequence[Any]) -> Plan:
        try:
            if not targets and verb == "split":   # (it re-planned as it was, an undo step named "split ")
                raise ValueError("name what to split: an op, a kernel or an edge")
            new = getattr(self.plan, verb)(*targets)
        except FuselabError:
            raise
        except (ValueError, KeyError, IndexError, TypeError) as e:
            # PlanError or a target the plan does not have: the plan stays as it was
            self.message = str(e)
            for cb in self._listeners:
                cb(self)
            call = f"session.{verb}({', '.join(map(repr, targets))})"
            raise PlanChoiceError(f"{call}: {e}", str(e),
                                  "the plan is as it was; targets are node ids (3), kernels (('k', 0)) "
                                  "or edges ((2, 5)) of session.plan, see session.explain()") from None
        return self._set(new, f"{verb} {', '.join(map(_target_text, targets))}")

    def undo(self) -> Plan:
        if len(self.history) > 1:
            self.history.pop()
            self.plan = self.history[-1]
            self.measurement = None
            self.check = None   # (the undone plan's: the plan restored has not run since)
            for cb in self._listeners:
                cb(self)
        return self.plan

    def held_arrays(self) -> list[Any]:
        """The arrays this session references after its cell (trace.held.own)."""
        return list((self.outputs or {}).values())

    # -- running ----------------------------------------------------------------
    def execute(self) -> dict[str, Any]:
        """Run the current plan; outputs as the cell's array module gives them."""
        if not self.graph.outputs:  # every result is the user's array, a view or a copy of it
            self.outputs, self.check = {}, Check(True, "", ("nothing to run",))
            return {}
        # values computed at graph breaks (by NumPy, CuPy or Dask, as the cell's arrays are)
        # are taken, not computed again, by every backend: what follows from them is what
        # follows from the values Python branched on (runtime/breaks.py)
        known = self.traced.break_values()
        if self.backend == "dask":
            from .dask.session import run
            outs, self.dask_run, self.check = run(self)   # (takes them itself)
        elif self.backend == "cuda":
            from . import runtime
            outs, self.check = runtime.execute_checked(self.plan, self.unfused, self.traced.inputs,
                                                       options=self.codegen_options, known=known,
                                                       library_warning=self._library_warning())
            if self.traced.array_module == "numpy":
                outs = _on_host(outs)
        elif self.backend == "numba":
            from .numba_backend.measure import execute_checked
            numpy_in = self.traced.array_module == "numpy"
            outs, self.check = execute_checked(self.plan, _on_host(self.traced.inputs), self.numba_options(),
                                               on_fp_error=self.traced.fp_error if numpy_in else None,
                                               known=_on_host(known))
            if self.traced.array_module == "cupy":
                import cupy
                outs = {k: cupy.asarray(v) for k, v in outs.items()}
        else:
            from .interp import run_plan
            # NumPy inputs: the floating-point errors NumPy would warn about are reported
            report = self.traced.fp_error if self.traced.array_module == "numpy" else None
            outs = run_plan(self.plan, _on_host(self.traced.inputs), np, on_fp_error=report, known=_on_host(known))
            if self.traced.array_module == "cupy":
                import cupy
                outs = {k: cupy.asarray(v) for k, v in outs.items()}
            self.check = Check(True, "", ("reference interpreter (NumPy)",))
        self.outputs = outs
        return outs

    def _library_warning(self) -> Callable[[int, Any], None] | None:
        """Where the warnings CuPy gives in library calls go: a CuPy cell's to its line,
        in program order with the trace's (plain CuPy gives them there: `c.astype(float)`
        of complex values); a NumPy cell's warnings are NumPy's, which the trace gave."""
        cell = self.traced.warnings
        if self.traced.array_module != "cupy" or cell is None:
            return None
        from .interp import PythonWarning
        from .recording import library_line
        nodes = self.graph.nodes

        def give(node: int, w: Any) -> None:
            where = library_line(w)
            loc = PythonWarning(str(w.message), w.category, *where) if where else nodes[node].loc
            cell.python((node, 1, 0), str(w.message), loc, w.category)
        return give

    def measure(self, repeats: int | None = None, progress: Callable[[str], None] | None = None):
        """Time plan, unfused and eager runs on the GPU (CUDA backend); on Dask inputs, the
        fused plan's `.compute()` against the cell as plain Dask, on the current scheduler."""
        if repeats is not None:
            check_options(repeats=repeats)   # (0 failed in the timer's median, after the runs)
        self.timing_error = None
        if self.backend == "dask":
            from .dask.session import measure
            self.measurement = measure(self, repeats)
            for cb in self._listeners:
                cb(self)
            return self.measurement
        if self.backend == "numba":
            from .numba_backend.measure import measure as measure_cpu
            self.measurement = measure_cpu(self.plan, self.unfused, _on_host(self.traced.inputs),
                                           repeats=repeats or self.repeats, options=self.numba_options(),
                                           progress=progress)
            for cb in self._listeners:
                cb(self)
            return self.measurement
        if self.backend != "cuda":
            raise BackendError("measurement needs the CUDA or the Numba backend", None,
                               "run on a machine with an NVIDIA GPU, or pip install 'fuselab[cpu]' and use "
                               "--backend numba; predicted times are shown instead")
        from . import runtime
        self.measurement = runtime.measure(self.plan, self.unfused, self.traced.inputs,
                                           repeats=repeats or self.repeats, options=self.codegen_options,
                                           progress=progress)
        for cb in self._listeners:
            cb(self)
        return self.measurement

    def dask_info(self):
        """Dask path: block grids, how each kernel ran, rechunks, tasks fused vs plain
        Dask (fuselab.dask.session.DaskInfo); None before a run or on other backends."""
        if self.backend != "dask" or self.dask_run is None:
            return None
        if getattr(self, "_dask_info", (None,))[0] is not self.dask_run:
            from .dask.session import info
            self._dask_info = (self.dask_run, info(self))
        return self._dask_info[1]

    # -- showing ----------------------------------------------------------------
    def summary(self) -> str:
        """Plain-text summary: the listing with kernel boundaries and the plan's totals."""
        from .display import text_summary
        return text_summary(self)

    def explain(self) -> str:
        """Why the plan is what it is: results and graph breaks, then every kernel with
        the planner's decisions (each merge's gain, each boundary's reason)."""
        from .display import text_header
        return text_header(self) + "\n\n" + self.plan.explain()

    def display(self, static: bool = False):
        from .display import show
        return show(self, static=static)

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(self.summary())

    def __repr__(self) -> str:
        return (f"<fuselab.Session: {len(self.graph)} nodes, {len(self.plan.kernels)} kernels "
                f"({self.plan.strategy}), backend {self.backend}>")
