"""Long fuzzing runs: coverage-guided choice of programs, worker processes (a kernel that
crashes or hangs takes its worker down, not the run), shrinking of failures, and the
coverage report.

Each program is named by (seed, target): `generate(seed, target)` rebuilds it exactly.
The parent keeps the coverage; each batch it sends out steers most programs toward the
reachable cells hit least so far, the rest are unsteered random cells.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import queue
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from support.processes import plain_main

from fuselab.codegen import CodegenOptions

from .coverage import Coverage, reachable
from .data import DTYPES
from .generator import STRUCTS, Program, Target, generate

HERE = Path(__file__).resolve().parent


@dataclass
class Spec:
    seed: int
    target: Target | None
    drop: tuple[str, ...] = ()      # lines removed by shrinking (by the name they bind)
    sm: int | None = -1             # the SM count to generate for; -1: the worker decides (program_sm)


@dataclass
class Result:
    spec: Spec
    failures: list[str]
    cells: list
    features: list[str]
    plans: int
    digests: dict[str, str] = field(default_factory=dict)
    source: str = ""
    sm: int | None = None       # the SM count the program was generated for (None: the generator's own)


# the emulator's "device": CodegenOptions' default SM count, what cells traced without a
# GPU (the golden cases, a notebook on a CPU machine) generate their layouts for; the
# generator's own small devices (1, 2, 4 SMs) never gave its grids of hundreds of blocks
EMULATED_SM = CodegenOptions().sm_count
EMULATED_SM_SHARE = 0.2


def program_sm(spec: Spec, real_sm: int | None, share: float = 0.5) -> int | None:
    """A share of the programs (half on a GPU) are generated for the device's real SM count
    (split reductions sized as on that device), the rest for the generator's own choice."""
    if spec.sm != -1:
        return spec.sm
    return real_sm if np.random.default_rng(spec.seed).random() < share else None


def build_program(spec: Spec, real_sm: int | None) -> Program:
    p = generate(spec.seed, spec.target, real_sm=real_sm)
    return drop_lines(p, spec.drop) if spec.drop else p


def drop_lines(p: Program, names: tuple[str, ...]) -> Program:
    """The program without the lines binding `names`: the others keep their text, so
    their NumPy values and bounds stay valid."""
    lines = [l for l in p.source.splitlines() if l.split(" = ", 1)[0] not in names]
    values = {k: v for k, v in p.values.items() if k not in names}
    return Program(p.seed, "\n".join(lines), p.inputs, values, p.options, p.target, p.deviations,
                   p.constraint_seed)


def _worker(backend: str, jobs: "mp.Queue", results: "mp.Queue") -> None:
    sys.path.insert(0, str(HERE.parent))
    from .harness import RUNNERS, ContextLost, run_batch
    runner = RUNNERS[backend]
    real_sm, share = (EMULATED_SM, EMULATED_SM_SHARE) if backend == "emulator" else (None, 0.5)
    if backend == "gpu":
        from fuselab.runtime import device_info
        real_sm = device_info().sm_count
    while True:
        job = jobs.get()
        if job is None:
            return
        batch_id, specs = job
        out, programs, ok_specs = [], [], []
        for s in specs:
            try:
                programs.append(build_program(s, program_sm(s, real_sm, share)))
                ok_specs.append(s)
            except Exception:  # noqa: BLE001 - a generator bug: reported as this program's failure
                out.append(Result(s, [f"generator: {traceback.format_exc(limit=-4)}"], [], [], 0))
        rerun: list[Spec] = []
        quitting = False
        try:
            try:
                outcomes = run_batch(programs, runner)
            except ContextLost as lost:   # report what ran; a new worker takes the rest
                outcomes, rerun, quitting = lost.outcomes, ok_specs[len(lost.outcomes):], True
            for o, s in zip(outcomes, ok_specs):
                out.append(Result(s, o.failures, o.cells, sorted(o.features), o.plans, o.digests, o.program.source,
                                  program_sm(s, real_sm, share)))
        except Exception:  # noqa: BLE001
            out += [Result(s, [f"harness: {traceback.format_exc(limit=-4)}"], [], [], 0) for s in ok_specs]
        results.put((batch_id, out, rerun, quitting))
        if quitting:
            return   # this process's CUDA context is gone: the pool starts a new worker


class Pool:
    """Worker processes that run batches; one that dies or stalls is replaced, and its
    batch is reported back for the caller to split."""

    def __init__(self, backend: str, workers: int, timeout_s: float) -> None:
        self.ctx = mp.get_context("spawn")
        self.backend, self.n, self.timeout_s = backend, workers, timeout_s
        self.results: mp.Queue = self.ctx.Queue()
        self.procs: list[tuple[Any, Any, Any]] = []   # (process, job queue, (batch id, specs, t0) | None)
        for _ in range(workers):
            self._start()

    def _start(self) -> None:
        jobs = self.ctx.Queue()
        p = self.ctx.Process(target=_worker, args=(self.backend, jobs, self.results), daemon=True)
        with plain_main():
            p.start()
        self.procs.append([p, jobs, None])

    def idle(self) -> list[int]:
        return [k for k, (_, _, job) in enumerate(self.procs) if job is None]

    def submit(self, k: int, batch_id: int, specs: list[Spec]) -> None:
        self.procs[k][1].put((batch_id, specs))
        self.procs[k][2] = (batch_id, specs, time.time())

    def collect(self, wait_s: float = 0.5) -> tuple[list[tuple[int, list[Result]]], list[list[Spec]]]:
        """Finished batches, and batches whose worker died or ran past the timeout."""
        done = []
        try:
            while True:
                done.append(self.results.get(timeout=wait_s if not done else 0.01))
        except queue.Empty:
            pass
        finished = {b for b, *_ in done}
        lost = []
        for slot in self.procs:
            p, jobs, job = slot
            if job is None:
                if not p.is_alive():   # an idle worker that quit (its GPU context was lost)
                    slot[:] = [None, None, None]
                continue
            if job[0] in finished:
                slot[2] = None
                if any(b == job[0] and quitting for b, _, _, quitting in done):
                    p.join(timeout=5)
                    slot[:] = [None, None, None]
            elif not p.is_alive() or time.time() - job[2] > self.timeout_s:
                p.kill()
                lost.append(job[1])
                slot[:] = [None, None, None]
        self.procs = [s for s in self.procs if s[0] is not None]
        while len(self.procs) < self.n:
            self._start()
        return done, lost

    def close(self) -> None:
        for p, jobs, _ in self.procs:
            jobs.put(None)
        for p, _, _ in self.procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()


def choose_targets(cov: Coverage, rng: np.random.Generator, n: int, universe: set) -> list[Target | None]:
    """Mostly the least-hit reachable cells; a fifth structural scenarios (generator.STRUCTS:
    reductions over any axes, views, broadcasts, stencils, two-pass cells...), least-run
    first; a sixth unsteered."""
    least = min((cov.cells[c] for c in universe), default=0)
    pool = sorted(c for c in universe if cov.cells[c] <= least + 1)
    out: list[Target | None] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.2:
            runs = [cov.features[f"scenario: {s}"] for s in STRUCTS]
            fewest = [s for s, k in zip(STRUCTS, runs) if k <= min(runs) + 2]
            scenario = fewest[int(rng.integers(len(fewest)))]
            out.append(Target("struct", scenario, "", DTYPES[int(rng.integers(len(DTYPES)))].name))
        elif r < 0.37 or not pool:
            out.append(None)
        else:
            c = pool[int(rng.integers(len(pool)))]
            out.append(Target(*c))
    return out


def run(n_programs: int, backend: str = "emulator", seed: int = 0, workers: int | None = None,
        batch: int = 24, timeout_s: float = 600.0, coverage_path: Path | None = None,
        failures_path: Path | None = None, digests_path: Path | None = None,
        time_limit_s: float | None = None, deterministic: bool = False,
        log=print) -> tuple[Coverage, list[Result]]:
    """Run `n_programs` cells; returns the coverage and the failing results (shrunk).
    `deterministic` steers in rounds of one batch per worker, each chosen from the coverage
    of the rounds before it: the same programs whichever batch finishes first (CI), at
    the price of waiting for a round's slowest batch."""
    workers = workers or max(1, (os.cpu_count() or 1))
    universe = reachable()
    cov = Coverage()
    rng = np.random.default_rng(seed)
    pool = Pool(backend, workers, timeout_s)
    failures: list[Result] = []
    digests: dict[str, dict] = {}
    queue_specs: list[list[Spec]] = []
    next_seed = seed * 1_000_003
    sent = 0
    batch_id = 0
    inflight = 0
    next_report = batch * workers * 4
    t0 = time.time()
    try:
        while sent < n_programs or inflight or queue_specs:
            if time_limit_s and time.time() - t0 > time_limit_s and not inflight:
                log(f"time limit reached after {cov.programs} programs")
                break
            if deterministic and not inflight and not queue_specs and sent < n_programs and not (
                    time_limit_s and time.time() - t0 > time_limit_s):
                m = min(batch * workers, n_programs - sent)
                chosen = [Spec(next_seed + i, t) for i, t in enumerate(choose_targets(cov, rng, m, universe))]
                queue_specs = [chosen[i:i + batch] for i in range(0, m, batch)]
                next_seed += m
                sent += m
            for k in pool.idle():
                if queue_specs:
                    specs = queue_specs.pop(0)
                elif deterministic:
                    break
                elif sent < n_programs and not (time_limit_s and time.time() - t0 > time_limit_s):
                    m = min(batch, n_programs - sent)
                    specs = [Spec(next_seed + i, t) for i, t in enumerate(choose_targets(cov, rng, m, universe))]
                    next_seed += m
                    sent += m
                else:
                    break
                pool.submit(k, batch_id, specs)
                batch_id += 1
                inflight += 1
            done, lost = pool.collect()
            for _, results, rerun, _ in done:
                inflight -= 1
                if rerun:   # after a GPU fault: the batch's programs not run yet, in a new worker
                    queue_specs.append(rerun)
                for r in results:
                    cov.add(map(tuple, r.cells), r.features)
                    cov.programs += 1
                    cov.plans += r.plans
                    if r.digests:
                        digests[f"{r.spec.seed}"] = {"target": asdict(r.spec.target) if r.spec.target else None,
                                                     "drop": list(r.spec.drop), "sm": r.sm, "digests": r.digests,
                                                     "source": _source_digest(r.source)}
                    if r.failures:
                        failures.append(r)
                        log(f"FAIL seed {r.spec.seed} target {r.spec.target}: {r.failures[0][:300]}")
            for specs in lost:
                inflight -= 1
                if len(specs) == 1:
                    r = Result(specs[0], ["the worker crashed or hung running this program"], [], [], 0,
                               source=build_program(specs[0], None).source)
                    failures.append(r)
                    log(f"CRASH seed {specs[0].seed} target {specs[0].target}")
                else:   # split the batch to find the program that brought the worker down
                    half = len(specs) // 2
                    queue_specs += [specs[:half], specs[half:]]
            if done and cov.programs >= next_report:
                next_report = cov.programs + batch * workers * 4
                hit = sum(1 for c in universe if cov.cells[c])
                log(f"{cov.programs} programs, {len(failures)} failing, {hit}/{len(universe)} cells, "
                    f"{time.time() - t0:.0f} s")
    finally:
        pool.close()
    if coverage_path is not None:
        total = Coverage.load(coverage_path) if coverage_path.exists() else Coverage()
        total.merge(cov)
        total.save(coverage_path)
    if failures_path is not None:
        failures_path.write_text(json.dumps([_result_json(r) for r in failures], indent=1, default=str))
    if digests_path is not None:
        digests_path.write_text(json.dumps(digests))
    return cov, failures


def crosscheck(digests_path: Path, backend: str = "emulator", workers: int | None = None, batch: int = 24,
               limit: int | None = None, log=print) -> tuple[int, list[str]]:
    """Run the programs of another run's digest file (`--digests`, e.g. a GPU run) here
    and compare their integer results bit for bit; returns (programs compared, mismatches)."""
    from .generator import Target
    recorded = json.loads(digests_path.read_text())
    specs = [Spec(int(seed), Target(**e["target"]) if e["target"] else None, tuple(e["drop"]), e["sm"])
             for seed, e in list(recorded.items())[:limit]]
    pool = Pool(backend, workers or max(1, os.cpu_count() or 1), 600.0)
    pending = [specs[i:i + batch] for i in range(0, len(specs), batch)]
    compared, mismatches, inflight, batch_id = 0, [], 0, 0
    changed: list[int] = []
    try:
        while pending or inflight:
            for k in pool.idle():
                if not pending:
                    break
                pool.submit(k, batch_id, pending.pop(0))
                batch_id += 1
                inflight += 1
            done, lost = pool.collect()
            inflight -= len(done) + len(lost)
            for specs_lost in lost:
                mismatches += [f"seed {s.seed}: the worker crashed" for s in specs_lost]
            for _, results, *_ in done:
                for r in results:
                    entry = recorded[str(r.spec.seed)]
                    if "source" in entry and entry["source"] != _source_digest(r.source):
                        changed.append(r.spec.seed)   # the generator changed since: not the same program
                        continue
                    compared += 1
                    want = entry["digests"]
                    for key, digest in want.items():
                        if r.digests.get(key) != digest:
                            mismatches.append(f"seed {r.spec.seed} {key}: {backend} {r.digests.get(key)} != {digest}"
                                              f"\n{r.source}")
                    if compared % 500 == 0:
                        log(f"{compared} programs compared, {len(mismatches)} mismatches")
    finally:
        pool.close()
    if changed:
        log(f"{len(changed)} programs not compared: the generator makes other programs for their seeds now "
            f"({changed[:5]}...)")
    return compared, mismatches


def _source_digest(source: str) -> str:
    return hashlib.sha1(source.encode()).hexdigest()[:16]


def _result_json(r: Result) -> dict:
    d = asdict(r)
    d.pop("cells", None)
    return d


def shrink(spec: Spec, backend: str = "emulator", real_sm: int | None = None) -> Spec:
    """Drop lines while the program still fails (in this process: call it on failures
    that did not crash)."""
    from .harness import RUNNERS, run_batch
    runner = RUNNERS[backend]

    def fails(s: Spec) -> bool:
        try:
            return not run_batch([build_program(s, real_sm)], runner)[0].ok
        except Exception:  # noqa: BLE001 - a program that no longer builds is not a repro
            return False

    full = build_program(spec, real_sm)
    names = [l.split(" = ", 1)[0] for l in full.source.splitlines()]
    current = spec
    for name in reversed(names):
        trial = Spec(spec.seed, spec.target, current.drop + (name,))
        try:
            p = build_program(trial, real_sm)
            compile(p.source or "pass", "<cell>", "exec")
            # every remaining line must still find its names
            env = {"np": np, **p.inputs}
            with np.errstate(all="ignore"):
                exec(p.source, env)
        except Exception:  # noqa: BLE001 - a later line needs this one
            continue
        if p.source and fails(trial):
            current = trial
    return current
