"""float16 conversions of the Numba backend, bit for bit against NumPy: both
implementations (F16C instructions, and bit operations for CPUs without them), every half,
every rounding boundary between halves, NaN payloads, and a sample of all float32 bit
patterns (FUSELAB_NUMBA_FULL=1: all 2**32 of them)."""
from __future__ import annotations

import numpy as np
import pytest

from numba_util import FULL, numba

from fuselab.numba_backend import scalar

IMPLS = ["f16c", "bits"] if scalar.HAS_F16C else ["bits"]


def _kernels(impl: str):
    to_half = getattr(scalar, f"fl_to_half_{impl}")
    round_half = getattr(scalar, f"fl_round_half_{impl}")
    from_half = getattr(scalar, f"fl_from_half_{impl}")

    @numba.njit(parallel=True)
    def convert(x, bits, rounded):
        for i in numba.prange(x.shape[0]):
            bits[i] = to_half(x[i])
            rounded[i] = round_half(x[i])

    @numba.njit(parallel=True)
    def decode(h, out):
        for i in numba.prange(h.shape[0]):
            out[i] = from_half(h[i])
    return convert, decode


_CACHE: dict[str, tuple] = {}


def kernels(impl: str):
    if impl not in _CACHE:
        _CACHE[impl] = _kernels(impl)
    return _CACHE[impl]


def check_float32(impl: str, x: np.ndarray) -> None:
    """fl_to_half gives NumPy's half bits and fl_round_half their float32 value, exactly
    (NaNs included: NumPy keeps a NaN's top 10 payload bits, and its sign)."""
    convert, _ = kernels(impl)
    x = np.ascontiguousarray(x, np.float32)
    bits = np.empty(x.size, np.uint16)
    rounded = np.empty(x.size, np.float32)
    convert(x, bits, rounded)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float16)
    bad = np.flatnonzero(bits != want.view(np.uint16))
    assert bad.size == 0, f"{impl}: {x[bad[:5]]} ({x[bad[:5]].view(np.uint32)}) -> {bits[bad[:5]]}, NumPy {want.view(np.uint16)[bad[:5]]}"
    want32 = want.astype(np.float32).view(np.uint32)
    bad = np.flatnonzero(rounded.view(np.uint32) != want32)
    assert bad.size == 0, f"{impl}: round {x[bad[:5]].view(np.uint32)} -> {rounded[bad[:5]].view(np.uint32)}, NumPy {want32[bad[:5]]}"


def boundaries() -> np.ndarray:
    """Every half, every midpoint between neighbouring halves (the ties) and the float32s
    either side of each, both signs, and the special values."""
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    fin = np.unique(h[np.isfinite(h)].astype(np.float64))
    mids = (fin[:-1] + fin[1:]) / 2               # exact in float64, and in float32 (12 bits)
    top = np.array([65504.0 + 16.0])              # the tie between 65504 and (unrepresentable) 65536
    m32 = np.concatenate([mids, top]).astype(np.float32)
    out = [h.astype(np.float32), m32, np.nextafter(m32, np.float32(np.inf)), np.nextafter(m32, np.float32(-np.inf))]
    nan_bits = np.array([0x7F800001, 0x7F801FFF, 0x7F802000, 0x7FA00000, 0x7FC00000, 0x7FC00001, 0x7FFFFFFF,
                         0x7FBFFFFF, 0x7F800FFF], np.uint32)
    special = np.array([0.0, np.inf, 65504.0, 65519.996, 65520.0, 65536.0, 1e5, 3.4028235e38, 1e-45, 2.0 ** -25,
                        np.nextafter(np.float32(2.0 ** -25), np.float32(1)), 3 * 2.0 ** -25, 2.0 ** -24,
                        2.0 ** -14, np.nextafter(np.float32(2.0 ** -14), np.float32(0)), 1.0, 2047.0, 2049.0,
                        4097.0, 4095.0], np.float32)
    out += [nan_bits.view(np.float32), special]
    allpos = np.concatenate(out)
    return np.concatenate([allpos, -allpos])


@pytest.mark.parametrize("impl", IMPLS)
def test_every_half_decodes_as_numpy(impl):
    _, decode = kernels(impl)
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    got = np.empty(h.size, np.float32)
    decode(h, got)
    np.testing.assert_array_equal(got.view(np.uint32), h.view(np.float16).astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("impl", IMPLS)
def test_rounding_boundaries_and_specials(impl):
    check_float32(impl, boundaries())


@pytest.mark.parametrize("impl", IMPLS)
def test_float32_bit_patterns_sampled(impl):
    """Every sign, exponent and top 10 significand bits, with the 13 bits that rounding
    drops set to the patterns that decide it; and a stride through all 2**32 patterns."""
    hi = np.arange(1 << 19, dtype=np.uint32) << np.uint32(13)
    rng = np.random.default_rng(7)
    lows = [0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF, 0x0800]
    pats = [hi | np.uint32(lo) for lo in lows] + [hi | rng.integers(0, 1 << 13, hi.size, dtype=np.uint32)]
    pats.append(np.arange(0, 1 << 32, 4093, dtype=np.uint64).astype(np.uint32))
    check_float32(impl, np.concatenate(pats).view(np.float32))


@pytest.mark.skipif(not scalar.HAS_F16C, reason="no F16C on this CPU")
def test_conversions_after_arithmetic_give_numpys_quiet_nans():
    """fl_round_half_arith / fl_to_half_arith (the emitter's after IEEE arithmetic): NumPy's
    bits for every value that is not a signalling NaN, and for a signalling NaN the bits
    NumPy gives once its float32 arithmetic has quieted it."""
    from fuselab.numba_backend.scalar import fl_round_half_arith_f16c as rh, fl_to_half_arith_f16c as th

    @numba.njit(parallel=True)
    def convert(x, bits, rounded):
        for i in numba.prange(x.shape[0]):
            bits[i] = th(x[i])
            rounded[i] = rh(x[i])
    rng = np.random.default_rng(11)
    x = np.concatenate([boundaries(), rng.integers(0, 1 << 32, 1 << 22, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    bits = np.empty(x.size, np.uint16)
    rounded = np.empty(x.size, np.float32)
    convert(x, bits, rounded)
    u = x.view(np.uint32)
    snan = ((u & 0x7FFFFFFF) > 0x7F800000) & ((u & 0x400000) == 0)
    quieted = np.where(snan, u | np.uint32(0x400000), u).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        want = quieted.astype(np.float16)
    np.testing.assert_array_equal(bits, want.view(np.uint16))
    np.testing.assert_array_equal(rounded.view(np.uint32), want.astype(np.float32).view(np.uint32))
    assert snan.sum() > 1000


def test_float16_ops_keep_numpys_nan_bits():
    """Signalling NaNs in float16 inputs: the ops NumPy computes by bits (abs, negative,
    maximum, where...) keep them signalling and the arithmetic ones quiet them, bit for
    bit as NumPy's float16 loops."""
    from fuselab.ir import GraphBuilder
    from fuselab.plan import make_plan
    from numba_util import run_numba
    b = GraphBuilder()
    x = b.input("x", (64,), np.float16)
    y = b.input("y", (64,), np.float16)
    z = b.input("z", (64,), np.float16)      # no NaNs: which of two NaNs an add keeps is the compiler's choice
    outs = [("abs", b.elemwise("absolute", [x])), ("neg", b.elemwise("negative", [x])),
            ("max", b.elemwise("maximum", [x, y])), ("fmin", b.elemwise("fmin", [x, y])),
            ("add", b.elemwise("add", [x, z])), ("mul_abs", b.elemwise("absolute", [b.elemwise("multiply", [z, x])])),
            ("sqrt", b.elemwise("sqrt", [x])), ("copy", b.elemwise("positive", [x])),
            ("cast", b.astype(b.astype(x, np.float32), np.float16))]
    g = b.build(outs)
    bits = np.array([0x7C01, 0xFC01, 0x7D00, 0x7E00, 0x7E01, 0xFFFF, 0x7C00, 0x3C00, 0x0001, 0x8000] * 6 + [0, 1, 2, 3],
                    np.uint16)
    inputs = {"x": bits.view(np.float16), "y": np.roll(bits, 3).view(np.float16),
              "z": np.linspace(-3, 3, 64).astype(np.float16)}
    got = run_numba(make_plan(g), inputs)
    with np.errstate(all="ignore"):
        h = inputs["x"], inputs["y"]
        zz = inputs["z"]
        want = {"abs": np.abs(h[0]), "neg": -h[0], "max": np.maximum(*h), "fmin": np.fmin(*h), "add": h[0] + zz,
                "mul_abs": np.abs(zz * h[0]), "sqrt": np.sqrt(h[0]), "copy": +h[0],
                "cast": h[0].astype(np.float32).astype(np.float16)}
    for name, w in want.items():
        np.testing.assert_array_equal(got[name].view(np.uint16), w.view(np.uint16), err_msg=name)


@pytest.mark.skipif(not FULL, reason="all 2**32 float32 patterns: FUSELAB_NUMBA_FULL=1")
@pytest.mark.parametrize("impl", IMPLS)
def test_every_float32(impl):
    step = 1 << 26
    for start in range(0, 1 << 32, step):
        check_float32(impl, np.arange(start, start + step, dtype=np.uint64).astype(np.uint32).view(np.float32))


def test_this_cpu_gets_the_f16c_conversions_and_they_vectorize():
    """Where the CPU has F16C, the generated kernels' conversions are its instructions,
    on vector registers (a loop of them vectorizes)."""
    if not scalar.HAS_F16C:
        pytest.skip("no F16C on this CPU")
    assert scalar.fl_round_half is scalar.fl_round_half_f16c
    rh, th, fh = scalar.fl_round_half_arith, scalar.fl_to_half, scalar.fl_from_half

    @numba.njit(error_model="numpy")
    def chain(x, out):
        for i in range(x.shape[0]):
            out[i] = th(rh(rh(fh(x[i]) * np.float32(1.5)) + np.float32(0.25)))
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    out = np.empty_like(x)
    chain(x, out)
    with np.errstate(all="ignore"):
        h = x.view(np.float16)
        want = (h * np.float16(1.5)) + np.float16(0.25)
    np.testing.assert_array_equal(out, want.view(np.uint16))
    asm = "\n".join(chain.inspect_asm().values())
    assert any("vcvtps2ph" in line and ("ymm" in line or "zmm" in line) for line in asm.splitlines())
