"""The Numba backend's float32 exp, expm1 and tanh (numba_backend/scalar.py): computed in
float32 and faithfully rounded, i.e. within 1 ulp of the exact value (README,
"Transcendentals"). Checked on dense samples of the whole float32 range and on every
float32 of the ranges where the error is largest (the branch points), against the float64
values rounded to float32, and against NumPy's own float32 loops. (Every float32 input
was checked offline the same way: max errors 0.78, 0.87 and 0.92 ulp.)"""
from __future__ import annotations

import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="the Numba backend's tests need numba (pip install '.[cpu]')")

from fuselab.numba_backend import scalar  # noqa: E402

REF = {"exp": np.exp, "expm1": np.expm1, "tanh": np.tanh}
F32_MAX = float(np.finfo(np.float32).max)


def _runner(fn):
    @numba.njit(error_model="numpy")
    def run(x, out):
        for i in range(x.shape[0]):
            out[np.uint64(i)] = fn(x[np.uint64(i)])

    def call(x):
        out = np.empty_like(x)
        run(x, out)
        return out
    return call


_RUN = {name: _runner(getattr(scalar, f"fl_{name}_f32")) for name in REF}


def _key(v: np.ndarray) -> np.ndarray:
    """float32 bits as integers ordered as the values, so that differences count ulps."""
    i = v.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(_key(a) - _key(b))


def _errors(x: np.ndarray, got: np.ndarray, name: str) -> tuple[float, float]:
    """(the largest |got - exact| in ulps of the float32 at the exact value, its input),
    over the inputs whose result is finite in float32; the exact value is the float64 one
    (its own error is 2^-29 of those ulps)."""
    with np.errstate(all="ignore"):
        r = REF[name](x.astype(np.float64))
    fin = np.isfinite(r) & (np.abs(r) <= F32_MAX)
    _, e = np.frexp(np.abs(r[fin]))
    ulp = np.maximum(np.ldexp(1.0, e - 24), 2.0 ** -149)
    err = np.abs(got[fin].astype(np.float64) - r[fin]) / ulp
    i = int(np.argmax(err))
    return float(err[i]), float(x[fin][i])


def _bits_between(lo: float, hi: float, step: int = 1) -> np.ndarray:
    """Every `step`-th float32 of [lo, hi] (lo >= 0)."""
    a, b = np.float32(lo).view(np.uint32), np.float32(hi).view(np.uint32)
    return np.arange(a, b + 1, step, dtype=np.uint32).view(np.float32)


EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, -1.1754942e-38, 3e-8, -3e-8,
                  5.9604645e-08, 88.72283, 88.72284, 88.7228, 89.0, 100.0, -87.33654, -87.33655, -103.27893,
                  -103.27892, -103.97207, -103.97208, -104.0, -120.0, -17.328679, -17.32868, -16.9, -18.0,
                  0.34657359, -0.34657359, 1.0397208, 0.75, 0.9, -0.9, 0.89999998, 0.90000004, 9.010913, 9.010914,
                  9.25, 18.5, 20.0, F32_MAX, -F32_MAX, 0.5493061, 1.5, 2.0, -2.0794415], np.float32)


def _sample() -> np.ndarray:
    """Every 1021st float32 bit pattern (all exponents, both signs), every 5th float32 of
    [0.25, 1.25] (both signs: the branch points of expm1 and tanh, where their errors are
    largest), neighbours of the points where k changes, and the edges."""
    rng = np.random.default_rng(7)
    k = np.arange(-151, 130)
    mids = ((k + 0.5) * np.log(2)).astype(np.float32)
    near = np.concatenate([mids + np.float32(0)] + [np.nextafter(mids, s * np.inf) for s in (1, -1)])
    near = np.concatenate([near, near / 2])
    dense = _bits_between(0.25, 1.25, 5)
    return np.concatenate([np.arange(0, 1 << 32, 1021, dtype=np.uint64).astype(np.uint32).view(np.float32),
                           dense, -dense, near, rng.uniform(-110, 95, 1 << 18).astype(np.float32),
                           rng.standard_normal(1 << 18).astype(np.float32), EDGES])


SAMPLE = _sample()


@pytest.mark.parametrize("name", list(REF))
def test_within_one_ulp_of_the_exact_value(name):
    got = _RUN[name](SAMPLE)
    with np.errstate(all="ignore"):
        want = REF[name](SAMPLE.astype(np.float64)).astype(np.float32)   # correctly rounded (but for double rounding)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    err, at = _errors(SAMPLE, got, name)
    assert err < 1.0, (name, err, at)
    assert _ulps(got[ok], want[ok]).max() <= 1
    # infinities where float32 overflows, and zeros with the exact value's sign
    np.testing.assert_array_equal(got[ok & np.isinf(want)], want[ok & np.isinf(want)])
    zero = ok & (want == 0)
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))
    # mostly the correctly rounded float32 itself (1 in 1000 over all float32s; this
    # sample has more of the inputs near 1)
    assert np.mean(got[ok] != want[ok]) < 0.05


@pytest.mark.parametrize("name, lo, hi", [("tanh", 0.8, 1.05), ("expm1", 0.3, 0.45), ("expm1", 0.9, 1.1),
                                          ("exp", 80.0, 88.72283), ("exp", 0.3, 0.4)])
def test_every_float32_of_the_worst_ranges(name, lo, hi):
    """Every float32 where the bound is tightest: tanh around its switch from the odd
    polynomial (0.9), expm1 where k = 1 or 2 (cancellation in 2^k (1 + s) - 1), exp just
    below overflow and where k goes from 0 to 1 (both signs each)."""
    x = _bits_between(lo, hi)
    x = np.concatenate([x, -x])
    got = _RUN[name](x)
    err, at = _errors(x, got, name)
    assert err < 1.0, (name, err, at)


def test_special_values_are_numpys():
    x = np.array([np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 100.0, -200.0, 88.72284, -104.0], np.float32)
    with np.errstate(all="ignore"):
        for name in REF:
            got, want = _RUN[name](x), REF[name](x)
            assert (got.view(np.uint32) == want.view(np.uint32)).all(), (name, got, want)
            nan = _RUN[name](np.array([np.nan, -np.nan], np.float32))
            assert np.isnan(nan).all()
    # what each gives, spelled out
    assert list(_RUN["exp"](np.array([-np.inf, np.inf, -0.0], np.float32))) == [0.0, np.inf, 1.0]
    assert list(_RUN["expm1"](np.array([-np.inf, np.inf], np.float32))) == [-1.0, np.inf]
    t = _RUN["tanh"](np.array([np.inf, -np.inf, -0.0, 0.0], np.float32))
    assert list(t) == [1.0, -1.0, 0.0, 0.0] and list(np.signbit(t)) == [False, True, True, False]
    e = _RUN["expm1"](np.array([-0.0, 0.0], np.float32))
    assert list(np.signbit(e)) == [True, False]


@pytest.mark.parametrize("name", list(REF))
def test_against_numpys_float32_loops(name):
    """Ours and NumPy's float32 results (NumPy's SIMD loop, or libm's) are at most NumPy's
    own distance from the correctly rounded float32 plus 1 apart, and a few ulp at most."""
    got = _RUN[name](SAMPLE)
    with np.errstate(all="ignore"):
        npv = REF[name](SAMPLE)
        want = REF[name](SAMPLE.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(npv))
    ok = ~np.isnan(want)
    d = _ulps(got[ok], npv[ok])
    assert (d <= _ulps(npv[ok], want[ok]) + 1).all()
    assert d.max() <= 4, d.max()


def test_the_check_fails_for_a_perturbed_coefficient():
    """The sample and the bound above catch a polynomial that is off: exp with its cubic
    coefficient changed by 2^-16 of itself (an error of about 1e-7 at |r| = 0.35)."""
    from fuselab.numba_backend.scalar import (_E4, _E5, _E6, _f32, _clamp, _mul_add32, _one_plus, _reduce_x,
                                              _scale_pow2)
    e3 = _f32(scalar._E3 * (1 + 2.0 ** -16))

    @numba.njit(error_model="numpy")
    def bad_exp(x):
        t, r, r_err = _reduce_x(_clamp(x, _f32(-104.0), _f32(89.0)))
        q = _mul_add32(_mul_add32(_mul_add32(_mul_add32(_E6, r, _E5), r, _E4), r, e3), r, _f32(0.5))
        y = _scale_pow2(_one_plus(r, _mul_add32(r * r, q, r_err)), t)
        return y if x == x else x
    assert _errors(SAMPLE, _runner(bad_exp)(SAMPLE), "exp")[0] > 1.0
    # and the same function with the true coefficient passes
    e3 = scalar._E3

    @numba.njit(error_model="numpy")
    def good_exp(x):
        t, r, r_err = _reduce_x(_clamp(x, _f32(-104.0), _f32(89.0)))
        q = _mul_add32(_mul_add32(_mul_add32(_mul_add32(_E6, r, _E5), r, _E4), r, e3), r, _f32(0.5))
        y = _scale_pow2(_one_plus(r, _mul_add32(r * r, q, r_err)), t)
        return y if x == x else x
    assert _errors(SAMPLE, _runner(good_exp)(SAMPLE), "exp")[0] < 1.0


def test_loops_over_them_vectorize():
    """A loop over each compiles to SIMD code at float32's full width (packed float32
    instructions on ymm or zmm registers, fused multiply-adds where the CPU has FMA) and
    calls no libm function (one element at a time)."""
    import platform
    import re
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("checks x86 assembly")
    if "+avx2" not in scalar._llvm_features().split(","):
        pytest.skip("needs AVX2 (in the features Numba compiles for)")
    for name in REF:
        fn = getattr(scalar, f"fl_{name}_f32")

        @numba.njit(error_model="numpy")
        def run(x, out):
            for i in range(x.shape[0]):
                out[np.uint64(i)] = fn(x[np.uint64(i)])
        x = np.ones(64, np.float32)
        run(x, np.empty_like(x))
        asm = run.inspect_asm(run.signatures[0])
        packed = "vfmadd\\w*ps" if scalar.HAS_FMA else "vmulps"
        assert re.search(packed + r"\s+[^\n]*%[yz]mm", asm), name
        assert not re.search(r"\b(expf|expm1f|tanhf|exp|expm1|tanh)\b", asm), name
