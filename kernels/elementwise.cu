// Elementwise binary arithmetic: out = a op b, a op scalar, or scalar op a.
// One contiguous kernel (16-byte loads when every pointer allows) and one
// strided kernel (broadcast inputs have stride 0) per operator and dtype.
#include "common.cuh"

// Wrapping integer arithmetic: compute in the unsigned twin.
#define DLB_WRAP(CT, UT)                                                                    \
    __device__ __forceinline__ CT op_add(CT x, CT y) { return (CT)((UT)x + (UT)y); }     \
    __device__ __forceinline__ CT op_sub(CT x, CT y) { return (CT)((UT)x - (UT)y); }     \
    __device__ __forceinline__ CT op_mul(CT x, CT y) { return (CT)((UT)x * (UT)y); }
DLB_WRAP(int, unsigned)
DLB_WRAP(unsigned, unsigned)
DLB_WRAP(long long, unsigned long long)
DLB_WRAP(unsigned long long, unsigned long long)
#undef DLB_WRAP

#define DLB_FLOAT(CT)                                                         \
    __device__ __forceinline__ CT op_add(CT x, CT y) { return x + y; }     \
    __device__ __forceinline__ CT op_sub(CT x, CT y) { return x - y; }     \
    __device__ __forceinline__ CT op_mul(CT x, CT y) { return x * y; }     \
    __device__ __forceinline__ CT op_div(CT x, CT y) { return x / y; }
DLB_FLOAT(float)
DLB_FLOAT(double)
#undef DLB_FLOAT

// PyTorch on bools: add is "or", mul is "and" (sub and div are refused on the host).
__device__ __forceinline__ bool op_add(bool x, bool y) { return x || y; }
__device__ __forceinline__ bool op_mul(bool x, bool y) { return x && y; }

enum { OP_ADD = 0, OP_SUB = 1, OP_MUL = 2, OP_DIV = 3 };
// mode: which operands are tensors.
enum { MODE_TENSORS = 0, MODE_SCALAR_RIGHT = 1, MODE_SCALAR_LEFT = 2 };

template <int OP, typename C>
__device__ __forceinline__ C apply(C x, C y) {
    if constexpr (OP == OP_ADD) return op_add(x, y);
    else if constexpr (OP == OP_SUB) return op_sub(x, y);
    else if constexpr (OP == OP_MUL) return op_mul(x, y);
    else return op_div(x, y);   // floating types only: integer true division computes in float
}

template <int OP, typename T>
__device__ __forceinline__ T combine(T x, T y, typename Tr<T>::C s, int mode) {
    typedef typename Tr<T>::C C;
    C cx = Tr<T>::load(x);
    if (mode == MODE_SCALAR_RIGHT) return Tr<T>::store(apply<OP, C>(cx, s));
    if (mode == MODE_SCALAR_LEFT) return Tr<T>::store(apply<OP, C>(s, cx));
    return Tr<T>::store(apply<OP, C>(cx, Tr<T>::load(y)));
}

// The scalar arrives in the compute type (float for float16 and bfloat16),
// unrounded, as PyTorch passes it: the result is rounded once.
template <int OP, typename T>
__device__ void binary_contig(T* out, const T* a, const T* b, typename Tr<T>::C s, int mode, i64 n, int wide) {
    const i64 start = global_thread(), step = grid_threads();
    i64 done = 0;
    if (wide) {
        const int V = 16 / sizeof(T);
        const i64 packs = n / V;
        const Pack<T>* pa = reinterpret_cast<const Pack<T>*>(a);
        const Pack<T>* pb = reinterpret_cast<const Pack<T>*>(b);
        Pack<T>* po = reinterpret_cast<Pack<T>*>(out);
        for (i64 p = start; p < packs; p += step) {
            Pack<T> x = pa[p], r;
            Pack<T> y = x;
            if (mode == MODE_TENSORS) y = pb[p];
            #pragma unroll
            for (int k = 0; k < V; ++k) r.v[k] = combine<OP, T>(x.v[k], y.v[k], s, mode);
            po[p] = r;
        }
        done = packs * V;
    }
    for (i64 i = done + start; i < n; i += step) {
        T y = mode == MODE_TENSORS ? b[i] : a[i];
        out[i] = combine<OP, T>(a[i], y, s, mode);
    }
}

template <int OP, typename T>
__device__ void binary_strided(T* out, const T* a, const T* b, typename Tr<T>::C s, int mode, i64 n, const Indexer& ix) {
    for (i64 i = global_thread(); i < n; i += grid_threads()) {
        i64 off[3];
        offsets<3>(ix, i, off);
        T x = a[off[1]];
        T y = mode == MODE_TENSORS ? b[off[2]] : x;
        out[off[0]] = combine<OP, T>(x, y, s, mode);
    }
}

#define DLB_BINARY(name, OP, tag, T)                                                          \
    extern "C" __global__ void dlb_##name##_contig_##tag(                                     \
        T* out, const T* a, const T* b, Tr<T>::C scalar, int mode, i64 n, int wide) {         \
        binary_contig<OP, T>(out, a, b, scalar, mode, n, wide);                               \
    }                                                                                         \
    extern "C" __global__ void dlb_##name##_strided_##tag(                                    \
        T* out, const T* a, const T* b, Tr<T>::C scalar, int mode, i64 n, Indexer ix) {       \
        binary_strided<OP, T>(out, a, b, scalar, mode, n, ix);                                \
    }

#define DLB_ADD_SUB_MUL(tag, T) DLB_BINARY(add, OP_ADD, tag, T) DLB_BINARY(sub, OP_SUB, tag, T) DLB_BINARY(mul, OP_MUL, tag, T)
#define DLB_DIV(tag, T) DLB_BINARY(div, OP_DIV, tag, T)

#if DLB_WANT(b8)
DLB_BINARY(add, OP_ADD, b8, b8)
DLB_BINARY(mul, OP_MUL, b8, b8)
#endif
#if DLB_WANT(u8)
DLB_ADD_SUB_MUL(u8, u8)
#endif
#if DLB_WANT(i8)
DLB_ADD_SUB_MUL(i8, i8)
#endif
#if DLB_WANT(i16)
DLB_ADD_SUB_MUL(i16, i16)
#endif
#if DLB_WANT(i32)
DLB_ADD_SUB_MUL(i32, i32)
#endif
#if DLB_WANT(i64)
DLB_ADD_SUB_MUL(i64, i64)
#endif
#if DLB_WANT(u16)
DLB_ADD_SUB_MUL(u16, u16)
#endif
#if DLB_WANT(u32)
DLB_ADD_SUB_MUL(u32, u32)
#endif
#if DLB_WANT(u64)
DLB_ADD_SUB_MUL(u64, u64)
#endif
#if DLB_WANT(f16)
DLB_ADD_SUB_MUL(f16, f16)
DLB_DIV(f16, f16)
#endif
#if DLB_WANT(bf16)
DLB_ADD_SUB_MUL(bf16, bf16)
DLB_DIV(bf16, bf16)
#endif
#if DLB_WANT(f32)
DLB_ADD_SUB_MUL(f32, float)
DLB_DIV(f32, float)
#endif
#if DLB_WANT(f64)
DLB_ADD_SUB_MUL(f64, double)
DLB_DIV(f64, double)
#endif
