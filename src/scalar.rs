//! A single value of any dtype, as Python hands it over or gets it back.

use crate::DType;

/// PyTorch's C type names, used in its `fill_` overflow message.
pub fn c_type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "uint8_t",
        DType::I8 => "int8_t",
        DType::I16 => "int16_t",
        DType::I32 => "int32_t",
        DType::I64 => "int64_t",
        DType::U16 => "uint16_t",
        DType::U32 => "uint32_t",
        DType::U64 => "uint64_t",
        other => other.name(),
    }
}

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
        let (lo, hi): (i128, i128) = match dtype {
            DType::U8 => (0, u8::MAX as i128),
            DType::I8 => (i8::MIN as i128, i8::MAX as i128),
            DType::I16 => (i16::MIN as i128, i16::MAX as i128),
            DType::U16 => (0, u16::MAX as i128),
            DType::I32 => (i32::MIN as i128, i32::MAX as i128),
            DType::U32 => (0, u32::MAX as i128),
            DType::I64 => (i64::MIN as i128, i64::MAX as i128),
            DType::U64 => (0, u64::MAX as i128),
            _ => return Ok(()),
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
