//! `x ** y` for float32 and float64 that the compiler vectorises.
//!
//! libm's `pow` and `powf` are calls, an element at a time, and torch's
//! loops call SLEEF's vector kernels: with libm, dlbridge's `a ** b` ran
//! 1.3-1.4x torch's time. Here `|x|^y = e^(y ln|x|)`, all in float64:
//!
//! - `ln|x|` as a double-double, within about 2^-67 of the exact value:
//!   `x = 2^k m` with `m` in [0.709, 1.418), one of 128 slots by `m`'s top
//!   bits holds `invc ≈ 1/c` and `ln c` (high and low parts, written by
//!   `tools/pow_log_table.py`), `z = m·invc − 1` (`|z| ≤ 2^-8`) is exact as
//!   a double-double, and `ln(1 + z) = z − z²/2 + z³Q(z)` with `Q` Taylor's
//!   six terms; the leading terms' rounding errors are carried in the low
//!   part. The slot holding 1 has `invc = 1`, so `x` near 1 loses nothing.
//! - `y ln|x|` as a double-double (an FMA), its low part added to the
//!   reduced argument of [`exp64`]'s table kernel.
//!
//! So a float64 result is within about 0.7 ulp (the exp kernel's error and
//! the final rounding). float32 ([`pow_f32`]) on AVX-512 CPUs computes
//! in float32 lanes, sixteen to a vector as NumPy's SVML and torch's SLEEF
//! do, with the low parts that keep it within 0.55 ulp (0.75 for subnormal
//! results); past exponents of ±512, and on other CPUs, it computes in
//! float64 ([`pow_f32_wide`]) and rounds, the correctly rounded power in
//! all but rare ties. The kernels have no branches: C99's special cases
//! (`pow(x, ±0) = 1` even for NaN, `pow(1, y) = 1`, `pow(-1, ±inf) = 1`,
//! negative bases with integer and other exponents, zeros, infinities,
//! NaN) are selected afterwards, so a loop of one vectorises, gathers for
//! the tables included.

use super::exp64;
use super::vmath::pow2_f64;
use super::vpow_table::{
    EXP2_HI, EXP2_LO, EXP2_POLY, INV_LN2, INVC, INVC_F32, INVC32, LOG2_POLY, LOG2C_HI, LOG2C_LO,
    LOGC_HI, LOGC_LO, LOGC32,
};

/// `x ** y` from `r = |x| ** y` (`$t` float32 or float64) by C99's rules:
/// a negative base takes the sign for an odd integer exponent and gives NaN
/// for a finite non-integer one (-0 and -inf take only the sign; the
/// infinities count as even integers); `x ** ±0`, `1 ** y` and `(-1) **
/// ±inf` are 1, even for NaN.
macro_rules! c99_signs_and_ones {
    ($t:ty, $x:expr, $y:expr, $r:expr) => {{
        let (x, y, r): ($t, $t, $t) = ($x, $y, $r);
        let integer = y == y.trunc();
        let h = 0.5 * y;
        let odd = integer && h != h.trunc();
        let r = if x.is_sign_negative() && odd { -r } else { r };
        let r = if x < 0.0 && x > <$t>::NEG_INFINITY && !integer {
            <$t>::NAN
        } else {
            r
        };
        if y == 0.0 || x == 1.0 || (x.abs() == 1.0 && y.is_infinite()) {
            1.0
        } else {
            r
        }
    }};
}

/// Subtracted from `x`'s bits: the slots' first `m` (0.709) and so where
/// the exponent `k` changes; chosen so that 1 lies inside a slot, not on
/// its edge.
pub(super) const OFF: u64 = 0x3fe6_b000_0000_0000;
/// `ln 2` to 32 significant bits: `k · LN2_HI` is exact for `|k| < 2^21`.
pub(super) const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
/// `ln 2 − LN2_HI`.
pub(super) const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
/// `2^52`: a float64 whose last bit is 1, for integers held in the mantissa.
const TWO52: f64 = 4_503_599_627_370_496.0;
/// `2^54`: scales a subnormal into the normal range.
const TWO54: f64 = 18_014_398_509_481_984.0;

/// `ln x` as `(hi, lo)` for a positive finite `x` (subnormals too); other
/// inputs give meaningless values, which the caller replaces.
#[inline(always)]
fn ln_dd(x: f64) -> (f64, f64) {
    let sub = x < f64::MIN_POSITIVE;
    let ix = if sub { x * TWO54 } else { x }.to_bits();
    let tmp = ix.wrapping_sub(OFF);
    let slot = ((tmp >> 45) & 127) as usize;
    // k + 1024 (in [2, 2048]) held in a float64's mantissa: a conversion
    // AVX2 lacks for 64-bit integers, done by the 2^52 trick.
    let biased = tmp.wrapping_add(1024 << 52) >> 52;
    let kd =
        f64::from_bits(TWO52.to_bits() | biased) - (TWO52 + 1024.0) - if sub { 54.0 } else { 0.0 };
    let m = f64::from_bits(ix.wrapping_sub(tmp & (0xfff << 52)));
    let invc = f64::from_bits(INVC[slot]);
    let (lch, lcl) = (f64::from_bits(LOGC_HI[slot]), f64::from_bits(LOGC_LO[slot]));
    // z = m·invc − 1 = zh + zl exactly: the product's error by an FMA, and
    // p − 1 exact (p within 2^-8 of 1).
    let p = m * invc;
    let zl = m.mul_add(invc, -p);
    let zh = p - 1.0;
    let z = zh + zl;
    // k ln2 + ln c + zh: the first sum exact (both high parts are
    // multiples of 2^-32 below 2^10), the second's rounding error kept (a
    // fast two-sum: |k ln2 + ln c| > |zh| unless it is 0).
    let t1 = kd * LN2_HI + lch;
    let t2 = t1 + zh;
    let e2 = (t1 - t2) + zh;
    // −zh²/2 exactly as s + s_lo, then added to t2 (|t2| > |s|).
    let half = -0.5 * zh;
    let s = half * zh;
    let s_lo = half.mul_add(zh, -s);
    let hi = t2 + s;
    let e3 = (t2 - hi) + s;
    // z³Q(z), Q(z) = 1/3 − z/4 + z²/5 − ... − z⁵/8: its truncation (z⁹/9)
    // and roundings lie below 2^-74.
    let q = (-1.0 / 8.0f64)
        .mul_add(z, 1.0 / 7.0)
        .mul_add(z, -1.0 / 6.0)
        .mul_add(z, 1.0 / 5.0)
        .mul_add(z, -1.0 / 4.0)
        .mul_add(z, 1.0 / 3.0);
    let cubic = (z * z) * (z * q);
    // The small terms: zh·zl is −z²/2's cross term.
    let lo = kd.mul_add(LN2_LO, lcl) + e2 + (zl + e3) + (s_lo - zh * zl) + cubic;
    let l = hi + lo;
    (l, (hi - l) + lo)
}

/// `x ** y` in float64, with C99's special values (as libm's `pow`, torch
/// and NumPy).
#[inline(always)]
pub(crate) fn pow_f64(x: f64, y: f64) -> f64 {
    let ax = x.abs();
    let (lh, ll) = ln_dd(ax);
    // ln 0 = -inf, ln inf = inf, ln NaN = NaN (`ax` itself for the last two).
    let inside = ax > 0.0 && ax < f64::INFINITY;
    let lh = if inside {
        lh
    } else if ax == 0.0 {
        f64::NEG_INFINITY
    } else {
        ax
    };
    let ll = if inside { ll } else { 0.0 };
    // y ln|x| = th + tl; past the exp kernel's range the low part may be
    // NaN (inf − inf) and is not needed.
    let th = y * lh;
    let tl = y.mul_add(lh, -th) + y * ll;
    let tl = if th.abs() < 1024.0 { tl } else { 0.0 };
    let (e, k) = exp64::parts_tail(th.clamp(-746.0, 710.0), tl);
    // Two exact scalings: a subnormal result rounds once, 0 and inf past
    // the ends.
    let r = e * pow2_f64(k >> 1) * pow2_f64(k - (k >> 1));
    let r = if th.is_nan() { th } else { r };
    c99_signs_and_ones!(f64, x, y, r)
}

/// [`pow_f32`]'s slot offset: `m` in [0.695, 1.391), 1 inside a slot.
pub(super) const OFF32: u32 = 0x3f32_0000;

/// Exponents past which [`pow_f32`] computes in float64
/// ([`pow_f32_wide`]): its float32 `log2 x` is within about 2^-36 of the
/// exact value, which an exponent up to 2^9 keeps below 2^-27 in `t`.
pub(super) const WIDE_FROM: f32 = 512.0;
/// `1.5 · 2^18`: added to a float32 below 2^17, it rounds it to a multiple
/// of 1/32 and leaves that multiple's low five bits in the sum's.
pub(super) const SHIFT32: f32 = 393_216.0;

/// `x ** y` in float32, with C99's special values, in float32 arithmetic
/// (sixteen lanes to a vector, as NumPy's SVML and torch's SLEEF compute
/// it), within 0.55 ulp of the exact power (the rounding's 0.5 and about
/// 2^-27 relative before it; 0.75 where the result is subnormal):
///
/// - `log2 |x| = k + log2 c + log2(1 + r)` as `hi + lo`: the slots and
///   `invc ≈ 1/c` of [`pow_f32_wide`], as float32 values; `m·invc = 1 + r
///   + pl` exactly (an FMA gives `pl`, Sterbenz `r`); `k + log2 c`'s high
///   part is exact (a multiple of 2^-16), `r/ln 2` is split exactly, and
///   `log2(1 + r)`'s remaining terms, `log2 c`'s low part and `pl`'s share
///   form `lo`.
/// - `t = y·(hi + lo) = th + tl`, the product's rounding error by an FMA.
/// - `2^t = 2^n · 2^(j/32) · (1 + w)`, `th` rounded to a multiple of 1/32
///   by [`SHIFT32`], `2^(j/32)` a float32 pair, `w = 2^f − 1` a cubic; the
///   scaling by `2^n` is one rounding (AVX-512's `vscalefps`), so a
///   subnormal result rounds twice.
///
/// For `|y|` past [`WIDE_FROM`] (where `y·lo`'s error would grow) and
/// infinite `y` it is [`pow_f32_wide`]'s correctly rounded power.
///
/// On CPUs without AVX-512 it is [`pow_f32_wide`] for every exponent: there
/// the float32 kernel's five tables are read by gathers, and its loop took
/// 1.4 times the float64 kernel's (AVX2, Sapphire Rapids). So float32 `**`
/// is one of the two float32 ops whose bits depend on the CPU (with `ln`,
/// `log32.rs`), each within its bound.
#[inline(always)]
pub(crate) fn pow_f32(x: f32, y: f32) -> f32 {
    pow_f32_on(lanes(), x, y)
}

/// [`pow_f32`] as a CPU with (`lanes`) or without AVX-512 computes it: the
/// tests run both kernels on any CPU.
#[inline(always)]
fn pow_f32_on(lanes: bool, x: f32, y: f32) -> f32 {
    if y.abs() > WIDE_FROM || !lanes {
        pow_f32_wide(x, y)
    } else {
        pow_f32_lanes(x, y)
    }
}

/// Whether [`pow_f32`] computes in float32 lanes: on AVX-512 CPUs.
#[inline(always)]
pub(super) fn lanes() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    return super::isa::avx512();
    #[allow(unreachable_code)]
    false
}

/// [`pow_f32`] for `|y|` within [`WIDE_FROM`] (and NaN) on AVX-512 CPUs:
/// no branch; `vpow_avx512.rs`' `Fast` computes the same operations.
#[inline(always)]
fn pow_f32_lanes(x: f32, y: f32) -> f32 {
    let f = f32::from_bits;
    let ax = x.abs();
    // log2|x|: subnormals scaled into the normal range first.
    let sub = ax < f32::MIN_POSITIVE;
    let ix = if sub { ax * 8_388_608.0 } else { ax }.to_bits(); // 2^23
    let tmp = ix.wrapping_sub(OFF32);
    let slot = ((tmp >> 18) & 31) as usize;
    let k = ((tmp as i32 >> 23) - if sub { 23 } else { 0 }) as f32;
    let m = f(ix.wrapping_sub(tmp & 0xff80_0000));
    let invc = f(INVC_F32[slot]);
    let p = m * invc;
    let pl = m.mul_add(invc, -p);
    let r = p - 1.0;
    let a = k + f(LOG2C_HI[slot]);
    let (c_hi, c_lo) = (f(INV_LN2[0]), f(INV_LN2[1]));
    let rh = r * c_hi;
    let rl = r.mul_add(c_hi, -rh);
    // A fast two-sum: |a| > |rh| unless a is 0.
    let hi = a + rh;
    let e = (a - hi) + rh;
    // log2(1 + r + pl) − log2(1 + r) = pl/((1 + r) ln 2) ≈ cp·(1 − r).
    let cp = pl * c_hi;
    let q = f(LOG2_POLY[3])
        .mul_add(r, f(LOG2_POLY[2]))
        .mul_add(r, f(LOG2_POLY[1]))
        .mul_add(r, f(LOG2_POLY[0]));
    let small = r.mul_add(c_lo, f(LOG2C_LO[slot])) + (e + rl);
    let lo = (r * r).mul_add(q, cp.mul_add(-r, cp) + small);
    // log2 0 = -inf, log2 inf = inf, log2 NaN = NaN (`ax` for the last two).
    let inside = ax > 0.0 && ax < f32::INFINITY;
    let (hi, lo) = if inside {
        (hi, lo)
    } else if ax == 0.0 {
        (f32::NEG_INFINITY, 0.0)
    } else {
        (ax, 0.0)
    };
    let th = y * hi;
    let tl = y.mul_add(lo, y.mul_add(hi, -th));
    // 2^(th + tl): th + tl (|tl| ≤ |th|/100: `lo` holds r²'s terms) rounded
    // to a multiple of 1/32 by SHIFT32 (|th| ≤ 512 · 150 < 2^17); th less
    // that multiple is exact (but where |th| is just under 1/64 and th + tl
    // past it: then a rounding of 2^-31 at most), fr within 1/64 (and a
    // rounding) of 0.
    let u = (th + tl) + SHIFT32;
    let qd = u - SHIFT32;
    let fr = (th - qd) + tl;
    let w = f(EXP2_POLY[2])
        .mul_add(fr, f(EXP2_POLY[1]))
        .mul_add(fr, f(EXP2_POLY[0]))
        * fr;
    let j = (u.to_bits() & 31) as usize;
    let t_hi = f(EXP2_HI[j]);
    let res = t_hi + t_hi.mul_add(w, f(EXP2_LO[j]));
    // res · 2^floor(qd), rounded once (as vscalefps); past ±300 it is 0
    // or inf either way.
    // (An i32: AVX2 converts float32 to those, not to i64.)
    let n = qd.floor().clamp(-300.0, 300.0) as i32;
    let e = (f64::from(res) * pow2_f64(i64::from(n))) as f32;
    let e = if th.is_finite() {
        e
    } else if th > 0.0 {
        f32::INFINITY
    } else if th < 0.0 {
        0.0
    } else {
        f32::NAN
    };
    c99_signs_and_ones!(f32, x, y, e)
}

/// `x ** y` in float32, with C99's special values: `e^(y ln|x|)` in
/// float64 arithmetic, rounded once to float32 ([`pow_f32`]'s kernel for
/// exponents past ±[`WIDE_FROM`], 2.5 times its time). A lighter kernel than
/// [`pow_f64`]'s, for float32's needs (about 2^-40 relative error before
/// the rounding, so the result is the correctly rounded power but for
/// rare near-ties and exact ties, which may round either way): `ln|x|`
/// from a table of 32 slots (`|r| ≤ 2^-6`) and `ln(1 + r)`'s Taylor
/// series to `r^7`; `e^t` from `exp64`'s table of
/// `2^(j/16)` and Taylor's series to `r^5`. Every float32 result lies far
/// inside float64's normal range, so the scaling is one integer add and
/// the rounding to float32 makes the subnormals, zeros and infinities.
#[inline(always)]
pub(crate) fn pow_f32_wide(x: f32, y: f32) -> f32 {
    let ax = x.abs();
    // ln|x|: subnormals scaled into the normal range first.
    let sub = ax < f32::MIN_POSITIVE;
    let ix = if sub { ax * 8_388_608.0 } else { ax }.to_bits(); // 2^23
    let tmp = ix.wrapping_sub(OFF32);
    let slot = ((tmp >> 18) & 31) as usize;
    let k = (tmp as i32 >> 23) - if sub { 23 } else { 0 };
    let m = f64::from(f32::from_bits(ix.wrapping_sub(tmp & 0xff80_0000)));
    let r = m.mul_add(f64::from_bits(INVC32[slot]), -1.0);
    let p = (1.0 / 7.0f64)
        .mul_add(r, -1.0 / 6.0)
        .mul_add(r, 1.0 / 5.0)
        .mul_add(r, -1.0 / 4.0)
        .mul_add(r, 1.0 / 3.0)
        .mul_add(r, -0.5)
        .mul_add(r, 1.0);
    let ln = f64::from(k).mul_add(std::f64::consts::LN_2, f64::from_bits(LOGC32[slot])) + r * p;
    // ln 0 = -inf, ln inf = inf, ln NaN = NaN (`ax` itself for the last two).
    let inside = ax > 0.0 && ax < f32::INFINITY;
    let ln = if inside {
        ln
    } else if ax == 0.0 {
        f64::NEG_INFINITY
    } else {
        f64::from(ax)
    };
    let t = f64::from(y) * ln;
    // e^t for t within ±200 (beyond, float32's 0 or inf either way):
    // t = (16q + j) ln2/16 + s, |s| ≤ ln2/32.
    let tc = t.clamp(-200.0, 200.0);
    use exp64::ROUND; // 1.5 · 2^52
    let u = tc.mul_add(16.0 * std::f64::consts::LOG2_E, ROUND);
    let qf = u - ROUND;
    let s = (-qf).mul_add(std::f64::consts::LN_2 / 16.0, tc);
    let es = (1.0 / 120.0f64)
        .mul_add(s, 1.0 / 24.0)
        .mul_add(s, 1.0 / 6.0)
        .mul_add(s, 0.5)
        .mul_add(s, 1.0)
        .mul_add(s, 1.0);
    let q = u.to_bits().wrapping_sub(ROUND.to_bits());
    // 2^(j/16) · 2^floor(q/16): the table entry's exponent raised by
    // q's bits above j (a wrapping shift: q may be negative).
    let scale = f64::from_bits(exp64::TABLE_HI[(q & 15) as usize].wrapping_add((q & !15) << 48));
    let e = (scale * es) as f32;
    let e = if t.is_nan() { f32::NAN } else { e };
    c99_signs_and_ones!(f32, x, y, e)
}

/// `r[i] = pow_f32(x[i], y[i])` for the slices' common length: on AVX-512
/// CPUs by [`super::vpow_avx512`] (the same bits in about half the time of
/// the compiler's vectorised loop, which reads the tables by gathers), on
/// AVX2 CPUs by [`super::vpow_avx2`] (the compiler leaves that loop
/// scalar), elsewhere [`pow_f32_wide`]'s loop.
#[inline(always)]
pub(crate) fn pow_f32_slice(x: &[f32], y: &[f32], r: &mut [f32]) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if super::isa::avx512() {
        // SAFETY: the CPU has AVX-512 F (checked).
        return unsafe { super::vpow_avx512::pow_f32_slice(x, y, r) };
    } else if super::isa::avx2() {
        // SAFETY: the CPU has AVX2 and FMA (checked); without AVX-512,
        // pow_f32 is pow_f32_wide.
        return unsafe { super::vpow_avx2::pow_f32_slice(x, y, r) };
    }
    // A `for` loop, not `for_each`: `Zip::fold` is a function of its own,
    // built without the instruction-set copy's features (a call to libm's
    // `fmaf` per multiply-add).
    for ((r, &x), &y) in r.iter_mut().zip(x).zip(y) {
        *r = pow_f32_wide(x, y);
    }
}

/// `r[i] = pow_f64(x[i], y[i])` for the slices' common length: on AVX-512
/// CPUs by [`super::vpow_avx512`] (the same bits in a third less time:
/// no special values in the usual steps), on AVX2 CPUs by
/// [`super::vpow_avx2`] (the compiler leaves that loop scalar).
#[inline(always)]
pub(crate) fn pow_f64_slice(x: &[f64], y: &[f64], r: &mut [f64]) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if super::isa::avx512() {
        // SAFETY: the CPU has AVX-512 F and DQ (checked).
        return unsafe { super::vpow_avx512::pow_f64_slice(x, y, r) };
    } else if super::isa::avx2() {
        // SAFETY: the CPU has AVX2 and FMA (checked).
        return unsafe { super::vpow_avx2::pow_f64_slice(x, y, r) };
    }
    for ((r, &x), &y) in r.iter_mut().zip(x).zip(y) {
        *r = pow_f64(x, y);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::{lanes, pow_f32, pow_f32_on, pow_f32_wide, pow_f64};

    /// [`pow_f32`] as AVX-512 CPUs compute it, on any CPU.
    fn lanes_pow(x: f32, y: f32) -> f32 {
        pow_f32_on(true, x, y)
    }

    /// Whether `a` and `b` are the same value (NaN equal to NaN, signed zeros apart).
    fn same(a: f64, b: f64) -> bool {
        (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
    }

    /// C99 Annex F's special cases, written out (Miri perturbs std's
    /// `powf`, so it is not the reference here).
    #[test]
    fn special_values_as_c99() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        let cases = [
            (nan, 0.0, 1.0),
            (nan, -0.0, 1.0),
            (1.0, nan, 1.0),
            (1.0, inf, 1.0),
            (-1.0, inf, 1.0),
            (-1.0, -inf, 1.0),
            (-1.0, nan, nan),
            (nan, 1.0, nan),
            (2.0, nan, nan),
            (0.0, -3.0, inf),
            (-0.0, -3.0, -inf),
            (-0.0, -2.0, inf),
            (-0.0, -0.5, inf),
            (0.0, 3.0, 0.0),
            (-0.0, 3.0, -0.0),
            (-0.0, 2.0, 0.0),
            (-0.0, 0.5, 0.0),
            (0.0, -inf, inf),
            (-0.0, inf, 0.0),
            (0.5, inf, 0.0),
            (0.5, -inf, inf),
            (2.0, inf, inf),
            (2.0, -inf, 0.0),
            (-2.0, inf, inf),
            (-0.5, inf, 0.0),
            (inf, -1.0, 0.0),
            (inf, 0.5, inf),
            (-inf, 3.0, -inf),
            (-inf, -3.0, -0.0),
            (-inf, 2.0, inf),
            (-inf, -2.0, 0.0),
            (-inf, 0.5, inf),
            (-inf, -0.5, 0.0),
            (-2.0, 0.5, nan),
            (-2.0, 3.0, -8.0),
            (-2.0, -2.0, 0.25),
            (-8.0, 1.0 / 3.0, nan),
            (2.0, 1024.0, inf),
            (2.0, -1075.0, 0.0),
            (2.0, -1074.0, 5e-324),
            (-2.0, -1075.0, -0.0),
            (10.0, 308.0, 1e308),
            (0.5, 1e300, 0.0),
            (1e-300, 1e300, 0.0),
            (-1e-300, 1e300, 0.0),
            (3.0, 2.0, 9.0),
            (f64::MAX, 1.0, f64::MAX),
            (5e-324, 1.0, 5e-324),
            (5e-324, -1.0, inf),
        ];
        for (x, y, want) in cases {
            assert!(
                same(pow_f64(x, y), want),
                "pow({x}, {y}) = {}",
                pow_f64(x, y)
            );
            let (x, y, want) = (x as f32, y as f32, want as f32);
            if !x.is_finite() || x.abs() > 1e-30 {
                let got = pow_f32(x, y) as f64;
                assert!(same(got, want as f64), "powf({x}, {y}) = {got}");
            }
        }
    }

    /// Both float32 kernels (the float32-lane one, whose scalar reference
    /// runs on any CPU, and the float64-lane one that CPUs without AVX-512
    /// run for every exponent) at the ends of float32's range: overflow to
    /// inf, underflow through the subnormals to 0 (a tie to even at half
    /// the smallest), and exact powers of two.
    #[test]
    fn float32_ends_of_the_range() {
        let tiny = f32::from_bits(1); // 2^-149
        let cases = [
            (2.0, 200.0, f32::INFINITY),
            (2.0, 128.0, f32::INFINITY),
            (2.0, 127.0, f32::from_bits(254 << 23)), // 2^127 (Miri's powi is inexact on purpose)
            (2.0, -126.0, f32::MIN_POSITIVE),
            (2.0, -149.0, tiny),
            (2.0, -150.0, 0.0),
            (0.5, 150.0, 0.0),
            (0.5, 149.0, tiny),
            (2.0, -200.0, 0.0),
            (-2.0, -149.0, -tiny),
            (-2.0, 129.0, f32::NEG_INFINITY),
            (-0.5, 151.0, -0.0),
            (4.0, -74.5, tiny),
            (10.0, 38.0, 1e38),
            (3.0, 2.0, 9.0),
            (0.25, 0.5, 0.5),
        ];
        for (x, y, want) in cases {
            let (narrow, wide) = (lanes_pow(x, y), pow_f32_wide(x, y));
            assert!(
                same(f64::from(narrow), f64::from(want)),
                "float32 lanes: powf({x}, {y}) = {narrow:e}"
            );
            // An exact tie (2^-150, half the smallest subnormal): the
            // float64-lane kernel's value, within 2^-40 of it, may fall on
            // either side, and either neighbour is half an ulp away; it
            // fell above (2^-149) when measured.
            let tie =
                [(2.0, -150.0), (0.5, 150.0)].contains(&(x, y)) && (wide == 0.0 || wide == tiny);
            assert!(
                tie || same(f64::from(wide), f64::from(want)),
                "float64 lanes: powf({x}, {y}) = {wide:e}"
            );
            let chosen = if lanes() { narrow } else { wide };
            assert!(
                same(f64::from(pow_f32(x, y)), f64::from(chosen)),
                "powf({x}, {y}) = {:e}, its kernel {chosen:e}",
                pow_f32(x, y)
            );
        }
    }

    /// Bases and exponents for both kernels (xorshift64, the same on every
    /// run), in steps of 16: one step in four mixes in special values
    /// (zeros, negatives, subnormals, infinities, NaN, 1, 0) and arbitrary
    /// bits; one is plain bases `2^±range` with exponents ±8; one bases near
    /// 1 with exponents past ±600; the last plain bases `2^±5·range`
    /// (results past the ends: subnormal, 0 and inf) mixed with bases near
    /// 1 with large exponents, bases within 20% of 1 with exponents either
    /// side of 512, and a few `x ** 0` and `1 ** y`.
    #[cfg_attr(any(not(target_arch = "x86_64"), miri), allow(dead_code))]
    fn cases(n: usize, range: f64, bits: impl Fn(u64) -> f64) -> Vec<(f64, f64)> {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let unit = |s: u64| (s >> 11) as f64 / (1u64 << 53) as f64;
        let special = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-310,
            -2.0,
            0.5,
        ];
        (0..n)
            .map(|i| {
                let (a, b) = (next(), next());
                match (i / 16 % 4, i % 8) {
                    (0, 0) => (special[(a % 10) as usize], special[(b % 10) as usize]),
                    (0, 1) => (bits(a), bits(b)),
                    // Steps of plain bases and exponents within ±8 only
                    // (pow_f32's float32 kernel alone), and steps of
                    // exponents past ±600 only (its float64 one alone).
                    (1, _) => (((unit(a) * 2.0 - 1.0) * range).exp2(), unit(b) * 16.0 - 8.0),
                    (2, _) => {
                        let y = 600.0 + unit(b) * 5e4;
                        (
                            1.0 + (unit(a) - 0.5) * 1e-3,
                            if a & 1 == 0 { y } else { -y },
                        )
                    }
                    (_, 2) => (1.0 + (unit(a) - 0.5) * 1e-6, (unit(b) - 0.5) * 1e8),
                    (_, 3) if a % 16 == 0 => (unit(a) * 4.0 + 0.1, 0.0),
                    // Bases within 20% of 1, exponents either side of
                    // pow_f32's WIDE_FROM (512).
                    (_, 5) if a % 4 == 0 => (0.8 + unit(a) * 0.4, unit(b) * 1200.0 - 600.0),
                    (_, 4) if a % 16 == 0 => (1.0, unit(b) * 100.0 - 50.0),
                    (q, _) => {
                        let range = if q == 3 { range * 5.0 } else { range };
                        (((unit(a) * 2.0 - 1.0) * range).exp2(), unit(b) * 16.0 - 8.0)
                    }
                }
            })
            .collect()
    }

    /// An explicit copy's loops (`f32_slice`, `f64_slice`) give their
    /// scalar kernels' bits over [`cases`], at every tail length.
    #[cfg_attr(any(not(target_arch = "x86_64"), miri), allow(dead_code))]
    pub(in crate::cpu) fn slices_match(
        f32_slice: impl Fn(&[f32], &[f32], &mut [f32]),
        f32_want: impl Fn(f32, f32) -> f32,
        f64_slice: impl Fn(&[f64], &[f64], &mut [f64]),
        f64_want: impl Fn(f64, f64) -> f64,
    ) {
        let n = 200_003;
        let f32s: Vec<(f32, f32)> = cases(n, 12.0, |s| f64::from(f32::from_bits(s as u32)))
            .into_iter()
            .map(|(x, y)| (x as f32, y as f32))
            .collect();
        let f64s = cases(n, 120.0, f64::from_bits);
        tails_match("powf", &f32s, f32_slice, f32_want);
        tails_match("pow", &f64s, f64_slice, f64_want);
    }

    /// [`slices_match`]'s loop for one float type: `slice` over the first
    /// `len` pairs, for every `len` below 40 and all of them, gives
    /// `kernel`'s bits.
    #[cfg_attr(any(not(target_arch = "x86_64"), miri), allow(dead_code))]
    fn tails_match<F: Copy + Default + Into<f64> + std::fmt::LowerExp>(
        name: &str,
        pairs: &[(F, F)],
        slice: impl Fn(&[F], &[F], &mut [F]),
        kernel: impl Fn(F, F) -> F,
    ) {
        for len in (0..40).chain([pairs.len()]) {
            let (x, y): (Vec<F>, Vec<F>) = pairs[..len].iter().copied().unzip();
            let mut r = vec![F::default(); len];
            slice(&x, &y, &mut r);
            for i in 0..len {
                let want = kernel(x[i], y[i]);
                assert!(
                    same(r[i].into(), want.into()),
                    "{name}({:e}, {:e}): {:e} against {want:e}",
                    x[i],
                    y[i],
                    r[i]
                );
            }
        }
    }

    /// xorshift64: the same pseudo-random values on every run.
    fn values(n: usize, mut f: impl FnMut(u64) -> f64) -> Vec<f64> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                f(state)
            })
            .collect()
    }

    /// Within 1 ulp of glibc's `pow` (correctly rounded nearly always) over
    /// random bases and exponents, results normal and subnormal, bases near 1
    /// with large exponents (where `ln x` needs its low part), and negative
    /// bases with integer exponents; and no further than glibc from the
    /// exact value, measured as float32 against float64.
    #[test]
    #[cfg_attr(miri, ignore)] // hundreds of thousands of values
    fn within_an_ulp_of_libm() {
        let unit = |s: u64| (s >> 11) as f64 / (1u64 << 53) as f64;
        let bases = values(100_000, |s| 2f64.powf(unit(s) * 200.0 - 100.0));
        let exps = values(100_000, |s| unit(s.rotate_left(17)) * 20.0 - 10.0);
        let near = values(20_000, |s| 1.0 + (unit(s) - 0.5) * 1e-6);
        let big = values(20_000, |s| (unit(s.rotate_left(9)) - 0.5) * 1e8);
        let mut pairs: Vec<(f64, f64)> = bases.iter().copied().zip(exps.iter().copied()).collect();
        pairs.extend(near.iter().copied().zip(big.iter().copied()));
        pairs.extend(bases.iter().zip(&exps).map(|(&b, &e)| (b, e * 120.0))); // to 2^-1074 and past
        pairs.extend(
            bases
                .iter()
                .zip(&exps)
                .map(|(&b, &e)| (-b, (e * 10.0).round())),
        );
        let (mut worst, mut differ, total) = (0u64, 0usize, pairs.len());
        for (x, y) in pairs {
            let (got, want) = (pow_f64(x, y), x.powf(y));
            let apart = if same(got, want) {
                0
            } else {
                assert!(
                    got.is_finite() && want.is_finite(),
                    "pow({x:e}, {y:e}): {got:e} vs {want:e}"
                );
                got.to_bits().abs_diff(want.to_bits())
            };
            assert!(apart <= 1, "pow({x:e}, {y:e}): {got:e} vs {want:e}");
            worst = worst.max(apart);
            differ += usize::from(apart > 0);
        }
        eprintln!("float64: {differ} of {total} a bit from libm's (worst {worst} ulp)");
        // float32, against the float64 power of the same inputs (exact to
        // float32's purposes): bases 2^±20 and exponents ±6 (results
        // within 2^±120), bases near 1 with exponents to ±WIDE_FROM and
        // past it, and bases within 20% of 1 with exponents to ±500
        // (results to 2^±160: subnormal, 0 and inf too).
        let f32_pairs: Vec<(f32, f32)> = bases
            .iter()
            .zip(&exps)
            .map(|(&b, &e)| ((b.log2() * 0.2).exp2() as f32, (e * 0.6) as f32))
            .chain(
                near.iter()
                    .zip(&big)
                    .map(|(&b, &e)| ((1.0 + (b - 1.0) * 1e3) as f32, (e * 1e-5) as f32)),
            )
            .chain(
                near.iter()
                    .zip(&big)
                    .map(|(&b, &e)| ((1.0 + (b - 1.0) * 4e5) as f32, (e * 1e-5) as f32)),
            )
            .chain(
                near.iter()
                    .zip(&big)
                    .map(|(&b, &e)| ((1.0 + (b - 1.0) * 1e3) as f32, (e * 1e-3) as f32)),
            )
            .collect();
        // Normal results, then subnormal ones (rounded twice).
        let (mut worst, mut at, mut off) = ([0f64; 2], [(0f32, 0f32); 2], 0usize);
        for &(x, y) in &f32_pairs {
            let exact = f64::from(x).powf(f64::from(y));
            if exact == 0.0 || exact.abs() >= f64::from(f32::MAX) {
                continue;
            }
            // float32's ulp at the exact value (2^-149 for subnormals).
            let ulp = 2f64.powi((exact.abs().log2().floor() as i32 - 23).max(-149));
            let err = (f64::from(lanes_pow(x, y)) - exact).abs() / ulp;
            let sub = usize::from(exact.abs() < f64::from(f32::MIN_POSITIVE));
            if err > worst[sub] {
                (worst[sub], at[sub]) = (err, (x, y));
            }
            off += usize::from(lanes_pow(x, y) != exact as f32);
        }
        eprintln!(
            "float32: worst {:.3} ulp at {:?} (subnormal results {:.3} at {:?}), {off} of {} \
             not the rounded power",
            worst[0],
            at[0],
            worst[1],
            at[1],
            f32_pairs.len()
        );
        assert!(worst[0] < 0.56 && worst[1] < 0.8, "{worst:?} ulp at {at:?}");
    }
}
