"""Timing helpers that need no GPU: the garbage collector stays off while repeats run
(a collection inside one repeat of a launch-bound cell adds its pause to that repeat)."""
import gc

import pytest

from fuselab.runtime.timing import no_gc


def test_the_collector_is_off_inside_and_restored_after_even_on_an_error():
    assert gc.isenabled()
    with no_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError):
        with no_gc():
            1 / 0
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    try:
        with no_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_cpu_repeats_run_with_the_collector_off():
    pytest.importorskip("numba")
    from fuselab.numba_backend.measure import time_interleaved
    seen: list[bool] = []
    timed = time_interleaved({"a": lambda: seen.append(gc.isenabled()), "b": lambda: None}, repeats=8, warmup=1)
    assert timed["a"].repeats == 8
    assert seen[0] and not any(seen[1:])     # the warm-up runs as it is; the repeats without collections
    assert gc.isenabled()


def test_gpu_timers_repeat_with_the_collector_off(monkeypatch):
    """time_gpu, time_interleaved, the autotuner's time_candidates and a CUDA graph's
    replays (CuPy and the events stubbed: no GPU needed) run their repeats with the
    collector off and their warm-ups as they are."""
    import sys
    import types
    from fuselab.runtime import timing, tune
    stream = types.SimpleNamespace(synchronize=lambda: None)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(
        cuda=types.SimpleNamespace(get_current_stream=lambda: stream)))
    seen: list[bool] = []

    def event_seconds(fn, stream=None):
        fn()
        seen.append(gc.isenabled())
        return 1e-5
    monkeypatch.setattr(timing, "event_seconds", event_seconds)
    timing.time_gpu(lambda: None, "a", repeats=5, warmup=1)
    assert len(seen) == 5 and not any(seen)
    seen.clear()
    timing.time_interleaved({"a": lambda: None, "b": lambda: None}, repeats=4, warmup=1)
    assert len(seen) == 8 and not any(seen)
    seen.clear()
    launched: list[str] = []
    tune.time_candidates(launched.append, ["one", "two"])
    assert seen[:2] == [True, True] and len(seen) > 2 and not any(seen[2:])   # the warm-up launches, then the repeats
    assert set(launched) == {"one", "two"} and gc.isenabled()
    seen.clear()
    replay = object.__new__(timing.GraphReplay)     # a captured graph's replays, timed
    replay.stream, replay.launch = stream, lambda: None
    assert replay.time("graph", repeats=6).repeats == 6
    assert len(seen) == 6 and not any(seen) and gc.isenabled()


def test_short_runs_get_enough_repeats_for_a_steady_median():
    from fuselab.runtime.timing import MAX_REPEATS, SAMPLED_S, repeats_for
    assert repeats_for(20e-6, 16) == 100                 # 2 ms of 20 us samples
    assert repeats_for(1e-3, 16) == 16                   # long runs keep the repeats asked
    assert repeats_for(SAMPLED_S / 17, 16) == 17
    assert repeats_for(1e-7, 16) == MAX_REPEATS          # capped
    assert repeats_for(0.0, 16) == MAX_REPEATS
    assert repeats_for(20e-6, 500) == 500                # never fewer than asked
