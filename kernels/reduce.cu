// Reductions: sum, mean, max and min (with the first index of the winner)
// over any dimensions, with the CPU backend's semantics (cpu/reduce.rs).
//
// The host describes the input as `rows` runs of `run` elements: the kept
// dimensions (an Indexer over them gives each run's first element) and the
// reduced ones (one stride, `elem_stride`; the host copies the input first
// when the reduced dimensions do not merge into one). Three kernels:
//   dlb_reduce_block_*   one block per run (or piece of a run): long runs
//                        with elem_stride 1, 16-byte loads where aligned;
//   dlb_reduce_thread_*  one thread per run (or piece): short runs, and runs
//                        across memory (sum over dim 0), where neighbouring
//                        threads read neighbouring elements;
//   dlb_reduce_final_*   one block per run folds the pieces' partials.
// A run cut into `splits` > 1 pieces leaves one partial per piece (the sum,
// or the index of the winner) for dlb_reduce_final. Full sums and means of
// contiguous input keep their own first pass, dlb_sum_partial_* (a grid-stride
// share per block), whose partials dlb_reduce_final_* folds too.
//
// Floating types accumulate in double, integers and bool in 64 bits
// (wrapping). Every kernel file is compiled one dtype at a time.
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
        // Two packs a turn into two accumulators: twice the loads in flight.
        A acc2 = 0;
        i64 q = start;
        for (; q + step < packs; q += 2 * step) {
            Pack<T> x = p[q], y = p[q + step];
            #pragma unroll
            for (int k = 0; k < V; ++k) acc += (A)Tr<T>::load(x.v[k]);
            #pragma unroll
            for (int k = 0; k < V; ++k) acc2 += (A)Tr<T>::load(y.v[k]);
        }
        if (q < packs) {
            Pack<T> x = p[q];
            #pragma unroll
            for (int k = 0; k < V; ++k) acc += (A)Tr<T>::load(x.v[k]);
        }
        acc += acc2;
        done = packs * V;
    }
    for (i64 i = done + start; i < n; i += step) acc += (A)Tr<T>::load(in[i]);
    acc = block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// ----------------------------------------------------------------- rounding

// A float64 result rounded to the output dtype exactly as the CPU backend
// rounds it.
template <typename O> struct FromDouble;
template <> struct FromDouble<float> {
    static __device__ __forceinline__ float go(double d) { return (float)d; }
};
template <> struct FromDouble<double> {
    static __device__ __forceinline__ double go(double d) { return d; }
};
// float16 and bfloat16: rounded once (see double_to_float_odd).
template <> struct FromDouble<f16> {
    static __device__ __forceinline__ f16 go(double d) { return store_from<f16>(d); }
};
template <> struct FromDouble<bf16> {
    static __device__ __forceinline__ bf16 go(double d) { return store_from<bf16>(d); }
};

// ----------------------------------------------------------------- what is folded

enum { RED_SUM = 0, RED_MEAN = 1, RED_MAX = 2, RED_MIN = 3 };

// What a sum accumulates in: double for floating types, a wrapping 64-bit
// integer for integers and bool (written out as int64).
template <typename T> struct SumAcc {
    typedef unsigned long long A;
    static const bool floating = false;
};
#define DLB_FLOAT_ACC(T)                    \
    template <> struct SumAcc<T> {          \
        typedef double A;                   \
        static const bool floating = true;  \
    };
DLB_FLOAT_ACC(f16)
DLB_FLOAT_ACC(bf16)
DLB_FLOAT_ACC(float)
DLB_FLOAT_ACC(double)
#undef DLB_FLOAT_ACC

// A fold: none() is the empty value, take() adds the element at index k (a
// thread takes its elements in increasing k), combine() merges two folds of
// disjoint elements in any order; save/restore move a piece's result through
// the partials buffer (8 bytes per piece).
template <typename T> struct SumFold {
    typedef typename SumAcc<T>::A A;
    struct V { A s; };
    static __device__ __forceinline__ V none() { V v; v.s = 0; return v; }
    static __device__ __forceinline__ V take(V v, T x, i64) { v.s += (A)Tr<T>::load(x); return v; }
    static __device__ __forceinline__ V combine(V a, V b) { a.s += b.s; return a; }
    static __device__ __forceinline__ void save(void* partial, i64 at, V v) { ((A*)partial)[at] = v.s; }
    static __device__ __forceinline__ V restore(const void* partial, i64 at, const T*, i64) {
        V v;
        v.s = ((const A*)partial)[at];
        return v;
    }
};

// The largest (MAX) or smallest value and its index. A NaN beats every
// number; between equals (two NaNs, or -0.0 and 0.0) the first index wins.
template <bool MAX, typename T> struct ExtremeFold {
    typedef typename Tr<T>::C C;
    struct V { C v; i64 i; };   // i < 0: no element yet
    static __device__ __forceinline__ bool nan(C x) { return x != x; }
    static __device__ __forceinline__ bool beats(C x, C y) { return MAX ? x > y : x < y; }
    static __device__ __forceinline__ V none() { V r; r.v = (C)0; r.i = -1; return r; }
    static __device__ __forceinline__ V take(V v, T x, i64 k) {
        const C c = Tr<T>::load(x);
        if (v.i < 0 || (!nan(v.v) && (nan(c) || beats(c, v.v)))) {
            v.v = c;
            v.i = k;
        }
        return v;
    }
    static __device__ __forceinline__ V combine(V a, V b) {
        if (a.i < 0) return b;
        if (b.i < 0) return a;
        const bool an = nan(a.v), bn = nan(b.v);
        if (an != bn) return an ? a : b;
        if (!an) {
            if (beats(a.v, b.v)) return a;
            if (beats(b.v, a.v)) return b;
        }
        return a.i < b.i ? a : b;
    }
    static __device__ __forceinline__ void save(void* partial, i64 at, V v) { ((i64*)partial)[at] = v.i; }
    static __device__ __forceinline__ V restore(const void* partial, i64 at, const T* row, i64 stride) {
        V v;
        v.i = ((const i64*)partial)[at];
        v.v = Tr<T>::load(row[v.i * stride]);
        return v;
    }
};
template <typename T> using MaxFold = ExtremeFold<true, T>;
template <typename T> using MinFold = ExtremeFold<false, T>;

// ----------------------------------------------------------------- the kernels

// Must match `struct Rows` in src/cuda/kernels.rs.
struct Rows {
    i64 rows;         // outputs: one run each
    i64 run;          // elements per run (the product of the reduced sizes)
    i64 elem_stride;  // elements between neighbours in a run
    i64 splits;       // pieces per run; more than one leaves partials
    i64 chunk;        // elements per piece (the last piece may be shorter)
};

// The fold of every thread's v, valid in thread 0. blockDim.x is a power of
// two, at most 256 (the runtime launches 256 threads).
template <typename F>
__device__ typename F::V block_fold(typename F::V v) {
    __shared__ typename F::V shared[256];
    const unsigned t = threadIdx.x;
    __syncthreads();  // the previous call's reads of shared[0] are done
    shared[t] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) shared[t] = F::combine(shared[t], shared[t + s]);
        __syncthreads();
    }
    return t == 0 ? shared[0] : v;
}

// Writes output r from the fold of its whole run (row: the run's first element).
template <int OP, typename F, typename T, typename O>
__device__ __forceinline__ void finish(typename F::V v, const T* row, const Rows& g, i64 r, O* out, i64* idx) {
    if constexpr (OP == RED_SUM) {
        if constexpr (SumAcc<T>::floating) out[r] = FromDouble<O>::go(v.s);
        else out[r] = (O)(long long)v.s;
    } else if constexpr (OP == RED_MEAN) {
        // The sum in the dtype's compute type (float for float16, bfloat16 and
        // float32; double for float64), divided there (cpu/reduce.rs's mean()).
        if constexpr (sizeof(O) <= 4) {
            const float total = (float)v.s;
            out[r] = FromDouble<O>::go((double)(total / (float)g.run));
        } else {
            out[r] = FromDouble<O>::go(v.s / (double)g.run);
        }
    } else {
        if (v.i < 0) return;  // an empty run: the host never asks for one
        out[r] = row[v.i * g.elem_stride];
        if (idx) idx[r] = v.i;
    }
}

template <typename T>
__device__ __forceinline__ const T* run_start(const T* in, const Indexer& kept, i64 r) {
    i64 off[1];
    offsets<1>(kept, r, off);
    return in + off[0];
}

// One block per piece (tile = run * splits + piece), threads along the run.
template <int OP, typename F, typename T, typename O>
__device__ void reduce_block(const T* in, const Indexer& kept, const Rows& g, O* out, i64* idx, void* partial,
                             int wide) {
    const i64 tiles = g.rows * g.splits;
    for (i64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const i64 r = tile / g.splits, piece = tile - r * g.splits;
        const T* row = run_start(in, kept, r);
        const i64 begin = piece * g.chunk;
        const i64 end = begin + g.chunk < g.run ? begin + g.chunk : g.run;
        typename F::V v = F::none();
        i64 k = begin + threadIdx.x;
        if (wide && g.elem_stride == 1 && ((u64)(const void*)(row + begin) & 15) == 0 && end > begin) {
            const int V = 16 / sizeof(T);
            const i64 packs = (end - begin) / V;
            const Pack<T>* p = reinterpret_cast<const Pack<T>*>(row + begin);
            for (i64 q = threadIdx.x; q < packs; q += blockDim.x) {
                const Pack<T> x = p[q];
                #pragma unroll
                for (int j = 0; j < V; ++j) v = F::take(v, x.v[j], begin + q * V + j);
            }
            k = begin + packs * V + threadIdx.x;
        }
        for (; k < end; k += blockDim.x) v = F::take(v, row[k * g.elem_stride], k);
        v = block_fold<F>(v);
        if (threadIdx.x == 0) {
            if (g.splits == 1) finish<OP, F>(v, row, g, r, out, idx);
            else F::save(partial, tile, v);
        }
    }
}

// One thread per piece; pieces of neighbouring runs go to neighbouring
// threads (tile = piece * rows + run), so a reduction over a leading
// dimension reads memory in order.
template <int OP, typename F, typename T, typename O>
__device__ void reduce_thread(const T* in, const Indexer& kept, const Rows& g, O* out, i64* idx, void* partial) {
    const i64 tiles = g.rows * g.splits;
    for (i64 tile = global_thread(); tile < tiles; tile += grid_threads()) {
        const i64 piece = tile / g.rows, r = tile - piece * g.rows;
        const T* row = run_start(in, kept, r);
        const i64 begin = piece * g.chunk;
        const i64 end = begin + g.chunk < g.run ? begin + g.chunk : g.run;
        typename F::V v = F::none();
        for (i64 k = begin; k < end; ++k) v = F::take(v, row[k * g.elem_stride], k);
        if (g.splits == 1) finish<OP, F>(v, row, g, r, out, idx);
        else F::save(partial, r * g.splits + piece, v);
    }
}

// One block per run: folds the run's `splits` partials and writes the output.
template <int OP, typename F, typename T, typename O>
__device__ void reduce_final(const T* in, const Indexer& kept, const Rows& g, const void* partial, O* out,
                             i64* idx) {
    for (i64 r = blockIdx.x; r < g.rows; r += gridDim.x) {
        const T* row = run_start(in, kept, r);
        typename F::V v = F::none();
        for (i64 p = threadIdx.x; p < g.splits; p += blockDim.x)
            v = F::combine(v, F::restore(partial, r * g.splits + p, row, g.elem_stride));
        v = block_fold<F>(v);
        if (threadIdx.x == 0) finish<OP, F>(v, row, g, r, out, idx);
    }
}

#define DLB_REDUCE(opname, OP, F, tag, T, O)                                                            \
    extern "C" __global__ void dlb_reduce_block_##opname##_##tag(                                       \
        const T* in, Indexer kept, Rows g, O* out, i64* idx, void* partial, int wide) {                 \
        reduce_block<OP, F, T, O>(in, kept, g, out, idx, partial, wide);                                \
    }                                                                                                   \
    extern "C" __global__ void dlb_reduce_thread_##opname##_##tag(                                      \
        const T* in, Indexer kept, Rows g, O* out, i64* idx, void* partial) {                           \
        reduce_thread<OP, F, T, O>(in, kept, g, out, idx, partial);                                     \
    }                                                                                                   \
    extern "C" __global__ void dlb_reduce_final_##opname##_##tag(                                       \
        const T* in, Indexer kept, Rows g, const void* partial, O* out, i64* idx) {                     \
        reduce_final<OP, F, T, O>(in, kept, g, partial, out, idx);                                      \
    }

#define DLB_SUM_PARTIAL(tag, T)                                                                         \
    extern "C" __global__ void dlb_sum_partial_##tag(const T* in, i64 n, SumAcc<T>::A* partial, int wide) { \
        sum_partial<T, SumAcc<T>::A>(in, n, partial, wide);                                             \
    }

// Integers and bool: sums are int64; max and min keep the dtype.
#define DLB_REDUCE_INT(tag, T)                                                                          \
    DLB_SUM_PARTIAL(tag, T)                                                                             \
    DLB_REDUCE(sum, RED_SUM, SumFold<T>, tag, T, i64)                                                   \
    DLB_REDUCE(max, RED_MAX, MaxFold<T>, tag, T, T)                                                     \
    DLB_REDUCE(min, RED_MIN, MinFold<T>, tag, T, T)
// Floating types: every reduction keeps the dtype.
#define DLB_REDUCE_FLOAT(tag, T)                                                                        \
    DLB_SUM_PARTIAL(tag, T)                                                                             \
    DLB_REDUCE(sum, RED_SUM, SumFold<T>, tag, T, T)                                                     \
    DLB_REDUCE(mean, RED_MEAN, SumFold<T>, tag, T, T)                                                   \
    DLB_REDUCE(max, RED_MAX, MaxFold<T>, tag, T, T)                                                     \
    DLB_REDUCE(min, RED_MIN, MinFold<T>, tag, T, T)

#if DLB_WANT(b8)
DLB_REDUCE_INT(b8, b8)
#endif
#if DLB_WANT(u8)
DLB_REDUCE_INT(u8, u8)
#endif
#if DLB_WANT(i8)
DLB_REDUCE_INT(i8, i8)
#endif
#if DLB_WANT(i16)
DLB_REDUCE_INT(i16, i16)
#endif
#if DLB_WANT(i32)
DLB_REDUCE_INT(i32, i32)
#endif
#if DLB_WANT(i64)
DLB_REDUCE_INT(i64, i64)
#endif
#if DLB_WANT(u16)
DLB_REDUCE_INT(u16, u16)
#endif
#if DLB_WANT(u32)
DLB_REDUCE_INT(u32, u32)
#endif
#if DLB_WANT(u64)
DLB_REDUCE_INT(u64, u64)
#endif
#if DLB_WANT(f16)
DLB_REDUCE_FLOAT(f16, f16)
#endif
#if DLB_WANT(bf16)
DLB_REDUCE_FLOAT(bf16, bf16)
#endif
#if DLB_WANT(f32)
DLB_REDUCE_FLOAT(f32, float)
#endif
#if DLB_WANT(f64)
DLB_REDUCE_FLOAT(f64, double)
#endif
