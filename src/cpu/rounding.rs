//! Rounding division and remainder (`floor_divide`, `remainder`, `fmod`,
//! and integer `div_trunc`) without a libm call or an `idiv` per element.
//!
//! Floats, as PyTorch's `c10::div_floor_floating` and remainder kernel
//! write them, each from fmod's exact value: libm's `fmod` reduces bit by
//! bit (8 to 30 ns an element, and a call the compiler cannot vectorize;
//! float32 `a % b` read 10x torch's). Where the truncated quotient is
//! small, fmod is one division and a multiply-add ([`FastFmod`]); [`block`]
//! runs that in every lane of a block (it vectorizes) and calls libm only
//! for the lanes it did not cover (infinities, NaN, zero divisors, huge
//! quotients).
//!
//! Integers: x86 has no vector integer division. Quotients of 8 to 32 bits
//! come exactly from float32/float64 division ([`IntQuotient`]), 64-bit
//! ones from float64 in the lanes below 2^52 and `idiv` in the others
//! ([`wide_block`]).
//!
//! Layer: under `arith` (whose types call these), beside nothing else of
//! the CPU backend.

use crate::backend::BinaryOp;

/// fmod's exact value where the quotient is small, branch-free.
pub(super) trait FastFmod: Copy {
    /// `(fmod(x, y), true)`, or `(_, false)` where this path does not
    /// apply (the value is then meaningless).
    fn fmod_fast(self, y: Self) -> (Self, bool);
}

impl FastFmod for f32 {
    /// In float64, `q = trunc(x / y)` is the exact truncated quotient while
    /// `|q| < 2^29` (x / y is a ratio of 24-bit integers scaled by powers of
    /// two, never within float64's rounding of an integer it is not), `q * y`
    /// is exact (29 + 24 bits) and so is `x - q * y` (below |y|, at most 48
    /// significant bits): fmod's value, which float32 holds exactly, with
    /// x's sign as fmod gives it (`fmod(-6, 3)` is -0).
    #[inline(always)]
    fn fmod_fast(self, y: f32) -> (f32, bool) {
        let (a, b) = (f64::from(self), f64::from(y));
        let q = (a / b).trunc();
        // q = 0 keeps x as it is (q * y would be NaN for an infinite y).
        let r = if q == 0.0 { a } else { a - q * b };
        ((r as f32).copysign(self), q.abs() < (1u64 << 29) as f64)
    }
}

impl FastFmod for f64 {
    /// `q = trunc(x / y)` while `|q| < 2^52`: x / y is within half an ulp
    /// (at most a quarter) of the true quotient and rounding is monotone,
    /// so q is the truncated quotient or one more in magnitude (the true
    /// quotient just below an integer, rounded up to it). `x - q * y` in
    /// one fused rounding is then fmod exactly (fmod is representable), or
    /// a value of the other sign than x's, which takes q one step back.
    #[inline(always)]
    fn fmod_fast(self, y: f64) -> (f64, bool) {
        let x = self;
        let q = (x / y).trunc();
        let r = if q == 0.0 { x } else { (-q).mul_add(y, x) };
        let over = r != 0.0 && (r < 0.0) != (x < 0.0);
        let r = if over {
            (1.0f64.copysign(q) - q).mul_add(y, x)
        } else {
            r
        };
        (r.copysign(x), q.abs() < (1u64 << 52) as f64)
    }
}

/// The rounding divisions and remainders of a float compute type, each
/// from `m = fmod(x, y)`.
pub(super) trait FloatDivision: FastFmod + std::ops::Rem<Output = Self> {
    /// C's `fmod`, exactly: the fast path, else libm's.
    #[inline(always)]
    fn fmod(self, y: Self) -> Self {
        match self.fmod_fast(y) {
            (m, true) => m,
            _ => self % y,
        }
    }
    /// `⌊x / y⌋` given `m = fmod(x, y)`.
    fn floor_with(self, y: Self, m: Self) -> Self;
    /// `x % y` with y's sign (Python's) given `m = fmod(x, y)`.
    fn remainder_with(self, y: Self, m: Self) -> Self;
    /// `x / y` rounded toward zero.
    fn div_trunc(self, y: Self) -> Self;
    /// `⌊x / y⌋`.
    #[inline(always)]
    fn floor_divide(self, y: Self) -> Self {
        self.floor_with(y, FloatDivision::fmod(self, y))
    }
    /// `x % y` with y's sign.
    #[inline(always)]
    fn remainder(self, y: Self) -> Self {
        self.remainder_with(y, FloatDivision::fmod(self, y))
    }
}

macro_rules! float_division {
    ($($t:ty),*) => {$(
        impl FloatDivision for $t {
            /// `(x - m) / y` is exact; one less where the remainder's sign
            /// is not the divisor's, then floored, and rounded up when the
            /// exact quotient was just below an integer. IEEE's `x / y` for
            /// a zero divisor, a zero with the quotient's sign for a zero
            /// quotient.
            #[inline(always)]
            fn floor_with(self, y: $t, m: $t) -> $t {
                if y == 0.0 {
                    return self / y;
                }
                let mut div = (self - m) / y;
                if m != 0.0 && (y < 0.0) != (m < 0.0) {
                    div -= 1.0;
                }
                if div == 0.0 {
                    return (0.0 as $t).copysign(self / y);
                }
                let floor = div.floor();
                if div - floor > 0.5 { floor + 1.0 } else { floor }
            }
            /// `m`, plus `y` where the signs differ.
            #[inline(always)]
            fn remainder_with(self, y: $t, m: $t) -> $t {
                if m != 0.0 && (y < 0.0) != (m < 0.0) { m + y } else { m }
            }
            #[inline(always)]
            fn div_trunc(self, y: $t) -> $t {
                (self / y).trunc()
            }
        }
    )*};
}
float_division!(f32, f64);

/// Integer quotients, rounded toward zero or down. A zero divisor (which
/// the ops layer refuses before a loop runs) gives 0 rather than a panic;
/// `MIN / -1` wraps to MIN, as PyTorch's.
pub(super) trait IntQuotient: Copy {
    /// `x / y` rounded toward zero.
    fn trunc_quotient(self, y: Self) -> Self;
    /// `⌊x / y⌋`.
    fn floor_quotient(self, y: Self) -> Self;
}

/// Integers of 8 and 16 bits divide in float32, of 32 bits in float64: a
/// vector divides 16 or 8 lanes where `idiv` does one (NumPy 2 divides
/// int32 so). The float holds both exactly, and its quotient is never
/// within its rounding of an integer it is not: `x / y` is at least `1/|y|`
/// from any other integer, its rounding error at most `|x / y| 2^-24`
/// (`2^-53`), below that for `|x| < 2^23` (`2^52`). Rounding is monotone
/// and integers are exact, so the float quotient truncates and floors to
/// the integer quotient.
macro_rules! quotient_via_float {
    ($($t:ty => $f:ty, $int:expr;)*) => {$(
        impl IntQuotient for $t {
            #[inline(always)]
            fn trunc_quotient(self, y: $t) -> $t {
                let q = (self as $f / y as $f).trunc();
                if y == 0 { 0 } else { ($int)(q) }
            }
            #[inline(always)]
            fn floor_quotient(self, y: $t) -> $t {
                let q = (self as $f / y as $f).floor();
                if y == 0 { 0 } else { ($int)(q) }
            }
        }
    )*};
}
// The quotient back to the integer by the conversions vectors have (to
// int32), wrapping as the integer division: 2^31 (int32's MIN / -1) to MIN.
quotient_via_float! {
    i8 => f32, |q: f32| q as i32 as i8;
    u8 => f32, |q: f32| q as i32 as u8;
    i16 => f32, |q: f32| q as i32 as i16;
    u16 => f32, |q: f32| q as i32 as u16;
    i32 => f64, |q: f64| if q >= 2_147_483_648.0 { i32::MIN } else { q as i32 };
    u32 => f64, |q: f64| q as u32;
}

/// 64-bit integers divide as integers (float64 does not hold them).
macro_rules! quotient_native {
    ($($t:ty),*) => {$(
        impl IntQuotient for $t {
            #[inline(always)]
            fn trunc_quotient(self, y: $t) -> $t {
                if y == 0 { 0 } else { self.wrapping_div(y) }
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn floor_quotient(self, y: $t) -> $t {
                let q = self.trunc_quotient(y);
                let m = self.wrapping_sub(q.wrapping_mul(y));
                if m != 0 && (m < 0) != (y < 0) { q.wrapping_sub(1) } else { q }
            }
        }
    )*};
}
quotient_native!(i64, u64);

/// 64-bit integers for [`wide_block`]: float64 holds those below 2^52 in
/// magnitude, and their quotients round as the 32-bit ones'.
pub(super) trait WideQuotient: IntQuotient {
    /// Whether float64 divides this (as a dividend, or a non-zero divisor) exactly.
    fn fits(self, divisor: bool) -> bool;
    fn quotient_f64(self, y: Self, floor: bool) -> Self;
    /// `x - q * y`, wrapping.
    fn less_times(self, q: Self, y: Self) -> Self;
}

macro_rules! wide_quotient {
    ($($t:ty => $small:expr),*) => {$(
        impl WideQuotient for $t {
            #[inline(always)]
            fn fits(self, divisor: bool) -> bool {
                ($small)(self) && (!divisor || self != 0)
            }
            #[inline(always)]
            fn quotient_f64(self, y: $t, floor: bool) -> $t {
                let q = self as f64 / y as f64;
                (if floor { q.floor() } else { q.trunc() }) as $t
            }
            #[inline(always)]
            fn less_times(self, q: $t, y: $t) -> $t {
                self.wrapping_sub(q.wrapping_mul(y))
            }
        }
    )*};
}
wide_quotient!(
    i64 => |v: i64| v.unsigned_abs() < 1 << 52,
    u64 => |v: u64| v < 1 << 52
);

/// `r[i] = x[i] op y[i]` for 64-bit integers and `op` one of `DivFloor`,
/// `Remainder`, `Fmod`: in float64 in every lane (a vector divides 8 where
/// `idiv` does one, 20 to 40 cycles each), then by `idiv` in the lanes
/// past 2^52 (and zero divisors).
#[inline(always)]
pub(super) fn wide_block<T: WideQuotient>(op: BinaryOp, x: &[T], y: &[T], r: &mut [T]) {
    let floor = op != BinaryOp::Fmod;
    let fast = |x: T, y: T| (x.quotient_f64(y, floor), x.fits(false) && y.fits(true));
    let idiv = |x: T, y: T| {
        if floor {
            x.floor_quotient(y)
        } else {
            x.trunc_quotient(y)
        }
    };
    match op {
        BinaryOp::DivFloor => two_passes(x, y, r, fast, idiv, |_, _, q| q),
        BinaryOp::Remainder | BinaryOp::Fmod => two_passes(x, y, r, fast, idiv, T::less_times),
        _ => unreachable!("not a rounding op: {op:?}"),
    }
}

/// `r[i] = x[i] op y[i]` for `op` one of `DivFloor`, `Remainder`, `Fmod`
/// over the slices' common length: the fast path in every lane, then libm's
/// `fmod` in the lanes it did not cover (none, for most data).
#[inline(always)]
pub(super) fn block<C: FloatDivision>(op: BinaryOp, x: &[C], y: &[C], r: &mut [C]) {
    let libm = |x: C, y: C| x % y;
    match op {
        BinaryOp::DivFloor => two_passes(x, y, r, C::fmod_fast, libm, C::floor_with),
        BinaryOp::Remainder => two_passes(x, y, r, C::fmod_fast, libm, C::remainder_with),
        BinaryOp::Fmod => two_passes(x, y, r, C::fmod_fast, libm, |_, _, m| m),
        _ => unreachable!("not a rounding op: {op:?}"),
    }
}

/// `r[i] = finish(x, y, v)` with `(v, applies) = fast(x, y)` in every lane
/// (branch-free, so the loop vectorizes), then with `v = slow(x, y)` in the
/// lanes where the fast path did not apply (none, for most data).
#[inline(always)]
fn two_passes<T: Copy>(
    x: &[T],
    y: &[T],
    r: &mut [T],
    fast: impl Fn(T, T) -> (T, bool),
    slow: impl Fn(T, T) -> T,
    finish: impl Fn(T, T, T) -> T,
) {
    let mut missed = false;
    for ((r, &x), &y) in r.iter_mut().zip(x).zip(y) {
        let (v, applies) = fast(x, y);
        *r = finish(x, y, v);
        missed |= !applies;
    }
    if missed {
        for ((r, &x), &y) in r.iter_mut().zip(x).zip(y) {
            if !fast(x, y).1 {
                *r = finish(x, y, slow(x, y));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FloatDivision;

    /// Pairs across every exponent, quotients near the fast paths' bounds
    /// on either side and the special values, from a xorshift.
    fn pairs<F: Copy>(
        specials: &[F],
        from_bits: impl Fn(u64) -> (F, F),
        near: impl Fn(u64) -> [(F, F); 4],
    ) -> Vec<(F, F)> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut out: Vec<(F, F)> = Vec::new();
        for &x in specials {
            for &y in specials {
                out.push((x, y));
            }
        }
        // Miri checks the code paths on a few pairs: millions take it hours.
        let rounds = if cfg!(miri) { 64 } else { 1_000_000 };
        for _ in 0..rounds {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            out.push(from_bits(state));
            out.extend(near(state));
        }
        out
    }

    /// Values both float tests divide by and into.
    const SMALL: [f64; 9] = [0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 6.0, -6.0, 0.1];

    /// Every pair's fmod has libm's bits (Rust's `%`), NaNs as NaN.
    fn libms<F>(pairs: Vec<(F, F)>)
    where
        F: FloatDivision + Into<f64> + std::fmt::LowerExp,
    {
        for (x, y) in pairs {
            let (got, want) = (FloatDivision::fmod(x, y), x % y);
            // Widened to float64 (exactly), so one comparison of bits serves both types.
            let (g, w): (f64, f64) = (got.into(), want.into());
            assert!(
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                "fmod({x:e}, {y:e}): {got:e}, libm {want:e}"
            );
        }
    }

    /// The fast float32 `fmod` gives libm's bits, random pairs and quotients
    /// up to 2^30 (the fast path ends at 2^29).
    #[test]
    fn fast_fmod_f32_is_libms() {
        let specials: Vec<f32> = SMALL
            .iter()
            .map(|&v| v as f32)
            .chain([
                f32::MIN_POSITIVE,
                1e-45,
                f32::MAX,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
                536_870_912.0,
                536_870_911.0,
                7.5,
            ])
            .collect();
        let all = pairs(
            &specials,
            |bits| {
                (
                    f32::from_bits(bits as u32),
                    f32::from_bits((bits >> 32) as u32),
                )
            },
            |bits| {
                // Near one another, as data usually is.
                let z = f32::from_bits((bits as u32 & 0x807f_ffff) | 0x4000_0000);
                let q = (bits >> 34) as f32 + (bits & 0xff) as f32 / 256.0;
                [
                    (f32::from_bits(bits as u32), z * (1.0 + (bits >> 40) as f32)),
                    (z * q, z),
                    (-z * q, z / 3.0),
                    (-z, z * q),
                ]
            },
        );
        libms(all);
    }

    /// The fast float64 `fmod` gives libm's bits, random pairs and quotients
    /// up to 2^54 (the fast path ends at 2^52), integers among them.
    #[test]
    fn fast_fmod_f64_is_libms() {
        let specials: Vec<f64> = SMALL
            .iter()
            .copied()
            .chain([
                0.3,
                f64::MIN_POSITIVE,
                5e-324,
                f64::MAX,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                4_503_599_627_370_496.0,
                4_503_599_627_370_495.0,
                9_007_199_254_740_993.0,
                7.5,
                // x / y rounds up to the integer above the truncated quotient
                // (65 and 623, for 64 and 622).
                110.720_843_463_897_88,
                1.703_397_591_752_275_2,
                -675.776_330_161_249_8,
                1.084_713_210_531_701_2,
            ])
            .collect();
        let all = pairs(
            &specials,
            |bits| (f64::from_bits(bits), f64::from_bits(bits.rotate_left(29))),
            |bits| {
                let z = f64::from_bits((bits & 0x800f_ffff_ffff_ffff) | 0x4000_0000_0000_0000);
                let q = (bits >> 10) as f64 / (1u64 << (bits & 63)) as f64;
                // Just below a multiple of z, where x / z often rounds up
                // to the integer (the fast path's step back).
                let below = f64::from_bits(((((bits >> 20) & 0x3ff) + 1) as f64 * z).to_bits() - 1);
                [
                    (z * q, z),
                    (-z * q, z / 3.0),
                    // Integers, where q * y lands on x exactly.
                    (((bits >> 12) as f64).floor(), ((bits & 0xffff) + 1) as f64),
                    (below, z),
                ]
            },
        );
        libms(all);
    }

    /// The float quotients of 8-, 16- and 32-bit integers are the integer
    /// division's: every int8/uint8 pair, and for the wider types their
    /// extremes and random pairs, small divisors among them.
    #[test]
    fn integer_quotients_through_floats_are_exact() {
        use super::IntQuotient;
        fn check<T>(x: T, y: T)
        where
            T: IntQuotient + Copy + PartialEq + std::fmt::Debug + TryFrom<i128> + Into<i128>,
        {
            let (a, b): (i128, i128) = (x.into(), y.into());
            if b == 0 {
                return;
            }
            // Wrapped into T as the integer op wraps (MIN / -1).
            let wrap = |v: i128| -> T {
                let bits = 8 * std::mem::size_of::<T>() as u32;
                let m = v.rem_euclid(1i128 << bits);
                T::try_from(m).unwrap_or_else(|_| T::try_from(m - (1i128 << bits)).ok().unwrap())
            };
            assert_eq!(x.trunc_quotient(y), wrap(a / b), "trunc({x:?} / {y:?})");
            assert_eq!(
                x.floor_quotient(y),
                wrap(a.div_euclid(b) - i128::from(b < 0 && a.rem_euclid(b) != 0)),
                "floor({x:?} / {y:?})"
            );
        }
        for x in i8::MIN..=i8::MAX {
            for y in i8::MIN..=i8::MAX {
                check(x, y);
                check(x as u8, y as u8);
            }
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let rounds = if cfg!(miri) { 64 } else { 1_000_000 };
        for i in 0..rounds {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let (x, y) = (state as u32, (state >> 32) as u32 >> (i % 32));
            check(x as i16, y as i16);
            check(x as u16, y as u16);
            check(x as i32, y as i32);
            check(x, y);
            check(x as i32, -(y as i32));
        }
        for x in [i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX] {
            for y in [i32::MIN, -3, -1, 1, 3, i32::MAX] {
                check(x, y);
                check(x as u32, y as u32);
                check(x as i16, y as i16);
            }
        }
    }

    /// The 64-bit blocks give the integer division's quotients and
    /// remainders, lanes past 2^52 and zero divisors (0 from `idiv`'s
    /// path, as the scalar functions) among the others.
    #[test]
    fn wide_blocks_are_the_integer_division() {
        use super::IntQuotient;
        use crate::backend::BinaryOp;
        let mut state = 0x1234_5678_9abc_def1u64;
        let (mut x, mut y) = (Vec::new(), Vec::new());
        let rounds = if cfg!(miri) { 64 } else { 200_000 };
        for i in 0..rounds {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Every magnitude: shifted by 0 to 63 bits.
            x.push((state as i64) >> (i % 64));
            y.push(((state >> 17) as i64) >> ((i * 7 + 3) % 64));
        }
        x.extend([
            i64::MIN,
            i64::MIN,
            i64::MAX,
            -(1 << 52),
            (1 << 52) - 1,
            7,
            -7,
            5,
        ]);
        y.extend([-1, 1, -1, 3, -3, 0, 2, -(1 << 52)]);
        let mut r = vec![0; x.len()];
        let mut ru = vec![0u64; x.len()];
        let (xu, yu): (Vec<u64>, Vec<u64>) = (
            x.iter().map(|&v| v as u64).collect(),
            y.iter().map(|&v| v as u64).collect(),
        );
        for op in [BinaryOp::DivFloor, BinaryOp::Remainder, BinaryOp::Fmod] {
            super::wide_block(op, &x, &y, &mut r);
            super::wide_block(op, &xu, &yu, &mut ru);
            for i in 0..x.len() {
                let q = match op {
                    BinaryOp::Fmod => x[i].trunc_quotient(y[i]),
                    _ => x[i].floor_quotient(y[i]),
                };
                let want = if op == BinaryOp::DivFloor {
                    q
                } else {
                    x[i].wrapping_sub(q.wrapping_mul(y[i]))
                };
                assert_eq!(r[i], want, "{op:?}({}, {})", x[i], y[i]);
                let q = xu[i].trunc_quotient(yu[i]);
                let want = if op == BinaryOp::DivFloor {
                    q
                } else {
                    xu[i].wrapping_sub(q.wrapping_mul(yu[i]))
                };
                assert_eq!(ru[i], want, "{op:?}({}, {})", xu[i], yu[i]);
            }
        }
    }

    /// The block pass gives each op's finish of libm's fmod, bit for bit,
    /// the lanes the fast path misses mixed in among the others.
    #[test]
    fn blocks_are_the_scalar_functions() {
        use crate::backend::BinaryOp;
        let x = [7.5f64, -7.5, 1e300, f64::INFINITY, 5.0, -0.0, 1e-300, 3.0];
        let y = [2.0f64, 2.0, 1e-300, 1.0, 0.0, 3.0, 7.0, -f64::INFINITY];
        for op in [BinaryOp::DivFloor, BinaryOp::Remainder, BinaryOp::Fmod] {
            let mut r = [0.0; 8];
            super::block(op, &x, &y, &mut r);
            for i in 0..8 {
                // libm's fmod (Rust's `%`) under each op's finish.
                let m = x[i] % y[i];
                let want = match op {
                    BinaryOp::DivFloor => x[i].floor_with(y[i], m),
                    BinaryOp::Remainder => x[i].remainder_with(y[i], m),
                    _ => m,
                };
                assert!(
                    r[i].to_bits() == want.to_bits() || (r[i].is_nan() && want.is_nan()),
                    "{op:?}({}, {}): {} against {want}",
                    x[i],
                    y[i],
                    r[i]
                );
            }
        }
    }
}
