//! float16 and bfloat16 slices to and from float32, the conversions every
//! narrow-float loop runs a block at a time.
//!
//! `half`'s slice conversions use F16C when the CPU has it, but through a
//! call per 8 elements (a `#[target_feature]` function cannot be inlined
//! into baseline code), and convert bfloat16 element by element with a
//! branch. Here float16 runs F16C over the whole block in one call when
//! [`isa::avx2`](super::isa::avx2) allows, 16 at a time when
//! [`isa::avx512`](super::isa::avx512) does (else `half`'s), and bfloat16 is
//! plain bit arithmetic the compiler vectorises (inlined, so inside the AVX2
//! loops of `isa::twin!` it is AVX2). Results are `half`'s to the bit:
//! F16C rounds to nearest even as `half` does, and bfloat16 is
//! `bf16::from_f32` without its branches.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

/// Elements of a chunk that stays in registers: 64 float32, four AVX-512
/// registers an operand. 16 left exp and log's polynomials too little to
/// overlap (1.36x torch's bfloat16 `exp`, 1.17x at 64); 32 made LLVM
/// spill the bfloat16 loops (3-4x slower).
pub(crate) const CHUNK: usize = 64;

/// The instructions a chunk loop's conversions use, one per loop: its
/// caller reads [`isa`](super::isa) once and passes a constant (a check per
/// chunk kept the chunk's values on the stack for the other branch).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChunkIsa {
    /// Plain Rust, for any CPU.
    Plain,
    /// AVX2 and F16C ([`isa::avx2`](super::isa::avx2)).
    Avx2,
    /// That and AVX-512 BF16 ([`isa::avx512_bf16`](super::isa::avx512_bf16)),
    /// whose rounding of bfloat16 chunks runs from registers. Inlined into
    /// `twin!`'s AVX-512 copies; a call elsewhere, so only loops that run
    /// in those copies take it.
    Bf16x,
}

impl ChunkIsa {
    /// The level a loop's const parameter holds (`ChunkIsa::Avx2 as u8`).
    #[inline(always)]
    pub(crate) const fn of(level: u8) -> Self {
        match level {
            0 => ChunkIsa::Plain,
            1 => ChunkIsa::Avx2,
            _ => ChunkIsa::Bf16x,
        }
    }

    /// Whether AVX2 and F16C may run.
    #[inline(always)]
    fn simd(self) -> bool {
        self != ChunkIsa::Plain
    }
}

/// A narrow float widened to and rounded from float32 a slice at a time.
pub(crate) trait NarrowSlice: Sized + Copy {
    /// `dst[i] = src[i]` as float32 (exact); the lengths are equal.
    fn widen(src: &[Self], dst: &mut [f32]);
    /// `dst[i] = src[i]` rounded to nearest even; the lengths are equal.
    fn narrow(src: &[f32], dst: &mut [Self]);
    /// A chunk widened, by value, so loops over chunks keep their values
    /// in registers.
    ///
    /// # Safety
    /// The CPU has what `isa` names.
    unsafe fn widen_chunk(src: &[Self; CHUNK], isa: ChunkIsa) -> [f32; CHUNK];
    /// `L` elements widened by value, for lanes of any width (sums):
    /// float16 by F16C 16 at a time where `wide` holds and `L` allows, 8
    /// where `simd` does, 4 for a 4-wide chunk, else one by one; bfloat16
    /// by shifts.
    ///
    /// # Safety
    /// `simd` only where `isa::avx2()` holds, `wide` only where
    /// `isa::avx512()` does.
    unsafe fn widen_lanes<const L: usize>(src: [Self; L], simd: bool, wide: bool) -> [f32; L];
    /// A chunk rounded to nearest even into `dst`.
    ///
    /// # Safety
    /// As for [`widen_chunk`](Self::widen_chunk).
    unsafe fn narrow_chunk(src: [f32; CHUNK], dst: &mut [Self; CHUNK], isa: ChunkIsa);
}

/// Elements per block of [`through_f32`]: 1024 read slower than 256 at 10^7
/// (float16 `sqrt`, one run).
const THROUGH_BLOCK: usize = 256;

super::isa::twin! {
    /// `dst[i] = narrow(f(widen(src[i])))` for `n` elements: each block of
    /// [`THROUGH_BLOCK`] widened into a float32 buffer, `kernel` run over the
    /// buffer in place, the buffer rounded back. So a narrow float's dense
    /// `exp`, `ln` and `sqrt` run the float32 kernels (with their fast
    /// paths) at the cost of two slice conversions, with the bits of
    /// computing each element in float32 and rounding it once. In `twin!`
    /// copies, so bfloat16's bit steps vectorise at the CPU's width.
    ///
    /// # Safety
    /// `src` and `dst` each address `n` elements, the same ones (in place)
    /// or apart, `dst` exclusively ours; any pointers for `n = 0`.
    pub(crate) unsafe fn through_f32[H: NarrowSlice](
        src: *const H, dst: *mut H, n: usize, kernel: impl Fn(&mut [f32]),
    ) => through_f32_body;
}

/// [`through_f32`] as built.
///
/// # Safety
/// As for [`through_f32`].
#[inline(always)]
unsafe fn through_f32_body<H: NarrowSlice>(
    src: *const H,
    dst: *mut H,
    n: usize,
    kernel: impl Fn(&mut [f32]),
) {
    let mut wide = [0.0f32; THROUGH_BLOCK];
    let mut at = 0;
    while at < n {
        let len = THROUGH_BLOCK.min(n - at);
        // SAFETY: at + len <= n elements of src; the block is read whole
        // before dst's same block is written (in place).
        H::widen(
            unsafe { std::slice::from_raw_parts(src.add(at), len) },
            &mut wide[..len],
        );
        kernel(&mut wide[..len]);
        // SAFETY: at + len <= n elements of dst, exclusively ours.
        H::narrow(&wide[..len], unsafe {
            std::slice::from_raw_parts_mut(dst.add(at), len)
        });
        at += len;
    }
}

impl NarrowSlice for f16 {
    #[inline(always)]
    fn widen(src: &[f16], dst: &mut [f32]) {
        assert_eq!(src.len(), dst.len());
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if super::isa::avx512() {
            // SAFETY: the CPU has AVX-512 F (checked); the lengths are equal.
            return unsafe { f16c::widen16(src, dst) };
        }
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if super::isa::avx2() {
            // SAFETY: the CPU has F16C (checked); the lengths are equal.
            return unsafe { f16c::widen(src, dst) };
        }
        src.convert_to_f32_slice(dst)
    }

    #[inline(always)]
    fn narrow(src: &[f32], dst: &mut [f16]) {
        assert_eq!(src.len(), dst.len());
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if super::isa::avx512() {
            // SAFETY: the CPU has AVX-512 F (checked); the lengths are equal.
            return unsafe { f16c::narrow16(src, dst) };
        }
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if super::isa::avx2() {
            // SAFETY: the CPU has F16C (checked); the lengths are equal.
            return unsafe { f16c::narrow(src, dst) };
        }
        dst.convert_from_f32_slice(src)
    }

    #[inline(always)]
    unsafe fn widen_chunk(src: &[f16; CHUNK], isa: ChunkIsa) -> [f32; CHUNK] {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if isa.simd() {
            // SAFETY: the CPU has F16C (the caller's promise).
            return unsafe { f16c::widen_chunk(src) };
        }
        let _ = isa;
        src.map(f16::to_f32)
    }

    #[inline(always)]
    unsafe fn widen_lanes<const L: usize>(src: [f16; L], simd: bool, wide: bool) -> [f32; L] {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            if wide && L.is_multiple_of(16) {
                // SAFETY: the CPU has AVX-512 F (the caller's promise).
                return unsafe { f16c::widen_lanes16(src) };
            }
            if simd && L.is_multiple_of(8) {
                // SAFETY: the CPU has F16C (the caller's promise).
                return unsafe { f16c::widen_lanes8(src) };
            }
            if simd && L == 4 {
                // SAFETY: as above.
                return unsafe { f16c::widen_lanes4(src) };
            }
        }
        let _ = (simd, wide);
        src.map(f16::to_f32)
    }

    #[inline(always)]
    unsafe fn narrow_chunk(src: [f32; CHUNK], dst: &mut [f16; CHUNK], isa: ChunkIsa) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if isa.simd() {
            // SAFETY: the CPU has F16C (the caller's promise).
            return unsafe { f16c::narrow_chunk(src, dst) };
        }
        let _ = isa;
        *dst = src.map(f16::from_f32);
    }
}

impl NarrowSlice for bf16 {
    #[inline(always)]
    fn widen(src: &[bf16], dst: &mut [f32]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = bf16_to_f32(s);
        }
    }

    #[inline(always)]
    fn narrow(src: &[f32], dst: &mut [bf16]) {
        assert_eq!(src.len(), dst.len());
        // Whole chunks by the CPU's conversion where it has one; the rest
        // (all, elsewhere) by the bit steps.
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        let (src, dst) = if super::isa::avx2() {
            let bf16x = super::isa::avx512_bf16();
            let (mut s, mut d) = (src.chunks_exact(CHUNK), dst.chunks_exact_mut(CHUNK));
            for (s, d) in (&mut s).zip(&mut d) {
                let (s, d) = (s.try_into().unwrap(), d.try_into().unwrap());
                // SAFETY: the CPU has AVX-512 BF16 where bf16x holds, AVX2
                // (checked) otherwise.
                unsafe {
                    if bf16x {
                        bf16x::narrow_chunk(s, d)
                    } else {
                        f16c::narrow_bf16_chunk(s, d)
                    }
                }
            }
            (s.remainder(), d.into_remainder())
        } else {
            (src, dst)
        };
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = bf16_from_f32(x);
        }
    }

    #[inline(always)]
    unsafe fn widen_chunk(src: &[bf16; CHUNK], _isa: ChunkIsa) -> [f32; CHUNK] {
        // A NaN may stay signalling: chunks feed arithmetic, whose NaN
        // results come out quiet, and every rounding back quiets one.
        src.map(bf16_widened)
    }

    #[inline(always)]
    unsafe fn widen_lanes<const L: usize>(src: [bf16; L], simd: bool, wide: bool) -> [f32; L] {
        // 4-wide chunks by SSE4.1's zero-extension: the compiler split
        // their shifts (`sum(dim=2)` of 40x20x40, 1.34x torch's). Wider
        // ones by the shift it vectorises: after intrinsics it scalarised
        // the 16 lanes' additions (2.5x slower).
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if simd && L == 4 {
            // SAFETY: the CPU has AVX2 (the caller's promise).
            return unsafe { f16c::bf16_lanes4(src) };
        }
        let _ = (simd, wide);
        src.map(bf16_widened)
    }

    #[inline(always)]
    unsafe fn narrow_chunk(src: [f32; CHUNK], dst: &mut [bf16; CHUNK], isa: ChunkIsa) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        match isa {
            // SAFETY: the CPU has AVX-512 BF16 (the caller's promise).
            ChunkIsa::Bf16x => return unsafe { bf16x::narrow_registers(src, dst) },
            // SAFETY: the CPU has AVX2 (the caller's promise).
            ChunkIsa::Avx2 => return unsafe { f16c::narrow_bf16_chunk(&src, dst) },
            ChunkIsa::Plain => {}
        }
        let _ = isa;
        *dst = src.map(bf16_from_f32);
    }
}

/// How a loop's elements become float32: a chunk of `L` at a time, by
/// value (so the loop keeps them in registers), and one at a time (its
/// tail).
pub(crate) trait ToF32<X>: Copy {
    fn chunk<const L: usize>(self, c: [X; L]) -> [f32; L];
    fn one(self, x: X) -> f32;
}

/// [`ToF32`] by a function of one element (which the compiler vectorises).
#[derive(Clone, Copy)]
pub(crate) struct Each<F>(pub F);

impl<X: Copy, F: Fn(X) -> f32 + Copy> ToF32<X> for Each<F> {
    #[inline(always)]
    fn chunk<const L: usize>(self, c: [X; L]) -> [f32; L] {
        c.map(self.0)
    }
    #[inline(always)]
    fn one(self, x: X) -> f32 {
        (self.0)(x)
    }
}

/// [`ToF32`] for float16 and bfloat16 by [`NarrowSlice::widen_lanes`], the
/// instruction set a constant (`SIMD`: AVX2 and F16C; `WIDE`: AVX-512), so
/// a loop holds one path: with the choice a run-time flag, LLVM kept every
/// path in the loop and spilled its lanes (`sum(dim=1)` float16 900x100,
/// 1.3x torch). Made by [`with_widened!`].
#[derive(Clone, Copy)]
pub(crate) struct Widened<T, const SIMD: bool, const WIDE: bool>(std::marker::PhantomData<T>);

impl<T, const SIMD: bool, const WIDE: bool> Widened<T, SIMD, WIDE> {
    /// # Safety
    /// The CPU has AVX2 and F16C where `SIMD`, AVX-512 where `WIDE`.
    #[inline(always)]
    pub(crate) unsafe fn new() -> Self {
        Widened(std::marker::PhantomData)
    }
}

impl<T: NarrowSlice, const SIMD: bool, const WIDE: bool> ToF32<T> for Widened<T, SIMD, WIDE> {
    #[inline(always)]
    fn chunk<const L: usize>(self, c: [T; L]) -> [f32; L] {
        // SAFETY: the CPU has what `SIMD` and `WIDE` say (`new`'s promise).
        unsafe { T::widen_lanes(c, SIMD, WIDE) }
    }
    #[inline(always)]
    fn one(self, x: T) -> f32 {
        // A chunk of 4 copies where F16C takes 4 at once.
        if SIMD {
            self.chunk([x; 4])[0]
        } else {
            self.chunk([x])[0]
        }
    }
}

/// `$body` with `$w` the [`Widened`] of `$t` for this CPU (an arm per
/// instruction set, each compiled with its own constant).
macro_rules! with_widened {
    ($t:ty, |$w:ident| $body:expr) => {{
        use $crate::cpu::isa::{avx2, avx512};
        use $crate::cpu::narrow::Widened;
        if avx512() {
            // SAFETY: the CPU has AVX-512 (and so AVX2 and F16C): checked.
            let $w = unsafe { Widened::<$t, true, true>::new() };
            $body
        } else if avx2() {
            // SAFETY: the CPU has AVX2 and F16C: checked.
            let $w = unsafe { Widened::<$t, true, false>::new() };
            $body
        } else {
            // SAFETY: nothing is promised.
            let $w = unsafe { Widened::<$t, false, false>::new() };
            $body
        }
    }};
}
pub(crate) use with_widened;

/// A bfloat16 as float32, its bits shifted; a NaN comes out quiet, as from
/// `bf16::to_f32`.
#[inline(always)]
pub(crate) fn bf16_to_f32(x: bf16) -> f32 {
    let b = x.to_bits();
    let b = if b & 0x7fff > 0x7f80 { b | 0x0040 } else { b };
    f32::from_bits((b as u32) << 16)
}

/// A bfloat16 as float32, its bits shifted (a NaN may stay signalling).
#[inline(always)]
pub(crate) fn bf16_widened(x: bf16) -> f32 {
    f32::from_bits((x.to_bits() as u32) << 16)
}

/// `bf16::from_f32` (round to nearest even, NaN kept and made quiet)
/// without its branches, so loops of it vectorise.
#[inline(always)]
pub(crate) fn bf16_from_f32(x: f32) -> bf16 {
    let b = x.to_bits();
    let nan = (b & 0x7fff_ffff) > 0x7f80_0000;
    let rounded = bf16_round(b).to_bits();
    let quiet = ((b >> 16) | 0x0040) as u16;
    bf16::from_bits(if nan { quiet } else { rounded })
}

/// The bits of a float32 that is not NaN rounded to the nearest bfloat16,
/// ties to even (for sources that cannot hold a NaN, without the check).
#[inline(always)]
pub(crate) fn bf16_round(b: u32) -> bf16 {
    bf16::from_bits((b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16)
}

/// float32 to bfloat16 by AVX-512 BF16's `vcvtneps2bf16`, one instruction
/// for 16 (the bit steps of [`bf16_from_f32`] took about 10, and bounded
/// the bfloat16 loops: `x * x` over 10^5, 13.6 → 8.0 µs a thread).
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod bf16x {
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
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod f16c {
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
            unsafe {
                _mm512_storeu_ps(d.add(16 * k), _mm512_cvtph_ps(_mm256_loadu_si256(s.add(k))))
            };
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every float16 and bfloat16 widens as `half` does; float32 values
    /// around every narrow value (ties, NaN payloads, overflow,
    /// subnormals) round as `half` rounds them.
    #[test]
    fn conversions_equal_halfs_bit_for_bit() {
        let step = if cfg!(miri) { 997 } else { 1 };
        let bits: Vec<u16> = (0..=u16::MAX).step_by(step).collect();
        let h: Vec<f16> = bits.iter().map(|&b| f16::from_bits(b)).collect();
        let g: Vec<bf16> = bits.iter().map(|&b| bf16::from_bits(b)).collect();
        let mut w = vec![0f32; bits.len()];
        f16::widen(&h, &mut w);
        for (x, y) in h.iter().zip(&w) {
            assert_eq!(x.to_f32().to_bits(), y.to_bits());
        }
        bf16::widen(&g, &mut w);
        for (x, y) in g.iter().zip(&w) {
            assert_eq!(x.to_f32().to_bits(), y.to_bits());
        }
        // float32s near each bfloat16/float16: exact, ties and neighbours.
        let mut xs: Vec<f32> = Vec::new();
        for &b in &bits {
            let base = (b as u32) << 16;
            for off in [0u32, 1, 0x7fff, 0x8000, 0x8001, 0xffff] {
                xs.push(f32::from_bits(base | off));
            }
        }
        let mut hs = vec![f16::ZERO; xs.len()];
        f16::narrow(&xs, &mut hs);
        for (x, y) in xs.iter().zip(&hs) {
            let want = f16::from_f32(*x);
            assert!(
                want.to_bits() == y.to_bits() || (want.is_nan() && y.is_nan()),
                "{x:e}"
            );
        }
        let mut gs = vec![bf16::ZERO; xs.len()];
        bf16::narrow(&xs, &mut gs);
        for (x, y) in xs.iter().zip(&gs) {
            assert_eq!(bf16::from_f32(*x).to_bits(), y.to_bits(), "{x:e}");
        }
        // The chunk conversions, by the CPU's instructions where it has them.
        use super::super::isa::{avx2, avx512_bf16};
        let levels = [
            (ChunkIsa::Plain, true),
            (ChunkIsa::Avx2, avx2()),
            (ChunkIsa::Bf16x, avx512_bf16()),
        ];
        for (level, _) in levels.into_iter().filter(|l| l.1) {
            for c in xs.chunks_exact(CHUNK) {
                let c: [f32; CHUNK] = c.try_into().unwrap();
                let (mut g, mut h) = ([bf16::ZERO; CHUNK], [f16::ZERO; CHUNK]);
                // SAFETY: each level only where the CPU has it.
                unsafe {
                    bf16::narrow_chunk(c, &mut g, level);
                    f16::narrow_chunk(c, &mut h, level);
                }
                for ((x, g), h) in c.iter().zip(g).zip(h) {
                    assert_eq!(bf16::from_f32(*x).to_bits(), g.to_bits(), "{x:e}");
                    let want = f16::from_f32(*x);
                    assert!(
                        want.to_bits() == h.to_bits() || (want.is_nan() && h.is_nan()),
                        "{x:e}"
                    );
                }
            }
        }
    }
}
