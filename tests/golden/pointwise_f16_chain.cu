// k0_exp_mul_add: pointwise over f16[4099] (4099 elements)
// %1 = exp %0 : f16[4099]
// %2 = const 2.0 : f16[]
// %3 = multiply %1, %2 : f16[4099]
// %4 = add %3, %0 : f16[4099]  -> y
// vector path: 8 elements per thread step, 16-byte accesses

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

// One element of k0_exp_mul_add: the fused ops in program order.
__device__ __forceinline__ void k0_exp_mul_add_element(const fl_half h_h, fl_half& y) {
    const float h = fl_from_half(h_h);
    const fl_half v1_h = fl_to_half(exp(h));  // line 1: y = np.exp(h) * 2 + h
    const fl_half v3_h = fl_hmul(v1_h, fl_half_bits(0x4000u));  // line 1: y = np.exp(h) * 2 + h
    const fl_half v4_h = fl_hadd(v3_h, h_h);  // line 1: y = np.exp(h) * 2 + h
    y = v4_h;
}

extern "C" __global__ void __launch_bounds__(256) k0_exp_mul_add(const fl_half* __restrict__ in_h, fl_half* __restrict__ out_y) {
    const index_t n = 4099u;
    const index_t stride = index_t(gridDim.x) * blockDim.x;
    const index_t groups = 512;   // vectors taken whole
    for (index_t j = index_t(blockIdx.x) * blockDim.x + threadIdx.x; j < groups; j += stride) {
        const index_t i = j * 8;
        const fl_vec<fl_half, 8> h_h = fl_load_vec<8>(in_h + i);
        fl_vec<fl_half, 8> y_vec;
        #pragma unroll
        for (int e = 0; e < 8; ++e) k0_exp_mul_add_element(h_h.v[e], y_vec.v[e]);
        fl_store_vec<8>(out_y + i, y_vec);
    }
    // The last 3 elements, one per thread.
    for (index_t i = groups * 8 + index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        k0_exp_mul_add_element(in_h[i], out_y[i]);
    }
}
