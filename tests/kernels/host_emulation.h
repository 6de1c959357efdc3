// Compiles kernels/*.cu as ordinary C++ for the CPU, so their arithmetic,
// casts, index math and tails can be checked against NumPy on a machine
// without a GPU (tests/python/test_kernels_on_host.py). Each call of a kernel
// function runs one CUDA thread; dlb_emu_set picks which. Grid-stride loops
// make a single thread (the default) cover the whole range.
//
// Limits: there is one thread at a time, so __syncthreads is a no-op and a
// warp shuffle reads 0 (as if the other lanes held nothing); reductions are
// therefore checked with one-thread blocks. Real scheduling, shared memory
// between threads and the PTX half conversions are only exercised on a GPU.
#pragma once
#define DLB_HOST_EMULATION 1

#include <math.h>  // powf and pow, which NVRTC declares itself

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static

struct dlb_emu_dim {
    unsigned x, y, z;
};
static dlb_emu_dim threadIdx = {0, 0, 0};
static dlb_emu_dim blockIdx = {0, 0, 0};
static dlb_emu_dim blockDim = {1, 1, 1};
static dlb_emu_dim gridDim = {1, 1, 1};

extern "C" void dlb_emu_set(unsigned thread, unsigned block, unsigned block_dim, unsigned grid_dim) {
    threadIdx.x = thread;
    blockIdx.x = block;
    blockDim.x = block_dim;
    gridDim.x = grid_dim;
}

inline float __uint_as_float(unsigned u) {
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}

inline unsigned __float_as_uint(float f) {
    unsigned u;
    __builtin_memcpy(&u, &f, 4);
    return u;
}

inline double __longlong_as_double(long long u) {
    double d;
    __builtin_memcpy(&d, &u, 8);
    return d;
}

inline long long __double_as_longlong(double d) {
    long long u;
    __builtin_memcpy(&u, &d, 8);
    return u;
}

inline void __syncthreads() {}

template <typename T>
inline T __shfl_down_sync(unsigned, T, int) {
    return T(0);
}
