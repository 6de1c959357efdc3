//! Float64 `exp`, table-driven: the algorithm every copy computes, and its
//! AVX-512 copy with the table held in registers.
//!
//! `x = (16m + j)·ln2/16 + r`, `|r| ≤ ln2/32`, so `e^x = 2^m · 2^(j/16) ·
//! e^r`. `2^(j/16)` is a table of 16 (each entry as a high and a low
//! double, the low one carrying the bits past the high one's 53), and
//! `e^r − 1 = r + r²·P(r)` with `P` of degree 4 (fitted for the absolute
//! error of `e^r − 1`, 1.3·10^-17 at most, by Lawson's iteration over 300
//! Chebyshev nodes). The result is `T + (T·(e^r − 1) + T_lo)`, rounded once
//! apart from the polynomial's small terms: within 0.7 ulp of the exact
//! value in the worst case (bounded by the final rounding, the fit and
//! the table's low part), measured within 0.63 ulp.
//!
//! Why a table: the previous kernel (degree 13 on `|r| ≤ ln2/2`) took 27
//! vector instructions an element and ran 1.5x torch's SLEEF kernel. On
//! AVX-512 two `vpermt2pd` read the table from four registers (no gather,
//! no memory): 16 instructions an element, 40% less time. The compiler's
//! copies (baseline, AVX2) index the same table, with gathers, and give
//! the same bits.

/// `2^(j/16)` rounded to float64, `j` in 0..16.
pub(super) const TABLE_HI: [u64; 16] = [
    0x3ff0_0000_0000_0000,
    0x3ff0_b558_6cf9_890f,
    0x3ff1_72b8_3c7d_517b,
    0x3ff2_387a_6e75_6238,
    0x3ff3_06fe_0a31_b715,
    0x3ff3_dea6_4c12_3422,
    0x3ff4_bfda_d536_2a27,
    0x3ff5_ab07_dd48_5429,
    0x3ff6_a09e_667f_3bcd,
    0x3ff7_a114_73eb_0187,
    0x3ff8_ace5_422a_a0db,
    0x3ff9_c491_82a3_f090,
    0x3ffa_e89f_995a_d3ad,
    0x3ffc_199b_dd85_529c,
    0x3ffd_5818_dcfb_a487,
    0x3ffe_a4af_a2a4_90da,
];

/// `2^(j/16) − TABLE_HI[j]`, rounded to float64.
const TABLE_LO: [u64; 16] = [
    0x0000_0000_0000_0000,
    0x3c98_a62e_4adc_610b,
    0xbc81_9041_b9d7_8a76,
    0x3c99_b07e_b6c7_0573,
    0x3c86_f46a_d231_82e4,
    0x3c8a_da09_11f0_9ebc,
    0x3c7d_4397_afec_42e2,
    0x3c96_324c_0546_47ad,
    0xbc9b_dd34_13b2_6456,
    0xbc84_1577_ee04_992f,
    0x3c96_e9f1_5686_4b27,
    0x3c7c_7c46_b071_f2be,
    0x3c97_a1cd_345d_cc81,
    0x3c81_1065_8950_48dd,
    0x3c82_ed02_d75b_3707,
    0xbc9e_9c23_179c_2893,
];

/// `16 / ln 2`.
const INV_STEP: f64 = 23.083_120_654_223_414;
/// `ln2/16` to 35 significant bits: `k · STEP_HI` is exact for every `|k|
/// < 2^18` (the clamped inputs give `|k| < 17_300`).
const STEP_HI: f64 = f64::from_bits(0x3fa6_2e42_fef8_0000);
/// `ln2/16 − STEP_HI`.
const STEP_LO: f64 = f64::from_bits(0x3d71_cf79_abc9_e3b4);
/// `P(r) ≈ (e^r − 1 − r) / r²` on `|r| ≤ 1.01·ln2/32`.
const P: [f64; 5] = [
    f64::from_bits(0x3fe0_0000_0000_0005),
    f64::from_bits(0x3fc5_5555_5548_77de),
    f64::from_bits(0x3fa5_5555_5545_4abc),
    f64::from_bits(0x3f81_1124_0aba_93d1),
    f64::from_bits(0x3f56_c186_6343_e56d),
];
/// `1.5 · 2^52`: added to a float64 within ±2^51, rounds it to an integer
/// (ties to even) held in the low bits of the sum's mantissa.
pub(super) const ROUND: f64 = 6_755_399_441_055_744.0;

/// `e^x` of `x` within [-746, 710] as `(y, m)`, the result `y · 2^m`, `y`
/// in [0.98, 2.03].
#[inline(always)]
pub(super) fn parts(x: f64) -> (f64, i64) {
    parts_then(x, |r| r)
}

/// [`parts`] of `e^(x + tail)`, `tail` below `x`'s last bit (the low half
/// of a double-double exponent, as `pow`'s): added to the reduced argument,
/// where it is not lost.
#[inline(always)]
pub(super) fn parts_tail(x: f64, tail: f64) -> (f64, i64) {
    parts_then(x, |r| r + tail)
}

/// [`parts`] with `adjust` applied to the reduced argument `r`.
#[inline(always)]
fn parts_then(x: f64, adjust: impl Fn(f64) -> f64) -> (f64, i64) {
    let t = x.mul_add(INV_STEP, ROUND);
    let kf = t - ROUND; // round(16x / ln 2)
    let hi = (-kf).mul_add(STEP_HI, x); // exact: k · STEP_HI is
    let r = adjust((-kf).mul_add(STEP_LO, hi));
    let p = P[4]
        .mul_add(r, P[3])
        .mul_add(r, P[2])
        .mul_add(r, P[1])
        .mul_add(r, P[0]);
    let em1 = (r * r).mul_add(p, r); // e^r − 1
    let k = (t.to_bits() as i64).wrapping_sub(ROUND.to_bits() as i64);
    let j = (k & 15) as usize;
    let (th, tl) = (f64::from_bits(TABLE_HI[j]), f64::from_bits(TABLE_LO[j]));
    (th + th.mul_add(em1, tl), k >> 4)
}

/// [`parts`] on eight lanes of AVX-512, the table in four registers (two
/// `vpermt2pd` read it: no gather, no memory) and the constants in others,
/// set once per loop: `exp`'s AVX-512 copy below and the general power's
/// (`vpow_avx512.rs`).
#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(super) struct PartsAvx512 {
    hi: [std::arch::x86_64::__m512d; 2],
    lo: [std::arch::x86_64::__m512d; 2],
    inv: std::arch::x86_64::__m512d,
    round: std::arch::x86_64::__m512d,
    step_hi: std::arch::x86_64::__m512d,
    step_lo: std::arch::x86_64::__m512d,
    p: [std::arch::x86_64::__m512d; 5],
    sixteenth: std::arch::x86_64::__m512d,
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
impl PartsAvx512 {
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) fn new() -> Self {
        use std::arch::x86_64::*;
        let two = |t: &[u64; 16]| {
            // SAFETY: two runs of eight within the table's 16 entries.
            unsafe { [0, 8].map(|at| _mm512_loadu_pd(t.as_ptr().add(at).cast())) }
        };
        Self {
            hi: two(&TABLE_HI),
            lo: two(&TABLE_LO),
            inv: _mm512_set1_pd(INV_STEP),
            round: _mm512_set1_pd(ROUND),
            step_hi: _mm512_set1_pd(STEP_HI),
            step_lo: _mm512_set1_pd(STEP_LO),
            p: P.map(|c| _mm512_set1_pd(c)),
            sixteenth: _mm512_set1_pd(0.0625),
        }
    }

    /// `e^x` with [`parts`]' bits, for lanes whose results are normal.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) fn normal(&self, x: std::arch::x86_64::__m512d) -> std::arch::x86_64::__m512d {
        self.normal_then::<false>(x, x)
    }

    /// `e^(x + tail)` with [`parts_tail`]'s bits, for lanes whose results
    /// are normal.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) fn normal_tail(
        &self,
        x: std::arch::x86_64::__m512d,
        tail: std::arch::x86_64::__m512d,
    ) -> std::arch::x86_64::__m512d {
        self.normal_then::<true>(x, tail)
    }

    /// [`parts_then`], instruction for instruction (`tail` added to the
    /// reduced argument when `TAIL`), then `y · 2^m` by one `vscalefpd`:
    /// exact for a normal result, as the scalar kernels' scalings are.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn normal_then<const TAIL: bool>(
        &self,
        x: std::arch::x86_64::__m512d,
        tail: std::arch::x86_64::__m512d,
    ) -> std::arch::x86_64::__m512d {
        use std::arch::x86_64::*;
        let p = &self.p;
        let t = _mm512_fmadd_pd(x, self.inv, self.round);
        let kf = _mm512_sub_pd(t, self.round);
        let r = _mm512_fnmadd_pd(kf, self.step_lo, _mm512_fnmadd_pd(kf, self.step_hi, x));
        let r = if TAIL { _mm512_add_pd(r, tail) } else { r };
        let q = _mm512_fmadd_pd(p[4], r, p[3]);
        let q = _mm512_fmadd_pd(_mm512_fmadd_pd(q, r, p[2]), r, p[1]);
        let q = _mm512_fmadd_pd(q, r, p[0]);
        let em1 = _mm512_fmadd_pd(_mm512_mul_pd(r, r), q, r);
        // The index is t's low 4 bits: k mod 16.
        let k = _mm512_castpd_si512(t);
        let th = _mm512_permutex2var_pd(self.hi[0], k, self.hi[1]);
        let tl = _mm512_permutex2var_pd(self.lo[0], k, self.lo[1]);
        let y = _mm512_add_pd(th, _mm512_fmadd_pd(th, em1, tl));
        // y · 2^floor(k/16); k/16 is exact.
        _mm512_scalef_pd(y, _mm512_mul_pd(kf, self.sixteenth))
    }
}

/// [`parts_tail`] on four lanes of AVX2 for lanes whose results are
/// normal, the table read by gathers: the general power's AVX2 copy
/// (`vpow_avx2.rs`).
#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(super) struct PartsAvx2 {
    inv: std::arch::x86_64::__m256d,
    round: std::arch::x86_64::__m256d,
    round_bits: std::arch::x86_64::__m256i,
    step_hi: std::arch::x86_64::__m256d,
    step_lo: std::arch::x86_64::__m256d,
    p: [std::arch::x86_64::__m256d; 5],
    fifteen: std::arch::x86_64::__m256i,
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
impl PartsAvx2 {
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn new() -> Self {
        use std::arch::x86_64::*;
        Self {
            inv: _mm256_set1_pd(INV_STEP),
            round: _mm256_set1_pd(ROUND),
            round_bits: _mm256_set1_epi64x(ROUND.to_bits() as i64),
            step_hi: _mm256_set1_pd(STEP_HI),
            step_lo: _mm256_set1_pd(STEP_LO),
            p: P.map(|c| _mm256_set1_pd(c)),
            fifteen: _mm256_set1_epi64x(15),
        }
    }

    /// `e^(x + tail)` with [`parts_tail`]'s bits, instruction for
    /// instruction, then `y · 2^m` by adding `m` to `y`'s exponent: exact
    /// for a normal result, as the scalar kernels' scalings are.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn normal_tail(
        &self,
        x: std::arch::x86_64::__m256d,
        tail: std::arch::x86_64::__m256d,
    ) -> std::arch::x86_64::__m256d {
        use std::arch::x86_64::*;
        let p = &self.p;
        let t = _mm256_fmadd_pd(x, self.inv, self.round);
        let kf = _mm256_sub_pd(t, self.round);
        let r = _mm256_fnmadd_pd(kf, self.step_lo, _mm256_fnmadd_pd(kf, self.step_hi, x));
        let r = _mm256_add_pd(r, tail);
        let q = _mm256_fmadd_pd(p[4], r, p[3]);
        let q = _mm256_fmadd_pd(_mm256_fmadd_pd(q, r, p[2]), r, p[1]);
        let q = _mm256_fmadd_pd(q, r, p[0]);
        let em1 = _mm256_fmadd_pd(_mm256_mul_pd(r, r), q, r);
        let k = _mm256_sub_epi64(_mm256_castpd_si256(t), self.round_bits);
        let j = _mm256_and_si256(k, self.fifteen);
        // SAFETY: j lies in 0..16, the tables' length.
        let (th, tl) = unsafe {
            (
                _mm256_i64gather_pd::<8>(TABLE_HI.as_ptr().cast(), j),
                _mm256_i64gather_pd::<8>(TABLE_LO.as_ptr().cast(), j),
            )
        };
        let y = _mm256_add_pd(th, _mm256_fmadd_pd(th, em1, tl));
        // 2^floor(k/16) into y's exponent: (k >> 4) << 52 without AVX2's
        // missing 64-bit arithmetic shift.
        let raise = _mm256_slli_epi64::<48>(_mm256_andnot_si256(self.fifteen, k));
        _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(y), raise))
    }
}

/// `dst[i] = e^src[i]` on AVX-512 for dense float64: vectors whose every
/// lane lies in `plain` ([`super::vmath::VMath::EXP_PLAIN`], normal
/// results) by [`PartsAvx512`], the rest lane by lane through `full`
/// ([`super::vmath::VMath::exp_v`]); [`parts`]'s bits either way.
///
/// # Safety
/// The CPU has AVX-512 F; `src` and `dst` each address `n` elements, the
/// same ones (in place) or apart, `dst` exclusively ours; any pointers for
/// `n = 0`.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn avx512(
    src: *const f64,
    dst: *mut f64,
    n: usize,
    plain: (f64, f64),
    full: impl Fn(f64) -> f64,
) {
    use std::arch::x86_64::*;
    let parts = PartsAvx512::new();
    let (lo, hi) = (_mm512_set1_pd(plain.0), _mm512_set1_pd(plain.1));
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n elements of src (unaligned loads allowed).
        let x = unsafe { _mm512_loadu_pd(src.add(i)) };
        let inside =
            _mm512_cmp_pd_mask::<_CMP_GE_OQ>(x, lo) & _mm512_cmp_pd_mask::<_CMP_LE_OQ>(x, hi);
        if inside == 0xff {
            // SAFETY: i + 8 <= n elements of dst, exclusively ours.
            unsafe { _mm512_storeu_pd(dst.add(i), parts.normal(x)) };
        } else {
            for l in i..i + 8 {
                // SAFETY: l < n, read before written.
                unsafe { *dst.add(l) = full(*src.add(l)) };
            }
        }
        i += 8;
    }
    while i < n {
        // SAFETY: i < n.
        unsafe { *dst.add(i) = full(*src.add(i)) };
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    /// The AVX-512 copy gives the bits of the compiler's, apart and in
    /// place, over vectors wholly in the table's range and vectors with a
    /// special lane (infinities, NaN, subnormal and overflowing results),
    /// at every tail length.
    #[test]
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    fn avx512_copy_gives_the_plain_bits() {
        use super::super::vmath::VMath;
        if !super::super::isa::avx512() {
            eprintln!("skipped: this CPU has no AVX-512");
            return;
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut xs: Vec<f64> = (0..4000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 11) as f64 / (1u64 << 53) as f64 * 1500.0 - 760.0
            })
            .collect();
        for (i, s) in [
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -745.5,
            709.9,
            0.0,
            -0.0,
        ]
        .into_iter()
        .enumerate()
        {
            xs[i * 97 + 3] = s;
        }
        let want: Vec<u64> = xs.iter().map(|x| x.exp_v().to_bits()).collect();
        for n in (0..40).chain([xs.len()]) {
            let mut got = vec![0.0; n];
            // SAFETY: the CPU has AVX-512; n elements each, apart.
            unsafe { super::avx512(xs.as_ptr(), got.as_mut_ptr(), n, f64::EXP_PLAIN, f64::exp_v) };
            let bits: Vec<u64> = got.iter().map(|g| g.to_bits()).collect();
            assert_eq!(bits, want[..n], "n = {n}");
        }
        let mut inplace = xs.clone();
        // SAFETY: as above, in place.
        unsafe {
            let p = inplace.as_mut_ptr();
            super::avx512(p, p, xs.len(), f64::EXP_PLAIN, f64::exp_v)
        };
        assert!(inplace.iter().zip(&want).all(|(g, w)| g.to_bits() == *w));
    }
}
