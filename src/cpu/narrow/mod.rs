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
    Plain = 0,
    /// AVX2 and F16C ([`isa::avx2`](super::isa::avx2)).
    Avx2 = 1,
    /// That and AVX-512 BF16 ([`isa::avx512_bf16`](super::isa::avx512_bf16)),
    /// whose rounding of bfloat16 chunks runs from registers. Inlined into
    /// `twin!`'s AVX-512 copies; a call elsewhere, so only loops that run
    /// in those copies take it.
    Bf16x = 2,
}

impl ChunkIsa {
    /// The level a loop's const parameter holds (`ChunkIsa::Avx2 as u8`);
    /// any other number is `Plain`, which promises nothing.
    #[inline(always)]
    pub(crate) const fn of(level: u8) -> Self {
        match level {
            1 => ChunkIsa::Avx2,
            2 => ChunkIsa::Bf16x,
            _ => ChunkIsa::Plain,
        }
    }

    /// Whether AVX2 and F16C may run.
    // Read only by the x86-64 paths, which Miri and other CPUs do not build.
    #[cfg_attr(any(miri, not(target_arch = "x86_64")), allow(dead_code))]
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

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod bf16x;
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod f16c;

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
