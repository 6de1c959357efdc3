//! Arithmetic per element type, with PyTorch's semantics: integers wrap,
//! half types compute in f32 and round, bool add/mul are or/and.

use crate::Element;
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

/// The four binary operators dlbridge implements.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
}

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
float_arith!(f32, f64, f16, bf16, Complex32, Complex64);

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
