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
// block tier: a block per row, the row (65536 bytes) in shared memory
// 2 reduction pass(es) + an output pass
// packs of 4 columns

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

// Warp shuffles for every register type (bool and small integers travel as int).
template <class T> __device__ __forceinline__ T fl_shfl_xor(T v, int mask, int width) {
    if constexpr (sizeof(T) < 4) return T(__shfl_xor_sync(0xffffffffu, int(v), mask, width));
    else return __shfl_xor_sync(0xffffffffu, v, mask, width);
}
// Every lane of each `width`-lane group gets the group's reduction (butterfly).
template <class T, class Op> __device__ __forceinline__ T fl_warp_allreduce(T v, Op op, int width) {
    for (int mask = width / 2; mask > 0; mask /= 2) v = op(v, fl_shfl_xor(v, mask, width));
    return v;
}
// Every thread of the block gets the block's reduction, combined in warp order (so the
// result does not depend on timing). `scratch` holds one value per warp.
template <class T, class Op> __device__ __forceinline__ T fl_block_allreduce(T v, Op op, T* scratch) {
    v = fl_warp_allreduce(v, op, 32);
    __syncthreads();  // scratch may still be read by a previous call
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    T r = scratch[0];
    for (int w = 1; w < int(blockDim.x + 31) >> 5; ++w) r = op(r, scratch[w]);
    return r;
}

typedef unsigned int index_t;

struct sum_op { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return T(a + b); } };

extern "C" __global__ void __launch_bounds__(512) k0_sum_mul_sub_add_etc(const float* __restrict__ in_x, const float* __restrict__ in_gamma, const float* __restrict__ in_beta, float* __restrict__ out_y) {
    extern __shared__ __align__(16) unsigned char row_cache[];
    float* x_row = reinterpret_cast<float*>(row_cache + 0);
    for (index_t row = blockIdx.x; row < 64; row += gridDim.x) {
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            const index_t col0 = (index_t(k) * 512 + threadIdx.x) * 4;
            if (col0 < 16384) *reinterpret_cast<fl_vec<float, 4>*>(x_row + col0) = fl_load_vec<4>(in_x + row * 16384 + col0);
        }
        __syncthreads();
        float acc4 = 0.0f;
        // Pass 1: %4 sum
        for (index_t col0 = threadIdx.x * 4; col0 < 16384; col0 += blockDim.x * 4) {
            const fl_vec<float, 4> x_pk = *reinterpret_cast<const fl_vec<float, 4>*>(x_row + col0);
            #pragma unroll
            for (int p = 0; p < 4; ++p) {
                acc4 = acc4 + x_pk.v[p];
            }
        }
        __shared__ float smem_acc4[32];
        acc4 = fl_block_allreduce(acc4, sum_op(), smem_acc4);
        const float v4 = acc4;  // %4 sum of the row
        float acc8 = 0.0f;
        // Pass 2: %8 sum
        for (index_t col0 = threadIdx.x * 4; col0 < 16384; col0 += blockDim.x * 4) {
            const fl_vec<float, 4> x_pk_1 = *reinterpret_cast<const fl_vec<float, 4>*>(x_row + col0);
            #pragma unroll
            for (int p = 0; p < 4; ++p) {
                const float v5 = v4 * 6.103515625e-05f;  // line 1: mu = x.mean(-1, keepdims=True)
                const float v6 = x_pk_1.v[p] - v5;  // line 2: xc = x - mu
                const float v7 = v6 * v6;  // line 3: var = (xc * xc).mean(-1, keepdims=True)
                acc8 = acc8 + v7;
            }
        }
        __shared__ float smem_acc8[32];
        acc8 = fl_block_allreduce(acc8, sum_op(), smem_acc8);
        const float v8 = acc8;  // %8 sum of the row
        // Output pass: the full-shape results.
        for (index_t col0 = threadIdx.x * 4; col0 < 16384; col0 += blockDim.x * 4) {
            const fl_vec<float, 4> x_pk_2 = *reinterpret_cast<const fl_vec<float, 4>*>(x_row + col0);
            const fl_vec<float, 4> gamma_pk_2 = fl_load_vec<4>(in_gamma + col0);
            const fl_vec<float, 4> beta_pk_2 = fl_load_vec<4>(in_beta + col0);
            fl_vec<float, 4> y_pk;
            #pragma unroll
            for (int p = 0; p < 4; ++p) {
                const float v5_1 = v4 * 6.103515625e-05f;  // line 1: mu = x.mean(-1, keepdims=True)
                const float v6_1 = x_pk_2.v[p] - v5_1;  // line 2: xc = x - mu
                const float v9 = v8 * 6.103515625e-05f;  // line 3: var = (xc * xc).mean(-1, keepdims=True)
                const float v11 = v9 + 9.999999747378752e-06f;  // line 4: r = np.sqrt(var + eps)
                const float v12 = sqrt(v11);  // line 4: r = np.sqrt(var + eps)
                const float v13 = v6_1 / v12;  // line 5: y = xc / r * gamma + beta
                const float v14 = v13 * gamma_pk_2.v[p];  // line 5: y = xc / r * gamma + beta
                const float v15 = v14 + beta_pk_2.v[p];  // line 5: y = xc / r * gamma + beta
                y_pk.v[p] = v15;
            }
            fl_store_vec<4>(out_y + row * 16384 + col0, y_pk);
        }
        __syncthreads();  // the next row overwrites the cache
    }
}
