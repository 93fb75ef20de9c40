// k0_sum_mul_sub_add_etc: row kernel over f32[64,16384] (64 rows x 16384 columns)
// %3 = const 6.103515625e-05 : f32[]
// %4 = sum %0 axes=(1,) keepdims : f32[64,1]
// %5 = multiply %4, %3 : f32[64,1]
// %6 = subtract %0, %5 : f32[64,16384]
// %7 = multiply %6, %6 : f32[64,16384]
// %8 = sum %7 axes=(1,) keepdims : f32[64,1]
// %9 = multiply %8, %3 : f32[64,1]
// %10 = const 9.999999747378752e-06 : f32[]
// %11 = add %9, %10 : f32[64,1]
// %12 = sqrt %11 : f32[64,1]
// %13 = true_divide %6, %12 : f32[64,16384]
// %14 = multiply %13, %1 : f32[64,16384]
// %15 = add %14, %2 : f32[64,16384]  -> y
// block tier: a block of 512 threads per row, 32 elements per thread in registers
// 2 reduction pass(es) + an output pass
// packs of 4 columns

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

extern "C" __global__ void __launch_bounds__(512, 2) k0_sum_mul_sub_add_etc(const float* __restrict__ in_x, const float* __restrict__ in_gamma, const float* __restrict__ in_beta, float* __restrict__ out_y) {
    const int lane = threadIdx.x;
    for (index_t row = blockIdx.x; row < 64; row += gridDim.x) {
        fl_vec<float, 4> x_row[8];
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            const index_t col0 = (index_t(k) * 512 + lane) * 4;
            if (col0 < 16384) x_row[k] = fl_load_vec<4>(in_x + row * 16384 + col0);
        }
        float acc4 = 0.0f;
        // Pass 1: %4 sum
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            const index_t col0 = (index_t(k) * 512 + lane) * 4;
            if (col0 < 16384) {
                const fl_vec<float, 4> x_pk = x_row[k];
                #pragma unroll
                for (int p = 0; p < 4; ++p) {
                    acc4 = fl_add_op<float>()(acc4, x_pk.v[p]);
                }
            }
        }
        __shared__ float smem_acc4[32];
        acc4 = fl_block_allreduce(acc4, fl_add_op<float>(), smem_acc4);
        const float v4 = acc4;  // %4 sum of the row
        const float v5 = v4 * 6.103515625e-05f;  // line 1: mu = x.mean(-1, keepdims=True)
        float acc8 = 0.0f;
        // Pass 2: %8 sum
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            const index_t col0 = (index_t(k) * 512 + lane) * 4;
            if (col0 < 16384) {
                const fl_vec<float, 4> x_pk_1 = x_row[k];
                #pragma unroll
                for (int p = 0; p < 4; ++p) {
                    const float v6 = x_pk_1.v[p] - v5;  // line 2: xc = x - mu
                    const float v7 = v6 * v6;  // line 3: var = (xc * xc).mean(-1, keepdims=True)
                    acc8 = fl_add_op<float>()(acc8, v7);
                }
            }
        }
        __shared__ float smem_acc8[32];
        acc8 = fl_block_allreduce(acc8, fl_add_op<float>(), smem_acc8);
        const float v8 = acc8;  // %8 sum of the row
        const float v9 = v8 * 6.103515625e-05f;  // line 3: var = (xc * xc).mean(-1, keepdims=True)
        const float v11 = v9 + 9.999999747378752e-06f;  // line 4: r = np.sqrt(var + eps)
        const float v12 = sqrt(v11);  // line 4: r = np.sqrt(var + eps)
        // Output pass: the full-shape results.
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            const index_t col0 = (index_t(k) * 512 + lane) * 4;
            if (col0 < 16384) {
                const fl_vec<float, 4> x_pk_2 = x_row[k];
                const fl_vec<float, 4> gamma_pk_2 = fl_load_vec<4>(in_gamma + col0);
                const fl_vec<float, 4> beta_pk_2 = fl_load_vec<4>(in_beta + col0);
                fl_vec<float, 4> y_pk;
                #pragma unroll
                for (int p = 0; p < 4; ++p) {
                    const float v6_1 = x_pk_2.v[p] - v5;  // line 2: xc = x - mu
                    const float v13 = v6_1 / v12;  // line 5: y = xc / r * gamma + beta
                    const float v14 = v13 * gamma_pk_2.v[p];  // line 5: y = xc / r * gamma + beta
                    const float v15 = v14 + beta_pk_2.v[p];  // line 5: y = xc / r * gamma + beta
                    y_pk.v[p] = v15;
                }
                fl_store_vec<4>(out_y + row * 16384 + col0, y_pk);
            }
        }
    }
}
