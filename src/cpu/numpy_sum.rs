//! NumPy's pairwise summation of float64 (`pairwise_sum` in its
//! `loops_utils.h`), step for step, so a float64 sum is NumPy's to the bit:
//! leaves of at most 128 elements in 8 accumulators, their lanes added as
//! `((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))`, halves cut at
//! multiples of 8.
//!
//! The tree is written twice: plainly (other CPUs, Miri), and once more in
//! a macro instantiated for AVX2 and for AVX-512, whose three primitives
//! (load 8 elements, add them, total the 8 lanes) are intrinsics: the
//! lanes' total is two shuffles and adds where the compiler's was eight
//! extracts (10^5 elements: 15.6 against 10 us on one thread). Each tree
//! is one recursive function under its instruction set, so its leaves
//! inline (a dispatch per leaf cost a call and a check each); a call
//! covers two levels of the tree, and the two leaves of a node run side
//! by side. Every copy adds the same operands in the same order, so the
//! bits are the same.

use super::parallel::join;
use super::reduce_run::PARALLEL_MIN;

/// NumPy's pairwise sum of `a`; the halves of long runs go to two threads,
/// which changes no rounding.
pub(super) fn numpy_pairwise(a: &[f64]) -> f64 {
    if a.len() >= PARALLEL_MIN {
        let (l, r) = halves(a);
        let (x, y) = join(|| numpy_pairwise(l), || numpy_pairwise(r));
        return x + y;
    }
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // The two leaves of a node add side by side (`PAIR`) on every CPU
        // but AMD's. A leaf's adds are one chain; side by side, float64
        // `sum()` of 10^7 (one Sapphire Rapids thread, torch's memory) took
        // 3.5 ms against 4.7 a leaf at a time (torch 3.9). On Zen 4 the two
        // interleaved streams a KiB apart ran from memory and L3 at half
        // the speed of one (7.3 ms against 3.4; NumPy 3.0), alike from L2.
        let pair = !super::isa::amd();
        if super::isa::avx512() {
            // SAFETY: the CPU has AVX-512 F (checked).
            return unsafe {
                match pair {
                    true => x86::tree512::<true>(a),
                    false => x86::tree512::<false>(a),
                }
            };
        }
        if super::isa::avx2() {
            // SAFETY: the CPU has AVX2 (checked).
            return unsafe {
                match pair {
                    true => x86::tree256::<true>(a),
                    false => x86::tree256::<false>(a),
                }
            };
        }
    }
    tree(a)
}

/// NumPy's cut: the first half rounded down to a multiple of 8.
#[inline(always)]
fn halves(a: &[f64]) -> (&[f64], &[f64]) {
    let n2 = a.len() / 2;
    a.split_at(n2 - n2 % 8)
}

/// The tree of a run below [`PARALLEL_MIN`], on the baseline instruction set.
fn tree(a: &[f64]) -> f64 {
    if a.len() <= 128 {
        return leaf(a);
    }
    let (l, r) = halves(a);
    tree(l) + tree(r)
}

/// A leaf of fewer than 8 elements: added in order from 0.0.
#[inline(always)]
fn short(a: &[f64]) -> f64 {
    a.iter().fold(0.0, |res, &x| res + x)
}

/// A leaf (at most 128 elements), plainly.
fn leaf(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        return short(a);
    }
    let mut r = [0.0f64; 8];
    r.copy_from_slice(&a[..8]);
    let full = n - n % 8;
    for c in a[8..full].chunks_exact(8) {
        for (r, &x) in r.iter_mut().zip(c) {
            *r += x;
        }
    }
    let res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    a[full..].iter().fold(res, |res, &x| res + x)
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod x86 {
    use super::{halves, short};
    use std::arch::x86_64::*;

    /// `tree` (NumPy's tree, [`super::tree`]) under `features`, its leaves'
    /// 8 accumulators an `Acc` that `load` fills from 8 elements, `add`
    /// adds 8 more to and `end` totals as NumPy does. A node two levels
    /// down (`node`) is inlined (a call per node cost as much as the adds
    /// of its leaf), and with `PAIR` the two leaves of a node (`pair`) add
    /// side by side (see [`super::numpy_pairwise`]).
    macro_rules! tree {
        ($(#[$m:meta])* $tree:ident, $node:ident, $leaf:ident, $pair:ident, $features:literal,
         $acc:ty, $load:ident, $add:ident, $end:ident) => {
            $(#[$m])*
            #[target_feature(enable = $features)]
            pub(super) unsafe fn $tree<const PAIR: bool>(a: &[f64]) -> f64 {
                if a.len() <= 128 {
                    return $leaf(a);
                }
                let (l, r) = halves(a);
                if PAIR && l.len() >= 8 && r.len() >= 8 && r.len() <= 128 {
                    return $pair(l, r);
                }
                $node::<PAIR>(l) + $node::<PAIR>(r)
            }

            /// A child's subtree, as the tree's.
            #[inline]
            #[target_feature(enable = $features)]
            fn $node<const PAIR: bool>(a: &[f64]) -> f64 {
                if a.len() <= 128 {
                    return $leaf(a);
                }
                let (l, r) = halves(a);
                // SAFETY: this function's features are the tree's.
                unsafe { $tree::<PAIR>(l) + $tree::<PAIR>(r) }
            }

            /// [`super::leaf`] (at most 128 elements).
            #[inline]
            #[target_feature(enable = $features)]
            fn $leaf(a: &[f64]) -> f64 {
                if a.len() < 8 {
                    return short(a);
                }
                let full = a.len() - a.len() % 8;
                let mut r: $acc = $load(&a[..8]);
                for c in a[8..full].chunks_exact(8) {
                    r = $add(r, $load(c));
                }
                $end(r, &a[full..])
            }

            /// Two leaves of 8 to 128 elements, their chains of adds side by
            /// side.
            #[inline]
            #[target_feature(enable = $features)]
            fn $pair(a: &[f64], b: &[f64]) -> f64 {
                let (fa, fb) = (a.len() - a.len() % 8, b.len() - b.len() % 8);
                let (mut ra, mut rb): ($acc, $acc) = ($load(&a[..8]), $load(&b[..8]));
                let both = fa.min(fb);
                for (x, y) in a[8..both].chunks_exact(8).zip(b[8..both].chunks_exact(8)) {
                    ra = $add(ra, $load(x));
                    rb = $add(rb, $load(y));
                }
                for x in a[both..fa].chunks_exact(8) {
                    ra = $add(ra, $load(x));
                }
                for y in b[both..fb].chunks_exact(8) {
                    rb = $add(rb, $load(y));
                }
                $end(ra, &a[fa..]) + $end(rb, &b[fb..])
            }
        };
    }

    tree!(
        /// [`super::tree`] with AVX-512 leaves: the 8 accumulators are one
        /// 512-bit register.
        ///
        /// # Safety
        /// The CPU has AVX-512 F and AVX2.
        tree512, node512, leaf512, pair512, "avx512f,avx2", __m512d, load512, add512, end512
    );
    tree!(
        /// [`super::tree`] with AVX2 leaves: the 8 accumulators are two
        /// 256-bit registers.
        ///
        /// # Safety
        /// The CPU has AVX2.
        tree256, node256, leaf256, pair256, "avx2", [__m256d; 2], load256, add256, end256
    );

    /// 8 elements (the slice's first) in one register.
    #[inline]
    #[target_feature(enable = "avx512f,avx2")]
    fn load512(c: &[f64]) -> __m512d {
        assert!(c.len() >= 8);
        // SAFETY: 8 elements, checked.
        unsafe { _mm512_loadu_pd(c.as_ptr()) }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx2")]
    fn add512(r: __m512d, x: __m512d) -> __m512d {
        _mm512_add_pd(r, x)
    }

    /// A leaf's total: its 8 accumulators as NumPy adds them, then its
    /// tail in order.
    #[inline]
    #[target_feature(enable = "avx512f,avx2")]
    fn end512(r: __m512d, tail: &[f64]) -> f64 {
        // Lanes 0, 2, 4, 6: r0 + r1, r2 + r3, r4 + r5, r6 + r7.
        let t = _mm512_add_pd(r, _mm512_permute_pd::<0b0101_0101>(r));
        // Lanes 0 and 4: (r0 + r1) + (r2 + r3), (r4 + r5) + (r6 + r7).
        let u = _mm512_add_pd(t, _mm512_permutex_pd::<0b0100_1110>(t));
        let res = _mm512_cvtsd_f64(u) + _mm256_cvtsd_f64(_mm512_extractf64x4_pd::<1>(u));
        tail.iter().fold(res, |res, &x| res + x)
    }

    /// [`load512`] into two 256-bit registers.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn load256(c: &[f64]) -> [__m256d; 2] {
        assert!(c.len() >= 8);
        // SAFETY: 8 elements, checked.
        unsafe {
            [
                _mm256_loadu_pd(c.as_ptr()),
                _mm256_loadu_pd(c.as_ptr().add(4)),
            ]
        }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn add256(r: [__m256d; 2], x: [__m256d; 2]) -> [__m256d; 2] {
        [_mm256_add_pd(r[0], x[0]), _mm256_add_pd(r[1], x[1])]
    }

    /// [`end512`] for two 256-bit registers.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn end256(r: [__m256d; 2], tail: &[f64]) -> f64 {
        // (x0 + x1) + (x2 + x3) of one register.
        let half = |x: __m256d| {
            let t = _mm256_add_pd(x, _mm256_permute_pd::<0b0101>(x));
            _mm256_cvtsd_f64(t) + _mm_cvtsd_f64(_mm256_extractf128_pd::<1>(t))
        };
        let res = half(r[0]) + half(r[1]);
        tail.iter().fold(res, |res, &x| res + x)
    }

    /// The trees this CPU runs, by name.
    #[cfg(test)]
    pub(super) fn trees() -> Vec<(&'static str, super::tests::Tree)> {
        let mut trees: Vec<(&'static str, super::tests::Tree)> = vec![];
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked).
            trees.push(("avx2", |a| unsafe { tree256::<true>(a) }));
            // SAFETY: as above.
            trees.push(("avx2 by leaf", |a| unsafe { tree256::<false>(a) }));
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512 F (checked; it implies AVX2).
            trees.push(("avx512", |a| unsafe { tree512::<true>(a) }));
            // SAFETY: as above.
            trees.push(("avx512 by leaf", |a| unsafe { tree512::<false>(a) }));
        }
        trees
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pairwise tree of one instruction set.
    pub(super) type Tree = fn(&[f64]) -> f64;

    /// NumPy's `pairwise_sum`, transcribed plainly (one leaf at a time).
    fn reference(a: &[f64]) -> f64 {
        let n = a.len();
        if n < 8 {
            return a.iter().fold(0.0, |s, &x| s + x);
        }
        if n <= 128 {
            let mut r = [0.0; 8];
            r.copy_from_slice(&a[..8]);
            let mut i = 8;
            while i + 8 <= n {
                for j in 0..8 {
                    r[j] += a[i + j];
                }
                i += 8;
            }
            let res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            return a[i..].iter().fold(res, |s, &x| s + x);
        }
        let n2 = n / 2;
        let n2 = n2 - n2 % 8;
        reference(&a[..n2]) + reference(&a[n2..])
    }

    #[test]
    fn numpy_pairwise_keeps_numpys_bits_at_every_length() {
        // Values of every magnitude and sign, so that a changed order shows.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let data: Vec<f64> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let m = (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                m * 2f64.powi((x % 60) as i32 - 30)
            })
            .collect();
        let lengths = if cfg!(miri) {
            vec![0, 7, 129, 300, 520]
        } else {
            (0..5000).collect()
        };
        #[allow(unused_mut)]
        let mut trees: Vec<(&str, Tree)> = vec![("baseline", tree)];
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        trees.extend(x86::trees());
        for n in lengths {
            let want = reference(&data[..n]);
            let got = numpy_pairwise(&data[..n]);
            assert_eq!(got.to_bits(), want.to_bits(), "length {n}");
            for (isa, tree) in &trees {
                assert_eq!(
                    tree(&data[..n]).to_bits(),
                    want.to_bits(),
                    "{isa}, length {n}"
                );
            }
        }
    }
}
