"""The Numba backend's own check (numba_backend/measure.py `check`) judges results that
cancel at the documented reduction-order tolerance: relative to the magnitudes of the
reduced inputs (runtime/tolerance.py), not to the result's own rounding residue.

Every cell here is computed equally well by NumPy and by the backend, in another order:
the exact result is 0 (or nearly), both give residue of a few units of rounding of the
reduced values, and a purely relative check (rtol times max |NumPy's value|) called them
mismatches. A real error of the same outputs still fails."""
from __future__ import annotations

import numpy as np
import pytest

from numba_util import numba  # noqa: F401  (skips without Numba)

from fuselab.cell import run_cell
from fuselab.numba_backend.measure import check, reference

_RNG = np.random.default_rng(20261204)
INPUTS = {
    "ones": np.ones((300, 64)),
    "tenths32": np.full((300, 64), 0.1, np.float32),
    "tall": np.ones((20000, 3)),
    "normal64": _RNG.standard_normal((300, 64)),
    "normal32": _RNG.standard_normal((300, 64)).astype(np.float32),
    "tall_normal": _RNG.standard_normal((20000, 3)),
}

CASES = [
    # means subtracted
    ("t = np.exp(x)\na = t - t.mean(axis=0)\n", "ones"),
    ("t = np.exp(x)\na = t - t.mean(axis=0)\n", "tall"),
    ("t = np.exp(x)\na = t - t.mean()\n", "ones"),
    ("t = np.exp(x)\na = t - t.mean()\n", "tenths32"),
    ("t = np.exp(x)\na = t - t.mean(axis=1, keepdims=True)\n", "tenths32"),
    # sums of +x and -x (NumPy adds the reversed view in another order)
    ("a = x.sum(axis=1) + (-x[:, ::-1]).sum(axis=1)\n", "normal64"),
    ("a = x.sum(axis=1) + (-x[:, ::-1]).sum(axis=1)\n", "normal32"),
    ("a = x.sum(axis=0) + (-x[::-1]).sum(axis=0)\n", "tall_normal"),
    ("a = np.sum(x) - np.sum(x.T)\n", "normal64"),
    # variances (and deviations) of constants
    ("t = np.exp(x) * 0.1\na = t.var(axis=0)\n", "ones"),
    ("t = np.exp(x) * 0.1\na = t.var(axis=0)\n", "tenths32"),
    ("t = np.exp(x) * 0.1\na = t.var(axis=0)\n", "tall"),
    ("t = np.exp(x) * 0.1\na = t.std(axis=1)\n", "tenths32"),
    ("t = np.exp(x) * 0.1\na = (t - t.mean(axis=-1, keepdims=True)) / np.sqrt(t.var(axis=-1, keepdims=True) + 1e-5)\n",
     "tenths32"),
]


def _run(cell: str, x: np.ndarray, strategy: str):
    ns = {"np": np, "x": x.copy()}
    return run_cell(ns, cell, backend="numba", time=False, quiet=True, strategy=strategy), ns


@pytest.mark.parametrize("strategy", ["auto", "unfused"])
@pytest.mark.parametrize("cell,data", CASES)
def test_cancelling_reductions_pass_the_check(cell, data, strategy):
    session, ns = _run(cell, INPUTS[data], strategy)
    assert session.check.ok, session.check.worst
    # and the values are NumPy's to within the documented tolerance at the inputs' scale
    want = {}
    exec(cell, {"np": np, "x": INPUTS[data].copy()}, want)
    scale = float(np.max(np.abs(np.exp(INPUTS[data].astype(np.float64)))))
    np.testing.assert_allclose(np.asarray(ns["a"], np.float64), np.asarray(want["a"], np.float64),
                               rtol=0, atol=1e-3 * scale if ns["a"].dtype == np.float32 else 1e-9 * scale)


@pytest.mark.parametrize("cell,data,error", [
    ("t = np.exp(x)\na = t - t.mean()\n", "ones", 1e-9),
    ("t = np.exp(x)\na = t - t.mean()\n", "tenths32", 1e-3),
    ("t = np.exp(x) * 0.1\na = t.var(axis=0)\n", "ones", 1e-12),
    ("a = x.sum(axis=1) + (-x[:, ::-1]).sum(axis=1)\n", "normal64", 1e-8),
])
def test_the_slack_does_not_hide_real_errors(cell, data, error):
    session, ns = _run(cell, INPUTS[data], "auto")
    plan, inputs = session.plan, session.traced.inputs
    want = reference(plan, inputs)
    good = {"a": np.asarray(ns["a"])}
    assert check(plan, good, want, inputs).ok
    bad = good["a"].copy()
    bad.flat[bad.size // 2] += bad.dtype.type(error)
    verdict = check(plan, {"a": bad}, want, inputs)
    assert not verdict.ok, verdict.details
    assert "reduction-order slack" in verdict.worst


def test_outputs_without_order_free_reductions_keep_the_relative_check():
    x = INPUTS["normal64"]
    session, ns = _run("a = np.sin(x) - np.sin(x) * 1.0\nm = x.max(axis=0) - x.max(axis=0)\n", x, "auto")
    assert session.check.ok
    plan, inputs = session.plan, session.traced.inputs
    want = reference(plan, inputs)
    got = {k: np.asarray(ns[k]).copy() for k in want}
    got["a"].flat[0] = 1e-300        # exact zeros everywhere in NumPy: any difference fails
    verdict = check(plan, got, want, inputs)
    assert not verdict.ok and "reduction-order slack" not in verdict.worst


# -- integer and bool outputs of library-rounded values ---------------------------------
# A truncating cast or a comparison turns an ulp of a transcendental's result into a whole
# unit: NumPy's float32 power on AVX-512 (SIMD) and libm's (CUDA's, the backend's) give
# (255 * (f ** g) ** (1 / g)) one ulp apart, 176.99998 against 177.0, and the uint8 176
# against 177 for a fifth of the pixels. The check judges such an element against what
# NumPy gives with the value moved within its tolerance; any other difference still fails.

_GAMMA = "f = img.astype(np.float32) / 255\nlin = f ** (1 / 2.2)\nout = (255 * lin ** 2.2).astype(np.uint8)\n"
_TIE = "t = np.exp(x)\nbig = t > np.float32(2.0)\nn = (t * 100).astype(np.int32)\n"


def _planned(cell: str, inputs: dict):
    import fuselab
    from fuselab.plan import make_plan
    traced = fuselab.trace_cell(cell, {"np": np, **inputs})
    return make_plan(traced.graph, "auto"), dict(traced.inputs)


def _gamma_one_ulp_up(img: np.ndarray) -> np.ndarray:
    """The cell computed as NumPy does, but with the last power one ulp larger (as another
    library's pow may round it)."""
    f = img.astype(np.float32) / np.float32(255)
    p = (f ** np.float32(1 / 2.2)) ** np.float32(2.2)
    return (np.float32(255) * np.nextafter(p, np.float32(np.inf))).astype(np.uint8)


def test_an_ulp_through_a_truncating_cast_passes_the_check():
    img = np.arange(256, dtype=np.uint8).reshape(16, 16)
    plan, inputs = _planned(_GAMMA, {"img": img})
    want = reference(plan, inputs)
    got = {"out": _gamma_one_ulp_up(img)}
    assert (got["out"] != want["out"]).any()    # the ulp does move some pixels a whole unit
    c = check(plan, got, want, inputs)
    assert c.ok, c.worst


def test_a_real_error_of_an_integer_output_still_fails():
    img = np.arange(256, dtype=np.uint8).reshape(16, 16)
    plan, inputs = _planned(_GAMMA, {"img": img})
    want = reference(plan, inputs)
    for wrong in (want["out"].astype(np.int32) + 2, want["out"].astype(np.int32) - 1):
        got = {"out": np.clip(wrong, 0, 255).astype(np.uint8)}
        got["out"][0, :8] = want["out"][0, :8]       # (some equal, most not)
        c = check(plan, got, want, inputs)
        assert not c.ok and "differ" in c.worst


def test_a_comparison_at_a_tie_passes_and_a_flipped_one_fails():
    x = np.full(64, np.log(np.float32(2.0)), np.float32)
    x[::2] = np.float32(0.25)
    plan, inputs = _planned(_TIE, {"x": x})
    want = reference(plan, inputs)
    t = np.nextafter(np.exp(x), np.float32(np.inf)) if np.exp(x[1]) <= 2 else np.nextafter(np.exp(x), np.float32(0))
    got = {"big": t > np.float32(2.0), "n": (t * np.float32(100)).astype(np.int32)}
    assert (got["big"] != want["big"]).any()
    c = check(plan, got, want, inputs)
    assert c.ok, c.worst
    flipped = dict(got, big=~want["big"])          # every element wrong, the far ones too
    assert not check(plan, flipped, want, inputs).ok


# -- float outputs that cancel after a transcendental ----------------------------------
# An ulp of exp / expm1 (the backend's faithfully rounded float32 ones against NumPy's
# SIMD ones) becomes a large part of a result that cancels after it: the softplus
# round trip's error is 1.2e-7 from one library and 1.5e-7 from the other, 25% apart.

_SOFTPLUS = ("sp = np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)\ninv = np.log(np.expm1(sp))\n"
             "err = np.abs(inv - x).max()\n")


def _softplus_case():
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    plan, inputs = _planned(_SOFTPLUS, {"x": x})
    want = reference(plan, inputs)
    # NumPy's computation with the expm1 one ulp up, as another library may round it
    sp = np.log1p(np.exp(-np.abs(x))) + np.maximum(x, np.float32(0))
    inv = np.log(np.nextafter(np.expm1(sp), np.float32(np.inf)))
    got = {"err": np.abs(inv - x).max(), "sp": sp, "inv": inv}
    return plan, inputs, want, {k: got[k] for k in want}


def test_an_ulp_of_a_transcendental_before_a_cancellation_passes_the_check():
    plan, inputs, want, got = _softplus_case()
    assert not np.isclose(got["err"], want["err"], rtol=1e-3, atol=0)   # the ulp moved it by much
    c = check(plan, got, want, inputs)
    assert c.ok, c.worst


def test_a_real_error_after_a_transcendental_still_fails():
    plan, inputs, want, got = _softplus_case()
    got = dict(got, err=np.float32(got["err"] + 1e-4))     # far beyond what any ulp of it moves
    c = check(plan, got, want, inputs)
    assert not c.ok and "err" in c.worst


# identities that cancel to rounding residue after transcendentals: each gave "the auto
# plan's results differ from the reference run ... Please report the cell" under the
# Numba backend (the default one without a GPU) for results as good as NumPy's
IDENTITIES = [
    "y = np.cos(x) ** 2 + np.sin(x) ** 2 - 1\n",
    "y = (np.exp(x) - 1) - np.expm1(x)\n",
    "y = np.exp(np.log(np.abs(x) + 1)) - (np.abs(x) + 1)\n",
    "y = np.tanh(x * 1e-3) - x * 1e-3\n",
    "y = np.sinh(x) - (np.exp(x) - np.exp(-x)) / 2\n",
    "y = np.arctan2(np.sin(x), np.cos(x)) - x\n",
]


@pytest.mark.parametrize("cell", IDENTITIES)
@pytest.mark.parametrize("data", ["normal32", "normal64"])
def test_identities_cancelling_after_transcendentals_pass_the_check(cell, data):
    session, ns = _run(cell, INPUTS[data], "auto")
    assert session.check.ok, session.check.worst
    bad = np.asarray(ns["y"]).copy()
    bad.flat[7] += bad.dtype.type(1e-3)        # and an error beyond the ulps still fails
    plan, inputs = session.plan, session.traced.inputs
    assert not check(plan, {"y": bad}, reference(plan, inputs), inputs).ok
