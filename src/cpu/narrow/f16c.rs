//! float16 conversions by F16C and bfloat16 rounding by AVX2, a chunk or
//! a slice at a time (the `NarrowSlice` paths of CPUs with AVX2).

use super::CHUNK;
use half::{bf16, f16};
use std::arch::x86_64::*;

/// [`NarrowSlice::widen_chunk`](super::NarrowSlice::widen_chunk) by
/// F16C, 8 at a time.
///
/// # Safety
/// The CPU has AVX and F16C.
#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn widen_chunk(src: &[f16; CHUNK]) -> [f32; CHUNK] {
    let s = src.as_ptr().cast::<__m128i>();
    // SAFETY: the chunk holds CHUNK / 8 vectors of 8.
    let v: [__m256; CHUNK / 8] =
        std::array::from_fn(|k| unsafe { _mm256_cvtph_ps(_mm_loadu_si128(s.add(k))) });
    // SAFETY: CHUNK / 8 vectors of 8 float32 are CHUNK float32.
    unsafe { std::mem::transmute::<[__m256; CHUNK / 8], [f32; CHUNK]>(v) }
}

/// [`NarrowSlice::widen_lanes`](super::NarrowSlice::widen_lanes) by
/// AVX-512's F16C, 16 at a time.
///
/// # Safety
/// The CPU has AVX-512 F, AVX2 and F16C; `L` is a multiple of 16.
#[inline]
#[target_feature(enable = "avx512f,avx2,f16c")]
pub(super) unsafe fn widen_lanes16<const L: usize>(src: [f16; L]) -> [f32; L] {
    let mut out = [0f32; L];
    let (s, d) = (src.as_ptr().cast::<__m256i>(), out.as_mut_ptr());
    for k in 0..L / 16 {
        // SAFETY: vector k of 16 lies inside both arrays.
        unsafe { _mm512_storeu_ps(d.add(16 * k), _mm512_cvtph_ps(_mm256_loadu_si256(s.add(k)))) };
    }
    out
}

/// [`widen_lanes16`] 8 at a time (F16C).
///
/// # Safety
/// The CPU has AVX2 and F16C; `L` is a multiple of 8.
#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn widen_lanes8<const L: usize>(src: [f16; L]) -> [f32; L] {
    let mut out = [0f32; L];
    let (s, d) = (src.as_ptr().cast::<__m128i>(), out.as_mut_ptr());
    for k in 0..L / 8 {
        // SAFETY: vector k of 8 lies inside both arrays.
        unsafe { _mm256_storeu_ps(d.add(8 * k), _mm256_cvtph_ps(_mm_loadu_si128(s.add(k)))) };
    }
    out
}

/// [`widen_lanes16`] of 4 (F16C).
///
/// # Safety
/// The CPU has AVX2 and F16C; `L` is 4.
#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn widen_lanes4<const L: usize>(src: [f16; L]) -> [f32; L] {
    let mut out = [0f32; L];
    // SAFETY: 4 float16 (8 bytes) in, 4 float32 out.
    unsafe {
        let v = _mm_loadl_epi64(src.as_ptr().cast::<__m128i>());
        _mm_storeu_ps(out.as_mut_ptr(), _mm_cvtph_ps(v));
    }
    out
}

/// [`NarrowSlice::widen_lanes`](super::NarrowSlice::widen_lanes) of 4
/// bfloat16: zero-extended (SSE4.1) and shifted into the high half.
///
/// # Safety
/// The CPU has AVX2; `L` is 4.
#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn bf16_lanes4<const L: usize>(src: [bf16; L]) -> [f32; L] {
    let mut out = [0f32; L];
    // SAFETY: 4 bfloat16 (8 bytes) in, 4 float32 out.
    unsafe {
        let v = _mm_slli_epi32::<16>(_mm_cvtepu16_epi32(_mm_loadl_epi64(src.as_ptr().cast())));
        _mm_storeu_ps(out.as_mut_ptr(), _mm_castsi128_ps(v));
    }
    out
}

/// bfloat16's [`NarrowSlice::narrow_chunk`](super::NarrowSlice::narrow_chunk)
/// by AVX2: [`bf16_from_f32`](super::bf16_from_f32)'s steps on 8 lanes
/// (the NaN test by one unordered compare), the selection made at 32
/// bits and two vectors packed into one. The compiler's code for the
/// scalar steps packed each vector by itself, twice (the value and the
/// NaN mask): 16 instructions per 8 against 9.
///
/// # Safety
/// The CPU has AVX2.
#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn narrow_bf16_chunk(src: &[f32; CHUNK], dst: &mut [bf16; CHUNK]) {
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<__m256i>());
    for k in 0..CHUNK / 16 {
        // SAFETY: elements 16k..16k + 16 lie inside both chunks.
        unsafe {
            let lo = bf16_bits(_mm256_loadu_ps(s.add(16 * k)));
            let hi = bf16_bits(_mm256_loadu_ps(s.add(16 * k + 8)));
            // packus packs within 128-bit lanes: the permute puts lo's
            // four then hi's four in order.
            let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(lo, hi));
            _mm256_storeu_si256(d.add(k), packed);
        }
    }
}

/// 8 float32 as bfloat16 bits in the low halves of 32-bit lanes.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn bf16_bits(x: __m256) -> __m256i {
    let b = _mm256_castps_si256(x);
    let high = _mm256_srli_epi32::<16>(b);
    let lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
    let biased = _mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)), lsb);
    let rounded = _mm256_srli_epi32::<16>(biased);
    let quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
    let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
    _mm256_blendv_epi8(rounded, quiet, nan)
}

/// [`NarrowSlice::narrow_chunk`](super::NarrowSlice::narrow_chunk) by F16C.
///
/// # Safety
/// The CPU has AVX and F16C.
#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn narrow_chunk(src: [f32; CHUNK], dst: &mut [f16; CHUNK]) {
    // SAFETY: as in widen_chunk.
    let v = unsafe { std::mem::transmute::<[f32; CHUNK], [__m256; CHUNK / 8]>(src) };
    let d = dst.as_mut_ptr().cast::<__m128i>();
    for (k, v) in v.into_iter().enumerate() {
        // SAFETY: the chunk holds CHUNK / 8 vectors of 8 float16.
        unsafe { _mm_storeu_si128(d.add(k), cvt8(v)) };
    }
}

/// float16 to float32, 8 at a time.
///
/// # Safety
/// The CPU has AVX and F16C; `src` and `dst` have one length.
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn widen(src: &[f16], dst: &mut [f32]) {
    let n = src.len();
    let (s, d) = (src.as_ptr().cast::<u16>(), dst.as_mut_ptr());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: elements i..i + 8 lie inside both slices.
        unsafe {
            let v = _mm_loadu_si128(s.add(i).cast());
            _mm256_storeu_ps(d.add(i), _mm256_cvtph_ps(v));
        }
        i += 8;
    }
    if i < n {
        let (mut a, mut b) = ([0u16; 8], [0f32; 8]);
        // SAFETY: the n - i < 8 remaining elements of src.
        unsafe { std::ptr::copy_nonoverlapping(s.add(i), a.as_mut_ptr(), n - i) };
        // SAFETY: a and b hold 8 elements each.
        unsafe {
            _mm256_storeu_ps(
                b.as_mut_ptr(),
                _mm256_cvtph_ps(_mm_loadu_si128(a.as_ptr().cast())),
            )
        };
        dst[i..].copy_from_slice(&b[..n - i]);
    }
}

/// [`widen`] 16 at a time (AVX-512 F), the tail by [`widen`].
///
/// # Safety
/// The CPU has AVX-512 F, AVX2 and F16C; `src` and `dst` have one length.
#[target_feature(enable = "avx512f,avx2,f16c")]
pub(super) unsafe fn widen16(src: &[f16], dst: &mut [f32]) {
    let body = src.len() / 16 * 16;
    let (s, d) = (src.as_ptr().cast::<u16>(), dst.as_mut_ptr());
    for i in (0..body).step_by(16) {
        // SAFETY: elements i..i + 16 lie inside both slices.
        unsafe {
            _mm512_storeu_ps(
                d.add(i),
                _mm512_cvtph_ps(_mm256_loadu_si256(s.add(i).cast())),
            )
        };
    }
    // SAFETY: the caller's promise.
    unsafe { widen(&src[body..], &mut dst[body..]) }
}

/// 16 float32 rounded to float16 (nearest even) in registers.
///
/// Inline assembly, because LLVM folds `_mm512_cvtps_ph` and the store
/// after it into the memory form of `vcvtps2ph`, which ran 1.5x (zmm)
/// to 2x (ymm) slower than this form and a store on the benchmark
/// machine's Zen 4 with the data in L1 (no different from L3).
///
/// # Safety
/// The CPU has AVX-512 F.
#[inline]
#[target_feature(enable = "avx512f,avx2,f16c")]
unsafe fn cvt16(v: __m512) -> __m256i {
    let h: __m256i;
    // SAFETY: a register-to-register conversion (the caller's CPU has it).
    unsafe {
        std::arch::asm!("vcvtps2ph {h}, {v}, 0", v = in(zmm_reg) v, h = out(ymm_reg) h,
            options(pure, nomem, nostack, preserves_flags));
    }
    h
}

/// [`cvt16`] for 8 (F16C).
///
/// # Safety
/// The CPU has F16C.
#[inline]
#[target_feature(enable = "avx2,f16c")]
unsafe fn cvt8(v: __m256) -> __m128i {
    let h: __m128i;
    // SAFETY: as in cvt16.
    unsafe {
        std::arch::asm!("vcvtps2ph {h}, {v}, 0", v = in(ymm_reg) v, h = out(xmm_reg) h,
            options(pure, nomem, nostack, preserves_flags));
    }
    h
}

/// [`narrow`] 16 at a time (AVX-512 F), the tail by [`narrow`].
///
/// # Safety
/// The CPU has AVX-512 F, AVX2 and F16C; `src` and `dst` have one length.
#[target_feature(enable = "avx512f,avx2,f16c")]
pub(super) unsafe fn narrow16(src: &[f32], dst: &mut [f16]) {
    let body = src.len() / 16 * 16;
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u16>());
    for i in (0..body).step_by(16) {
        // SAFETY: elements i..i + 16 lie inside both slices.
        unsafe {
            let v = cvt16(_mm512_loadu_ps(s.add(i)));
            _mm256_storeu_si256(d.add(i).cast(), v);
        }
    }
    // SAFETY: the caller's promise.
    unsafe { narrow(&src[body..], &mut dst[body..]) }
}

/// float32 to float16 rounded to nearest even, 8 at a time.
///
/// # Safety
/// The CPU has AVX and F16C; `src` and `dst` have one length.
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn narrow(src: &[f32], dst: &mut [f16]) {
    let n = src.len();
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u16>());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: elements i..i + 8 lie inside both slices.
        unsafe {
            let v = cvt8(_mm256_loadu_ps(s.add(i)));
            _mm_storeu_si128(d.add(i).cast(), v);
        }
        i += 8;
    }
    if i < n {
        let (mut a, mut b) = ([0f32; 8], [0u16; 8]);
        a[..n - i].copy_from_slice(&src[i..]);
        // SAFETY: a and b hold 8 elements each.
        unsafe {
            let v = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(a.as_ptr()));
            _mm_storeu_si128(b.as_mut_ptr().cast(), v);
        }
        for (o, &x) in dst[i..].iter_mut().zip(&b) {
            *o = f16::from_bits(x);
        }
    }
}
