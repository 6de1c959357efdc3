//! float32 to bfloat16 by AVX-512 BF16's `vcvtneps2bf16`, one instruction
//! for 16 (the bit steps of [`bf16_from_f32`](super::bf16_from_f32) took
//! about 10, and bounded the bfloat16 loops: `x * x` over 10^5, 13.6 → 8.0
//! µs a thread).

use super::CHUNK;
use half::bf16;

/// `dst = src` rounded to nearest even, NaN made quiet, as by
/// [`bf16_from_f32`](super::bf16_from_f32), which converts a chunk
/// holding a subnormal (`vcvtneps2bf16` reads those as zero). Written
/// as `asm!` with its operands in memory, so it inlines into every copy
/// of a loop (an intrinsic would need the loop compiled for AVX-512
/// BF16, which [`super::super::isa::twin!`] does not assume, and could
/// not inline into a baseline caller); the chunk is in the cache there.
///
/// # Safety
/// The CPU has AVX-512 BF16.
#[inline(always)]
pub(super) unsafe fn narrow_chunk(src: &[f32; CHUNK], dst: &mut [bf16; CHUNK]) {
    const { assert!(CHUNK == 64) };
    // `|bits| - 1` wraps for zero: below 0x7fffff only for a subnormal.
    let subnormal = src.iter().fold(false, |any, &x| {
        any | ((x.to_bits() & 0x7fff_ffff).wrapping_sub(1) < 0x7f_ffff)
    });
    if subnormal {
        return *dst = src.map(super::bf16_from_f32);
    }
    // Through zmm16, saved and restored here: no register to declare
    // (xmm16 and up are unnamed outside AVX-512 code), and no dirty
    // upper state for SSE code that inlined this (writes to zmm16-31
    // leave none; through ymm0, the baseline copy of a cast ran 4x
    // slower, each SSE instruction waiting on the upper halves).
    let mut save = std::mem::MaybeUninit::<[u64; 8]>::uninit();
    // SAFETY: the CPU has the instructions (the caller's promise); 64
    // float32 read, 64 bfloat16 written, both ours; 64 bytes of `save`
    // written and read back; zmm16 as it was.
    unsafe {
        std::arch::asm!(
            "vmovdqu64 zmmword ptr [{t}], zmm16",
            "vcvtneps2bf16 ymm16, zmmword ptr [{s}]",
            "vmovdqu16 ymmword ptr [{d}], ymm16",
            "vcvtneps2bf16 ymm16, zmmword ptr [{s} + 64]",
            "vmovdqu16 ymmword ptr [{d} + 32], ymm16",
            "vcvtneps2bf16 ymm16, zmmword ptr [{s} + 128]",
            "vmovdqu16 ymmword ptr [{d} + 64], ymm16",
            "vcvtneps2bf16 ymm16, zmmword ptr [{s} + 192]",
            "vmovdqu16 ymmword ptr [{d} + 96], ymm16",
            "vmovdqu64 zmm16, zmmword ptr [{t}]",
            s = in(reg) src.as_ptr(),
            d = in(reg) dst.as_mut_ptr(),
            t = in(reg) save.as_mut_ptr(),
            options(nostack, preserves_flags),
        );
    }
}

/// [`narrow_chunk`] from registers: the chunk tested for subnormals and
/// converted where the loop holds it. Through memory, each chunk was
/// stored, reloaded for the test and again for the conversion, and
/// zmm16 saved and restored: bfloat16 `x * x` ran 1.15x torch's at 10^5
/// and 1.4x at 10^7 (Sapphire Rapids), its samples on those stores.
/// Compiled for `twin!`'s AVX-512 features, so it inlines into those
/// copies only; the conversion is `asm!` because its intrinsic would
/// need AVX-512 BF16 in the caller too.
///
/// # Safety
/// The CPU has AVX-512 BF16.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
pub(super) unsafe fn narrow_registers(src: [f32; CHUNK], dst: &mut [bf16; CHUNK]) {
    use std::arch::x86_64::*;
    // SAFETY: CHUNK float32 are CHUNK / 16 vectors of 16.
    let v = unsafe { std::mem::transmute::<[f32; CHUNK], [__m512; CHUNK / 16]>(src) };
    // `vfpclassps` class 0x20: subnormal, one instruction a vector.
    let subnormal = v
        .iter()
        .fold(0, |any, &x| any | _mm512_fpclass_ps_mask::<0x20>(x));
    if subnormal != 0 {
        return *dst = src.map(super::bf16_from_f32);
    }
    let d = dst.as_mut_ptr().cast::<__m256i>();
    for (k, b) in v.into_iter().enumerate() {
        let h: __m256i;
        // SAFETY: a register-to-register conversion (the caller's CPU
        // has it); vector k of the chunk's bfloat16 lies inside dst.
        unsafe {
            std::arch::asm!("vcvtneps2bf16 {h}, {b}", b = in(zmm_reg) b, h = lateout(ymm_reg) h,
                options(pure, nomem, nostack, preserves_flags));
            _mm256_storeu_si256(d.add(k), h);
        }
    }
}
