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
from numba.core import cgutils
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

# Two implementations of each conversion, bit-identical to NumPy's (npy_half_to_float,
# npy_float_to_half: round to nearest even, subnormals, overflow to inf, and NaN payloads
# truncated as NumPy truncates them; NumPy 2 converts in software, so a signalling NaN
# stays signalling):
# - with F16C (x86 CPUs since 2012), LLVM's fptrunc/fpext between float and half, which
#   compile to vcvtps2ph / vcvtph2ps (16 values per instruction with AVX-512), plus a
#   select that gives NaNs NumPy's bits (the instructions quiet a signalling NaN);
# - without it (other CPUs, or NUMBA_CPU_NAME=generic), bit operations and one float32
#   add, written with selects, not branches, so that loops over half values vectorize.
# `fl_from_half`, `fl_round_half` and `fl_to_half` are the ones this CPU gets; a test checks
# both against NumPy.

def _llvm_features() -> str:
    """The CPU features Numba compiles for (NUMBA_CPU_FEATURES, else the host's)."""
    from numba.core import config
    if config.CPU_FEATURES is not None:
        return config.CPU_FEATURES
    if config.CPU_NAME not in (None, "host"):
        return ""      # a named CPU model (generic: a portable cache) gets no F16C from us
    import llvmlite.binding as llvm
    return llvm.get_host_cpu_features().flatten()


HAS_F16C = "+f16c" in _llvm_features().split(",")


_I16, _I32, _F32, _HALF = ir.IntType(16), ir.IntType(32), ir.FloatType(), ir.HalfType()


def _c32(v: int) -> ir.Constant:
    return ir.Constant(_I32, v)


def _half_intrinsic(arg: types.Type, ret: types.Type, build):
    """An intrinsic of one `arg` whose LLVM IR `build(builder, value)` writes: i32 integer
    operations and selects (Numba would widen uint32 arithmetic to 64 bits, and turn a
    conditional expression into branches), which LLVM vectorizes 16 lanes wide."""
    @intrinsic
    def fn(typingctx, x):
        if x != arg:
            return None
        def codegen(context, builder, signature, args):
            return build(builder, args[0])
        return ret(x), codegen
    return fn


def _is_nan(builder, x):
    return builder.fcmp_unordered("uno", x, x)


def _nan_round_f32(builder, x):
    """The float32 NaN that NumPy's float32 -> half -> float32 gives for the NaN `x`: its
    payload's top 10 bits (0x2000 when they are all zero, so that it stays a NaN), sign
    kept, signalling kept."""
    u = builder.bitcast(x, _I32)
    keep = builder.and_(u, _c32(0xFFFFE000))
    alt = builder.or_(builder.and_(u, _c32(0xFF800000)), _c32(0x2000))
    has = builder.icmp_unsigned("!=", builder.and_(u, _c32(0x7FE000)), _c32(0))
    return builder.bitcast(builder.select(has, keep, alt), _F32)


def _build_round(builder, x):
    r = builder.fpext(builder.fptrunc(x, _HALF), _F32)
    return builder.select(_is_nan(builder, x), _nan_round_f32(builder, x), r)


def _build_round_arith(builder, x):
    return builder.fpext(builder.fptrunc(x, _HALF), _F32)


def _build_to_half(builder, x):
    h = builder.bitcast(builder.fptrunc(x, _HALF), _I16)
    u = builder.bitcast(x, _I32)
    n = builder.or_(_c32(0x7C00), builder.lshr(builder.and_(u, _c32(0x7FFFFF)), _c32(13)))
    n = builder.select(builder.icmp_unsigned("!=", n, _c32(0x7C00)), n, _c32(0x7C01))
    n = builder.or_(n, builder.lshr(builder.and_(u, _c32(0x80000000)), _c32(16)))
    return builder.select(_is_nan(builder, x), builder.trunc(n, _I16), h)


def _build_to_half_arith(builder, x):
    return builder.bitcast(builder.fptrunc(x, _HALF), _I16)


def _build_from_half(builder, h):
    f = builder.fpext(builder.bitcast(h, _HALF), _F32)
    u = builder.zext(h, _I32)
    a = builder.and_(u, _c32(0x7FFF))
    nan = builder.or_(builder.or_(builder.shl(builder.and_(u, _c32(0x8000)), _c32(16)), _c32(0x7F800000)),
                      builder.shl(builder.and_(a, _c32(0x3FF)), _c32(13)))
    return builder.select(builder.icmp_unsigned(">", a, _c32(0x7C00)), builder.bitcast(nan, _F32), f)


# The instructions quiet a signalling NaN (NumPy's software conversion keeps it): each
# conversion selects NumPy's bits for a NaN. The `_arith` forms leave that out: they are
# exact for every non-NaN value and every quiet NaN, which is what an IEEE arithmetic
# result is, and for a signalling NaN they give the quiet NaN that NumPy's own arithmetic
# (in float32, then converted) gives (the emitter uses them after arithmetic ops only).
fl_from_half_f16c = _half_intrinsic(types.uint16, types.float32, _build_from_half)
fl_round_half_f16c = _half_intrinsic(types.float32, types.float32, _build_round)
fl_to_half_f16c = _half_intrinsic(types.float32, types.uint16, _build_to_half)
fl_round_half_arith_f16c = _half_intrinsic(types.float32, types.float32, _build_round_arith)
fl_to_half_arith_f16c = _half_intrinsic(types.float32, types.uint16, _build_to_half_arith)


@_jit
def _nan_half_bits(u):
    """NumPy's half bits for the float32 NaN with bits `u`: the payload's top 10 bits
    (0x7C01 when they are all zero, so that it stays a NaN), and the sign."""
    h = np.uint32(0x7C00) | ((u & np.uint32(0x7FFFFF)) >> np.uint32(13))
    h = h if h != np.uint32(0x7C00) else np.uint32(0x7C01)
    return h | ((u & np.uint32(0x80000000)) >> np.uint32(16))


@_jit
def _nan_half_f32(u):
    """The float32 NaN that NumPy's float32 -> half -> float32 gives for the NaN with
    bits `u` (as _nan_round_f32)."""
    keep = u & np.uint32(0xFFFFE000)
    return bits_f32(keep if (u & np.uint32(0x7FE000)) != np.uint32(0) else (u & np.uint32(0xFF800000)) | np.uint32(0x2000))


@_jit
def fl_from_half_bits(h):
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
def fl_round_half_bits(f):
    """float32 -> the nearest half (ties to even), as a float32, without F16C: adding
    m = 2**13 times |x|'s power of two (2**-1 for the subnormal halves, whose spacing is
    2**-24) rounds |x| to 11 significant bits in float32's own round-to-nearest-even, and
    subtracting m again is exact; a carry into the next power of two is right, and above
    65504 is inf. A NaN comes back as NumPy's half NaN."""
    x = np.float32(f)
    u = f32_bits(x)
    a = u & np.uint32(0x7FFFFFFF)
    e = a & np.uint32(0x7F800000)
    e = e if e > np.uint32(0x38800000) else np.uint32(0x38800000)                   # 2**-14: subnormal halves
    e = e if e < np.uint32(0x47800000) else np.uint32(0x47800000)                   # 2**16: beyond every half
    m = bits_f32(e + np.uint32(0x06800000))                                          # times 2**13
    r = (bits_f32(a) + m) - m
    r = r if r <= np.float32(65504.0) else np.float32(np.inf)
    out = bits_f32(f32_bits(r) | (u & np.uint32(0x80000000)))
    return out if x == x else _nan_half_f32(u)


@_jit
def fl_to_half_bits(f):
    """Half bits of float32 `f`, rounded to nearest even (NumPy's npy_float_to_half)."""
    x = fl_round_half_bits(f)
    u = f32_bits(np.float32(f))
    sign = (u & np.uint32(0x80000000)) >> np.uint32(16)
    a = f32_bits(x) & np.uint32(0x7FFFFFFF)
    normal = (a >> np.uint32(13)) - np.uint32(0x1C000)                                # rebias 127 -> 15
    tiny = np.uint32(np.abs(x) * np.float32(16777216.0))                              # multiples of 2**-24
    h = tiny if a < np.uint32(0x38800000) else (normal if a < np.uint32(0x7F800000) else np.uint32(0x7C00))
    h = sign | h
    return np.uint16(h if x == x else _nan_half_bits(u))


if HAS_F16C:
    fl_from_half, fl_round_half, fl_to_half = fl_from_half_f16c, fl_round_half_f16c, fl_to_half_f16c
    fl_round_half_arith, fl_to_half_arith = fl_round_half_arith_f16c, fl_to_half_arith_f16c
else:
    fl_from_half, fl_round_half, fl_to_half = fl_from_half_bits, fl_round_half_bits, fl_to_half_bits
    fl_round_half_arith, fl_to_half_arith = fl_round_half_bits, fl_to_half_bits


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
    """The sum of buf[lo:hi] (1 to 16 values) in buf's type: a fixed tree for a full
    block (no chain of dependent adds, and pairwise accuracy), in order for a short one."""
    if hi - lo == 16:
        b = buf[lo:hi]
        return (((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]))) + \
            (((b[8] + b[9]) + (b[10] + b[11])) + ((b[12] + b[13]) + (b[14] + b[15])))
    s = buf[lo]     # (hi > lo) the first value, not a zero made as buf[lo] - buf[lo]: NaN for an inf
    for k in range(lo + 1, hi):
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
    s = buf[lo] - shift       # (hi > lo) as fl_block_sum
    for k in range(lo + 1, hi):
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
# Lanes of a row kernel's reductions (accum.Acc.lane_*): helpers, so that a kernel's own
# code (which Numba's parallel passes compile statement by statement) stays short
# ---------------------------------------------------------------------------

@_jit
def fl_lanes_fill(lanes, value):
    for k in range(lanes.shape[0]):
        lanes[k] = value


@_jit
def fl_lane_add(lanes, comps, k, x):
    """Add x to lane k (an unsigned index) with Neumaier's compensation, by selects."""
    s = lanes[k]
    t = s + x
    lanes[k] = t
    comps[k] = comps[k] + (((s - t) + x) if np.abs(s) >= np.abs(x) else ((x - t) + s))


@_jit
def fl_lane_max(lanes, k, x):
    """lanes[k] = maximum(lanes[k], x): a NaN in the lane stays, a NaN x wins."""
    a = lanes[k]
    lanes[k] = a if ((a >= x) | (a != a)) else x


@_jit
def fl_lane_min(lanes, k, x):
    a = lanes[k]
    lanes[k] = a if ((a <= x) | (a != a)) else x


@_jit
def fl_lanes_max(lanes):
    """The lanes' maximum, folded in lane order (a NaN wins: the first)."""
    v = lanes[0]
    for k in range(1, lanes.shape[0]):
        x = lanes[k]
        v = v if ((v >= x) | (v != v)) else x
    return v


@_jit
def fl_lanes_min(lanes):
    v = lanes[0]
    for k in range(1, lanes.shape[0]):
        x = lanes[k]
        v = v if ((v <= x) | (v != v)) else x
    return v


@_jit
def fl_lanes_sum(lanes, comps, wide):
    """(total, compensation) of a float sum's lanes: lanes k + wide, k + 2 wide, ... added
    into lane k (compensated), then lanes 0..wide-1 into the total with Neumaier's
    compensation, every lane's compensation into the total's. Changes the lanes."""
    n = lanes.shape[0]
    for j in range(wide, n, wide):
        for k in range(wide):
            fl_lane_add(lanes, comps, np.uint64(k), lanes[np.uint64(k + j)])
            comps[np.uint64(k)] = comps[np.uint64(k)] + comps[np.uint64(k + j)]
    v = lanes.dtype.type(0)   # (not lanes[0] - lanes[0]: NaN where lane 0 holds an infinity)
    c = v
    for k in range(wide):
        x = lanes[np.uint64(k)]
        t = v + x
        c = c + (((v - t) + x) if np.abs(v) >= np.abs(x) else ((x - t) + v))
        v = t
        c = c + comps[np.uint64(k)]
    return v, c


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

HAS_FMA = "+fma" in _llvm_features().split(",")


@intrinsic
def _fma64(typingctx, a, b, c):
    """a * b + c rounded once (llvm.fma: one vfmadd instruction where the CPU has FMA)."""
    if not all(t == types.float64 for t in (a, b, c)):
        return None
    def codegen(context, builder, signature, args):
        f64 = ir.DoubleType()
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(f64, [f64, f64, f64]), "llvm.fma.f64")
        return builder.call(fma, args)
    return types.float64(a, b, c), codegen


@_jit
def _mul_add_plain(a, b, c):
    return a * b + c


# a * b + c: fused where the CPU has FMA (half the instructions of the polynomial below, and
# one rounding instead of two: the error bound above holds either way)
_mul_add = _fma64 if HAS_FMA else _mul_add_plain


@_jit
def _expm1_parts(d):
    """(2**n, e**r - 1) with d = n ln2 + r, for float64 d in [-120, 100]."""
    k = _mul_add(d, _LOG2E, _ROUND)
    n = k - _ROUND
    r = _mul_add(-n, _LN2_LO, _mul_add(-n, _LN2_HI, d))     # n * _LN2_HI is exact
    p = _mul_add(r, 1.0 / 39916800, 1.0 / 3628800)
    p = _mul_add(r, p, 1.0 / 362880)
    p = _mul_add(r, p, 1.0 / 40320)
    p = _mul_add(r, p, 1.0 / 5040)
    p = _mul_add(r, p, 1.0 / 720)
    p = _mul_add(r, p, 1.0 / 120)
    p = _mul_add(r, p, 1.0 / 24)
    p = _mul_add(r, p, 1.0 / 6)
    p = _mul_add(r, p, 0.5)
    p = _mul_add(r, p, 1.0)
    q = r * p
    scale = bits_f64((f64_bits(k) - f64_bits(_ROUND) + np.uint64(1023)) << np.uint64(52))
    return scale, q


@_jit
def _clamp(d, lo, hi):
    d = d if d < hi else hi
    return d if d > lo else lo


@_jit
def fl_exp_f32(x):
    d = np.float64(_clamp(x, np.float32(-120.0), np.float32(100.0)))   # (16 floats per vector, not 8 doubles)
    scale, q = _expm1_parts(d)
    y = np.float32(_mul_add(scale, q, scale))
    return y if x == x else x


@_jit
def fl_expm1_f32(x):
    d = np.float64(_clamp(x, np.float32(-120.0), np.float32(100.0)))
    scale, q = _expm1_parts(d)
    y = np.float32(_mul_add(scale, q, scale - 1.0))
    return x if (x != x or x == 0) else y     # NaN, and the sign of a zero


@_jit
def fl_tanh_f32(x):
    d = 2.0 * np.float64(_clamp(np.abs(x), np.float32(0.0), np.float32(20.0)))
    scale, q = _expm1_parts(d)
    em = _mul_add(scale, q, scale - 1.0)          # e^(2|x|) - 1, accurate near 0
    y = np.copysign(np.float32(em / (em + 2.0)), x)
    return y if x == x else x


__all__ = ["fl_lanes_fill", "fl_lane_add", "fl_lane_max", "fl_lane_min", "fl_lanes_max", "fl_lanes_min",
           "fl_lanes_sum", "HAS_F16C", "HAS_FMA", "fl_from_half_f16c", "fl_round_half_f16c", "fl_to_half_f16c", "fl_round_half_arith_f16c",
           "fl_to_half_arith_f16c", "fl_round_half_arith", "fl_to_half_arith", "fl_from_half_bits",
           "fl_round_half_bits", "fl_to_half_bits", "fl_block_sum", "fl_block_sqdev", "fl_block_nonfinite", "fl_block_sum_shifted",
           "fl_exp_f32", "fl_expm1_f32", "fl_tanh_f32", "fl_from_half", "fl_to_half", "fl_to_half64", "fl_round_half", "fl_round_half64", "fl_f2i32",
           "fl_f2i64", "fl_f2u64", "fl_floor_divide_float", "fl_remainder_float", "fl_floor_divide_int",
           "fl_remainder_int", "fl_floor_divide_uint", "fl_remainder_uint", "fl_power_int", "fl_power_uint",
           "f32_bits", "bits_f32", "f64_bits"]
