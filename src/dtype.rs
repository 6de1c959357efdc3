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
    // The narrow types of DLPack 1.3: stored, exchanged, copied and cast,
    // but not computed with (see `is_storage_only`).
    F8E3M4,
    F8E4M3,
    F8E4M3B11FNUZ,
    F8E4M3FN,
    F8E4M3FNUZ,
    F8E5M2,
    F8E5M2FNUZ,
    F8E8M0FNU,
    F6E2M3FN,
    F6E3M2FN,
    /// One float4_e2m1fn value per byte (ml_dtypes' layout).
    F4E2M1FN,
    /// Two float4_e2m1fn values per byte, low nibble first (PyTorch's
    /// `float4_e2m1fn_x2`): a byte is one element.
    F4E2M1FNX2,
    /// PyTorch's `complex32`: two float16.
    C32,
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
    pub const ALL: [DType; 28] = [
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
        DType::F8E3M4,
        DType::F8E4M3,
        DType::F8E4M3B11FNUZ,
        DType::F8E4M3FN,
        DType::F8E4M3FNUZ,
        DType::F8E5M2,
        DType::F8E5M2FNUZ,
        DType::F8E8M0FNU,
        DType::F6E2M3FN,
        DType::F6E3M2FN,
        DType::F4E2M1FN,
        DType::F4E2M1FNX2,
        DType::C32,
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
            DType::F8E3M4 => "float8_e3m4",
            DType::F8E4M3 => "float8_e4m3",
            DType::F8E4M3B11FNUZ => "float8_e4m3b11fnuz",
            DType::F8E4M3FN => "float8_e4m3fn",
            DType::F8E4M3FNUZ => "float8_e4m3fnuz",
            DType::F8E5M2 => "float8_e5m2",
            DType::F8E5M2FNUZ => "float8_e5m2fnuz",
            DType::F8E8M0FNU => "float8_e8m0fnu",
            DType::F6E2M3FN => "float6_e2m3fn",
            DType::F6E3M2FN => "float6_e3m2fn",
            DType::F4E2M1FN => "float4_e2m1fn",
            DType::F4E2M1FNX2 => "float4_e2m1fn_x2",
            DType::C32 => "complex32",
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
            DType::F8E3M4 => "Float8_e3m4",
            DType::F8E4M3 => "Float8_e4m3",
            DType::F8E4M3B11FNUZ => "Float8_e4m3b11fnuz",
            DType::F8E4M3FN => "Float8_e4m3fn",
            DType::F8E4M3FNUZ => "Float8_e4m3fnuz",
            DType::F8E5M2 => "Float8_e5m2",
            DType::F8E5M2FNUZ => "Float8_e5m2fnuz",
            DType::F8E8M0FNU => "Float8_e8m0fnu",
            DType::F6E2M3FN => "Float6_e2m3fn",
            DType::F6E3M2FN => "Float6_e3m2fn",
            DType::F4E2M1FN => "Float4_e2m1fn",
            DType::F4E2M1FNX2 => "Float4_e2m1fn_x2",
            DType::C32 => "ComplexHalf",
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
            "complex32" | "chalf" => DType::C32,
            other => return DType::ALL[15..].iter().copied().find(|d| d.name() == other),
        })
    }

    /// Bytes per element: always a power of two (the export path relies on it).
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 | DType::C32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
            _ => 1, // the narrow floats, one byte each
        }
    }

    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::C32 | DType::C64 | DType::C128 => Category::Complex,
            DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64
            | DType::U16
            | DType::U32
            | DType::U64 => Category::Integral,
            _ => Category::Floating,
        }
    }

    /// The DLPack 1.3 narrow types and complex32: dlbridge stores, exchanges,
    /// copies and casts them, and refuses arithmetic on them (PyTorch has
    /// no kernels for most of it either).
    pub fn is_storage_only(self) -> bool {
        self.is_narrow_float() || self == DType::C32
    }

    /// float8, float6 and float4 (which PyTorch does not promote with others).
    pub fn is_narrow_float(self) -> bool {
        matches!(
            self,
            DType::F8E3M4
                | DType::F8E4M3
                | DType::F8E4M3B11FNUZ
                | DType::F8E4M3FN
                | DType::F8E4M3FNUZ
                | DType::F8E5M2
                | DType::F8E5M2FNUZ
                | DType::F8E8M0FNU
                | DType::F6E2M3FN
                | DType::F6E3M2FN
                | DType::F4E2M1FN
                | DType::F4E2M1FNX2
        )
    }

    /// The unsigned integer type of the same size: storage-only tensors are
    /// copied and filled as it, bit for bit, on every device.
    pub fn bits_twin(self) -> DType {
        match self.size() {
            1 => DType::U8,
            2 => DType::U16,
            4 => DType::U32,
            _ => DType::U64,
        }
    }

    /// Bits per value in DLPack's spelling (float6 and float4 are sub-byte).
    fn dlpack_bits(self) -> u8 {
        match self {
            DType::F6E2M3FN | DType::F6E3M2FN => 6,
            DType::F4E2M1FN | DType::F4E2M1FNX2 => 4,
            other => (other.size() * 8) as u8,
        }
    }

    /// Whether DLPack must be told this type is padded (one sub-byte value
    /// per byte, `IS_SUBBYTE_TYPE_PADDED`).
    pub fn is_padded_subbyte(self) -> bool {
        matches!(self, DType::F6E2M3FN | DType::F6E3M2FN | DType::F4E2M1FN)
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
            DType::Bool | DType::U8 | DType::U16 | DType::U32 | DType::U64 | DType::F8E8M0FNU
        )
    }

    /// The DLPack descriptor of this dtype: one lane, but for PyTorch's
    /// packed pair of float4 (bits 4, lanes 2, as PyTorch spells it).
    pub fn to_dlpack(self) -> DLDataType {
        let code = match self {
            DType::Bool => DLDataTypeCode::BOOL,
            DType::BF16 => DLDataTypeCode::BFLOAT,
            DType::F16 | DType::F32 | DType::F64 => DLDataTypeCode::FLOAT,
            DType::C32 | DType::C64 | DType::C128 => DLDataTypeCode::COMPLEX,
            DType::F8E3M4 => DLDataTypeCode::FLOAT8_E3M4,
            DType::F8E4M3 => DLDataTypeCode::FLOAT8_E4M3,
            DType::F8E4M3B11FNUZ => DLDataTypeCode::FLOAT8_E4M3B11FNUZ,
            DType::F8E4M3FN => DLDataTypeCode::FLOAT8_E4M3FN,
            DType::F8E4M3FNUZ => DLDataTypeCode::FLOAT8_E4M3FNUZ,
            DType::F8E5M2 => DLDataTypeCode::FLOAT8_E5M2,
            DType::F8E5M2FNUZ => DLDataTypeCode::FLOAT8_E5M2FNUZ,
            DType::F8E8M0FNU => DLDataTypeCode::FLOAT8_E8M0FNU,
            DType::F6E2M3FN => DLDataTypeCode::FLOAT6_E2M3FN,
            DType::F6E3M2FN => DLDataTypeCode::FLOAT6_E3M2FN,
            DType::F4E2M1FN | DType::F4E2M1FNX2 => DLDataTypeCode::FLOAT4_E2M1FN,
            _ if self.is_signed() => DLDataTypeCode::INT,
            _ => DLDataTypeCode::UINT,
        };
        DLDataType {
            code,
            bits: self.dlpack_bits(),
            lanes: if self == DType::F4E2M1FNX2 { 2 } else { 1 },
        }
    }

    /// Reads a DLPack dtype, refusing vector lanes and types dlbridge does
    /// not have. float6 and float4 with one lane read as padded (one value
    /// per byte); the importer turns packed float4 into pairs.
    pub fn from_dlpack(dt: DLDataType) -> Result<DType> {
        let found = DType::ALL.into_iter().find(|d| {
            let want = d.to_dlpack();
            (want.code, want.bits, want.lanes) == (dt.code, dt.bits, dt.lanes)
        });
        found.ok_or_else(|| {
            crate::err!(
                UnsupportedDtype,
                "unsupported DLPack dtype (code={}, bits={}, lanes={}); dlbridge supports bool, \
                 (u)int8/16/32/64, float16, bfloat16, float32, float64, complex32/64/128, and the \
                 float8, float6 and float4 types of DLPack 1.3, one lane each (float4 also as \
                 PyTorch's pair, bits=4 lanes=2)",
                dt.code.0,
                dt.bits,
                dt.lanes
            )
        })
    }

    /// The real type with the same precision as a complex one (and the identity otherwise).
    pub fn to_real(self) -> DType {
        match self {
            DType::C32 => DType::F16,
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
        if a.is_narrow_float() || b.is_narrow_float() {
            let family = if a.is_narrow_float() { a } else { b }.scalar_type_name();
            bail!(
                InvalidOperation,
                "Promotion for {} Types is not supported, attempted to promote {} and {}",
                &family[..family.find('_').unwrap_or(family.len())],
                a.scalar_type_name(),
                b.scalar_type_name()
            );
        }
        // complex32 meets other types as complex64 would (it computes in nothing).
        if a == DType::C32 || b == DType::C32 {
            let widen = |d| if d == DType::C32 { DType::C64 } else { d };
            return DType::promote(widen(a), widen(b));
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
    fn sizes_are_powers_of_two() {
        for dt in DType::ALL {
            assert!(dt.size().is_power_of_two(), "{dt:?}");
        }
    }

    #[test]
    fn dlpack_codes_round_trip() {
        for dt in DType::ALL {
            assert_eq!(DType::from_dlpack(dt.to_dlpack()).unwrap(), dt);
            assert_eq!(DType::from_name(dt.name()), Some(dt));
        }
    }

    #[test]
    fn vector_lanes_are_refused_and_dlpack_1_3_types_read() {
        let mut dt = F32.to_dlpack();
        dt.lanes = 4;
        assert!(DType::from_dlpack(dt).err().unwrap().kind() == crate::ErrorKind::UnsupportedDtype);
        let fp8 = DLDataType {
            code: DLDataTypeCode::FLOAT8_E4M3FN,
            bits: 8,
            lanes: 1,
        };
        assert_eq!(DType::from_dlpack(fp8).unwrap(), F8E4M3FN);
        // PyTorch's pair of float4 and the spec's single one.
        let pair = DLDataType {
            code: DLDataTypeCode::FLOAT4_E2M1FN,
            bits: 4,
            lanes: 2,
        };
        assert_eq!(DType::from_dlpack(pair).unwrap(), F4E2M1FNX2);
        assert_eq!(
            DType::from_dlpack(DLDataType { lanes: 1, ..pair }).unwrap(),
            F4E2M1FN
        );
        assert!(DType::promote(F8E4M3FN, F32).is_err());
        assert_eq!(DType::promote(C32, F32).unwrap(), C64);
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
