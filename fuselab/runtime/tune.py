"""Choosing launch configurations on the GPU, as Triton's autotuner does: the first time a
kernel runs, each of its candidate configurations (codegen.launch_candidates) runs on
the kernel's real inputs, the fastest is kept, and the choice is remembered on disk per
device, fuselab version and kernel (its heuristic source, which names shapes and dtypes).
A later run, in this process or another, reuses it with no compile or timing of the
others. FUSELAB_TUNE=0 turns tuning off (the heuristics' choices run).
"""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import tempfile
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..codegen import Config, KernelCode, generate_kernel, launch_candidates
from ..codegen.config import ColumnConfig, InnerConfig, PointwiseConfig, RowConfig
from ..codegen.model import CodegenOptions
from ..paths import cache_root
from ..plan.model import Plan

SCHEMA = 1
_CONFIG_TYPES = {c.__name__: c for c in (PointwiseConfig, InnerConfig, ColumnConfig, RowConfig)}


@dataclass(frozen=True)
class Tuning:
    """How a kernel's launch configuration was chosen, for the explorer."""

    kernel: str
    chosen: Config
    source: str                                 # "tuned" | "cache" | "heuristic" (one candidate, or tuning off)
    times: tuple[tuple[str, float], ...] = ()   # candidate label -> median seconds

    def summary(self) -> str:
        head = {"tuned": "tuned on this GPU", "cache": "tuned earlier on this GPU (cache)",
                "heuristic": "heuristic"}[self.source]
        text = f"{self.chosen.label()} ({head}; {self.chosen.why})"
        if self.times:
            best = min(t for _, t in self.times)
            text += "; candidates: " + ", ".join(f"{lbl} {t * 1e6:.1f} us" + (" *" if t == best else "")
                                                 for lbl, t in self.times)
        return text


def enabled() -> bool:
    return os.environ.get("FUSELAB_TUNE", "1") != "0"


def cache_path() -> Path:
    return cache_root() / "tuning.json"


def config_to_json(c: Config) -> dict:
    return {"type": type(c).__name__, **dict(c.key()), "why": c.why}


def config_from_json(d: dict) -> Config:
    d = dict(d)
    cls = _CONFIG_TYPES[d.pop("type")]
    return cls(**d)


class TuneCache:
    """The on-disk choices: {key: {"config": ..., "times": [[label, s], ...]}}. A file that
    cannot be read is set aside with a warning, never a crash. Safe to share between threads
    (Dask's threaded scheduler tunes blocks' kernels side by side); a save keeps what other
    processes (Dask workers) saved meanwhile."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or cache_path()
        self._lock = threading.Lock()
        self.entries: dict[str, dict] = self._read(warn=True)

    def _read(self, warn: bool) -> dict[str, dict]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text())
            if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("entries"), dict):
                raise ValueError("unknown layout")
            return data["entries"]
        except Exception as e:  # noqa: BLE001 - a corrupt cache only costs a re-tune
            if warn:
                warnings.warn(f"fuselab: ignoring the launch-configuration cache {self.path} ({type(e).__name__}: {e}); "
                              "kernels will be tuned again", RuntimeWarning, stacklevel=3)
            return {}

    def get(self, key: str) -> tuple[Config, tuple[tuple[str, float], ...]] | None:
        e = self.entries.get(key)
        if e is None:
            return None
        try:
            return config_from_json(e["config"]), tuple((str(l), float(t)) for l, t in e.get("times", ()))
        except Exception:  # noqa: BLE001 - an entry of another layout
            return None

    def put(self, key: str, config: Config, times: tuple[tuple[str, float], ...]) -> None:
        entry = {"config": config_to_json(config), "times": [list(t) for t in times]}
        with self._lock:
            # A new dict, never one mutated under a reader's iteration.
            self.entries = {**self._read(warn=False), **self.entries, key: entry}
            self._save(self.entries)

    def _save(self, entries: dict[str, dict]) -> None:
        tmp = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tuning-")
            with os.fdopen(fd, "w") as f:
                json.dump({"schema": SCHEMA, "entries": entries}, f)
            os.replace(tmp, self.path)
        except OSError as e:
            if tmp is not None and os.path.exists(tmp):
                os.remove(tmp)
            warnings.warn(f"fuselab: could not save tuned launch configurations to {self.path}: {e}",
                          RuntimeWarning, stacklevel=2)


_CACHE: TuneCache | None = None


def cache() -> TuneCache:
    global _CACHE
    if _CACHE is None or _CACHE.path != cache_path():
        _CACHE = TuneCache()
    return _CACHE


def kernel_key(code: KernelCode, device: str, version: str) -> str:
    """Device, fuselab version and the kernel itself (its heuristic source names the
    shapes, dtypes and ops): a new device, a new fuselab or another kernel re-tunes."""
    digest = hashlib.sha256((code.source + "\0" + " ".join(code.nvrtc_options)).encode()).hexdigest()[:24]
    return f"{device}|{version}|{digest}"


@dataclass
class Pending:
    """A kernel to tune on its first run: its candidates' code."""

    index: int
    key: str
    candidates: list[KernelCode]


def plan_tuning(plan: Plan, codes: tuple, options: CodegenOptions, device: str,
                version: str, time_new: bool = True) -> tuple[tuple, dict[int, Tuning], list[Pending]]:
    """Codes with cached choices applied, what is known per kernel, and what still needs
    timing (empty when tuning is off; with `time_new` False, kernels not tuned yet keep
    their heuristic's code and nothing is pending)."""
    out = list(codes)
    known: dict[int, Tuning] = {}
    pending: list[Pending] = []
    for k, code in enumerate(codes):
        if not isinstance(code, KernelCode):
            continue
        cands = launch_candidates(plan, k, options)
        if len(cands) <= 1 or not enabled():
            known[k] = Tuning(code.name, code.config, "heuristic")
            continue
        key = kernel_key(code, device, version)
        hit = cache().get(key)
        if hit is not None:
            cfg, times = hit
            out[k] = generate_kernel(plan, k, options, cfg)
            known[k] = Tuning(code.name, out[k].config, "cache", times)
        elif time_new:
            pending.append(Pending(k, key, [code] + [generate_kernel(plan, k, options, c) for c in cands[1:]]))
        else:
            known[k] = Tuning(code.name, code.config, "heuristic")
    return tuple(out), known, pending


def time_candidates(launch_one, candidates: list[KernelCode], budget_s: float = 0.05) -> list[float]:
    """Median seconds of each candidate: one warm-up launch, then repeats in alternating
    rounds (enough for ~`budget_s` of GPU time in all, 3 to 15 each)."""
    from .timing import event_seconds, no_gc
    samples: list[list[float]] = [[] for _ in candidates]

    def timed(k: int) -> float:
        return event_seconds(lambda: launch_one(candidates[k]))

    first = [timed(k) for k in range(len(candidates))]   # warm-up (module load, caches)
    per = max(1e-6, statistics.median(first))
    repeats = int(min(15, max(3, budget_s / (per * len(candidates)))))
    with no_gc():
        for _ in range(repeats):
            for k in range(len(candidates)):
                samples[k].append(timed(k))
    return [statistics.median(s) for s in samples]
