//! Arithmetic per element type, with PyTorch's semantics: integers wrap,
//! half types compute in f32 and round, bool add/mul are or/and.

use super::narrow::{CHUNK, ChunkIsa, NarrowSlice};
use super::rounding::{self, FloatDivision, IntQuotient};
use super::vmath::VMath;
use super::vpow;
use crate::Element;
pub(crate) use crate::backend::{BinaryOp, CompareOp};
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

/// Element arithmetic. `div` is only reached for floating and complex types
/// (true division promotes integers to float first).
pub trait Arith: Element + PartialEq {
    /// The type the loops compute in: float32 for float16 and bfloat16
    /// (converted a block at a time and rounded once), else the type itself.
    type C: Arith;
    /// Whether [`Self::C`] differs from the type (the loops then work in blocks).
    const WIDE: bool = false;
    fn widen(self) -> Self::C;
    fn narrow(c: Self::C) -> Self;
    /// `dst[i] = src[i].widen()` (`narrow/`'s vectorized conversions for the narrow floats).
    #[inline(always)]
    fn widen_slice(src: &[Self], dst: &mut [Self::C]) {
        dst.iter_mut().zip(src).for_each(|(d, &s)| *d = s.widen());
    }
    /// `dst[i] = narrow(src[i])`.
    #[inline(always)]
    fn narrow_slice(src: &[Self::C], dst: &mut [Self]) {
        dst.iter_mut()
            .zip(src)
            .for_each(|(d, &s)| *d = Self::narrow(s));
    }
    /// A chunk widened by value (see [`NarrowSlice::widen_chunk`]).
    ///
    /// # Safety
    /// The CPU has what `isa` names.
    #[inline(always)]
    unsafe fn widen_chunk(src: &[Self; CHUNK], isa: ChunkIsa) -> [Self::C; CHUNK] {
        let _ = isa;
        src.map(Self::widen)
    }
    /// A chunk rounded into `dst` (see [`NarrowSlice::narrow_chunk`]).
    ///
    /// # Safety
    /// As for [`widen_chunk`](Self::widen_chunk).
    #[inline(always)]
    unsafe fn narrow_chunk(src: [Self::C; CHUNK], dst: &mut [Self; CHUNK], isa: ChunkIsa) {
        let _ = isa;
        *dst = src.map(Self::narrow);
    }
    fn add(self, rhs: Self) -> Self;
    fn sub(self, rhs: Self) -> Self;
    fn mul(self, rhs: Self) -> Self;
    fn div(self, rhs: Self) -> Self;
    fn neg(self) -> Self;
    fn pow(self, rhs: Self) -> Self;
    /// `r[i] = x[i].pow(y[i])` over the slices' common length: a block of
    /// the costly-kernel loop, which a type may run in explicit vector code
    /// with `pow`'s bits.
    #[inline(always)]
    fn pow_slice(x: &[Self], y: &[Self], r: &mut [Self]) {
        for ((r, &x), &y) in r.iter_mut().zip(x).zip(y) {
            *r = x.pow(y);
        }
    }
    /// `min(x, y)` elementwise: NaN wins, as PyTorch; integers plainly, bools `and`.
    fn minimum(self, rhs: Self) -> Self;
    /// `max(x, y)` elementwise: NaN wins, as PyTorch; integers plainly, bools `or`.
    fn maximum(self, rhs: Self) -> Self;
    /// `|x|` for real types (complex magnitudes are computed apart: they
    /// change the dtype).
    fn abs(self) -> Self;
    /// `ln x` (NaN below 0, -inf at 0), for floating and complex types (integers promote first).
    #[inline(always)]
    fn log(self) -> Self {
        unreachable!("integers and bools compute log in float")
    }
    /// `√x` (NaN below 0, -0 for -0), for floating and complex types (integers promote first).
    #[inline(always)]
    fn sqrt(self) -> Self {
        unreachable!("integers and bools compute sqrt in float")
    }
    /// `e^x`, for floating and complex types (integers promote first).
    #[inline(always)]
    fn exp(self) -> Self {
        unreachable!("integers and bools compute exp in float")
    }
    /// `x & y`: integers and bools only (`Promotion::Integral` refuses the
    /// other dtypes before a loop runs).
    #[inline(always)]
    fn bitwise_and(self, _: Self) -> Self {
        unreachable!("floats have no bitwise ops")
    }
    /// `x | y`, as [`bitwise_and`](Self::bitwise_and).
    #[inline(always)]
    fn bitwise_or(self, _: Self) -> Self {
        unreachable!("floats have no bitwise ops")
    }
    /// `x ^ y`, as [`bitwise_and`](Self::bitwise_and).
    #[inline(always)]
    fn bitwise_xor(self, _: Self) -> Self {
        unreachable!("floats have no bitwise ops")
    }
    /// `~x` (`not` for bools), as [`bitwise_and`](Self::bitwise_and).
    #[inline(always)]
    fn bitwise_not(self) -> Self {
        unreachable!("floats have no bitwise ops")
    }
    /// `⌊x / y⌋` (PyTorch's `div_floor`), for integers and real floats
    /// (`Promotion::Real` refuses bools and complex numbers; the ops layer a
    /// zero integer divisor, which gives 0 or x here rather than a panic;
    /// `rounding.rs` computes both).
    #[inline(always)]
    fn floor_divide(self, _: Self) -> Self {
        unreachable!("bools and complex numbers have no rounding division")
    }
    /// `x / y` rounded toward zero, as [`floor_divide`](Self::floor_divide).
    #[inline(always)]
    fn div_trunc(self, _: Self) -> Self {
        unreachable!("bools and complex numbers have no rounding division")
    }
    /// `x % y` with the divisor's sign (Python's), as [`floor_divide`](Self::floor_divide).
    #[inline(always)]
    fn remainder(self, _: Self) -> Self {
        unreachable!("bools and complex numbers have no remainder")
    }
    /// `x % y` with the dividend's sign (C's `fmod`), as [`floor_divide`](Self::floor_divide).
    #[inline(always)]
    fn fmod(self, _: Self) -> Self {
        unreachable!("bools and complex numbers have no remainder")
    }
    /// `r[i] = x[i] op y[i]` for `op` one of `DivFloor`, `Remainder`,
    /// `Fmod` over the slices' common length: a block of the costly-kernel
    /// loop, which float32 and float64 run in two passes
    /// (`rounding::block`: fmod's fast path in every lane, vectorized, then
    /// libm's where it did not apply).
    #[inline(always)]
    fn rounding_slice(op: BinaryOp, x: &[Self], y: &[Self], r: &mut [Self]) {
        for ((r, &x), &y) in r.iter_mut().zip(x).zip(y) {
            *r = match op {
                BinaryOp::DivFloor => x.floor_divide(y),
                BinaryOp::Remainder => x.remainder(y),
                _ => x.fmod(y),
            };
        }
    }
    /// `self < other`; never asked of complex numbers (they have no order).
    fn less(self, other: Self) -> bool;
    /// An integer as float32, to nearest (as the cast to float32 gives it),
    /// for true division's loop.
    #[inline(always)]
    fn as_f32(self) -> f32 {
        unreachable!("only integers are converted while dividing")
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        false
    }
}

/// Integer power by squaring, wrapping. A negative exponent gives 0 except
/// for bases 1 and -1 (PyTorch's integer `pow`).
macro_rules! int_pow {
    ($base:expr, $exp:expr, $one:expr) => {{
        let (base, exp) = ($base, $exp);
        #[allow(unused_comparisons)]
        if exp < 0 {
            if base == $one {
                $one
            } else if base.wrapping_add($one) == 0 {
                if exp.wrapping_rem(2) == 0 { $one } else { base }
            } else {
                0
            }
        } else {
            let (mut result, mut b, mut e): (Self, Self, Self) = ($one, base, exp);
            while e > 0 {
                if e & 1 == 1 {
                    result = result.wrapping_mul(b);
                }
                b = b.wrapping_mul(b);
                e >>= 1;
            }
            result
        }
    }};
}

macro_rules! int_arith {
    ($($t:ty $(=> $rounding:expr)?),*) => {$(
        impl Arith for $t {
            type C = Self;
            #[inline(always)] fn widen(self) -> Self { self }
            #[inline(always)] fn narrow(c: Self) -> Self { c }
            #[inline(always)] fn add(self, r: Self) -> Self { self.wrapping_add(r) }
            #[inline(always)] fn sub(self, r: Self) -> Self { self.wrapping_sub(r) }
            #[inline(always)] fn mul(self, r: Self) -> Self { self.wrapping_mul(r) }
            #[inline(always)] fn div(self, r: Self) -> Self { self.checked_div(r).unwrap_or(0) }
            #[inline(always)] fn neg(self) -> Self { self.wrapping_neg() }
            #[inline(always)] fn pow(self, r: Self) -> Self { int_pow!(self, r, 1) }
            #[inline(always)] fn abs(self) -> Self { if self.less(0) { self.wrapping_neg() } else { self } }
            #[inline(always)] fn less(self, r: Self) -> bool { self < r }
            #[inline(always)] fn as_f32(self) -> f32 { self as f32 }
            #[inline(always)] fn maximum(self, r: Self) -> Self { if self > r { self } else { r } }
            #[inline(always)] fn minimum(self, r: Self) -> Self { if self < r { self } else { r } }
            #[inline(always)] fn bitwise_and(self, r: Self) -> Self { self & r }
            #[inline(always)] fn bitwise_or(self, r: Self) -> Self { self | r }
            #[inline(always)] fn bitwise_xor(self, r: Self) -> Self { self ^ r }
            #[inline(always)] fn bitwise_not(self) -> Self { !self }
            // Wrapping (`MIN / -1` is MIN, as PyTorch); a zero divisor, which
            // the ops layer refuses before a loop runs, gives 0 or x.
            #[inline(always)] fn div_trunc(self, r: Self) -> Self { self.trunc_quotient(r) }
            #[inline(always)] fn floor_divide(self, r: Self) -> Self { self.floor_quotient(r) }
            #[inline(always)] fn fmod(self, r: Self) -> Self { self.wrapping_sub(self.trunc_quotient(r).wrapping_mul(r)) }
            #[inline(always)] fn remainder(self, r: Self) -> Self { self.wrapping_sub(self.floor_quotient(r).wrapping_mul(r)) }
            $(
                #[inline(always)]
                fn rounding_slice(op: BinaryOp, x: &[Self], y: &[Self], r: &mut [Self]) { ($rounding)(op, x, y, r) }
            )?
        }
    )*};
}
int_arith!(u8, i8, i16, i32, u16, u32, i64 => rounding::wide_block, u64 => rounding::wide_block);

/// Floats: `pow` and `abs` are given per type, because float16 and bfloat16
/// compute `pow` in float32 and round once, as PyTorch does.
macro_rules! float_arith {
    ($($t:ty => $C:ty, $wide:literal, pow: $pow:expr, $(pow_slice: $pow_slice:expr, rounding_slice: $rounding:expr,)? abs: $abs:expr;)*) => {$(
        impl Arith for $t {
            type C = $C;
            const WIDE: bool = $wide;
            #[inline(always)] fn widen(self) -> $C { Widen::widen(self) }
            #[inline(always)] fn narrow(c: $C) -> Self { Widen::narrow(c) }
            #[inline(always)] fn widen_slice(src: &[Self], dst: &mut [$C]) { Widen::widen_slice(src, dst) }
            #[inline(always)] fn narrow_slice(src: &[$C], dst: &mut [Self]) { Widen::narrow_slice(src, dst) }
            // SAFETY (both): the caller's promise, passed on.
            #[inline(always)] unsafe fn widen_chunk(src: &[Self; CHUNK], isa: ChunkIsa) -> [$C; CHUNK] { unsafe { Widen::widen_chunk(src, isa) } }
            #[inline(always)] unsafe fn narrow_chunk(src: [$C; CHUNK], dst: &mut [Self; CHUNK], isa: ChunkIsa) { unsafe { Widen::narrow_chunk(src, dst, isa) } }
            #[inline(always)] fn add(self, r: Self) -> Self { self + r }
            #[inline(always)] fn sub(self, r: Self) -> Self { self - r }
            #[inline(always)] fn mul(self, r: Self) -> Self { self * r }
            #[inline(always)] fn div(self, r: Self) -> Self { self / r }
            #[inline(always)] fn neg(self) -> Self { -self }
            #[inline(always)] fn pow(self, r: Self) -> Self { ($pow)(self, r) }
            $(
                #[inline(always)] fn pow_slice(x: &[Self], y: &[Self], r: &mut [Self]) { ($pow_slice)(x, y, r) }
                #[inline(always)]
                fn rounding_slice(op: BinaryOp, x: &[Self], y: &[Self], r: &mut [Self]) { ($rounding)(op, x, y, r) }
            )?
            #[inline(always)] fn abs(self) -> Self { ($abs)(self) }
            #[inline(always)] fn exp(self) -> Self { <Self as Arith>::narrow(VMath::exp_v(Arith::widen(self))) }
            #[inline(always)] fn sqrt(self) -> Self { <Self as Arith>::narrow(<$C>::sqrt(Arith::widen(self))) }
            #[inline(always)] fn log(self) -> Self { <Self as Arith>::narrow(VMath::ln_v(Arith::widen(self))) }
            #[inline(always)] fn less(self, r: Self) -> bool { self < r }
            #[inline(always)]
            fn maximum(self, r: Self) -> Self {
                let (a, b) = (Arith::widen(self), Arith::widen(r));
                <Self as Arith>::narrow(if a.is_nan() || b.is_nan() { a + b } else if a > b { a } else { b })
            }
            #[inline(always)]
            fn minimum(self, r: Self) -> Self {
                let (a, b) = (Arith::widen(self), Arith::widen(r));
                <Self as Arith>::narrow(if a.is_nan() || b.is_nan() { a + b } else if a < b { a } else { b })
            }
            #[inline(always)] fn is_nan(self) -> bool { <$t>::is_nan(self) }
            #[inline(always)]
            fn floor_divide(self, r: Self) -> Self {
                <Self as Arith>::narrow(FloatDivision::floor_divide(Arith::widen(self), Arith::widen(r)))
            }
            #[inline(always)]
            fn div_trunc(self, r: Self) -> Self {
                <Self as Arith>::narrow(FloatDivision::div_trunc(Arith::widen(self), Arith::widen(r)))
            }
            #[inline(always)]
            fn remainder(self, r: Self) -> Self {
                <Self as Arith>::narrow(FloatDivision::remainder(Arith::widen(self), Arith::widen(r)))
            }
            #[inline(always)]
            fn fmod(self, r: Self) -> Self {
                <Self as Arith>::narrow(FloatDivision::fmod(Arith::widen(self), Arith::widen(r)))
            }
        }
    )*};
}
/// The conversions between a float type and the type it computes in.
trait Widen<C>: Sized {
    fn widen(self) -> C;
    fn narrow(c: C) -> Self;
    fn widen_slice(src: &[Self], dst: &mut [C]);
    fn narrow_slice(src: &[C], dst: &mut [Self]);
    /// # Safety
    /// As for [`Arith::widen_chunk`].
    #[inline(always)]
    unsafe fn widen_chunk(src: &[Self; CHUNK], isa: ChunkIsa) -> [C; CHUNK]
    where
        Self: Copy,
    {
        let _ = isa;
        src.map(Self::widen)
    }
    /// # Safety
    /// As for [`Arith::widen_chunk`].
    #[inline(always)]
    unsafe fn narrow_chunk(src: [C; CHUNK], dst: &mut [Self; CHUNK], isa: ChunkIsa)
    where
        C: Copy,
    {
        let _ = isa;
        *dst = src.map(Self::narrow);
    }
}

macro_rules! same_width {
    ($($t:ty),*) => {$(
        impl Widen<$t> for $t {
            #[inline(always)] fn widen(self) -> $t { self }
            #[inline(always)] fn narrow(c: $t) -> $t { c }
            #[inline(always)] fn widen_slice(src: &[$t], dst: &mut [$t]) { dst.copy_from_slice(src) }
            #[inline(always)] fn narrow_slice(src: &[$t], dst: &mut [$t]) { dst.copy_from_slice(src) }
        }
    )*};
}
same_width!(f32, f64);

macro_rules! half_width {
    ($($t:ty),*) => {$(
        impl Widen<f32> for $t {
            #[inline(always)] fn widen(self) -> f32 { self.to_f32() }
            #[inline(always)] fn narrow(c: f32) -> $t { <$t>::from_f32(c) }
            #[inline(always)]
            fn widen_slice(src: &[$t], dst: &mut [f32]) {
                <$t as super::narrow::NarrowSlice>::widen(src, dst)
            }
            #[inline(always)]
            fn narrow_slice(src: &[f32], dst: &mut [$t]) {
                <$t as super::narrow::NarrowSlice>::narrow(src, dst)
            }
            #[inline(always)]
            unsafe fn widen_chunk(src: &[$t; CHUNK], isa: ChunkIsa) -> [f32; CHUNK] {
                // SAFETY: the caller's promise about `isa`, passed on.
                unsafe { <$t as NarrowSlice>::widen_chunk(src, isa) }
            }
            #[inline(always)]
            unsafe fn narrow_chunk(src: [f32; CHUNK], dst: &mut [$t; CHUNK], isa: ChunkIsa) {
                // SAFETY: the caller's promise about `isa`, passed on.
                unsafe { <$t as NarrowSlice>::narrow_chunk(src, dst, isa) }
            }
        }
    )*};
}
half_width!(f16, bf16);

float_arith! {
    f32 => f32, false, pow: vpow::pow_f32, pow_slice: vpow::pow_f32_slice, rounding_slice: rounding::block, abs: f32::abs;
    f64 => f64, false, pow: vpow::pow_f64, pow_slice: vpow::pow_f64_slice, rounding_slice: rounding::block, abs: f64::abs;
    f16 => f32, true, pow: |a: f16, b: f16| f16::from_f32(vpow::pow_f32(a.to_f32(), b.to_f32())),
           abs: |a: f16| f16::from_bits(a.to_bits() & 0x7fff);
    bf16 => f32, true, pow: |a: bf16, b: bf16| bf16::from_f32(vpow::pow_f32(a.to_f32(), b.to_f32())),
            abs: |a: bf16| bf16::from_bits(a.to_bits() & 0x7fff);
}

macro_rules! complex_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            type C = Self;
            #[inline(always)] fn widen(self) -> Self { self }
            #[inline(always)] fn narrow(c: Self) -> Self { c }
            #[inline(always)] fn add(self, r: Self) -> Self { self + r }
            #[inline(always)] fn sub(self, r: Self) -> Self { self - r }
            #[inline(always)] fn mul(self, r: Self) -> Self { self * r }
            /// Smith's division, as PyTorch's `c10::complex`: scaled to avoid
            /// overflow, and dividing by zero gives infinities rather than NaN.
            #[inline(always)]
            fn div(self, r: Self) -> Self {
                let (a, b, c, d) = (self.re, self.im, r.re, r.im);
                if c.abs() >= d.abs() {
                    if c == 0.0 && d == 0.0 {
                        return <$t>::new(a / c.abs(), b / d.abs());
                    }
                    let rat = d / c;
                    let scl = 1.0 / (c + d * rat);
                    <$t>::new((a + b * rat) * scl, (b - a * rat) * scl)
                } else {
                    let rat = c / d;
                    let scl = 1.0 / (d + c * rat);
                    <$t>::new((a * rat + b) * scl, (b * rat - a) * scl)
                }
            }
            #[inline(always)] fn neg(self) -> Self { -self }
            #[inline(always)] fn pow(self, r: Self) -> Self { self.powc(r) }
            #[inline(always)] fn abs(self) -> Self { unreachable!("complex magnitudes change the dtype") }
            #[inline(always)] fn exp(self) -> Self { <$t>::exp(self) }
            /// C99's `csqrt` at the infinities (as PyTorch), num-complex's elsewhere.
            #[inline(always)]
            fn sqrt(self) -> Self {
                let (re, im) = (self.re, self.im);
                // A zero with im's sign (im is finite where it is used).
                let zero = (im - im).copysign(im);
                if im.is_infinite() {
                    <$t>::new(im.abs(), im)
                } else if re.is_infinite() && re.is_sign_negative() {
                    if im.is_nan() { <$t>::new(im, -re) } else { <$t>::new(zero.abs(), (-re).copysign(im)) }
                } else if re.is_infinite() {
                    <$t>::new(re, if im.is_nan() { im } else { zero })
                } else {
                    <$t>::sqrt(self)
                }
            }
            #[inline(always)] fn log(self) -> Self { <$t>::ln(self) }
            #[inline(always)] fn less(self, _: Self) -> bool { unreachable!("complex numbers have no order") }
            #[inline(always)] fn maximum(self, _: Self) -> Self { unreachable!("complex numbers have no order") }
            #[inline(always)] fn minimum(self, _: Self) -> Self { unreachable!("complex numbers have no order") }
            #[inline(always)] fn is_nan(self) -> bool { self.re.is_nan() || self.im.is_nan() }
        }
    )*};
}
complex_arith!(Complex32, Complex64);

impl Arith for bool {
    type C = Self;
    #[inline(always)]
    fn widen(self) -> Self {
        self
    }
    #[inline(always)]
    fn narrow(c: Self) -> Self {
        c
    }
    #[inline(always)]
    fn add(self, r: Self) -> Self {
        self | r
    }
    #[inline(always)]
    fn sub(self, r: Self) -> Self {
        self ^ r
    }
    #[inline(always)]
    fn bitwise_and(self, r: Self) -> Self {
        self & r
    }
    #[inline(always)]
    fn bitwise_or(self, r: Self) -> Self {
        self | r
    }
    #[inline(always)]
    fn bitwise_xor(self, r: Self) -> Self {
        self ^ r
    }
    #[inline(always)]
    fn bitwise_not(self) -> Self {
        !self
    }
    #[inline(always)]
    fn mul(self, r: Self) -> Self {
        self & r
    }
    #[inline(always)]
    fn div(self, _: Self) -> Self {
        self
    }
    #[inline(always)]
    fn neg(self) -> Self {
        self
    }
    #[inline(always)]
    fn maximum(self, r: Self) -> Self {
        self | r
    }
    #[inline(always)]
    fn minimum(self, r: Self) -> Self {
        self & r
    }
    /// `x ** y`: 1 unless x is false and y is true.
    #[inline(always)]
    fn pow(self, r: Self) -> Self {
        self | !r
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self
    }
    #[inline(always)]
    fn less(self, r: Self) -> bool {
        !self & r
    }
}
