// Elementwise ops, one functor each (the rows of src/backend.rs's
// binary_ops!/unary_ops! name them: dlb_{name}_contig_{tag}, dlb_{name}_{tag}).
// Binary: out = a op b, a op scalar, or scalar op a; one contiguous kernel
// (16-byte loads when every pointer allows) and one strided kernel
// (broadcast inputs have stride 0) per operator and dtype. Unary: one
// strided kernel per operator and dtype (negation is a multiplication by -1).
// Adding an op: its functor and its line in the lists at the end.
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

// x ** y. Integers: by squaring, wrapping (in the unsigned twin); a negative
// exponent gives 1 for base 1, 1 or -1 for base -1 (even or odd exponent)
// and 0 otherwise, as PyTorch's integer pow and cpu/arith.rs's int_pow!.
// Narrow integers compute in int or unsigned: the product modulo 2^32 keeps
// the low 8 or 16 bits the store wraps to.
#define DLB_POW_BY_SQUARING(CT, UT)                                          \
    UT result = 1, b = (UT)base, e = (UT)exp;                                \
    while (e != 0) {                                                         \
        if (e & 1) result *= b;                                              \
        b *= b;                                                              \
        e >>= 1;                                                             \
    }                                                                        \
    return (CT)result;
#define DLB_SIGNED_POW(CT, UT)                                               \
    __device__ __forceinline__ CT op_pow(CT base, CT exp) {                  \
        if (exp < 0) {                                                       \
            if (base == 1) return 1;                                         \
            if (base == -1) return exp % 2 == 0 ? 1 : -1;                    \
            return 0;                                                        \
        }                                                                    \
        DLB_POW_BY_SQUARING(CT, UT)                                          \
    }
#define DLB_UNSIGNED_POW(CT)                                                 \
    __device__ __forceinline__ CT op_pow(CT base, CT exp) {                  \
        DLB_POW_BY_SQUARING(CT, CT)                                          \
    }
DLB_SIGNED_POW(int, unsigned)
DLB_SIGNED_POW(long long, unsigned long long)
DLB_UNSIGNED_POW(unsigned)
DLB_UNSIGNED_POW(unsigned long long)
#undef DLB_SIGNED_POW
#undef DLB_UNSIGNED_POW
#undef DLB_POW_BY_SQUARING
// float16 and bfloat16 arrive here as float: powf, then one rounding on store.
__device__ __forceinline__ float op_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double op_pow(double x, double y) { return pow(x, y); }
// bool ** bool: true unless the base is false and the exponent true.
__device__ __forceinline__ bool op_pow(bool x, bool y) { return x || !y; }

// maximum and minimum: NaN wins (either side), as PyTorch's; integers and
// bools (or/and) plainly.
template <typename C> __device__ __forceinline__ C op_maximum(C x, C y) { return x > y ? x : y; }
__device__ __forceinline__ float op_maximum(float x, float y) { return x != x || y != y ? x + y : (x > y ? x : y); }
__device__ __forceinline__ double op_maximum(double x, double y) { return x != x || y != y ? x + y : (x > y ? x : y); }

template <typename C> __device__ __forceinline__ C op_minimum(C x, C y) { return x < y ? x : y; }
__device__ __forceinline__ float op_minimum(float x, float y) { return x != x || y != y ? x + y : (x < y ? x : y); }
__device__ __forceinline__ double op_minimum(double x, double y) { return x != x || y != y ? x + y : (x < y ? x : y); }

// Binary functors: compute-type values in, compute-type value out.
// The bitwise ops: integers and bools only (the host refuses the other
// dtypes before a launch); a bool's `not` is logical.
template <typename C> __device__ __forceinline__ C op_bitwise_and(C x, C y) { return x & y; }
template <typename C> __device__ __forceinline__ C op_bitwise_or(C x, C y) { return x | y; }
template <typename C> __device__ __forceinline__ C op_bitwise_xor(C x, C y) { return x ^ y; }
template <typename C> __device__ __forceinline__ C op_bitwise_not(C x) { return ~x; }
__device__ __forceinline__ bool op_bitwise_not(bool x) { return !x; }

// Rounding division and remainders (PyTorch's div_floor, div_trunc,
// remainder, fmod): integers and real floats (the host refuses bools,
// complex numbers and a zero integer divisor before a launch). Signed
// integers: MIN / -1 wraps to MIN, and MIN % -1 is 0, without the overflow.
#define DLB_SIGNED_DIVISION(CT, UT)                                                            \
    __device__ __forceinline__ CT op_div_trunc(CT x, CT y) { return y == -1 ? (CT)((UT)0 - (UT)x) : x / y; } \
    __device__ __forceinline__ CT op_fmod(CT x, CT y) { return y == -1 ? 0 : x % y; }        \
    __device__ __forceinline__ CT op_div_floor(CT x, CT y) {                                  \
        CT m = op_fmod(x, y);                                                                 \
        return op_div_trunc(x, y) - (m != 0 && (m < 0) != (y < 0) ? 1 : 0);                   \
    }                                                                                         \
    __device__ __forceinline__ CT op_remainder(CT x, CT y) {                                  \
        CT m = op_fmod(x, y);                                                                 \
        return m != 0 && (m < 0) != (y < 0) ? m + y : m;                                      \
    }
#define DLB_UNSIGNED_DIVISION(CT)                                                              \
    __device__ __forceinline__ CT op_div_trunc(CT x, CT y) { return x / y; }                 \
    __device__ __forceinline__ CT op_div_floor(CT x, CT y) { return x / y; }                 \
    __device__ __forceinline__ CT op_fmod(CT x, CT y) { return x % y; }                      \
    __device__ __forceinline__ CT op_remainder(CT x, CT y) { return x % y; }
DLB_SIGNED_DIVISION(int, unsigned)
DLB_SIGNED_DIVISION(long long, unsigned long long)
DLB_UNSIGNED_DIVISION(unsigned)
DLB_UNSIGNED_DIVISION(unsigned long long)
#undef DLB_SIGNED_DIVISION
#undef DLB_UNSIGNED_DIVISION
// Floats (float16 and bfloat16 arrive as float): as c10::div_floor_floating,
// (x - fmod(x, y)) / y is exact; one less where the remainder's sign is not
// the divisor's, floored, and rounded up when just below an integer.
#define DLB_FLOAT_DIVISION(CT, FMOD, FLOOR, TRUNC, COPYSIGN)                                   \
    __device__ __forceinline__ CT op_fmod(CT x, CT y) { return FMOD(x, y); }                 \
    __device__ __forceinline__ CT op_div_trunc(CT x, CT y) { return TRUNC(x / y); }          \
    __device__ __forceinline__ CT op_remainder(CT x, CT y) {                                  \
        CT m = FMOD(x, y);                                                                    \
        return m != 0 && (y < 0) != (m < 0) ? m + y : m;                                      \
    }                                                                                         \
    __device__ __forceinline__ CT op_div_floor(CT x, CT y) {                                  \
        if (y == 0) return x / y;                                                             \
        CT m = FMOD(x, y);                                                                    \
        CT div = (x - m) / y;                                                                 \
        if (m != 0 && (y < 0) != (m < 0)) div -= 1;                                           \
        if (div == 0) return COPYSIGN((CT)0, x / y);                                          \
        CT fl = FLOOR(div);                                                                   \
        return div - fl > (CT)0.5 ? fl + 1 : fl;                                              \
    }
DLB_FLOAT_DIVISION(float, fmodf, floorf, truncf, copysignf)
DLB_FLOAT_DIVISION(double, fmod, floor, trunc, copysign)
#undef DLB_FLOAT_DIVISION

#define DLB_BINARY_FUNCTOR(F, fn)                                                             \
    struct F {                                                                                \
        template <typename C> static __device__ __forceinline__ C go(C x, C y) { return fn(x, y); } \
    };
DLB_BINARY_FUNCTOR(Add, op_add)
DLB_BINARY_FUNCTOR(Sub, op_sub)
DLB_BINARY_FUNCTOR(Mul, op_mul)
DLB_BINARY_FUNCTOR(Div, op_div)   // floating types only: integer true division computes in float
DLB_BINARY_FUNCTOR(Pow, op_pow)
DLB_BINARY_FUNCTOR(Maximum, op_maximum)
DLB_BINARY_FUNCTOR(Minimum, op_minimum)
DLB_BINARY_FUNCTOR(BitwiseAnd, op_bitwise_and)
DLB_BINARY_FUNCTOR(BitwiseOr, op_bitwise_or)
DLB_BINARY_FUNCTOR(BitwiseXor, op_bitwise_xor)
DLB_BINARY_FUNCTOR(DivFloor, op_div_floor)
DLB_BINARY_FUNCTOR(DivTrunc, op_div_trunc)
DLB_BINARY_FUNCTOR(Remainder, op_remainder)
DLB_BINARY_FUNCTOR(Fmod, op_fmod)
#undef DLB_BINARY_FUNCTOR

// mode: which operands are tensors.
enum { MODE_TENSORS = 0, MODE_SCALAR_RIGHT = 1, MODE_SCALAR_LEFT = 2 };

template <typename F, typename T>
__device__ __forceinline__ T combine(T x, T y, typename Tr<T>::C s, int mode) {
    typedef typename Tr<T>::C C;
    C cx = Tr<T>::load(x);
    if (mode == MODE_SCALAR_RIGHT) return Tr<T>::store(F::go(cx, s));
    if (mode == MODE_SCALAR_LEFT) return Tr<T>::store(F::go(s, cx));
    return Tr<T>::store(F::go(cx, Tr<T>::load(y)));
}

// The scalar arrives in the compute type (float for float16 and bfloat16),
// unrounded, as PyTorch passes it: the result is rounded once.
template <typename F, typename T>
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
            for (int k = 0; k < V; ++k) r.v[k] = combine<F, T>(x.v[k], y.v[k], s, mode);
            po[p] = r;
        }
        done = packs * V;
    }
    for (i64 i = done + start; i < n; i += step) {
        T y = mode == MODE_TENSORS ? b[i] : a[i];
        out[i] = combine<F, T>(a[i], y, s, mode);
    }
}

template <typename F, typename T>
__device__ void binary_strided(T* out, const T* a, const T* b, typename Tr<T>::C s, int mode, i64 n, const Indexer& ix) {
    for (i64 i = global_thread(); i < n; i += grid_threads()) {
        i64 off[3];
        offsets<3>(ix, i, off);
        T x = a[off[1]];
        T y = mode == MODE_TENSORS ? b[off[2]] : x;
        out[off[0]] = combine<F, T>(x, y, s, mode);
    }
}

#define DLB_BINARY(name, F, tag, T)                                                          \
    extern "C" __global__ void dlb_##name##_contig_##tag(                                     \
        T* out, const T* a, const T* b, Tr<T>::C scalar, int mode, i64 n, int wide) {         \
        binary_contig<F, T>(out, a, b, scalar, mode, n, wide);                               \
    }                                                                                         \
    extern "C" __global__ void dlb_##name##_strided_##tag(                                    \
        T* out, const T* a, const T* b, Tr<T>::C scalar, int mode, i64 n, Indexer ix) {       \
        binary_strided<F, T>(out, a, b, scalar, mode, n, ix);                                \
    }

// |x|: integers wrap (|-128| is -128 in int8), unsigned ones and bool are
// unchanged, floats lose their sign bit (-0.0, -inf and NaN included), so the
// bits are exactly the CPU backend's.
template <typename T> struct Abs {  // unsigned integers and bool: unchanged
    static __device__ __forceinline__ T go(T x) { return x; }
};
#define DLB_SIGNED_ABS(T)                                                    \
    template <> struct Abs<T> {                                              \
        static __device__ __forceinline__ T go(T x) {                        \
            typedef Tr<T>::C C;                                              \
            const C c = Tr<T>::load(x);                                      \
            return Tr<T>::store(c < 0 ? op_sub((C)0, c) : c);                \
        }                                                                    \
    };
DLB_SIGNED_ABS(i8)
DLB_SIGNED_ABS(i16)
DLB_SIGNED_ABS(i32)
DLB_SIGNED_ABS(i64)
#undef DLB_SIGNED_ABS
template <> struct Abs<f16> {
    static __device__ __forceinline__ f16 go(f16 x) { x.bits &= 0x7fffu; return x; }
};
template <> struct Abs<bf16> {
    static __device__ __forceinline__ bf16 go(bf16 x) { x.bits &= 0x7fffu; return x; }
};
template <> struct Abs<float> {
    static __device__ __forceinline__ float go(float x) { return __uint_as_float(__float_as_uint(x) & 0x7fffffffu); }
};
template <> struct Abs<double> {
    static __device__ __forceinline__ double go(double x) {
        return __longlong_as_double(__double_as_longlong(x) & 0x7fffffffffffffffll);
    }
};

// Unary functors take and return the stored type T (abs works on its bits);
// the math ones go through the compute type and round once.
struct AbsOp {
    template <typename T> static __device__ __forceinline__ T go(T x) { return Abs<T>::go(x); }
};
struct BitwiseNotOp {
    template <typename T> static __device__ __forceinline__ T go(T x) {
        return Tr<T>::store(op_bitwise_not(Tr<T>::load(x)));
    }
};

// out = op(src) (out may be src): a contiguous pair collapses to one
// dimension on the host.
template <typename F, typename T>
__device__ void unary_strided(T* out, const T* src, i64 n, const Indexer& ix) {
    for (i64 i = global_thread(); i < n; i += grid_threads()) {
        i64 off[2];
        offsets<2>(ix, i, off);
        out[off[0]] = F::go(src[off[1]]);
    }
}

#define DLB_UNARY(name, F, tag, T)                                                            \
    extern "C" __global__ void dlb_##name##_##tag(T* out, const T* src, i64 n, Indexer ix) {  \
        unary_strided<F, T>(out, src, n, ix);                                                 \
    }
#define DLB_ABS(tag, T) DLB_UNARY(abs, AbsOp, tag, T)

// The math functions, for floating dtypes (integers promote on the host):
// float16 and bfloat16 compute in float and round once.
__device__ __forceinline__ float op_exp(float x) { return expf(x); }
__device__ __forceinline__ double op_exp(double x) { return exp(x); }
#define DLB_MATH_FUNCTOR(F, fn)                                                               \
    struct F {                                                                                \
        template <typename T> static __device__ __forceinline__ T go(T x) {                  \
            return Tr<T>::store(fn(Tr<T>::load(x)));                                          \
        }                                                                                     \
    };
__device__ __forceinline__ float op_log(float x) { return logf(x); }
__device__ __forceinline__ double op_log(double x) { return log(x); }
__device__ __forceinline__ float op_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double op_sqrt(double x) { return sqrt(x); }
DLB_MATH_FUNCTOR(Exp, op_exp)
DLB_MATH_FUNCTOR(Sqrt, op_sqrt)
DLB_MATH_FUNCTOR(Log, op_log)

// Every numeric dtype: add, sub, mul, pow, abs, the rounding divisions and
// remainders (true division only for floats).
#define DLB_ARITH(tag, T) DLB_BINARY(add, Add, tag, T) DLB_BINARY(sub, Sub, tag, T) DLB_BINARY(mul, Mul, tag, T) \
    DLB_BINARY(pow, Pow, tag, T) DLB_ABS(tag, T) DLB_BINARY(maximum, Maximum, tag, T) \
    DLB_BINARY(minimum, Minimum, tag, T) DLB_BINARY(div_floor, DivFloor, tag, T) \
    DLB_BINARY(div_trunc, DivTrunc, tag, T) DLB_BINARY(remainder, Remainder, tag, T) \
    DLB_BINARY(fmod, Fmod, tag, T)
// Integer and bool dtypes only.
#define DLB_BITWISE(tag, T) DLB_BINARY(bitwise_and, BitwiseAnd, tag, T) \
    DLB_BINARY(bitwise_or, BitwiseOr, tag, T) DLB_BINARY(bitwise_xor, BitwiseXor, tag, T) \
    DLB_UNARY(bitwise_not, BitwiseNotOp, tag, T)
// Floating dtypes only.
#define DLB_FLOAT_OPS(tag, T) DLB_BINARY(div, Div, tag, T) DLB_UNARY(exp, Exp, tag, T) \
    DLB_UNARY(sqrt, Sqrt, tag, T) \
    DLB_UNARY(log, Log, tag, T)

#if DLB_WANT(b8)
DLB_BINARY(add, Add, b8, b8)
DLB_BINARY(mul, Mul, b8, b8)
DLB_BINARY(pow, Pow, b8, b8)
DLB_ABS(b8, b8)
DLB_BINARY(maximum, Maximum, b8, b8)
DLB_BINARY(minimum, Minimum, b8, b8)
DLB_BITWISE(b8, b8)
#endif
#if DLB_WANT(u8)
DLB_ARITH(u8, u8)
DLB_BITWISE(u8, u8)
#endif
#if DLB_WANT(i8)
DLB_ARITH(i8, i8)
DLB_BITWISE(i8, i8)
#endif
#if DLB_WANT(i16)
DLB_ARITH(i16, i16)
DLB_BITWISE(i16, i16)
#endif
#if DLB_WANT(i32)
DLB_ARITH(i32, i32)
DLB_BITWISE(i32, i32)
#endif
#if DLB_WANT(i64)
DLB_ARITH(i64, i64)
DLB_BITWISE(i64, i64)
#endif
#if DLB_WANT(u16)
DLB_ARITH(u16, u16)
DLB_BITWISE(u16, u16)
#endif
#if DLB_WANT(u32)
DLB_ARITH(u32, u32)
DLB_BITWISE(u32, u32)
#endif
#if DLB_WANT(u64)
DLB_ARITH(u64, u64)
DLB_BITWISE(u64, u64)
#endif
#if DLB_WANT(f16)
DLB_ARITH(f16, f16)
DLB_FLOAT_OPS(f16, f16)
#endif
#if DLB_WANT(bf16)
DLB_ARITH(bf16, bf16)
DLB_FLOAT_OPS(bf16, bf16)
#endif
#if DLB_WANT(f32)
DLB_ARITH(f32, float)
DLB_FLOAT_OPS(f32, float)
#endif
#if DLB_WANT(f64)
DLB_ARITH(f64, double)
DLB_FLOAT_OPS(f64, double)
#endif
