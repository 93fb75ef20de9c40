// k0_sum_mul: reduction of f32[4096,256] over axes (0,) (256 outputs x 4096 elements, layout RK)
// %1 = sum %0 axes=(0,) : f32[256]
// %2 = const 0.000244140625 : f32[]
// %3 = multiply %1, %2 : f32[256]  -> m
// column: 128 kept elements per block, 8 rows of threads, 32 blocks along the reduced axis, partials finished by the last block

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

typedef unsigned int index_t;

// One element of k0_sum_mul, the values it reduces: the fused ops in program order.
__device__ __forceinline__ void k0_sum_mul_element(const float x, float& v0_out) {
    v0_out = x;
}

extern "C" __global__ void __launch_bounds__(256) k0_sum_mul(const float* __restrict__ in_x, float* __restrict__ out_m, unsigned char* __restrict__ scratch) {
    float* partial1 = reinterpret_cast<float*>(scratch + 0);
    unsigned int* arrivals = reinterpret_cast<unsigned int*>(scratch + 32768);
    const index_t part = blockIdx.x % 32;
    const index_t tile = blockIdx.x / 32 % 2;
    const index_t k1 = blockIdx.x / 32 / 2;
    const index_t k2 = tile * 128 + threadIdx.x * 4;
    const bool active = k2 < 256;
    float acc1[4];
    for (int e = 0; e < 4; ++e) { acc1[e] = 0.0f; }
    if (active) {
        index_t r_0 = part * 128 + threadIdx.y;
        fl_vec<float, 4> x_u[4];
        if (r_0 + 3 * (8) < min(index_t(4096), (part + 1) * 128)) {
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                const index_t r = r_0 + u * (8);
                x_u[u] = fl_load_vec<4>(in_x + r * 256 + k2);
            }
        }
        for (; r_0 + 3 * (8) < min(index_t(4096), (part + 1) * 128); r_0 += 4 * (8)) {
            fl_vec<float, 4> x_c[4];
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                x_c[u] = x_u[u];
            }
            if (r_0 + 7 * (8) < min(index_t(4096), (part + 1) * 128)) {
                #pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const index_t r = r_0 + (4 + u) * (8);
                    x_u[u] = fl_load_vec<4>(in_x + r * 256 + k2);
                }
            }
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                const index_t r = r_0 + u * (8);
                const fl_vec<float, 4> x = x_c[u];
                #pragma unroll
                for (int e = 0; e < 4; ++e) {
                    float v0;
                    k0_sum_mul_element(x.v[e], v0);
                    acc1[e] = fl_add_op<float>()(acc1[e], v0);
                }
            }
        }
        for (; r_0 < min(index_t(4096), (part + 1) * 128); r_0 += 8) {
            const index_t r = r_0;
            const fl_vec<float, 4> x = fl_load_vec<4>(in_x + r * 256 + k2);
            #pragma unroll
            for (int e = 0; e < 4; ++e) {
                float v0;
                k0_sum_mul_element(x.v[e], v0);
                acc1[e] = fl_add_op<float>()(acc1[e], v0);
            }
        }
    }
    __shared__ __align__(16) unsigned char fold[16384];
    float* fold_acc1 = reinterpret_cast<float*>(fold);
    __syncthreads();  // the buffer's previous user is done
    for (int e = 0; e < 4; ++e) {
        fold_acc1[threadIdx.y * 128 + threadIdx.x * 4 + e] = acc1[e];
    }
    __syncthreads();
    if (threadIdx.y == 0) {
        for (int e = 0; e < 4; ++e) {
            acc1[e] = fold_acc1[threadIdx.x * 4 + e];
            for (int y = 1; y < 8; ++y) acc1[e] = fl_add_op<float>()(acc1[e], fold_acc1[y * 128 + threadIdx.x * 4 + e]);
        }
    }
    if (threadIdx.y == 0 && active) {
        for (int e = 0; e < 4; ++e) {
            partial1[part * 256 + k1 * 256 + k2 + e] = acc1[e];
        }
        __threadfence();  // partials visible before the arrival is counted
    }
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) last = atomicAdd(&arrivals[blockIdx.x / 32], 1u) == 31;
    __syncthreads();
    if (last) {
        // The last block to arrive combines the 32 partials of its columns:
        // each row of threads a fixed subset, then the rows in order.
        __threadfence();
        for (int e = 0; e < 4; ++e) {
            acc1[e] = 0.0f;
            for (index_t q = threadIdx.y; active && q < 32; q += 8) {
                acc1[e] = fl_add_op<float>()(acc1[e], fl_ldcg(partial1 + q * 256 + k1 * 256 + k2 + e));
            }
        }
        float* fold_acc1_1 = reinterpret_cast<float*>(fold);
        __syncthreads();  // the buffer's previous user is done
        for (int e = 0; e < 4; ++e) {
            fold_acc1_1[threadIdx.y * 128 + threadIdx.x * 4 + e] = acc1[e];
        }
        __syncthreads();
        if (threadIdx.y == 0) {
            for (int e = 0; e < 4; ++e) {
                acc1[e] = fold_acc1_1[threadIdx.x * 4 + e];
                for (int y = 1; y < 8; ++y) acc1[e] = fl_add_op<float>()(acc1[e], fold_acc1_1[y * 128 + threadIdx.x * 4 + e]);
            }
        }
        if (threadIdx.y == 0 && active) {
            for (int e = 0; e < 4; ++e) {
                const index_t o = k1 * 256 + k2 + e;
                const float v1 = acc1[e];
                const float v3 = v1 * 0.000244140625f;  // line 1: m = x.mean(axis=0)
                out_m[o] = v3;
            }
        }
        if (threadIdx.x == 0 && threadIdx.y == 0) arrivals[blockIdx.x / 32] = 0;  // ready for the next launch
    }
}
