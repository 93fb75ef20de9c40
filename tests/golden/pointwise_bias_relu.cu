// k0_add_max: pointwise over f32[64,1000] (64000 elements)
// %2 = add %0, %1 : f32[64,1000]
// %3 = const 0.0 : f32[]
// %4 = maximum %2, %3 : f32[64,1000]  -> y
// vector path: 4 elements per thread step, 16-byte accesses

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

typedef unsigned int index_t;

// One element of k0_add_max: the fused ops in program order.
__device__ __forceinline__ void k0_add_max_element(const float x, const float b, float& y) {
    const float v2 = x + b;  // line 1: t = x + b
    const float v4 = fl_maximum(v2, 0.0f);  // line 2: y = np.maximum(t, 0)
    y = v4;
}

extern "C" __global__ void __launch_bounds__(256) k0_add_max(const float* __restrict__ in_x, const float* __restrict__ in_b, float* __restrict__ out_y) {
    const index_t n = 64000u;
    const index_t stride = index_t(gridDim.x) * blockDim.x;
    const index_t groups = 16000;   // vectors taken whole
    for (index_t j = index_t(blockIdx.x) * blockDim.x + threadIdx.x; j < groups; j += stride) {
        const index_t i = j * 4;
        const fl_vec<float, 4> x = fl_load_vec<4>(in_x + i);
        const fl_vec<float, 4> b = fl_load_vec<4>(in_b + i % 1000);
        fl_vec<float, 4> y_vec;
        #pragma unroll
        for (int e = 0; e < 4; ++e) k0_add_max_element(x.v[e], b.v[e], y_vec.v[e]);
        fl_store_vec<4>(out_y + i, y_vec);
    }
}
