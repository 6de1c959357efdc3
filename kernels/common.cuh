// Shared by every dlbridge kernel: storage types, their compute types, and
// the strided indexer. No CUDA headers are included, so NVRTC needs no
// include path and any NVRTC >= 12 compiles these files.
#pragma once

typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// Storage types whose bits are not a C++ arithmetic type.
struct b8 { u8 v; };          // DLPack bool: one byte, any non-zero byte is true
struct f16 { u16 bits; };     // IEEE binary16
struct bf16 { u16 bits; };    // bfloat16

#ifdef DLB_HOST_EMULATION
// tests/kernels/host_emulation.h compiles these files for the CPU, where
// _Float16 does the same round-to-nearest-even conversions.
__device__ __forceinline__ float half_to_float(u16 h) {
    _Float16 x;
    __builtin_memcpy(&x, &h, 2);
    return (float)x;
}

__device__ __forceinline__ u16 float_to_half(float f) {
    _Float16 x = (_Float16)f;
    u16 h;
    __builtin_memcpy(&h, &x, 2);
    return h;
}
#else
__device__ __forceinline__ float half_to_float(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ u16 float_to_half(float f) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
#endif

__device__ __forceinline__ float bf16_to_float(u16 b) {
    return __uint_as_float(((u32)b) << 16);
}

// Round to nearest even; NaN stays a (quiet) NaN.
__device__ __forceinline__ u16 float_to_bf16(float f) {
    u32 u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (u16)(u >> 16);
}

// Tr<T>: how a storage type T loads into the type arithmetic runs in (C)
// and stores back. Narrow integers compute in int/unsigned and wrap on store;
// 32- and 64-bit signed integers compute in signed types but add, subtract
// and multiply through their unsigned twins, so overflow wraps like PyTorch.
template <typename T> struct Tr;
#define DLB_PLAIN(T, CT)                                                     \
    template <> struct Tr<T> {                                               \
        typedef CT C;                                                        \
        static __device__ __forceinline__ CT load(T x) { return (CT)x; }     \
        static __device__ __forceinline__ T store(CT c) { return (T)c; }     \
    };
DLB_PLAIN(i8, int)
DLB_PLAIN(i16, int)
DLB_PLAIN(i32, int)
DLB_PLAIN(i64, long long)
DLB_PLAIN(u8, unsigned)
DLB_PLAIN(u16, unsigned)
DLB_PLAIN(u32, unsigned)
DLB_PLAIN(u64, unsigned long long)
DLB_PLAIN(float, float)
DLB_PLAIN(double, double)
#undef DLB_PLAIN

template <> struct Tr<b8> {
    typedef bool C;
    static __device__ __forceinline__ bool load(b8 x) { return x.v != 0; }
    static __device__ __forceinline__ b8 store(bool c) { b8 r; r.v = c ? 1 : 0; return r; }
};
template <> struct Tr<f16> {
    typedef float C;
    static __device__ __forceinline__ float load(f16 x) { return half_to_float(x.bits); }
    static __device__ __forceinline__ f16 store(float c) { f16 r; r.bits = float_to_half(c); return r; }
};
template <> struct Tr<bf16> {
    typedef float C;
    static __device__ __forceinline__ float load(bf16 x) { return bf16_to_float(x.bits); }
    static __device__ __forceinline__ bf16 store(float c) { bf16 r; r.bits = float_to_bf16(c); return r; }
};

// Converting between compute types: C++ conversions, except float ->
// integer. C++ leaves that undefined out of range and PTX saturates, but
// PyTorch (and dlbridge's CPU backend) truncate to int64 first and then wrap
// to the narrower type: -1.0 -> uint8 is 255, 3e9 -> int32 is -1294967296.
template <typename To, typename From> struct Convert {
    static __device__ __forceinline__ To go(From x) { return (To)x; }
};
#define DLB_FLOAT_TO_INT(F, I)                                                \
    template <> struct Convert<I, F> {                                        \
        static __device__ __forceinline__ I go(F x) { return (I)(long long)x; } \
    };
DLB_FLOAT_TO_INT(float, int)
DLB_FLOAT_TO_INT(double, int)
DLB_FLOAT_TO_INT(float, unsigned)
DLB_FLOAT_TO_INT(double, unsigned)
#undef DLB_FLOAT_TO_INT
// uint64 keeps the values above the int64 range that it can hold.
#define DLB_FLOAT_TO_U64(F)                                                   \
    template <> struct Convert<unsigned long long, F> {                       \
        static __device__ __forceinline__ unsigned long long go(F x) {        \
            return x >= (F)9223372036854775808.0 ? (unsigned long long)x      \
                                                 : (unsigned long long)(long long)x; \
        }                                                                     \
    };
DLB_FLOAT_TO_U64(float)
DLB_FLOAT_TO_U64(double)
#undef DLB_FLOAT_TO_U64

template <typename To, typename From>
__device__ __forceinline__ To convert(From x) { return Convert<To, From>::go(x); }

// A float64 rounded toward zero to float32, the last bit set when inexact
// ("round to odd"): rounding that to float16 or bfloat16 to nearest even
// rounds the float64 once, as the CPU backend and NumPy do (a plain
// (float) cast first could round twice).
__device__ __forceinline__ float double_to_float_odd(double d) {
    float f = (float)d;
    const double fd = (double)f;
    if ((fd < 0 ? -fd : fd) > (d < 0 ? -d : d)) f = __uint_as_float(__float_as_uint(f) - 1u);
    if (fd != d && d == d) f = __uint_as_float(__float_as_uint(f) | 1u);
    return f;
}

// A compute value stored as the storage type D: through D's compute type,
// except that integers and float64 reach float16 and bfloat16 through
// float64 rounded once (as the CPU backend's casts).
template <typename D, typename From> struct StoreFrom {
    static __device__ __forceinline__ D go(From x) { return Tr<D>::store(convert<typename Tr<D>::C>(x)); }
};
#define DLB_NARROW_FROM(D, From)                                                              \
    template <> struct StoreFrom<D, From> {                                                   \
        static __device__ __forceinline__ D go(From x) { return Tr<D>::store(double_to_float_odd((double)x)); } \
    };
DLB_NARROW_FROM(f16, double) DLB_NARROW_FROM(f16, int) DLB_NARROW_FROM(f16, unsigned)
DLB_NARROW_FROM(f16, long long) DLB_NARROW_FROM(f16, unsigned long long)
DLB_NARROW_FROM(bf16, double) DLB_NARROW_FROM(bf16, int) DLB_NARROW_FROM(bf16, unsigned)
DLB_NARROW_FROM(bf16, long long) DLB_NARROW_FROM(bf16, unsigned long long)
#undef DLB_NARROW_FROM

template <typename D, typename From>
__device__ __forceinline__ D store_from(From x) { return StoreFrom<D, From>::go(x); }

// The strided indexer. Host code drops size-1 dimensions and merges
// dimensions that are contiguous in every operand before launching, so
// DLB_MAX_DIMS bounds only truly irregular layouts. Strides count elements.
#define DLB_MAX_DIMS 16
struct Indexer {
    int ndim;
    int pad;
    i64 shape[DLB_MAX_DIMS];
    i64 strides[3][DLB_MAX_DIMS];   // [0] output, [1] first input, [2] second input
};

// Element offsets of linear index i (row-major over shape) in up to three operands.
template <int N>
__device__ __forceinline__ void offsets(const Indexer& ix, i64 i, i64 (&off)[N]) {
    #pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ix.ndim - 1; d >= 0; --d) {
        i64 extent = ix.shape[d];
        i64 q = i / extent;
        i64 r = i - q * extent;
        #pragma unroll
        for (int k = 0; k < N; ++k) off[k] += r * ix.strides[k][d];
        i = q;
    }
}

__device__ __forceinline__ i64 global_thread() {
    return (i64)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ i64 grid_threads() {
    return (i64)gridDim.x * blockDim.x;
}

// 16 bytes of T, for wide loads and stores (callers check alignment).
template <typename T> struct alignas(16) Pack {
    T v[16 / sizeof(T)];
};

// Large files are compiled one dtype at a time (the host passes
// -DDLB_ONLY=DLB_TAG_f32, say) so a first call compiles in well under a
// second; without DLB_ONLY a file compiles whole (the CI check does that).
#define DLB_TAG_b8 1
#define DLB_TAG_u8 2
#define DLB_TAG_i8 3
#define DLB_TAG_i16 4
#define DLB_TAG_i32 5
#define DLB_TAG_i64 6
#define DLB_TAG_u16 7
#define DLB_TAG_u32 8
#define DLB_TAG_u64 9
#define DLB_TAG_f16 10
#define DLB_TAG_bf16 11
#define DLB_TAG_f32 12
#define DLB_TAG_f64 13
#ifndef DLB_ONLY
#define DLB_ONLY 0
#endif
#define DLB_WANT(tag) (DLB_ONLY == 0 || DLB_ONLY == DLB_TAG_##tag)
