"""NumPy-exact scalar helpers that the generated kernels call (`from
fuselab.numba_backend.scalar import ...` in every generated module). Importing this
module imports Numba.

These are the CPU counterparts of the CUDA prelude's `fl_*` helpers
(fuselab/codegen/prelude.py) and follow the same rules: float16 is held in float32 and
rounded to half to nearest even after every op; integer division and remainder have
Python's signs with `x // 0 == 0`; float-to-integer casts give the smallest integer for
NaN and values out of range (what x86's truncating conversions give NumPy). Numba has
no float16 on the CPU, so half values travel as their 16 bits and are converted here.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

_jit = njit(cache=True, nogil=True, error_model="numpy")


# ---------------------------------------------------------------------------
# Bit casts (Numba has no scalar view): one LLVM bitcast each
# ---------------------------------------------------------------------------

def _bitcast(src: types.Type, dst: types.Type, llvm_dst: ir.Type):
    """An intrinsic reinterpreting `src`'s bits as `dst`. An integer source of another width
    is first truncated or zero-extended (Numba widens uint32 arithmetic to 64 bits)."""
    @intrinsic
    def cast(typingctx, x):
        if x != src and not (isinstance(src, types.Integer) and isinstance(x, types.Integer)):
            return None
        def codegen(context, builder, signature, args):
            v = args[0]
            if isinstance(src, types.Integer) and x.bitwidth != src.bitwidth:
                width = ir.IntType(src.bitwidth)
                v = builder.trunc(v, width) if x.bitwidth > src.bitwidth else builder.zext(v, width)
            return builder.bitcast(v, llvm_dst)
        return dst(x), codegen
    return cast


f32_bits = _bitcast(types.float32, types.uint32, ir.IntType(32))
bits_f32 = _bitcast(types.uint32, types.float32, ir.FloatType())
f64_bits = _bitcast(types.float64, types.uint64, ir.IntType(64))
bits_f64 = _bitcast(types.uint64, types.float64, ir.DoubleType())


# ---------------------------------------------------------------------------
# float16: 16 bits in memory, float32 in registers
# ---------------------------------------------------------------------------

# Written with selects, not branches, so that loops over half values vectorize.

@_jit
def fl_from_half(h):
    """The float32 value of half bits `h` (exact: every half is a float32)."""
    u = np.uint32(h)
    sign = (u & np.uint32(0x8000)) << np.uint32(16)
    a = u & np.uint32(0x7FFF)
    normal = bits_f32(sign | ((a << np.uint32(13)) + np.uint32(0x38000000)))          # rebias 15 -> 127
    special = bits_f32(sign | np.uint32(0x7F800000) | ((a & np.uint32(0x3FF)) << np.uint32(13)))  # inf, NaN
    tiny = np.float32(a) * np.float32(5.9604644775390625e-08)                        # zero, subnormal: a * 2**-24
    tiny = -tiny if sign else tiny
    return tiny if a < np.uint32(0x400) else (special if a >= np.uint32(0x7C00) else normal)


@_jit
def fl_round_half(f):
    """float32 -> the nearest half (ties to even), as a float32: one NumPy float16 op's
    rounding. NaN stays NaN."""
    x = np.float32(f)
    u = f32_bits(x)
    sign = u & np.uint32(0x80000000)
    a = u & np.uint32(0x7FFFFFFF)
    # normal halves: drop 13 significand bits, ties to even (a carry into the exponent is right)
    r = (a + np.uint32(0x0FFF) + ((a >> np.uint32(13)) & np.uint32(1))) & np.uint32(0xFFFFE000)
    r = r if r <= np.uint32(0x477FE000) else np.uint32(0x7F800000)                    # above 65504: inf
    normal = bits_f32(sign | r)
    # subnormal halves are multiples of 2**-24, the spacing of floats in [0.5, 1)
    ax = bits_f32(a)
    tiny = (ax + np.float32(0.5)) - np.float32(0.5)
    tiny = -tiny if sign else tiny
    out = tiny if a < np.uint32(0x38800000) else normal
    return x if a > np.uint32(0x7F800000) else out


@_jit
def fl_to_half(f):
    """Half bits of float32 `f`, rounded to nearest even (NumPy's npy_float_to_half)."""
    x = fl_round_half(f)
    u = f32_bits(np.float32(f))
    sign = (u & np.uint32(0x80000000)) >> np.uint32(16)
    a = f32_bits(x) & np.uint32(0x7FFFFFFF)
    normal = (a >> np.uint32(13)) - np.uint32(0x1C000)                                # rebias 127 -> 15
    tiny = np.uint32(np.abs(x) * np.float32(16777216.0))                              # multiples of 2**-24
    nan = np.uint32(0x7C00) | ((u & np.uint32(0x7FFFFF)) >> np.uint32(13))
    nan = nan if nan != np.uint32(0x7C00) else np.uint32(0x7C01)                       # stays a NaN
    h = tiny if a < np.uint32(0x38800000) else (normal if a < np.uint32(0x7F800000) else np.uint32(0x7C00))
    h = nan if (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000) else h
    return np.uint16(sign | h)


@_jit
def fl_to_half64(d):
    """Half bits of float64 `d`, rounded once to nearest even (npy_double_to_half)."""
    u = f64_bits(np.float64(d))
    sign = np.uint32((u & np.uint64(0x8000000000000000)) >> np.uint64(48))
    d_exp = u & np.uint64(0x7FF0000000000000)
    mant = u & np.uint64(0x000FFFFFFFFFFFFF)
    if d_exp >= np.uint64(0x40F0000000000000):
        if d_exp == np.uint64(0x7FF0000000000000) and mant != 0:
            h = np.uint32(0x7C00) + np.uint32(mant >> np.uint64(42))
            return np.uint16(sign + (h if h != np.uint32(0x7C00) else np.uint32(0x7C01)))
        return np.uint16(sign + np.uint32(0x7C00))
    if d_exp <= np.uint64(0x3F00000000000000):
        if d_exp < np.uint64(0x3E60000000000000):
            return np.uint16(sign)
        e = d_exp >> np.uint64(52)
        sig = np.uint64(0x0010000000000000) + mant
        shift = np.uint64(1051) - e                     # 43 .. 53
        q = sig >> shift
        rem = sig & ((np.uint64(1) << shift) - np.uint64(1))
        tie = np.uint64(1) << (shift - np.uint64(1))
        if rem > tie or (rem == tie and (q & np.uint64(1))):
            q += np.uint64(1)
        return np.uint16(sign + np.uint32(q))
    q = mant >> np.uint64(42)
    rem = mant & np.uint64(0x3FFFFFFFFFF)
    tie = np.uint64(0x20000000000)
    if rem > tie or (rem == tie and (q & np.uint64(1))):
        q += np.uint64(1)
    return np.uint16(sign + np.uint32((d_exp - np.uint64(0x3F00000000000000)) >> np.uint64(42)) + np.uint32(q))


@_jit
def fl_round_half64(d):
    """float64 -> the nearest half (one rounding), as a float32."""
    return fl_from_half(fl_to_half64(d))


# ---------------------------------------------------------------------------
# Float -> integer casts (x86 truncation, as NumPy gets it)
# ---------------------------------------------------------------------------

@_jit
def fl_f2i32(x):
    if x > -2147483649.0 and x < 2147483648.0:
        return np.int32(x)
    return np.int32(-2147483648)


@_jit
def fl_f2i64(x):
    if x >= -9223372036854775808.0 and x < 9223372036854775808.0:
        return np.int64(x)
    return np.int64(-9223372036854775807 - 1)


@_jit
def fl_f2u64(x):
    if x < 9223372036854775808.0:
        return np.uint64(fl_f2i64(x))
    return np.uint64(fl_f2i64(x - 9223372036854775808.0)) ^ np.uint64(0x8000000000000000)


# ---------------------------------------------------------------------------
# Division, remainder and powers with NumPy's rules
# ---------------------------------------------------------------------------

def _float_divmod(a, b):
    """Placeholder for Numba: the typed versions are the overloads below."""
    raise NotImplementedError


@overload(_float_divmod, jit_options={"cache": True, "error_model": "numpy"})
def _float_divmod_impl(a, b):
    # Constants of the operands' own float type, so that float32 stays float32.
    t = np.dtype(str(a)).type
    zero, one, half = t(0), t(1), t(0.5)

    def impl(a, b):
        """npy_divmod: (floor quotient, remainder with the sign of b), snapped."""
        mod = np.fmod(a, b)
        if b == zero:
            return a / b, mod
        div = (a - mod) / b
        if mod != zero:
            if (b < zero) != (mod < zero):
                mod += b
                div -= one
        else:
            mod = np.copysign(zero, b)
        if div != zero:
            floordiv = np.floor(div)
            if div - floordiv > half:
                floordiv += one
        else:
            floordiv = np.copysign(zero, a / b)
        return floordiv, mod
    return impl


@_jit
def fl_floor_divide_float(a, b):
    return _float_divmod(a, b)[0]


@_jit
def fl_remainder_float(a, b):
    if b == 0:
        return np.fmod(a, b)
    return _float_divmod(a, b)[1]


@_jit
def fl_floor_divide_int(a, b):
    """Signed a // b in int64 (the caller narrows): floor, x // 0 == 0, MIN // -1 wraps."""
    a, b = np.int64(a), np.int64(b)
    if b == 0:
        return np.int64(0)
    if b == -1:
        return np.int64(np.uint64(0) - np.uint64(a))
    q = a // b                     # Numba's integer // is already floor division
    return q


@_jit
def fl_remainder_int(a, b):
    a, b = np.int64(a), np.int64(b)
    if b == 0 or b == -1:
        return np.int64(0)
    return a % b                   # Python's sign rule, as NumPy's


@_jit
def fl_floor_divide_uint(a, b):
    a, b = np.uint64(a), np.uint64(b)
    return a // b if b != 0 else np.uint64(0)


@_jit
def fl_remainder_uint(a, b):
    a, b = np.uint64(a), np.uint64(b)
    return a % b if b != 0 else np.uint64(0)


@_jit
def fl_power_int(a, b):
    """Signed a ** b by squaring, wrapping (in 64 bits; the caller narrows). NumPy raises
    for negative exponents; a kernel cannot, so it gives the integer part instead."""
    a, b = np.int64(a), np.int64(b)
    if b < 0:
        if a == 1:
            return np.int64(1)
        if a == -1:
            return np.int64(-1) if b & 1 else np.int64(1)
        return np.int64(0)
    return np.int64(fl_power_uint(a, b))


@_jit
def fl_power_uint(a, b):
    """a ** b by squaring in uint64 (wrapping; the caller narrows)."""
    base, out, e = np.uint64(a), np.uint64(1), np.uint64(b)
    while e != 0:
        if e & np.uint64(1):
            out = out * base
        base = base * base
        e >>= np.uint64(1)
    return out


@_jit
def fl_block_sum(buf, lo, hi):
    """The sum of buf[lo:hi] (at most 16 values) in buf's type: a fixed tree for a full
    block (no chain of dependent adds, and pairwise accuracy), in order for a short one."""
    if hi - lo == 16:
        b = buf[lo:hi]
        return (((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]))) + \
            (((b[8] + b[9]) + (b[10] + b[11])) + ((b[12] + b[13]) + (b[14] + b[15])))
    s = buf[lo] - buf[lo]
    for k in range(lo, hi):
        s += buf[k]
    return s


@_jit
def fl_block_nonfinite(buf, lo, hi):
    """How many of buf[lo:hi] are inf or NaN: a variance's block (NumPy's is then NaN)."""
    c = 0
    for k in range(lo, hi):
        if not np.isfinite(buf[k]):
            c += 1
    return c


@_jit
def fl_block_sum_shifted(buf, lo, hi, shift):
    """The sum of buf[k] - shift over buf[lo:hi] (at most 16 values), in buf's type, as
    fl_block_sum adds: a variance's block, its first pass on shifted data."""
    if hi - lo == 16:
        b = buf[lo:hi]
        y0, y1, y2, y3 = b[0] - shift, b[1] - shift, b[2] - shift, b[3] - shift
        y4, y5, y6, y7 = b[4] - shift, b[5] - shift, b[6] - shift, b[7] - shift
        y8, y9, y10, y11 = b[8] - shift, b[9] - shift, b[10] - shift, b[11] - shift
        y12, y13, y14, y15 = b[12] - shift, b[13] - shift, b[14] - shift, b[15] - shift
        return (((y0 + y1) + (y2 + y3)) + ((y4 + y5) + (y6 + y7))) + \
            (((y8 + y9) + (y10 + y11)) + ((y12 + y13) + (y14 + y15)))
    s = shift - shift
    for k in range(lo, hi):
        s += buf[k] - shift
    return s


@_jit
def fl_block_sqdev(buf, lo, hi, shift, mean):
    """The sum of ((buf[k] - shift) - mean)**2 over buf[lo:hi] (at most 16 values), in
    buf's type, as fl_block_sum adds: a variance's block, its second pass (`mean` is
    relative to `shift`)."""
    if hi - lo == 16:
        b = buf[lo:hi]
        d0, d1, d2, d3 = (b[0] - shift) - mean, (b[1] - shift) - mean, (b[2] - shift) - mean, (b[3] - shift) - mean
        d4, d5, d6, d7 = (b[4] - shift) - mean, (b[5] - shift) - mean, (b[6] - shift) - mean, (b[7] - shift) - mean
        d8, d9, d10, d11 = (b[8] - shift) - mean, (b[9] - shift) - mean, (b[10] - shift) - mean, (b[11] - shift) - mean
        d12, d13, d14, d15 = ((b[12] - shift) - mean, (b[13] - shift) - mean, (b[14] - shift) - mean,
                              (b[15] - shift) - mean)
        return (((d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3)) + ((d4 * d4 + d5 * d5) + (d6 * d6 + d7 * d7))) + \
            (((d8 * d8 + d9 * d9) + (d10 * d10 + d11 * d11)) + ((d12 * d12 + d13 * d13) + (d14 * d14 + d15 * d15)))
    s = mean - mean
    for k in range(lo, hi):
        d = (buf[k] - shift) - mean
        s += d * d
    return s


# ---------------------------------------------------------------------------
# float32 exp, expm1 and tanh that LLVM can vectorize
# ---------------------------------------------------------------------------
# libm's expf / tanhf are calls, one element at a time (tens of ns for tanhf), where
# NumPy's own float32 loops are SIMD: a fused softmax or GELU would lose to NumPy on the
# transcendental alone. These compute in float64 without a call or a branch (selects
# only), so a loop around them vectorizes: e^x = 2^n e^r with |r| <= ln2/2 and a degree-11
# Taylor polynomial for e^r - 1 (relative error < 1e-13), then one rounding to float32,
# which makes them correctly rounded except within 1e-13 of a rounding boundary. (NumPy's
# SIMD expf is within a few ulp, glibc's within one.)

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01   # ln 2 in 32 bits: n * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10


_ROUND = 6755399441055744.0   # 1.5 * 2**52: adding it rounds a float64 to an integer in its low bits


@_jit
def _expm1_parts(d):
    """(2**n, e**r - 1) with d = n ln2 + r, for float64 d in [-120, 100]."""
    k = d * _LOG2E + _ROUND
    n = k - _ROUND
    r = (d - n * _LN2_HI) - n * _LN2_LO
    q = r * (1.0 + r * (0.5 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (1.0 / 720 + r * (
        1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880 + r * (1.0 / 3628800 + r * (1.0 / 39916800)))))))))))
    scale = bits_f64((f64_bits(k) - f64_bits(_ROUND) + np.uint64(1023)) << np.uint64(52))
    return scale, q


@_jit
def _clamp(d, lo, hi):
    d = d if d < hi else hi
    return d if d > lo else lo


@_jit
def fl_exp_f32(x):
    d = _clamp(np.float64(x), -120.0, 100.0)
    scale, q = _expm1_parts(d)
    y = np.float32(scale * (1.0 + q))
    return y if x == x else x


@_jit
def fl_expm1_f32(x):
    d = _clamp(np.float64(x), -120.0, 100.0)
    scale, q = _expm1_parts(d)
    y = np.float32(scale * q + (scale - 1.0))
    return x if (x != x or x == 0) else y     # NaN, and the sign of a zero


@_jit
def fl_tanh_f32(x):
    d = _clamp(2.0 * np.abs(np.float64(x)), 0.0, 40.0)
    scale, q = _expm1_parts(d)
    em = scale * q + (scale - 1.0)                 # e^(2|x|) - 1, accurate near 0
    y = np.copysign(np.float32(em / (em + 2.0)), x)
    return y if x == x else x


__all__ = ["fl_block_sum", "fl_block_sqdev", "fl_block_nonfinite", "fl_block_sum_shifted", "fl_exp_f32", "fl_expm1_f32", "fl_tanh_f32", "fl_from_half", "fl_to_half", "fl_to_half64", "fl_round_half", "fl_round_half64", "fl_f2i32",
           "fl_f2i64", "fl_f2u64", "fl_floor_divide_float", "fl_remainder_float", "fl_floor_divide_int",
           "fl_remainder_int", "fl_floor_divide_uint", "fl_remainder_uint", "fl_power_int", "fl_power_uint",
           "f32_bits", "bits_f32", "f64_bits"]
