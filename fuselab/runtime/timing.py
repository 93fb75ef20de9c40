"""Timing with CUDA events: warm-up first, then the median and spread of repeats.

Everything timed here runs on the current stream and is bracketed by two events, so a
time is what the GPU took from the first launch to the end of the last one, including
any idle gaps while Python was launching (that is the real cost of many small launches,
and what a CUDA graph replay removes).
"""
from __future__ import annotations

import contextlib
import gc
import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping


@dataclass(frozen=True)
class Timing:
    label: str
    median_s: float
    q1_s: float                 # 25th percentile
    q3_s: float                 # 75th percentile
    min_s: float
    repeats: int
    bytes_moved: int = 0        # for GB/s: each external input read once, each output written once
    per_kernel_s: tuple[tuple[str, float], ...] = field(default=())

    @property
    def spread_s(self) -> float:
        return self.q3_s - self.q1_s

    @property
    def gbps(self) -> float:
        return self.bytes_moved / self.median_s / 1e9 if self.median_s > 0 else 0.0

    def __str__(self) -> str:
        extra = f", {self.gbps:.0f} GB/s" if self.bytes_moved else ""
        return (f"{self.label}: {self.median_s * 1e3:.4f} ms median "
                f"(IQR {self.spread_s * 1e3:.4f} ms, n={self.repeats}{extra})")


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic garbage collector off while repeats run, as timeit does: a collection
    that falls inside one repeat of a launch-bound cell (whose GPU time is the Python
    launching it) would add its pause to that repeat alone. (It is not what spreads the
    shape sweep's small cells: their IQRs stayed at 9-12 us with it, COST_MODEL.md.)
    Process-wide: another thread timing meanwhile runs without collections too."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def event_seconds(fn: Callable[[], Any], stream: Any = None) -> float:
    """GPU time of one fn() call, bracketed by two CUDA events on `stream`."""
    import cupy
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record(stream)
    fn()
    end.record(stream)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / 1e3


def time_gpu(fn: Callable[[], Any], label: str, repeats: int = 20, warmup: int = 2,
             bytes_moved: int = 0, max_seconds: float = 10.0) -> Timing:
    """Median GPU time of fn() over `repeats` runs after `warmup` runs."""
    import cupy
    import time
    for _ in range(warmup):
        fn()
    cupy.cuda.get_current_stream().synchronize()
    times: list[float] = []
    started = time.perf_counter()
    with no_gc():
        for _ in range(max(1, repeats)):
            times.append(event_seconds(fn))
            if time.perf_counter() - started > max_seconds and len(times) >= 3:
                break  # a slow workload: fewer repeats rather than minutes
    return summarize(label, times, bytes_moved)


def time_interleaved(fns: Mapping[str, Callable[[], Any]], repeats: int = 20, rounds: int = 4,
                     warmup: int = 2, bytes_moved: Mapping[str, int] | None = None,
                     max_seconds: float = 20.0) -> dict[str, Timing]:
    """Median GPU time of each fn, timed in alternating rounds (a few repeats of each in
    turn) so that clock and thermal drift over the run falls on all of them alike: an A/B
    comparison timed one after the other can differ by 5-20% from drift alone."""
    import cupy
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    cupy.cuda.get_current_stream().synchronize()
    return summarize_rounds(fns, repeats, rounds, max_seconds, bytes_moved, event_seconds)


SAMPLED_S = 2e-3      # samples of a short run: about this much of its own time
MAX_REPEATS = 400


def repeats_for(median_s: float, repeats: int, sampled_s: float = SAMPLED_S, cap: int = MAX_REPEATS) -> int:
    """Repeats that give a run of `median_s` about `sampled_s` of samples, at least
    `repeats`. Short, host-bound runs scatter: in the H200 sweeps of 2026-12-04 16:45,
    cells under 40 us had interquartile ranges as wide as their medians over 16 samples
    (a split sum measured 31.6 us, its kernel 15.7 us when tuned)."""
    if median_s <= 0:
        return cap
    return max(repeats, min(cap, math.ceil(round(sampled_s / median_s, 6))))


def summarize_rounds(fns: Mapping[str, Callable[[], Any]], repeats: int, rounds: int, max_seconds: float,
                     bytes_moved: Mapping[str, int] | None, time_one: Callable[[Callable[[], Any]], float]
                     ) -> dict[str, Timing]:
    """Each fn timed by `time_one` in alternating rounds of about repeats / rounds calls
    each (fewer rounds past `max_seconds`), the collector off; its Timing. The rounds of
    time_interleaved here (GPU events) and of the Numba backend's (wall clock)."""
    import time
    times: dict[str, list[float]] = {k: [] for k in fns}
    per_round = max(1, -(-repeats // rounds))
    started = time.perf_counter()
    with no_gc():
        for _ in range(rounds):
            for label, fn in fns.items():
                for _ in range(per_round):
                    times[label].append(time_one(fn))
            if time.perf_counter() - started > max_seconds:
                break  # slow cells: fewer rounds rather than minutes
    nbytes = bytes_moved or {}
    return {k: summarize(k, v, nbytes.get(k, 0)) for k, v in times.items()}


def summarize(label: str, times: list[float], bytes_moved: int = 0,
              per_kernel: tuple[tuple[str, float], ...] = ()) -> Timing:
    ts = sorted(times)
    q = statistics.quantiles(ts, n=4) if len(ts) >= 2 else [ts[0]] * 3
    return Timing(label, statistics.median(ts), q[0], q[2], ts[0], len(ts), bytes_moved, per_kernel)


def per_kernel_times(run_with_events: Callable[[list], Any], names: list[str], repeats: int = 5) -> tuple[tuple[str, float], ...]:
    """Median time of each kernel, from events recorded between launches."""
    import cupy
    samples: list[list[float]] = [[] for _ in names]
    for _ in range(max(1, repeats)):
        events: list = []
        run_with_events(events)
        events[-1].synchronize()
        for k in range(len(names)):
            samples[k].append(cupy.cuda.get_elapsed_time(events[k], events[k + 1]) / 1e3)
    return tuple((n, statistics.median(s)) for n, s in zip(names, samples))


class GraphReplay:
    """A plan's launches captured once as a CUDA graph and replayed: one launch for the
    whole cell, which is what a launch-bound cell needs. The arrays the capture used
    stay referenced here, so replays never write into memory someone else now owns."""

    def __init__(self, run: Callable[[], Any]) -> None:
        import cupy
        self.stream = cupy.cuda.Stream(non_blocking=True)
        with self.stream:
            run()                     # fills this stream's memory-pool arena first
            self.stream.synchronize()
            self.stream.begin_capture()
            try:
                self.outputs = run()
            finally:
                self.graph = self.stream.end_capture()
        self.stream.synchronize()

    def launch(self) -> None:
        self.graph.launch(self.stream)

    def time(self, label: str, repeats: int = 50, bytes_moved: int = 0) -> Timing:
        for _ in range(3):
            self.launch()
        self.stream.synchronize()
        with no_gc():   # as every other timed repeat
            times = [event_seconds(self.launch, self.stream) for _ in range(max(1, repeats))]
        return summarize(label, times, bytes_moved)
