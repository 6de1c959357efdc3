//! A single value of any dtype, as Python hands it over or gets it back.

use crate::DType;

/// One value. Integers are kept in `i128` so every `int64` and `uint64` fits.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i128),
    Float(f64),
    Complex(f64, f64),
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

    /// The value after a round trip through `dtype`: rounded to its
    /// precision, wrapped to its range.
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
