//! Correctly rounded `sqrt` of dense float32/float64 on AVX-512, in fused
//! multiply-adds rather than the square-root unit.
//!
//! `vsqrtpd` gives 8 results per 16 cycles on Sapphire Rapids; torch calls
//! MKL's vector square root there, which is 2.7x faster and not correctly
//! rounded (0.9% of float64 results an ulp off). This kernel keeps IEEE's
//! result, the bits of `f64::sqrt` and of every other copy, at under half
//! `vsqrtpd`'s cost:
//!
//! 1. `vrsqrt14`: `y` within 2^-14 of `1/√x`.
//! 2. Goldschmidt's iteration on `s = x·y → √x` and `h = y/2 → 1/(2√x)`,
//!    quadratic: 2^-27 after one step (float32 stops there), about 2^-52
//!    after two (float64).
//! 3. Markstein's correction `s + (x − s²)·h`, rounded once by a fused
//!    multiply-add. Before that rounding it is within about
//!    `|s − √x|·|2h√x − 1|` of `√x`: under 2^-49 ulp for float64, so it
//!    rounds to IEEE's result unless `√x` lies that near a midpoint of two
//!    floats. Such inputs are rare and known: `x = (m² + k)·2^-n` for an
//!    odd `m` one bit longer than the mantissa with `m² ≡ −k (mod 2^n)`,
//!    `√x` then `k·2^-55.5` ulp from the midpoint `m·2^-54`. The tests
//!    build every one of them for `|k| < 2^14`, and every float32.
//!
//! A vector with a lane outside [2^-900, 2^1000] (float32 [2^-76, 2^120])
//! takes `vsqrtpd`/`vsqrtps`: zeros, negatives, NaN, infinities,
//! subnormals, and the ends where `x − s²` (a multiple of `ulp(s)²`)
//! could be subnormal, which a thread with flush-to-zero set (an extension
//! built with `-ffast-math`) would read as zero. Other CPUs
//! (and Miri) keep the plain loop: AVX2 has no float64 estimate, and its
//! float32 one (12 bits) needs a second step, which leaves nothing to gain.
//! The unit tests keep the near-midpoint float64 inputs, random and
//! near-square ones and a sample of the float32 range (the whole of it in
//! an ignored test).

use crate::Tensor;

/// `out = sqrt(src)` when both are dense float32 or float64 and the CPU has
/// AVX-512; false (nothing written) otherwise. `src` is walkable, `out`
/// writable and either `src` or apart from it. float16 and bfloat16 keep
/// the elementwise chunk loop (`vsqrtps`, rounded from registers; two
/// roundings give the once-rounded root, float32 having at least `2p + 2`
/// bits): through [`through_f32`](super::narrow::through_f32)'s blocks and
/// this kernel they ran 1.1-1.2x torch's at 10^5 (float16) and 10^7
/// (bfloat16) on Sapphire Rapids, the chunk loop 0.8-1.0x.
pub(crate) fn dense(out: &Tensor, src: &Tensor) -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if super::isa::avx512() && out.is_contiguous() && src.is_contiguous() {
        use super::vmath::split_dense;
        match src.dtype() {
            crate::DType::F32 => split_dense(out, src, |s, d, n| {
                // SAFETY: the CPU has AVX-512 (checked); split_dense hands n
                // elements each, the same or apart, the output range its own.
                unsafe { avx512::sqrt_f32(s, d, n) }
            }),
            crate::DType::F64 => split_dense(out, src, |s, d, n| {
                // SAFETY: as for float32.
                unsafe { avx512::sqrt_f64(s, d, n) }
            }),
            _ => return false,
        }
        return true;
    }
    let _ = (out, src);
    false
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod avx512 {
    use std::arch::x86_64::*;

    /// `dst[i] = sqrt(src[i])`, correctly rounded (see the module).
    ///
    /// # Safety
    /// The CPU has AVX-512 F; `src` and `dst` each address `n` elements,
    /// the same ones (in place) or apart, `dst` exclusively ours; any
    /// pointers for `n = 0`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn sqrt_f64(src: *const f64, dst: *mut f64, n: usize) {
        let lo = _mm512_set1_epi64((1023 - 900) << 52);
        let span = _mm512_set1_epi64((1000 + 900) << 52);
        let half = _mm512_set1_pd(0.5);
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: i + 8 <= n elements of src (unaligned loads allowed).
            let x = unsafe { _mm512_loadu_pd(src.add(i)) };
            // One unsigned compare of the bits: negatives and NaN fall outside.
            let offset = _mm512_sub_epi64(_mm512_castpd_si512(x), lo);
            let r = if _mm512_cmple_epu64_mask(offset, span) == 0xff {
                let y = _mm512_rsqrt14_pd(x);
                let (s, h) = (_mm512_mul_pd(x, y), _mm512_mul_pd(half, y));
                let e = _mm512_fnmadd_pd(s, h, half); // 1/2 − s·h
                let (s, h) = (_mm512_fmadd_pd(s, e, s), _mm512_fmadd_pd(h, e, h));
                let e = _mm512_fnmadd_pd(s, h, half);
                let (s, h) = (_mm512_fmadd_pd(s, e, s), _mm512_fmadd_pd(h, e, h));
                _mm512_fmadd_pd(_mm512_fnmadd_pd(s, s, x), h, s) // s + (x − s²)·h
            } else {
                _mm512_sqrt_pd(x)
            };
            // SAFETY: i + 8 <= n elements of dst, exclusively ours.
            unsafe { _mm512_storeu_pd(dst.add(i), r) };
            i += 8;
        }
        while i < n {
            // SAFETY: i < n.
            unsafe { *dst.add(i) = (*src.add(i)).sqrt() };
            i += 1;
        }
    }

    /// [`sqrt_f64`] for float32: one Goldschmidt step (2^-27) before the
    /// correction is enough, checked over every float32.
    ///
    /// # Safety
    /// As for [`sqrt_f64`].
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn sqrt_f32(src: *const f32, dst: *mut f32, n: usize) {
        let lo = _mm512_set1_epi32((127 - 76) << 23);
        let span = _mm512_set1_epi32((120 + 76) << 23);
        let half = _mm512_set1_ps(0.5);
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: i + 16 <= n elements of src.
            let x = unsafe { _mm512_loadu_ps(src.add(i)) };
            let offset = _mm512_sub_epi32(_mm512_castps_si512(x), lo);
            let r = if _mm512_cmple_epu32_mask(offset, span) == 0xffff {
                let y = _mm512_rsqrt14_ps(x);
                let (s, h) = (_mm512_mul_ps(x, y), _mm512_mul_ps(half, y));
                let e = _mm512_fnmadd_ps(s, h, half); // 1/2 − s·h
                let (s, h) = (_mm512_fmadd_ps(s, e, s), _mm512_fmadd_ps(h, e, h));
                _mm512_fmadd_ps(_mm512_fnmadd_ps(s, s, x), h, s)
            } else {
                _mm512_sqrt_ps(x)
            };
            // SAFETY: i + 16 <= n elements of dst, exclusively ours.
            unsafe { _mm512_storeu_ps(dst.add(i), r) };
            i += 16;
        }
        while i < n {
            // SAFETY: i < n.
            unsafe { *dst.add(i) = (*src.add(i)).sqrt() };
            i += 1;
        }
    }

    #[cfg(test)]
    mod tests {
        use super::{sqrt_f32, sqrt_f64};

        /// xorshift64: the same inputs on every run.
        fn next(state: &mut u64) -> u64 {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            *state
        }

        fn avx512() -> bool {
            let has = std::arch::is_x86_feature_detected!("avx512f");
            if !has {
                eprintln!("skipped: this CPU has no AVX-512");
            }
            has
        }

        /// IEEE's square root, the bits of `f64::sqrt`, on random bit
        /// patterns (every sign, exponent and NaN), near-squares (the
        /// inputs whose roots lie closest to a midpoint), the specials and
        /// the ends of the fast range; apart and in place, with tails.
        #[test]
        fn float64_roots_are_correctly_rounded() {
            if !avx512() {
                return;
            }
            let mut st = 0x9e37_79b9_7f4a_7c15;
            let mut xs: Vec<f64> = (0..200_000)
                .map(|_| f64::from_bits(next(&mut st)))
                .collect();
            for _ in 0..200_000 {
                let m = next(&mut st) & 0x000f_ffff_ffff_ffff;
                let s = f64::from_bits(m | ((next(&mut st) % 2046 + 1) << 52));
                let d = (next(&mut st) % 7) as i64 - 3;
                xs.push(f64::from_bits(((s * s).to_bits() as i64 + d) as u64));
            }
            for e in [-1022, -901, -900, -899, 0, 999, 1000, 1001, 1023] {
                let p = f64::from_bits(((1023 + e) as u64) << 52);
                xs.extend([
                    p,
                    f64::from_bits(p.to_bits() - 1),
                    f64::from_bits(p.to_bits() + 1),
                ]);
            }
            xs.extend([
                0.0,
                -0.0,
                -1.0,
                f64::from_bits(1),
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                f64::MAX,
            ]);
            let want: Vec<u64> = xs.iter().map(|x| x.sqrt().to_bits()).collect();
            for n in [xs.len(), xs.len() - 5, 7, 0] {
                let mut out = vec![0.0; n];
                // SAFETY: AVX-512 checked; n elements each, apart.
                unsafe { sqrt_f64(xs.as_ptr(), out.as_mut_ptr(), n) };
                assert!(out.iter().zip(&want).all(|(y, &w)| y.to_bits() == w));
                let mut inplace = xs[..n].to_vec();
                let p = inplace.as_mut_ptr();
                // SAFETY: one buffer of n elements.
                unsafe { sqrt_f64(p, p, n) };
                assert!(inplace.iter().zip(&want).all(|(y, &w)| y.to_bits() == w));
            }
        }

        /// Every float64 whose root lies within 2^-41 ulp of a midpoint
        /// (see the module), at several scales: where a wrong rounding
        /// would show. Dropping the last Goldschmidt step (`h` then 2^-27
        /// off) fails half of them.
        #[test]
        fn roots_near_midpoints_are_correctly_rounded() {
            if !avx512() {
                return;
            }
            let xs = near_midpoint_squares();
            assert!(xs.len() > 25_000, "{}", xs.len());
            let mut out = vec![0.0; xs.len()];
            // SAFETY: AVX-512 checked; xs.len() elements each, apart.
            unsafe { sqrt_f64(xs.as_ptr(), out.as_mut_ptr(), xs.len()) };
            for (x, y) in xs.iter().zip(&out) {
                assert_eq!(y.to_bits(), x.sqrt().to_bits(), "sqrt({x:e})");
            }
        }

        /// `x = (m² + k)·2^-n·4^j` for every odd `m` in [2^53, 2^54) with
        /// `m² ≡ −k (mod 2^n)`, `n` 54 or 55 (so `x` has 53 bits), `|k| <
        /// 2^14`: `√x` is then `k·2^-55.5` ulp from the midpoint `m·2^-54`.
        fn near_midpoint_squares() -> Vec<f64> {
            let mut xs = Vec::new();
            for n in [54u32, 55] {
                let modulus = 1u128 << n;
                for k in -(1i128 << 14)..1 << 14 {
                    let a = (-k).rem_euclid(modulus as i128) as u128;
                    if a % 8 != 1 {
                        continue; // −k is no square modulo 2^n
                    }
                    // Hensel: an odd root of a modulo 2^n, bit by bit.
                    let mut r: u128 = 1;
                    for i in 3..n {
                        if !(r * r).wrapping_sub(a).is_multiple_of(1 << (i + 1)) {
                            r += 1 << (i - 1);
                        }
                    }
                    let r = r % modulus;
                    let half = modulus / 2;
                    for m in [
                        r,
                        modulus - r,
                        (r + half) % modulus,
                        (modulus - r + half) % modulus,
                    ] {
                        let square = (m * m) as i128 + k;
                        let bits = square / modulus as i128;
                        if !(1u128 << 53..1 << 54).contains(&m)
                            || !(1i128 << 52..1 << 53).contains(&bits)
                        {
                            continue;
                        }
                        let x = bits as f64 * 2f64.powi(n as i32 - 108);
                        xs.extend([-400, -60, 0, 1, 450].map(|j| x * 4f64.powi(j)));
                    }
                }
            }
            xs
        }

        /// float32: a sample of every binade's mantissas, each sign (the
        /// whole float32 range passed when the kernel was written: run
        /// `cargo test --release -- --ignored every_float32`).
        #[test]
        fn float32_roots_are_correctly_rounded() {
            if avx512() {
                check_float32((0..1u64 << 32).step_by(4093).map(|b| b as u32));
            }
        }

        #[test]
        #[ignore = "every float32: some seconds in a release build"]
        fn every_float32_root_is_correctly_rounded() {
            if avx512() {
                check_float32(0..=u32::MAX);
            }
        }

        /// With flush-to-zero and denormals-are-zero set in the thread (as
        /// an extension built with `-ffast-math` leaves them), results stay
        /// IEEE's: over the float32 range just above the fast range's
        /// floor, and float64 near-squares there (below an earlier floor,
        /// Tuckerman's residual was subnormal and flushed: 1-ulp errors).
        #[test]
        #[allow(deprecated)] // _mm_getcsr/_mm_setcsr: no other way to set MXCSR
        fn roots_stay_correct_with_flush_to_zero() {
            use std::arch::x86_64::{_mm_getcsr, _mm_setcsr};
            if !avx512() {
                return;
            }
            let lo32 = ((127 - 76) << 23) as u32;
            let xs32: Vec<f32> = (lo32..(127 - 60) << 23)
                .step_by(7)
                .map(f32::from_bits)
                .collect();
            let want32: Vec<u32> = xs32.iter().map(|x| x.sqrt().to_bits()).collect();
            let mut st = 0x2545_f491_4f6c_dd1d;
            let xs64: Vec<f64> = (0..400_000)
                .map(|_| {
                    let m = next(&mut st) & 0x000f_ffff_ffff_ffff;
                    let s = f64::from_bits(m | ((next(&mut st) % 60 + 1023 - 480) << 52));
                    let d = (next(&mut st) % 7) as i64 - 3;
                    f64::from_bits(((s * s).to_bits() as i64 + d) as u64)
                })
                .collect();
            let want64: Vec<u64> = xs64.iter().map(|x| x.sqrt().to_bits()).collect();
            let (mut out32, mut out64) = (vec![0.0f32; xs32.len()], vec![0.0; xs64.len()]);
            // SAFETY: MXCSR is this thread's; it is restored below.
            let csr = unsafe { _mm_getcsr() };
            // SAFETY: FTZ (bit 15) and DAZ (bit 6) only change rounding of tiny values.
            unsafe { _mm_setcsr(csr | 0x8040) };
            // SAFETY: AVX-512 checked; each pair holds its length, apart.
            unsafe {
                sqrt_f32(xs32.as_ptr(), out32.as_mut_ptr(), xs32.len());
                sqrt_f64(xs64.as_ptr(), out64.as_mut_ptr(), xs64.len());
            }
            // SAFETY: the value read above.
            unsafe { _mm_setcsr(csr) };
            assert!(out32.iter().zip(&want32).all(|(y, &w)| y.to_bits() == w));
            assert!(out64.iter().zip(&want64).all(|(y, &w)| y.to_bits() == w));
        }

        fn check_float32(bits: impl Iterator<Item = u32>) {
            let xs: Vec<f32> = bits.map(f32::from_bits).collect();
            for chunk in xs.chunks(1 << 24) {
                let mut out = vec![0.0f32; chunk.len()];
                // SAFETY: AVX-512 checked; chunk.len() elements each, apart.
                unsafe { sqrt_f32(chunk.as_ptr(), out.as_mut_ptr(), chunk.len()) };
                for (x, y) in chunk.iter().zip(&out) {
                    assert_eq!(y.to_bits(), x.sqrt().to_bits(), "sqrt({x:e})");
                }
            }
        }
    }
}
