//! Element types: every fact about each one in one table ([`dtypes!`]),
//! and PyTorch's promotion rules.

use crate::{Result, bail};
use dlpark::ffi::{DLDataType, DLDataTypeCode};

/// The dtype table: one line per dtype, every fact about it.
///
/// `dtypes!([callback] (args))` hands `(args)` and the lines to `callback`:
/// the [`DType`] enum and its accessors below and the element dispatch
/// ([`with_element!`](crate::with_element),
/// [`with_compute_element!`](crate::with_compute_element)) are made from
/// these lines, so a new dtype is a new line here (and, for a new Rust
/// type, its `Element` impl in `element.rs`).
///
/// The columns: the variant; the Rust type that stores one element; the
/// name after `dlbridge.` (ml_dtypes uses the same); PyTorch's C++
/// scalar-type name (its error messages quote it); PyTorch's aliases; the
/// category PyTorch's promotion uses; `Computed` (with the dtype arithmetic
/// runs in when not its own) or `Stored` (stored, exchanged, copied and
/// cast, never computed with); its real part's dtype; the DLPack code, bits
/// and lanes; the sign (`torch.dtype.is_signed`); NumPy's type string (as
/// `__array_interface__` spells it), `ml_dtypes` or `none`; the CUDA
/// kernels' type name (`kernels/common.cuh`), or `none`.
#[doc(hidden)]
#[macro_export]
macro_rules! dtypes {
    ([$($callback:tt)*] $args:tt) => {
        $($callback)*! { $args
        // variant      Rust type                            name                  PyTorch's name        aliases      category  arithmetic    real        DLPack code            sign      NumPy      CUDA
        Bool          = bool,                                "bool",               "Bool",               [],          Bool,     Computed,     Bool,       BOOL 8 1,              Unsigned, "|b1",     "b8";
        U8            = u8,                                  "uint8",              "Byte",               [],          Integral, Computed,     U8,         UINT 8 1,              Unsigned, "|u1",     "u8";
        I8            = i8,                                  "int8",               "Char",               [],          Integral, Computed,     I8,         INT 8 1,               Signed,   "|i1",     "i8";
        I16           = i16,                                 "int16",              "Short",              ["short"],   Integral, Computed,     I16,        INT 16 1,              Signed,   "<i2",     "i16";
        I32           = i32,                                 "int32",              "Int",                ["int"],     Integral, Computed,     I32,        INT 32 1,              Signed,   "<i4",     "i32";
        I64           = i64,                                 "int64",              "Long",               ["long"],    Integral, Computed,     I64,        INT 64 1,              Signed,   "<i8",     "i64";
        U16           = u16,                                 "uint16",             "UInt16",             [],          Integral, Computed,     U16,        UINT 16 1,             Unsigned, "<u2",     "u16";
        U32           = u32,                                 "uint32",             "UInt32",             [],          Integral, Computed,     U32,        UINT 32 1,             Unsigned, "<u4",     "u32";
        U64           = u64,                                 "uint64",             "UInt64",             [],          Integral, Computed,     U64,        UINT 64 1,             Unsigned, "<u8",     "u64";
        F16           = half::f16,                           "float16",            "Half",               ["half"],    Floating, Computed F32, F16,        FLOAT 16 1,            Signed,   "<f2",     "f16";
        BF16          = half::bf16,                          "bfloat16",           "BFloat16",           [],          Floating, Computed F32, BF16,       BFLOAT 16 1,           Signed,   ml_dtypes, "bf16";
        F32           = f32,                                 "float32",            "Float",              ["float"],   Floating, Computed,     F32,        FLOAT 32 1,            Signed,   "<f4",     "f32";
        F64           = f64,                                 "float64",            "Double",             ["double"],  Floating, Computed,     F64,        FLOAT 64 1,            Signed,   "<f8",     "f64";
        C64           = num_complex::Complex32,              "complex64",          "ComplexFloat",       ["cfloat"],  Complex,  Computed,     F32,        COMPLEX 64 1,          Signed,   "<c8",     none;
        C128          = num_complex::Complex64,              "complex128",         "ComplexDouble",      ["cdouble"], Complex,  Computed,     F64,        COMPLEX 128 1,         Signed,   "<c16",    none;
        F8E3M4        = $crate::element::Float8E3M4,         "float8_e3m4",        "Float8_e3m4",        [],          Floating, Stored,       F8E3M4,     FLOAT8_E3M4 8 1,       Signed,   ml_dtypes, none;
        F8E4M3        = $crate::element::Float8E4M3,         "float8_e4m3",        "Float8_e4m3",        [],          Floating, Stored,       F8E4M3,     FLOAT8_E4M3 8 1,       Signed,   ml_dtypes, none;
        F8E4M3B11FNUZ = $crate::element::Float8E4M3B11Fnuz,  "float8_e4m3b11fnuz", "Float8_e4m3b11fnuz", [],          Floating, Stored,       F8E4M3B11FNUZ, FLOAT8_E4M3B11FNUZ 8 1, Signed, ml_dtypes, none;
        F8E4M3FN      = $crate::element::Float8E4M3Fn,       "float8_e4m3fn",      "Float8_e4m3fn",      [],          Floating, Stored,       F8E4M3FN,   FLOAT8_E4M3FN 8 1,     Signed,   ml_dtypes, none;
        F8E4M3FNUZ    = $crate::element::Float8E4M3Fnuz,     "float8_e4m3fnuz",    "Float8_e4m3fnuz",    [],          Floating, Stored,       F8E4M3FNUZ, FLOAT8_E4M3FNUZ 8 1,   Signed,   ml_dtypes, none;
        F8E5M2        = $crate::element::Float8E5M2,         "float8_e5m2",        "Float8_e5m2",        [],          Floating, Stored,       F8E5M2,     FLOAT8_E5M2 8 1,       Signed,   ml_dtypes, none;
        F8E5M2FNUZ    = $crate::element::Float8E5M2Fnuz,     "float8_e5m2fnuz",    "Float8_e5m2fnuz",    [],          Floating, Stored,       F8E5M2FNUZ, FLOAT8_E5M2FNUZ 8 1,   Signed,   ml_dtypes, none;
        F8E8M0FNU     = $crate::element::Float8E8M0Fnu,      "float8_e8m0fnu",     "Float8_e8m0fnu",     [],          Floating, Stored,       F8E8M0FNU,  FLOAT8_E8M0FNU 8 1,    Unsigned, ml_dtypes, none;
        F6E2M3FN      = $crate::element::Float6E2M3Fn,       "float6_e2m3fn",      "Float6_e2m3fn",      [],          Floating, Stored,       F6E2M3FN,   FLOAT6_E2M3FN 6 1,     Signed,   ml_dtypes, none;
        F6E3M2FN      = $crate::element::Float6E3M2Fn,       "float6_e3m2fn",      "Float6_e3m2fn",      [],          Floating, Stored,       F6E3M2FN,   FLOAT6_E3M2FN 6 1,     Signed,   ml_dtypes, none;
        F4E2M1FN      = $crate::element::Float4E2M1Fn,       "float4_e2m1fn",      "Float4_e2m1fn",      [],          Floating, Stored,       F4E2M1FN,   FLOAT4_E2M1FN 4 1,     Signed,   ml_dtypes, none;
        F4E2M1FNX2    = $crate::element::Float4E2M1FnX2,     "float4_e2m1fn_x2",   "Float4_e2m1fn_x2",   [],          Floating, Stored,       F4E2M1FNX2, FLOAT4_E2M1FN 4 2,     Signed,   none,      none;
        C32           = $crate::element::ComplexHalf,        "complex32",          "ComplexHalf",        ["chalf"],   Complex,  Stored,       F16,        COMPLEX 32 1,          Signed,   none,      none;
        }
    };
}

/// Defines [`DType`] and its per-dtype accessors from the table's lines.
macro_rules! define_dtypes {
    (() $(
        $v:ident = $elem:ty, $name:literal, $torch:literal, [$($alias:literal),*], $cat:ident,
        $arith:ident $($compute:ident)?, $real:ident, $code:ident $bits:literal $lanes:literal,
        $sign:ident, $numpy:tt, $cuda:tt;
    )*) => {
        /// The element types dlbridge stores and computes with: the lines of
        /// [`dtypes!`]. The narrow types of DLPack 1.3 and complex32 are
        /// stored, exchanged, copied and cast, but not computed with (see
        /// [`DType::is_storage_only`]); `F4E2M1FN` holds one float4 value
        /// per byte (ml_dtypes' layout), `F4E2M1FNX2` two, low nibble first
        /// (PyTorch's `float4_e2m1fn_x2`, a byte an element); `C32` is
        /// PyTorch's `complex32`, two float16.
        ///
        /// ```
        /// use dlbridge::DType;
        /// assert_eq!(DType::from_name("torch.long"), Some(DType::I64));
        /// assert_eq!((DType::BF16.name(), DType::BF16.size()), ("bfloat16", 2));
        /// assert_eq!(DType::promote(DType::I32, DType::F16)?, DType::F16);
        /// assert!(DType::F8E4M3FN.is_storage_only());
        /// # Ok::<(), dlbridge::Error>(())
        /// ```
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum DType {
            $(#[doc = concat!("`", $name, "` (PyTorch's `", $torch, "`).")] $v,)*
        }

        impl DType {
            /// Every dtype, in the order the Python module lists them.
            pub const ALL: [DType; [$(DType::$v),*].len()] = [$(DType::$v),*];

            /// The name shown after `dlbridge.` (`float64`, `bfloat16`, ...).
            pub const fn name(self) -> &'static str {
                match self { $(DType::$v => $name,)* }
            }

            /// PyTorch's C++ scalar-type name, used verbatim in its error messages
            /// ("result type Float can't be cast to the desired output type Long").
            pub const fn scalar_type_name(self) -> &'static str {
                match self { $(DType::$v => $torch,)* }
            }

            /// PyTorch's C type name, as its `fill_` overflow message spells it
            /// (`int16_t`; the dtype's own name for all but the integers).
            pub const fn c_type_name(self) -> &'static str {
                match self {
                    $(DType::$v => if matches!(Category::$cat, Category::Integral) {
                        concat!($name, "_t")
                    } else {
                        $name
                    },)*
                }
            }

            /// PyTorch's other names for this dtype (`long`, `half`, ...).
            pub const fn aliases(self) -> &'static [&'static str] {
                match self { $(DType::$v => &[$($alias),*],)* }
            }

            /// Looks a dtype up by name, accepting PyTorch's aliases (`float`, `long`, ...).
            pub fn from_name(name: &str) -> Option<DType> {
                let name = name.strip_prefix("dlbridge.").unwrap_or(name);
                let name = name.strip_prefix("torch.").unwrap_or(name);
                match name {
                    $($name $(| $alias)* => Some(DType::$v),)*
                    _ => None,
                }
            }

            /// Bytes per element: always a power of two (the export path relies on it).
            pub const fn size(self) -> usize {
                match self { $(DType::$v => std::mem::size_of::<$elem>(),)* }
            }

/// The dtype's kind in PyTorch's promotion rules.
            pub const fn category(self) -> Category {
                match self { $(DType::$v => Category::$cat,)* }
            }

            /// The DLPack 1.3 narrow types and complex32: dlbridge stores,
            /// exchanges, copies and casts them, and refuses arithmetic on them
            /// (PyTorch has no kernels for most of it either).
            pub const fn is_storage_only(self) -> bool {
                match self { $(DType::$v => matches!(Arith::$arith, Arith::Stored),)* }
            }

            /// The type arithmetic on this dtype computes in, as PyTorch's kernels
            /// do: float16 and bfloat16 compute in float32 and round once at the end.
            pub const fn compute_dtype(self) -> DType {
                match self { $(DType::$v => compute_or!($($compute)? $v),)* }
            }

            /// The real type with the same precision as a complex one (and the identity otherwise).
            pub const fn to_real(self) -> DType {
                match self { $(DType::$v => DType::$real,)* }
            }

            /// Signed in PyTorch's sense (`torch.dtype.is_signed`).
            pub const fn is_signed(self) -> bool {
                match self { $(DType::$v => matches!(Sign::$sign, Sign::Signed),)* }
            }

            /// The DLPack descriptor of this dtype: one lane, but for PyTorch's
            /// packed pair of float4 (bits 4, lanes 2, as PyTorch spells it).
            pub const fn to_dlpack(self) -> DLDataType {
                let (code, bits, lanes) = match self {
                    $(DType::$v => (DLDataTypeCode::$code, $bits, $lanes),)*
                };
                DLDataType { code, bits, lanes }
            }

            /// How NumPy holds this dtype.
            pub const fn numpy(self) -> NumpyType {
                match self { $(DType::$v => numpy_type!($numpy),)* }
            }

            /// The type name the CUDA kernels use for this dtype (the suffix
            /// of their names); None: no kernels take it.
            pub const fn cuda_type(self) -> Option<&'static str> {
                match self { $(DType::$v => cuda_type!($cuda),)* }
            }
        }
    };
}

/// The arithmetic column's dtype: the one named, else the line's own.
macro_rules! compute_or {
    ($compute:ident $v:ident) => {
        DType::$compute
    };
    ($v:ident) => {
        DType::$v
    };
}

macro_rules! numpy_type {
    ($typestr:literal) => {
        NumpyType::Builtin($typestr)
    };
    (ml_dtypes) => {
        NumpyType::MlDtypes
    };
    (none) => {
        NumpyType::None
    };
}

macro_rules! cuda_type {
    ($name:literal) => {
        Some($name)
    };
    (none) => {
        None
    };
}

crate::dtypes!([define_dtypes]());

/// The table's arithmetic column.
enum Arith {
    Computed,
    Stored,
}

/// The table's sign column.
enum Sign {
    Signed,
    Unsigned,
}

/// How NumPy holds a dtype.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NumpyType {
    /// A NumPy builtin, by its type string (`<f4`): the kind is its second
    /// byte, the item size [`DType::size`].
    Builtin(&'static str),
    /// ml_dtypes' type of the same name (bfloat16, the narrow floats).
    MlDtypes,
    /// NumPy cannot hold it.
    None,
}

/// Coarse kinds used by PyTorch's promotion rules; ordered low to high.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// `bool`.
    Bool,
    /// The integers, signed and unsigned.
    Integral,
    /// The floats, the narrow ones included.
    Floating,
    /// The complex dtypes.
    Complex,
}

impl DType {
    /// The dtype PyTorch picks for Python floats and for `Tensor(...)`.
    pub const DEFAULT_FLOAT: DType = DType::F32;

    /// This dtype's position in [`DType::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The NumPy builtin of this kind (`b'f'`) and item size, if any: one
    /// lookup in a table the compiler builds from [`DType::numpy`]
    /// (`from_numpy` asks on every call).
    pub fn from_numpy_kind(kind: u8, size: usize) -> Option<DType> {
        /// By kind (its low five bits: b, c, f, i and u differ there) and
        /// log2 of the size.
        const LOOKUP: [[Option<DType>; 5]; 32] = {
            let mut table = [[None; 5]; 32];
            let mut i = 0;
            while i < DType::ALL.len() {
                let d = DType::ALL[i];
                if let NumpyType::Builtin(typestr) = d.numpy() {
                    let kind = typestr.as_bytes()[1];
                    table[(kind & 31) as usize][d.size().trailing_zeros() as usize] = Some(d);
                }
                i += 1;
            }
            table
        };
        if !size.is_power_of_two() || size > 16 {
            return None;
        }
        let found = LOOKUP[usize::from(kind & 31)][size.trailing_zeros() as usize]?;
        match found.numpy() {
            NumpyType::Builtin(typestr) if typestr.as_bytes()[1] == kind => Some(found),
            _ => None,
        }
    }

    /// float8, float6 and float4 (which PyTorch does not promote with others).
    pub fn is_narrow_float(self) -> bool {
        self.is_storage_only() && self.category() == Category::Floating
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

    /// Whether DLPack must be told this type is padded (one sub-byte value
    /// per byte, `IS_SUBBYTE_TYPE_PADDED`).
    pub fn is_padded_subbyte(self) -> bool {
        let dl = self.to_dlpack();
        usize::from(dl.bits) * usize::from(dl.lanes) < self.size() * 8
    }

    /// Whether this is a floating dtype (PyTorch's `is_floating_point`).
    pub fn is_floating_point(self) -> bool {
        self.category() == Category::Floating
    }

    /// Whether this is a complex dtype.
    pub fn is_complex(self) -> bool {
        self.category() == Category::Complex
    }

    /// Reads a DLPack dtype, refusing vector lanes and types dlbridge does
    /// not have. float6 and float4 with one lane read as padded (one value
    /// per byte); the importer turns packed float4 into pairs.
    ///
    /// ```
    /// use dlbridge::{DType, ffi::{DLDataType, DLDataTypeCode}};
    /// let dt = DLDataType { code: DLDataTypeCode::FLOAT, bits: 16, lanes: 1 };
    /// assert_eq!(DType::from_dlpack(dt)?, DType::F16);
    /// assert_eq!(DType::F16.to_dlpack().bits, 16);
    /// assert!(DType::from_dlpack(DLDataType { lanes: 4, ..dt }).is_err());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
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

    /// The complex type whose components have this floating type's precision.
    fn to_complex(self) -> DType {
        match self {
            DType::F64 | DType::C128 => DType::C128,
            _ => DType::C64,
        }
    }

    /// `torch.promote_types`: the smallest dtype both values fit in. A
    /// dtype's rank in promotion is its row's category (bool < integral <
    /// floating < complex), then its size and sign, all read from the
    /// table; the dtypes named below are PyTorch's results (float32 for two
    /// floats of one size, the signed integer that holds an unsigned one).
    ///
    /// ```
    /// use dlbridge::DType;
    /// assert_eq!(DType::promote(DType::U8, DType::I8)?, DType::I16);
    /// assert_eq!(DType::promote(DType::BF16, DType::F16)?, DType::F32);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
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
    ///
    /// ```
    /// use dlbridge::DType;
    /// assert!(DType::can_cast(DType::I64, DType::F32));
    /// assert!(!DType::can_cast(DType::F32, DType::I64)); // no float into an int in place
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
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
