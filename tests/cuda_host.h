// A CUDA emulator on the CPU, just enough to run fuselab's generated kernels in tests
// on a machine without a GPU. Blocks run one after another (so a function-level `static`
// is the block's shared memory). The threads of a block are fibers (ucontext) on one OS
// thread: each runs until it reaches a barrier — __syncthreads, or the two phases of a
// warp shuffle — and a scheduler releases a barrier once every thread it waits for has
// arrived. Threads that have returned count as arrived at __syncthreads (as on sm_70+);
// a warp shuffle that a lane of the warp never reaches, or a barrier that can never
// complete, is reported as a deadlock instead of hanging. Deterministic, and cheap enough
// to run thousands of generated programs. It checks logic (indexing, ordering,
// reductions, the last-block finish), not the GPU's memory model or speed.
#pragma once
#include <math.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static

struct fl_dim3 { unsigned x = 1, y = 1, z = 1; };
inline fl_dim3 threadIdx, blockIdx;
inline fl_dim3 blockDim, gridDim;

struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };

namespace fl_host {
enum class Wait { none, block, warp, done };

struct Fiber {
    ucontext_t ctx;
    fl_dim3 idx;
    Wait wait = Wait::none;
    char* stack = nullptr;
};

struct Warp { alignas(16) unsigned char slot[32][8]; };

constexpr std::size_t STACK = 256 * 1024;

struct Block {
    std::vector<Fiber> fibers;
    std::vector<Warp> warps;
    ucontext_t scheduler;
    unsigned current = 0;
    const std::function<void()>* kernel = nullptr;
};
inline Block* block = nullptr;
inline std::vector<char*> stacks;          // reused across launches
inline std::vector<uint4> dynamic_smem;    // 16-byte aligned
inline unsigned long long block_serial = 0;   // which block runs now (FL_POISON_SHARED)
inline const void* misaligned = nullptr;   // the first load a GPU would fault on
inline std::size_t misaligned_bytes = 0;

// The order the scheduler runs blocks, and a block's threads between barriers (FL_EMU_ORDER
// at each launch): "forward" (0, 1, 2...) unless it says "reverse". A GPU runs them in no
// order, so a kernel's results must not depend on it: a read of shared memory another
// thread writes in the same phase (a missing __syncthreads) or a last block that assumes
// which block comes last gives other results in reverse. This is how the tests find races.
inline bool reverse_order() {
    const char* v = std::getenv("FL_EMU_ORDER");
    return v != nullptr && std::strcmp(v, "reverse") == 0;
}

inline unsigned linear(const fl_dim3& t) { return t.x + blockDim.x * (t.y + blockDim.y * t.z); }
inline unsigned linear_thread() { return linear(threadIdx); }

inline void yield(Wait why) {
    Fiber& f = block->fibers[block->current];
    f.wait = why;
    swapcontext(&f.ctx, &block->scheduler);
}

inline void trampoline() {
    (*block->kernel)();
    block->fibers[block->current].wait = Wait::done;
    setcontext(&block->scheduler);
}

// Releases whatever barrier can complete; false when none can (a deadlock).
inline bool release(unsigned n, char* err, int errlen) {
    bool any = false;
    for (unsigned w = 0; w * 32 < n; ++w) {   // warp barriers: every lane of the warp waits
        unsigned lo = w * 32, hi = lo + 32 < n ? lo + 32 : n, waiting = 0, done = 0;
        for (unsigned t = lo; t < hi; ++t) {
            waiting += block->fibers[t].wait == Wait::warp;
            done += block->fibers[t].wait == Wait::done;
        }
        if (waiting && waiting + done == hi - lo && done) {
            std::snprintf(err, errlen, "deadlock: %u lanes of warp %u wait at a shuffle that %u lanes "
                          "(which returned) never reach", waiting, w, done);
            return false;
        }
        if (waiting && waiting == hi - lo) {
            for (unsigned t = lo; t < hi; ++t) block->fibers[t].wait = Wait::none;
            any = true;
        }
    }
    if (any) return true;
    unsigned at_block = 0, done = 0;
    for (auto& f : block->fibers) {
        at_block += f.wait == Wait::block;
        done += f.wait == Wait::done;
    }
    if (at_block && at_block + done == n) {   // __syncthreads: the returned threads count as arrived
        for (auto& f : block->fibers)
            if (f.wait == Wait::block) f.wait = Wait::none;
        return true;
    }
    std::snprintf(err, errlen, "deadlock: of %u threads, %u wait at __syncthreads while others wait "
                  "at a warp shuffle", n, at_block);
    return false;
}

// Runs `kernel` over the grid; returns 0, or 1 with a message in `err`.
template <class F> int launch(fl_dim3 grid, fl_dim3 blk, std::size_t smem, F kernel, char* err, int errlen) {
    gridDim = grid;
    blockDim = blk;
    dynamic_smem.assign(smem / 16 + 1, uint4{});
    const unsigned n = blk.x * blk.y * blk.z;
    while (stacks.size() < n) {
        void* p = mmap(nullptr, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) { std::snprintf(err, errlen, "out of memory for fiber stacks"); return 1; }
        stacks.push_back(static_cast<char*>(p));
    }
    const std::function<void()> body = kernel;
    Block b;
    b.kernel = &body;
    b.fibers.resize(n);
    b.warps.resize((n + 31) / 32);
    Block* outer = block;
    block = &b;
    int status = 0;
    const bool reverse = reverse_order();
    const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
    for (unsigned long long k = 0; k < blocks && !status; ++k) {
        const unsigned long long q = reverse ? blocks - 1 - k : k;
        blockIdx = {unsigned(q % grid.x), unsigned(q / grid.x % grid.y), unsigned(q / grid.x / grid.y)};
        ++block_serial;   // each block's shared memory starts as garbage (0xff bytes), as on a GPU
        std::memset(static_cast<void*>(dynamic_smem.data()), 0xff, dynamic_smem.size() * sizeof(uint4));
        for (unsigned t = 0; t < n; ++t) {
            Fiber& f = b.fibers[t];
            f.idx = {t % blk.x, t / blk.x % blk.y, t / (blk.x * blk.y)};
            f.wait = Wait::none;
            getcontext(&f.ctx);
            f.ctx.uc_stack.ss_sp = stacks[t];
            f.ctx.uc_stack.ss_size = STACK;
            f.ctx.uc_link = nullptr;
            makecontext(&f.ctx, trampoline, 0);
        }
        for (;;) {
            bool ran = false;
            for (unsigned i = 0; i < n; ++i) {
                const unsigned t = reverse ? n - 1 - i : i;
                if (b.fibers[t].wait != Wait::none) continue;
                b.current = t;
                threadIdx = b.fibers[t].idx;
                swapcontext(&b.scheduler, &b.fibers[t].ctx);
                ran = true;
            }
            bool all_done = true;
            for (auto& f : b.fibers) all_done &= f.wait == Wait::done;
            if (all_done) break;
            if (!ran && !release(n, err, errlen)) { status = 1; break; }
            if (ran) continue;
        }
    }
    block = outer;
    if (!status && misaligned) {
        std::snprintf(err, errlen, "misaligned address: a %zu-byte load at %p", misaligned_bytes, misaligned);
        misaligned = nullptr;
        status = 1;
    }
    return status;
}
}  // namespace fl_host

// after each static __shared__ declaration (cuda_host.py): its bytes 0xff once per block
#define FL_POISON_SHARED(name) do { static unsigned long long fl_poisoned_ = ~0ull; \
    if (fl_poisoned_ != fl_host::block_serial) { \
        fl_poisoned_ = fl_host::block_serial; std::memset((void*)&(name), 0xff, sizeof(name)); } } while (0)

inline void __syncthreads() { fl_host::yield(fl_host::Wait::block); }
inline void __threadfence() {}
inline unsigned atomicAdd(unsigned* p, unsigned v) { unsigned old = *p; *p = old + v; return old; }

template <class T> T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
    const unsigned t = fl_host::linear_thread();
    fl_host::Warp& w = fl_host::block->warps[t / 32];
    const int lane = int(t % 32);
    std::memcpy(w.slot[lane], &v, sizeof(T));
    fl_host::yield(fl_host::Wait::warp);   // every lane has written its value
    const int src = lane ^ mask;
    T out = v;
    if (src / width == lane / width) std::memcpy(&out, w.slot[src], sizeof(T));
    fl_host::yield(fl_host::Wait::warp);   // every lane has read before the next shuffle writes
    return out;
}

// every lane of the warp waits here (a lane that returned instead is reported as a deadlock)
inline void __syncwarp(unsigned = 0xffffffffu) { fl_host::yield(fl_host::Wait::warp); }

// A GPU faults on a load not aligned to its size (a 16-byte vector at an 8-byte address):
// the first one a launch makes is reported as its error.
template <class T> T __ldg(const T* p) {
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) && !fl_host::misaligned)
        fl_host::misaligned = reinterpret_cast<const void*>(p), fl_host::misaligned_bytes = sizeof(T);
    return *p;
}
template <class T> T __ldcg(const T* p) { return *p; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
template <class T> T min(T a, T b) { return b < a ? b : a; }
template <class T> T max(T a, T b) { return a < b ? b : a; }
