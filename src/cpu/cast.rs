//! Contiguous casts between the common dtypes (float16, bfloat16, float32,
//! float64, int32, int64) as plain loops the compiler vectorises (for AVX2
//! where the CPU has it: `isa.rs`), `narrow.rs`'s conversions for the narrow
//! floats (F16C where the CPU has it), split across threads when large. Each gives exactly what
//! `Element::cast` gives (the generic path through `Scalar`): floats to
//! integers truncate, and beyond int64 wrap as a cast through `i128` does.

use super::narrow::NarrowSlice;
use super::parallel::for_range;
use crate::DType;
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

/// Elements past which a cast splits across threads.
const PARALLEL_MIN: usize = 1 << 16;
/// Elements converted at a time through a float32/float64 buffer.
const BLOCK: usize = 512;

/// Float to integer as `(x as i128) as $t` (the generic cast), on the fast
/// `as i64` path whenever that gives the same bits.
macro_rules! float_to_int {
    ($x:expr, $t:ty) => {{
        let x = $x;
        if x.abs() < 9_223_372_036_854_775_808.0 {
            x as i64 as $t
        } else {
            x as i128 as $t
        }
    }};
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

macro_rules! cast_float_int {
    ($($s:ty => $d:ty),*) => {$(
        impl CastSlice<$d> for $s {
            #[inline(always)]
            fn cast_slice(src: &[$s], dst: &mut [$d]) {
                dst.iter_mut().zip(src).for_each(|(d, &s)| *d = float_to_int!(s, $d));
            }
        }
    )*};
}
cast_float_int!(f32 => i32, f32 => i64, f64 => i32, f64 => i64);

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
    ($($h:ty),*) => {$(
        impl CastSlice<$h> for f64 {
            #[inline(always)]
            fn cast_slice(src: &[f64], dst: &mut [$h]) {
                dst.convert_from_f64_slice(src);
            }
        }
        impl CastSlice<f32> for $h {
            #[inline(always)]
            fn cast_slice(src: &[$h], dst: &mut [f32]) {
                <$h>::widen(src, dst);
            }
        }
        impl CastSlice<f64> for $h {
            #[inline(always)]
            fn cast_slice(src: &[$h], dst: &mut [f64]) {
                src.convert_to_f64_slice(dst);
            }
        }
        // Integers reach the narrow floats through float64 (one rounding,
        // as the generic cast), and leave them through float32 (exact).
        impl CastSlice<$h> for i32 {
            #[inline(always)]
            fn cast_slice(src: &[i32], dst: &mut [$h]) {
                via_f64(src, dst, |x| x as f64);
            }
        }
        impl CastSlice<$h> for i64 {
            #[inline(always)]
            fn cast_slice(src: &[i64], dst: &mut [$h]) {
                via_f64(src, dst, |x| x as f64);
            }
        }
        impl CastSlice<i32> for $h {
            #[inline(always)]
            fn cast_slice(src: &[$h], dst: &mut [i32]) {
                via_f32(src, dst, |x| float_to_int!(x, i32));
            }
        }
        impl CastSlice<i64> for $h {
            #[inline(always)]
            fn cast_slice(src: &[$h], dst: &mut [i64]) {
                via_f32(src, dst, |x| float_to_int!(x, i64));
            }
        }
    )*};
}
cast_half!(f16, bf16);

impl CastSlice<bf16> for f16 {
    #[inline(always)]
    fn cast_slice(src: &[f16], dst: &mut [bf16]) {
        via_f32(src, dst, super::narrow::bf16_from_f32);
    }
}

impl CastSlice<f16> for bf16 {
    #[inline(always)]
    fn cast_slice(src: &[bf16], dst: &mut [f16]) {
        via_f32(src, dst, f16::from_f32);
    }
}

/// A narrow float source widened to float32 a block at a time.
#[inline(always)]
fn via_f32<H: NarrowSlice, D>(src: &[H], dst: &mut [D], f: impl Fn(f32) -> D) {
    let mut buf = [0f32; BLOCK];
    for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let buf = &mut buf[..s.len()];
        H::widen(s, buf);
        d.iter_mut().zip(buf.iter()).for_each(|(d, &x)| *d = f(x));
    }
}

/// An integer source through float64 into a narrow float, a block at a time.
#[inline(always)]
fn via_f64<S: Copy, H>(src: &[S], dst: &mut [H], f: impl Fn(S) -> f64)
where
    [H]: HalfFloatSliceExt,
{
    let mut buf = [0f64; BLOCK];
    for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let buf = &mut buf[..s.len()];
        buf.iter_mut().zip(s).for_each(|(b, &x)| *b = f(x));
        d.convert_from_f64_slice(buf);
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
        ];
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
