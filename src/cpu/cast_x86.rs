//! float64 to the half floats in intrinsics, on CPUs that have them
//! (checked by the caller): by AVX-512's own conversions (bfloat16 by
//! AVX-512 BF16, float16 by AVX-512 FP16), else on AVX2 in one pass through
//! float32 (float16 by F16C). Each gives the generic cast's bits, and hands
//! what it cannot convert itself to `generic`, the cast by the generic steps
//! in `round_once.rs`.

use half::{bf16, f16};
use std::arch::x86_64::*;

/// The values the checked conversions ([`by_blocks`]) check at a time: a
/// block holding a value that two roundings could get wrong is converted
/// again by the generic steps.
const BLOCK: usize = 512;

/// float64 rounded to float32 (`vcvtpd2ps`), then to bfloat16
/// (`vcvtneps2bf16`), 16 at a time. Two roundings give the once-rounded
/// result unless the float32 lies on a bfloat16 midpoint (its low 16 bits
/// 0x8000: the float64 may have been either side of it), or is
/// subnormal (which `vcvtneps2bf16` reads as zero); a block of 512
/// with such a value is converted again by the generic steps. NaN comes
/// out quiet with its high bits, as from `bf16::from_f32`.
///
/// `generic` is the cast by the generic steps.
///
/// # Safety
/// The CPU has AVX-512 F, DQ, VL and BF16; the lengths are equal.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bf16")]
pub(super) unsafe fn f64_to_bf16(
    src: &[f64],
    dst: &mut [bf16],
    generic: impl Fn(&[f64], &mut [bf16]),
) {
    let (magnitude, one) = (_mm512_set1_epi32(i32::MAX), _mm512_set1_epi32(1));
    let (half, low) = (_mm512_set1_epi32(0x8000), _mm512_set1_epi32(0xffff));
    by_blocks(src, dst, 16, generic, |s, d| {
        // Minimums over the block: 0 at a midpoint; below 0x7fffff for
        // a subnormal (`|bits| - 1` wraps for zero).
        let (mut tie, mut sub) = (_mm512_set1_epi32(-1), _mm512_set1_epi32(-1));
        for (x, o) in s.chunks_exact(16).zip(d.chunks_exact_mut(16)) {
            // SAFETY: 16 elements (unaligned loads allowed).
            let (a, b) = unsafe {
                (
                    _mm512_loadu_pd(x.as_ptr()),
                    _mm512_loadu_pd(x.as_ptr().add(8)),
                )
            };
            let f = _mm512_insertf32x8::<1>(
                _mm512_castps256_ps512(_mm512_cvtpd_ps(a)),
                _mm512_cvtpd_ps(b),
            );
            let bits = _mm512_castps_si512(f);
            // (bits ^ 0x8000) & 0xffff in one instruction.
            tie = _mm512_min_epu32(tie, _mm512_ternarylogic_epi32::<0x28>(bits, half, low));
            sub = _mm512_min_epu32(
                sub,
                _mm512_sub_epi32(_mm512_and_si512(bits, magnitude), one),
            );
            let h = _mm512_cvtneps_pbh(f);
            // SAFETY: 16 elements of o, exclusively ours.
            unsafe { o.as_mut_ptr().cast::<__m256bh>().write_unaligned(h) };
        }
        _mm512_reduce_min_epu32(tie) == 0 || _mm512_reduce_min_epu32(sub) < 0x007f_ffff
    });
}

/// float64 rounded once to float16 by `vcvtpd2ph`, 8 at a time and four
/// to an `asm!` block (one to a block ran no faster than the generic steps
/// on 10^5 elements): one instruction where the generic steps take a
/// sticky bit, a float32 and F16C's rounding (10^7 elements: 2.4 ms
/// against 3.5). It rounds as they do (to nearest even, subnormal results
/// included), and NaN keeps its high payload bits, quieted. `asm!`, as
/// Rust's FP16 intrinsics are not stable; memory and xmm operands only.
///
/// `generic` (the cast by the generic steps) takes the tail.
///
/// # Safety
/// The CPU has AVX-512 F and FP16; the lengths are equal.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn f64_to_f16(
    src: &[f64],
    dst: &mut [f16],
    generic: impl Fn(&[f64], &mut [f16]),
) {
    assert_eq!(src.len(), dst.len());
    let n = src.len() / 32 * 32;
    for i in (0..n).step_by(32) {
        // SAFETY: i + 32 <= n elements of src and of dst (ours); the CPU
        // has the instruction (the caller's promise).
        unsafe {
            std::arch::asm!(
                "vcvtpd2ph {t0}, zmmword ptr [{s}]",
                "vcvtpd2ph {t1}, zmmword ptr [{s} + 64]",
                "vcvtpd2ph {t2}, zmmword ptr [{s} + 128]",
                "vcvtpd2ph {t3}, zmmword ptr [{s} + 192]",
                "vmovdqu xmmword ptr [{d}], {t0}",
                "vmovdqu xmmword ptr [{d} + 16], {t1}",
                "vmovdqu xmmword ptr [{d} + 32], {t2}",
                "vmovdqu xmmword ptr [{d} + 48], {t3}",
                s = in(reg) src.as_ptr().add(i),
                d = in(reg) dst.as_mut_ptr().add(i),
                t0 = out(xmm_reg) _,
                t1 = out(xmm_reg) _,
                t2 = out(xmm_reg) _,
                t3 = out(xmm_reg) _,
                options(nostack, preserves_flags),
            );
        }
    }
    generic(&src[n..], &mut dst[n..]);
}

/// float64 rounded to float32 (`vcvtpd2ps`), then to float16 (F16C's
/// `vcvtps2ph`), 8 at a time on AVX2: the argument of `round_once.rs`'s
/// `rounded_twice` in one pass, the float16s stored as they come and a
/// block of 512 converted again by `generic` if a float32 in it lies on a
/// float16 midpoint (bits 0x1000 below bit 13) or below float16's normal
/// range (where it rounds at another bit), zero aside. The compiler's
/// loops staged each block's float32s in a buffer and converted them in a
/// second pass: Zen 3, one thread, 10^5 elements 51 -> 36 us, 10^7
/// 7.6 -> 5.9 ms (medians, torch's double rounding 5.2).
///
/// # Safety
/// The CPU has AVX2 and F16C; the lengths are equal.
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn f64_to_f16_f16c(
    src: &[f64],
    dst: &mut [f16],
    generic: impl Fn(&[f64], &mut [f16]),
) {
    let (magnitude, one) = (_mm256_set1_epi32(i32::MAX), _mm256_set1_epi32(1));
    let (half, low) = (_mm256_set1_epi32(0x1000), _mm256_set1_epi32(0x1fff));
    by_blocks(src, dst, 8, generic, |s, d| {
        // Minimums over the block: 0 at a midpoint; below 2^-14's bits
        // less one for a value below float16's normal range (`|bits| - 1`
        // wraps for zero).
        let (mut tie, mut below) = (_mm256_set1_epi32(-1), _mm256_set1_epi32(-1));
        for (x, o) in s.chunks_exact(8).zip(d.chunks_exact_mut(8)) {
            // SAFETY: the CPU has AVX2 (the caller's promise).
            let bits = unsafe { f32_bits(x.try_into().expect("8")) };
            tie = _mm256_min_epu32(tie, _mm256_and_si256(_mm256_xor_si256(bits, half), low));
            below = _mm256_min_epu32(
                below,
                _mm256_sub_epi32(_mm256_and_si256(bits, magnitude), one),
            );
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_castsi256_ps(bits));
            // SAFETY: 8 elements of o, exclusively ours (unaligned store allowed).
            unsafe { _mm_storeu_si128(o.as_mut_ptr().cast(), h) };
        }
        min_epu32(tie) == 0 || min_epu32(below) < 0x3880_0000 - 1
    });
}

/// float64 rounded to float32 (`vcvtpd2ps`), then to bfloat16 by integer
/// steps, 16 at a time on AVX2, in one pass; a block of 512 is converted
/// again by `generic` if a float32 in it lies on a bfloat16 midpoint (low
/// 16 bits 0x8000), so that rounding half up (adding 0x8000) is to nearest
/// even in the rest. NaN keeps its high bits, as from `bf16_from_f32`
/// (`vcvtpd2ps` has quieted it). Against the compiler's two passes, Zen 3,
/// one thread: 10^7 elements 6.4 -> 5.6 ms, 10^5 alike (about 30 us).
///
/// # Safety
/// The CPU has AVX2; the lengths are equal.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn f64_to_bf16_avx2(
    src: &[f64],
    dst: &mut [bf16],
    generic: impl Fn(&[f64], &mut [bf16]),
) {
    let (magnitude, infinity) = (_mm256_set1_epi32(i32::MAX), _mm256_set1_epi32(0x7f80_0000));
    let (half, low) = (_mm256_set1_epi32(0x8000), _mm256_set1_epi32(0xffff));
    // 8 float64s' bfloat16 bits (one to a lane), the midpoint key folded
    // into `tie`.
    let eight = |x: &[f64; 8], tie: &mut __m256i| {
        // SAFETY: the CPU has AVX2 (the caller's promise).
        let bits = unsafe { f32_bits(x) };
        *tie = _mm256_min_epu32(*tie, _mm256_and_si256(_mm256_xor_si256(bits, half), low));
        // NaN truncated (0x8000 could carry into its sign).
        let nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, magnitude), infinity);
        _mm256_srli_epi32::<16>(_mm256_add_epi32(bits, _mm256_andnot_si256(nan, half)))
    };
    by_blocks(src, dst, 16, generic, |s, d| {
        let mut tie = _mm256_set1_epi32(-1);
        for (x, o) in s.chunks_exact(16).zip(d.chunks_exact_mut(16)) {
            let (lo, hi) = x.split_at(8);
            let lo = eight(lo.try_into().expect("8 of 16"), &mut tie);
            let hi = eight(hi.try_into().expect("8 of 16"), &mut tie);
            // Every lane below 2^16, which the unsigned saturation keeps;
            // the pack interleaves 64-bit quarters, the permute restores them.
            let h = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(lo, hi));
            // SAFETY: 16 elements of o, exclusively ours (unaligned store allowed).
            unsafe { _mm256_storeu_si256(o.as_mut_ptr().cast(), h) };
        }
        min_epu32(tie) == 0
    });
}

/// The block loop of the checked conversions above: `vector` converts the
/// whole `lanes` of a block of [`BLOCK`] (a slice `lanes` divides) and says
/// whether a value in them is doubted; `generic` converts a doubted block
/// again, and every block's rest, only when there is one (it clears a 2 KB
/// buffer on every call, which cost 5% of float16's time when it ran for
/// every block's empty rest).
#[inline(always)]
fn by_blocks<H>(
    src: &[f64],
    dst: &mut [H],
    lanes: usize,
    generic: impl Fn(&[f64], &mut [H]),
    mut vector: impl FnMut(&[f64], &mut [H]) -> bool,
) {
    assert_eq!(src.len(), dst.len());
    for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let n = s.len() / lanes * lanes;
        let redo = if vector(&s[..n], &mut d[..n]) { 0 } else { n };
        if redo < s.len() {
            generic(&s[redo..], &mut d[redo..]);
        }
    }
}

/// 8 float64s rounded to float32 (`vcvtpd2ps`), as bits.
///
/// # Safety
/// The CPU has AVX2.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn f32_bits(x: &[f64; 8]) -> __m256i {
    // SAFETY: 8 elements (unaligned loads allowed).
    let (a, b) = unsafe {
        (
            _mm256_loadu_pd(x.as_ptr()),
            _mm256_loadu_pd(x.as_ptr().add(4)),
        )
    };
    _mm256_castps_si256(_mm256_set_m128(_mm256_cvtpd_ps(b), _mm256_cvtpd_ps(a)))
}

/// The smallest of eight unsigned lanes.
#[inline(always)]
fn min_epu32(v: __m256i) -> u32 {
    let mut lanes = [0u32; 8];
    // SAFETY: 32 bytes into a 32-byte array (unaligned store allowed).
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), v) };
    lanes.into_iter().min().unwrap_or(u32::MAX)
}
