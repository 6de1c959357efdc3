//! float64 and the integers to float16 and bfloat16, rounded once (as the
//! generic cast through `Scalar` rounds): through a float32 that the narrow
//! float rounds as it would the source (a sticky bit, as round-to-odd),
//! or, for float64, by two plain roundings (to float32, then on) in blocks
//! where no float32 lies on a narrow midpoint, in intrinsics
//! (`cast_x86.rs`) where the CPU has them. `cast.rs` calls these.

#[cfg(all(target_arch = "x86_64", not(miri)))]
use super::cast_x86;
use super::narrow::NarrowSlice;
use half::{bf16, f16};

/// Values converted, and checked for midpoints, at a time.
const BLOCK: usize = 512;

/// float64 to float16, rounded once: by [`cast_x86::f64_to_f16`] on CPUs
/// with AVX-512 FP16, by [`cast_x86::f64_to_f16_f16c`] (the argument of
/// [`rounded_twice`] in one pass) on AVX2, else by [`f64_to_f16_generic`];
/// the same bits each way.
#[inline(always)]
pub(super) fn f64_to_f16(src: &[f64], dst: &mut [f16]) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if super::isa::avx512_fp16() {
        // SAFETY: the CPU has AVX-512 FP16 (checked).
        return unsafe {
            cast_x86::f64_to_f16(src, dst, |s, d| to_narrow(s, d, f64_to_f32_sticky))
        };
    }
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if super::isa::avx2() {
        // SAFETY: the CPU has AVX2 and F16C (checked).
        return unsafe {
            cast_x86::f64_to_f16_f16c(src, dst, |s, d| to_narrow(s, d, f64_to_f32_sticky))
        };
    }
    f64_to_f16_generic(src, dst)
}

/// float64 to float16 by [`rounded_twice`] in loops the compiler writes (a
/// block holding a midpoint or a value in float16's subnormal range by
/// [`f64_to_f32_sticky`]).
#[inline(always)]
fn f64_to_f16_generic(src: &[f64], dst: &mut [f16]) {
    // float16 rounds at a float32's bit 12 from its normal range (2^-14)
    // up; below it the position moves, and every such value but zero is
    // doubted (`|bits| - 1` wraps for zero).
    rounded_twice(
        src,
        dst,
        12,
        (0x3880_0000 - 1, 1),
        #[inline(always)]
        |s, d| to_narrow(s, d, f64_to_f32_sticky),
    )
}

/// float64 to bfloat16, rounded once: by [`cast_x86::f64_to_bf16`] on CPUs
/// with AVX-512 BF16 (which also doubts subnormal float32s, as
/// `vcvtneps2bf16` reads them as zero), by [`cast_x86::f64_to_bf16_avx2`]
/// on AVX2 (both the argument of [`rounded_twice`] in intrinsics), else by
/// [`f64_to_bf16_generic`]; the same bits each way.
#[inline(always)]
pub(super) fn f64_to_bf16(src: &[f64], dst: &mut [bf16]) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if super::isa::avx512_bf16() {
        // SAFETY: the CPU has AVX-512 and its BF16 conversions (checked).
        return unsafe {
            cast_x86::f64_to_bf16(src, dst, |s, d| to_narrow(s, d, f64_to_f32_sticky_bf16))
        };
    }
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if super::isa::avx2() {
        // SAFETY: the CPU has AVX2 (checked).
        return unsafe {
            cast_x86::f64_to_bf16_avx2(src, dst, |s, d| to_narrow(s, d, f64_to_f32_sticky_bf16))
        };
    }
    f64_to_bf16_generic(src, dst)
}

/// float64 to bfloat16 by [`rounded_twice`] in loops the compiler writes (a
/// block holding a midpoint by [`f64_to_f32_sticky_bf16`]).
#[inline(always)]
fn f64_to_bf16_generic(src: &[f64], dst: &mut [bf16]) {
    // bfloat16 rounds at a float32's bit 15 at every magnitude (its
    // subnormals are float32's exponent with 7 bits): nothing else doubted.
    rounded_twice(
        src,
        dst,
        15,
        (0, 0),
        #[inline(always)]
        |s, d| to_narrow(s, d, f64_to_f32_sticky_bf16),
    )
}

/// float64 to a narrow float by two roundings, to float32 (`as`: one
/// instruction a vector) and on, where they give the once-rounded result:
/// the float32 is the float64's nearest, so no narrow midpoint (each a
/// float32) lies strictly between them, and the second rounding goes the
/// way the first would unless the float32 is itself a midpoint (the
/// float64 may lie either side of it). A block is converted again by
/// `once` if a float32 in it is a midpoint where the narrow float rounds
/// at bit `at`, or if `|bits| - offset` falls below `low` (a range where
/// it rounds elsewhere). Both tests are minimums over the block, three
/// vector steps each. Zen 3, one thread, 10^5 float64 to bfloat16: 54 ->
/// 28 us (torch 26), where the sticky bit's integer steps on every element
/// bounded the loop.
#[inline(always)]
fn rounded_twice<H: NarrowSlice>(
    src: &[f64],
    dst: &mut [H],
    at: u32,
    (low, offset): (u32, u32),
    once: impl Fn(&[f64], &mut [H]),
) {
    let (half, mask) = (1u32 << at, (2u32 << at) - 1);
    let mut buf = [0f32; BLOCK];
    for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let buf = &mut buf[..s.len()];
        let (mut tie, mut below) = (u32::MAX, u32::MAX);
        for (b, &x) in buf.iter_mut().zip(s) {
            *b = x as f32;
            let bits = b.to_bits();
            tie = tie.min((bits ^ half) & mask);
            below = below.min((bits & 0x7fff_ffff).wrapping_sub(offset));
        }
        if tie == 0 || below < low {
            once(s, d)
        } else {
            H::narrow(buf, d)
        }
    }
}

/// A source converted to float32 by `f` (as round-to-odd does, so that
/// rounding to nearest even next rounds once, as the generic cast), then
/// to a narrow float, a block at a time.
#[inline(always)]
pub(super) fn to_narrow<S: Copy, H: NarrowSlice>(src: &[S], dst: &mut [H], f: impl Fn(S) -> f32) {
    let mut buf = [0f32; BLOCK];
    for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let buf = &mut buf[..s.len()];
        buf.iter_mut().zip(s).for_each(|(b, &x)| *b = f(x));
        H::narrow(buf, d);
    }
}

/// A float64 as a float32 that float16 rounds to as it would round the
/// float64 itself: the bits below float32's last one become a sticky bit in
/// it (round-to-odd by truncation), exact as a float32 across float32's
/// normal range; below it (where float16 has only zeros) and past it
/// (infinity) the conversion's rounding does not change float16's result.
/// Three integer steps instead of the round trip of [`f64_to_f32_odd`].
#[inline(always)]
fn f64_to_f32_sticky(x: f64) -> f32 {
    const LOW: u64 = (1 << 29) - 1;
    let b = x.to_bits();
    // `(b & LOW) + LOW` carries into bit 29 exactly when a low bit is set:
    // four vector steps where a compare and a select took five.
    f64::from_bits((b | ((b & LOW) + LOW)) & !LOW) as f32
}

/// A float64 as a float32 that bfloat16 rounds to as it would round the
/// float64 itself: [`f64_to_f32_sticky`], but below float32's normal range
/// (where float32 rounds the sticky bit away) the value is first rounded to
/// bfloat16's subnormals, multiples of 2^-133, which float32 holds exactly:
/// adding and taking away 1.5 * 2^-81 rounds there once, ties to even.
#[inline(always)]
fn f64_to_f32_sticky_bf16(x: f64) -> f32 {
    const M: f64 = f64::from_bits(((1023 - 81) << 52) | (1 << 51)); // 1.5 * 2^-81
    let a = x.abs();
    let r = ((a + M) - M).copysign(x);
    f64_to_f32_sticky(if a < f32::MIN_POSITIVE as f64 { r } else { x })
}

/// An int32 as a float32 that a narrow float (at most 11 significant bits)
/// rounds to as it would round the int32 itself: exact below 2^24 in
/// magnitude; above, the low 8 bits (below every narrow rounding position
/// there) become one sticky bit, which leaves at most 24 significant bits,
/// so the float32 is exact again. On two's complement the same bits serve
/// both signs: `(x & !0xff) | 0x80` is `-((m & !0xff) | 0x80)` for `x = -m`
/// with a sticky bit. Integer steps the compiler vectorises, unlike the
/// float64 round trip of [`f64_to_f32_odd`] (twice as slow).
#[inline(always)]
pub(super) fn i32_to_f32_sticky(x: i32) -> f32 {
    let big = (x as u32).wrapping_add(1 << 24) >= 1 << 25;
    let sticky = if x & 0xff != 0 { 0x80 } else { 0 };
    let x = if big { (x & !0xff) | sticky } else { x };
    x as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// float64 to float16 and bfloat16 rounds once, as the generic cast:
    /// every midpoint between neighbouring values (ties, subnormal ones
    /// included), a float64 ulp and a float32 ulp either side of it, and each
    /// value itself, of both signs; with infinities, NaN and tiny values.
    #[test]
    fn float64_to_narrow_floats_round_once_near_every_tie() {
        macro_rules! check {
            ($h:ty, $inf:expr, $cast:path, $generic:path) => {{
                let step = if cfg!(miri) { 251 } else { 1 };
                let mut xs = vec![
                    f64::INFINITY,
                    f64::NAN,
                    f64::from_bits(u64::MAX >> 1), // a NaN that rounding up would carry out of
                    1e-40,
                    1e-45,
                    5e-324,
                    f64::MAX,
                    65519.99,
                    65520.0,
                ];
                for b in (0..$inf).step_by(step) {
                    let (lo, hi) = (<$h>::from_bits(b).to_f64(), <$h>::from_bits(b + 1).to_f64());
                    let mid = (lo + hi) / 2.0;
                    let m32 = (mid as f32).to_bits();
                    xs.extend([
                        lo,
                        mid,
                        f64::from_bits(mid.to_bits() + 1),
                        f64::from_bits(mid.to_bits() - 1),
                    ]);
                    xs.extend([
                        f32::from_bits(m32 + 1) as f64,
                        f32::from_bits(m32.max(1) - 1) as f64,
                    ]);
                }
                let xs: Vec<f64> = xs.iter().flat_map(|&x| [x, -x]).collect();
                for cast in [$cast, $generic] {
                    let mut h = vec![<$h>::ZERO; xs.len()];
                    cast(&xs, &mut h);
                    for (&x, h) in xs.iter().zip(&h) {
                        let want: $h = crate::Element::cast(x);
                        let same = want.to_bits() == h.to_bits() || (want.is_nan() && h.is_nan());
                        assert!(same, "{x:e} -> {}", stringify!($h));
                    }
                }
            }};
        }
        check!(f16, 0x7c00u16, f64_to_f16, f64_to_f16_generic);
        check!(bf16, 0x7f80u16, f64_to_bf16, f64_to_bf16_generic);
    }

    /// float64 to the narrow floats rounds once for a value alone among
    /// ordinary ones (where two roundings stand unless the block is
    /// converted again): midpoints (subnormal ones included), a float64 ulp
    /// either side (float32 rounds those onto the midpoint), the values
    /// themselves and their neighbours, NaN and infinities, at every lane.
    #[test]
    #[cfg_attr(miri, ignore)] // a block per value
    fn float64_to_narrow_floats_round_once_alone_in_a_block() {
        // Ordinary: full mantissas, none on a float16 or bfloat16 midpoint
        // as float32 (which would send the whole block to the sticky steps).
        let block: Vec<f64> = (0..BLOCK + 40).map(|i| 1.1 + i as f64 * 0.013).collect();
        assert!(
            block
                .iter()
                .all(|&x| (x as f32).to_bits() & 0x1fff != 0x1000)
        );
        assert!(
            block
                .iter()
                .all(|&x| (x as f32).to_bits() & 0xffff != 0x8000)
        );
        macro_rules! check {
            ($h:ty, $inf:expr, $step:expr, $cast:expr) => {{
                let mut xs = vec![
                    f64::NAN,
                    f64::from_bits(u64::MAX >> 1),
                    f64::INFINITY,
                    3.4e38,
                    3.3895e38,
                    3.3894e38,
                    65520.0,
                    1e-300,
                ];
                for b in (0..$inf).step_by($step) {
                    let (lo, hi) = (<$h>::from_bits(b).to_f64(), <$h>::from_bits(b + 1).to_f64());
                    let mid = (lo + hi) / 2.0;
                    for x in [
                        lo,
                        mid,
                        f64::from_bits(mid.to_bits() + 1),
                        f64::from_bits(mid.to_bits() - 1),
                    ] {
                        xs.extend([x, -x]);
                    }
                }
                let mut block = block.clone();
                let mut out = vec![<$h>::ZERO; block.len()];
                for (i, &x) in xs.iter().enumerate() {
                    let lane = i % block.len();
                    let keep = std::mem::replace(&mut block[lane], x);
                    $cast(&block, &mut out);
                    let want: $h = crate::Element::cast(x);
                    let same = want.to_bits() == out[lane].to_bits()
                        || (want.is_nan() && out[lane].is_nan());
                    assert!(same, "{x:e} at lane {lane}: {:?}, want {want:?}", out[lane]);
                    if i % 97 == 0 {
                        // and the ordinary lanes beside it
                        let bits = |h: &[$h]| h.iter().map(|h| h.to_bits()).collect::<Vec<_>>();
                        let want: Vec<$h> =
                            block.iter().map(|&x| crate::Element::cast(x)).collect();
                        let (mut got, mut want) = (bits(&out), bits(&want));
                        (got[lane], want[lane]) = (0, 0);
                        assert_eq!(got, want, "beside {x:e}");
                    }
                    block[lane] = keep;
                }
            }};
        }
        check!(bf16, 0x7f80u16, 7, f64_to_bf16);
        check!(bf16, 0x7f80u16, 7, f64_to_bf16_generic);
        check!(f16, 0x7c00u16, 5, f64_to_f16);
        check!(f16, 0x7c00u16, 5, f64_to_f16_generic);
    }

    /// float64 to float16 rounds once at every float16 midpoint (subnormal
    /// ones and the overflow threshold among them), a float64 ulp either
    /// side, each sign, at every tail length, by the CPU's loops (AVX-512 FP16 or AVX2 with F16C where it has them) and by the generic steps.
    #[test]
    #[cfg_attr(miri, ignore)] // 2^18 values
    fn float64_to_float16_rounds_once_at_every_midpoint() {
        // 65504's upper neighbour 65536 (what float16 would hold next).
        let at = |b: u16| {
            if b == 0x7c00 {
                65536.0
            } else {
                f16::from_bits(b).to_f64()
            }
        };
        let xs: Vec<f64> = (0..0x7c00u16)
            .map(|b| ((at(b) + at(b + 1)) / 2.0).to_bits())
            .flat_map(|m| [m, m + 1, m - 1].map(f64::from_bits))
            .flat_map(|x| [x, -x])
            .collect();
        for start in 0..9 {
            for cast in [f64_to_f16, f64_to_f16_generic] {
                let mut out = vec![f16::ZERO; xs.len() - start];
                cast(&xs[start..], &mut out);
                for (&x, h) in xs[start..].iter().zip(&out) {
                    let want: f16 = crate::Element::cast(x);
                    assert_eq!(h.to_bits(), want.to_bits(), "{x:e}");
                }
            }
        }
    }
}
