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
