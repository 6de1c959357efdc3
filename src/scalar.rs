//! A single value of any dtype, as Python hands it over or gets it back.

use crate::DType;

/// One value. Integers are kept in `i128` so every `int64` and `uint64` fits.
///
/// Rust numbers convert into it (`2.0.into()`, `Scalar::from(3)`), and so
/// into an op's [`Operand`](crate::ops::Operand): `t.mul(2.0)`.
///
/// ```
/// use dlbridge::Scalar;
/// assert_eq!(Scalar::from(3u8), Scalar::Int(3));
/// assert_eq!(Scalar::from(0.5f32), Scalar::Float(0.5));
/// assert_eq!(Scalar::from(true).as_f64(), 1.0);
/// ```
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    /// A Python `bool`.
    Bool(bool),
    /// A Python `int` (every `int64` and `uint64` fits).
    Int(i128),
    /// A Python `float`.
    Float(f64),
    /// A Python `complex`: real and imaginary parts.
    Complex(f64, f64),
}

macro_rules! scalar_from {
    ($($variant:ident($via:ty): $($t:ty),*;)*) => {$($(
        impl From<$t> for Scalar {
            fn from(v: $t) -> Scalar {
                Scalar::$variant(<$via>::from(v))
            }
        }
    )*)*};
}
scalar_from! {
    Int(i128): i8, i16, i32, i64, u8, u16, u32, u64;
    Float(f64): f32, f64;
    Bool(bool): bool;
}

impl From<num_complex::Complex64> for Scalar {
    fn from(v: num_complex::Complex64) -> Scalar {
        Scalar::Complex(v.re, v.im)
    }
}

impl From<num_complex::Complex32> for Scalar {
    fn from(v: num_complex::Complex32) -> Scalar {
        Scalar::Complex(v.re.into(), v.im.into())
    }
}

impl Scalar {
    /// The real part as `f64` (PyTorch drops the imaginary part when casting
    /// complex to real; bools are 0 and 1).
    #[inline(always)]
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
            Scalar::Complex(re, _) => re,
        }
    }

    /// Refuses integers (and floats) outside an integer dtype's range, as
    /// PyTorch does when creating or filling tensors; `type_name` is the name
    /// PyTorch's message uses at that call site.
    ///
    /// ```
    /// use dlbridge::{DType, Scalar};
    /// assert!(Scalar::Int(255).check_fits(DType::U8, "uint8").is_ok());
    /// assert!(Scalar::Int(256).check_fits(DType::U8, "uint8").is_err());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn check_fits(self, dtype: DType, type_name: &str) -> crate::Result<()> {
        if dtype.category() != crate::Category::Integral {
            return Ok(());
        }
        // The range of a two's-complement (or unsigned) integer of that size.
        let bits = dtype.size() as u32 * 8;
        let (lo, hi): (i128, i128) = if dtype.is_signed() {
            (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        } else {
            (0, (1 << bits) - 1)
        };
        let fits = match self {
            Scalar::Bool(_) => true,
            Scalar::Int(i) => (lo..=hi).contains(&i),
            Scalar::Float(f) => f.is_finite() && f > lo as f64 - 1.0 && f < hi as f64 + 1.0,
            Scalar::Complex(re, _) => {
                re.is_finite() && re > lo as f64 - 1.0 && re < hi as f64 + 1.0
            }
        };
        if !fits {
            return Err(crate::err!(
                InvalidOperation,
                "value cannot be converted to type {type_name} without overflow"
            ));
        }
        Ok(())
    }

    /// `self * other` as Python multiplies numbers (integers wrap past 128
    /// bits, which no dtype holds), bools `and`ed.
    pub(crate) fn times(self, other: Scalar) -> Scalar {
        use Scalar::{Bool, Complex, Float, Int};
        let int = |s: Scalar| match s {
            Bool(b) => Some(b as i128),
            Int(i) => Some(i),
            _ => None,
        };
        let complex = |s: Scalar| match s {
            Complex(re, im) => (re, im),
            _ => (s.as_f64(), 0.0),
        };
        match (self, other) {
            (Bool(x), Bool(y)) => Bool(x & y),
            (Complex(..), _) | (_, Complex(..)) => {
                let ((a, b), (c, d)) = (complex(self), complex(other));
                Complex(a * c - b * d, a * d + b * c)
            }
            _ => match (int(self), int(other)) {
                (Some(x), Some(y)) => Int(x.wrapping_mul(y)),
                _ => Float(self.as_f64() * other.as_f64()),
            },
        }
    }

    /// The value after a round trip through `dtype`: rounded to its
    /// precision, wrapped to its range.
    ///
    /// ```
    /// use dlbridge::{DType, Scalar};
    /// assert_eq!(Scalar::Float(0.1).rounded_to(DType::F16), Scalar::Float(0.0999755859375));
    /// assert_eq!(Scalar::Int(300).rounded_to(DType::U8), Scalar::Int(44));
    /// assert_eq!(Scalar::Float(1.5).wrapped_dtype(), DType::F32);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn rounded_to(self, dtype: DType) -> Scalar {
        crate::with_element!(dtype, T => <T as crate::Element>::to_scalar(<T as crate::Element>::from_scalar(self)))
    }

    /// The dtype PyTorch gives a Python number of this kind when it is an
    /// operand ("wrapped number"): floats and complex take the defaults.
    pub fn wrapped_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::F32,
            Scalar::Complex(..) => DType::C64,
        }
    }
}
