// rand: uniform values in [0, 1). Counter-based (splitmix64 of seed and
// element index), so every element is independent of the launch shape and a
// seed reproduces the same tensor. Each dtype takes exactly as many random
// bits as its mantissa holds, so no value rounds up to 1.
#include "common.cuh"

__device__ __forceinline__ u64 splitmix64(u64 z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u64 bits_at(u64 seed, u64 counter) {
    return splitmix64(seed ^ splitmix64(counter));
}

template <typename T> __device__ __forceinline__ T uniform(u64 r);
template <> __device__ __forceinline__ double uniform<double>(u64 r) { return (double)(r >> 11) * 0x1.0p-53; }
template <> __device__ __forceinline__ float uniform<float>(u64 r) { return (float)(r >> 40) * 0x1.0p-24f; }
template <> __device__ __forceinline__ f16 uniform<f16>(u64 r) {
    return Tr<f16>::store((float)(r >> 53) * 0x1.0p-11f);
}
template <> __device__ __forceinline__ bf16 uniform<bf16>(u64 r) {
    return Tr<bf16>::store((float)(r >> 56) * 0x1.0p-8f);
}

#define DLB_RAND(tag, T)                                                                   \
    extern "C" __global__ void dlb_rand_##tag(T* out, i64 n, u64 seed, u64 offset) {       \
        for (i64 i = global_thread(); i < n; i += grid_threads())                          \
            out[i] = uniform<T>(bits_at(seed, offset + (u64)i));                           \
    }

DLB_RAND(f16, f16)
DLB_RAND(bf16, bf16)
DLB_RAND(f32, float)
DLB_RAND(f64, double)
