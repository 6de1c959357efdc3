// Comparisons into a bool tensor: out = a op b, a op scalar, or scalar op a,
// for eq, ne, lt, le, gt, ge. Both operands have one dtype (the host
// promoted them, and rounded a number to that dtype); they are compared in
// its compute type, which holds every value exactly (float16 and bfloat16
// widen to float). C++ comparisons are IEEE's: NaN is unequal to everything,
// itself included, and every ordering with a NaN is false.
#include "common.cuh"

enum { CMP_EQ = 0, CMP_NE = 1, CMP_LT = 2, CMP_LE = 3, CMP_GT = 4, CMP_GE = 5 };
// mode: which operands are tensors (as in elementwise.cu).
enum { MODE_TENSORS = 0, MODE_SCALAR_RIGHT = 1, MODE_SCALAR_LEFT = 2 };

template <int OP, typename C>
__device__ __forceinline__ bool cmp(C x, C y) {
    if constexpr (OP == CMP_EQ) return x == y;
    else if constexpr (OP == CMP_NE) return x != y;
    else if constexpr (OP == CMP_LT) return x < y;
    else if constexpr (OP == CMP_LE) return x <= y;
    else if constexpr (OP == CMP_GT) return x > y;
    else return x >= y;
}

template <int OP, typename T>
__device__ __forceinline__ b8 compare_one(T x, T y, typename Tr<T>::C s, int mode) {
    typedef typename Tr<T>::C C;
    C cx = Tr<T>::load(x);
    bool r;
    if (mode == MODE_SCALAR_RIGHT) r = cmp<OP, C>(cx, s);
    else if (mode == MODE_SCALAR_LEFT) r = cmp<OP, C>(s, cx);
    else r = cmp<OP, C>(cx, Tr<T>::load(y));
    b8 o;
    o.v = r ? 1 : 0;
    return o;
}

// Every operand contiguous (the output is always a fresh contiguous tensor).
template <int OP, typename T>
__device__ void compare_contig(b8* out, const T* a, const T* b, typename Tr<T>::C s, int mode, i64 n) {
    for (i64 i = global_thread(); i < n; i += grid_threads()) {
        T y = mode == MODE_TENSORS ? b[i] : a[i];
        out[i] = compare_one<OP, T>(a[i], y, s, mode);
    }
}

// Broadcast or strided inputs: strides[0] are the output's, [1] a's, [2] b's.
template <int OP, typename T>
__device__ void compare_strided(b8* out, const T* a, const T* b, typename Tr<T>::C s, int mode, i64 n,
                                const Indexer& ix) {
    for (i64 i = global_thread(); i < n; i += grid_threads()) {
        i64 off[3];
        offsets<3>(ix, i, off);
        T x = a[off[1]];
        T y = mode == MODE_TENSORS ? b[off[2]] : x;
        out[off[0]] = compare_one<OP, T>(x, y, s, mode);
    }
}

#define DLB_COMPARE(name, OP, tag, T)                                                         \
    extern "C" __global__ void dlb_##name##_contig_##tag(                                     \
        b8* out, const T* a, const T* b, Tr<T>::C scalar, int mode, i64 n) {                  \
        compare_contig<OP, T>(out, a, b, scalar, mode, n);                                    \
    }                                                                                         \
    extern "C" __global__ void dlb_##name##_strided_##tag(                                    \
        b8* out, const T* a, const T* b, Tr<T>::C scalar, int mode, i64 n, Indexer ix) {      \
        compare_strided<OP, T>(out, a, b, scalar, mode, n, ix);                               \
    }
#define DLB_COMPARES(tag, T)                                                                  \
    DLB_COMPARE(eq, CMP_EQ, tag, T) DLB_COMPARE(ne, CMP_NE, tag, T)                           \
    DLB_COMPARE(lt, CMP_LT, tag, T) DLB_COMPARE(le, CMP_LE, tag, T)                           \
    DLB_COMPARE(gt, CMP_GT, tag, T) DLB_COMPARE(ge, CMP_GE, tag, T)

#if DLB_WANT(b8)
DLB_COMPARES(b8, b8)
#endif
#if DLB_WANT(u8)
DLB_COMPARES(u8, u8)
#endif
#if DLB_WANT(i8)
DLB_COMPARES(i8, i8)
#endif
#if DLB_WANT(i16)
DLB_COMPARES(i16, i16)
#endif
#if DLB_WANT(i32)
DLB_COMPARES(i32, i32)
#endif
#if DLB_WANT(i64)
DLB_COMPARES(i64, i64)
#endif
#if DLB_WANT(u16)
DLB_COMPARES(u16, u16)
#endif
#if DLB_WANT(u32)
DLB_COMPARES(u32, u32)
#endif
#if DLB_WANT(u64)
DLB_COMPARES(u64, u64)
#endif
#if DLB_WANT(f16)
DLB_COMPARES(f16, f16)
#endif
#if DLB_WANT(bf16)
DLB_COMPARES(bf16, bf16)
#endif
#if DLB_WANT(f32)
DLB_COMPARES(f32, float)
#endif
#if DLB_WANT(f64)
DLB_COMPARES(f64, double)
#endif
