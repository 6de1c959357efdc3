//! `exp` and `ln` for float32 and float64 that the compiler vectorises.
//!
//! libm's functions are calls, one element at a time; torch's loops call
//! SLEEF's or MKL's vector kernels and ran 15x faster. These are the
//! fdlibm/musl algorithms (a Cody-Waite range reduction and a short
//! polynomial or rational kernel; float32 `exp` a fitted polynomial instead
//! of the rational kernel, whose division bounded the loop; float64 `exp`
//! table-driven, in [`super::exp64`]), written without branches: special inputs
//! are selected afterwards, the scale by `2^k` is two exact multiplications
//! (so subnormal results round once), and rounding to the nearest integer is
//! the `1.5 * 2^mantissa` trick. Inside a [`twin!`](super::isa::twin) loop
//! they become AVX2 or AVX-512 code. Multiply-adds are written as
//! `mul_add` (fused on every CPU, a software `fma` on the baseline copy) and
//! nothing else is contracted, so every copy gives the same bits (dense
//! float32 `ln` on AVX-512 runs `log32.rs`'s table kernel instead: other
//! bits, 0.754 ulp). Accuracy: within 1 ulp of the
//! exact value (checked against float64 and exact references in this
//! module's tests and `tests/python/test_math_accuracy.py`; float64 `exp`
//! measured within 0.63 ulp on normal results, `ln` 0.73); NumPy's own
//! float32 SIMD `exp` and `log` allow up to 2.52 and 3.83 ulp.

use super::exp64;
#[cfg(all(target_arch = "x86_64", not(miri)))]
use super::log32;
use super::narrow::{NarrowSlice, through_f32};
use super::parallel::{Shared, for_elements};
use crate::backend::UnaryOp;
use crate::{DType, Tensor};

/// The vectorisable kernels, per float type (the loops reach them through
/// `Arith::exp` and `Arith::log`, float16 and bfloat16 through float32).
pub(crate) trait VMath: Copy + PartialOrd {
    /// `e^x`: `+inf` past the largest finite result, `+0` below the smallest
    /// subnormal, NaN for NaN.
    fn exp_v(self) -> Self;
    /// Where [`exp_plain`](Self::exp_plain) holds: `e^x` a normal number.
    const EXP_PLAIN: (Self, Self);
    /// [`exp_v`](Self::exp_v) for `x` within [`EXP_PLAIN`](Self::EXP_PLAIN),
    /// the same bits: no clamp, no NaN select, and the scale by `2^k` one
    /// integer add to the exponent, where `exp_v`'s two multiplications
    /// round subnormal results once (a third fewer instructions).
    fn exp_plain(self) -> Self;
    /// `ln x`: NaN below zero and for NaN, `-inf` at `±0`, `+inf` at `+inf`.
    fn ln_v(self) -> Self;
    /// Where [`ln_plain`](Self::ln_plain) holds: `x` positive, normal and finite.
    const LN_PLAIN: (Self, Self);
    /// [`ln_v`](Self::ln_v) for `x` within [`LN_PLAIN`](Self::LN_PLAIN), the
    /// same bits: no scaling of subnormals, no special values.
    fn ln_plain(self) -> Self;
}

impl VMath for f32 {
    #[inline(always)]
    fn exp_v(self) -> f32 {
        let x = self;
        // Beyond [-104, 89] the result is 0 or inf already; NaN stays NaN.
        let (y, t) = exp_f32_parts(x.clamp(-104.0, 89.0));
        let k = (t.to_bits() as i32).wrapping_sub(ROUND_F32.to_bits() as i32);
        let y = y * pow2_f32(k >> 1) * pow2_f32(k - (k >> 1));
        if x.is_nan() { x } else { y }
    }

    const EXP_PLAIN: (f32, f32) = (-87.0, 88.0);

    #[inline(always)]
    fn exp_plain(self) -> f32 {
        let (y, t) = exp_f32_parts(self);
        // t's low bits hold k: shifted up, the 2^k exponent's add to y's.
        f32::from_bits(y.to_bits().wrapping_add(t.to_bits() << 23))
    }

    #[inline(always)]
    fn ln_v(self) -> f32 {
        let x = self;
        // Subnormals scaled into the normal range first.
        let sub = x < f32::MIN_POSITIVE;
        let xs = if sub { x * 33_554_432.0 } else { x }; // 2^25
        special_ln(
            x,
            ln_f32_normal(xs, if sub { -25 } else { 0 }),
            f32::INFINITY,
            f32::NAN,
        )
    }

    const LN_PLAIN: (f32, f32) = (f32::MIN_POSITIVE, f32::MAX);

    #[inline(always)]
    fn ln_plain(self) -> f32 {
        ln_f32_normal(self, 0)
    }
}

impl VMath for f64 {
    #[inline(always)]
    fn exp_v(self) -> f64 {
        let x = self;
        let (y, m) = exp64::parts(x.clamp(-746.0, 710.0));
        let y = y * pow2_f64(m >> 1) * pow2_f64(m - (m >> 1));
        if x.is_nan() { x } else { y }
    }

    const EXP_PLAIN: (f64, f64) = (-708.0, 709.0);

    #[inline(always)]
    fn exp_plain(self) -> f64 {
        let (y, m) = exp64::parts(self);
        f64::from_bits(y.to_bits().wrapping_add((m << 52) as u64))
    }

    #[inline(always)]
    fn ln_v(self) -> f64 {
        let x = self;
        let sub = x < f64::MIN_POSITIVE;
        let xs = if sub { x * 18_014_398_509_481_984.0 } else { x }; // 2^54
        special_ln(
            x,
            ln_f64_normal(xs, if sub { -54 } else { 0 }),
            f64::INFINITY,
            f64::NAN,
        )
    }

    const LN_PLAIN: (f64, f64) = (f64::MIN_POSITIVE, f64::MAX);

    #[inline(always)]
    fn ln_plain(self) -> f64 {
        ln_f64_normal(self, 0)
    }
}

/// `ln(x) + k0 ln 2` for a positive normal float32 `x` (fdlibm's kernel:
/// `x = 2^k (1 + f)`, `1 + f` in [sqrt(2)/2, sqrt(2)), and a polynomial in
/// `s = f / (2 + f)`).
#[inline(always)]
fn ln_f32_normal(x: f32, k0: i32) -> f32 {
    const LN2_HI: f32 = f32::from_bits(0x3f31_7180);
    const LN2_LO: f32 = f32::from_bits(0x3717_f7d1);
    const LG1: f32 = 0.666_666_6;
    const LG2: f32 = 0.400_009_72;
    const LG3: f32 = 0.284_987_87;
    const LG4: f32 = 0.242_790_79;
    let ix = x.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let k = k0 + (ix >> 23) as i32 - 0x7f;
    let m = f32::from_bits((ix & 0x007f_ffff) + 0x3f35_04f3);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * LG4.mul_add(w, LG2);
    let t2 = z * LG3.mul_add(w, LG1);
    let hfsq = 0.5 * f * f;
    let dk = k as f32;
    dk.mul_add(LN2_HI, s.mul_add(hfsq + t2 + t1, dk * LN2_LO) - hfsq + f)
}

/// [`ln_f32_normal`] for float64.
#[inline(always)]
fn ln_f64_normal(x: f64, k0: i64) -> f64 {
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    const LG1: f64 = 6.666_666_666_666_735e-1;
    const LG2: f64 = 3.999_999_999_940_942e-1;
    const LG3: f64 = 2.857_142_874_366_239e-1;
    const LG4: f64 = 2.222_219_843_214_978_4e-1;
    const LG5: f64 = 1.818_357_216_161_805e-1;
    const LG6: f64 = 1.531_383_769_920_937_3e-1;
    const LG7: f64 = 1.479_819_860_511_658_6e-1;
    let ix = x.to_bits().wrapping_add((0x3ff0_0000 - 0x3fe6_a09e) << 32);
    let k = k0 + (ix >> 52) as i64 - 0x3ff;
    let m = f64::from_bits((ix & 0x000f_ffff_ffff_ffff) + (0x3fe6_a09e << 32));
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * LG6.mul_add(w, LG4).mul_add(w, LG2);
    let t2 = z * LG7.mul_add(w, LG5).mul_add(w, LG3).mul_add(w, LG1);
    let hfsq = 0.5 * f * f;
    let dk = k as f64;
    dk.mul_add(LN2_HI, s.mul_add(hfsq + t2 + t1, dk * LN2_LO) - hfsq + f)
}

/// `out = exp(src)` or `ln(src)` when both are dense floats (row-major
/// without gaps, or one tensor): through [`run`] (float16 and bfloat16 a
/// float32 block at a time, [`through_f32`]: the block kernel's fast path
/// where the per-element loop ran the full one), split across threads as
/// the elementwise loops are. False (nothing written) otherwise. `src` is
/// walkable and of `out`'s dtype, `out` writable and either `src` or apart
/// from it.
pub(crate) fn unary_dense(out: &Tensor, src: &Tensor, op: UnaryOp) -> bool {
    if !matches!(op, UnaryOp::Exp | UnaryOp::Log) || !out.is_contiguous() || !src.is_contiguous() {
        return false;
    }
    match src.dtype() {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        DType::F64 if op == UnaryOp::Exp && super::isa::avx512() => {
            split_dense::<f64>(out, src, |s, d, n| {
                // SAFETY: the CPU has AVX-512 (checked); split_dense hands
                // n elements each, the same or apart, the output range its own.
                unsafe { exp64::avx512(s, d, n, f64::EXP_PLAIN, f64::exp_v) }
            })
        }
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        DType::F32 if op == UnaryOp::Log && super::isa::avx512() => {
            split_dense::<f32>(out, src, |s, d, n| {
                // SAFETY: as for float64 exp.
                unsafe { log32::avx512(s, d, n, f32::LN_PLAIN, f32::ln_v) }
            })
        }
        DType::F32 => unary_dense_typed::<f32>(out, src, op),
        DType::F64 => unary_dense_typed::<f64>(out, src, op),
        // `run`'s kernels, not log32's: the bits every instruction set gives.
        DType::F16 => through_f32_typed::<half::f16>(out, src, op),
        DType::BF16 => through_f32_typed::<half::bf16>(out, src, op),
        _ => return false,
    }
    true
}

/// [`unary_dense`] for one float type.
fn unary_dense_typed<T: VMath>(out: &Tensor, src: &Tensor, op: UnaryOp) {
    split_dense::<T>(out, src, |s, d, n| {
        // SAFETY: split_dense hands n elements each, the same or apart, the
        // output range this call's alone.
        unsafe { run_op(s, d, n, op) }
    });
}

/// [`unary_dense`] for a narrow float, through float32 blocks.
fn through_f32_typed<H: NarrowSlice>(out: &Tensor, src: &Tensor, op: UnaryOp) {
    split_dense::<H>(out, src, |s, d, n| {
        // SAFETY: as for unary_dense_typed; each block is one buffer, in place.
        unsafe { through_f32(s, d, n, |w| run_op(w.as_ptr(), w.as_mut_ptr(), w.len(), op)) }
    });
}

/// [`run`] of `exp` or `ln`.
///
/// # Safety
/// As for [`run`].
#[inline(always)]
unsafe fn run_op<T: VMath>(s: *const T, d: *mut T, n: usize, op: UnaryOp) {
    // SAFETY: the caller's promise, passed on.
    unsafe {
        if op == UnaryOp::Exp {
            run(s, d, n, T::EXP_PLAIN, T::exp_plain, T::exp_v)
        } else {
            run(s, d, n, T::LN_PLAIN, T::ln_plain, T::ln_v)
        }
    }
}

/// Calls `kernel(src, dst, n)` over consecutive ranges of `out` and `src`'s
/// elements, split across threads as the elementwise loops are: the one
/// split of the dense unary kernels (these and [`super::sqrt`]'s). `out`
/// and `src` are dense (row-major without gaps) of `T`, `src` walkable,
/// `out` writable and either `src` or apart from it; so each call's
/// pointers address `n` aligned elements, the same or apart, and its
/// output range is its own.
pub(super) fn split_dense<T>(
    out: &Tensor,
    src: &Tensor,
    kernel: impl Fn(*const T, *mut T, usize) + Sync,
) {
    let (po, ps) = (
        Shared(out.data_ptr().cast::<T>()),
        Shared(src.data_ptr().cast::<T>().cast_const()),
    );
    for_elements::<T>(out.numel(), |start, end| {
        let (po, ps) = (po, ps);
        // SAFETY: both hold numel elements of T (above); start..end lies
        // within them.
        let (s, d) = unsafe { (ps.0.add(start), po.0.add(start)) };
        kernel(s, d, end - start)
    });
}

/// The elements [`run`] checks at a time.
const RUN: usize = 64;

super::isa::twin! {
    /// `dst[i] = full(src[i])` for `n` elements, [`RUN`] at a time: by
    /// `plain` where all of them lie within `range` (`plain` gives `full`'s
    /// bits there, with less work: [`VMath::exp_plain`], [`VMath::ln_plain`]).
    ///
    /// # Safety
    /// `src` and `dst` each address `n` aligned elements, which are either
    /// the same (in place) or apart; the output is exclusively ours. For
    /// `n = 0` they may be anything (an empty tensor's may be null).
    pub(crate) unsafe fn run[T: VMath](
        src: *const T, dst: *mut T, n: usize, range: (T, T), plain: impl Fn(T) -> T, full: impl Fn(T) -> T,
    ) => run_body;
}

/// [`run`] as built.
///
/// # Safety
/// As for [`run`].
#[inline(always)]
unsafe fn run_body<T: VMath>(
    src: *const T,
    dst: *mut T,
    n: usize,
    (lo, hi): (T, T),
    plain: impl Fn(T) -> T,
    full: impl Fn(T) -> T,
) {
    if n == 0 {
        return; // no slice may be made of a null pointer
    }
    // `&`, not `&&`: a test of every element, which vectorises.
    let inside = |x: &[T]| x.iter().fold(true, |ok, &v| ok & (v >= lo) & (v <= hi));
    // Slices, so the loops vectorise (through a [T; RUN] copy they did not);
    // in place, one mutable slice.
    if src == dst.cast_const() {
        // SAFETY: the caller's promise: n elements, exclusively ours.
        let d = unsafe { std::slice::from_raw_parts_mut(dst, n) };
        for c in d.chunks_mut(RUN) {
            if inside(c) {
                c.iter_mut().for_each(|v| *v = plain(*v));
            } else {
                c.iter_mut().for_each(|v| *v = full(*v));
            }
        }
    } else {
        // SAFETY: the caller's promise: n elements each, apart.
        let (s, d) = unsafe {
            (
                std::slice::from_raw_parts(src, n),
                std::slice::from_raw_parts_mut(dst, n),
            )
        };
        for (s, d) in s.chunks(RUN).zip(d.chunks_mut(RUN)) {
            if inside(s) {
                d.iter_mut().zip(s).for_each(|(d, &v)| *d = plain(v));
            } else {
                d.iter_mut().zip(s).for_each(|(d, &v)| *d = full(v));
            }
        }
    }
}

/// `1.5 * 2^23`: added to a float32, rounds it to an integer (ties to even)
/// held in the low bits of the sum's mantissa.
const ROUND_F32: f32 = 12_582_912.0;

/// `e^x` of a float32 within [-104, 89] as `y * 2^k`, `y` in [0.7, 1.42];
/// `k` is the low bits of `t` less [`ROUND_F32`]'s.
#[inline(always)]
fn exp_f32_parts(x: f32) -> (f32, f32) {
    const LN2_HI: f32 = f32::from_bits(0x3f31_7200); // 16 significant bits: k * LN2_HI is exact
    const LN2_LO: f32 = 1.428_606_8e-6;
    // exp(r) = 1 + r + r^2 P(r) on [-ln 2 / 2, ln 2 / 2]: P fitted to
    // a relative error of 3.1e-9 (weighted least squares by Lawson's
    // iteration over 4000 Chebyshev nodes). A polynomial, not fdlibm's
    // rational kernel: no division, which bounded the loop.
    const P: [f32; 5] = [
        f32::from_bits(0x3eff_fffe), // 0.49999994
        f32::from_bits(0x3e2a_aa49), // 0.16666521
        f32::from_bits(0x3d2a_ac79), // 0.04166839
        f32::from_bits(0x3c09_1d00), // 0.008368731
        f32::from_bits(0x3ab5_1202), // 0.0013814571
    ];
    // Fused multiply-adds (`mul_add` rounds once on every CPU, so each
    // instruction-set copy gives the same bits): a fifth fewer
    // instructions in a loop bound by them.
    let t = x.mul_add(std::f32::consts::LOG2_E, ROUND_F32);
    let kf = t - ROUND_F32; // round(x / ln 2), ties to even
    let hi = (-kf).mul_add(LN2_HI, x); // exact: k * LN2_HI is
    let lo = kf * LN2_LO;
    let r = hi - lo;
    let p = P[4]
        .mul_add(r, P[3])
        .mul_add(r, P[2])
        .mul_add(r, P[1])
        .mul_add(r, P[0]);
    // The linear term from hi and lo apart (r rounded them together).
    (1.0 + (hi + (r * r).mul_add(p, -lo)), t)
}

/// `2^k` for `k` in the normal exponent range of f32.
#[inline(always)]
fn pow2_f32(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) as u32) << 23)
}

/// `2^k` for `k` in the normal exponent range of f64.
#[inline(always)]
pub(super) fn pow2_f64(k: i64) -> f64 {
    f64::from_bits((k.wrapping_add(1023) as u64) << 52)
}

/// `ln`'s value at the inputs the kernel does not cover: NaN below zero
/// and for NaN, `-inf` at zero, `+inf` at `+inf`; `y` elsewhere.
#[inline(always)]
fn special_ln<F: PartialOrd + Copy + std::ops::Neg<Output = F> + Default>(
    x: F,
    y: F,
    inf: F,
    nan: F,
) -> F {
    let zero = F::default();
    if x == zero {
        -inf
    } else if x == inf {
        x
    } else if x > zero {
        y
    } else {
        nan // below zero, or NaN
    }
}

#[cfg(test)]
mod tests {
    use super::{VMath, run};

    /// `run` of exp and ln on runs inside their plain ranges, across the
    /// edges and past them (NaN, the infinities, zeros, subnormal and
    /// overflowing results), apart and in place, with a tail: the bits of
    /// `exp_v` and `ln_v` everywhere.
    #[test]
    fn runs_give_the_full_kernels_bits() {
        /// A plain range, the plain kernel and the full one.
        type Pair<T> = ((T, T), fn(T) -> T, fn(T) -> T);
        fn check<T: VMath + std::fmt::Debug>(xs: Vec<T>, bits: impl Fn(T) -> u64) {
            let kernels: [Pair<T>; 2] = [
                (T::EXP_PLAIN, T::exp_plain, T::exp_v),
                (T::LN_PLAIN, T::ln_plain, T::ln_v),
            ];
            for (range, plain, full) in kernels {
                let want: Vec<u64> = xs.iter().map(|&x| bits(full(x))).collect();
                let mut out = xs.clone();
                // SAFETY: both hold xs.len() elements, apart.
                unsafe { run(xs.as_ptr(), out.as_mut_ptr(), xs.len(), range, plain, full) };
                assert_eq!(out.iter().map(|&y| bits(y)).collect::<Vec<_>>(), want);
                let mut inplace = xs.clone();
                let p = inplace.as_mut_ptr();
                // SAFETY: one buffer of xs.len() elements, in place.
                unsafe { run(p.cast_const(), p, xs.len(), range, plain, full) };
                assert_eq!(inplace.iter().map(|&y| bits(y)).collect::<Vec<_>>(), want);
                // An empty tensor's pointer may be null (torch's is).
                // SAFETY: nothing to address.
                unsafe {
                    run(
                        std::ptr::null(),
                        std::ptr::null_mut(),
                        0,
                        range,
                        plain,
                        full,
                    )
                };
            }
        }
        let n = if cfg!(miri) { 200 } else { 3001 };
        let grid = |lo: f64, hi: f64| (0..n).map(move |i| lo + (hi - lo) * i as f64 / n as f64);
        let specials = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            f64::MAX,
            1e-310,
        ];
        let mut xs: Vec<f64> = grid(-20.0, 20.0).chain(grid(-750.0, 712.0)).collect();
        xs.extend_from_slice(&specials);
        xs.extend(grid(-708.0, 709.0).take(130));
        xs.extend(grid(0.0, 1e-306).take(130)); // subnormal and normal logs
        check(xs, f64::to_bits);
        let mut xs: Vec<f32> = grid(-20.0, 20.0)
            .chain(grid(-106.0, 90.0))
            .map(|x| x as f32)
            .collect();
        xs.extend(specials.iter().map(|&x| x as f32));
        xs.extend(grid(-87.0, 88.0).take(130).map(|x| x as f32));
        xs.extend(grid(0.0, 1e-36).take(130).map(|x| x as f32));
        check(xs, |y| y.to_bits() as u64);
    }

    /// Distance in ulps between `got` and the exact value `want` (given
    /// in a wider type), in units of the float type's spacing at `want`.
    fn ulps32(got: f32, want: f64) -> f64 {
        if got == want as f32 || (got.is_nan() && want.is_nan()) {
            return 0.0; // the exact value rounded (to infinity or zero too)
        }
        if !want.is_finite() || !got.is_finite() {
            return f64::INFINITY;
        }
        let w = want
            .abs()
            .max(f32::MIN_POSITIVE as f64 * f32::EPSILON as f64);
        let spacing = if w < f32::MIN_POSITIVE as f64 {
            (f32::MIN_POSITIVE as f64) * (f32::EPSILON as f64)
        } else {
            2f64.powi(w.log2().floor() as i32) * f32::EPSILON as f64
        };
        (got as f64 - want).abs() / spacing
    }

    /// Every 97th float32 bit pattern (44 million values, every exponent).
    fn sample32() -> impl Iterator<Item = f32> {
        (0..u32::MAX / 97).map(|i| f32::from_bits(i.wrapping_mul(97)))
    }

    #[test]
    #[cfg_attr(miri, ignore)] // millions of values
    fn f32_exp_and_ln_are_within_one_ulp() {
        let (mut worst_exp, mut worst_ln) = (0f64, 0f64);
        for x in sample32().step_by(if cfg!(debug_assertions) { 16 } else { 1 }) {
            worst_exp = worst_exp.max(ulps32(x.exp_v(), (x as f64).exp()));
            worst_ln = worst_ln.max(ulps32(x.ln_v(), (x as f64).ln()));
        }
        eprintln!("worst: exp {worst_exp} ln {worst_ln}");
        assert!(worst_exp < 1.0, "exp: {worst_exp} ulp");
        assert!(worst_ln < 1.0, "ln: {worst_ln} ulp");
    }

    /// float64 has no wider type here: the kernels are compared with
    /// glibc's (correctly rounded nearly always), within 1 ulp.
    #[test]
    #[cfg_attr(miri, ignore)] // millions of values
    fn f64_exp_and_ln_are_within_one_ulp_of_libm() {
        let ulp_apart = |a: f64, b: f64| {
            a == b
                || (a.is_nan() && b.is_nan())
                || (a.is_finite() && b.is_finite() && a.to_bits().abs_diff(b.to_bits()) <= 1)
        };
        let step = if cfg!(debug_assertions) {
            1 << 44
        } else {
            1 << 40
        };
        for bits in (0..u64::MAX - step).step_by(step as usize) {
            let x = f64::from_bits(bits.wrapping_add(bits >> 21)); // varied mantissas
            assert!(
                ulp_apart(x.exp_v(), x.exp()),
                "exp({x:e}): {:e} vs {:e}",
                x.exp_v(),
                x.exp()
            );
            assert!(
                ulp_apart(x.ln_v(), x.ln()),
                "ln({x:e}): {:e} vs {:e}",
                x.ln_v(),
                x.ln()
            );
        }
        for i in 0..200_000 {
            let x = -750.0 + 1460.0 * (i as f64) / 200_000.0 + 1e-7 * (i % 7) as f64;
            assert!(
                ulp_apart(x.exp_v(), x.exp()),
                "exp({x:e}): {:e} vs {:e}",
                x.exp_v(),
                x.exp()
            );
        }
    }

    /// The special values, written out (Miri perturbs std's float
    /// functions, so they are not the reference here).
    #[test]
    fn specials_as_ieee() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
        let exp = [
            (0.0, 1.0),
            (-0.0, 1.0),
            (inf, inf),
            (-inf, 0.0),
            (nan, nan),
            (709.79, inf),
            (-745.14, 0.0),
            (f64::MAX, inf),
            (f64::MIN, 0.0),
        ];
        let ln = [
            (0.0, -inf),
            (-0.0, -inf),
            (1.0, 0.0),
            (-1.0, nan),
            (inf, inf),
            (-inf, nan),
            (nan, nan),
            (f64::MIN, nan),
        ];
        for (x, want) in exp {
            assert!(same(x.exp_v(), want), "exp({x}) = {}", x.exp_v());
            let y = x as f32;
            assert!(same(y.exp_v() as f64, want), "expf({y}) = {}", y.exp_v());
        }
        for (x, want) in ln {
            assert!(same(x.ln_v(), want), "ln({x}) = {}", x.ln_v());
            assert!(
                same((x as f32).ln_v() as f64, want),
                "lnf({x}) = {}",
                (x as f32).ln_v()
            );
        }
        for (y, want) in [
            (88.72284f32, f32::INFINITY),
            (-103.98, 0.0),
            (f32::MAX, f32::INFINITY),
        ] {
            assert_eq!(y.exp_v(), want, "expf({y})");
        }
    }
}
