//! Arithmetic per element type, with PyTorch's semantics: integers wrap,
//! half types compute in f32 and round, bool add/mul are or/and.

use crate::Element;
pub(crate) use crate::backend::BinaryOp;
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

/// Element arithmetic. `div` is only reached for floating and complex types
/// (true division promotes integers to float first).
pub trait Arith: Element {
    fn add(self, rhs: Self) -> Self;
    fn sub(self, rhs: Self) -> Self;
    fn mul(self, rhs: Self) -> Self;
    fn div(self, rhs: Self) -> Self;
    fn neg(self) -> Self;

    #[inline(always)]
    fn apply(op: BinaryOp, a: Self, b: Self) -> Self {
        match op {
            BinaryOp::Add => a.add(b),
            BinaryOp::Sub => a.sub(b),
            BinaryOp::Mul => a.mul(b),
            BinaryOp::Div => a.div(b),
        }
    }
}

macro_rules! int_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn add(self, r: Self) -> Self { self.wrapping_add(r) }
            #[inline(always)] fn sub(self, r: Self) -> Self { self.wrapping_sub(r) }
            #[inline(always)] fn mul(self, r: Self) -> Self { self.wrapping_mul(r) }
            #[inline(always)] fn div(self, r: Self) -> Self { self.checked_div(r).unwrap_or(0) }
            #[inline(always)] fn neg(self) -> Self { self.wrapping_neg() }
        }
    )*};
}
int_arith!(u8, i8, i16, i32, i64, u16, u32, u64);

macro_rules! float_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn add(self, r: Self) -> Self { self + r }
            #[inline(always)] fn sub(self, r: Self) -> Self { self - r }
            #[inline(always)] fn mul(self, r: Self) -> Self { self * r }
            #[inline(always)] fn div(self, r: Self) -> Self { self / r }
            #[inline(always)] fn neg(self) -> Self { -self }
        }
    )*};
}
float_arith!(f32, f64, f16, bf16);

macro_rules! complex_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
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
        }
    )*};
}
complex_arith!(Complex32, Complex64);

impl Arith for bool {
    #[inline(always)]
    fn add(self, r: Self) -> Self {
        self | r
    }
    #[inline(always)]
    fn sub(self, r: Self) -> Self {
        self ^ r
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
}
