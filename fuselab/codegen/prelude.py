"""The CUDA prelude: device helpers (`fl_*`) that give the op table's CUDA expressions
NumPy's exact semantics.

Each snippet defines a few `fl_*` names. A kernel's source includes only the snippets it
uses (found by scanning its body for `fl_` names, then the snippets' own uses), so a
generated file stays short enough to read. Nothing here includes a header: NVRTC
provides the math functions and vector types built in, and float16 is handled through
PTX conversions, so the same source compiles with NVRTC anywhere.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = re.compile(r"\bfl_\w+")


@dataclass(frozen=True)
class Snippet:
    names: tuple[str, ...]   # the fl_* names it defines
    code: str

    @property
    def uses(self) -> frozenset[str]:
        return frozenset(_NAME.findall(self.code)) - set(self.names)


SNIPPETS: tuple[Snippet, ...] = (
    Snippet(('fl_half', 'fl_from_half', 'fl_to_half'), r"""
// float16 is stored as 16 raw bits and computed with in float: every half value is
// exactly a float, and PTX's cvt rounds to nearest even as NumPy does.
struct alignas(2) fl_half { unsigned short bits; };
__device__ __forceinline__ float fl_from_half(fl_half h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
    return f;
}
__device__ __forceinline__ fl_half fl_to_half(float f) {
    fl_half h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
}
__device__ __forceinline__ fl_half fl_to_half(double d) {  // one rounding, as NumPy
    fl_half h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h.bits) : "d"(d));
    return h;
}
"""),
    Snippet(('fl_half_bits', 'fl_hadd', 'fl_hsub', 'fl_hmul', 'fl_hneg', 'fl_habs'), r"""
// float16 arithmetic in half itself, each op rounded once to nearest even: what NumPy
// gets by computing in float32 and rounding (exact or innocuous double rounding). The
// explicit .rn keeps the compiler from contracting a multiply and an add into an fma.
__device__ __forceinline__ fl_half fl_half_bits(unsigned short b) { fl_half h; h.bits = b; return h; }
__device__ __forceinline__ fl_half fl_hadd(fl_half a, fl_half b) {
    fl_half r;
    asm("add.rn.f16 %0, %1, %2;" : "=h"(r.bits) : "h"(a.bits), "h"(b.bits));
    return r;
}
__device__ __forceinline__ fl_half fl_hsub(fl_half a, fl_half b) {
    fl_half r;
    asm("sub.rn.f16 %0, %1, %2;" : "=h"(r.bits) : "h"(a.bits), "h"(b.bits));
    return r;
}
__device__ __forceinline__ fl_half fl_hmul(fl_half a, fl_half b) {
    fl_half r;
    asm("mul.rn.f16 %0, %1, %2;" : "=h"(r.bits) : "h"(a.bits), "h"(b.bits));
    return r;
}
__device__ __forceinline__ fl_half fl_hneg(fl_half a) { return fl_half_bits(a.bits ^ 0x8000u); }
// abs through float (exact both ways): as `bits & 0x7fff`, ptxas (CUDA 13) dropped the
// mask on every other lane of a 4-half vector store, leaving negative results (found by
// the GPU fuzzer, SASS read with nvdisasm).
__device__ __forceinline__ fl_half fl_habs(fl_half a) { return fl_to_half(fabsf(fl_from_half(a))); }
"""),
    Snippet(('fl_inf', 'fl_nan'), r"""
template <class T> __device__ __forceinline__ T fl_inf();
template <> __device__ __forceinline__ float fl_inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double fl_inf<double>() { return __longlong_as_double(0x7ff0000000000000LL); }
template <class T> __device__ __forceinline__ T fl_nan();
template <> __device__ __forceinline__ float fl_nan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double fl_nan<double>() { return __longlong_as_double(0x7ff8000000000000LL); }
"""),
    Snippet(('fl_unsigned', 'fl_is_float', 'fl_is_signed', 'fl_is_bool'), r"""
// Type traits (NVRTC has no <type_traits> without headers).
template <class T> struct fl_unsigned { typedef T type; };
template <> struct fl_unsigned<signed char> { typedef unsigned char type; };
template <> struct fl_unsigned<short> { typedef unsigned short type; };
template <> struct fl_unsigned<int> { typedef unsigned int type; };
template <> struct fl_unsigned<long long> { typedef unsigned long long type; };
template <class T> struct fl_is_float { static constexpr bool value = false; };
template <> struct fl_is_float<float> { static constexpr bool value = true; };
template <> struct fl_is_float<double> { static constexpr bool value = true; };
template <class T> struct fl_is_signed { static constexpr bool value = T(-1) < T(0); };
template <> struct fl_is_signed<bool> { static constexpr bool value = false; };
template <class T> struct fl_is_bool { static constexpr bool value = false; };
template <> struct fl_is_bool<bool> { static constexpr bool value = true; };
"""),
    Snippet(('fl_opaque',), r"""
// x behind an opaque move: NVVM computes it whole as written and cannot rewrite the
// arithmetic around it (see fl_widen and fl_index). The host emulator has no such pass.
template <class T> __device__ __forceinline__ T fl_opaque(T x) {
#ifdef __CUDA_ARCH__
    if constexpr (sizeof(T) == 8) asm("mov.b64 %0, %0;" : "+l"(x));
    else asm("mov.b32 %0, %0;" : "+r"(x));
#endif
    return x;
}
"""),
    Snippet(('fl_widen',), r"""
// A 1- or 2-byte integer widened to int behind an opaque move, for arithmetic that needs
// its sign (division, remainder, right shift): NVVM otherwise narrows that arithmetic to
// 16-bit registers, where its lowering of byte vectors dropped the sign extension of
// every other lane (int8 x // 2 in a row kernel's 16-byte packs took the neighbour
// lane's low bit; found by the GPU fuzzer, PTX read). Wider types pass through. Only
// the data operand is widened: a constant divisor stays visible (no div.s32).
template <class T> __device__ __forceinline__ auto fl_widen(T x) {
    if constexpr (sizeof(T) < 4) return fl_opaque(int(x));
    else return x;
}
"""),
    Snippet(('fl_index',), r"""
// An index with a negative term (a reversed axis), behind an opaque move. NVVM's split of
// constant offsets out of addresses rewrote x[568 - i % 4 * 142 + i / 4] (unsigned, never
// below zero) as x[(i / 4 - i % 4 * 142) + 568] with the 32-bit middle term zero-extended:
// 8 GB past the array when it is negative (an illegal address on the H200, found by the
// GPU fuzzer; PTX read). Behind the move the index is computed whole, then widened.
template <class I> __device__ __forceinline__ I fl_index(I i) { return fl_opaque(i); }
"""),
    Snippet(('fl_isnan', 'fl_isinf', 'fl_isfinite', 'fl_signbit'), r"""
template <class T> __device__ __forceinline__ bool fl_isnan(T x) {
    if constexpr (fl_is_float<T>::value) return isnan(x); else return false;
}
template <class T> __device__ __forceinline__ bool fl_isinf(T x) {
    if constexpr (fl_is_float<T>::value) return isinf(x); else return false;
}
template <class T> __device__ __forceinline__ bool fl_isfinite(T x) {
    if constexpr (fl_is_float<T>::value) return isfinite(x); else return true;
}
template <class T> __device__ __forceinline__ bool fl_signbit(T x) {
    if constexpr (fl_is_float<T>::value) return signbit(x); else return x < T(0);
}
"""),
    Snippet(('fl_f2i32', 'fl_f2i64', 'fl_reg', 'fl_caster', 'fl_cast'), r"""
// Float to integer as x86's truncating conversions, which NumPy uses: NaN and values
// out of range give the smallest integer (NumPy leaves them undefined and warns).
template <class F> __device__ __forceinline__ int fl_f2i32(F x) {
    return (x > F(-2147483649.0) && x < F(2147483648.0)) ? static_cast<int>(x) : (-2147483647 - 1);
}
template <class F> __device__ __forceinline__ long long fl_f2i64(F x) {
    return (x >= F(-9223372036854775808.0) && x < F(9223372036854775808.0))
        ? static_cast<long long>(x) : (-9223372036854775807LL - 1);
}
// The register type of a dtype's storage type: float16 computes in float.
template <class T> struct fl_reg { typedef T type; };
template <> struct fl_reg<fl_half> { typedef float type; };
template <class To, class From> struct fl_caster {
    static __device__ __forceinline__ To apply(From x) {
        if constexpr (fl_is_float<From>::value && !fl_is_float<To>::value) {
            if constexpr (sizeof(To) == 8 && !fl_is_signed<To>::value) {
                return x < From(9223372036854775808.0)
                    ? static_cast<To>(fl_f2i64(x))
                    : static_cast<To>(fl_f2i64(x - From(9223372036854775808.0))) ^ (1ULL << 63);
            } else if constexpr (sizeof(To) == 8 || (sizeof(To) == 4 && !fl_is_signed<To>::value)) {
                return static_cast<To>(fl_f2i64(x));
            } else {
                return static_cast<To>(fl_f2i32(x));
            }
        } else {
            return static_cast<To>(x);
        }
    }
};
template <class From> struct fl_caster<bool, From> {
    static __device__ __forceinline__ bool apply(From x) { return x != From(0); }
};
template <class From> struct fl_caster<fl_half, From> {
    static __device__ __forceinline__ float apply(From x) {
        if constexpr (sizeof(From) == 8 && fl_is_float<From>::value) return fl_from_half(fl_to_half(x));
        else return fl_from_half(fl_to_half(static_cast<float>(x)));
    }
};
// NumPy's astype / loop casts: fl_cast<fl_half>(x) rounds to half and keeps a float.
template <class To, class From> __device__ __forceinline__ typename fl_reg<To>::type fl_cast(From x) {
    return fl_caster<To, From>::apply(x);
}
"""),
    Snippet(('fl_wrap_add', 'fl_wrap_sub', 'fl_wrap_mul', 'fl_wrap_neg'), r"""
// Integer + - * and negation wrap around as NumPy's loops do. Signed overflow is undefined
// in C++ (the compiler may fold x + 1 > x to true), and 16-bit operands are promoted to
// int (65535 * 65535 overflows it), so the arithmetic runs in an unsigned type of at
// least 32 bits, where it is defined modulo 2^n, and converts back.
template <class T> struct fl_wrap_type { typedef typename fl_unsigned<T>::type type; };
template <> struct fl_wrap_type<signed char> { typedef unsigned int type; };
template <> struct fl_wrap_type<unsigned char> { typedef unsigned int type; };
template <> struct fl_wrap_type<short> { typedef unsigned int type; };
template <> struct fl_wrap_type<unsigned short> { typedef unsigned int type; };
// 8- and 16-bit operands: the operation in PTX on their 32-bit widening, then truncated
// in C++. NVVM narrows the C++ form to sub.s16 & co., and ptxas (CUDA 13, sm_90) widens
// those results without wrapping them (-(int16 -32768) compared as 32768; found by the GPU
// tests), so it must not see 16-bit arithmetic.
template <char Op> __device__ __forceinline__ unsigned fl_wrap32(unsigned a, unsigned b) {
#ifdef __CUDA_ARCH__
    unsigned r;
    if constexpr (Op == '+') asm("add.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    else if constexpr (Op == '-') asm("sub.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    else asm("mul.lo.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
#else
    return Op == '+' ? a + b : (Op == '-' ? a - b : a * b);
#endif
}
template <class T> __device__ __forceinline__ T fl_wrap_add(T a, T b) {
    typedef typename fl_wrap_type<T>::type U;
    if constexpr (sizeof(T) < 4) return T(fl_wrap32<'+'>(unsigned(a), unsigned(b)));
    else return T(U(a) + U(b));
}
template <class T> __device__ __forceinline__ T fl_wrap_sub(T a, T b) {
    typedef typename fl_wrap_type<T>::type U;
    if constexpr (sizeof(T) < 4) return T(fl_wrap32<'-'>(unsigned(a), unsigned(b)));
    else return T(U(a) - U(b));
}
template <class T> __device__ __forceinline__ T fl_wrap_mul(T a, T b) {
    typedef typename fl_wrap_type<T>::type U;
    if constexpr (sizeof(T) < 4) return T(fl_wrap32<'*'>(unsigned(a), unsigned(b)));
    else return T(U(a) * U(b));
}
template <class T> __device__ __forceinline__ T fl_wrap_neg(T a) {
    typedef typename fl_wrap_type<T>::type U;
    if constexpr (sizeof(T) < 4) return T(fl_wrap32<'-'>(0u, unsigned(a)));
    else return T(U(0) - U(a));
}
"""),
    Snippet(('fl_abs', 'fl_sign', 'fl_floor', 'fl_ceil', 'fl_trunc', 'fl_invert', 'fl_deg2rad', 'fl_rad2deg'), r"""
template <class T> __device__ __forceinline__ T fl_abs(T x) {
    if constexpr (fl_is_float<T>::value) return fabs(x);
#ifdef __CUDA_ARCH__
    // 8- and 16-bit: abs.s32 of the widened value, then truncated. NVVM makes abs.s16 of
    // the wrapping form below, which ptxas computes in 32 bits and never truncates back:
    // abs(int16 -32768) compared as 32768, not -32768 (found by the GPU fuzzer).
    else if constexpr (fl_is_signed<T>::value && sizeof(T) < 4) {
        int r;
        asm("abs.s32 %0, %1;" : "=r"(r) : "r"(int(x)));
        return T(r);
    }
    // 32- and 64-bit: (x ^ m) - m with m = x >> (bits - 1), in PTX. ptxas takes the result
    // of abs (IABS, whether NVVM made it of the C++ form below or it came as abs.s32) for
    // non-negative, while abs(INT_MIN) is INT_MIN: np.mod(abs(x), y) lost the dividend's
    // sign handling and gave 2^31 mod y (found by the GPU fuzzer, SASS read with nvdisasm).
    else if constexpr (fl_is_signed<T>::value && sizeof(T) == 4) {
        int m, t, r;
        asm("shr.s32 %0, %3, 31;\n\txor.b32 %1, %3, %0;\n\tsub.s32 %2, %1, %0;"
            : "=r"(m), "=r"(t), "=r"(r) : "r"(int(x)));
        return T(r);
    } else if constexpr (fl_is_signed<T>::value) {
        long long m, t, r;
        asm("shr.s64 %0, %3, 63;\n\txor.b64 %1, %3, %0;\n\tsub.s64 %2, %1, %0;"
            : "=l"(m), "=l"(t), "=l"(r) : "l"((long long)x));
        return T(r);
    }
#endif
    else if constexpr (fl_is_signed<T>::value) return x < T(0) ? fl_wrap_neg(x) : x;  // abs(INT_MIN) wraps
    else return x;
}
template <class T> __device__ __forceinline__ T fl_sign(T x) {
    if constexpr (fl_is_float<T>::value) return x > T(0) ? T(1) : (x < T(0) ? T(-1) : (x == T(0) ? T(0) : x));
    else if constexpr (fl_is_signed<T>::value) return T((x > T(0)) - (x < T(0)));
    else return T(x > T(0));
}
template <class T> __device__ __forceinline__ T fl_floor(T x) {
    if constexpr (fl_is_float<T>::value) return floor(x); else return x;
}
template <class T> __device__ __forceinline__ T fl_ceil(T x) {
    if constexpr (fl_is_float<T>::value) return ceil(x); else return x;
}
template <class T> __device__ __forceinline__ T fl_trunc(T x) {
    if constexpr (fl_is_float<T>::value) return trunc(x); else return x;
}
template <class T> __device__ __forceinline__ T fl_invert(T x) {
    if constexpr (fl_is_bool<T>::value) return !x;
    else return T(~x);
}
// Constants folded in T's own precision, as npy_deg2rad / npy_rad2deg.
template <class T> __device__ __forceinline__ T fl_deg2rad(T x) { return x * (T(3.14159265358979323846) / T(180)); }
template <class T> __device__ __forceinline__ T fl_rad2deg(T x) { return x * (T(180) / T(3.14159265358979323846)); }
"""),
    Snippet(('fl_reciprocal',), r"""
// NumPy's integer reciprocal is 1.0 / x converted back to the integer type.
template <class T> __device__ __forceinline__ T fl_reciprocal(T x) {
    if constexpr (fl_is_float<T>::value) return T(1) / x;
    else return fl_cast<T>(1.0 / static_cast<double>(x));
}
"""),
    Snippet(('fl_hdiv',), r"""
// a / b for float16 values a, b (held in float) whose quotient is rounded to float16 next
// (NumPy's float16 divide): an approximate reciprocal (rcp.approx, within about 2^-23),
// a product and one Markstein correction (r = a - b q is exact): the corrected quotient is
// within 2^-24 of a / b relatively, and a quotient of two halves is at least 2^-23 away
// from every float16 rounding boundary it does not sit on, so rounding it gives the
// float16 that IEEE division then rounding gives (checked on the GPU for all 2^32 pairs).
// Cheaper than IEEE float division (no range checks and slow path: halves never reach its
// edge ranges), which float16 rows pay per element: 8-16% of a float16 layernorm's or
// softmax's time on the H200. r is 0 or NaN when a is 0, infinite or NaN, or b is
// 0 or infinite: q is already right there. The CPU emulator takes the exact reciprocal.
__device__ __forceinline__ float fl_hdiv(float a, float b) {
#ifdef __CUDA_ARCH__
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(b));
#else
    const float y = 1.0f / b;
#endif
    const float q = a * y;
    const float r = fmaf(-b, q, a);
    return fabsf(r) > 0.0f ? fmaf(r, y, q) : q;
}
"""),
    Snippet(('fl_float_divmod', 'fl_floor_divide', 'fl_remainder'), r"""
// NumPy's float divmod (npy_divmod): Python's floor semantics, snapped quotient.
template <class T> __device__ __forceinline__ T fl_float_divmod(T a, T b, T& mod) {
    mod = fmod(a, b);
    if (b == T(0)) return a / b;
    T div = (a - mod) / b;
    if (mod != T(0)) {
        if ((b < T(0)) != (mod < T(0))) { mod += b; div -= T(1); }
    } else {
        mod = copysign(T(0), b);
    }
    T floordiv;
    if (div != T(0)) {
        floordiv = floor(div);
        if (div - floordiv > T(0.5)) floordiv += T(1);
    } else {
        floordiv = copysign(T(0), a / b);
    }
    return floordiv;
}
// a // b: floats as npy_floor_divide; integers floor, x // 0 == 0, MIN // -1 == MIN.
template <class T> __device__ __forceinline__ T fl_floor_divide(T a, T b) {
    if constexpr (fl_is_float<T>::value) {
        T mod;
        return b == T(0) ? a / b : fl_float_divmod(a, b, mod);
    } else if constexpr (sizeof(T) < 4 && fl_is_signed<T>::value) {
        return T(fl_floor_divide<int>(fl_widen(a), int(b)));   // wraps MIN // -1 as NumPy
    } else if constexpr (fl_is_signed<T>::value) {
        if (b == T(0)) return T(0);
        if (b == T(-1)) return T(0 - static_cast<typename fl_unsigned<T>::type>(a));
        const T q = T(a / b);
        return ((a % b != 0) && ((a < T(0)) != (b < T(0)))) ? T(q - 1) : q;
    } else {
        return b == T(0) ? T(0) : T(a / b);
    }
}
// a % b with the sign of b (Python's rule); x % 0 == 0 for integers.
template <class T> __device__ __forceinline__ T fl_remainder(T a, T b) {
    if constexpr (fl_is_float<T>::value) {
        T mod;
        if (b == T(0)) return fmod(a, b);
        fl_float_divmod(a, b, mod);
        return mod;
    } else if constexpr (sizeof(T) < 4 && fl_is_signed<T>::value) {
        return T(fl_remainder<int>(fl_widen(a), int(b)));
    } else if constexpr (fl_is_signed<T>::value) {
        if (b == T(0) || b == T(-1)) return T(0);
        const T r = T(a % b);
        return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? T(r + b) : r;
    } else {
        return b == T(0) ? T(0) : T(a % b);
    }
}
"""),
    Snippet(('fl_power',), r"""
// Integer powers by squaring, wrapping like NumPy's loop. NumPy raises for negative
// integer exponents; a kernel cannot raise, so it gives the integer part instead.
template <class T> __device__ __forceinline__ T fl_power(T a, T b) {
    if constexpr (fl_is_float<T>::value) {
        return pow(a, b);
    } else {
        typedef typename fl_unsigned<T>::type U;
        if constexpr (fl_is_signed<T>::value) {
            if (b < T(0)) return a == T(1) ? T(1) : (a == T(-1) ? ((b & 1) ? T(-1) : T(1)) : T(0));
        }
        U base = U(a), out = U(1);
        for (U e = U(b); e != U(0); e >>= 1) {
            if (e & U(1)) out = U(out * base);
            base = U(base * base);
        }
        return T(out);
    }
}
"""),
    Snippet(('fl_int_pick',), r"""
// Integer max / min as a compare and a select in PTX. As max.s32 / min.s32, ptxas (CUDA
// 13, sm_90) folds negated operands into its three-input VIMNMX3 and drops the middle
// operand's negation: max(-a, -b, -c) came out as max(-a, b, -c) (found by the GPU fuzzer:
// np.max(-x, axis=1) wrong on an H200, right in PTX and on the emulator).
template <bool Max, class T> __device__ __forceinline__ T fl_int_pick(T a, T b) {
#ifdef __CUDA_ARCH__
    if constexpr (sizeof(T) <= 4) {
        if constexpr (fl_is_signed<T>::value) {
            int r;
            if constexpr (Max) asm("{ .reg .pred p; setp.ge.s32 p, %1, %2; selp.b32 %0, %1, %2, p; }" : "=r"(r) : "r"(int(a)), "r"(int(b)));
            else asm("{ .reg .pred p; setp.le.s32 p, %1, %2; selp.b32 %0, %1, %2, p; }" : "=r"(r) : "r"(int(a)), "r"(int(b)));
            return T(r);
        } else {
            unsigned r;
            if constexpr (Max) asm("{ .reg .pred p; setp.ge.u32 p, %1, %2; selp.b32 %0, %1, %2, p; }" : "=r"(r) : "r"(unsigned(a)), "r"(unsigned(b)));
            else asm("{ .reg .pred p; setp.le.u32 p, %1, %2; selp.b32 %0, %1, %2, p; }" : "=r"(r) : "r"(unsigned(a)), "r"(unsigned(b)));
            return T(r);
        }
    }
#endif
    return Max ? (a >= b ? a : b) : (a <= b ? a : b);
}
"""),
    Snippet(('fl_maximum', 'fl_minimum', 'fl_fmax', 'fl_fmin'), r"""
// maximum / minimum propagate NaN (the first one); fmax / fmin ignore it.
template <class T> __device__ __forceinline__ T fl_maximum(T a, T b) {
    if constexpr (fl_is_float<T>::value) return (a >= b || fl_isnan(a)) ? a : b; else return fl_int_pick<true>(a, b);
}
template <class T> __device__ __forceinline__ T fl_minimum(T a, T b) {
    if constexpr (fl_is_float<T>::value) return (a <= b || fl_isnan(a)) ? a : b; else return fl_int_pick<false>(a, b);
}
template <class T> __device__ __forceinline__ T fl_fmax(T a, T b) {
    if constexpr (fl_is_float<T>::value) return (a >= b || fl_isnan(b)) ? a : b; else return fl_int_pick<true>(a, b);
}
template <class T> __device__ __forceinline__ T fl_fmin(T a, T b) {
    if constexpr (fl_is_float<T>::value) return (a <= b || fl_isnan(b)) ? a : b; else return fl_int_pick<false>(a, b);
}
"""),
    Snippet(('fl_less_mixed', 'fl_equal_mixed'), r"""
// Exact comparisons of a signed and an unsigned 64-bit integer, as NumPy 2's mixed
// loops: a negative value is below every unsigned one and equal to none.
template <class A, class B> __device__ __forceinline__ bool fl_less_mixed(A a, B b) {
    if constexpr (fl_is_signed<A>::value) return a < A(0) || static_cast<B>(a) < b;
    else return b >= B(0) && a < static_cast<A>(b);
}
template <class A, class B> __device__ __forceinline__ bool fl_equal_mixed(A a, B b) {
    if constexpr (fl_is_signed<A>::value) return a >= A(0) && static_cast<B>(a) == b;
    else return b >= B(0) && a == static_cast<A>(b);
}
"""),
    Snippet(('fl_left_shift', 'fl_right_shift'), r"""
// Shifts by the type's width or more (or by a negative amount) give 0, or -1 for a
// negative value shifted right, as NumPy's npy_lshift / npy_rshift.
template <class T> __device__ __forceinline__ T fl_left_shift(T a, T b) {
    typedef typename fl_unsigned<T>::type U;
    return static_cast<unsigned long long>(b) < sizeof(T) * 8 ? T(U(U(a) << b)) : T(0);
}
template <class T> __device__ __forceinline__ T fl_right_shift(T a, T b) {
    if constexpr (sizeof(T) < 4 && fl_is_signed<T>::value)
        if (static_cast<unsigned long long>(b) < sizeof(T) * 8) return T(fl_widen(a) >> int(b));
    if (static_cast<unsigned long long>(b) < sizeof(T) * 8) return T(a >> b);
    if constexpr (fl_is_signed<T>::value) return a < T(0) ? T(-1) : T(0);
    else return T(0);
}
"""),
    Snippet(('fl_vec', 'fl_raw', 'fl_load_vec', 'fl_store_vec'), r"""
// N contiguous elements moved as one 1-16 byte access (16 bytes: a single LDG.128).
template <class T, int N> struct alignas(sizeof(T) * N) fl_vec { T v[N]; };
template <int Bytes> struct fl_raw;
template <> struct fl_raw<16> { typedef uint4 type; };
template <> struct fl_raw<8> { typedef uint2 type; };
template <> struct fl_raw<4> { typedef unsigned int type; };
template <> struct fl_raw<2> { typedef unsigned short type; };
template <> struct fl_raw<1> { typedef unsigned char type; };
template <int N, class T> __device__ __forceinline__ fl_vec<T, N> fl_load_vec(const T* p) {
    typedef typename fl_raw<sizeof(T) * N>::type R;
    union { R raw; fl_vec<T, N> vec; } u;
    u.raw = __ldg(reinterpret_cast<const R*>(p));
    return u.vec;
}
template <int N, class T> __device__ __forceinline__ void fl_store_vec(T* p, const fl_vec<T, N>& v) {
    typedef typename fl_raw<sizeof(T) * N>::type R;
    union { R raw; fl_vec<T, N> vec; } u;
    u.vec = v;
    *reinterpret_cast<R*>(p) = u.raw;
}
"""),
    Snippet(('fl_load_vec_in', 'fl_load_elems_in', 'fl_store_vec_in'), r"""
// Packs of a row whose packs follow memory (codegen/row.py): columns c .. c + N - 1 of a
// row of C columns at `row`, c from -(N - 1) (a row starting off a 16-byte boundary
// begins inside its first pack). A pack inside the row is one aligned access; one that
// overhangs either end moves element by element, only its columns inside the row (loads
// give 0 elsewhere; nothing is read or written outside the row).
// fl_load_elems_in moves a pack element by element: an array read at the column alone
// (layernorm's gamma), not aligned to the row's packs, and fl_load_vec_in's overhanging
// packs (plain loads: a vector load off its size's alignment faults).
template <int N, class T> __device__ __forceinline__ fl_vec<T, N> fl_load_elems_in(const T* cols, int c, int C) {
    fl_vec<T, N> r;
    #pragma unroll
    for (int e = 0; e < N; ++e) r.v[e] = c + e >= 0 && c + e < C ? cols[c + e] : T();
    return r;
}
template <int N, class T> __device__ __forceinline__ fl_vec<T, N> fl_load_vec_in(const T* row, int c, int C) {
    if (c >= 0 && c + N <= C) return fl_load_vec<N>(row + c);
    return fl_load_elems_in<N>(row, c, C);
}
template <int N, class T> __device__ __forceinline__ void fl_store_vec_in(T* row, int c, int C, const fl_vec<T, N>& v) {
    if (c >= 0 && c + N <= C) { fl_store_vec<N>(row + c, v); return; }
    #pragma unroll
    for (int e = 0; e < N; ++e) if (c + e >= 0 && c + e < C) row[c + e] = v.v[e];
}
"""),
    Snippet(('fl_stage_in', 'fl_stage_out'), r"""
// A block's stage (codegen/row.py's staged tier): `count` contiguous elements of an
// array from element `first`, a multiple of N (a block's rows start on a 16-byte vector:
// whole warps of rows), held in shared memory at buf[j] for element first + j. Vectors
// move whole, U of them a thread in flight together; only the array's last vector, where
// it is partial, element by element. Every thread of the block takes part.
template <int N, int U, class T, class I> __device__ __forceinline__ void fl_stage_in(T* buf, const T* src, I first, I count) {
    const I vectors = (count + N - 1) / N;
    for (I v0 = threadIdx.x; v0 < vectors; v0 += U * blockDim.x) {
        fl_vec<T, N> r[U];
        #pragma unroll
        for (int u = 0; u < U; ++u) {
            const I j = (v0 + u * blockDim.x) * N;
            if (j + N <= count) r[u] = fl_load_vec<N>(src + first + j);
        }
        #pragma unroll
        for (int u = 0; u < U; ++u) {
            const I j = (v0 + u * blockDim.x) * N;
            if (j + N <= count) {
                *reinterpret_cast<fl_vec<T, N>*>(buf + j) = r[u];
            } else if (j < count) {
                for (int e = 0; e < N && j + e < count; ++e) buf[j + e] = src[first + j + e];
            }
        }
    }
}
template <int N, class T, class I> __device__ __forceinline__ void fl_stage_out(T* dst, const T* buf, I first, I count) {
    const I vectors = (count + N - 1) / N;
    for (I v = threadIdx.x; v < vectors; v += blockDim.x) {
        const I j = v * N;
        if (j + N <= count) {
            fl_store_vec<N>(dst + first + j, *reinterpret_cast<const fl_vec<T, N>*>(buf + j));
        } else {
            for (int e = 0; e < N && j + e < count; ++e) dst[first + j + e] = buf[j + e];
        }
    }
}
"""),
    Snippet(('fl_load_vec_shift',), r"""
// N elements starting S past an aligned address: the two aligned vectors around them,
// then a constant choice per element (loads of shifted windows x[1:], x[2:] of one
// array share their aligned vectors).
template <int N, int S, class T> __device__ __forceinline__ fl_vec<T, N> fl_load_vec_shift(const T* p) {
    const fl_vec<T, N> a = fl_load_vec<N>(p), b = fl_load_vec<N>(p + N);
    fl_vec<T, N> r;
    #pragma unroll
    for (int e = 0; e < N; ++e) r.v[e] = e + S < N ? a.v[e + S] : b.v[e + S - N];
    return r;
}
"""),
    Snippet(('fl_hpick_pack',), r"""
// The max (Max) or min of a pack of N halves, as a float: on sm_80+ the pack's pairs are
// folded with PTX's max.NaN.f16x2 / min.NaN.f16x2, two elements an instruction, and only
// the last pair is converted. Exact: max and min return one of their operands, and any
// NaN gives NaN, as np.maximum's does (a float16 NaN leaves a kernel canonical either
// way: cvt to f16 gives it too). A float16 softmax's max pass converted and compared each
// element: 4 of its ~24 instructions an element on the H200.
template <bool Max, int N> __device__ __forceinline__ float fl_hpick_pack(const fl_vec<fl_half, N>& v) {
    static_assert(N % 2 == 0, "a pack of pairs of halves");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    union { fl_vec<fl_half, N> vec; unsigned pair[N / 2]; } u;
    u.vec = v;
    unsigned m = u.pair[0];
    #pragma unroll
    for (int i = 1; i < N / 2; ++i) {
        if constexpr (Max) asm("max.NaN.f16x2 %0, %0, %1;" : "+r"(m) : "r"(u.pair[i]));
        else asm("min.NaN.f16x2 %0, %0, %1;" : "+r"(m) : "r"(u.pair[i]));
    }
    fl_half lo, hi;
    lo.bits = static_cast<unsigned short>(m & 0xffffu);
    hi.bits = static_cast<unsigned short>(m >> 16);
    const float a = fl_from_half(lo), b = fl_from_half(hi);
    return Max ? fl_maximum(a, b) : fl_minimum(a, b);
#else
    float r = fl_from_half(v.v[0]);
    for (int i = 1; i < N; ++i) r = Max ? fl_maximum(r, fl_from_half(v.v[i])) : fl_minimum(r, fl_from_half(v.v[i]));
    return r;
#endif
}
"""),
    Snippet(('fl_ldcg',), r"""
// A load from L2 that bypasses L1: what other blocks of this launch wrote (partials).
template <class T> __device__ __forceinline__ T fl_ldcg(const T* p) {
    if constexpr (fl_is_bool<T>::value) return __ldcg(reinterpret_cast<const unsigned char*>(p)) != 0;
    else return __ldcg(p);
}
"""),
    Snippet(('fl_add_op',), r"""
// sum's combine; integers wrap around as NumPy's do.
// A combine takes and gives its accumulator type T (ops.reduce_rule): operands of any other
// type do not compile, so a reduction never converts its running value on the way.
template <class T> struct fl_add_op {
    typedef T type;
    __device__ __forceinline__ T operator()(T a, T b) const {
        if constexpr (fl_is_bool<T>::value) return a || b;   // sum(..., dtype=bool)
        else if constexpr (fl_is_float<T>::value) return a + b;
        else return fl_wrap_add(a, b);
    }
    template <class A, class B> __device__ T operator()(A, B) const = delete;
};
"""),
    Snippet(('fl_multiply_op',), r"""
// prod's combine; integers wrap around as NumPy's do.
// A combine takes and gives its accumulator type T (ops.reduce_rule): operands of any other
// type do not compile, so a reduction never converts its running value on the way.
template <class T> struct fl_multiply_op {
    typedef T type;
    __device__ __forceinline__ T operator()(T a, T b) const {
        if constexpr (fl_is_bool<T>::value) return a && b;   // prod(..., dtype=bool)
        else if constexpr (fl_is_float<T>::value) return a * b;
        else return fl_wrap_mul(a, b);
    }
    template <class A, class B> __device__ T operator()(A, B) const = delete;
};
"""),
    Snippet(('fl_maximum_op',), r"""
// max's combine: NaN wins, as in np.maximum.
// A combine takes and gives its accumulator type T (ops.reduce_rule): operands of any other
// type do not compile, so a reduction never converts its running value on the way.
template <class T> struct fl_maximum_op {
    typedef T type;
    __device__ __forceinline__ T operator()(T a, T b) const {
        return fl_maximum(a, b);
    }
    template <class A, class B> __device__ T operator()(A, B) const = delete;
};
"""),
    Snippet(('fl_minimum_op',), r"""
// min's combine: NaN wins, as in np.minimum.
// A combine takes and gives its accumulator type T (ops.reduce_rule): operands of any other
// type do not compile, so a reduction never converts its running value on the way.
template <class T> struct fl_minimum_op {
    typedef T type;
    __device__ __forceinline__ T operator()(T a, T b) const {
        return fl_minimum(a, b);
    }
    template <class A, class B> __device__ T operator()(A, B) const = delete;
};
"""),
    Snippet(('fl_logical_or_op',), r"""
// any's combine.
// A combine takes and gives its accumulator type T (ops.reduce_rule): operands of any other
// type do not compile, so a reduction never converts its running value on the way.
template <class T> struct fl_logical_or_op {
    typedef T type;
    __device__ __forceinline__ T operator()(T a, T b) const {
        return a || b;
    }
    template <class A, class B> __device__ T operator()(A, B) const = delete;
};
"""),
    Snippet(('fl_logical_and_op',), r"""
// all's combine.
// A combine takes and gives its accumulator type T (ops.reduce_rule): operands of any other
// type do not compile, so a reduction never converts its running value on the way.
template <class T> struct fl_logical_and_op {
    typedef T type;
    __device__ __forceinline__ T operator()(T a, T b) const {
        return a && b;
    }
    template <class A, class B> __device__ T operator()(A, B) const = delete;
};
"""),
    Snippet(('fl_same', 'fl_shfl_xor', 'fl_warp_allreduce', 'fl_block_allreduce'), r"""
template <class A, class B> struct fl_same { static constexpr bool value = false; };
template <class A> struct fl_same<A, A> { static constexpr bool value = true; };
// Warp shuffles for every register type (bool and small integers travel as int).
template <class T> __device__ __forceinline__ T fl_shfl_xor(T v, int mask, int width) {
    if constexpr (sizeof(T) < 4) return T(__shfl_xor_sync(0xffffffffu, int(v), mask, width));
    else return __shfl_xor_sync(0xffffffffu, v, mask, width);
}
// Every lane of each `width`-lane group gets the group's reduction (butterfly).
template <class T, class Op> __device__ __forceinline__ T fl_warp_allreduce(T v, Op op, int width) {
    static_assert(fl_same<T, typename Op::type>::value, "a reduction's value and its combine differ in type");
    for (int mask = width / 2; mask > 0; mask /= 2) v = op(v, fl_shfl_xor(v, mask, width));
    return v;
}
// Every thread of the block gets the block's reduction, combined in warp order (so the
// result does not depend on timing). `scratch` holds one value per warp.
template <class T, class Op> __device__ __forceinline__ T fl_block_allreduce(T v, Op op, T* scratch) {
    static_assert(fl_same<T, typename Op::type>::value, "a reduction's value and its combine differ in type");
    v = fl_warp_allreduce(v, op, 32);
    __syncthreads();  // scratch may still be read by a previous call
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    T r = scratch[0];
    for (int w = 1; w < int(blockDim.x + 31) >> 5; ++w) r = op(r, scratch[w]);
    return r;
}
"""),
    Snippet(('fl_group_allreduce',), r"""
// Every thread gets the reduction over the threads of its residue modulo `group` (a row
// of a slab: threads i, i + group, ... of `groups` stripes), as a tree over the stripes
// (stripe s takes in s + h for h = P/2, ..., 1, P the power of two >= groups): log2 steps,
// where a fold of one stripe after another made (8192, 2048, 3) a softmax of 170 stripes
// 2.2x slower (H200, 2026-12-03). `scratch` holds one value a thread.
template <class T, class Op> __device__ __forceinline__ T fl_group_allreduce(T v, Op op, T* scratch, int group,
                                                                            int groups) {
    static_assert(fl_same<T, typename Op::type>::value, "a reduction's value and its combine differ in type");
    const int stripe = threadIdx.x / group;
    __syncthreads();  // scratch may still be read by a previous call
    scratch[threadIdx.x] = v;
    __syncthreads();
    int h = 1;
    while (h < groups) h *= 2;
    for (h /= 2; h > 0; h /= 2) {
        if (stripe < h && stripe + h < groups) scratch[threadIdx.x] = op(scratch[threadIdx.x], scratch[threadIdx.x + h * group]);
        __syncthreads();
    }
    return scratch[threadIdx.x % group];
}
"""),
    Snippet(('fl_welford', 'fl_welford_op', 'fl_welford_var'), r"""
// A variance in one pass: the running (count, mean, sum of squared deviations from the
// mean) of Welford's update, combined as Chan et al.'s pairwise formula, and a flag that
// is NaN once an element is not finite (the sum of x - x: one add an element, where a count
// through isfinite took three, 5-9% of a column variance's time on the H200). Each state
// keeps its mean relative to a shift, its first element: Welford's rounding grows with
// |mean| / standard deviation (float32 data around 1000 with deviations of 1 lost three
// digits), shifted data keep it at NumPy's two passes'.
// Over fewer than 8 elements (S) the plain sum rides along (fl_welford_var: NumPy's mean).
// Where NumPy's passes overflow, fl_welford_var gives its results (see there).
template <class T, bool S = false> struct fl_welford { T n, mean, m2, nonfinite, shift; };
template <class T> struct fl_welford<T, true> { T n, mean, m2, nonfinite, shift, sum; };
// d / n for the running mean, n a count. On the GPU, float through the approximate
// reciprocal (__fdividef, within 2 ulp): IEEE division's range checks cost a column
// variance a sixth and a row variance a quarter of its time (H200, 2026-12-02). A relative
// error e in the mean's increment adds at most e d^2 / n to M2 against its d^2 (n-1) / n,
// well inside the variance's error bound. Double multiplies by 1 / n: the approximate
// single-precision reciprocal refined by two Newton steps (error 2^-22, 2^-44, then
// rounding), branch-free and off the running mean's chain, where a double division is a
// call whose steps all wait on d. The CPU emulator divides exactly.
template <class T> __device__ __forceinline__ T fl_div_count(T d, T n) {
#ifdef __CUDA_ARCH__
    if constexpr (sizeof(T) == 4) return __fdividef(d, n);
    else {
        double r = double(__fdividef(1.0f, float(n)));
        r = fma(r, fma(-n, r, 1.0), r);
        r = fma(r, fma(-n, r, 1.0), r);
        return d * r;
    }
#endif
    return d / n;
}
template <class T, bool S = false> struct fl_welford_op {
    typedef fl_welford<T, S> type;
    __device__ __forceinline__ fl_welford<T, S> operator()(fl_welford<T, S> a, fl_welford<T, S> b) const {
        if (b.n == T(0)) return a;
        if (a.n == T(0)) return b;
        fl_welford<T, S> r;
        r.n = a.n + b.n;
        const T d = (b.mean - a.mean) + (b.shift - a.shift), f = b.n / r.n;
        r.mean = a.mean + d * f;
        r.m2 = a.m2 + b.m2 + d * d * a.n * f;
        r.nonfinite = a.nonfinite + b.nonfinite;
        r.shift = a.shift;
        if constexpr (S) r.sum = a.sum + b.sum;
        return r;
    }
    __device__ __forceinline__ fl_welford<T, S> operator()(fl_welford<T, S> a, T x) const {   // one element
        fl_welford<T, S> r;
        r.shift = a.n == T(0) ? x : a.shift;
        const T y = x - r.shift;
        r.n = a.n + T(1);
        const T d = y - a.mean;
        r.mean = a.mean + fl_div_count(d, r.n);
        r.m2 = a.m2 + d * (y - r.mean);
        r.nonfinite = a.nonfinite + (x - x);
        if constexpr (S) r.sum = a.sum + x;
        return r;
    }
    template <class A, class B> __device__ fl_welford<T, S> operator()(A, B) const = delete;
};
// np.var from the state. NumPy's divisor is the count less ddof, at least zero (0 / 0 is
// NaN, x / 0 inf). Its passes run in the result's dtype, whose largest finite value rounds
// below `limit` (inf where the state has the result's dtype; 65520 for float16 states kept
// in float): an infinite or NaN element makes its mean and so its deviations NaN; finite
// elements whose sum, or sum of squared deviations, reaches the limit make it inf. Welford's
// state need not overflow there (all elements 1e308: 0), or overflows into NaN.
// NumPy's second pass sums squared deviations from its rounded mean m (its float sum over
// n), not from the exact mean: that sum is M2 + n (mean - m)^2. Where the elements sit a
// few ulps apart (z-scores over an axis of 2), the second term is most of NumPy's variance,
// and (x - m) / std keeps NumPy's digits only with it (2e-3 off without, H200 sweep). m is
// NumPy's: below 8 elements its sum adds one after another, as the state's plain sum
// did (S); from 8 on, its pairwise sum about rounds the exact sum (n shift + n mean, in
// double), which a long plain sum would not. mean - m as (shift - m) + mean, in double.
template <class T, bool S> __device__ __forceinline__ T fl_welford_var(fl_welford<T, S> w, int ddof, double limit_) {
    const T d = w.n - T(ddof), limit = T(limit_);
    if (w.nonfinite != T(0)) return fl_nan<T>();
    const double n = double(w.n);
    T sum;
    if constexpr (S) sum = w.sum;
    else sum = T(n * double(w.shift) + n * double(w.mean));
    const double m = double(sum / w.n);
    const double e = w.n > T(0) ? (double(w.shift) - m) + double(w.mean) : 0.0;
    const T m2 = (fabs(w.n * (w.shift + w.mean)) < limit && w.m2 < limit) ? T(double(w.m2) + n * e * e) : fl_inf<T>();
    return m2 / (d > T(0) ? d : T(0));
}
// Shuffles and L2 loads move its fields one by one.
template <class T, bool S> __device__ __forceinline__ fl_welford<T, S> fl_shfl_xor(fl_welford<T, S> v, int mask, int width) {
    v.n = fl_shfl_xor(v.n, mask, width);
    v.mean = fl_shfl_xor(v.mean, mask, width);
    v.m2 = fl_shfl_xor(v.m2, mask, width);
    v.nonfinite = fl_shfl_xor(v.nonfinite, mask, width);
    v.shift = fl_shfl_xor(v.shift, mask, width);
    if constexpr (S) v.sum = fl_shfl_xor(v.sum, mask, width);
    return v;
}
template <class T, bool S> __device__ __forceinline__ fl_welford<T, S> fl_ldcg(const fl_welford<T, S>* p) {
    fl_welford<T, S> v;
    v.n = fl_ldcg(&p->n);
    v.mean = fl_ldcg(&p->mean);
    v.m2 = fl_ldcg(&p->m2);
    v.nonfinite = fl_ldcg(&p->nonfinite);
    v.shift = fl_ldcg(&p->shift);
    if constexpr (S) v.sum = fl_ldcg(&p->sum);
    return v;
}
"""),
    Snippet(('fl_arg_combine', 'fl_warp_allreduce_arg', 'fl_block_allreduce_arg'), r"""
// argmax / argmin state: a value and its index (-1: nothing seen yet). NumPy's rules:
// the first extreme wins ties, and the first NaN wins over everything.
template <bool Max, class T> __device__ __forceinline__ void fl_arg_combine(T& v, long long& i, T ov, long long oi) {
    bool take;
    if (oi < 0) take = false;
    else if (i < 0) take = true;
    else if (fl_isnan(v)) take = fl_isnan(ov) && oi < i;
    else if (fl_isnan(ov)) take = true;
    else take = (Max ? ov > v : ov < v) || (ov == v && oi < i);
    if (take) { v = ov; i = oi; }
}
template <bool Max, class T> __device__ __forceinline__ void fl_warp_allreduce_arg(T& v, long long& i, int width) {
    for (int mask = width / 2; mask > 0; mask /= 2) {
        const T ov = fl_shfl_xor(v, mask, width);
        const long long oi = fl_shfl_xor(i, mask, width);
        fl_arg_combine<Max>(v, i, ov, oi);
    }
}
template <bool Max, class T> __device__ __forceinline__ void fl_block_allreduce_arg(T& v, long long& i, T* sv, long long* si) {
    fl_warp_allreduce_arg<Max>(v, i, 32);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) { sv[threadIdx.x >> 5] = v; si[threadIdx.x >> 5] = i; }
    __syncthreads();
    v = sv[0];
    i = si[0];
    for (int w = 1; w < int(blockDim.x + 31) >> 5; ++w) fl_arg_combine<Max>(v, i, sv[w], si[w]);
}
"""),
    Snippet(('fl_group_allreduce_arg',), r"""
template <bool Max, class T> __device__ __forceinline__ void fl_group_allreduce_arg(T& v, long long& i, T* sv,
                                                                                  long long* si, int group, int groups) {
    const int stripe = threadIdx.x / group;
    __syncthreads();
    sv[threadIdx.x] = v;
    si[threadIdx.x] = i;
    __syncthreads();
    int h = 1;
    while (h < groups) h *= 2;
    for (h /= 2; h > 0; h /= 2) {
        if (stripe < h && stripe + h < groups) {
            T a = sv[threadIdx.x];
            long long ai = si[threadIdx.x];
            fl_arg_combine<Max>(a, ai, sv[threadIdx.x + h * group], si[threadIdx.x + h * group]);
            sv[threadIdx.x] = a;
            si[threadIdx.x] = ai;
        }
        __syncthreads();
    }
    v = sv[threadIdx.x % group];
    i = si[threadIdx.x % group];
}
"""),
)


def _index() -> dict[str, int]:
    where: dict[str, int] = {}
    for k, s in enumerate(SNIPPETS):
        for name in s.names:
            where[name] = k
    return where


_WHERE = _index()


def defined_names() -> frozenset[str]:
    return frozenset(_WHERE)


def prelude_for(body: str) -> str:
    """The snippets `body` needs, with their dependencies, in dependency order."""
    needed: set[int] = set()
    stack = [n for n in _NAME.findall(body) if n in _WHERE]
    while stack:
        k = _WHERE[stack.pop()]
        if k in needed:
            continue
        needed.add(k)
        stack.extend(n for n in SNIPPETS[k].uses if n in _WHERE)
    return "\n".join(SNIPPETS[k].code.strip() + "\n" for k in sorted(needed))
