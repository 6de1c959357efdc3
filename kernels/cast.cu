// dtype conversion (Tensor.to(dtype), copy_ across dtypes): one strided
// kernel per (source, destination) pair of real dtypes. A contiguous pair
// collapses to a single dimension on the host, so this is also the fast path.
#include "common.cuh"

template <typename S, typename D>
__device__ void cast_strided(D* out, const S* src, i64 n, const Indexer& ix) {
    for (i64 i = global_thread(); i < n; i += grid_threads()) {
        i64 off[2];
        offsets<2>(ix, i, off);
        out[off[0]] = store_from<D>(Tr<S>::load(src[off[1]]));
    }
}

#define DLB_CAST(stag, S, dtag, D)                                                            \
    extern "C" __global__ void dlb_cast_##stag##_##dtag(D* out, const S* src, i64 n, Indexer ix) { \
        cast_strided<S, D>(out, src, n, ix);                                                   \
    }
#define DLB_CAST_FROM(stag, S)                                                                 \
    DLB_CAST(stag, S, b8, b8) DLB_CAST(stag, S, u8, u8) DLB_CAST(stag, S, i8, i8)              \
    DLB_CAST(stag, S, i16, i16) DLB_CAST(stag, S, i32, i32) DLB_CAST(stag, S, i64, i64)        \
    DLB_CAST(stag, S, u16, u16) DLB_CAST(stag, S, u32, u32) DLB_CAST(stag, S, u64, u64)        \
    DLB_CAST(stag, S, f16, f16) DLB_CAST(stag, S, bf16, bf16) DLB_CAST(stag, S, f32, float)    \
    DLB_CAST(stag, S, f64, double)

#if DLB_WANT(b8)
DLB_CAST_FROM(b8, b8)
#endif
#if DLB_WANT(u8)
DLB_CAST_FROM(u8, u8)
#endif
#if DLB_WANT(i8)
DLB_CAST_FROM(i8, i8)
#endif
#if DLB_WANT(i16)
DLB_CAST_FROM(i16, i16)
#endif
#if DLB_WANT(i32)
DLB_CAST_FROM(i32, i32)
#endif
#if DLB_WANT(i64)
DLB_CAST_FROM(i64, i64)
#endif
#if DLB_WANT(u16)
DLB_CAST_FROM(u16, u16)
#endif
#if DLB_WANT(u32)
DLB_CAST_FROM(u32, u32)
#endif
#if DLB_WANT(u64)
DLB_CAST_FROM(u64, u64)
#endif
#if DLB_WANT(f16)
DLB_CAST_FROM(f16, f16)
#endif
#if DLB_WANT(bf16)
DLB_CAST_FROM(bf16, bf16)
#endif
#if DLB_WANT(f32)
DLB_CAST_FROM(f32, float)
#endif
#if DLB_WANT(f64)
DLB_CAST_FROM(f64, double)
#endif
