// A CUDA emulator on the CPU, just enough to run fuselab's generated kernels in tests
// on a machine without a GPU. Each block runs alone (so a function-level `static` is the
// block's shared memory); each thread of the block is an OS thread; __syncthreads is a
// barrier of the block, and warp shuffles exchange values through a per-warp buffer
// between two barriers of the warp. A lane that misses a shuffle deadlocks the warp,
// which is what an unbalanced shuffle would do on a GPU too. It checks logic (indexing,
// ordering, reductions, the last-block finish), not the GPU's memory model or speed.
#pragma once
#include <math.h>
#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static

struct fl_dim3 { unsigned x = 1, y = 1, z = 1; };
inline thread_local fl_dim3 threadIdx, blockIdx;
inline fl_dim3 blockDim, gridDim;

struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };

namespace fl_host {
struct Warp {
    explicit Warp(std::ptrdiff_t lanes) : bar(lanes) {}
    std::barrier<> bar;
    alignas(16) unsigned char slot[32][8];
};
inline std::barrier<>* block_barrier = nullptr;
inline thread_local Warp* warp = nullptr;
inline std::vector<uint4> dynamic_smem;   // 16-byte aligned

inline unsigned linear_thread() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

template <class F> void launch(fl_dim3 grid, fl_dim3 block, std::size_t smem, F kernel) {
    gridDim = grid;
    blockDim = block;
    dynamic_smem.assign(smem / 16 + 1, uint4{});
    const unsigned n = block.x * block.y * block.z;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                std::barrier<> bar(n);
                block_barrier = &bar;
                std::vector<std::unique_ptr<Warp>> warps;
                for (unsigned w = 0; w < (n + 31) / 32; ++w)
                    warps.push_back(std::make_unique<Warp>(std::min(32u, n - 32 * w)));
                std::vector<std::thread> threads;
                for (unsigned t = 0; t < n; ++t) {
                    threads.emplace_back([&, t] {
                        blockIdx = {bx, by, bz};
                        threadIdx = {t % block.x, t / block.x % block.y, t / (block.x * block.y)};
                        warp = warps[t / 32].get();
                        kernel();
                    });
                }
                for (auto& th : threads) th.join();
            }
}
}  // namespace fl_host

inline void __syncthreads() { fl_host::block_barrier->arrive_and_wait(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned atomicAdd(unsigned* p, unsigned v) {
    return std::atomic_ref<unsigned>(*p).fetch_add(v);
}

template <class T> T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
    fl_host::Warp& w = *fl_host::warp;
    const int lane = int(fl_host::linear_thread() % 32);
    std::memcpy(w.slot[lane], &v, sizeof(T));
    w.bar.arrive_and_wait();
    const int src = lane ^ mask;
    T out = v;
    if (src / width == lane / width) std::memcpy(&out, w.slot[src], sizeof(T));
    w.bar.arrive_and_wait();
    return out;
}

template <class T> T __ldg(const T* p) { return *p; }
template <class T> T __ldcg(const T* p) { return *p; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
template <class T> T min(T a, T b) { return b < a ? b : a; }
template <class T> T max(T a, T b) { return a < b ? b : a; }
