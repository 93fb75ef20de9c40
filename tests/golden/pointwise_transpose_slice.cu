// k0_mul_add: pointwise over f64[40,15] (600 elements)
// %1 = transpose %0 perm=(1,0) : f32[40,30]
// %2 = slice %1 start=(39,1) step=(-1,2) : f32[40,15]
// %3 = const 2.0 : f32[]
// %4 = multiply %2, %3 : f32[40,15]
// %5 = arange start=0 step=1 stop=15 : i64[15]
// %6 = add %4, %5 : f64[40,15]  -> y
// strided path: every load computes its own offset

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

// x behind an opaque move: NVVM computes it whole as written and cannot rewrite the
// arithmetic around it (see fl_widen and fl_index). The host emulator has no such pass.
template <class T> __device__ __forceinline__ T fl_opaque(T x) {
#ifdef __CUDA_ARCH__
    if constexpr (sizeof(T) == 8) asm("mov.b64 %0, %0;" : "+l"(x));
    else asm("mov.b32 %0, %0;" : "+r"(x));
#endif
    return x;
}

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

// An index with a negative term (a reversed axis), behind an opaque move. NVVM's split of
// constant offsets out of addresses rewrote x[568 - i % 4 * 142 + i / 4] (unsigned, never
// below zero) as x[(i / 4 - i % 4 * 142) + 568] with the 32-bit middle term zero-extended:
// 8 GB past the array when it is negative (an illegal address on the H200, found by the
// GPU fuzzer; PTX read). Behind the move the index is computed whole, then widened.
template <class I> __device__ __forceinline__ I fl_index(I i) { return fl_opaque(i); }

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

typedef unsigned int index_t;

// One element of k0_mul_add: the fused ops in program order.
__device__ __forceinline__ void k0_mul_add_element(const float x, const long long v5, double& y) {
    const float v4 = x * 2.0f;  // line 1: y = x.T[::-1, 1::2] * 2 + np.arange(15)
    const double v6 = fl_cast<double>(v4) + fl_cast<double>(v5);  // line 1: y = x.T[::-1, 1::2] * 2 + np.arange(15)
    y = v6;
}

extern "C" __global__ void __launch_bounds__(256) k0_mul_add(const float* __restrict__ in_x, double* __restrict__ out_y) {
    const index_t n = 600u;
    const index_t stride = index_t(gridDim.x) * blockDim.x;
    for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        k0_mul_add_element(in_x[fl_index(i % 15 * 80 - i / 15 + 79)], static_cast<long long>(0ULL + static_cast<unsigned long long>(i % 15) * 1ULL), out_y[i]);
    }
}
