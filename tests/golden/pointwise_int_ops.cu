// k0_floordiv_mod_left_shift: pointwise over i16[1000] (1000 elements)
// %2 = floor_divide %0, %1 : i16[1000]
// %3 = remainder %0, %1 : i16[1000]  -> r
// %4 = const 3 : i16[]
// %5 = left_shift %2, %4 : i16[1000]  -> s
// vector path: 8 elements per thread step, 16-byte accesses

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

// One element of k0_floordiv_mod_left_shift: the fused ops in program order.
__device__ __forceinline__ void k0_floordiv_mod_left_shift_element(const short x, const short y, short& r_1, short& s) {
    const short v2 = fl_floor_divide(x, y);  // line 1: q = x // y
    const short v3 = fl_remainder(x, y);  // line 2: r = x % y
    const short v5 = fl_left_shift(v2, static_cast<short>(3));  // line 3: s = q << 3
    r_1 = v3;
    s = v5;
}

extern "C" __global__ void __launch_bounds__(256) k0_floordiv_mod_left_shift(const short* __restrict__ in_x, const short* __restrict__ in_y, short* __restrict__ out_r, short* __restrict__ out_s) {
    const index_t n = 1000u;
    const index_t stride = index_t(gridDim.x) * blockDim.x;
    const index_t groups = 125;   // vectors taken whole
    for (index_t j = index_t(blockIdx.x) * blockDim.x + threadIdx.x; j < groups; j += stride) {
        const index_t i = j * 8;
        const fl_vec<short, 8> x = fl_load_vec<8>(in_x + i);
        const fl_vec<short, 8> y = fl_load_vec<8>(in_y + i);
        fl_vec<short, 8> r_vec;
        fl_vec<short, 8> s_vec;
        #pragma unroll
        for (int e = 0; e < 8; ++e) k0_floordiv_mod_left_shift_element(x.v[e], y.v[e], r_vec.v[e], s_vec.v[e]);
        fl_store_vec<8>(out_r + i, r_vec);
        fl_store_vec<8>(out_s + i, s_vec);
    }
}
