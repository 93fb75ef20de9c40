"""fuselab.recording: catching NumPy's warnings while a cell's values are computed must
not make Python forget which warnings the session has shown (plain execution shows a
warning from NumPy's own file once a session)."""
from __future__ import annotations

import warnings

import numpy as np

from fuselab.recording import give_at, recorded


def _var_of_nothing() -> None:
    with np.errstate(invalid="warn"):
        np.var(np.zeros(0))   # warns from numpy/_core/_methods.py


def _shown_twice(between) -> int:
    """How many var warnings a session shows when np.var of nothing runs twice with
    `between` run in the middle."""
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")
        _var_of_nothing()
        between()
        _var_of_nothing()
    return len([w for w in shown if "encountered in" in str(w.message)])


def test_recording_keeps_the_sessions_registry() -> None:
    once = _shown_twice(lambda: None)

    def record() -> None:
        with recorded() as log:
            np.log(np.zeros(1))   # a warning of its own, recorded, not shown
        assert log, "the recorded block's warning was caught"

    assert _shown_twice(record) == once


def test_catch_warnings_would_forget_it() -> None:
    """The reason recorded() exists: catch_warnings empties the registries."""
    once = _shown_twice(lambda: None)

    def catch() -> None:
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")

    assert _shown_twice(catch) > once


def test_fresh_recording_sees_warnings_already_shown_and_forgets_them() -> None:
    once = _shown_twice(lambda: None)
    seen: list[int] = []

    def probe() -> None:
        with recorded(fresh=True) as log:
            _var_of_nothing()   # shown already this session: a fresh probe still sees it
        seen.append(len([w for w in log if "encountered in" in str(w.message)]))

    assert _shown_twice(probe) == once
    assert seen and seen[0] >= 1


def test_give_at_uses_the_modules_registry() -> None:
    import numpy._core._methods as methods
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")
        for _ in range(3):
            give_at("fuselab test warning", RuntimeWarning, methods.__file__, 1)
    assert [(w.filename, w.lineno) for w in shown] == [(methods.__file__, 1)]


def test_library_line_keeps_the_library_file_and_drops_fuselabs_own() -> None:
    """A warning Python attributed to fuselab's frame (NumPy's stacklevel=2 when fuselab
    called it for the user) goes to the user's line; one from the library's own file
    (cupy.nanmax's, from cupy/_statistics/order.py) stays there."""
    import fuselab.trace.realrun as realrun
    from fuselab.recording import library_line
    ours = warnings.WarningMessage("All-NaN slice encountered", RuntimeWarning, realrun.__file__, 68)
    theirs = warnings.WarningMessage("All-NaN slice encountered", RuntimeWarning, np.__file__, 7)
    assert library_line(ours) == ()
    assert library_line(theirs) == (np.__file__, 7)
