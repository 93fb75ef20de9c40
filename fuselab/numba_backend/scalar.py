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
# fl_block_sum, which a float sum's fold calls once per block of 16 elements, is inlined
# in Numba's IR: LLVM's inliner had left it a call (the slice's array struct passed through
# memory, the status checked) once per block, and the sum of squares of 16M float32 took
# 10.6 ms on one core against 7.0 inlined, the same bits (2026-12-04, 2-core AMD EPYC,
# minima of 30 runs), for about 0.2 s more compile. The variance's block helpers stay calls:
# inlined, they made a variance kernel's compile about twice as long.
_jit_inline = njit(cache=True, nogil=True, error_model="numpy", inline="always")


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


@_jit_inline
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
    """Add x to lane k (an unsigned index), the rounding error of the add going into its
    compensation comps[k]: Knuth's TwoSum, 6 operations without a comparison, which gives
    the same error as Neumaier's select of (s - t) + x or (x - t) + s (both exact whenever
    s + x is finite; where it is not, the lane is not finite, nor is the total, which is
    then the result without its compensation: Acc.total)."""
    s = lanes[k]
    t = s + x
    lanes[k] = t
    xp = t - s
    sp = t - xp
    comps[k] = comps[k] + ((s - sp) + (x - xp))


@_jit_inline
def fl_lanes_flush(lanes, comps, block):
    """Add each lane's block sum (its elements of the last BLOCK chunks, added plainly)
    into the lane, compensated (fl_lane_add), and set the block sums to 0: a lane is
    then a sum of blocks of BLOCK plain adds with Neumaier's compensation, the error
    model of every float sum here (accum.Acc), for about one add an element instead of
    fl_lane_add's six (layernorm 1024 x 16384 float32: 8.4 -> 7.8 ms, 2 cores)."""
    for k in range(lanes.shape[0]):
        fl_lane_add(lanes, comps, np.uint64(k), block[np.uint64(k)])
        block[np.uint64(k)] = block.dtype.type(0)


def _max_min_intrinsic(op: str):
    """An intrinsic max or min of two numbers (in the type `a if a >= x else x` has) as one
    LLVM intrinsic, never a select of a loaded value: for floats llvm.maximum / llvm.minimum (a NaN either side
    gives a NaN; -0.0 < +0.0), for integers llvm.smax / umax / smin / umin. A lane updated
    as `lanes[k] = a if a >= x else x` with a = lanes[k] is a store of a select of the
    value loaded from the same place, which LLVM's x86 back end turns into a masked store
    (vmaskmovps: tens of cycles on AMD's cores, where the max pass of a softmax row took
    as long as its exp)."""
    @intrinsic
    def fn(typingctx, a, x):
        u = typingctx.unify_types(a, x)     # as `a if a >= x else x` types
        if not isinstance(u, (types.Float, types.Integer)):
            return None
        def codegen(context, builder, signature, args):
            va, vx = (context.cast(builder, v, t, u) for v, t in zip(args, (a, x)))
            t = va.type
            if isinstance(u, types.Float):
                name = f"llvm.{'maximum' if op == 'max' else 'minimum'}.{'f32' if u.bitwidth == 32 else 'f64'}"
            else:
                name = f"llvm.{'s' if u.signed else 'u'}{op}.i{u.bitwidth}"
            f = cgutils.get_or_insert_function(builder.module, ir.FunctionType(t, [t, t]), name)
            return builder.call(f, [va, vx])
        return u(a, x), codegen
    return fn


_max2 = _max_min_intrinsic("max")
_min2 = _max_min_intrinsic("min")


@_jit
def fl_lane_max(lanes, k, x):
    """lanes[k] = maximum(lanes[k], x). A NaN in the lane or in x makes the lane a NaN
    (not necessarily that NaN: the row kernel folds a row whose max came out a NaN, or a
    zero, again in order, which gives NumPy's bits)."""
    lanes[k] = _max2(lanes[k], x)


@_jit
def fl_lane_min(lanes, k, x):
    lanes[k] = _min2(lanes[k], x)


# A max or min of lanes in a halving tree: the same value as an in-order fold whenever the
# result is neither a NaN nor a zero (the only results whose bits depend on which element
# gave them: a row kernel folds those rows again in order, accum.Acc.needs_serial), and
# integers are order-free. The in-order fold of 64 lanes was a chain of 63 dependent
# selects, 12% of a softmax row of 1024 (2-core Xeon, 2026-12-06); the tree's halving
# steps vectorize and the rest is short.
@_jit
def fl_lanes_max(lanes):
    """The lanes' maximum (a NaN if one is: not necessarily the first one). Changes the lanes."""
    h = lanes.shape[0]
    while h > 1 and h % 2 == 0:
        h //= 2
        for k in range(h):
            lanes[np.uint64(k)] = _max2(lanes[np.uint64(k)], lanes[np.uint64(k + h)])
    v = lanes[0]
    for k in range(1, h):
        v = _max2(v, lanes[np.uint64(k)])
    return v


@_jit
def fl_lanes_min(lanes):
    h = lanes.shape[0]
    while h > 1 and h % 2 == 0:
        h //= 2
        for k in range(h):
            lanes[np.uint64(k)] = _min2(lanes[np.uint64(k)], lanes[np.uint64(k + h)])
    v = lanes[0]
    for k in range(1, h):
        v = _min2(v, lanes[np.uint64(k)])
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


def _prefetch_intrinsic(write: int, locality: int):
    """An intrinsic `fn(arr, i)` prefetching the cache line of arr[i] (a 1-D array, i an
    integer; no bounds check: a prefetch never faults) for reading (write=0) or writing
    (write=1: x86's prefetchw, which fetches the line exclusive, as a store's miss would),
    llvm.prefetch with `locality` 0-3 (3: into L1, 2: L2, ...)."""
    @intrinsic
    def fn(typingctx, arr, i):
        if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(i, types.Integer)):
            return None
        def codegen(context, builder, signature, args):
            ary = context.make_array(arr)(context, builder, args[0])
            ptr = builder.gep(ary.data, [args[1]])
            p8 = builder.bitcast(ptr, ir.IntType(8).as_pointer())
            f = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [p8.type, _I32, _I32, _I32]), "llvm.prefetch.p0i8")
            builder.call(f, [p8, _c32(write), _c32(locality), _c32(1)])
            return context.get_dummy_value()
        return types.void(arr, i), codegen
    return fn


fl_prefetch = _prefetch_intrinsic(0, 3)
fl_prefetchw = _prefetch_intrinsic(1, 3)


# LLVM vectorizes for 256-bit registers on Intel CPUs that have 512-bit ones (its tuning
# for Skylake-X, whose clock dropped under 512-bit code), so a kernel's loops got half the
# float32 lanes AVX-512 has. Where the loop computes more than it moves, that is the
# difference: GELU's loop, 1.63 -> 0.94 ns an element on one core of this project's
# 2-core Xeon (2026-12-05; exp 0.63 -> 0.55, a copy unchanged). The width changes no result
# (no reassociation: fastmath is off, and the sums fold fixed lanes in a fixed order).
HAS_AVX512 = "+avx512f" in _llvm_features().split(",")


@intrinsic
def fl_wide_vectors(typingctx):
    """Ask LLVM to vectorize the calling function 512 bits wide where the CPU has AVX-512
    (the function attribute "prefer-vector-width"; a no-op elsewhere). llvmlite's attribute
    set only takes the attributes it knows, so the string attribute is added past its check."""
    def codegen(context, builder, signature, args):
        if HAS_AVX512:
            set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        return context.get_dummy_value()
    return types.none(), codegen


# ---------------------------------------------------------------------------
# float32 exp, expm1 and tanh that LLVM can vectorize
# ---------------------------------------------------------------------------
# libm's expf / tanhf are calls, one element at a time (tens of ns for tanhf), where
# NumPy's own float32 loops are SIMD: a fused softmax or GELU would lose to NumPy on the
# transcendental alone. These compute in float32 without a call or a branch (selects
# only), so a loop around them vectorizes as wide as float32 goes (8 lanes with AVX2, 16
# with AVX-512; the float64 polynomial they replace had half the lanes and twice the
# degree: 2.2x slower for exp, 2.0x for tanh, 1.4x for expm1, on one AVX2 core of an AMD
# EPYC, 2026-12-04, where exp now takes 0.6 ns and tanh 1.0 ns per element, NumPy's own
# 1.3 and 2.5). e^x = 2^k e^r: k = round(x / ln2), x - k ln2 = r + r_err with
# r a float32 and r_err its rounding error (Cody-Waite: with FMA, x - k * float32(ln 2) is
# exact; without, k times a 16-bit ln 2 is), e^r - 1 = r + r^2 q(r) + r_err with q a
# degree-4 minimax polynomial (expm1: degree 5), and the last sums with their rounding
# errors carried (Fast2Sum); 2^k is two exact power-of-two factors (one ldexp on AVX-512), so that subnormal
# results and overflow come out as they should. tanh(x) is x + x^3 P(x^2) for |x| < 0.9
# (0.8 without FMA; P of degree 6) and 1 - 2^(1-k) / (1 + 2^-k + e^r - 1) with 2|x| = k ln2 + r above.
# Every float32 result is within 1 ulp of the exact value (faithfully rounded: the
# float32 just below or just above it; about 999 in 1000 are the correctly rounded one).
# Checked for every float32 input (max error 0.78 ulp for exp, in subnormal results;
# 0.87 for expm1; 0.92 for tanh; 2026-12-04, AVX2 + FMA), and on dense samples by
# tests/test_numba_transcendentals.py. NumPy's own float32 exp is within 2.5 ulp, its
# tanh 1.4, expm1 (libm) 0.8; CUDA's expf 2. Fused multiply-adds where the CPU has FMA
# (llvm.fma, one instruction), else a multiply and an add (NUMBA_CPU_NAME=generic): the
# same bound, not always the same bits, with less margin (0.99 ulp for tanh and expm1
# over every float32 of [0.25, 1.5], where their errors are largest).

HAS_FMA = "+fma" in _llvm_features().split(",")

_f32 = np.float32
_ONE, _TWO = _f32(1.0), _f32(2.0)
_MAGIC = _f32(12582912.0)          # 1.5 * 2**23: x + _MAGIC rounds x to an integer, kept in the low bits
_MAGIC_BITS = 0x4B400000
_LOG2E = _f32(1.44269504088896341)
_LN2_HI = _f32(0.693145751953125)  # ln 2 in 16 bits: k * _LN2_HI is exact for |k| < 256
_LN2_LO = _f32(1.42860677e-06)     # ln 2 - _LN2_HI
# e^r - 1 - r = r^2 (0.5 + _E3 r + _E4 r^2 + _E5 r^3 + _E6 r^4) on |r| <= 0.35 (minimax,
# float32 coefficients: absolute error < 0.07 * 2^-24 of e^r); expm1, whose result can be
# 4 times smaller than the terms added up, takes one degree more (error < 0.002 * 2^-24)
_E3, _E4, _E5, _E6 = _f32(0.16666528582572937), _f32(0.04166725277900696), _f32(0.008368171751499176), \
    _f32(0.00138639856595546)
_M3, _M4, _M5, _M6, _M7 = _f32(0.1666666567325592), _f32(0.04166645556688309), _f32(0.008333569392561913), \
    _f32(0.001393593498505652), _f32(0.0001974269252968952)
# tanh(a) = a + a^3 P(a^2) on |a| < 0.9 (minimax, float32 coefficients: relative error < 0.02 * 2^-24;
# from 0.9 on, the other form's error is under 0.93 ulp, and this one's under 0.88 below it)
_T0, _T1, _T2, _T3 = _f32(-0.33333322405815125), _f32(0.13332980871200562), _f32(-0.05392947420477867), \
    _f32(0.02166409231722355)
_T4, _T5, _T6 = _f32(-0.008265454322099686), _f32(0.002583423163741827), _f32(-0.00045570809743367136)
_TANH_SMALL = _f32(0.9) if HAS_FMA else _f32(0.8)   # (without FMA this one's error reaches 1.04 ulp by 0.9)


@intrinsic
def _fma32(typingctx, a, b, c):
    """a * b + c rounded once (llvm.fma: one vfmadd instruction where the CPU has FMA)."""
    if not all(t == types.float32 for t in (a, b, c)):
        return None
    def codegen(context, builder, signature, args):
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_F32, [_F32] * 3), "llvm.fma.f32")
        return builder.call(fma, args)
    return types.float32(a, b, c), codegen


@_jit
def _mul_add_plain32(a, b, c):
    return a * b + c


_mul_add32 = _fma32 if HAS_FMA else _mul_add_plain32


def _pow2_intrinsic(sign: int, offset: int):
    """An intrinsic of the float32 t = k + _MAGIC (k an integer, |k| < 2**22) giving the
    float32 2**(sign * k + offset), in i32 operations (Numba would widen them to 64 bits);
    the exponent must be a normal one (-126..127)."""
    @intrinsic
    def pow2(typingctx, t):
        if t != types.float32:
            return None
        def codegen(context, builder, signature, args):
            k = builder.sub(builder.bitcast(args[0], _I32), _c32(_MAGIC_BITS))
            if sign < 0:
                k = builder.neg(k)
            e = builder.add(k, _c32(offset + 127))
            return builder.bitcast(builder.shl(e, _c32(23)), _F32)
        return types.float32(t), codegen
    return pow2


_pow2_neg_k = _pow2_intrinsic(-1, 0)       # 2^-k
_pow2_one_minus_k = _pow2_intrinsic(-1, 1)  # 2^(1-k)


@intrinsic
def _scale_pow2(typingctx, u, t):
    """u * 2**k for t = k + _MAGIC, k in -150..128 and u in [0.5, 2): two exact power-of-two
    factors 2**(k >> 1) and 2**(k - (k >> 1)), so that the second product is the only
    rounding (a subnormal result) and overflows to inf where u * 2**k does."""
    if u != types.float32 or t != types.float32:
        return None
    def codegen(context, builder, signature, args):
        u, t = args
        k = builder.sub(builder.bitcast(t, _I32), _c32(_MAGIC_BITS))
        if HAS_AVX512:
            # llvm.ldexp: u * 2**k rounded once, as the two factors give it; on AVX-512 one
            # vscalefps instead of 7 integer operations and 2 multiplies (a softmax's
            # kernel 6% faster; the same bits for every float32, test_numba_transcendentals).
            # Elsewhere LLVM would expand it less well than the factors below.
            ldexp = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_F32, [_F32, _I32]),
                                                   "llvm.ldexp.f32.i32")
            return builder.call(ldexp, [u, k])
        k1 = builder.ashr(k, _c32(1))
        k2 = builder.sub(k, k1)
        s1 = builder.bitcast(builder.shl(builder.add(k1, _c32(127)), _c32(23)), _F32)
        s2 = builder.bitcast(builder.shl(builder.add(k2, _c32(127)), _c32(23)), _F32)
        return builder.fmul(builder.fmul(u, s1), s2)
    return types.float32(u, t), codegen


@_jit
def _reduce_plain(x):
    """(t, r, r_err) for float32 x in [-104, 89]: t = k + _MAGIC with k = round(x / ln2),
    r the float32 nearest x - k ln2 and r_err = x - k ln2 - r (to about 2^-48)."""
    t = _mul_add32(x, _LOG2E, _MAGIC)
    kf = t - _MAGIC
    r_hi = x - kf * _LN2_HI                 # exact
    r_lo = kf * -_LN2_LO
    r = r_hi + r_lo
    return t, r, (r_hi - r) + r_lo          # Fast2Sum


_LN2_F = _f32(0.6931471824645996)            # float32(ln 2)
_LN2_F_LO = _f32(-1.9046542121259336e-09)    # ln 2 - _LN2_F


@_jit
def _reduce_fma(x):
    """_reduce_plain with FMA, 2 operations fewer: x - k * _LN2_F is exact (|x| < 128 is
    a multiple of 2^-24 and so is k * _LN2_F: their difference, below 0.35, fits 24 bits),
    and so is r_hi - r."""
    t = _fma32(x, _LOG2E, _MAGIC)
    kf = t - _MAGIC
    r_hi = _fma32(kf, -_LN2_F, x)
    r = _fma32(kf, -_LN2_F_LO, r_hi)
    return t, r, _fma32(kf, -_LN2_F_LO, r_hi - r)


_reduce_x = _reduce_fma if HAS_FMA else _reduce_plain


@_jit
def _reduce(x):
    """(t, r, w): _reduce_x's t and r, and w = e^(x - k ln2) - 1 - r."""
    t, r, r_err = _reduce_x(x)
    q = _mul_add32(_mul_add32(_mul_add32(_mul_add32(_E6, r, _E5), r, _E4), r, _E3), r, _f32(0.5))
    return t, r, _mul_add32(r * r, q, r_err)


@_jit
def _reduce_fine(x):
    """_reduce with the polynomial of one degree more."""
    t, r, r_err = _reduce_x(x)
    q = _mul_add32(_mul_add32(_mul_add32(_mul_add32(_mul_add32(_M7, r, _M6), r, _M5), r, _M4), r, _M3), r,
                   _f32(0.5))
    return t, r, _mul_add32(r * r, q, _mul_add32(r_err, r, r_err))   # r_err e^r


@_jit
def _clamp(d, lo, hi):
    d = d if d < hi else hi
    return d if d > lo else lo


@_jit
def _one_plus(r, w):
    """1 + r + w rounded once (r in [-0.35, 0.35], |w| small): the error of 1 + r is kept."""
    v = _ONE + r
    return v + (((_ONE - v) + r) + w)


@_jit
def fl_exp_f32(x):
    t, r, w = _reduce(_clamp(x, _f32(-104.0), _f32(89.0)))   # beyond: 0 and inf
    # (_ONE + (r + w) is 3 operations fewer, 6% of a softmax, and still faithful: max error
    # 0.88 ulp over every float32, 0.90 without FMA; but 1 result in 13 to 50 is then not
    # the correctly rounded one, against 1 in 1000 (README), 2026-12-04)
    y = _scale_pow2(_one_plus(r, w), t)
    return y if x == x else x


@_jit
def fl_expm1_f32(x):
    xc = _clamp(x, _f32(-18.0), _f32(89.0))    # below -17.33 it is -1, above 88.73 inf
    t, r, w = _reduce_fine(xc)
    # k <= -3: e^x - 1, e^x <= 0.18 with its own error well under an ulp of the result
    y_neg = _scale_pow2(_one_plus(r, w), t) - _ONE
    # k >= -2: 2^k (c + r + w) with c = 1 - 2^-k, exact up to k = 24 (then 1, and -2^-k
    # goes into c_lo); c + r by Fast2Sum (|c| >= 0.5 > |r|, or c = 0)
    m = _pow2_neg_k(t if t < _MAGIC + _f32(64.0) else _MAGIC + _f32(64.0))
    c = _ONE - m
    c_lo = (_ONE - c) - m
    h = c + r
    y = _scale_pow2(h + (((c - h) + r) + (w + c_lo)), t)
    y = y_neg if t < _MAGIC - _f32(2.0) else y
    return x if (x != x or x == 0) else y     # NaN, and the sign of a zero


@intrinsic
def _with_sign_of(typingctx, y, x):
    """y with x's sign bit or-ed in: np.copysign(y, x) where y's sign bit is clear (an
    and and an or, where copysign clears y's too)."""
    if y != types.float32 or x != types.float32:
        return None
    def codegen(context, builder, signature, args):
        yb, xb = (builder.bitcast(v, _I32) for v in args)
        return builder.bitcast(builder.or_(yb, builder.and_(xb, _c32(0x80000000))), _F32)
    return types.float32(y, x), codegen


@_jit
def fl_tanh_f32(x):
    a = np.abs(x)
    # |x| < 0.9: a + a^3 P(a^2)
    a2 = a * a
    p = _mul_add32(_mul_add32(_mul_add32(_mul_add32(_mul_add32(_mul_add32(_T6, a2, _T5), a2, _T4), a2, _T3), a2, _T2),
                               a2, _T1), a2, _T0)
    y_small = _mul_add32(a * a2, p, a)
    # above: 1 - 2 / (e^2a + 1) = 1 - 2^(1-k) / (1 + 2^-k + (e^r - 1)), 2a = k ln2 + r; from
    # 2a = 18.5 on it rounds to 1
    # (2a >= 0 needs no lower bound; a NaN gives 18.5, its result is x's below)
    a2x = _TWO * a
    t, r, w = _reduce(a2x if a2x < _f32(18.5) else _f32(18.5))
    c = _ONE + _pow2_neg_k(t)
    v = c + r
    d = v + (((c - v) + r) + w)
    y = _ONE - _pow2_one_minus_k(t) / d
    y = y_small if a < _TANH_SMALL else y
    y = _with_sign_of(y, x)     # y >= +0 here: np.copysign(y, x) in one operation fewer
    return y if x == x else x


__all__ = ["fl_prefetch", "fl_prefetchw", "fl_wide_vectors", "HAS_AVX512", "fl_lanes_fill", "fl_lane_add", "fl_lanes_flush", "fl_lane_max", "fl_lane_min", "fl_lanes_max", "fl_lanes_min",
           "fl_lanes_sum", "HAS_F16C", "HAS_FMA", "fl_from_half_f16c", "fl_round_half_f16c", "fl_to_half_f16c", "fl_round_half_arith_f16c",
           "fl_to_half_arith_f16c", "fl_round_half_arith", "fl_to_half_arith", "fl_from_half_bits",
           "fl_round_half_bits", "fl_to_half_bits", "fl_block_sum", "fl_block_sqdev", "fl_block_nonfinite", "fl_block_sum_shifted",
           "fl_exp_f32", "fl_expm1_f32", "fl_tanh_f32", "fl_from_half", "fl_to_half", "fl_to_half64", "fl_round_half", "fl_round_half64", "fl_f2i32",
           "fl_f2i64", "fl_f2u64", "fl_floor_divide_float", "fl_remainder_float", "fl_floor_divide_int",
           "fl_remainder_int", "fl_floor_divide_uint", "fl_remainder_uint", "fl_power_int", "fl_power_uint",
           "f32_bits", "bits_f32", "f64_bits"]
