//! The Rust types behind each dtype, and per-element conversion between them.
//!
//! Casts go through [`Scalar`]: `i128` holds every integer exactly and `f64`
//! every float, so one pair of functions per type covers all 225 casts, and
//! the optimiser folds the enum away inside the loops.

use crate::{DType, Scalar};
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

/// A Rust type that stores one dtype's elements.
pub trait Element: Copy + Send + Sync + 'static + bytemuck::Zeroable {
    const DTYPE: DType;
    fn to_scalar(self) -> Scalar;
    fn from_scalar(s: Scalar) -> Self;

    #[inline(always)]
    fn cast<U: Element>(self) -> U {
        U::from_scalar(self.to_scalar())
    }
}

#[inline(always)]
fn int(s: Scalar) -> i128 {
    match s {
        Scalar::Bool(b) => b as i128,
        Scalar::Int(i) => i,
        Scalar::Float(f) => f as i128,
        Scalar::Complex(re, _) => re as i128,
    }
}

macro_rules! int_element {
    ($($t:ty => $dt:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            #[inline(always)]
            fn to_scalar(self) -> Scalar { Scalar::Int(self as i128) }
            #[inline(always)]
            fn from_scalar(s: Scalar) -> Self { int(s) as $t }
        }
    )*};
}
int_element!(u8 => U8, i8 => I8, i16 => I16, i32 => I32, i64 => I64, u16 => U16, u32 => U32, u64 => U64);

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    #[inline(always)]
    fn to_scalar(self) -> Scalar {
        Scalar::Float(self as f64)
    }
    #[inline(always)]
    fn from_scalar(s: Scalar) -> Self {
        match s {
            // Direct from i128 rounds once (through f64 would round twice).
            Scalar::Int(i) => i as f32,
            s => s.as_f64() as f32,
        }
    }
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    #[inline(always)]
    fn to_scalar(self) -> Scalar {
        Scalar::Float(self)
    }
    #[inline(always)]
    fn from_scalar(s: Scalar) -> Self {
        s.as_f64()
    }
}

macro_rules! half_element {
    ($($t:ty => $dt:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            #[inline(always)]
            fn to_scalar(self) -> Scalar { Scalar::Float(self.to_f64()) }
            #[inline(always)]
            fn from_scalar(s: Scalar) -> Self { <$t>::from_f64(s.as_f64()) }
        }
    )*};
}
half_element!(f16 => F16, bf16 => BF16);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    #[inline(always)]
    fn to_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
    #[inline(always)]
    fn from_scalar(s: Scalar) -> Self {
        match s {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
            Scalar::Complex(re, im) => re != 0.0 || im != 0.0,
        }
    }
}

macro_rules! complex_element {
    ($($t:ty, $f:ty => $dt:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            #[inline(always)]
            fn to_scalar(self) -> Scalar { Scalar::Complex(self.re as f64, self.im as f64) }
            #[inline(always)]
            fn from_scalar(s: Scalar) -> Self {
                match s {
                    Scalar::Complex(re, im) => <$t>::new(re as $f, im as $f),
                    s => <$t>::new(<$f>::from_scalar(s), 0.0),
                }
            }
        }
    )*};
}
complex_element!(Complex32, f32 => C64, Complex64, f64 => C128);

/// Runs `$body` with `$T` bound to the Rust type of `$dtype`.
#[macro_export]
macro_rules! with_element {
    ($dtype:expr, $T:ident => $body:expr) => {{
        use $crate::DType as __D;
        match $dtype {
            __D::Bool => {
                type $T = bool;
                $body
            }
            __D::U8 => {
                type $T = u8;
                $body
            }
            __D::I8 => {
                type $T = i8;
                $body
            }
            __D::I16 => {
                type $T = i16;
                $body
            }
            __D::I32 => {
                type $T = i32;
                $body
            }
            __D::I64 => {
                type $T = i64;
                $body
            }
            __D::U16 => {
                type $T = u16;
                $body
            }
            __D::U32 => {
                type $T = u32;
                $body
            }
            __D::U64 => {
                type $T = u64;
                $body
            }
            __D::F16 => {
                type $T = half::f16;
                $body
            }
            __D::BF16 => {
                type $T = half::bf16;
                $body
            }
            __D::F32 => {
                type $T = f32;
                $body
            }
            __D::F64 => {
                type $T = f64;
                $body
            }
            __D::C64 => {
                type $T = num_complex::Complex32;
                $body
            }
            __D::C128 => {
                type $T = num_complex::Complex64;
                $body
            }
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_keep_values_exact_where_they_fit() {
        assert_eq!(u64::MAX.cast::<u64>(), u64::MAX);
        assert_eq!(i64::MIN.cast::<i64>(), i64::MIN);
        assert_eq!((-1i8).cast::<i64>(), -1);
        assert_eq!(3.75f64.cast::<i32>(), 3);
        assert_eq!(2.5f32.cast::<bf16>(), bf16::from_f32(2.5));
        assert!(0.1f64.cast::<bool>());
        assert!(!0i32.cast::<bool>());
        assert_eq!(true.cast::<f32>(), 1.0);
        assert_eq!(Complex64::new(1.5, 2.0).cast::<f32>(), 1.5);
        assert_eq!(7u8.cast::<Complex32>(), Complex32::new(7.0, 0.0));
        assert_eq!(((1i64 << 53) + 1).cast::<f32>(), ((1i64 << 53) + 1) as f32);
    }
}
