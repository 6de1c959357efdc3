//! Element types: their DLPack codes, sizes, names and PyTorch's promotion rules.

use crate::{Result, bail};
use dlpark::ffi::{DLDataType, DLDataTypeCode};

/// The element types dlbridge stores and computes with.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
    C64,
    C128,
}

/// Coarse kinds used by PyTorch's promotion rules; ordered low to high.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Bool,
    Integral,
    Floating,
    Complex,
}

impl DType {
    /// Every dtype, in the order the Python module lists them.
    pub const ALL: [DType; 15] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::C64,
        DType::C128,
    ];

    /// The dtype PyTorch picks for Python floats and for `Tensor(...)`.
    pub const DEFAULT_FLOAT: DType = DType::F32;

    /// The name shown after `dlbridge.` (`float64`, `bfloat16`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }

    /// PyTorch's C++ scalar-type name, used verbatim in its error messages
    /// ("result type Float can't be cast to the desired output type Long").
    pub fn scalar_type_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::U16 => "UInt16",
            DType::U32 => "UInt32",
            DType::U64 => "UInt64",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::C64 => "ComplexFloat",
            DType::C128 => "ComplexDouble",
        }
    }

    /// Looks a dtype up by name, accepting PyTorch's aliases (`float`, `long`, ...).
    pub fn from_name(name: &str) -> Option<DType> {
        let name = name.strip_prefix("dlbridge.").unwrap_or(name);
        let name = name.strip_prefix("torch.").unwrap_or(name);
        Some(match name {
            "bool" => DType::Bool,
            "uint8" => DType::U8,
            "int8" => DType::I8,
            "int16" | "short" => DType::I16,
            "int32" | "int" => DType::I32,
            "int64" | "long" => DType::I64,
            "uint16" => DType::U16,
            "uint32" => DType::U32,
            "uint64" => DType::U64,
            "float16" | "half" => DType::F16,
            "bfloat16" => DType::BF16,
            "float32" | "float" => DType::F32,
            "float64" | "double" => DType::F64,
            "complex64" | "cfloat" => DType::C64,
            "complex128" | "cdouble" => DType::C128,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Category::Floating,
            DType::C64 | DType::C128 => Category::Complex,
            _ => Category::Integral,
        }
    }

    pub fn is_floating_point(self) -> bool {
        self.category() == Category::Floating
    }

    pub fn is_complex(self) -> bool {
        self.category() == Category::Complex
    }

    /// Signed in PyTorch's sense (`torch.dtype.is_signed`).
    pub fn is_signed(self) -> bool {
        !matches!(
            self,
            DType::Bool | DType::U8 | DType::U16 | DType::U32 | DType::U64
        )
    }

    /// The DLPack descriptor of this dtype (one lane).
    pub fn to_dlpack(self) -> DLDataType {
        let code = match self.category() {
            Category::Bool => DLDataTypeCode::BOOL,
            Category::Complex => DLDataTypeCode::COMPLEX,
            Category::Floating if self == DType::BF16 => DLDataTypeCode::BFLOAT,
            Category::Floating => DLDataTypeCode::FLOAT,
            Category::Integral if self.is_signed() => DLDataTypeCode::INT,
            Category::Integral => DLDataTypeCode::UINT,
        };
        DLDataType {
            code,
            bits: (self.size() * 8) as u8,
            lanes: 1,
        }
    }

    /// Reads a DLPack dtype, refusing vector lanes and types dlbridge cannot compute with.
    pub fn from_dlpack(dt: DLDataType) -> Result<DType> {
        let found = match (dt.code, dt.bits, dt.lanes) {
            (DLDataTypeCode::BOOL, 8, 1) => Some(DType::Bool),
            (DLDataTypeCode::UINT, 8, 1) => Some(DType::U8),
            (DLDataTypeCode::UINT, 16, 1) => Some(DType::U16),
            (DLDataTypeCode::UINT, 32, 1) => Some(DType::U32),
            (DLDataTypeCode::UINT, 64, 1) => Some(DType::U64),
            (DLDataTypeCode::INT, 8, 1) => Some(DType::I8),
            (DLDataTypeCode::INT, 16, 1) => Some(DType::I16),
            (DLDataTypeCode::INT, 32, 1) => Some(DType::I32),
            (DLDataTypeCode::INT, 64, 1) => Some(DType::I64),
            (DLDataTypeCode::FLOAT, 16, 1) => Some(DType::F16),
            (DLDataTypeCode::FLOAT, 32, 1) => Some(DType::F32),
            (DLDataTypeCode::FLOAT, 64, 1) => Some(DType::F64),
            (DLDataTypeCode::BFLOAT, 16, 1) => Some(DType::BF16),
            (DLDataTypeCode::COMPLEX, 64, 1) => Some(DType::C64),
            (DLDataTypeCode::COMPLEX, 128, 1) => Some(DType::C128),
            _ => None,
        };
        found.ok_or_else(|| {
            crate::err!(
                UnsupportedDtype,
                "unsupported DLPack dtype (code={}, bits={}, lanes={}); dlbridge supports bool, \
                 (u)int8/16/32/64, float16, bfloat16, float32, float64, complex64 and complex128",
                dt.code.0,
                dt.bits,
                dt.lanes
            )
        })
    }

    /// The real type with the same precision as a complex one (and the identity otherwise).
    pub fn to_real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            other => other,
        }
    }

    /// The type arithmetic on this dtype computes in, as PyTorch's kernels
    /// do: float16 and bfloat16 compute in float32 and round once at the end.
    pub fn compute_dtype(self) -> DType {
        match self {
            DType::F16 | DType::BF16 => DType::F32,
            other => other,
        }
    }

    /// The complex type whose components have this floating type's precision.
    fn to_complex(self) -> DType {
        match self {
            DType::F64 | DType::C128 => DType::C128,
            _ => DType::C64,
        }
    }

    /// `torch.promote_types`: the smallest dtype both values fit in.
    pub fn promote(a: DType, b: DType) -> Result<DType> {
        use Category::*;
        if a == b {
            return Ok(a);
        }
        let (lo, hi) = if a.category() <= b.category() {
            (a, b)
        } else {
            (b, a)
        };
        Ok(match (lo.category(), hi.category()) {
            (Bool, _) => hi,
            (_, Complex) => {
                let real = DType::promote(lo.to_real(), hi.to_real())?;
                if real == DType::F64 || lo == DType::C128 {
                    DType::C128
                } else {
                    hi.to_complex().max(real.to_complex())
                }
            }
            (Floating, Floating) => {
                if lo.size() == hi.size() {
                    DType::F32
                } else if lo.size() > hi.size() {
                    lo
                } else {
                    hi
                }
            }
            (Integral, Floating) => hi,
            (Integral, Integral) => promote_integers(a, b)?,
            _ => unreachable!("categories are ordered"),
        })
    }

    /// `torch.can_cast`: may a value of `from` be written into `to` without
    /// losing its kind (complex to real, float to integer, number to bool)?
    pub fn can_cast(from: DType, to: DType) -> bool {
        from.category() <= to.category()
    }
}

fn promote_integers(a: DType, b: DType) -> Result<DType> {
    let (signed, unsigned) = match (a.is_signed(), b.is_signed()) {
        (true, true) => return Ok(if a.size() >= b.size() { a } else { b }),
        (false, false) => return Ok(if a.size() >= b.size() { a } else { b }),
        (true, false) => (a, b),
        (false, true) => (b, a),
    };
    // A signed type holds an unsigned one only when it is strictly wider.
    let needed = (unsigned.size() * 2).max(signed.size());
    Ok(match needed {
        2 => DType::I16,
        4 => DType::I32,
        8 => DType::I64,
        _ => bail!(
            InvalidOperation,
            "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote {} and {}",
            unsigned.scalar_type_name(),
            signed.scalar_type_name()
        ),
    })
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "dlbridge.{}", self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::DType::*;
    use super::*;

    #[test]
    fn dlpack_codes_round_trip() {
        for dt in DType::ALL {
            assert_eq!(DType::from_dlpack(dt.to_dlpack()).unwrap(), dt);
            assert_eq!(DType::from_name(dt.name()), Some(dt));
        }
    }

    #[test]
    fn vector_lanes_and_fp8_are_refused() {
        let mut dt = F32.to_dlpack();
        dt.lanes = 4;
        assert!(DType::from_dlpack(dt).err().unwrap().kind() == crate::ErrorKind::UnsupportedDtype);
        let fp8 = DLDataType {
            code: DLDataTypeCode::FLOAT8_E4M3FN,
            bits: 8,
            lanes: 1,
        };
        assert!(DType::from_dlpack(fp8).is_err());
    }

    #[test]
    fn promotion_matches_torch() {
        let cases = [
            (Bool, I8, I8),
            (U8, I8, I16),
            (U8, I16, I16),
            (I32, I64, I64),
            (I64, F16, F16),
            (F16, BF16, F32),
            (F16, F64, F64),
            (BF16, F32, F32),
            (C64, F64, C128),
            (C64, F16, C64),
            (I64, C64, C64),
            (C64, C128, C128),
            (U16, I8, I32),
            (U32, I64, I64),
            (Bool, Bool, Bool),
        ];
        for (a, b, want) in cases {
            assert_eq!(DType::promote(a, b).unwrap(), want, "{a:?} {b:?}");
            assert_eq!(DType::promote(b, a).unwrap(), want, "{b:?} {a:?}");
        }
        assert!(DType::promote(U64, I8).is_err());
    }

    #[test]
    fn casting_rules_follow_categories() {
        assert!(DType::can_cast(I64, F32));
        assert!(!DType::can_cast(F32, I64));
        assert!(!DType::can_cast(C64, F64));
        assert!(!DType::can_cast(I8, Bool));
        assert!(DType::can_cast(Bool, U8));
    }
}
