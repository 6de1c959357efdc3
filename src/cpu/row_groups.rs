//! Column sums and winners down the rows of a tile ([`add_rows`],
//! [`extreme_rows`]), a group of rows at a time.
//!
//! The kernels keep a block of columns in registers while every row passes,
//! one block after another. Over a tall tile, each block's pass read the
//! whole tile from memory again (`sum(dim=0)` float32 2000x2000 took
//! 1.3-1.8x as long); in groups of [`GROUP_BYTES`], every block passes over
//! rows still in L1.

use super::reduce_run::Kernel;
use super::sum_lanes::F32_ADDS;

/// Bytes of rows a group holds: L1's size on Zen 3, where it was measured.
/// Under Miri a quarter of that, so its test of several groups stays small.
const GROUP_BYTES: usize = if cfg!(miri) { 8 << 10 } else { 32 << 10 };

super::isa::twin! {
    /// [`Kernel::add_rows`] for the CPU's instruction set.
    pub(crate) fn add_rows[T: Kernel](acc: &mut [T::A], rows: &[T], stride: usize, count: usize) => add_rows_grouped, avx512 if T::AVX512;
}
super::isa::twin! {
    /// [`Kernel::extreme_rows`] for the CPU's instruction set.
    pub(crate) fn extreme_rows[T: Kernel](best: &mut [T], rows: &[T], stride: usize, count: usize, max: bool) => extreme_rows_grouped;
}

/// The groups of a tile `width` columns of T wide and `count` rows, as
/// (first row, rows): [`GROUP_BYTES`] of rows each, a whole number of
/// [`F32_ADDS`], so float32's column sums, which flush to float64 every
/// `F32_ADDS` rows, add in the same order, to the same bits, as in one
/// pass.
///
/// The kernels are called in the loop over these groups, in the body of
/// each `twin!` copy: called from a closure (compiled once, for the
/// baseline), they ran without AVX2 or AVX-512 (column sums at 1.3-2.8x
/// torch's time on Sapphire Rapids).
#[inline(always)]
fn groups<T>(width: usize, count: usize) -> impl Iterator<Item = (usize, usize)> {
    let g = (GROUP_BYTES / (width * size_of::<T>()).max(1)).max(F32_ADDS) / F32_ADDS * F32_ADDS;
    (0..count).step_by(g).map(move |r0| (r0, g.min(count - r0)))
}

#[inline(always)]
fn add_rows_grouped<T: Kernel>(acc: &mut [T::A], rows: &[T], stride: usize, count: usize) {
    for (r0, n) in groups::<T>(acc.len(), count) {
        T::add_rows(acc, &rows[r0 * stride..], stride, n);
    }
}

#[inline(always)]
fn extreme_rows_grouped<T: Kernel>(
    best: &mut [T],
    rows: &[T],
    stride: usize,
    count: usize,
    max: bool,
) {
    for (r0, n) in groups::<T>(best.len(), count) {
        T::extreme_rows(best, &rows[r0 * stride..], stride, n, max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many groups (256 float32 columns: 32 rows a group, 8 under Miri) give
    /// the bits of one pass; a NaN in a later group, or in the first, still
    /// wins.
    #[test]
    fn groups_keep_the_bits_of_one_pass() {
        let (cols, stride) = (256, 259);
        let count = if cfg!(miri) { 20 } else { 203 };
        let mut rows: Vec<f32> = (0..count * stride)
            .map(|i| ((i * 7919 % 1013) as f32 - 506.0) * 1.37e-3)
            .collect();
        rows[150.min(count - 1) * stride + 5] = f32::NAN;
        rows[3 * stride + 9] = f32::NAN;
        let mut want = vec![0.0f64; cols];
        f32::add_rows(&mut want, &rows, stride, count);
        let mut got = vec![0.0f64; cols];
        add_rows(&mut got, &rows, stride, count);
        // A NaN's sign and payload are not defined (Miri picks them at
        // random): any NaN reads as one value.
        let bits = |v: &[f64]| -> Vec<u64> {
            v.iter()
                .map(|x| if x.is_nan() { 1 } else { x.to_bits() })
                .collect()
        };
        assert_eq!(bits(&got), bits(&want));
        for max in [true, false] {
            let mut want = rows[..cols].to_vec();
            f32::extreme_rows(&mut want, &rows[stride..], stride, count - 1, max);
            let mut got = rows[..cols].to_vec();
            extreme_rows(&mut got, &rows[stride..], stride, count - 1, max);
            assert!(got[9].is_nan() && got[5].is_nan());
            let bits = |v: &[f32]| -> Vec<u32> {
                v.iter()
                    .map(|x| if x.is_nan() { 1 } else { x.to_bits() })
                    .collect()
            };
            assert_eq!(bits(&got), bits(&want));
        }
    }
}
