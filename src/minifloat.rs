//! The narrow floats of DLPack 1.3 (float8, float6, float4): their bit
//! layouts and the conversions to and from float32.
//!
//! Every format is one byte per value here (float6 and float4 padded; the
//! packed pair `float4_e2m1fn_x2` is a byte of two such values). Rounding is
//! to nearest, ties to even, as PyTorch's and ml_dtypes' conversions do; what
//! happens to NaN, infinities and values past the largest finite one follows
//! PyTorch for the five formats PyTorch has, ml_dtypes (JAX's) for the others.
//! The two disagree only there (PyTorch saturates float8_e4m3fn, ml_dtypes
//! gives NaN, for one), and `tests/python/test_narrow_dtypes.py` checks every
//! float16 and bfloat16 value against the library dlbridge follows.

/// 2^e, exactly (for |e| < 1000): built from its bits, since `powi` may
/// be off in the last place (Miri perturbs it on purpose).
fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// How a format spends its top codes, if at all, on NaN and infinity.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Specials {
    /// IEEE-like: the all-ones exponent holds infinities and NaNs.
    Ieee,
    /// "fn": no infinities; only all-ones exponent and mantissa is NaN.
    FiniteNan,
    /// "fnuz": no infinities, no negative zero; the negative-zero code is NaN.
    FiniteNanUnsignedZero,
    /// float6 and float4: every code is a finite number.
    Finite,
}

/// What a value past the largest finite one becomes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Overflow {
    Saturate,
    Infinity,
    Nan,
}

/// A sign-exponent-mantissa format of at most 8 bits.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Format {
    ebits: u32,
    mbits: u32,
    bias: i32,
    specials: Specials,
    overflow: Overflow,
    /// The codes a positive and a negative NaN become.
    nan: (u8, u8),
}

impl Format {
    const fn new(
        ebits: u32,
        mbits: u32,
        bias: i32,
        specials: Specials,
        overflow: Overflow,
    ) -> Self {
        let sign = 1u8 << (ebits + mbits);
        let nan = match specials {
            // The quiet NaN with the sign kept (ml_dtypes' spelling).
            Specials::Ieee => {
                let q = (((1u8 << ebits) - 1) << mbits) | (1 << (mbits - 1));
                (q, q | sign)
            }
            Specials::FiniteNan => {
                let all = (1u8 << (ebits + mbits)) - 1;
                (all, all | sign)
            }
            Specials::FiniteNanUnsignedZero => (sign, sign),
            // ml_dtypes writes NaN as the sign bit of a zero, flipped.
            Specials::Finite => (sign, 0),
        };
        Format {
            ebits,
            mbits,
            bias,
            specials,
            overflow,
            nan,
        }
    }

    const fn sign_bit(&self) -> u8 {
        1 << (self.ebits + self.mbits)
    }

    /// The largest finite value, as (exponent field, mantissa field).
    fn max_fields(&self) -> (u32, u32) {
        let (eall, mall) = ((1u32 << self.ebits) - 1, (1u32 << self.mbits) - 1);
        match self.specials {
            Specials::Ieee => (eall - 1, mall),
            Specials::FiniteNan => (eall, mall - 1),
            Specials::FiniteNanUnsignedZero | Specials::Finite => (eall, mall),
        }
    }

    fn value_of(&self, e: u32, m: u32) -> f64 {
        let emin = 1 - self.bias;
        if e == 0 {
            m as f64 * pow2(emin - self.mbits as i32)
        } else {
            ((1u32 << self.mbits) + m) as f64 * pow2(e as i32 - self.bias - self.mbits as i32)
        }
    }

    /// The value of a code (bits above the format's width are ignored).
    pub fn decode(&self, code: u8) -> f32 {
        let code = code & (self.sign_bit() | (self.sign_bit() - 1));
        let negative = code & self.sign_bit() != 0;
        let e = u32::from(code >> self.mbits) & ((1 << self.ebits) - 1);
        let m = u32::from(code) & ((1 << self.mbits) - 1);
        let eall = (1u32 << self.ebits) - 1;
        let magnitude = match self.specials {
            Specials::FiniteNanUnsignedZero if code == self.sign_bit() => f64::NAN,
            Specials::Ieee if e == eall && m == 0 => f64::INFINITY,
            Specials::Ieee if e == eall => f64::NAN,
            Specials::FiniteNan if e == eall && m == (1 << self.mbits) - 1 => f64::NAN,
            _ => self.value_of(e, m),
        };
        (if negative { -magnitude } else { magnitude }) as f32
    }

    /// The code nearest to `x` (ties to even).
    pub fn encode(&self, x: f32) -> u8 {
        if x.is_nan() {
            return if x.is_sign_negative() {
                self.nan.1
            } else {
                self.nan.0
            };
        }
        let sign = if x.is_sign_negative() {
            self.sign_bit()
        } else {
            0
        };
        let a = f64::from(x.abs());
        let (emax_field, mmax_field) = self.max_fields();
        let max = self.value_of(emax_field, mmax_field);
        let magnitude = if a.is_infinite() {
            None
        } else {
            let emin = 1 - self.bias;
            // The exponent of a (exact: a is a float32 widened to float64).
            let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
            let quantum = pow2(e.max(emin) - self.mbits as i32);
            let r = (a / quantum).round_ties_even() * quantum;
            (r <= max).then_some(r)
        };
        let code = match magnitude {
            Some(r) => self.fields_of(r),
            None => match (self.overflow, self.specials) {
                (Overflow::Infinity, Specials::Ieee) => ((1u8 << self.ebits) - 1) << self.mbits,
                (Overflow::Nan, _) => return if sign != 0 { self.nan.1 } else { self.nan.0 },
                _ => ((emax_field as u8) << self.mbits) | mmax_field as u8,
            },
        };
        if code == 0 && self.specials == Specials::FiniteNanUnsignedZero {
            return 0; // no negative zero
        }
        code | sign
    }

    /// The exponent and mantissa fields of a representable magnitude.
    fn fields_of(&self, r: f64) -> u8 {
        if r == 0.0 {
            return 0;
        }
        let emin = 1 - self.bias;
        let e = ((r.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        if e < emin {
            (r / pow2(emin - self.mbits as i32)) as u8
        } else {
            let m = (r / pow2(e - self.mbits as i32)) as u32 - (1 << self.mbits);
            (((e + self.bias) as u8) << self.mbits) | m as u8
        }
    }
}

pub const FLOAT8_E3M4: Format = Format::new(3, 4, 3, Specials::Ieee, Overflow::Infinity);
pub const FLOAT8_E4M3: Format = Format::new(4, 3, 7, Specials::Ieee, Overflow::Infinity);
pub const FLOAT8_E4M3B11FNUZ: Format =
    Format::new(4, 3, 11, Specials::FiniteNanUnsignedZero, Overflow::Nan);
/// PyTorch saturates (ml_dtypes gives NaN).
pub const FLOAT8_E4M3FN: Format = Format::new(4, 3, 7, Specials::FiniteNan, Overflow::Saturate);
pub const FLOAT8_E4M3FNUZ: Format =
    Format::new(4, 3, 8, Specials::FiniteNanUnsignedZero, Overflow::Nan);
/// PyTorch's NaN is all ones (ml_dtypes' the quiet one).
pub const FLOAT8_E5M2: Format = Format {
    nan: (0x7f, 0xff),
    ..Format::new(5, 2, 15, Specials::Ieee, Overflow::Infinity)
};
pub const FLOAT8_E5M2FNUZ: Format =
    Format::new(5, 2, 16, Specials::FiniteNanUnsignedZero, Overflow::Nan);
pub const FLOAT6_E2M3FN: Format = Format::new(2, 3, 1, Specials::Finite, Overflow::Saturate);
pub const FLOAT6_E3M2FN: Format = Format::new(3, 2, 3, Specials::Finite, Overflow::Saturate);
pub const FLOAT4_E2M1FN: Format = Format::new(2, 1, 1, Specials::Finite, Overflow::Saturate);

/// float8_e8m0fnu: an unsigned power of two, 2^(code - 127); 0xff is NaN.
/// As PyTorch: the sign is ignored, zero becomes the smallest power, and a
/// mantissa of one half or more rounds up.
pub mod e8m0 {
    pub fn decode(code: u8) -> f32 {
        if code == 0xff {
            f32::NAN
        } else {
            super::pow2(i32::from(code) - 127) as f32
        }
    }

    pub fn encode(x: f32) -> u8 {
        if x.is_nan() {
            return 0xff;
        }
        let bits = x.abs().to_bits();
        let (e, m) = (bits >> 23, bits & 0x7f_ffff);
        if e == 0 {
            // float32 subnormals: 2^-127 (code 0), or 2^-126 for any value
            // above 2^-127 (PyTorch's rule, checked on every bfloat16 value).
            return u8::from(m > 0x40_0000);
        }
        (e + u32::from(m >= 0x40_0000)).min(0xff) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(FLOAT8_E4M3FN.encode(448.0), 0x7e);
        assert_eq!(FLOAT8_E4M3FN.encode(1e6), 0x7e); // saturates, as PyTorch
        assert_eq!(FLOAT8_E4M3FN.encode(464.0), 0x7e); // a tie goes to the even 448
        assert_eq!(FLOAT8_E4M3FN.encode(-1.5), 0xbc);
        assert!(FLOAT8_E4M3FN.decode(0x7f).is_nan());
        assert_eq!(FLOAT8_E5M2.encode(f32::INFINITY), 0x7c);
        assert_eq!(FLOAT8_E5M2.encode(61440.0), 0x7c); // rounds past the max: infinity
        assert_eq!(FLOAT8_E5M2.decode(0x7b), 57344.0);
        assert_eq!(FLOAT8_E4M3FNUZ.encode(-0.0), 0);
        assert!(FLOAT8_E4M3FNUZ.decode(0x80).is_nan());
        assert_eq!(FLOAT8_E4M3FNUZ.encode(1e6), 0x80);
        assert_eq!(FLOAT4_E2M1FN.encode(6.5), 0x7);
        assert_eq!(FLOAT4_E2M1FN.decode(0x7), 6.0);
        assert_eq!(FLOAT4_E2M1FN.decode(0x9), -0.5);
        assert_eq!(FLOAT6_E2M3FN.decode(0x1f), 7.5);
        assert_eq!(FLOAT8_E3M4.decode(0x70), f32::INFINITY);
        assert_eq!(e8m0::encode(1.5), 128);
        assert_eq!(e8m0::encode(-0.75), 127);
        assert_eq!(e8m0::decode(127), 1.0);
    }

    #[test]
    fn every_code_round_trips() {
        for f in [
            FLOAT8_E3M4,
            FLOAT8_E4M3,
            FLOAT8_E4M3B11FNUZ,
            FLOAT8_E4M3FN,
            FLOAT8_E4M3FNUZ,
            FLOAT8_E5M2,
            FLOAT8_E5M2FNUZ,
            FLOAT6_E2M3FN,
            FLOAT6_E3M2FN,
            FLOAT4_E2M1FN,
        ] {
            let width = 1 + f.ebits + f.mbits;
            for code in 0..(1u32 << width) as u16 {
                let v = f.decode(code as u8);
                let unsigned_zero = v == 0.0 && f.specials == Specials::FiniteNanUnsignedZero;
                if !(v.is_nan() || unsigned_zero) {
                    assert_eq!(f.encode(v), code as u8, "{f:?} {code:#x} {v}");
                }
            }
        }
        for code in 0..255u8 {
            assert_eq!(e8m0::encode(e8m0::decode(code)), code);
        }
    }
}
