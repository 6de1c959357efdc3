//! Contiguous casts between the common dtypes (float16, bfloat16, float32,
//! float64, int32, int64) as plain loops the compiler vectorises (for AVX2
//! where the CPU has it: `isa.rs`), `narrow/`'s conversions for the
//! narrow floats (F16C where the CPU has it) and `round_once.rs`'s roundings
//! to them, split across threads when large. Each gives exactly what
//! `Element::cast` gives (the generic path through `Scalar`): floats to
//! integers truncate, and beyond int64 wrap as a cast through `i128` does.

use super::narrow::{NarrowSlice, bf16_round, bf16_to_f32, bf16_widened};
use super::parallel::for_range;
use super::round_once::{f64_to_bf16, f64_to_f16, i32_to_f32_sticky, to_narrow};
use crate::DType;
use crate::element::f64_to_f32_odd;
use half::{bf16, f16};

/// Elements past which a cast splits across threads.
const PARALLEL_MIN: usize = 1 << 16;
/// Elements converted at a time through a float32/float64 buffer.
const BLOCK: usize = 512;

/// Float to integer as the generic cast, `(x as i128) as D` (truncation,
/// wrapping beyond the integer's range, NaN to 0), a block at a time: a
/// branch-free loop the compiler vectorises for blocks whose values all lie
/// within `limit` (where the fast conversion is exact), the generic one for
/// the rare block with a value beyond it.
///
/// `wide` takes a source element to the float (float32 or float64) both
/// conversions start from: the identity, or bfloat16's shift.
#[inline(always)]
fn float_to_int<S: Copy, F: Copy + Into<f64>, D: Copy>(
    src: &[S],
    dst: &mut [D],
    limit: f64,
    wide: impl Fn(S) -> F,
    fast: impl Fn(F) -> D,
    generic: impl Fn(f64) -> D,
) {
    for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let mut within = true;
        for (d, &x) in d.iter_mut().zip(s) {
            let x = wide(x);
            within &= x.into().abs() < limit;
            *d = fast(x);
        }
        if !within {
            for (d, &x) in d.iter_mut().zip(s) {
                *d = generic(wide(x).into());
            }
        }
    }
}

/// `$x` (float32 or float64) truncated to int32, for `|x| < 2^31` (0
/// otherwise, where the caller takes the generic path): `x as i32`
/// saturates, which the compiler does not vectorise; this is one
/// conversion instruction and a select.
macro_rules! trunc_i32 {
    ($x:expr) => {{
        let x = $x;
        let x = if x.abs() < 2_147_483_648.0 { x } else { 0.0 };
        // SAFETY: x is finite and its truncation fits in i32.
        unsafe { x.to_int_unchecked::<i32>() }
    }};
}

/// `x` truncated to an integer, for `|x| < 2^51`: the integer is read from
/// the low bits of `trunc(x) + 1.5 * 2^52` (AVX2 has no packed conversion to
/// int64, this is three vector instructions).
#[inline(always)]
fn trunc_i64(x: f64) -> i64 {
    const ROUND: f64 = 6_755_399_441_055_744.0;
    ((x.trunc() + ROUND).to_bits() as i64).wrapping_sub(ROUND.to_bits() as i64)
}

/// Converts `src` into `dst` (same length) for one (source, target) pair.
trait CastSlice<D>: Sized {
    fn cast_slice(src: &[Self], dst: &mut [D]);
}

macro_rules! cast_as {
    ($($s:ty => $d:ty),*) => {$(
        impl CastSlice<$d> for $s {
            #[inline(always)]
            fn cast_slice(src: &[$s], dst: &mut [$d]) {
                dst.iter_mut().zip(src).for_each(|(d, &s)| *d = s as $d);
            }
        }
    )*};
}
cast_as!(f32 => f64, f64 => f32, i32 => f32, i32 => f64, i64 => f32, i64 => f64, i32 => i64, i64 => i32);

/// One row per (float, integer) pair: the source, the target, the limit of
/// the fast conversion, the widening to the float both conversions start
/// from ([`float_to_int`]'s `wide`) and the fast conversion.
macro_rules! cast_float_int {
    ($($s:ty => $d:ty, $limit:expr, $wide:expr, $fast:expr;)*) => {$(
        impl CastSlice<$d> for $s {
            #[inline(always)]
            fn cast_slice(src: &[$s], dst: &mut [$d]) {
                float_to_int(src, dst, $limit, $wide, $fast, |x| x as i128 as $d);
            }
        }
    )*};
}
/// The magnitude below which [`trunc_i32!`] is exact.
const I32_LIMIT: f64 = 2_147_483_648.0;
/// The magnitude below which [`trunc_i64`] is exact.
const I64_LIMIT: f64 = 2_251_799_813_685_248.0;

// bfloat16 an element at a time (its widening is a shift, a NaN left
// signalling since it becomes 0 anyway; through a float32 block, bfloat16
// to int32 ran 1.4x torch's); float16 goes through F16C blocks below.
cast_float_int! {
    f32 => i32, I32_LIMIT, |x: f32| x, |x: f32| trunc_i32!(x);
    f64 => i32, I32_LIMIT, |x: f64| x, |x: f64| trunc_i32!(x);
    f32 => i64, I64_LIMIT, |x: f32| x, |x: f32| trunc_i64(x as f64);
    f64 => i64, I64_LIMIT, |x: f64| x, trunc_i64;
    bf16 => i32, I32_LIMIT, bf16_widened, |x: f32| trunc_i32!(x);
    bf16 => i64, I64_LIMIT, bf16_widened, |x: f32| trunc_i64(x as f64);
}

impl CastSlice<f16> for f32 {
    #[inline(always)]
    fn cast_slice(src: &[f32], dst: &mut [f16]) {
        f16::narrow(src, dst);
    }
}

impl CastSlice<bf16> for f32 {
    #[inline(always)]
    fn cast_slice(src: &[f32], dst: &mut [bf16]) {
        bf16::narrow(src, dst);
    }
}

macro_rules! cast_half {
    ($($h:ty => $from_f64:path),*) => {$(
        impl CastSlice<f32> for $h {
            #[inline(always)]
            fn cast_slice(src: &[$h], dst: &mut [f32]) {
                <$h>::widen(src, dst);
            }
        }
        // float64 through a float32 the narrow float rounds as it would the
        // float64 (so once).
        impl CastSlice<$h> for f64 {
            #[inline(always)]
            fn cast_slice(src: &[f64], dst: &mut [$h]) {
                $from_f64(src, dst);
            }
        }
        // Integers reach the narrow floats rounded once (int32 through a
        // float32 that rounds as round-to-odd would, int64 through float64
        // as the generic cast).
        impl CastSlice<$h> for i64 {
            #[inline(always)]
            fn cast_slice(src: &[i64], dst: &mut [$h]) {
                to_narrow(src, dst, |x| f64_to_f32_odd(x as f64));
            }
        }
    )*};
}
cast_half!(f16 => f64_to_f16, bf16 => f64_to_bf16);

// Out of the narrow floats to float64 and the integers, through float32
// (exact): float16 a block at a time (F16C), bfloat16 an element at a time
// (its widening is a shift; its integer targets are `cast_float_int!`
// rows above). `via_f32` takes `#[inline(always)]` closures, not the
// functions themselves: a function item's `Fn::call` stayed out of line,
// compiled for the baseline, inside the AVX-512 loop (float16 → bfloat16
// ran 2.6x slower), hence clippy's `redundant_closure` allowed there.
impl CastSlice<f64> for f16 {
    #[inline(always)]
    fn cast_slice(src: &[f16], dst: &mut [f64]) {
        via_f32(
            src,
            dst,
            #[inline(always)]
            |b, d| d.iter_mut().zip(b).for_each(|(d, &x)| *d = x as f64),
        );
    }
}
impl CastSlice<i32> for f16 {
    #[inline(always)]
    #[allow(clippy::redundant_closure)]
    fn cast_slice(src: &[f16], dst: &mut [i32]) {
        via_f32(
            src,
            dst,
            #[inline(always)]
            |b, d| <f32 as CastSlice<i32>>::cast_slice(b, d),
        );
    }
}
impl CastSlice<i64> for f16 {
    #[inline(always)]
    #[allow(clippy::redundant_closure)]
    fn cast_slice(src: &[f16], dst: &mut [i64]) {
        via_f32(
            src,
            dst,
            #[inline(always)]
            |b, d| <f32 as CastSlice<i64>>::cast_slice(b, d),
        );
    }
}
impl CastSlice<f64> for bf16 {
    #[inline(always)]
    fn cast_slice(src: &[bf16], dst: &mut [f64]) {
        dst.iter_mut()
            .zip(src)
            .for_each(|(d, &x)| *d = bf16_to_f32(x) as f64);
    }
}
impl CastSlice<f16> for i32 {
    #[inline(always)]
    fn cast_slice(src: &[i32], dst: &mut [f16]) {
        to_narrow(src, dst, i32_to_f32_sticky);
    }
}

impl CastSlice<bf16> for i32 {
    #[inline(always)]
    fn cast_slice(src: &[i32], dst: &mut [bf16]) {
        // Rounded to nearest even in the loop: no NaN can come of an int32.
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = bf16_round(i32_to_f32_sticky(x).to_bits());
        }
    }
}

impl CastSlice<bf16> for f16 {
    #[inline(always)]
    #[allow(clippy::redundant_closure)]
    fn cast_slice(src: &[f16], dst: &mut [bf16]) {
        via_f32(
            src,
            dst,
            #[inline(always)]
            |b, d| bf16::narrow(b, d),
        );
    }
}

impl CastSlice<f16> for bf16 {
    #[inline(always)]
    #[allow(clippy::redundant_closure)]
    fn cast_slice(src: &[bf16], dst: &mut [f16]) {
        via_f32(
            src,
            dst,
            #[inline(always)]
            |b, d| f16::narrow(b, d),
        );
    }
}

/// A narrow float source widened to float32 a block at a time, `f`
/// converting each block.
#[inline(always)]
fn via_f32<H: NarrowSlice, D>(src: &[H], dst: &mut [D], f: impl Fn(&[f32], &mut [D])) {
    let mut buf = [0f32; BLOCK];
    for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let buf = &mut buf[..s.len()];
        H::widen(s, buf);
        f(buf, d);
    }
}

super::isa::twin! {
    /// [`CastSlice::cast_slice`] for the CPU's instruction set.
    fn cast_slice[S: CastSlice<D>, D](src: &[S], dst: &mut [D]) => S::cast_slice;
}

/// `cast_slice` over threads when long.
fn run<S: CastSlice<D> + Sync, D: Send>(src: &[S], dst: &mut [D]) {
    let n = src.len().min(dst.len());
    let d = dst.as_mut_ptr() as usize;
    for_range(n, PARALLEL_MIN, BLOCK, |start, end| {
        // SAFETY: start..end lies inside dst, and the pieces are disjoint.
        let d = unsafe { std::slice::from_raw_parts_mut((d as *mut D).add(start), end - start) };
        cast_slice(&src[start..end], d)
    });
}

/// Casts `n` contiguous elements from `src` (of `from`) to `dst` (of `to`)
/// when the pair has a fast loop; false (nothing written) otherwise.
///
/// # Safety
/// `src` holds `n` aligned elements of `from`, `dst` room for `n` aligned
/// elements of `to`, and the two do not overlap.
pub(crate) unsafe fn cast_contiguous(
    from: DType,
    to: DType,
    src: *const u8,
    dst: *mut u8,
    n: usize,
) -> bool {
    macro_rules! pair {
        ($s:ty, $d:ty) => {{
            // SAFETY: the caller's promise.
            let (s, d) = unsafe {
                (
                    std::slice::from_raw_parts(src.cast::<$s>(), n),
                    std::slice::from_raw_parts_mut(dst.cast::<$d>(), n),
                )
            };
            run::<$s, $d>(s, d);
            true
        }};
    }
    use DType::*;
    match (from, to) {
        (F32, F64) => pair!(f32, f64),
        (F64, F32) => pair!(f64, f32),
        (I32, F32) => pair!(i32, f32),
        (I32, F64) => pair!(i32, f64),
        (I64, F32) => pair!(i64, f32),
        (I64, F64) => pair!(i64, f64),
        (I32, I64) => pair!(i32, i64),
        (I64, I32) => pair!(i64, i32),
        (F32, I32) => pair!(f32, i32),
        (F32, I64) => pair!(f32, i64),
        (F64, I32) => pair!(f64, i32),
        (F64, I64) => pair!(f64, i64),
        (F32, F16) => pair!(f32, f16),
        (F32, BF16) => pair!(f32, bf16),
        (F64, F16) => pair!(f64, f16),
        (F64, BF16) => pair!(f64, bf16),
        (F16, F32) => pair!(f16, f32),
        (BF16, F32) => pair!(bf16, f32),
        (F16, F64) => pair!(f16, f64),
        (BF16, F64) => pair!(bf16, f64),
        (I32, F16) => pair!(i32, f16),
        (I32, BF16) => pair!(i32, bf16),
        (I64, F16) => pair!(i64, f16),
        (I64, BF16) => pair!(i64, bf16),
        (F16, I32) => pair!(f16, i32),
        (F16, I64) => pair!(f16, i64),
        (BF16, I32) => pair!(bf16, i32),
        (BF16, I64) => pair!(bf16, i64),
        (F16, BF16) => pair!(f16, bf16),
        (BF16, F16) => pair!(bf16, f16),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Element;

    /// int32 to float16 and bfloat16 round once, as the generic cast
    /// (through float64), at every bit length: values at, just beside and
    /// 2^8 beside each narrow tie and midpoint, of both signs, and the
    /// extremes.
    #[test]
    fn int32_to_narrow_floats_round_once_near_every_tie() {
        let mut xs: Vec<i32> = vec![0, 1, -1, i32::MAX, i32::MIN, i32::MIN + 1];
        for len in 9..=31u32 {
            for keep in [8u32, 11] {
                let Some(p) = len.checked_sub(keep) else {
                    continue;
                };
                let step = 1i64 << p;
                for k in [1i64 << (keep - 1), (3 << (keep - 2)) + 1, (1 << keep) - 1] {
                    let tie = k * step + step / 2;
                    for off in [-257i64, -256, -129, -128, -1, 0, 1, 127, 128, 255, 256, 257] {
                        let v = tie + off;
                        if let Ok(v) = i32::try_from(v) {
                            xs.extend([v, v.wrapping_neg()]);
                        }
                    }
                }
            }
        }
        let mut h = vec![f16::ZERO; xs.len()];
        let mut b = vec![bf16::ZERO; xs.len()];
        <i32 as CastSlice<f16>>::cast_slice(&xs, &mut h);
        <i32 as CastSlice<bf16>>::cast_slice(&xs, &mut b);
        for ((&x, h), b) in xs.iter().zip(&h).zip(&b) {
            let (wh, wb): (f16, bf16) = (crate::Element::cast(x), crate::Element::cast(x));
            assert_eq!(wh.to_bits(), h.to_bits(), "{x} -> float16");
            assert_eq!(wb.to_bits(), b.to_bits(), "{x} -> bfloat16");
        }
    }

    /// Every fast pair agrees bit for bit with the generic cast.
    #[test]
    fn fast_casts_match_the_generic_cast() {
        let xs: Vec<f64> = vec![
            0.0,
            -0.0,
            1.5,
            -2.5,
            0.1,
            65504.0,
            65520.0,
            1e10,
            -3e9,
            3e38,
            1e300,
            -1e19,
            2e19,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            123456789.0,
            -7.999,
            2147483648.0,
            -2147483649.5,
            4503599627370497.5,
            -9.3e18,
            1.0039062500000002, // bfloat16 halfway and a little: rounds up once
            1.00390625,         // bfloat16 halfway: to even
            1.0004882812500002, // float16 halfway and a little
            33554433.0,
            1e-46,
            -3e-39,
        ];
        // Long enough for several blocks, one value beyond every integer
        // fast path in one block only (not under Miri: slow, and the values
        // above reach every unsafe step already).
        let (a, b) = if cfg!(miri) { (0, 0) } else { (1500, 600) };
        let xs: Vec<f64> = xs
            .iter()
            .copied()
            .chain((0..a).map(|i| (i as f64 - 700.0) * 1.37))
            .chain([f64::NAN, 3e12])
            .chain((0..b).map(|i| i as f64 * -0.51))
            .collect();
        macro_rules! check {
            ($s:ty, $d:ty) => {{
                let src: Vec<$s> = xs
                    .iter()
                    .map(|&x| <$s>::from_scalar(crate::Scalar::Float(x)))
                    .collect();
                let mut dst = vec![<$d as bytemuck::Zeroable>::zeroed(); src.len()];
                <$s as CastSlice<$d>>::cast_slice(&src, &mut dst);
                for (s, d) in src.iter().zip(&dst) {
                    let want: $d = crate::Element::cast(*s);
                    assert_eq!(
                        format!("{:?}", want.to_scalar()),
                        format!("{:?}", d.to_scalar()),
                        "{} -> {} of {:?}",
                        stringify!($s),
                        stringify!($d),
                        s.to_scalar()
                    );
                }
            }};
        }
        check!(f32, f64);
        check!(f64, f32);
        check!(i32, f32);
        check!(i32, f64);
        check!(i64, f32);
        check!(i64, f64);
        check!(i32, i64);
        check!(i64, i32);
        check!(f32, i32);
        check!(f32, i64);
        check!(f64, i32);
        check!(f64, i64);
        check!(f32, f16);
        check!(f32, bf16);
        check!(f64, f16);
        check!(f64, bf16);
        check!(f16, f32);
        check!(bf16, f32);
        check!(f16, f64);
        check!(bf16, f64);
        check!(i32, f16);
        check!(i32, bf16);
        check!(i64, f16);
        check!(i64, bf16);
        check!(f16, i32);
        check!(f16, i64);
        check!(bf16, i32);
        check!(bf16, i64);
        check!(f16, bf16);
        check!(bf16, f16);
    }
}
