//! The Rust types behind each dtype, and per-element conversion between them.
//!
//! Casts go through [`Scalar`]: `i128` holds every integer exactly and `f64`
//! every float, so one pair of functions per type covers all 225 casts, and
//! the optimiser folds the enum away inside the loops.

use crate::{DType, Scalar, minifloat};
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

/// A Rust type that stores one dtype's elements: `f32` is `float32`,
/// [`half::f16`] `float16`, [`num_complex::Complex32`] `complex64`,
/// [`Float8E4M3Fn`] a `float8_e4m3fn` code, and so on for every [`DType`].
///
/// ```
/// use dlbridge::{DType, Element, half::bf16};
/// assert_eq!(<f32 as Element>::DTYPE, DType::F32);
/// assert_eq!(<bf16 as Element>::DTYPE, DType::BF16);
/// assert_eq!(3.75f64.cast::<i32>(), 3); // PyTorch's cast: truncation
/// ```
pub trait Element: Copy + Send + Sync + 'static + bytemuck::Zeroable {
    /// The dtype whose elements this type holds.
    const DTYPE: DType;
    /// The value as a [`Scalar`] (exact: `i128` holds every integer).
    fn to_scalar(self) -> Scalar;
    /// The value of `s` in this type, cast as PyTorch casts (wrapping
    /// integers, truncating floats, dropping an imaginary part).
    fn from_scalar(s: Scalar) -> Self;

    /// This value cast to another element type, as PyTorch's `.to(dtype)`.
    #[inline(always)]
    fn cast<U: Element>(self) -> U {
        U::from_scalar(self.to_scalar())
    }
}

/// An [`Element`] whose values Rust code may read and write in place,
/// through typed access ([`Tensor::as_slice`](crate::Tensor::as_slice),
/// [`Tensor::as_array`](crate::Tensor::as_array), ...) and which safe
/// constructors ([`Tensor::from_vec`](crate::Tensor::from_vec), ...) take:
/// the Rust type of every dtype. Sealed: dlbridge implements it for exactly
/// those types.
///
/// # Safety
/// Implementors have the size of their dtype's element, an alignment no
/// larger, no padding bytes, and every bit pattern is a valid value, except
/// where [`Plain::EVERY_BIT_PATTERN`] is `false` (`bool`, whose bytes typed
/// access checks to be 0 or 1 before it hands out a `&[bool]`).
pub unsafe trait Plain: Element + sealed::Sealed {
    /// Whether any bits of the element's size are a valid value.
    const EVERY_BIT_PATTERN: bool = true;
}

mod sealed {
    /// Keeps [`super::Plain`] to dlbridge's own element types.
    pub trait Sealed {}
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        // SAFETY: a bytemuck::Pod type (no padding, any bits valid) whose
        // size is its dtype's (the test below checks every dtype).
        unsafe impl Plain for $t {}
    )*};
}
plain!(
    u8, i8, i16, i32, i64, u16, u32, u64, f32, f64, f16, bf16, Complex32, Complex64
);
plain!(
    Float8E3M4,
    Float8E4M3,
    Float8E4M3B11Fnuz,
    Float8E4M3Fn,
    Float8E4M3Fnuz,
    Float8E5M2
);
plain!(
    Float8E5M2Fnuz,
    Float8E8M0Fnu,
    Float6E2M3Fn,
    Float6E3M2Fn,
    Float4E2M1Fn
);
plain!(Float4E2M1FnX2, ComplexHalf);

impl sealed::Sealed for bool {}
// SAFETY: one byte, no padding; only 0 and 1 are valid, which
// EVERY_BIT_PATTERN = false makes typed access check.
unsafe impl Plain for bool {
    const EVERY_BIT_PATTERN: bool = false;
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
            fn from_scalar(s: Scalar) -> Self { <$t>::from_f32(f64_to_f32_odd(s.as_f64())) }
        }
    )*};
}
half_element!(f16 => F16, bf16 => BF16);

/// `x` rounded to float32 toward zero, the last bit set when inexact
/// ("round to odd"). Rounding that to float16 or bfloat16 (11 and 8 bits) to
/// nearest even rounds `x` once, as NumPy's float64 to float16 does; `half`'s
/// `from_f64` (and torch, through float32) can round twice.
#[inline(always)]
pub(crate) fn f64_to_f32_odd(x: f64) -> f32 {
    let f = x as f32;
    let fx = f as f64;
    // Nearest went away from zero: step back toward it (inf to f32::MAX).
    let f = if fx.abs() > x.abs() {
        f32::from_bits(f.to_bits() - 1)
    } else {
        f
    };
    if fx != x && !x.is_nan() {
        f32::from_bits(f.to_bits() | 1)
    } else {
        f
    }
}

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

/// A narrow float: one byte holding a code of its format (see `minifloat`).
/// Casts go through float32, as PyTorch's do.
macro_rules! narrow_element {
    ($($name:ident => $dt:ident, $decode:expr, $encode:expr;)*) => {$(
        #[doc = concat!("One `", stringify!($dt), "` code.")]
        #[derive(Copy, Clone, Debug, PartialEq, Eq)]
        #[repr(transparent)]
        pub struct $name(pub u8);
        // SAFETY: a transparent byte; zero is a valid code of every format.
        unsafe impl bytemuck::Zeroable for $name {}
        // SAFETY: a transparent byte: every bit pattern is a code, no padding.
        unsafe impl bytemuck::Pod for $name {}
        impl Element for $name {
            const DTYPE: DType = DType::$dt;
            #[inline(always)]
            fn to_scalar(self) -> Scalar { Scalar::Float(f64::from(($decode)(self.0))) }
            #[inline(always)]
            fn from_scalar(s: Scalar) -> Self { $name(($encode)(f32::from_scalar(s))) }
        }
    )*};
}
narrow_element! {
    Float8E3M4 => F8E3M4, |c| minifloat::FLOAT8_E3M4.decode(c), |x| minifloat::FLOAT8_E3M4.encode(x);
    Float8E4M3 => F8E4M3, |c| minifloat::FLOAT8_E4M3.decode(c), |x| minifloat::FLOAT8_E4M3.encode(x);
    Float8E4M3B11Fnuz => F8E4M3B11FNUZ, |c| minifloat::FLOAT8_E4M3B11FNUZ.decode(c),
        |x| minifloat::FLOAT8_E4M3B11FNUZ.encode(x);
    Float8E4M3Fn => F8E4M3FN, |c| minifloat::FLOAT8_E4M3FN.decode(c), |x| minifloat::FLOAT8_E4M3FN.encode(x);
    Float8E4M3Fnuz => F8E4M3FNUZ, |c| minifloat::FLOAT8_E4M3FNUZ.decode(c),
        |x| minifloat::FLOAT8_E4M3FNUZ.encode(x);
    Float8E5M2 => F8E5M2, |c| minifloat::FLOAT8_E5M2.decode(c), |x| minifloat::FLOAT8_E5M2.encode(x);
    Float8E5M2Fnuz => F8E5M2FNUZ, |c| minifloat::FLOAT8_E5M2FNUZ.decode(c),
        |x| minifloat::FLOAT8_E5M2FNUZ.encode(x);
    Float8E8M0Fnu => F8E8M0FNU, minifloat::e8m0::decode, minifloat::e8m0::encode;
    Float6E2M3Fn => F6E2M3FN, |c| minifloat::FLOAT6_E2M3FN.decode(c), |x| minifloat::FLOAT6_E2M3FN.encode(x);
    Float6E3M2Fn => F6E3M2FN, |c| minifloat::FLOAT6_E3M2FN.decode(c), |x| minifloat::FLOAT6_E3M2FN.encode(x);
    Float4E2M1Fn => F4E2M1FN, |c| minifloat::FLOAT4_E2M1FN.decode(c), |x| minifloat::FLOAT4_E2M1FN.encode(x);
}

/// PyTorch's `float4_e2m1fn_x2`: two values in one byte, which no single
/// number describes; `Tensor` refuses its casts and values (as PyTorch
/// does), so only its bytes are ever copied. Its "scalar" is the raw byte.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Float4E2M1FnX2(pub u8);
// SAFETY: a transparent byte.
unsafe impl bytemuck::Zeroable for Float4E2M1FnX2 {}
// SAFETY: a transparent byte: every bit pattern is a pair of codes.
unsafe impl bytemuck::Pod for Float4E2M1FnX2 {}
impl Element for Float4E2M1FnX2 {
    const DTYPE: DType = DType::F4E2M1FNX2;
    #[inline(always)]
    fn to_scalar(self) -> Scalar {
        Scalar::Int(i128::from(self.0))
    }
    #[inline(always)]
    fn from_scalar(s: Scalar) -> Self {
        Float4E2M1FnX2(int(s) as u8)
    }
}

/// PyTorch's `complex32`: two float16; a value is rounded to float32 first
/// and then to float16, as PyTorch's `c10::complex<Half>` does.
#[derive(Copy, Clone, Debug, PartialEq)]
#[repr(C)]
pub struct ComplexHalf {
    /// The real part.
    pub re: f16,
    /// The imaginary part.
    pub im: f16,
}
// SAFETY: two float16, all-zero bits are 0 + 0i.
unsafe impl bytemuck::Zeroable for ComplexHalf {}
// SAFETY: repr(C) of two 2-byte float16 (no padding); any bits are a value.
unsafe impl bytemuck::Pod for ComplexHalf {}
impl Element for ComplexHalf {
    const DTYPE: DType = DType::C32;
    #[inline(always)]
    fn to_scalar(self) -> Scalar {
        Scalar::Complex(self.re.to_f64(), self.im.to_f64())
    }
    #[inline(always)]
    fn from_scalar(s: Scalar) -> Self {
        let (re, im) = match s {
            Scalar::Complex(re, im) => (re as f32, im as f32),
            s => (f32::from_scalar(s), 0.0),
        };
        ComplexHalf {
            re: f16::from_f32(re),
            im: f16::from_f32(im),
        }
    }
}

/// Runs `$body` with `$T` bound to the Rust type of `$dtype` (the dtype
/// table's second column, [`dtypes!`](crate::dtypes)).
#[macro_export]
macro_rules! with_element {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dtypes!([$crate::__element_dispatch](every, $dtype, $T, $body))
    };
}

/// [`with_element!`] for the dtypes dlbridge computes with (every one but
/// the storage-only ones, which `ops` refuses before any kernel runs).
#[macro_export]
macro_rules! with_compute_element {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dtypes!([$crate::__element_dispatch](computed, $dtype, $T, $body))
    };
}

/// The match behind [`with_element!`], one arm per line of the dtype table.
#[doc(hidden)]
#[macro_export]
macro_rules! __element_dispatch {
    (($which:ident, $dtype:expr, $T:ident, $body:expr) $(
        $v:ident = $elem:ty, $name:literal, $torch:literal, [$($alias:literal),*], $cat:ident,
        $arith:ident $($compute:ident)?, $real:ident, $code:ident $bits:literal $lanes:literal,
        $sign:ident, $numpy:tt, $cuda:tt;
    )*) => {
        match $dtype {
            $($crate::DType::$v => $crate::__element_arm!($which $arith $v, $T = $elem => $body),)*
        }
    };
}

/// One arm of [`__element_dispatch!`]: the body with `$T` bound, or, for a
/// storage-only dtype under [`with_compute_element!`], unreachable.
#[doc(hidden)]
#[macro_export]
macro_rules! __element_arm {
    (computed Stored $v:ident, $T:ident = $elem:ty => $body:expr) => {
        unreachable!("no arithmetic on {:?}", $crate::DType::$v)
    };
    ($which:ident $arith:ident $v:ident, $T:ident = $elem:ty => $body:expr) => {{
        type $T = $elem;
        $body
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_keep_values_exact_where_they_fit() {
        // Spelled through the trait: std may add float methods named `cast`.
        use Element as E;
        assert_eq!(E::cast::<u64>(u64::MAX), u64::MAX);
        assert_eq!(E::cast::<i64>(i64::MIN), i64::MIN);
        assert_eq!(E::cast::<i64>(-1i8), -1);
        assert_eq!(E::cast::<i32>(3.75f64), 3);
        assert_eq!(E::cast::<bf16>(2.5f32), bf16::from_f32(2.5));
        assert!(E::cast::<bool>(0.1f64));
        assert!(!E::cast::<bool>(0i32));
        assert_eq!(E::cast::<f32>(true), 1.0);
        assert_eq!(E::cast::<f32>(Complex64::new(1.5, 2.0)), 1.5);
        assert_eq!(E::cast::<Complex32>(7u8), Complex32::new(7.0, 0.0));
        assert_eq!(E::cast::<f32>((1i64 << 53) + 1), ((1i64 << 53) + 1) as f32);
    }

    #[test]
    fn each_dtype_s_element_type_says_it_is_that_dtype() {
        for dt in DType::ALL {
            assert_eq!(crate::with_element!(dt, T => T::DTYPE), dt);
            assert!(crate::with_element!(dt, T => std::mem::align_of::<T>()) <= dt.size());
            assert_eq!(
                crate::with_element!(dt, T => std::mem::size_of::<T>()),
                dt.size()
            );
            // Every dtype's type is Plain (this fails to compile otherwise).
            fn plain<T: Plain>() -> bool {
                T::EVERY_BIT_PATTERN
            }
            assert_eq!(
                crate::with_element!(dt, T => plain::<T>()),
                dt != DType::Bool
            );
        }
    }
}
