// sum and mean over every element of a contiguous tensor, in two launches:
// each block folds a grid-stride share into one partial, then one block folds
// the partials and writes the result. Floating types accumulate in double and
// integers in 64 bits (the CPU backend does the same).
#include "common.cuh"

template <typename A>
__device__ __forceinline__ A warp_sum(A v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// The sum of v over the block, valid in thread 0.
template <typename A>
__device__ A block_sum(A v) {
    __shared__ A per_warp[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) per_warp[warp] = v;
    __syncthreads();
    v = (threadIdx.x < (blockDim.x + 31) / 32) ? per_warp[lane] : (A)0;
    if (warp == 0) v = warp_sum(v);
    return v;
}

template <typename T, typename A>
__device__ void sum_partial(const T* in, i64 n, A* partial, int wide) {
    A acc = 0;
    const i64 start = global_thread(), step = grid_threads();
    i64 done = 0;
    if (wide) {
        const int V = 16 / sizeof(T);
        const i64 packs = n / V;
        const Pack<T>* p = reinterpret_cast<const Pack<T>*>(in);
        for (i64 q = start; q < packs; q += step) {
            Pack<T> x = p[q];
            #pragma unroll
            for (int k = 0; k < V; ++k) acc += (A)Tr<T>::load(x.v[k]);
        }
        done = packs * V;
    }
    for (i64 i = done + start; i < n; i += step) acc += (A)Tr<T>::load(in[i]);
    acc = block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// out = sum(partial) * scale (scale is 1/n for mean, else 1), in dtype O.
template <typename A, typename O>
__device__ void sum_final(const A* partial, i64 m, O* out, double scale) {
    A acc = 0;
    for (i64 i = threadIdx.x; i < m; i += blockDim.x) acc += partial[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) {
        typedef typename Tr<O>::C C;
        if (scale == 1.0) out[0] = Tr<O>::store(convert<C>(acc));
        else out[0] = Tr<O>::store(convert<C>((double)acc * scale));
    }
}

#define DLB_SUM(tag, T, A)                                                                      \
    extern "C" __global__ void dlb_sum_partial_##tag(const T* in, i64 n, A* partial, int wide) { \
        sum_partial<T, A>(in, n, partial, wide);                                                \
    }

DLB_SUM(b8, b8, long long)
DLB_SUM(u8, u8, long long)
DLB_SUM(i8, i8, long long)
DLB_SUM(i16, i16, long long)
DLB_SUM(i32, i32, long long)
DLB_SUM(i64, i64, long long)
DLB_SUM(u16, u16, long long)
DLB_SUM(u32, u32, long long)
DLB_SUM(u64, u64, long long)
DLB_SUM(f16, f16, double)
DLB_SUM(bf16, bf16, double)
DLB_SUM(f32, float, double)
DLB_SUM(f64, double, double)

// Integer sums are int64; floating sums and means keep the input's dtype.
extern "C" __global__ void dlb_sum_final_i64(const long long* partial, i64 m, i64* out, double scale) {
    sum_final<long long, i64>(partial, m, out, scale);
}
#define DLB_FINAL(tag, O)                                                                        \
    extern "C" __global__ void dlb_sum_final_##tag(const double* partial, i64 m, O* out, double scale) { \
        sum_final<double, O>(partial, m, out, scale);                                            \
    }
DLB_FINAL(f16, f16)
DLB_FINAL(bf16, bf16)
DLB_FINAL(f32, float)
DLB_FINAL(f64, double)
