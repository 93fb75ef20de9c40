// k0_max_sub_exp_sum_etc: row kernel over f32[512,1000] (512 rows x 1000 columns)
// %1 = max %0 axes=(1,) keepdims : f32[512,1]
// %2 = subtract %0, %1 : f32[512,1000]
// %3 = exp %2 : f32[512,1000]
// %4 = sum %3 axes=(1,) keepdims : f32[512,1]
// %5 = true_divide %3, %4 : f32[512,1000]  -> y
// warp tier: 32 lanes per row, 32 elements per lane in registers
// 2 reduction pass(es) + an output pass
// packs of 4 columns

template <class T> __device__ __forceinline__ T fl_inf();
template <> __device__ __forceinline__ float fl_inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double fl_inf<double>() { return __longlong_as_double(0x7ff0000000000000LL); }
template <class T> __device__ __forceinline__ T fl_nan();
template <> __device__ __forceinline__ float fl_nan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double fl_nan<double>() { return __longlong_as_double(0x7ff8000000000000LL); }

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

typedef unsigned int index_t;

extern "C" __global__ void __launch_bounds__(128) k0_max_sub_exp_sum_etc(const float* __restrict__ in_x, float* __restrict__ out_y) {
    const int lane = threadIdx.x % 32;
    const index_t warp = (index_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    const index_t warps = index_t(gridDim.x) * blockDim.x / 32;
    for (index_t row = warp; row < 512; row += warps) {
        const bool active = true;
        fl_vec<float, 4> x_row[8];
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            const index_t col0 = (index_t(k) * 32 + lane) * 4;
            if (col0 < 1000) x_row[k] = fl_load_vec<4>(in_x + row * 1000 + col0);
        }
        fl_vec<float, 4> v3_kept[8];  // %3, kept for a later pass
        float acc1 = -fl_inf<float>();
        // Pass 1: %1 max
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            const index_t col0 = (index_t(k) * 32 + lane) * 4;
            if (col0 < 1000) {
                const fl_vec<float, 4> x_pk = x_row[k];
                #pragma unroll
                for (int p = 0; p < 4; ++p) {
                    acc1 = fl_maximum_op<float>()(acc1, x_pk.v[p]);
                }
            }
        }
        acc1 = fl_warp_allreduce(acc1, fl_maximum_op<float>(), 32);
        const float v1 = acc1;  // %1 max of the row
        float acc4 = 0.0f;
        // Pass 2: %4 sum
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            const index_t col0 = (index_t(k) * 32 + lane) * 4;
            if (col0 < 1000) {
                const fl_vec<float, 4> x_pk_1 = x_row[k];
                #pragma unroll
                for (int p = 0; p < 4; ++p) {
                    const float v2 = x_pk_1.v[p] - v1;  // line 2: e = np.exp(x - m)
                    const float v3 = exp(v2);  // line 2: e = np.exp(x - m)
                    acc4 = fl_add_op<float>()(acc4, v3);
                    v3_kept[k].v[p] = v3;
                }
            }
        }
        acc4 = fl_warp_allreduce(acc4, fl_add_op<float>(), 32);
        const float v4 = acc4;  // %4 sum of the row
        // Output pass: the full-shape results.
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            const index_t col0 = (index_t(k) * 32 + lane) * 4;
            if (active && col0 < 1000) {
                fl_vec<float, 4> y_pk;
                #pragma unroll
                for (int p = 0; p < 4; ++p) {
                    const float v5 = v3_kept[k].v[p] / v4;  // line 3: y = e / e.sum(-1, keepdims=True)
                    y_pk.v[p] = v5;
                }
                fl_store_vec<4>(out_y + row * 1000 + col0, y_pk);
            }
        }
    }
}
