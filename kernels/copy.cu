// Moving bytes without arithmetic: strided copies (contiguous(), copy_ of
// one dtype) and fills. They only care about the element width, so one
// kernel per width serves every dtype, complex ones included.
#include "common.cuh"

struct w16 { u64 lo, hi; };   // 16-byte elements (complex128); 8-byte aligned is enough

template <typename W>
__device__ void copy_strided(W* out, const W* src, i64 n, const Indexer& ix) {
    for (i64 i = global_thread(); i < n; i += grid_threads()) {
        i64 off[2];
        offsets<2>(ix, i, off);
        out[off[0]] = src[off[1]];
    }
}

template <typename W>
__device__ void fill_contig(W* out, W value, i64 n, int wide) {
    const i64 start = global_thread(), step = grid_threads();
    i64 done = 0;
    if (wide && sizeof(W) < 16) {
        const int V = 16 / sizeof(W);
        Pack<W> p;
        #pragma unroll
        for (int k = 0; k < V; ++k) p.v[k] = value;
        const i64 packs = n / V;
        Pack<W>* po = reinterpret_cast<Pack<W>*>(out);
        for (i64 q = start; q < packs; q += step) po[q] = p;
        done = packs * V;
    }
    for (i64 i = done + start; i < n; i += step) out[i] = value;
}

template <typename W>
__device__ void fill_strided(W* out, W value, i64 n, const Indexer& ix) {
    for (i64 i = global_thread(); i < n; i += grid_threads()) {
        i64 off[1];
        offsets<1>(ix, i, off);
        out[off[0]] = value;
    }
}

#define DLB_WIDTH(tag, W)                                                                           \
    extern "C" __global__ void dlb_copy_strided_##tag(W* out, const W* src, i64 n, Indexer ix) {   \
        copy_strided<W>(out, src, n, ix);                                                           \
    }                                                                                               \
    extern "C" __global__ void dlb_fill_contig_##tag(W* out, W value, i64 n, int wide) {           \
        fill_contig<W>(out, value, n, wide);                                                        \
    }                                                                                               \
    extern "C" __global__ void dlb_fill_strided_##tag(W* out, W value, i64 n, Indexer ix) {        \
        fill_strided<W>(out, value, n, ix);                                                         \
    }

DLB_WIDTH(w1, u8)
DLB_WIDTH(w2, u16)
DLB_WIDTH(w4, u32)
DLB_WIDTH(w8, u64)
DLB_WIDTH(w16, w16)
