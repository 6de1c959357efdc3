//! [`pow_f32`] and [`pow_f64`] on AVX-512: the same bits, in less time.
//!
//! The compiler vectorises both kernels for AVX-512 by itself, but it reads
//! every table with gathers and selects C99's special values in every lane.
//! Here a step whose bases are positive normal numbers and whose exponents
//! are finite (the usual case) selects no special value; any other step
//! runs the scalar kernel lane by lane.
//!
//! - float32, sixteen elements a step in float32 lanes ([`Fast`]): the five
//!   32-entry tables sit in registers (`vpermt2ps`), about 50 vector
//!   instructions a step, 0.5-0.6 ns an element on Sapphire Rapids (NumPy's
//!   SVML `powf`: 0.55-0.65, within about 1 ulp; the float64-lane kernel
//!   that was here: 1.3). A step with exponents past ±512 runs the float64
//!   kernel ([`Wide`], two halves of eight) for those lanes.
//! - float64, eight a step: `ln_dd`'s three 128-slot tables are gathered,
//!   and a step whose results are normal computes `e^(th + tl)` by
//!   `exp64`'s own AVX-512 kernel ([`PartsAvx512`]). 2.5 ns an element
//!   (SVML: 2.1).
//!
//! Every instruction is the scalar kernel's own operation in its order (no
//! contraction, no reassociation), so the results are its bits.

use std::arch::x86_64::*;

use super::exp64::{PartsAvx512, ROUND, TABLE_HI};
use super::vpow::{LN2_HI, LN2_LO, OFF, OFF32, SHIFT32, WIDE_FROM, pow_f32, pow_f64};
use super::vpow_table::{
    EXP2_HI, EXP2_LO, EXP2_POLY, INV_LN2, INVC, INVC_F32, INVC32, LOG2_POLY, LOG2C_HI, LOG2C_LO,
    LOGC_HI, LOGC_LO, LOGC32,
};

/// `r[i] = pow_f32(x[i], y[i])` for the slices' common length, sixteen
/// lanes a step: a step whose bases are positive normal numbers and whose
/// exponents are within ±[`WIDE_FROM`] (the usual case) runs [`Fast`];
/// one with larger finite exponents also [`Wide`] (for those lanes); any
/// other, and the tail, [`pow_f32`] itself.
///
/// # Safety
/// The CPU has AVX-512 F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn pow_f32_slice(x: &[f32], y: &[f32], r: &mut [f32]) {
    let n = r.len().min(x.len()).min(y.len());
    let (x, y, r) = (&x[..n], &y[..n], &mut r[..n]);
    let c = Consts::new();
    let fast = Fast::new();
    let wide = Wide::new();
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n elements of each slice (unaligned loads and
        // stores allowed).
        unsafe {
            let xv = _mm512_loadu_ps(x.as_ptr().add(i));
            let yv = _mm512_loadu_ps(y.as_ptr().add(i));
            let ix = _mm512_castps_si512(xv);
            // Positive normal finite bases (bits 0x0080_0000..=0x7f7f_ffff),
            // finite exponents, and those within ±WIDE_FROM.
            let normal = _mm512_cmple_epu32_mask(_mm512_sub_epi32(ix, c.min_normal), c.normal_span);
            let magnitude = _mm512_and_si512(_mm512_castps_si512(yv), c.magnitude);
            let finite = _mm512_cmplt_epu32_mask(magnitude, c.inf_bits);
            let small = normal & _mm512_cmple_epu32_mask(magnitude, c.wide_from);
            if small == 0xffff {
                _mm512_storeu_ps(r.as_mut_ptr().add(i), fast.pow(&c, ix, yv));
            } else if normal & finite == 0xffff {
                let e = wide.pow(&c, ix, xv, yv);
                let e = if small == 0 {
                    e
                } else {
                    _mm512_mask_blend_ps(small, e, fast.pow(&c, ix, yv))
                };
                _mm512_storeu_ps(r.as_mut_ptr().add(i), e);
            } else {
                for l in i..i + 16 {
                    *r.get_unchecked_mut(l) = pow_f32(*x.get_unchecked(l), *y.get_unchecked(l));
                }
            }
        }
        i += 16;
    }
    for l in i..n {
        r[l] = pow_f32(x[l], y[l]);
    }
}

/// [`pow_f32`]'s float32 kernel on sixteen lanes: its tables in registers
/// (`vpermt2ps` reads 32 entries), its operations in its order.
struct Fast {
    invc: [__m512; 2],
    log2c_hi: [__m512; 2],
    log2c_lo: [__m512; 2],
    exp2_hi: [__m512; 2],
    exp2_lo: [__m512; 2],
    one: __m512,
    inv_ln2: [__m512; 2],
    log2_poly: [__m512; 4],
    exp2_poly: [__m512; 3],
    shift: __m512,
}

impl Fast {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new() -> Self {
        // SAFETY: two runs of sixteen within a 32-entry table.
        let two =
            |t: &[u32; 32]| unsafe { [0, 16].map(|at| _mm512_loadu_ps(t.as_ptr().add(at).cast())) };
        let f = |b: u32| _mm512_set1_ps(f32::from_bits(b));
        Self {
            invc: two(&INVC_F32),
            log2c_hi: two(&LOG2C_HI),
            log2c_lo: two(&LOG2C_LO),
            exp2_hi: two(&EXP2_HI),
            exp2_lo: two(&EXP2_LO),
            one: _mm512_set1_ps(1.0),
            inv_ln2: INV_LN2.map(f),
            log2_poly: LOG2_POLY.map(f),
            exp2_poly: EXP2_POLY.map(f),
            shift: _mm512_set1_ps(SHIFT32),
        }
    }

    /// `pow_f32(x, y)` for positive normal `x` (bits `ix`) and `|y| ≤
    /// WIDE_FROM`: no special value arises (`x ** 0 = 1 ** y = 1` come out
    /// of the arithmetic exactly).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn pow(&self, c: &Consts, ix: __m512i, y: __m512) -> __m512 {
        let tmp = _mm512_sub_epi32(ix, c.off);
        // vpermt2ps reads the index's low five bits: the slot.
        let slot = _mm512_srli_epi32::<18>(tmp);
        let k = _mm512_cvtepi32_ps(_mm512_srai_epi32::<23>(tmp));
        let m = _mm512_castsi512_ps(_mm512_sub_epi32(ix, _mm512_and_si512(tmp, c.exponent)));
        let table = |t: &[__m512; 2], at: __m512i| _mm512_permutex2var_ps(t[0], at, t[1]);
        let invc = table(&self.invc, slot);
        let p = _mm512_mul_ps(m, invc);
        let pl = _mm512_fmsub_ps(m, invc, p);
        let r = _mm512_sub_ps(p, self.one);
        let a = _mm512_add_ps(k, table(&self.log2c_hi, slot));
        let [c_hi, c_lo] = self.inv_ln2;
        let rh = _mm512_mul_ps(r, c_hi);
        let rl = _mm512_fmsub_ps(r, c_hi, rh);
        let hi = _mm512_add_ps(a, rh);
        let e = _mm512_add_ps(_mm512_sub_ps(a, hi), rh);
        let cp = _mm512_mul_ps(pl, c_hi);
        let lp = &self.log2_poly;
        let q = _mm512_fmadd_ps(
            _mm512_fmadd_ps(_mm512_fmadd_ps(lp[3], r, lp[2]), r, lp[1]),
            r,
            lp[0],
        );
        let small = _mm512_add_ps(
            _mm512_fmadd_ps(r, c_lo, table(&self.log2c_lo, slot)),
            _mm512_add_ps(e, rl),
        );
        let lo = _mm512_fmadd_ps(
            _mm512_mul_ps(r, r),
            q,
            _mm512_add_ps(_mm512_fnmadd_ps(cp, r, cp), small),
        );
        let th = _mm512_mul_ps(y, hi);
        let tl = _mm512_fmadd_ps(y, lo, _mm512_fmsub_ps(y, hi, th));
        let u = _mm512_add_ps(_mm512_add_ps(th, tl), self.shift);
        let qd = _mm512_sub_ps(u, self.shift);
        let fr = _mm512_add_ps(_mm512_sub_ps(th, qd), tl);
        let ep = &self.exp2_poly;
        let w = _mm512_mul_ps(
            _mm512_fmadd_ps(_mm512_fmadd_ps(ep[2], fr, ep[1]), fr, ep[0]),
            fr,
        );
        let j = _mm512_castps_si512(u);
        let t_hi = table(&self.exp2_hi, j);
        let res = _mm512_add_ps(t_hi, _mm512_fmadd_ps(t_hi, w, table(&self.exp2_lo, j)));
        // res · 2^floor(qd), one rounding.
        _mm512_scalef_ps(res, qd)
    }
}

/// [`pow_f32_wide`](super::vpow::pow_f32_wide)'s float64 kernel on sixteen lanes, as two halves of
/// eight: its three tables (`invc`, `ln c`, `2^(j/16)`) in registers
/// (`vpermt2pd`, two per 32-entry table).
struct Wide {
    invc: [__m512d; 4],
    logc: [__m512d; 4],
    exp2: [__m512d; 2],
}

impl Wide {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new() -> Self {
        let four = |t: &[u64; 32]| {
            // SAFETY: four runs of eight within the table's 32 entries.
            unsafe { [0, 8, 16, 24].map(|at| _mm512_loadu_pd(t.as_ptr().add(at).cast())) }
        };
        Self {
            invc: four(&INVC32),
            logc: four(&LOGC32),
            // SAFETY: two runs of eight within the table's 16 entries.
            exp2: unsafe { [0, 8].map(|at| _mm512_loadu_pd(TABLE_HI.as_ptr().add(at).cast())) },
        }
    }

    /// `pow_f32_wide(x, y)` for positive normal `x` (bits `ix`) and finite
    /// `y`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn pow(&self, c: &Consts, ix: __m512i, xv: __m512, yv: __m512) -> __m512 {
        // pow_f32_wide's ln|x| bits, on sixteen lanes of 32-bit integers.
        let tmp = _mm512_sub_epi32(ix, c.off);
        let slot = _mm512_and_si512(_mm512_srli_epi32::<18>(tmp), c.mask31);
        let k = _mm512_srai_epi32::<23>(tmp);
        let m = _mm512_sub_epi32(ix, _mm512_and_si512(tmp, c.exponent));
        let half = |v: __m512i, upper: bool| {
            if upper {
                _mm512_extracti64x4_epi64::<1>(v)
            } else {
                _mm512_castsi512_si256(v)
            }
        };
        let [lo, hi] = [false, true].map(|upper| {
            let lane = Lane {
                m: _mm512_cvtps_pd(_mm256_castsi256_ps(half(m, upper))),
                k: _mm512_cvtepi32_pd(half(k, upper)),
                slot: _mm512_cvtepu32_epi64(half(slot, upper)),
                y: _mm512_cvtps_pd(_mm256_castsi256_ps(half(_mm512_castps_si512(yv), upper))),
            };
            lane.pow(c, &self.invc, &self.logc, &self.exp2)
        });
        let e = _mm512_castpd_ps(_mm512_insertf64x4::<1>(
            _mm512_castps_pd(_mm512_castps256_ps512(lo)),
            _mm256_castps_pd(hi),
        ));
        // x ** 0 = 1 ** y = 1.
        let ones = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(yv, c.zero)
            | _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(xv, c.one);
        _mm512_mask_blend_ps(ones, e, c.one)
    }
}

/// Eight lanes of float64, from one half of a step.
struct Lane {
    /// `m`, the base's mantissa scaled into its slot's range.
    m: __m512d,
    /// `k`, the base's exponent past the slots' offset.
    k: __m512d,
    /// The slot, 0..32, one per 64-bit lane.
    slot: __m512i,
    /// The exponent.
    y: __m512d,
}

impl Lane {
    /// `pow_f32_wide`'s `e^(y ln x)`, rounded to float32, for positive normal
    /// `x` and finite `y`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn pow(
        &self,
        c: &Consts,
        invc: &[__m512d; 4],
        logc: &[__m512d; 4],
        exp2: &[__m512d; 2],
    ) -> __m256 {
        // A 32-entry table: entries 0..16 and 16..32 by the index's low
        // four bits, then one of the two by its fifth.
        let upper = _mm512_test_epi64_mask(self.slot, c.sixteen);
        let table = |t: &[__m512d; 4]| {
            _mm512_mask_blend_pd(
                upper,
                _mm512_permutex2var_pd(t[0], self.slot, t[1]),
                _mm512_permutex2var_pd(t[2], self.slot, t[3]),
            )
        };
        let r = _mm512_fmadd_pd(self.m, table(invc), c.minus_one);
        let mut p = _mm512_fmadd_pd(c.ln_poly[0], r, c.ln_poly[1]);
        for &coef in &c.ln_poly[2..] {
            p = _mm512_fmadd_pd(p, r, coef);
        }
        let ln = _mm512_add_pd(
            _mm512_fmadd_pd(self.k, c.ln2, table(logc)),
            _mm512_mul_pd(r, p),
        );
        let t = _mm512_mul_pd(self.y, ln);
        let tc = _mm512_min_pd(_mm512_max_pd(t, c.t_min), c.t_max);
        let u = _mm512_fmadd_pd(tc, c.sixteen_log2e, c.round);
        let qf = _mm512_sub_pd(u, c.round);
        let s = _mm512_fnmadd_pd(qf, c.ln2_16, tc);
        let mut es = _mm512_fmadd_pd(c.exp_poly[0], s, c.exp_poly[1]);
        for &coef in &c.exp_poly[2..] {
            es = _mm512_fmadd_pd(es, s, coef);
        }
        // 2^(j/16) by u's low four bits (q's: 1.5·2^52's are 0), times
        // e^s, then scaled by 2^floor(q/16): exact (the product lies
        // far inside float64's normal range), so pow_f32_wide's bits.
        let entry = _mm512_permutex2var_pd(exp2[0], _mm512_castpd_si512(u), exp2[1]);
        let scaled = _mm512_scalef_pd(_mm512_mul_pd(entry, es), _mm512_mul_pd(qf, c.sixteenth));
        _mm512_cvtpd_ps(scaled)
    }
}

/// The float32 kernels' shared constants, broadcast once per call.
struct Consts {
    min_normal: __m512i,
    normal_span: __m512i,
    magnitude: __m512i,
    inf_bits: __m512i,
    wide_from: __m512i,
    off: __m512i,
    mask31: __m512i,
    exponent: __m512i,
    zero: __m512,
    one: __m512,
    sixteen: __m512i,
    minus_one: __m512d,
    ln_poly: [__m512d; 7],
    ln2: __m512d,
    t_min: __m512d,
    t_max: __m512d,
    sixteen_log2e: __m512d,
    round: __m512d,
    ln2_16: __m512d,
    exp_poly: [__m512d; 6],
    sixteenth: __m512d,
}

impl Consts {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new() -> Self {
        let int = |v: u32| _mm512_set1_epi32(v as i32);
        let f64s = |v: f64| _mm512_set1_pd(v);
        Self {
            min_normal: int(0x0080_0000),
            normal_span: int(0x7f7f_ffff - 0x0080_0000),
            magnitude: int(0x7fff_ffff),
            inf_bits: int(0x7f80_0000),
            wide_from: int(WIDE_FROM.to_bits()),
            off: int(OFF32),
            mask31: int(31),
            exponent: int(0xff80_0000),
            zero: _mm512_set1_ps(0.0),
            one: _mm512_set1_ps(1.0),
            sixteen: _mm512_set1_epi64(16),
            minus_one: f64s(-1.0),
            ln_poly: [
                1.0 / 7.0,
                -1.0 / 6.0,
                1.0 / 5.0,
                -1.0 / 4.0,
                1.0 / 3.0,
                -0.5,
                1.0,
            ]
            .map(f64s),
            ln2: f64s(std::f64::consts::LN_2),
            t_min: f64s(-200.0),
            t_max: f64s(200.0),
            sixteen_log2e: f64s(16.0 * std::f64::consts::LOG2_E),
            round: f64s(ROUND),
            ln2_16: f64s(std::f64::consts::LN_2 / 16.0),
            exp_poly: [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0].map(f64s),
            sixteenth: f64s(0.0625),
        }
    }
}

/// `r[i] = pow_f64(x[i], y[i])` for the slices' common length: eight
/// elements a step. `ln_dd`'s three tables (128 slots each) are read by
/// gathers, `exp64`'s by [`PartsAvx512`]; a step whose bases are positive
/// normal numbers other than 1, whose exponents are finite and non-zero
/// and whose results are normal (`|y ln x| < 708`) needs no special value
/// and scales by `vscalefpd` (exact for a normal result, so `pow_f64`'s
/// two scalings' bits); any other step runs [`pow_f64`] lane by lane.
///
/// # Safety
/// The CPU has AVX-512 F and DQ.
#[target_feature(enable = "avx512f,avx512dq")]
pub(super) unsafe fn pow_f64_slice(x: &[f64], y: &[f64], r: &mut [f64]) {
    let n = r.len().min(x.len()).min(y.len());
    let (x, y, r) = (&x[..n], &y[..n], &mut r[..n]);
    let c = Consts64::new();
    let parts = PartsAvx512::new();
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n elements of each slice (unaligned loads and
        // stores allowed); the gathers read slots 0..128 of 128-entry tables.
        unsafe {
            let xv = _mm512_loadu_pd(x.as_ptr().add(i));
            let yv = _mm512_loadu_pd(y.as_ptr().add(i));
            let ix = _mm512_castpd_si512(xv);
            let normal = _mm512_cmple_epu64_mask(_mm512_sub_epi64(ix, c.min_normal), c.normal_span);
            let finite = _mm512_cmplt_epu64_mask(
                _mm512_and_si512(_mm512_castpd_si512(yv), c.magnitude),
                c.inf_bits,
            );
            let ones = _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(yv, c.zero)
                | _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(xv, c.one);
            if normal & finite & !ones == 0xff {
                // ln_dd, operation for operation (k from the shifted bits
                // directly: the same integer as its 2^52 trick's).
                let tmp = _mm512_sub_epi64(ix, c.off);
                let slot = _mm512_and_si512(_mm512_srli_epi64::<45>(tmp), c.mask127);
                let kd = _mm512_cvtepi64_pd(_mm512_srai_epi64::<52>(tmp));
                let m =
                    _mm512_castsi512_pd(_mm512_sub_epi64(ix, _mm512_and_si512(tmp, c.exponent)));
                let invc = _mm512_i64gather_pd::<8>(slot, INVC.as_ptr().cast());
                let lch = _mm512_i64gather_pd::<8>(slot, LOGC_HI.as_ptr().cast());
                let lcl = _mm512_i64gather_pd::<8>(slot, LOGC_LO.as_ptr().cast());
                let p = _mm512_mul_pd(m, invc);
                let zl = _mm512_fmsub_pd(m, invc, p);
                let zh = _mm512_sub_pd(p, c.one);
                let z = _mm512_add_pd(zh, zl);
                let t1 = _mm512_add_pd(_mm512_mul_pd(kd, c.ln2_hi), lch);
                let t2 = _mm512_add_pd(t1, zh);
                let e2 = _mm512_add_pd(_mm512_sub_pd(t1, t2), zh);
                let half = _mm512_mul_pd(c.minus_half, zh);
                let s = _mm512_mul_pd(half, zh);
                let s_lo = _mm512_fmsub_pd(half, zh, s);
                let hi = _mm512_add_pd(t2, s);
                let e3 = _mm512_add_pd(_mm512_sub_pd(t2, hi), s);
                let mut q = _mm512_fmadd_pd(c.ln_poly[0], z, c.ln_poly[1]);
                for &coef in &c.ln_poly[2..] {
                    q = _mm512_fmadd_pd(q, z, coef);
                }
                let cubic = _mm512_mul_pd(_mm512_mul_pd(z, z), _mm512_mul_pd(z, q));
                let lo = _mm512_add_pd(
                    _mm512_add_pd(
                        _mm512_add_pd(
                            _mm512_add_pd(_mm512_fmadd_pd(kd, c.ln2_lo, lcl), e2),
                            _mm512_add_pd(zl, e3),
                        ),
                        _mm512_sub_pd(s_lo, _mm512_mul_pd(zh, zl)),
                    ),
                    cubic,
                );
                let lh = _mm512_add_pd(hi, lo);
                let ll = _mm512_add_pd(_mm512_sub_pd(hi, lh), lo);
                // pow_f64: y ln x = th + tl.
                let th = _mm512_mul_pd(yv, lh);
                let tl = _mm512_add_pd(_mm512_fmsub_pd(yv, lh, th), _mm512_mul_pd(yv, ll));
                let inside = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(_mm512_abs_pd(th), c.normal_t);
                if inside == 0xff {
                    // exp64::parts_tail's bits; its two scalings are
                    // exact for a normal result, as one vscalefpd is.
                    let v = parts.normal_tail(th, tl);
                    _mm512_storeu_pd(r.as_mut_ptr().add(i), v);
                    i += 8;
                    continue;
                }
            }
            for l in i..i + 8 {
                *r.get_unchecked_mut(l) = pow_f64(*x.get_unchecked(l), *y.get_unchecked(l));
            }
        }
        i += 8;
    }
    for l in i..n {
        r[l] = pow_f64(x[l], y[l]);
    }
}

/// [`pow_f64`]'s constants, broadcast once per call.
struct Consts64 {
    min_normal: __m512i,
    normal_span: __m512i,
    magnitude: __m512i,
    inf_bits: __m512i,
    zero: __m512d,
    one: __m512d,
    off: __m512i,
    mask127: __m512i,
    exponent: __m512i,
    ln2_hi: __m512d,
    ln2_lo: __m512d,
    minus_half: __m512d,
    ln_poly: [__m512d; 6],
    normal_t: __m512d,
}

impl Consts64 {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new() -> Self {
        let int = |v: u64| _mm512_set1_epi64(v as i64);
        let f64s = |v: f64| _mm512_set1_pd(v);
        Self {
            min_normal: int(f64::MIN_POSITIVE.to_bits()),
            normal_span: int(f64::MAX.to_bits() - f64::MIN_POSITIVE.to_bits()),
            magnitude: int(0x7fff_ffff_ffff_ffff),
            inf_bits: int(f64::INFINITY.to_bits()),
            zero: f64s(0.0),
            one: f64s(1.0),
            off: int(OFF),
            mask127: int(127),
            exponent: int(0xfff << 52),
            ln2_hi: f64s(LN2_HI),
            ln2_lo: f64s(LN2_LO),
            minus_half: f64s(-0.5),
            ln_poly: [
                -1.0 / 8.0,
                1.0 / 7.0,
                -1.0 / 6.0,
                1.0 / 5.0,
                -1.0 / 4.0,
                1.0 / 3.0,
            ]
            .map(f64s),
            // e^±708 and everything between are normal: pow_f64's two
            // scalings are exact there, as one vscalefpd is.
            normal_t: f64s(708.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::vpow::tests::slices_match;
    use super::super::vpow::{pow_f32, pow_f64};

    /// Each kernel gives its scalar function's bits, over every tail length.
    #[test]
    fn same_bits_as_the_scalar_kernels() {
        if !(std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq"))
        {
            eprintln!("skipped: this CPU has no AVX-512 F and DQ");
            return;
        }
        slices_match(
            // SAFETY: the CPU has AVX-512 F and DQ (checked above).
            |x, y, r| unsafe { super::pow_f32_slice(x, y, r) },
            pow_f32,
            // SAFETY: as above.
            |x, y, r| unsafe { super::pow_f64_slice(x, y, r) },
            pow_f64,
        );
    }
}
