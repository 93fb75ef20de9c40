"""A notebook user's scenarios, as a matrix: the magic's options and their mistakes, failures
in every stage of a cell (simulated by patching the session), KeyboardInterrupt, the
session object and the explorer after a change by hand.

Problems these tests found (each fixed, each test failed before its fix):

- `return` / `yield` / `await` outside a function, `break` outside a loop: the parser
  accepts them and Python's compiler refuses them, and that SyntaxError escaped raw, with
  a traceback through fuselab (cell.trace_source, errors.syntax_error).
- KeyboardInterrupt (the stop button) while a cell traced, planned, ran or was timed: a
  traceback through fuselab's internals and no word on the variables; now
  `errors.Interrupted` (still a KeyboardInterrupt) says the stage, the line, and that no
  variable changed (cell.run_traced, cell.execute_cell, fuselab.explore).
- A failure while timing (the results were computed and checked) failed the whole cell and
  threw its results away; now they are bound, and a FuselabWarning and the summary say why
  timing failed (cell.run_traced, Session.timing_error, display.timing_note).
- A failed result check was said only in the display: with `-q` the user got the plan's
  differing values in silence; now a FuselabWarning at the cell's line (cell._warn_check_failed).
- GPU failures read badly: a FuselabRuntimeError's own "what to do" came inside the message
  and "What to do: no variable changed" after it; a CompileError said nothing to do; a
  MemoryError without text said "MemoryError: "; a CuPy/driver error had nothing to do
  (cell.run_error).
- `run_cell(..., repeats=0)` / `fuselab.explore(..., repeats=0)` failed after the run as a
  StatisticsError, `fp16='slow'` as a ValueError of code generation; now OptionError
  before anything runs (session.check_options, in run_traced, Session(), Session.measure).
- A Numba error compiling a generated kernel said "What to do: no variable changed", with
  Numba's terminal escapes in the text; now it says it is fuselab's bug and that --backend
  cpu runs the cell meanwhile (cell.run_error).
- A view that failed to draw (the explorer, the static form) failed the cell with a
  traceback after its results were bound, so the notebook said "error" over a changed
  namespace; now a notice and a simpler view (display.show, display._show_or_fall_back). An
  interrupt while drawing (large graphs take seconds) likewise said KeyboardInterrupt
  over bound results; now it stops the drawing only (display.show).
- Stopping the explorer's timing raised out of the button's handler; now a message
  (explorer.widget.Explorer.run).
- On the NumPy backend the numbers said "no GPU here" also on a GPU machine where the user
  asked for --backend cpu (explorer.numbers.unmeasured_reason); measured CPU kernels at
  "427% of copy BW" (arrays in cache) had no word of why (explorer.numbers.numbers_html).
- `run_cell(ns, src, plan="max")` was a TypeError: the magic says --plan, explore says
  plan=, run_cell only took strategy= (cell.execute_cell); `keep="tmp"` kept "t", "m",
  "p" (a string is a sequence of letters) and failed on "t".
- `fuselab.explore(f)` with too few or too many arrays said "fix the error in f", as if
  the function were wrong (fuselab._check_call).
- `%%time` inside a %%fuse cell was told to "run it in a cell of its own"; it goes above
  %%fuse, which works (magic._check_python_only).
- `%%fuse -o x` over a cell that reads x replaced the user's array with the session
  (magic._check_output_name).
- After a fuse/split by hand the summary and the explorer still said "auto plan" and
  highlighted the Auto preset (Session.plan_label, explorer widget/static headers); the
  explorer's message after a split button said "split ('k', 0)" (session._target_text);
  `session.split()` naming nothing added an undo step (Session._apply).

- A KeyboardInterrupt or SystemExit raised by the cell's code after a traced in-place
  update of an array another object holds (written at once, held.py) left that array
  changed: trace.run.trace_cell restored originals only on Exception; now on any
  BaseException, which it then raises as it is.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

IPython = pytest.importorskip("IPython")
from support.shell import ip  # noqa: E402,F401  (the fixture)

import fuselab  # noqa: E402
from fuselab.cell import run_cell  # noqa: E402
from fuselab.errors import FuselabWarning, Interrupted, OptionError, TraceError  # noqa: E402
from fuselab.runtime.errors import CompileError, FuselabRuntimeError  # noqa: E402
from fuselab.runtime.verify import Check  # noqa: E402
from fuselab.session import Session  # noqa: E402

INTERNAL = ("Traceback", "fuselab/", "site-packages", "Tracer")
SOFTMAX_ROWS = ("a = x.reshape(40, 25)\nmx = a.max(axis=1, keepdims=True)\ne = np.exp(a - mx)\n"
                "p = e / e.sum(axis=1, keepdims=True)")
CELL = "x *= 2\nt = x * x + 1.0\ny = np.exp(t) * 0.5 - np.sin(x)\nfresh = y + 1"




def run(ip, line: str, cell: str, capsys=None) -> tuple[bool, str]:
    """Run a %%fuse cell as a notebook does: (success, what the user saw)."""
    res = ip.run_cell(f"%%fuse {line}\n{cell}", store_history=False)
    text = ""
    if capsys is not None:
        out = capsys.readouterr()
        text = re.sub(r"\x1b\[[0-9;]*m", "", out.out + out.err)
    return res.success, text


def snapshot(ns) -> dict:
    """ids and copies, not the objects: a reference held here would make the trace take the
    notebook's arrays for arrays another object holds (held.py), which it updates at once."""
    return {k: (id(v), v.copy() if isinstance(v, np.ndarray) else None) for k, v in ns.items()
            if not k.startswith("_")}


def assert_unchanged(ns, snap) -> None:
    now = {k: v for k, v in ns.items() if not k.startswith("_")}
    assert set(now) == set(snap), set(now) ^ set(snap)
    for k, (ident, copy) in snap.items():
        assert id(now[k]) == ident, k
        if copy is not None:
            np.testing.assert_array_equal(now[k], copy, err_msg=k)


def assert_clean(text: str, *words: str) -> None:
    for w in words:
        assert w in text, (w, text)
    for bad in INTERNAL:
        assert bad not in text, (bad, text)


# -- the magic's options ---------------------------------------------------------------

VALID = ["-q", "-q --backend cpu", "-q --backend cpu --plan unfused", "-q --backend cpu --plan max",
         "-q --backend=cpu --no-time", "-q --backend cpu --fp16 fast", "-q --backend cpu --fullgraph",
         "-q --backend cpu -n 2", "-q --backend cpu --keep t", "--quiet --backend cpu -o r",
         "--backend cpu --static", "--backend cpu", "-q --backend numba -n 2", "-q --backend auto --no-time"]


@pytest.mark.parametrize("line", VALID)
def test_every_documented_option_runs_the_cell_as_plain_python(ip, line):
    x0 = ip.user_ns["x"].copy()
    assert run(ip, line, "t = x * x + 1.0\ny = np.exp(t) * 0.5 - np.sin(x)")[0]
    np.testing.assert_allclose(ip.user_ns["y"], np.exp(x0 * x0 + 1) * 0.5 - np.sin(x0), rtol=1e-6)
    assert ("t" in ip.user_ns) == ("--keep t" in line)
    if "-o r" in line:
        r = ip.user_ns["r"]
        assert isinstance(r, Session) and set(r.outputs) == {"y"} and r.kernels and "kernel" in r.explain()


@pytest.mark.parametrize("backend", ["cpu", "numba", "auto"])
@pytest.mark.parametrize("plan", ["auto", "unfused", "max"])
@pytest.mark.parametrize("shown", ["-q", "--static"])
def test_backends_by_plans_by_displays_give_the_same_bindings(ip, backend, plan, shown):
    from IPython.utils.capture import capture_output
    x0 = ip.user_ns["x"].copy()
    with capture_output():
        assert run(ip, f"{shown} --backend {backend} --plan {plan} -n 2 -o r --keep e", SOFTMAX_ROWS)[0]
    r, ns = ip.user_ns["r"], ip.user_ns
    a = x0.reshape(40, 25)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(ns["e"], e, rtol=1e-6)
    np.testing.assert_allclose(ns["p"], e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    assert "mx" not in ns and r.plan.strategy == plan and r.backend == ("cpu" if backend == "cpu" else "numba")
    assert (r.measurement is not None) == (r.backend == "numba") and r.check.ok


@pytest.mark.parametrize("line, words", [
    ("--backend gpu", ["--backend", "'gpu'", "'cuda'", "%%fuse?"]),
    ("--plan best", ["--plan", "'best'", "'unfused'"]),
    ("--fp16 half", ["--fp16", "'half'"]),
    ("-n abc", ["-n", "'abc'"]),
    ("-n -1", ["-n", "positive"]),
    ("--keep", ["--keep", "expected"]),
    ("--keep 1t", ["--keep", "'1t'"]),
    ("-o", ["-o", "expected"]),
    ("-o 3", ["-o", "'3'"]),
    ("-o x", ["-o x", "reads 'x'", "another name"]),
    ("-o np", ["-o np", "reads 'np'"]),
    ("-o t", ["-o t", "binds 't'"]),
    ("--static=yes", ["--static", "'yes'"]),
    ("--bogus", ["unrecognized", "--bogus"]),
    ("-q extra", ["unrecognized", "extra"]),
    ("--keep nope", ["--keep nope", "'nope'"]),
])
def test_a_wrong_flag_names_the_option_and_changes_nothing(ip, capsys, line, words):
    capsys.readouterr()
    snap = snapshot(ip.user_ns)
    ok, text = run(ip, line, "t = x * x + 1.0\ny = np.exp(t) * 0.5 - np.sin(x)", capsys)
    assert not ok
    assert_clean(text, *words)
    assert_unchanged(ip.user_ns, snap)


# -- bad cells ---------------------------------------------------------------------------

@pytest.mark.parametrize("cell, line, words", [
    ("y = x * 2\nreturn y", 2, ["'return' outside function"]),
    ("y = np.sin(x)\nyield 3", 2, ["'yield' outside function"]),
    ("await foo()", 1, ["'await' outside function"]),
    ("y = x * 2\nbreak", 2, ["'break' outside loop"]),
    ("y = x * 2\nnonlocal q", 2, ["nonlocal"]),
    ("y = x * 2\nz = (x +\n", 2, ["never closed"]),
])
def test_syntax_errors_the_compiler_finds_name_the_users_line(ip, capsys, cell, line, words):
    capsys.readouterr()
    snap = snapshot(ip.user_ns)
    ok, text = run(ip, "-q", cell, capsys)
    assert not ok
    assert_clean(text, f"line {line}", "SyntaxError", "fix the syntax", *words)
    assert_unchanged(ip.user_ns, snap)


def test_trace_cell_outside_the_magic_reports_them_too():
    with pytest.raises(TraceError, match="line 1.*\n.*'return' outside function"):
        fuselab.trace_cell("return 3", {"x": np.ones(3)})


@pytest.mark.parametrize("cell, line", [
    ("x *= 2\nraise KeyboardInterrupt", 2),
    ("y = x * 2\nfor i in range(3):\n    y = y + i\n    if i == 1:\n        raise KeyboardInterrupt", 5),
])
def test_keyboard_interrupt_in_the_cell_names_the_line_and_changes_nothing(ip, capsys, cell, line):
    capsys.readouterr()
    snap = snapshot(ip.user_ns)
    ok, text = run(ip, "-q", cell, capsys)
    assert not ok
    assert_clean(text, "KeyboardInterrupt", f"line {line}", "interrupted while tracing", "no variable changed")
    assert_unchanged(ip.user_ns, snap)


@pytest.mark.parametrize("stop", ["raise KeyboardInterrupt", "raise SystemExit(3)"])
def test_an_interrupt_after_an_update_of_a_held_array_restores_it(ip, stop):
    ip.run_cell("L = [x]", store_history=False)
    x0 = ip.user_ns["x"].copy()
    assert not run(ip, "-q --backend cpu", f"x *= 2\n{stop}")[0]
    np.testing.assert_array_equal(ip.user_ns["x"], x0)


# -- failures after the trace, stage by stage (simulated) ---------------------------------

def _raise(exc: BaseException):
    def boom(*_a, **_k):
        raise exc
    return boom


FAILURES = {
    "interrupt": (KeyboardInterrupt(), ["KeyboardInterrupt", "interrupted while", "no variable changed"]),
    "memory": (MemoryError(), ["MemoryError: out of memory", "no variable changed", "smaller arrays"]),
    "library": (RuntimeError("cuBLAS said no"), ["RuntimeError: cuBLAS said no", "no variable changed"]),
    "device": (FuselabRuntimeError("out of GPU memory allocating 4.0 GiB for y", "delete large arrays"),
               ["out of GPU memory allocating 4.0 GiB", "What to do: no variable changed; delete large arrays"]),
    "driver": (None, ["CUDARuntimeError (CUDA, while the plan ran on the GPU)", "restart the kernel",
                      "--backend numba", "no variable changed"]),
    "compile": (CompileError("k0_exp", 'extern "C" __global__ void k0_exp() {}', "error: expected a ;"),
                ["NVRTC could not compile kernel k0_exp", "error: expected a ;", "fuselab bug", "--plan unfused"]),
}


@pytest.mark.parametrize("stage, where", [("planning", "_make_plan"), ("running", "execute")])
@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_a_failure_while_planning_or_running_says_what_and_changes_nothing(ip, capsys, monkeypatch, stage, where,
                                                                           failure):
    exc, words = FAILURES[failure]
    if exc is None:    # CuPy's own error type, as a broken driver raises it
        cupy = pytest.importorskip("cupy")
        try:
            cupy.cuda.runtime.getDeviceCount() and cupy.cuda.runtime.deviceSynchronize()
            exc = cupy.cuda.runtime.CUDARuntimeError(700)   # (cudaErrorIllegalAddress)
        except cupy.cuda.runtime.CUDARuntimeError as e:
            exc = e
    monkeypatch.setattr(Session, where, _raise(exc))
    ip.run_cell("L = []", store_history=False)
    capsys.readouterr()
    snap = snapshot(ip.user_ns)
    ok, text = run(ip, "-q --backend cpu", CELL + "\nL.append(1)\nimport json\ndef helper():\n    return 1", capsys)
    assert not ok
    assert_clean(text, *words)
    if failure == "interrupt":
        assert stage in text
    if failure != "device":
        assert text.count("What to do") == 1
    assert_unchanged(ip.user_ns, snap)   # x updated in place; t, y, fresh, json, helper never bound


@pytest.mark.parametrize("failure", ["memory", "library", "device"])
def test_a_failure_while_timing_keeps_the_results_and_says_why(ip, capsys, monkeypatch, failure):
    exc, _words = FAILURES[failure]
    monkeypatch.setattr(Session, "measure", _raise(exc))
    x0 = ip.user_ns["x"].copy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ok, _ = run(ip, "-q --backend numba -o r", CELL, capsys)
    assert ok
    said = [str(w.message) for w in caught if issubclass(w.category, FuselabWarning)]
    assert len(said) == 1 and "timing failed, the results are bound" in said[0] and "--no-time" in said[0]
    np.testing.assert_allclose(ip.user_ns["x"], x0 * 2)
    np.testing.assert_allclose(ip.user_ns["fresh"], np.exp((x0 * 2) ** 2 + 1) * 0.5 - np.sin(x0 * 2) + 1, rtol=1e-6)
    r = ip.user_ns["r"]
    assert r.timing_error and "timing failed, the results are bound" in r.summary()


def test_an_interrupt_while_timing_changes_nothing_and_points_to_no_time(ip, capsys, monkeypatch):
    monkeypatch.setattr(Session, "measure", _raise(KeyboardInterrupt()))
    capsys.readouterr()
    snap = snapshot(ip.user_ns)
    ok, text = run(ip, "-q --backend numba", CELL, capsys)
    assert not ok
    assert_clean(text, "KeyboardInterrupt", "interrupted while timing", "no variable changed", "--no-time")
    assert_unchanged(ip.user_ns, snap)


def test_interrupted_is_still_a_keyboard_interrupt(monkeypatch):
    monkeypatch.setattr(Session, "execute", _raise(KeyboardInterrupt()))
    ns = {"np": np, "x": np.ones(4)}
    with pytest.raises(KeyboardInterrupt) as info:
        run_cell(ns, "y = x + 1", backend="cpu", quiet=True)
    assert isinstance(info.value, Interrupted) and "y" not in ns


def test_a_failed_result_check_is_said_with_q(ip, monkeypatch):
    execute = Session.execute

    def wrong(self):
        outs = execute(self)
        self.check = Check(False, "y: max error 1.0 (rtol 2e-05)", ("y: wrong",))
        return outs
    monkeypatch.setattr(Session, "execute", wrong)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert run(ip, "-q --backend cpu", "y = np.exp(x) * 2")[0]
    said = [w for w in caught if issubclass(w.category, FuselabWarning)]
    assert len(said) == 1 and "y: max error 1.0" in str(said[0].message) and "--plan unfused" in str(said[0].message)
    assert "fuselab/" not in said[0].filename     # the cell's line, not fuselab's


# -- options outside the magic -------------------------------------------------------------

@pytest.mark.parametrize("options, words", [
    ({"repeats": 0}, ["repeats=0", "positive"]),
    ({"repeats": 2.5}, ["repeats=2.5"]),
    ({"fp16": "slow"}, ["fp16='slow'", "'numpy'"]),
    ({"backend": "gpu"}, ["'gpu'", "numba"]),
    ({"strategy": "best"}, ["'best'", "'unfused'"]),
    ({"plan": "best"}, ["'best'", "'unfused'"]),
])
def test_run_cell_options_are_checked_before_anything_runs(options, words):
    x = np.ones(8, np.float32)
    ns = {"np": np, "x": x}
    with pytest.raises(fuselab.errors.FuselabError) as info:
        run_cell(ns, "x += 1\ny = x * 2", quiet=True, **options)
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    assert set(ns) <= {"np", "x", "__warningregistry__"} and ns["x"] is x and (x == 1).all()


def test_run_cell_takes_plan_as_the_magic_and_explore_call_it():
    ns = {"np": np, "x": np.ones(8, np.float32)}
    s = run_cell(ns, "y = np.exp(x) * 2 + 1", plan="unfused", backend="cpu", quiet=True)
    assert s.plan.strategy == "unfused" and len(s.plan.kernels) == 3


@pytest.mark.parametrize("keep", ["tmp", "tmp, u", ("tmp", "u")])
def test_run_cell_keeps_names_given_as_the_flag_takes_them(keep):
    ns = {"np": np, "x": np.ones(4, np.float32)}
    run_cell(ns, "tmp = x + 1\nu = tmp * 2\ny = u + tmp", keep=keep, backend="cpu", quiet=True)
    assert "tmp" in ns and ("u" in ns) == ("u" in keep)


def test_explore_checks_its_options_and_measure_its_repeats():
    x = np.ones(64, np.float32)
    with pytest.raises(OptionError, match="repeats=0"):
        fuselab.explore(lambda a: a * 2, x, repeats=0, quiet=True)
    s = fuselab.explore(lambda a: a * 2, x, backend="cpu", quiet=True)
    with pytest.raises(OptionError, match="repeats=-1"):
        s.measure(repeats=-1)


# -- the session and the explorer after changes by hand ----------------------------------------

SOFTMAX = "mx = a.max(axis=1, keepdims=True)\ne = np.exp(a - mx)\np = e / e.sum(axis=1, keepdims=True)"


def test_a_plan_changed_by_hand_is_not_called_the_preset(ip):
    pytest.importorskip("anywidget")
    from fuselab.explorer.static import header_html
    from fuselab.explorer.widget import Explorer
    ip.run_cell("a = np.random.default_rng(0).random((32, 64), dtype=np.float32)", store_history=False)
    assert run(ip, "-q --backend cpu -o s", SOFTMAX)[0]
    s = ip.user_ns["s"]
    ex = Explorer(s)
    assert "(auto plan;" in s.summary() and ex.preset_buttons["auto"].button_style == "info"
    ex.split_kernel(0)
    assert len(s.plan.kernels) > 1
    assert "split k0" in ex.message.value and "&#x27;k&#x27;" not in ex.message.value   # not "split ('k', 0)"
    s.undo()
    s.split((2, 3))
    assert s.message == "split %2 → %3"
    assert "auto plan with your changes" in s.summary() and "with your changes" in header_html(s)
    assert ex.preset_buttons["auto"].button_style == ""
    ex.undo()
    assert "(auto plan;" in s.summary() and ex.preset_buttons["auto"].button_style == "info"
    ex.split_kernel(0)
    ex.preset("auto")      # back to the preset itself
    assert "(auto plan;" in s.summary() and ex.preset_buttons["auto"].button_style == "info"


def test_the_numpy_backend_says_truly_why_nothing_is_measured(monkeypatch):
    from fuselab.explorer.numbers import numbers_html
    from fuselab.runtime import device
    x = np.ones((16, 32), np.float32)
    s = fuselab.explore(lambda a: np.exp(a) + 1, x, backend="cpu", quiet=True)
    assert "no GPU here" in numbers_html(s) and "--backend numba measures" in numbers_html(s)
    monkeypatch.setattr(device, "cuda_available", lambda: (True, ""))   # --backend cpu on a GPU machine
    html = numbers_html(s)
    assert "no GPU here" not in html and "--backend cuda measures" in html and "prediction" in html


# -- failures of what the user did not ask for ----------------------------------------------

def test_a_numba_compile_failure_says_it_is_fuselabs_and_what_runs_meanwhile(ip, capsys, monkeypatch):
    numba_errors = pytest.importorskip("numba.core.errors")
    monkeypatch.setattr(Session, "execute", _raise(numba_errors.TypingError("\x1b[1mNo implementation of function")))
    capsys.readouterr()
    snap = snapshot(ip.user_ns)
    ok, text = run(ip, "-q --backend numba", CELL, capsys)
    assert not ok
    assert_clean(text, "TypingError (Numba, compiling a kernel fuselab generated)", "No implementation",
                 "fuselab bug", "--backend cpu", "no variable changed")
    assert "\x1b" not in text.replace("\x1b[", "")
    assert_unchanged(ip.user_ns, snap)


@pytest.mark.parametrize("line", ["", "--static"])
def test_a_view_that_fails_to_draw_does_not_fail_the_cell(ip, monkeypatch, line):
    pytest.importorskip("anywidget")
    from fuselab.explorer import static, widget
    monkeypatch.setattr(widget.Explorer, "__init__", _raise(RuntimeError("graphviz crashed")))
    if line:
        monkeypatch.setattr(static, "show_static", _raise(ValueError("svg broke")))
    from IPython.utils.capture import capture_output
    with capture_output() as cap:
        ok, _ = run(ip, f"--backend cpu {line}", "y = np.exp(x) + 1")
    assert ok and "y" in ip.user_ns
    shown = " ".join(str(o.data.get("text/html", "")) for o in cap.outputs) + cap.stdout
    assert ("svg broke" if line else "graphviz crashed") in shown
    assert "could not be drawn" in shown


def test_stopping_the_explorers_timing_says_so_and_keeps_the_plan(monkeypatch):
    pytest.importorskip("anywidget")
    from fuselab.explorer.widget import Explorer
    s = fuselab.explore(lambda a: np.exp(a) + 1, np.ones((8, 8), np.float32), backend="numba", time=False,
                        quiet=True)
    ex = Explorer(s)
    plan = s.plan
    monkeypatch.setattr(Session, "measure", _raise(KeyboardInterrupt()))
    ex.run()
    assert "timing interrupted" in ex.message.value and s.plan is plan and s.measurement is None
    assert not ex.run_button.disabled and ex.progress.value == ""


# -- the README, as documented ------------------------------------------------------------------

README = (__import__("pathlib").Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_the_readme_usage_line_matches_the_magics_flags():
    usage = re.search(r"`%%fuse (\[.*?)` — `%%fuse\?`", README, re.S).group(1)
    documented = {m.group(1): m.group(2) for m in re.finditer(r"\[(-[-\w]+)(?: ([\w|]+))?\]", usage)}
    from fuselab.magic import FuseMagics
    parser = FuseMagics.fuse.parser
    flags = {s: a for a in parser._actions for s in a.option_strings if s not in ("-h", "--help")}
    assert set(documented) == set(flags) - {"--quiet"}, set(documented) ^ set(flags)
    for flag, values in documented.items():
        if values and "|" in values:
            assert set(values.split("|")) == set(flags[flag].choices), flag


def test_the_readme_first_example_runs_as_documented(ip):
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)[:2]
    assert blocks[1].startswith("%%fuse\n")
    from IPython.utils.capture import capture_output
    with capture_output():
        assert ip.run_cell(blocks[0].replace("1_000_000", "100_000"), store_history=False).success
        assert ip.run_cell(blocks[1], store_history=False).success
    x = ip.user_ns["x"]
    np.testing.assert_allclose(ip.user_ns["y"], np.exp(x * x + 1.0) * 0.5 - np.sin(x), rtol=1e-6)
    assert "t" not in ip.user_ns


def test_an_interrupt_while_drawing_stops_the_drawing_not_the_cell(ip, monkeypatch):
    from fuselab.explorer import static
    monkeypatch.setattr(static, "show_static", _raise(KeyboardInterrupt()))
    from IPython.utils.capture import capture_output
    with capture_output() as cap:
        ok, _ = run(ip, "--backend cpu --static -o r", "y = np.exp(x) + 1")
    assert ok and "y" in ip.user_ns and "r" in ip.user_ns
    shown = " ".join(str(o.data.get("text/html", "")) for o in cap.outputs)
    assert "Drawing was interrupted" in shown and "results are bound" in shown


def test_bandwidth_above_the_copy_bandwidth_is_explained():
    from dataclasses import replace

    from fuselab.explorer.numbers import numbers_html
    x = np.ones((64, 64), np.float32)
    s = fuselab.explore(lambda a: np.exp(a) * 2 + 1, x, backend="numba", quiet=True, repeats=3)
    m = s.measurement
    n = len(m.plan.per_kernel_s)
    for seconds, explained in [(1e-9, True), (10.0, False)]:    # in cache (16 KiB), or slow
        s.measurement = replace(m, plan=replace(m.plan, per_kernel_s=(("k0", seconds),) * n))
        assert ("Above 100%: the arrays fit in the CPU's caches" in numbers_html(s)) == explained


@pytest.mark.parametrize("setting, check", [
    ("backend = 'cpu'", lambda r: r.backend == "cpu"),
    ("plan = 'max'", lambda r: r.plan.strategy == "max"),
    ("plan = 'unfused'", lambda r: r.plan.strategy == "unfused"),
    ("fp16 = 'fast'", lambda r: r.codegen_options.fp16_math == "fast"),
    ("repeats = 3", lambda r: r.repeats == 3),
    ("time = False", lambda r: r.measurement is None),
])
def test_every_config_default_is_honoured_and_a_flag_overrides_it(ip, setting, check):
    magics = ip.magics_manager.registry["FuseMagics"]
    name = setting.split()[0]
    before = getattr(magics, name)
    ip.run_line_magic("config", f"FuseMagics.{setting}")
    try:
        timed = "" if name in ("time", "repeats") else "--no-time "   # (timing costs seconds)
        line = f"-q -o r {timed}" + ("--backend numba" if name != "backend" else "")
        assert run(ip, line, "y = np.exp(x) * 2 + 1")[0]
        assert check(ip.user_ns["r"])
        override = {"backend": "--backend numba", "plan": "--plan auto", "fp16": "--fp16 numpy", "repeats": "-n 2",
                    "time": ""}[name]
        if override:
            assert run(ip, f"-q -o r {timed}{override}", "y = np.exp(x) * 2 + 1")[0]
            assert not check(ip.user_ns["r"])
    finally:
        setattr(magics, name, before)


def test_explore_interrupted_says_what_was_interrupted(monkeypatch):
    def slow(a):
        raise KeyboardInterrupt
    with pytest.raises(Interrupted, match="interrupted while tracing slow"):
        fuselab.explore(slow, np.ones(4), quiet=True)
    monkeypatch.setattr(Session, "execute", _raise(KeyboardInterrupt()))
    with pytest.raises(Interrupted, match="interrupted while running the auto plan on the cpu backend"):
        fuselab.explore(lambda a: a * 2, np.ones(4), backend="cpu", quiet=True)


def test_explores_warning_points_at_the_callers_line(monkeypatch):
    monkeypatch.setattr(Session, "measure", _raise(RuntimeError("timer broke")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = fuselab.explore(lambda a: a * 2, np.ones(4, np.float32), backend="numba", quiet=True)
    (w,) = [w for w in caught if issubclass(w.category, FuselabWarning)]
    assert w.filename == __file__ and "timer broke" in str(w.message) and s.timing_error


def test_a_cell_magic_inside_the_cell_is_told_where_it_goes(ip, capsys):
    capsys.readouterr()
    ok, text = run(ip, "-q --backend cpu", "%%time\ny = x * 2", capsys)
    assert not ok
    assert_clean(text, "line 1", "`%%time` is a cell magic", "above `%%fuse")
    res = ip.run_cell("%%time\n%%fuse -q --backend cpu\ny = x * 2", store_history=False)
    assert res.success and "y" in ip.user_ns      # as the message says


@pytest.mark.parametrize("arrays, words", [((), "missing a required argument: 'a'"),
                                           ((np.ones(3), np.ones(3)), "too many positional arguments")])
def test_explore_called_with_the_wrong_arrays_says_it_is_the_call(arrays, words):
    def gelu(a):
        return a * 2
    with pytest.raises(TraceError) as info:
        fuselab.explore(gelu, *arrays, quiet=True)
    text = str(info.value)
    assert f"fuselab.explore(gelu, {len(arrays)} array(s))" in text and words in text
    assert "gelu(a) takes" in text and "fix the error in" not in text


@pytest.mark.parametrize("verb", ["fuse", "split"])
def test_a_plan_change_naming_nothing_is_refused_and_adds_no_undo_step(verb):
    from fuselab.session import PlanChoiceError
    s = fuselab.explore(lambda a: np.exp(a - a.max(axis=1, keepdims=True)), np.ones((4, 8), np.float32),
                        backend="cpu", quiet=True)
    with pytest.raises(PlanChoiceError, match=f"session.{verb}\\(\\): name"):
        getattr(s, verb)()
    assert len(s.history) == 1


def test_running_a_cell_again_and_after_editing_it(ip):
    want = ip.user_ns["x"].copy()
    for _ in range(3):      # each run applies its in-place update once, from the cache after the first
        assert run(ip, "-q --backend numba --no-time -o r", "x += 1\ny = np.exp(x) * 2")[0]
        want += 1
        np.testing.assert_array_equal(ip.user_ns["x"], want)
        np.testing.assert_allclose(ip.user_ns["y"], np.exp(want) * 2, rtol=1e-6)
    first = ip.user_ns["r"]
    assert run(ip, "-q --backend numba --no-time -o r", "x += 1\ny = np.exp(x) * 3")[0]   # edited
    want += 1
    np.testing.assert_allclose(ip.user_ns["y"], np.exp(want) * 3, rtol=1e-6)
    assert ip.user_ns["r"] is not first and first.outputs["y"] is not ip.user_ns["y"]
    assert run(ip, "-q --backend cpu", "z = y.sum() + x[0]")[0]       # a second cell reads the first's results
    np.testing.assert_allclose(ip.user_ns["z"], (np.exp(want) * 3).sum() + want[0], rtol=1e-5)
