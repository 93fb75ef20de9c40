// k0_argmax_max: reduction of i32[300,77] over axes (1,) (300 outputs x 77 elements, layout KR)
// %1 = argmax %0 axes=(1,) : i64[300]  -> a
// %2 = max %0 axes=(1,) : i32[300]  -> m
// inner: 4 lanes per output (4-element vectors aligned to memory: a run starts up to 3 elements into its first vector)

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

typedef unsigned int index_t;

// One element of k0_argmax_max, the values it reduces: the fused ops in program order.
__device__ __forceinline__ void k0_argmax_max_element(const int x, int& v0_out) {
    v0_out = x;
}

extern "C" __global__ void __launch_bounds__(256) k0_argmax_max(const int* __restrict__ in_x, long long* __restrict__ out_a, int* __restrict__ out_m) {
    const int lane = threadIdx.x % 4;
    const index_t warp = (index_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    const index_t warps = index_t(gridDim.x) * blockDim.x / 32;
    for (index_t first = warp * 8; first < 300; first += warps * 8) {
        const index_t o = first + threadIdx.x % 32 / 4;
        const bool active = o < 300;
        const int shift = int(o % 4) * 1 % 4;
        int acc1 = 0;
        long long acc1_index = -1;  // no element seen yet
        int acc2 = (-2147483647 - 1);
        if (active) {
            index_t rv_0 = lane;
            fl_vec<int, 4> x_u[4];
            if (rv_0 + 3 * (4) < 20) {
                #pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const index_t rv = rv_0 + u * (4);
                    const int c0 = int(rv) * 4 - shift;
                    x_u[u] = fl_load_vec_in<4>(in_x + o * 77, c0, 77);
                }
            }
            for (; rv_0 + 3 * (4) < 20; rv_0 += 4 * (4)) {
                fl_vec<int, 4> x_c[4];
                #pragma unroll
                for (int u = 0; u < 4; ++u) {
                    x_c[u] = x_u[u];
                }
                if (rv_0 + 7 * (4) < 20) {
                    #pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const index_t rv = rv_0 + (4 + u) * (4);
                        const int c0 = int(rv) * 4 - shift;
                        x_u[u] = fl_load_vec_in<4>(in_x + o * 77, c0, 77);
                    }
                }
                #pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const index_t rv = rv_0 + u * (4);
                    const int c0 = int(rv) * 4 - shift;
                    const fl_vec<int, 4> x = x_c[u];
                    if (c0 >= 0 && c0 + 4 <= 77) {
                        #pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            const index_t rc = index_t(c0 + e);
                            int v0;
                            k0_argmax_max_element(x.v[e], v0);
                            fl_arg_combine<true>(acc1, acc1_index, v0, static_cast<long long>(rc)); acc2 = fl_maximum_op<int>()(acc2, v0);
                        }
                    } else {
                        #pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            const int re = c0 + e;
                            const bool in_run = re >= 0 && re < 77;
                            const index_t rc = in_run ? index_t(re) : 0;
                            int v0;
                            k0_argmax_max_element(x.v[e], v0);
                            if (in_run) { fl_arg_combine<true>(acc1, acc1_index, v0, static_cast<long long>(rc)); acc2 = fl_maximum_op<int>()(acc2, v0); }
                        }
                    }
                }
            }
            for (; rv_0 < 20; rv_0 += 4) {
                const index_t rv = rv_0;
                const int c0 = int(rv) * 4 - shift;
                const fl_vec<int, 4> x = fl_load_vec_in<4>(in_x + o * 77, c0, 77);
                if (c0 >= 0 && c0 + 4 <= 77) {
                    #pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const index_t rc = index_t(c0 + e);
                        int v0;
                        k0_argmax_max_element(x.v[e], v0);
                        fl_arg_combine<true>(acc1, acc1_index, v0, static_cast<long long>(rc)); acc2 = fl_maximum_op<int>()(acc2, v0);
                    }
                } else {
                    #pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int re = c0 + e;
                        const bool in_run = re >= 0 && re < 77;
                        const index_t rc = in_run ? index_t(re) : 0;
                        int v0;
                        k0_argmax_max_element(x.v[e], v0);
                        if (in_run) { fl_arg_combine<true>(acc1, acc1_index, v0, static_cast<long long>(rc)); acc2 = fl_maximum_op<int>()(acc2, v0); }
                    }
                }
            }
        }
        fl_warp_allreduce_arg<true>(acc1, acc1_index, 4);
        acc2 = fl_warp_allreduce(acc2, fl_maximum_op<int>(), 4);
        if (active && lane == 0) {
            const long long v1 = acc1_index;
            const int v2 = acc2;
            out_a[o] = v1;
            out_m[o] = v2;
        }
    }
}
