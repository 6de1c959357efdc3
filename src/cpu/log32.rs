//! Float32 `ln` on AVX-512, table-driven: 32 reciprocals and their logs
//! held in registers, no division.
//!
//! fdlibm's kernel ([`super::vmath`]) divides once an element (`f/(2+f)`)
//! and took 27 vector instructions an element, 1.3x MKL's (torch's) time.
//! Here `x = 2^k·z`, `z` in [0.699, 1.398) cut into 32 intervals by its
//! top five mantissa bits, and for interval `i` the table holds `c_i`, the
//! reciprocal of its middle rounded to 6 bits, and `−ln c_i` as a high
//! part (a multiple of 2^-16, like `LN2_HI`, so `k·LN2_HI + hi` is exact)
//! and a low one. `r = z·c_i − 1` is then exact in one fused multiply-add
//! (`|r| < 2^-5` and both factors short), and
//! `ln x = (k·LN2_HI + hi_i) + (r + r²·P(r) + (k·LN2_LO + lo_i))` with
//! `P` of degree 3 (Lawson's fit of `ln(1+r)`'s relative error over
//! `|r| ≤ 0.0235`: 2^-32.5). 19 instructions an element; within 0.754 ulp
//! of the exact value over every positive normal float32 (fdlibm's
//! kernel: 0.856). The two kernels can differ in the last bit, so this is
//! the one float32 op whose bits depend on the CPU: AVX-512 CPUs run this
//! one, the others fdlibm's (a table of 32 needs gathers there, which
//! made it 4x slower than the division). Built for x86-64 only (not
//! under Miri, which has no AVX-512).

/// `c_i`: `1/z` at interval `i`'s middle, rounded to 6 significant bits
/// (1 exactly for the two intervals around 1).
const INVC: [u32; 32] = [
    0x3fb4_0000,
    0x3fb0_0000,
    0x3fac_0000,
    0x3fa8_0000,
    0x3fa8_0000,
    0x3fa4_0000,
    0x3fa0_0000,
    0x3f9c_0000,
    0x3f98_0000,
    0x3f98_0000,
    0x3f94_0000,
    0x3f90_0000,
    0x3f90_0000,
    0x3f8c_0000,
    0x3f8c_0000,
    0x3f88_0000,
    0x3f84_0000,
    0x3f84_0000,
    0x3f80_0000,
    0x3f80_0000,
    0x3f78_0000,
    0x3f70_0000,
    0x3f68_0000,
    0x3f60_0000,
    0x3f5c_0000,
    0x3f58_0000,
    0x3f50_0000,
    0x3f4c_0000,
    0x3f48_0000,
    0x3f40_0000,
    0x3f3c_0000,
    0x3f38_0000,
];

/// `−ln c_i` rounded to a multiple of 2^-16.
const LOGC_HI: [u32; 32] = [
    0xbeae_8e00,
    0xbea3_0c00,
    0xbe97_4800,
    0xbe8b_3a00,
    0xbe8b_3a00,
    0xbe7d_c800,
    0xbe64_8000,
    0xbe4a_9400,
    0xbe2f_f800,
    0xbe2f_f800,
    0xbe14_ac00,
    0xbdf1_3800,
    0xbdf1_3800,
    0xbdb7_8800,
    0xbdb7_8800,
    0xbd78_5000,
    0xbcfc_2000,
    0xbcfc_2000,
    0x0000_0000,
    0x0000_0000,
    0x3d02_1000,
    0x3d84_3000,
    0x3dc9_9800,
    0x3e08_bc00,
    0x3e1b_3000,
    0x3e2d_fc00,
    0x3e54_a000,
    0x3e68_8000,
    0x3e7c_c800,
    0x3e93_4c00,
    0x3e9e_1200,
    0x3ea9_1600,
];

/// `−ln c_i − LOGC_HI[i]`, rounded to float32.
const LOGC_LO: [u32; 32] = [
    0x3510_29fe,
    0xb63c_21c6,
    0x36ea_28f7,
    0xb6e5_5d5d,
    0xb6e5_5d5d,
    0xb643_6af2,
    0x3583_8656,
    0x3695_8c2f,
    0xb6c1_c29e,
    0xb6c1_c29e,
    0x36b4_1f80,
    0xb4ed_c55e,
    0xb4ed_c55e,
    0x3635_d46a,
    0x3635_d46a,
    0xb5c3_0046,
    0x36b2_78c4,
    0x36b2_78c4,
    0x0000_0000,
    0x0000_0000,
    0xb6a2_7619,
    0xb6ce_94c4,
    0x36bc_bab3,
    0x35e8_227e,
    0xb4d3_fa9c,
    0xb6fe_52af,
    0xb616_1ba9,
    0x36df_c995,
    0x3663_659e,
    0xb6ef_7659,
    0x3693_b99a,
    0xb68f_c63b,
];

/// `ln 2` as a multiple of 2^-16 (17 bits: `k·LN2_HI` is exact for every
/// float32 exponent) and the rest.
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = f32::from_bits(0x35bf_be8e);
/// `P(r) = −1/2 + C3·r + C4·r² + C5·r³`.
const C3: f32 = f32::from_bits(0x3eaa_aaaa);
const C4: f32 = f32::from_bits(0xbe80_0a7d);
const C5: f32 = f32::from_bits(0x3e4c_e468);
/// `z`'s lower end, 0.69921875: `x − OFF`'s exponent field is `k`, its
/// next five bits the interval.
const OFF: u32 = 0x3f33_0000;

/// `ln x` for a positive normal finite `x`, as [`avx512`] computes it
/// lane by lane (its tail, and the tests' reference).
#[inline(always)]
pub(super) fn ln(x: f32) -> f32 {
    let ix = x.to_bits();
    let tmp = ix.wrapping_sub(OFF);
    let k = (tmp as i32 >> 23) as f32;
    let i = ((tmp >> 18) & 31) as usize;
    let z = f32::from_bits(ix.wrapping_sub(tmp & 0xff80_0000));
    let r = z.mul_add(f32::from_bits(INVC[i]), -1.0);
    let hi = k.mul_add(LN2_HI, f32::from_bits(LOGC_HI[i]));
    let lo = k.mul_add(LN2_LO, f32::from_bits(LOGC_LO[i]));
    let r2 = r * r;
    let p = C5.mul_add(r, C4).mul_add(r2, C3.mul_add(r, -0.5));
    hi + (r + r2.mul_add(p, lo))
}

/// `dst[i] = ln src[i]` on AVX-512 for dense float32: vectors whose every
/// lane lies in `plain` ([`super::vmath::VMath::LN_PLAIN`]: positive,
/// normal and finite) by the table in registers (two `vpermt2ps` each),
/// the rest lane by lane, [`ln`] within `plain` and `full`
/// ([`super::vmath::VMath::ln_v`]) outside it (zeros, negatives, NaN,
/// infinities, subnormals); [`ln`]'s bits for every input in `plain`
/// wherever it sits.
///
/// # Safety
/// The CPU has AVX-512 F; `src` and `dst` each address `n` elements, the
/// same ones (in place) or apart, `dst` exclusively ours; any pointers for
/// `n = 0`.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn avx512(
    src: *const f32,
    dst: *mut f32,
    n: usize,
    plain: (f32, f32),
    full: impl Fn(f32) -> f32,
) {
    use std::arch::x86_64::*;
    let table = |t: &[u32; 32]| {
        // SAFETY: two halves of 16 within the table's 32 entries.
        unsafe {
            (
                _mm512_loadu_ps(t.as_ptr().cast()),
                _mm512_loadu_ps(t.as_ptr().add(16).cast()),
            )
        }
    };
    let ((c0, c1), (h0, h1), (l0, l1)) = (table(&INVC), table(&LOGC_HI), table(&LOGC_LO));
    let off = _mm512_set1_epi32(OFF as i32);
    // `plain` is positive, where the bits order as the values: one
    // unsigned compare of `bits − lo`.
    let (lo, hi) = (plain.0.to_bits(), plain.1.to_bits());
    let (lo_bits, span) = (
        _mm512_set1_epi32(lo as i32),
        _mm512_set1_epi32((hi - lo) as i32),
    );
    let exponent = _mm512_set1_epi32(0xff80_0000u32 as i32);
    let (ln2_hi, ln2_lo) = (_mm512_set1_ps(LN2_HI), _mm512_set1_ps(LN2_LO));
    let [c3, c4, c5] = [C3, C4, C5].map(|c| _mm512_set1_ps(c));
    let (minus_half, minus_one) = (_mm512_set1_ps(-0.5), _mm512_set1_ps(-1.0));
    let one = |x: f32| {
        if (plain.0..=plain.1).contains(&x) {
            ln(x)
        } else {
            full(x)
        }
    };
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n elements of src (unaligned loads allowed).
        let ix = unsafe { _mm512_loadu_si512(src.add(i).cast()) };
        if _mm512_cmple_epu32_mask(_mm512_sub_epi32(ix, lo_bits), span) == 0xffff {
            // ln(), instruction for instruction; vpermt2ps reads the low
            // five bits of the index.
            let tmp = _mm512_sub_epi32(ix, off);
            let k = _mm512_cvtepi32_ps(_mm512_srai_epi32::<23>(tmp));
            let idx = _mm512_srli_epi32::<18>(tmp);
            let z = _mm512_castsi512_ps(_mm512_sub_epi32(ix, _mm512_and_si512(tmp, exponent)));
            let r = _mm512_fmadd_ps(z, _mm512_permutex2var_ps(c0, idx, c1), minus_one);
            let hi = _mm512_fmadd_ps(k, ln2_hi, _mm512_permutex2var_ps(h0, idx, h1));
            let lo = _mm512_fmadd_ps(k, ln2_lo, _mm512_permutex2var_ps(l0, idx, l1));
            let r2 = _mm512_mul_ps(r, r);
            let p = _mm512_fmadd_ps(
                _mm512_fmadd_ps(c5, r, c4),
                r2,
                _mm512_fmadd_ps(c3, r, minus_half),
            );
            let y = _mm512_add_ps(hi, _mm512_add_ps(r, _mm512_fmadd_ps(r2, p, lo)));
            // SAFETY: i + 16 <= n elements of dst, exclusively ours.
            unsafe { _mm512_storeu_ps(dst.add(i), y) };
        } else {
            for l in i..i + 16 {
                // SAFETY: l < n, read before written.
                unsafe { *dst.add(l) = one(*src.add(l)) };
            }
        }
        i += 16;
    }
    while i < n {
        // SAFETY: i < n.
        unsafe { *dst.add(i) = one(*src.add(i)) };
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::ln;

    /// `ln x`'s error in ulps of the float32 result, against float64's.
    fn ulps(y: f32, x: f32) -> f64 {
        let want = f64::from(x).ln();
        let ulp = 2f64.powi(want.abs().log2().floor() as i32 - 23);
        (f64::from(y) - want).abs() / ulp
    }

    fn worst(bits: impl Iterator<Item = u32>) -> (f64, f32) {
        bits.map(f32::from_bits)
            .filter(|&x| x != 1.0)
            .map(|x| (ulps(ln(x), x), x))
            .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
    }

    /// Within 0.754 ulp (the whole range's worst, at 0.9501542) on a
    /// sample of every binade and around the intervals' edges and 1.
    #[test]
    fn within_the_measured_bound() {
        let edges = (0..32u32).flat_map(|i| {
            let e = super::OFF + (i << 18);
            [e - 2, e - 1, e, e + 1, e + 2]
        });
        let sample = (0x0080_0000u32..0x7f80_0000).step_by(997);
        let (err, at) = worst(sample.chain(edges).chain(0x3f70_0000..0x3f90_0000));
        assert!(err <= 0.755, "{err} ulp at {at:e}");
    }

    #[test]
    #[ignore = "every positive normal float32: a minute in a release build"]
    fn every_float32_within_the_measured_bound() {
        let (err, at) = worst(0x0080_0000u32..0x7f80_0000);
        assert!(err <= 0.755, "{err} ulp at {at:e}");
    }

    /// The AVX-512 copy gives [`ln`]'s bits for positive normal inputs and
    /// `full`'s for the rest, apart and in place, at every tail length.
    #[test]
    fn avx512_copy_gives_the_plain_bits() {
        use super::super::vmath::VMath;
        if !super::super::isa::avx512() {
            eprintln!("skipped: this CPU has no AVX-512");
            return;
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut xs: Vec<f32> = (0..4000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                f32::from_bits((state >> 33) as u32 % 0x7f80_0000)
            })
            .collect();
        let specials = [
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -1.0,
            0.0,
            -0.0,
            1e-40,
            f32::MAX,
        ];
        for (i, s) in specials.into_iter().enumerate() {
            xs[i * 97 + 3] = s;
        }
        let want: Vec<u32> = xs
            .iter()
            .map(|&x| {
                if x.is_normal() && x > 0.0 {
                    ln(x)
                } else {
                    x.ln_v()
                }
                .to_bits()
            })
            .collect();
        for n in (0..40).chain([xs.len()]) {
            let mut got = vec![0.0; n];
            // SAFETY: the CPU has AVX-512; n elements each, apart.
            unsafe { super::avx512(xs.as_ptr(), got.as_mut_ptr(), n, f32::LN_PLAIN, f32::ln_v) };
            let bits: Vec<u32> = got.iter().map(|g| g.to_bits()).collect();
            assert_eq!(bits, want[..n], "n = {n}");
        }
        let mut inplace = xs.clone();
        // SAFETY: as above, in place.
        unsafe {
            let p = inplace.as_mut_ptr();
            super::avx512(p, p, xs.len(), f32::LN_PLAIN, f32::ln_v)
        };
        assert!(inplace.iter().zip(&want).all(|(g, w)| g.to_bits() == *w));
    }
}
