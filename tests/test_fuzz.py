"""The differential fuzzer (tests/fuzz) in CI: coverage-guided generated cells, traced and
planned unfused / auto / max / under a random user constraint, every kernel run on the
CPU emulator of CUDA, every result judged against NumPy on the same inputs (bit for bit
on exact paths, within derived bounds elsewhere). Prints this run's coverage.

FUSELAB_FUZZ_PROGRAMS (default 300) and FUSELAB_FUZZ_SEED (default 0) choose the run;
`scripts/fuzz.sh N` runs long ones, `python -m fuzz shrink SEED --target ...` (in tests/)
reduces a failure to a minimal cell.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from cuda_host import needs_cxx
from fuzz.coverage import Coverage, layout_of, reachable
from fuzz.driver import run
from fuzz.generator import F16_SUM, Target, generate
from fuzz.numerics import compare

PROGRAMS = int(os.environ.get("FUSELAB_FUZZ_PROGRAMS", "300"))
SEED = int(os.environ.get("FUSELAB_FUZZ_SEED", "0"))


@needs_cxx
@pytest.mark.slow
def test_generated_cells_match_numpy_on_the_emulator(capsys):
    cov, failures = run(PROGRAMS, "emulator", SEED, workers=max(1, os.cpu_count() or 1), batch=20, deterministic=True,
                        log=lambda m: None)
    with capsys.disabled():
        print("\n" + cov.report(f"Fuzzer coverage, CI run ({PROGRAMS} programs, seed {SEED})").split("### Elementwise")[0])
    assert cov.programs == PROGRAMS
    assert not failures, "\n\n".join(
        f"seed {f.spec.seed} target {f.spec.target} (python -m fuzz shrink {f.spec.seed} --target "
        f"{':'.join(f.spec.target.__dict__.values()) if f.spec.target else ''}):\n{f.source}\n{f.failures[0][:2000]}"
        for f in failures[:5])


NUMBA_PROGRAMS = int(os.environ.get("FUSELAB_FUZZ_NUMBA_PROGRAMS", "20"))


@pytest.mark.slow
def test_generated_cells_match_numpy_through_the_numba_backend():
    """The same generated cells through the Numba CPU backend (a third implementation of
    the semantics; `python -m fuzz run --numba` for long runs), the "tuned" plan with a
    random split and tile."""
    pytest.importorskip("numba")
    cov, failures = run(NUMBA_PROGRAMS, "numba", SEED + 1, workers=max(1, os.cpu_count() or 1), batch=5,
                        deterministic=True, log=lambda m: None)
    assert cov.programs == NUMBA_PROGRAMS
    assert not failures, "\n\n".join(
        f"seed {f.spec.seed} target {f.spec.target} (python -m fuzz shrink {f.spec.seed} --numba --target "
        f"{':'.join(f.spec.target.__dict__.values()) if f.spec.target else ''}):\n{f.source}\n{f.failures[0][:2000]}"
        for f in failures[:5])


def test_the_judge_catches_small_differences():
    """The comparison must be able to fail: one ulp on an exact path, one element outside
    a bound, a NaN for a number, a wrong dtype."""
    w = np.array([1.0, 2.0, np.nan], np.float32)
    assert compare("y", w.copy(), w, None).ok
    assert not compare("y", np.nextafter(w, 3, dtype=np.float32), w, None).ok
    assert not compare("y", np.array([-0.0, 2.0, np.nan], np.float32), np.array([0.0, 2.0, np.nan], np.float32), None).ok
    bound = np.array([1e-3, 1e-3, 0.0])
    assert compare("y", w + np.float32(5e-4), w, bound).ok
    assert not compare("y", w + np.float32(2e-3), w, bound).ok
    assert not compare("y", np.array([1.0, np.nan, np.nan], np.float32), w, bound).ok
    assert not compare("y", w.astype(np.float64), w, None).ok
    assert not compare("i", np.array([1, 2]), np.array([1, 3]), None).ok


def test_targets_reach_their_cells():
    """Steering works: programs generated for a reduction layout produce that layout."""
    from fuselab.codegen import KernelCode, generate as codegen
    from fuzz.harness import prepare
    hit = 0
    layouts = ["reduction/split", "reduction/column-split+vec", "row/smem", "reduction/thread", "row/strided"]
    for k, layout in enumerate(layouts):
        p = generate(100 + k, Target("reduce", layout, "sum", "int32"))
        prep = prepare(p)
        assert not prep.outcome.failures, prep.outcome.failures
        seen = {layout_of(c) for _, _, cs in prep.plans for c in cs if isinstance(c, KernelCode)}
        hit += layout in seen
    assert hit == len(layouts)


def test_every_reachable_cell_is_a_target_the_generator_can_build():
    cells = sorted(reachable())
    rng = np.random.default_rng(0)
    for k in rng.choice(len(cells), 60, replace=False):
        p = generate(int(k), Target(*cells[int(k)]))
        assert p.source and p.inputs


def test_coverage_round_trips(tmp_path):
    cov = Coverage()
    cov.add([("reduce", "row/warp", "sum", "float32")] * 2, ["sibling reductions"])
    cov.programs = 1
    cov.save(tmp_path / "c.json")
    back = Coverage.load(tmp_path / "c.json")
    assert back.cells == cov.cells and back.features == cov.features and back.programs == 1
    assert "1 programs" in back.report()


def test_a_gpu_fault_ends_the_batch_with_the_program_that_faulted():
    """An illegal address costs a process its CUDA context: the program whose run faulted
    is the failure, the batch's later programs are left to a new worker (not reported as
    failures of their own, as every later call of that process would fail)."""
    from fuzz.harness import ContextLost, context_lost, run_batch

    programs = [generate(seed, None) for seed in (11, 12, 13)]

    def faulting_runner(preps):
        for p in preps:
            if p.program.seed == 12:
                p.outcome.failures.append("auto plan, GPU run: CUDARuntimeError: cudaErrorIllegalAddress: "
                                          "an illegal memory access was encountered")
                raise ContextLost(p)

    with pytest.raises(ContextLost) as lost:
        run_batch(programs, faulting_runner)
    assert [o.program.seed for o in lost.value.outcomes] == [11, 12]
    assert not lost.value.outcomes[0].failures and lost.value.outcomes[1].failures
    assert context_lost(RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered"))
    assert not context_lost(RuntimeError("v2: 3 of 17 differ"))


@needs_cxx
def test_programs_that_failed_on_the_gpu_pass_on_the_emulator():
    """The GPU fuzzer's finds, replayed as generated there (the emulator cannot see the
    toolchain's miscompilations; the GPU twin in test_gpu_random can)."""
    from fuzz.harness import run_batch
    from fuzz.regressions import gpu_regressions

    cases = gpu_regressions()
    assert len(cases) >= 20
    outcomes = run_batch([p for _, p in cases])
    bad = [(r, o) for (r, _), o in zip(cases, outcomes) if o.failures]
    assert not bad, "\n\n".join(f"seed {r['seed']} ({r['found']}):\n{o.program.source}\n{o.failures[0][:1500]}"
                                for r, o in bad[:3])


def test_programs_that_failed_on_the_gpu_pass_through_the_numba_backend():
    pytest.importorskip("numba")
    from fuzz.harness import run_batch, run_numba
    from fuzz.regressions import gpu_regressions

    cases = gpu_regressions()
    outcomes = run_batch([p for _, p in cases], run_numba)
    assert sum(o.plans for o in outcomes) >= 3 * len(cases)
    bad = [(r, o) for (r, _), o in zip(cases, outcomes) if o.failures]
    assert not bad, "\n\n".join(f"seed {r['seed']} ({r['found']}):\n{o.program.source}\n{o.failures[0][:1500]}"
                                for r, o in bad[:3])


def test_a_float16_column_sum_may_be_numpys_steps_or_float32s_once():
    """A float16 sum along a non-contiguous axis: NumPy rounds to half at every step (the
    Numba backend too), the CUDA backend adds in float32 and rounds once (F16_SUM): the
    oracle takes either. Seed 9004027320's column sum of (73, 128) values in the
    thousands: 62 of 128 sums were NumPy's bits but outside the float32 bound."""
    pytest.importorskip("numba")
    from fuzz.driver import Spec, build_program
    from fuzz.harness import run_batch, run_numba

    p = build_program(Spec(9004027320, Target("reduce", "reduction/column+vec", "sum", "float16")), None)
    assert F16_SUM in p.deviations
    x = p.inputs["x0"]
    numpy_steps = x.sum(axis=0)
    float32_once = x.astype(np.float32).sum(axis=0).astype(np.float16)
    assert np.sum(numpy_steps != float32_once) > 50           # the two semantics are far apart here
    for out in run_batch([p], run_numba) + run_batch([p]):
        assert out.plans >= 3 and not out.failures, out.failures[:1]


def test_a_bound_keeps_its_operands_error_where_the_slope_underflows():
    """arctan2(575, 1.4e223 ± 1.2e213) moves by about 3.5e-231 across the interval: a
    slope of 3e-444, below the smallest double; the bound must still hold the move."""
    from fuzz.catalog import binary_bound, unary_bound

    a, b, bb = np.array([575.0]), np.array([1.4e223]), np.array([1.2e213])
    out = np.arctan2(a, b)
    bound = binary_bound("arctan2", out, a, b, None, bb, np.dtype(np.float64))
    assert np.abs(np.arctan2(a, b + bb) - out)[0] <= bound[0]
    x, bx = np.array([513.8]), np.array([4.3e-11])
    e = unary_bound("exp", np.exp(x), x, bx, np.dtype(np.float64))
    assert np.abs(np.exp(x + bx) - np.exp(x))[0] <= e[0]


def test_a_record_or_option_with_no_sm_count_is_refused(tmp_path, monkeypatch):
    """sm -1 (the spec's "the worker decides") once reached the generator as an SM count:
    grids of -256 blocks, which the emulator looped over without end."""
    import json

    from fuselab.codegen import CodegenOptions
    from fuzz import regressions

    with pytest.raises(ValueError, match="sm_count"):
        CodegenOptions(sm_count=-1)
    path = tmp_path / "regressions-gpu.json"
    path.write_text(json.dumps([{"seed": 1, "target": None, "drop": [], "sm": -1, "found": "x"}]))
    monkeypatch.setattr(regressions, "GPU_REGRESSIONS", path)
    with pytest.raises(ValueError, match="top-level 'sm'"):
        regressions.gpu_regressions()


def test_no_bound_where_the_interval_crosses_a_domain_edge():
    """A mean of int64 extremes is -1.875 in NumPy's pairwise order and 1.0 in another
    (both within the sum's bound): its power to 0.001 is NaN in one order, a number in
    the other. The bound is NaN there, and the generator leaves such a value out (seed
    9797029811 took v2 ** 0.001 of such a mean and judged the emulator's 0.0 against
    NumPy's NaN); a NaN certain across the interval keeps a bound (no NaN)."""
    from fuzz.catalog import binary_bound, unary_bound

    a, ba = np.array([-1.875, 4.0, np.nan]), np.array([3.9e5, 1e-3, 1.0])
    b = np.array([0.001, 0.001, 0.001])
    with np.errstate(all="ignore"):
        out = np.power(a, b)
    bound = binary_bound("power", out, a, b, ba, None, np.dtype(np.float64))
    assert np.isnan(bound[0]) and np.isfinite(bound[1]) and not np.isnan(bound[2])
    with np.errstate(all="ignore"):
        s = unary_bound("sqrt", np.sqrt(a[:2]), a[:2], np.array([3.0, 1e-3]), np.dtype(np.float64))
    assert np.isnan(s[0]) and np.isfinite(s[1])
    import fuzz.__main__ as cli
    program = cli.build_program(cli.Spec(9797029811, cli._target("elem:row:less_equal:int64")), None)
    assert "** np.float64(0.001)" not in program.source


def test_structural_targets_build_the_same_cell_for_a_seed():
    """Every structural scenario (generator.STRUCTS: reductions over any axes, views,
    broadcasts, stencils, two-pass cells, 0-d inputs, dtype= accumulators...) builds a
    cell, the same one for the same seed."""
    from fuzz.generator import STRUCTS
    for k, s in enumerate(STRUCTS):
        t = Target("struct", s, "", ("float32", "int16", "uint8", "float16", "bool")[k % 5])
        a, b = generate(5000 + k, t), generate(5000 + k, t)
        assert a.source and a.source == b.source
        assert all((a.inputs[n] == b.inputs[n]).all() or a.inputs[n].dtype.kind == "f" for n in a.inputs)


def test_emulator_arrays_lie_next_to_guard_pages():
    """The fuzzer's emulator arrays end (or begin) at a page no access is allowed to: a
    load beyond an array stops the process, as a GPU faults (illegal address), instead of
    reading zeroed slack; the slack a vector may read holds NaN."""
    import subprocess
    import sys
    from pathlib import Path
    code = ("import sys, ctypes, numpy as np; sys.path[:0] = [{t!r}, {r!r}]\n"
            "from fuzz.harness import _guarded_empty\n"
            "a = _guarded_empty((5,), np.float32); b = _guarded_empty((5,), np.float32)\n"
            "assert a.ctypes.data % 16 == 0 and b.ctypes.data % 16 == 0\n"
            "assert np.isnan(np.frombuffer((ctypes.c_float * 3).from_address(a.ctypes.data + 20), np.float32)).all()\n"
            "print('ok', flush=True)\n"
            "ctypes.c_float.from_address({addr}).value\n")
    here = Path(__file__).resolve().parent
    for addr in ("a.ctypes.data + 32", "b.ctypes.data - 4"):
        r = subprocess.run([sys.executable, "-c", code.format(t=str(here), r=str(here.parent), addr=addr)],
                           capture_output=True, text=True, timeout=120)
        assert r.stdout.strip() == "ok", r.stderr
        assert r.returncode == -11, (addr, r.returncode, r.stderr)


def test_gap_scenarios_write_the_forms_the_audit_found_missing():
    """generator.GAP_STRUCTS (tests/fuzz/gaps.py) write what fuselab fuses and the random
    lines never wrote: scalars on the left and at their edges, in-place updates and out=,
    ufunc dtype=, np.where with scalars, clip and round arguments, ddof, more views, casts
    of full-range values, 2-D stencils, operands broadcast along odd runs; the same cell
    for a seed."""
    import re

    from fuzz.generator import GAP_STRUCTS
    wanted = {"scalar-edges": [r"^v\d+ = (\(-?|np\.\w+\()?[\w.]+\)? [-+*/%<>&|^]+ x\d", r"np\.(u?int|float)\d+\("],
              "inplace": [r"; v\d+ [-+*/%<>&|^]+= ", r"out=v\d+", r"\] = "],
              "ufunc-args": [r"dtype=np\.", r"clip\(", r"np\.where\(", r"round\(|around\("],
              "ddof": [r"ddof=[1-9]"],
              "views-more": [r"order='F'|\.T\.r|flatten\('F'\)", r"\[::-3\]|\[-2::-2\]|\[1::3\]|::-3\]"],
              "cast-edges": [r"\.astype\("],
              "stencil-2d": [r"\[\d:(-\d)?, \d:(-\d)?\]"],
              "broadcast-runs": [r"x\d+ [-+*/] x\d+|np\.(maximum|greater)\(x\d"]}
    for s in GAP_STRUCTS:
        text = "\n".join(generate(7000 + k, Target("struct", s, "", ("float32", "int16", "uint8", "float64", "int64")[k % 5])).source
                         for k in range(40))
        for pattern in wanted[s]:
            assert re.search(pattern, text, re.M), (s, pattern)
        again = generate(7003, Target("struct", s, "", "float64"))
        assert again.source == generate(7003, Target("struct", s, "", "float64")).source


def test_inplace_forms_cast_floats_to_integers_only_in_range():
    """A float-to-integer astype of values out of range has no one NumPy answer (x86's
    conversions: an AVX-512 NumPy gave 2**31 where fuselab and other builds give the
    64-bit conversion's low bits; found by the GPU fuzzer on the H100, 2026-12-05): the
    in-place forms, whose oracle is NumPy, cast such values only where they all fit."""
    import re

    from fuzz.gaps import _inplace_forms
    from fuzz.generator import CellBuilder, Value

    int_cast = re.compile(r"\.astype\(np\.u?int\d+\)")
    for arr, allowed in ((np.array([1e10, np.nan, -5.0, 3.0]), False), (np.array([1.0, 2.5, 7.0, 100.0]), True)):
        b = CellBuilder(np.random.default_rng(5))
        x = Value("x0", arr, None)
        forms = [f for _ in range(300) for f in _inplace_forms(b, x, "v1")]
        assert any(int_cast.search(f) for f in forms) == allowed, arr


def _stale_values(program) -> list[str]:
    """The names whose oracle value is not what NumPy gives running the whole cell on the
    program's final inputs (within the value's bound)."""
    env = {"np": np, **{k: v.copy() for k, v in program.inputs.items()}}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(program.source, env)
    stale = []
    for name, want in program.values.items():
        if name in program.inputs or name not in env:
            continue
        verdict = compare(name, np.asarray(env[name]), want.arr, want.bound, want.any_zero_sign)
        if not verdict.ok:
            stale.append(verdict.message)
    return stale


@pytest.mark.parametrize("seed", [8103026355, *range(7000, 7040)])
def test_an_oracle_value_is_numpys_for_the_inputs_the_cell_gets(seed):
    """Every value the generator expects is NumPy's on the inputs the cell finally runs
    with: an input given new values (a product's near-one operand) after a line read it
    left that line's value stale (GPU fuzzer seed 8103026355: a product taken twice)."""
    for dtype in ("float16", "float64"):
        program = generate(seed, Target("struct", "axes", "", dtype), real_sm=132)
        if F16_SUM in program.deviations:
            continue   # float16 sums accumulate in float32 there, not as NumPy's do (the
                       # GPU regression record of the seed covers its float16 program)
        assert not _stale_values(program), (program.source, _stale_values(program))
