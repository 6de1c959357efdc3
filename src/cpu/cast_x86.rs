//! float64 to the half floats by AVX-512's own conversion instructions, on
//! CPUs that have them (checked by the caller): bfloat16 by AVX-512 BF16,
//! float16 by AVX-512 FP16. Each gives the generic cast's bits, and hands
//! what it cannot convert itself to `generic`, the cast by the generic steps
//! in `cast.rs`.

use half::{bf16, f16};
use std::arch::x86_64::*;

/// The values [`f64_to_bf16`] checks at a time: a block holding a value that
/// two roundings could get wrong is converted again by the generic steps.
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
    assert_eq!(src.len(), dst.len());
    let (magnitude, one) = (_mm512_set1_epi32(i32::MAX), _mm512_set1_epi32(1));
    let (half, low) = (_mm512_set1_epi32(0x8000), _mm512_set1_epi32(0xffff));
    for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let n = s.len() / 16 * 16;
        // Minimums over the block: 0 at a midpoint; below 0x7fffff for
        // a subnormal (`|bits| - 1` wraps for zero).
        let (mut tie, mut sub) = (_mm512_set1_epi32(-1), _mm512_set1_epi32(-1));
        for i in (0..n).step_by(16) {
            // SAFETY: i + 16 <= n elements of s (unaligned loads allowed).
            let (a, b) = unsafe {
                (
                    _mm512_loadu_pd(s.as_ptr().add(i)),
                    _mm512_loadu_pd(s.as_ptr().add(i + 8)),
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
            // SAFETY: i + 16 <= n elements of d, exclusively ours.
            unsafe { d.as_mut_ptr().add(i).cast::<__m256bh>().write_unaligned(h) };
        }
        let redo =
            if _mm512_reduce_min_epu32(tie) == 0 || _mm512_reduce_min_epu32(sub) < 0x007f_ffff {
                0
            } else {
                n
            };
        generic(&s[redo..], &mut d[redo..]);
    }
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
