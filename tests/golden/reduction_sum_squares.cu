// k0_mul_sum: reduction of f32[1048576] over axes (0,) (1 outputs x 1048576 elements, layout R)
// %1 = multiply %0, %0 : f32[1048576]
// %2 = sum %1 axes=(0,) : f32[]  -> s
// inner: 256 blocks per output (4-element vectors), partials finished by the last block

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

// A load from L2 that bypasses L1: what other blocks of this launch wrote (partials).
template <class T> __device__ __forceinline__ T fl_ldcg(const T* p) {
    if constexpr (fl_is_bool<T>::value) return __ldcg(reinterpret_cast<const unsigned char*>(p)) != 0;
    else return __ldcg(p);
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

// One element of k0_mul_sum, the values it reduces: the fused ops in program order.
__device__ __forceinline__ void k0_mul_sum_element(const float x, float& v1_out) {
    const float v1 = x * x;  // line 1: s = (x * x).sum()
    v1_out = v1;
}

extern "C" __global__ void __launch_bounds__(256) k0_mul_sum(const float* __restrict__ in_x, float* __restrict__ out_s, unsigned char* __restrict__ scratch) {
    float* partial2 = reinterpret_cast<float*>(scratch + 0);
    unsigned int* arrivals = reinterpret_cast<unsigned int*>(scratch + 1024);
    const index_t o = blockIdx.x / 256;
    const index_t part = blockIdx.x % 256;
    float acc2 = 0.0f;
    {
        index_t rv_0 = part * 1024 + threadIdx.x;
        fl_vec<float, 4> x_u[4];
        if (rv_0 + 3 * (blockDim.x) < min(index_t(262144), (part + 1) * 1024)) {
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                const index_t rv = rv_0 + u * (blockDim.x);
                const index_t r = rv * 4;
                x_u[u] = fl_load_vec<4>(in_x + r);
            }
        }
        for (; rv_0 + 3 * (blockDim.x) < min(index_t(262144), (part + 1) * 1024); rv_0 += 4 * (blockDim.x)) {
            fl_vec<float, 4> x_c[4];
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                x_c[u] = x_u[u];
            }
            if (rv_0 + 7 * (blockDim.x) < min(index_t(262144), (part + 1) * 1024)) {
                #pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const index_t rv = rv_0 + (4 + u) * (blockDim.x);
                    const index_t r = rv * 4;
                    x_u[u] = fl_load_vec<4>(in_x + r);
                }
            }
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                const index_t rv = rv_0 + u * (blockDim.x);
                const index_t r = rv * 4;
                const fl_vec<float, 4> x = x_c[u];
                #pragma unroll
                for (int e = 0; e < 4; ++e) {
                    float v1_1;
                    k0_mul_sum_element(x.v[e], v1_1);
                    acc2 = fl_add_op<float>()(acc2, v1_1);
                }
            }
        }
        for (; rv_0 < min(index_t(262144), (part + 1) * 1024); rv_0 += blockDim.x) {
            const index_t rv = rv_0;
            const index_t r = rv * 4;
            const fl_vec<float, 4> x = fl_load_vec<4>(in_x + r);
            #pragma unroll
            for (int e = 0; e < 4; ++e) {
                float v1_1;
                k0_mul_sum_element(x.v[e], v1_1);
                acc2 = fl_add_op<float>()(acc2, v1_1);
            }
        }
    }
    __shared__ float smem_acc2[32];
    acc2 = fl_block_allreduce(acc2, fl_add_op<float>(), smem_acc2);
    __shared__ bool last;
    if (threadIdx.x == 0) {
        partial2[o * 256 + part] = acc2;
        __threadfence();  // partials visible before the arrival is counted
        last = atomicAdd(&arrivals[o], 1u) == 255;
    }
    __syncthreads();
    if (last) {
        // The last block combines the 256 partials in a fixed order.
        __threadfence();
        acc2 = 0.0f;
        #pragma unroll 4
        for (index_t q = threadIdx.x; q < 256; q += blockDim.x) {
            acc2 = fl_add_op<float>()(acc2, fl_ldcg(partial2 + o * 256 + q));
        }
        __shared__ float smem_fin_acc2[32];
        acc2 = fl_block_allreduce(acc2, fl_add_op<float>(), smem_fin_acc2);
        if (threadIdx.x == 0) {
            const float v2 = acc2;
            out_s[o] = v2;
            arrivals[o] = 0;  // ready for the next launch
        }
    }
}
