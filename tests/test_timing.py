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
