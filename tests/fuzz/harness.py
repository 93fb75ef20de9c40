"""Running generated cells through fuselab and judging them against NumPy.

For each program: trace the cell's source (as `%%fuse` would), plan it unfused, auto,
max and under a random user constraint, generate every kernel with the program's codegen
options, run each plan (on the CPU emulator of CUDA, or on the GPU), and compare every
result the cell binds with NumPy's value within the bound the generator derived (bit for
bit on exact paths). Programs are run in batches: one host-compiler build (or one NVRTC
round) for all the kernels of a batch.
"""
from __future__ import annotations

import ctypes
import hashlib
import mmap
import sys
import traceback
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

import fuselab
from fuselab.codegen import CodegenOptions, KernelCode, generate, launch_candidates
from fuselab.plan import make_plan, unfused_plan
from fuselab.plan.legality import DEFAULT_BUDGETS
from fuselab.plan.model import Plan, PlanError

from .coverage import Cell, cells_of, features_of
from .generator import Program
from .numerics import compare


@dataclass
class Outcome:
    program: Program
    failures: list[str] = field(default_factory=list)
    cells: list[Cell] = field(default_factory=list)
    features: set[str] = field(default_factory=set)
    plans: int = 0
    digests: dict[str, str] = field(default_factory=dict)   # integer results, for cross-checks

    @property
    def ok(self) -> bool:
        return not self.failures


@dataclass
class Prepared:
    """A traced program and its plans, with their generated code."""

    program: Program
    outcome: Outcome
    results: tuple[str, ...] = ()
    inputs: dict[str, Any] = field(default_factory=dict)
    plans: list[tuple[str, Plan, tuple]] = field(default_factory=list)   # (label, plan, codes)


def random_constraint(plan: Plan, seed: int) -> Plan | None:
    """The auto plan with one random user toggle (fuse two kernels, or cut an edge), as
    the explorer would ask; None when the planner refuses it (with its reason)."""
    rng = np.random.default_rng(seed)
    g = plan.graph
    edges = [(j, i) for i, n in enumerate(g.nodes) for j in n.inputs
             if g.nodes[j].op != "input" and plan.kernel_of.get(j) is not None and plan.kernel_of.get(i) is not None]
    try:
        if rng.random() < 0.5 and len(plan.kernels) > 1:
            a, b = rng.choice(len(plan.kernels), 2, replace=False)
            return plan.fuse(("k", int(a)), ("k", int(b)))
        if edges:
            return plan.cut(*edges[int(rng.integers(len(edges)))])
    except PlanError:
        return None
    return None


def random_configs(plan: Plan, program: Program) -> dict[int, Any]:
    rng = np.random.default_rng(program.constraint_seed + 1)
    out = {}
    for k in range(len(plan.kernels)):
        cands = launch_candidates(plan, k, program.options)
        if cands:
            out[k] = cands[int(rng.integers(len(cands)))]
    return out


def prepare(program: Program) -> Prepared:
    """Trace, plan and generate; failures of these steps are the program's failures."""
    out = Outcome(program)
    prep = Prepared(program, out)
    ns = {"np": np, **program.inputs}
    try:
        traced = fuselab.trace_cell(program.source, ns)
    except Exception as e:  # noqa: BLE001 - a valid NumPy cell must trace
        out.failures.append(f"trace: {type(e).__name__}: {e}")
        return prep
    prep.results = traced.results
    prep.inputs = dict(traced.inputs)
    extra = [n for n in traced.results if n not in program.values]
    if extra:
        out.failures.append(f"fuselab binds {extra}, which NumPy does not")
    try:
        auto = make_plan(traced.graph, "auto")
        # "max" without the planning budget on strided rows: the fuzzer's small arrays
        # still merge reductions along a non-last axis with their use (row/strided)
        most = make_plan(traced.graph, "max", budgets=replace(DEFAULT_BUDGETS, min_strided_rows=2))
        plans = [("unfused", unfused_plan(traced.graph)), ("auto", auto), ("max", most)]
        constrained = random_constraint(auto, program.constraint_seed)
        if constrained is not None:
            plans.append(("constrained", constrained))
    except Exception as e:  # noqa: BLE001
        out.failures.append(f"plan: {type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}")
        return prep
    for label, plan in plans + [("tuned", auto)]:
        try:
            # "tuned": the auto plan with a random launch configuration per kernel, as
            # the autotuner may pick; configurations must never change results
            configs = random_configs(plan, program) if label == "tuned" else None
            codes = generate(plan, program.options, configs)
        except Exception as e:  # noqa: BLE001
            out.failures.append(f"{label} plan, codegen: {type(e).__name__}: {e}\n{plan}")
            continue
        prep.plans.append((label, plan, codes))
        for kern, code in zip(plan.kernels, codes):
            if isinstance(code, KernelCode):
                out.cells += cells_of(plan.graph, kern.nodes, code)
        out.features |= features_of(plan.graph, plan, codes, program.inputs)
    if program.target is not None and program.target.kind == "struct":
        out.features.add(f"scenario: {program.target.where}")
    return prep


def judge(prep: Prepared, label: str, plan: Plan, got: dict[str, Any]) -> None:
    out, program = prep.outcome, prep.program
    out.plans += 1
    for name in prep.results:
        if name not in program.values or name not in got:
            continue
        want = program.values[name]
        g = np.asarray(got[name].get() if hasattr(got[name], "get") else got[name])
        v = compare(name, g, want.arr, want.bound, want.any_zero_sign)
        if not v.ok:
            out.failures.append(f"{label} plan: {v.message}\n{plan}")
        if g.dtype.kind in "biu":
            out.digests[f"{label}:{name}"] = hashlib.sha1(np.ascontiguousarray(g).tobytes()).hexdigest()[:16]


Runner = Callable[[Sequence[Prepared]], None]


class ContextLost(Exception):
    """A GPU fault (an illegal address) cost this process its CUDA context: every later
    call would fail too. `prep` is the program whose run faulted; `outcomes` (set by
    run_batch) those of the batch up to it, the rest not run."""

    def __init__(self, prep: "Prepared", outcomes: "list[Outcome] | None" = None) -> None:
        super().__init__(prep.program.seed)
        self.prep, self.outcomes = prep, outcomes or []


_LOST = ("illegal memory access", "IllegalAddress", "ILLEGAL_ADDRESS", "unspecified launch failure",
         "LAUNCH_FAILED", "IllegalInstruction", "MisalignedAddress")


def context_lost(e: BaseException) -> bool:
    text = f"{type(e).__name__}: {e} {e.__cause__ or ''} {e.__context__ or ''}"
    return any(m in text for m in _LOST)


def nvrtc_check(preps: Sequence[Prepared]) -> None:
    """Every kernel of the batch compiled to PTX by NVRTC where it is installed (no GPU
    needed): the emulator's host compiler accepts C++ that NVRTC does not (its <cmath>
    macros, host-only functions), and such kernels would fail only on a GPU."""
    from fuselab.codegen.nvrtc import available
    from codegen_util import nvrtc_refusals
    if not available()[0]:
        return
    where = {}   # kernel source -> the (program, plan label)s that generated it
    for p in preps:
        for label, _, cs in p.plans:
            for c in cs:
                if isinstance(c, KernelCode):
                    where.setdefault(c.source, []).append((p, label, c))
    kernels = [uses[0][2] for uses in where.values()]
    for code, e in nvrtc_refusals(kernels, preps[0].program.options.arch if preps else "sm_90"):
        for p, label, _ in where[code.source]:
            p.outcome.failures.append(f"{label} plan, NVRTC: {type(e).__name__}: {e}")


_PAGE = mmap.PAGESIZE
_guards = {"n": 0}


def _guarded_empty(shape, dtype) -> np.ndarray:
    """An array of the emulator's (inputs, outputs, intermediates, scratch) next to a
    page no access is allowed to: its data ends where the page begins (every other
    array), or begins where it ends. A GPU faults on loads outside an allocation
    (the GPU fuzzer's illegal addresses); the emulator's arrays had zeroed slack around
    them, where such loads read zeros, the value a sum wants. Now a load or store more
    than the 16 bytes of a vector beyond either end stops the process (SIGSEGV): the
    driver reports the program as one that crashed its worker; the slack within reach
    of a vector holds all-ones bytes (NaN, -1). Data stays 16-byte aligned."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if n == 0:
        return np.zeros(shape, dt)
    n16 = -(-n // 16) * 16
    data_pages = -(-n16 // _PAGE)
    mm = mmap.mmap(-1, (data_pages + 1) * _PAGE)
    mm.write(b"\xff" * len(mm))   # slack a vector may read but no result may use: NaN, -1
    base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    _guards["n"] += 1
    if _guards["n"] % 2:   # the guard after the data (loads past the end)
        guard, offset = base + data_pages * _PAGE, data_pages * _PAGE - n16
    else:                  # the guard before it (loads before the start: reversed views)
        guard, offset = base, _PAGE
    if _LIBC.mprotect(ctypes.c_void_p(guard), ctypes.c_size_t(_PAGE), 0) != 0:
        raise OSError(ctypes.get_errno(), "mprotect failed")
    return np.frombuffer(mm, np.uint8, n, offset).view(dt).reshape(shape)


_LIBC = ctypes.CDLL(None, use_errno=True)


def guard_emulator_memory() -> None:
    """Every array the emulator allocates from now on in this process has a guard page
    (_guarded_empty)."""
    import cuda_host
    if sys.platform.startswith("linux"):
        cuda_host._aligned_empty = _guarded_empty


def run_emulated(preps: Sequence[Prepared]) -> None:
    """All plans of all programs on the CPU emulator, one build for the batch, and
    through NVRTC (the compiler the GPU runs use). The emulator's arrays lie next to
    guard pages (guard_emulator_memory): out-of-bounds accesses crash the worker."""
    from cuda_host import HostRunner
    guard_emulator_memory()
    nvrtc_check(preps)
    try:
        runner = HostRunner([], generated=[(plan, codes) for p in preps for _, plan, codes in p.plans])
    except Exception as e:  # noqa: BLE001 - find the program whose kernel does not build
        if len(preps) > 1:
            for p in preps:
                run_emulated([p])
            return
        preps[0].outcome.failures.append(f"host build: {e}")
        return
    for p in preps:
        for label, plan, codes in p.plans:
            try:
                got = runner.run_codes(plan, codes, p.inputs)
            except Exception as e:  # noqa: BLE001
                p.outcome.failures.append(f"{label} plan, run: {type(e).__name__}: {e}")
                continue
            judge(p, label, plan, got)


def run_gpu(preps: Sequence[Prepared]) -> None:
    """All plans on the GPU through fuselab's runtime (kernels compiled in one round)."""
    from fuselab.runtime.compile import compile_kernels
    from fuselab.runtime.launch import Executable, synchronize
    codes = [c for p in preps for _, _, cs in p.plans for c in cs if isinstance(c, KernelCode)]
    try:
        compile_kernels(codes)
    except Exception:  # noqa: BLE001 - compiled (and blamed) one by one below
        pass
    for p in preps:
        for label, plan, cs in p.plans:
            try:
                outs = Executable(plan, cs, p.program.options).run(p.inputs)
                synchronize(f"the {label} plan")
            except Exception as e:  # noqa: BLE001
                p.outcome.failures.append(f"{label} plan, GPU run: {type(e).__name__}: {e}")
                if context_lost(e):   # this process can run nothing more: a new one takes the rest
                    p.outcome.failures[-1] += "\n(the CUDA context is lost: the batch's later programs run in a new worker)"
                    raise ContextLost(p) from None
                continue
            judge(p, label, plan, outs)


# the Numba backend's own configuration knobs (NumbaOptions.split / tile), drawn at random
# for the "tuned" plan as launch configurations are for CUDA's: they must not change results
NUMBA_SPLITS = (64, 1000, 8192)
NUMBA_TILES = (1, 7, 256)
# the chunks a parallel run cuts each loop into on machines of these thread counts, run
# one after another here: every plan but the unfused one meets chunk bounds (lo > 0) as
# a session's parallel run does (one chunk, as serial runs have, never tested those)
NUMBA_THREADS = (2, 3, 7, 16)


def run_numba(preps: Sequence[Prepared]) -> None:
    """All plans through the Numba CPU backend (a third implementation of the same
    semantics), each plan's loops on the calling thread, in the chunks of a parallel run
    on a random thread count (NUMBA_THREADS; the unfused plan in one). The "tuned" plan
    runs with a random split and tile, the Numba backend's configuration."""
    from fuselab.numba_backend import NumbaOptions
    from fuselab.numba_backend.run import Executable
    for p in preps:
        rng = np.random.default_rng(p.program.constraint_seed + 2)
        chunking = np.random.default_rng(p.program.constraint_seed + 3)
        for label, plan, _ in p.plans:
            opts = NumbaOptions(parallel=False, fp16_math=p.program.options.fp16_math)
            if label != "unfused":
                opts = replace(opts, threads=int(chunking.choice(NUMBA_THREADS)))
            if label == "tuned":
                opts = replace(opts, split=int(rng.choice(NUMBA_SPLITS)), tile=int(rng.choice(NUMBA_TILES)))
            try:
                got = Executable(plan, opts).run(p.inputs)
            except Exception as e:  # noqa: BLE001
                p.outcome.failures.append(f"{label} plan, Numba run: {type(e).__name__}: {e}")
                continue
            judge(p, label, plan, got)


RUNNERS: dict[str, Runner] = {"emulator": run_emulated, "gpu": run_gpu, "numba": run_numba}


def run_batch(programs: Sequence[Program], runner: Runner = run_emulated) -> list[Outcome]:
    preps = [prepare(p) for p in programs]
    try:
        runner([p for p in preps if p.plans])
    except ContextLost as lost:
        k = preps.index(lost.prep)
        raise ContextLost(lost.prep, [p.outcome for p in preps[:k + 1]]) from None
    return [p.outcome for p in preps]
