//! Reduction kernels over one contiguous run (and over one row of columns),
//! per element type: the loops `reduce.rs` drives. The order each type sums
//! a run in lives in `sum_lanes.rs`: float64 is NumPy's pairwise summation
//! to the bit; float32, float16 and bfloat16 add in float32 lanes flushed to
//! float64 every [`F32_ADDS`] chunks (within NumPy's pairwise error bound, at
//! nearly torch's cost); integers and bools sum in wrapping int64, complex
//! numbers in complex128 lanes over leaves of [`LEAF`] added pairwise.
//! float16 and bfloat16 are widened to float32 in the loop (F16C where the
//! CPU has it: `narrow/`).

use super::arith::Arith;
use super::extreme::{
    better_of, extreme_bits, extreme_lanes, extreme_ord, extreme_row_generic, extreme_rows_bits,
    extreme_scalar, extreme_values_row, float_winner_rows, replaces,
};
use super::narrow::{CHUNK, Each, NarrowSlice, ToF32, with_widened};
use super::numpy_sum::numpy_pairwise;
use super::parallel::join;
use super::sum_lanes::{F32_ADDS, lanes_f32, lanes_f64, lanes_i64};
use crate::Scalar;
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

/// Elements per pairwise leaf.
pub(crate) const LEAF: usize = 1024;
/// Independent accumulators of a long leaf: each adds 16 of its elements.
pub(super) const LANES: usize = 64;
/// Work (elements) past which a reduction splits across threads, and the
/// length from which one run is summed in two halves on two threads
/// (measured on 2 cores, the caller taking part: sum of 2^17 float32 took
/// 0.96 of one thread's time split once at 2^17 and 0.52 at 2^18; lowered
/// from 2^17 to 2^16 for single runs).
pub(crate) const PARALLEL_MIN: usize = 1 << 16;

/// An accumulator: float64, wrapping int64 or complex128.
pub(crate) trait Acc: Copy + Send + Sync {
    const ZERO: Self;
    fn plus(self, other: Self) -> Self;
    fn scalar(self) -> Scalar;
    /// The accumulators as float64s, where they are (for a vectorised cast
    /// of a batch of sums to the output dtype).
    fn as_f64s(sums: &[Self]) -> Option<&[f64]> {
        let _ = sums;
        None
    }
}

impl Acc for f64 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        self + other
    }
    fn scalar(self) -> Scalar {
        Scalar::Float(self)
    }
    fn as_f64s(sums: &[Self]) -> Option<&[f64]> {
        Some(sums)
    }
}

impl Acc for i64 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
    fn scalar(self) -> Scalar {
        Scalar::Int(self as i128)
    }
}

impl Acc for Complex64 {
    const ZERO: Self = Complex64::new(0.0, 0.0);
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        self + other
    }
    fn scalar(self) -> Scalar {
        Scalar::Complex(self.re, self.im)
    }
}

/// Partial sums combined pairwise as they arrive (a binary counter), so a
/// long sequence of runs or chunks keeps the `log n` error of one run.
pub(crate) struct Pairwise<A> {
    levels: Vec<(u32, A)>,
}

impl<A: Acc> Pairwise<A> {
    pub(crate) fn new() -> Self {
        Pairwise { levels: Vec::new() }
    }

    pub(crate) fn push(&mut self, mut a: A) {
        let mut level = 0;
        while let Some(&(l, b)) = self.levels.last() {
            if l != level {
                break;
            }
            self.levels.pop();
            a = b.plus(a);
            level += 1;
        }
        self.levels.push((level, a));
    }

    pub(crate) fn total(&self) -> A {
        self.levels
            .iter()
            .rev()
            .fold(A::ZERO, |acc, &(_, a)| a.plus(acc))
    }
}

/// The kernels of one element type.
pub(crate) trait Kernel: Arith {
    type A: Acc;
    /// Whether the AVX-512 copies of the sum kernels run where the CPU has
    /// them: not for integers, whose int64 lanes ran 2x slower there than in
    /// the AVX2 copies (measured by `bench_ops.py`). The extremes always may.
    #[cfg_attr(miri, allow(dead_code))] // Miri runs the baseline copies only
    const AVX512: bool = true;
    /// The sum of at most [`LEAF`] elements (of any number, for the
    /// types summed in float32 lanes).
    fn leaf_sum(xs: &[Self]) -> Self::A;
    /// `out[i]` = the sum of `runs[i]`, each shorter than [`SHORT_RUN`].
    #[inline(always)]
    fn short_sums(runs: &[&[Self]], out: &mut [Self::A]) {
        for (o, xs) in out.iter_mut().zip(runs) {
            *o = Self::leaf_sum(xs);
        }
    }
    /// The pairwise sum of a run of any length.
    fn pairwise(xs: &[Self]) -> Self::A {
        lanes_pairwise(xs)
    }
    /// `acc[j] += row[j]` for every column.
    fn add_row(acc: &mut [Self::A], row: &[Self]);
    /// `acc[j] += r0[j]`, then `acc[j] += r1[j]`: the same additions in the
    /// same order as two [`add_row`](Self::add_row)s, with half the loads
    /// and stores of the accumulators (which bound that loop).
    #[inline(always)]
    fn add_rows2(acc: &mut [Self::A], r0: &[Self], r1: &[Self]) {
        Self::add_row(acc, r0);
        Self::add_row(acc, r1);
    }
    /// The largest (or smallest) value of a non-empty run and its first
    /// position; the first NaN wins outright. The position may be
    /// `usize::MAX` when `need_pos` is false.
    #[inline(always)]
    fn extreme(xs: &[Self], max: bool, need_pos: bool) -> (Self, usize) {
        let _ = need_pos;
        extreme_scalar(xs, max)
    }
    /// Per-column running winners updated with row `r`; `at` (the rows
    /// they came from) is empty when no positions are wanted.
    #[inline(always)]
    fn extreme_row(best: &mut [Self], at: &mut [i64], row: &[Self], r: i64, max: bool) {
        if at.is_empty() {
            extreme_values_row(best, row, max)
        } else {
            extreme_row_generic(best, at, row, r, max)
        }
    }
    /// `acc[j] += rows[r * stride + j]` for `r` in `0..count`, row after
    /// row (the additions of [`add_row`](Self::add_row), in the same order;
    /// float32, float16 and bfloat16 add 8 rows in float32 first, so rows
    /// reached through several reduced dimensions, which go through
    /// `add_row`, add in float64 one by one).
    #[inline(always)]
    fn add_rows(acc: &mut [Self::A], rows: &[Self], stride: usize, count: usize) {
        add_rows_in_registers(acc, rows, stride, count)
    }
    /// The running winners `best[j]` (values only) updated with
    /// `rows[r * stride + j]` for `r` in `0..count`, as
    /// [`extreme_row`](Self::extreme_row) row by row.
    #[inline(always)]
    fn extreme_rows(best: &mut [Self], rows: &[Self], stride: usize, count: usize, max: bool) {
        extreme_rows_in_registers(best, rows, stride, count, max)
    }
}

/// Columns whose accumulators or winners stay in registers while every row
/// passes ([`Kernel::add_rows`], [`Kernel::extreme_rows`]); narrower blocks
/// take the rest, so a short row is no slower than a long one.
const COLUMNS: [usize; 3] = [64, 16, 4];

/// Row `r` of `rows`, `stride` elements apart, from `c0` for `n` columns.
#[inline(always)]
fn row_part<T>(rows: &[T], stride: usize, r: usize, c0: usize, n: usize) -> &[T] {
    &rows[r * stride + c0..][..n]
}

/// Calls `f(c0, block)` for `values` cut into blocks of [`COLUMNS`] as
/// fixed-size arrays (copied in and back out, so the compiler keeps them in
/// registers), then for the last few columns as one slice.
#[inline(always)]
fn in_column_blocks<V: Copy>(values: &mut [V], mut f: impl FnMut(usize, &mut [V])) {
    let mut c0 = 0;
    macro_rules! blocks {
        ($width:expr) => {
            while values.len() - c0 >= $width {
                let part: &mut [V; $width] =
                    (&mut values[c0..c0 + $width]).try_into().expect("width");
                let mut block = *part;
                f(c0, &mut block);
                *part = block;
                c0 += $width;
            }
        };
    }
    blocks!(COLUMNS[0]);
    blocks!(COLUMNS[1]);
    blocks!(COLUMNS[2]);
    if c0 < values.len() {
        f(c0, &mut values[c0..]);
    }
}

/// [`Kernel::add_rows`] a block of columns at a time, so the accumulators
/// are loaded and stored once, not once per row (a short column sum ran
/// twice as fast).
#[inline(always)]
fn add_rows_in_registers<T: Kernel>(acc: &mut [T::A], rows: &[T], stride: usize, count: usize) {
    in_column_blocks(acc, |c0, block| {
        let n = block.len();
        (0..count).for_each(|r| T::add_row(block, row_part(rows, stride, r, c0, n)));
    });
}

/// [`Kernel::add_rows`] for float32, float16 and bfloat16 (`w` widens
/// them): a block of [`COLUMNS`] at a time in registers, the last few
/// columns one by one; each column's rows added in float32 [`F32_ADDS`] at
/// a time, then into its float64 accumulator (every row in float64 cost
/// 1.5-3x torch's column sums; float16 widened through a buffer a row for
/// the columns past a chunk, 1.8x).
#[inline(always)]
fn add_rows_f32<X: Copy>(
    acc: &mut [f64],
    rows: &[X],
    stride: usize,
    count: usize,
    w: impl ToF32<X>,
) {
    // `in_column_blocks`' blocks, each width a constant here: through its
    // closure, which takes a slice, the widths were lost and float16's
    // column sums ran 3x slower.
    let mut c0 = 0;
    macro_rules! blocks {
        ($width:expr) => {
            while acc.len() - c0 >= $width {
                let part: &mut [f64; $width] =
                    (&mut acc[c0..c0 + $width]).try_into().expect("width");
                let mut block = *part;
                add_rows_block(&mut block, rows, stride, c0, count, w);
                *part = block;
                c0 += $width;
            }
        };
    }
    blocks!(COLUMNS[0]);
    blocks!(COLUMNS[1]);
    blocks!(COLUMNS[2]);
    blocks!(1);
}

/// [`add_rows_f32`] for the `N` columns from `c0`, in registers.
#[inline(always)]
fn add_rows_block<const N: usize, X: Copy>(
    acc: &mut [f64; N],
    rows: &[X],
    stride: usize,
    c0: usize,
    count: usize,
    w: impl ToF32<X>,
) {
    for r0 in (0..count).step_by(F32_ADDS) {
        let mut sums = [0f32; N];
        for r in r0..count.min(r0 + F32_ADDS) {
            let row: [X; N] = row_part(rows, stride, r, c0, N).try_into().expect("width");
            let values = if N < 4 {
                std::array::from_fn(|j| w.one(row[j]))
            } else {
                w.chunk(row)
            };
            sums.iter_mut().zip(values).for_each(|(s, x)| *s += x);
        }
        acc.iter_mut()
            .zip(sums)
            .for_each(|(a, s)| *a += f64::from(s));
    }
}

/// [`Kernel::extreme_rows`] a block of columns at a time, the winners in
/// registers.
#[inline(always)]
fn extreme_rows_in_registers<T: Kernel>(
    best: &mut [T],
    rows: &[T],
    stride: usize,
    count: usize,
    max: bool,
) {
    in_column_blocks(best, |c0, block| {
        let n = block.len();
        (0..count)
            .for_each(|r| T::extreme_row(block, &mut [], row_part(rows, stride, r, c0, n), 0, max));
    });
}

super::isa::twin! {
    /// [`Kernel::leaf_sum`] for the CPU's instruction set.
    pub(crate) fn leaf_sum[T: Kernel](xs: &[T]) -> T::A => T::leaf_sum, avx512 if T::AVX512;
}
super::isa::twin! {
    /// [`Kernel::add_row`] for the CPU's instruction set.
    pub(crate) fn add_row[T: Kernel](acc: &mut [T::A], row: &[T]) => T::add_row, avx512 if T::AVX512;
}
super::isa::twin! {
    /// [`Kernel::add_rows2`] for the CPU's instruction set.
    pub(crate) fn add_rows2[T: Kernel](acc: &mut [T::A], r0: &[T], r1: &[T]) => T::add_rows2, avx512 if T::AVX512;
}
super::isa::twin! {
    /// [`Kernel::extreme`] for the CPU's instruction set.
    pub(crate) fn extreme[T: Kernel](xs: &[T], max: bool, need_pos: bool) -> (T, usize) => T::extreme;
}
super::isa::twin! {
    /// [`Kernel::extreme_row`] for the CPU's instruction set.
    pub(crate) fn extreme_row[T: Kernel](best: &mut [T], at: &mut [i64], row: &[T], r: i64, max: bool) => T::extreme_row;
}
/// Runs shorter than this are summed a batch a call ([`leaf_sums`]).
pub(crate) const SHORT_RUN: usize = 4 * LANES;

super::isa::twin! {
    /// The sums of runs shorter than [`SHORT_RUN`], one call for a batch of
    /// them (a call per short run cost as much as its sum). Longer runs
    /// stay a call each: inlined into this loop, their 64 lanes were kept
    /// in memory.
    pub(crate) fn leaf_sums[T: Kernel](runs: &[&[T]], out: &mut [T::A]) => leaf_sums_body, avx512 if T::AVX512;
}

#[inline(always)]
fn leaf_sums_body<T: Kernel>(runs: &[&[T]], out: &mut [T::A]) {
    T::short_sums(runs, out)
}

super::isa::twin! {
    /// The winners (and, when asked, first positions) of runs shorter than
    /// [`SHORT_RUN`], one call for a batch, as [`leaf_sums`]: a call per
    /// short run, and its dispatch, cost twice its scan (`amax(dim=2)` on
    /// 40x20x40 int32).
    pub(crate) fn short_extremes[T: Kernel](runs: &[&[T]], max: bool, need_pos: bool, values: &mut [T], at: &mut [i64]) => short_extremes_body;
}

#[inline(always)]
fn short_extremes_body<T: Kernel>(
    runs: &[&[T]],
    max: bool,
    need_pos: bool,
    values: &mut [T],
    at: &mut [i64],
) {
    for ((xs, v), a) in runs.iter().zip(values).zip(at) {
        let (b, p) = T::extreme(xs, max, need_pos);
        // A position not asked for is never read.
        (*v, *a) = (b, p.min(xs.len()) as i64);
    }
}

/// The pairwise sum of a contiguous run, split across threads when long.
pub(crate) fn sum_run<T: Kernel>(xs: &[T]) -> T::A {
    T::pairwise(xs)
}

/// Leaves of [`LEAF`] elements in lanes, halves added.
fn lanes_pairwise<T: Kernel>(xs: &[T]) -> T::A {
    if xs.len() <= LEAF {
        return leaf_sum(xs);
    }
    let mid = (xs.len() / LEAF / 2).max(1) * LEAF;
    let (l, r) = xs.split_at(mid);
    if xs.len() >= PARALLEL_MIN {
        let (a, b) = join(|| lanes_pairwise::<T>(l), || lanes_pairwise::<T>(r));
        a.plus(b)
    } else {
        lanes_pairwise::<T>(l).plus(lanes_pairwise::<T>(r))
    }
}

/// [`Kernel::extreme`] split across threads when the run is long.
pub(crate) fn extreme_run<T: Kernel>(xs: &[T], max: bool, need_pos: bool) -> (T, usize) {
    if xs.len() < PARALLEL_MIN {
        return extreme(xs, max, need_pos);
    }
    let mid = xs.len() / 2;
    let (l, r) = xs.split_at(mid);
    let (a, b) = join(
        || extreme_run(l, max, need_pos),
        || extreme_run(r, max, need_pos),
    );
    // A position the kernel did not look for stays unknown.
    let b = (b.0, if b.1 == usize::MAX { b.1 } else { b.1 + mid });
    better_of(a, b, max)
}

/// [`Kernel::pairwise`] of the types summed in float32 lanes: a run in one
/// pass of lanes (their float64 lanes take a long run's growth), halves on
/// two threads past [`PARALLEL_MIN`], cut at a length that depends on the
/// run only, so the bits do not depend on the threads.
fn f32_halves<T: Kernel>(xs: &[T]) -> T::A {
    if xs.len() < PARALLEL_MIN {
        return leaf_sum(xs);
    }
    let mid = xs.len() / 2 / (F32_ADDS * LANES) * (F32_ADDS * LANES);
    let (l, r) = xs.split_at(mid);
    let (a, b) = join(|| f32_halves::<T>(l), || f32_halves::<T>(r));
    a.plus(b)
}

macro_rules! int_kernel {
    ($($t:ty),*) => {$(
        impl Kernel for $t {
            type A = i64;
            const AVX512: bool = false;
            #[inline(always)]
            fn leaf_sum(xs: &[Self]) -> i64 {
                lanes_i64(xs, |x| x as i64)
            }
            #[inline(always)]
            fn add_row(acc: &mut [i64], row: &[Self]) {
                for (a, &x) in acc.iter_mut().zip(row) {
                    *a = a.wrapping_add(x as i64);
                }
            }
            #[inline(always)]
            fn add_rows2(acc: &mut [i64], r0: &[Self], r1: &[Self]) {
                for ((a, &x), &y) in acc.iter_mut().zip(r0).zip(r1) {
                    *a = a.wrapping_add(x as i64).wrapping_add(y as i64);
                }
            }
            #[inline(always)]
            fn extreme(xs: &[Self], max: bool, need_pos: bool) -> (Self, usize) {
                extreme_ord(xs, max, need_pos)
            }
        }
    )*};
}
int_kernel!(u8, i8, i16, u16, i32, u32, i64, u64);

impl Kernel for bool {
    type A = i64;
    const AVX512: bool = false;
    #[inline(always)]
    fn leaf_sum(xs: &[Self]) -> i64 {
        lanes_i64(xs, |x| x as i64)
    }
    #[inline(always)]
    fn add_row(acc: &mut [i64], row: &[Self]) {
        for (a, &x) in acc.iter_mut().zip(row) {
            *a += x as i64;
        }
    }
    /// The first `max` (true for `max`/`any`, false for `min`/`all`)
    /// settles it: blocks of 64 folded with `|` (vectorized), then the
    /// position within the block that has one. Element by element, 10^5
    /// bools took 55 µs (torch's `any` 51).
    #[inline(always)]
    fn extreme(xs: &[Self], max: bool, need_pos: bool) -> (Self, usize) {
        let _ = need_pos;
        for (k, block) in xs.chunks(64).enumerate() {
            if block.iter().fold(false, |hit, &x| hit | (x == max)) {
                let at = block.iter().position(|&x| x == max).unwrap_or(0);
                return (max, k * 64 + at);
            }
        }
        (!max, 0)
    }
}

impl Kernel for f32 {
    type A = f64;
    #[inline(always)]
    fn leaf_sum(xs: &[Self]) -> f64 {
        lanes_f32(xs, Each(|x| x))
    }
    fn pairwise(xs: &[Self]) -> f64 {
        f32_halves(xs)
    }
    #[inline(always)]
    fn add_row(acc: &mut [f64], row: &[Self]) {
        for (a, &x) in acc.iter_mut().zip(row) {
            *a += x as f64;
        }
    }
    #[inline(always)]
    fn add_rows2(acc: &mut [f64], r0: &[Self], r1: &[Self]) {
        for ((a, &x), &y) in acc.iter_mut().zip(r0).zip(r1) {
            *a = *a + x as f64 + y as f64;
        }
    }
    #[inline(always)]
    fn add_rows(acc: &mut [f64], rows: &[Self], stride: usize, count: usize) {
        add_rows_f32(acc, rows, stride, count, Each(|x| x))
    }
    #[inline(always)]
    fn extreme(xs: &[Self], max: bool, need_pos: bool) -> (Self, usize) {
        extreme_lanes(xs, max, need_pos)
    }
    #[inline(always)]
    fn extreme_rows(best: &mut [Self], rows: &[Self], stride: usize, count: usize, max: bool) {
        float_winner_rows(best, rows, stride, count, max)
    }
}

impl Kernel for f64 {
    type A = f64;
    #[inline(always)]
    fn leaf_sum(xs: &[Self]) -> f64 {
        Self::pairwise(xs)
    }
    fn pairwise(xs: &[Self]) -> f64 {
        // NumPy's order, kept for its accuracy: the 64 lanes of the other
        // types ran 2.5x faster here but erred up to 6x more than NumPy on
        // adversarial data (`test_reduce_layouts.py`). NumPy adds the total
        // to its identity, 0.0, so -0.0 sums to 0.0.
        0.0 + numpy_pairwise(xs)
    }
    #[inline(always)]
    fn add_row(acc: &mut [f64], row: &[Self]) {
        for (a, &x) in acc.iter_mut().zip(row) {
            *a += x;
        }
    }
    #[inline(always)]
    fn add_rows2(acc: &mut [f64], r0: &[Self], r1: &[Self]) {
        for ((a, &x), &y) in acc.iter_mut().zip(r0).zip(r1) {
            *a = *a + x + y;
        }
    }
    #[inline(always)]
    fn extreme(xs: &[Self], max: bool, need_pos: bool) -> (Self, usize) {
        extreme_lanes(xs, max, need_pos)
    }
    #[inline(always)]
    fn extreme_rows(best: &mut [Self], rows: &[Self], stride: usize, count: usize, max: bool) {
        float_winner_rows(best, rows, stride, count, max)
    }
}

/// Columns of a float16/bfloat16 row widened at a time for winners with
/// positions (a long row).
const HALF_BLOCK: usize = 256;

// A leaf's chunk of float16/bfloat16 fills its float32 lanes.
const _: () = assert!(CHUNK == LANES);

/// float16/bfloat16 elements whose winner [`extreme_bits`] finds a call.
const BITS_BLOCK: usize = 4096;

/// Columns of a float16/bfloat16 row widened at a time when adding rows
/// (a short row zeroes a short buffer).
const ROW_BLOCK: usize = 64;

/// [`Kernel::extreme_row`] for float16/bfloat16 through float32 buffers of
/// `N` columns.
#[inline(always)]
fn widened_extreme_row<T: NarrowSlice, const N: usize>(
    best: &mut [T],
    at: &mut [i64],
    row: &[T],
    r: i64,
    max: bool,
) {
    // Both widened to float32 (exact) and compared there; the
    // winners are copied as they were (a select per column).
    let (mut b32, mut x32) = ([0f32; N], [0f32; N]);
    let take = |b: f32, x: f32| replaces(b, x, max);
    for (k, (best, row)) in best.chunks_mut(N).zip(row.chunks(N)).enumerate() {
        let n = row.len();
        let (b32, x32) = (&mut b32[..n], &mut x32[..n]);
        T::widen(best, b32);
        T::widen(row, x32);
        let pairs = best.iter_mut().zip(row).zip(b32.iter().zip(x32.iter()));
        if at.is_empty() {
            for ((o, &x), (&b, &x32)) in pairs {
                *o = if take(b, x32) { x } else { *o };
            }
        } else {
            for (((o, &x), (&b, &x32)), i) in pairs.zip(&mut at[k * N..k * N + n]) {
                let t = take(b, x32);
                *o = if t { x } else { *o };
                *i = if t { r } else { *i };
            }
        }
    }
}

/// float16 and bfloat16: widened to float32 a block at a time.
macro_rules! half_kernel {
    ($($t:ty),*) => {$(
        impl Kernel for $t {
            type A = f64;
            #[inline(always)]
            fn leaf_sum(xs: &[Self]) -> f64 {
                // Widened in the loop, a chunk of lanes at a time.
                with_widened!(Self, |w| lanes_f32(xs, w))
            }
            fn pairwise(xs: &[Self]) -> f64 {
                f32_halves(xs)
            }
            #[inline(always)]
            fn short_sums(runs: &[&[Self]], out: &mut [f64]) {
                with_widened!(Self, |w| {
                    for (o, xs) in out.iter_mut().zip(runs) {
                        *o = lanes_f32(xs, w);
                    }
                })
            }
            #[inline(always)]
            fn add_row(acc: &mut [f64], row: &[Self]) {
                let mut buf = [0f32; ROW_BLOCK];
                for (acc, row) in acc.chunks_mut(ROW_BLOCK).zip(row.chunks(ROW_BLOCK)) {
                    let buf = &mut buf[..row.len()];
                    <$t as NarrowSlice>::widen(row, buf);
                    for (a, &x) in acc.iter_mut().zip(buf.iter()) {
                        *a += x as f64;
                    }
                }
            }
            // Sums add rows in float32 sums of chunks in registers
            // (`add_rows_f32`); winners down rows go by order keys in
            // registers (`extreme_rows_bits`).
            #[inline(always)]
            fn add_rows(acc: &mut [f64], rows: &[Self], stride: usize, count: usize) {
                with_widened!(Self, |w| add_rows_f32(acc, rows, stride, count, w))
            }
            #[inline(always)]
            fn extreme_rows(best: &mut [Self], rows: &[Self], stride: usize, count: usize, max: bool) {
                extreme_rows_bits(best, rows, stride, count, max);
            }
            #[inline(always)]
            fn add_rows2(acc: &mut [f64], r0: &[Self], r1: &[Self]) {
                let (mut b0, mut b1) = ([0f32; ROW_BLOCK], [0f32; ROW_BLOCK]);
                let rows = r0.chunks(ROW_BLOCK).zip(r1.chunks(ROW_BLOCK));
                for (acc, (r0, r1)) in acc.chunks_mut(ROW_BLOCK).zip(rows) {
                    let (b0, b1) = (&mut b0[..r0.len()], &mut b1[..r1.len()]);
                    <$t as NarrowSlice>::widen(r0, b0);
                    <$t as NarrowSlice>::widen(r1, b1);
                    for ((a, &x), &y) in acc.iter_mut().zip(b0.iter()).zip(b1.iter()) {
                        *a = *a + x as f64 + y as f64;
                    }
                }
            }
            #[inline(always)]
            fn extreme(xs: &[Self], max: bool, need_pos: bool) -> (Self, usize) {
                // By the bits, a block at a time (a position's scan finds
                // its block still in cache).
                let mut best: Option<(Self, usize)> = None;
                for (k, chunk) in xs.chunks(BITS_BLOCK).enumerate() {
                    let (b, at) = extreme_bits(chunk, max, need_pos);
                    let at = if at == usize::MAX { at } else { k * BITS_BLOCK + at };
                    let cand = (<$t>::from_bits(b), at);
                    if cand.0.is_nan() {
                        // Earlier blocks had none: this is the first NaN.
                        return cand;
                    }
                    best = Some(match best {
                        Some(b) => better_of(b, cand, max),
                        None => cand,
                    });
                }
                best.unwrap_or((xs[0], 0))
            }
            #[inline(always)]
            fn extreme_row(best: &mut [Self], at: &mut [i64], row: &[Self], r: i64, max: bool) {
                // Buffers sized to the row: zeroing two of HALF_BLOCK per
                // call cost more than a 40-column row's compares
                // (`max(dim=1)` 40x20x40).
                if row.len() <= ROW_BLOCK {
                    widened_extreme_row::<Self, ROW_BLOCK>(best, at, row, r, max)
                } else {
                    widened_extreme_row::<Self, HALF_BLOCK>(best, at, row, r, max)
                }
            }
        }
    )*};
}
half_kernel!(f16, bf16);

macro_rules! complex_kernel {
    ($($t:ty),*) => {$(
        impl Kernel for $t {
            type A = Complex64;
            fn leaf_sum(xs: &[Self]) -> Complex64 {
                // The real and imaginary parts each in lanes, as a float's.
                Complex64::new(lanes_f64(xs, |x| x.re as f64), lanes_f64(xs, |x| x.im as f64))
            }
            #[inline(always)]
            fn add_row(acc: &mut [Complex64], row: &[Self]) {
                for (a, x) in acc.iter_mut().zip(row) {
                    *a += Complex64::new(x.re as f64, x.im as f64);
                }
            }
        }
    )*};
}
complex_kernel!(Complex32, Complex64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float32_sums_of_tenths_stay_within_the_lanes_bound() {
        // Long enough to split across threads, shorter under Miri.
        let xs = vec![0.1f32; if cfg!(miri) { 3_001 } else { 1_000_003 }];
        let exact = 0.1f32 as f64 * xs.len() as f64;
        // A float32 lane rounds at most F32_ADDS - 1 times (half an ulp
        // each); float64 adds the rest. One float32 accumulator would err
        // by about 1% here.
        let bound = (F32_ADDS - 1) as f64 * 2f64.powi(-24) * exact * 1.001;
        assert!((sum_run(&xs) - exact).abs() <= bound);
    }

    #[test]
    fn pairwise_counter_matches_a_plain_total() {
        let mut p = Pairwise::new();
        (1..=1000).for_each(|i| p.push(i as i64));
        assert_eq!(p.total(), 500_500);
    }

    #[test]
    fn extremes_take_the_first_winner_and_nan() {
        let xs = [1.0f32, 3.0, -0.0, 3.0, 0.0];
        assert_eq!(f32::extreme(&xs, true, true), (3.0, 1));
        let mut ys = vec![0.5f64; 100];
        ys[70] = f64::NAN;
        ys[90] = f64::NAN;
        assert_eq!(f64::extreme(&ys, false, false).1, 70);
        let zs = [0.0f32, -0.0];
        assert!(f32::extreme(&zs, false, false).0.is_sign_positive());
        let hs: Vec<f16> = (0..1000).map(|i| f16::from_f32((i % 7) as f32)).collect();
        assert_eq!(f16::extreme(&hs, true, true).1, 6);
        assert_eq!(i32::extreme(&[3, 9, 1, 9], true, true), (9, 1));
    }

    /// Runs long enough for the wide lanes (16 to 64 by the CPU and the
    /// dtype, a tail that overlaps the last chunk): a winner, a loser and
    /// a NaN planted at every position are found, with the first
    /// position, by the dispatching copy (AVX2 or AVX-512 where the CPU
    /// has it).
    #[test]
    fn long_run_extremes_find_a_winner_and_a_nan_anywhere() {
        fn check<T: Kernel + std::fmt::Debug>(from: impl Fn(f64) -> T) {
            let lens: &[usize] = if cfg!(miri) {
                &[257]
            } else {
                &[256, 257, 300, 511, 513, 1031]
            };
            for &n in lens {
                let base: Vec<T> = (0..n).map(|i| from((i % 13) as f64 - 6.0)).collect();
                // Under Miri the chunk edges and the tail only (each call is slow there).
                let at: Vec<usize> = if cfg!(miri) {
                    vec![0, 1, 15, 16, 31, 32, 63, 64, 224, 225, 255, 256]
                } else {
                    (0..n).collect()
                };
                for p in at {
                    let mut xs = base.clone();
                    xs[p] = from(100.0);
                    assert_eq!(
                        extreme(&xs, true, true),
                        (from(100.0), p),
                        "max at {p} of {n}"
                    );
                    assert_eq!(extreme(&xs, true, false).0, from(100.0));
                    xs[p] = from(-100.0);
                    assert_eq!(
                        extreme(&xs, false, true),
                        (from(-100.0), p),
                        "min at {p} of {n}"
                    );
                    xs[p] = from(f64::NAN);
                    let (v, at) = extreme(&xs, p % 2 == 0, false);
                    assert!(v.is_nan() && at == p, "NaN at {p} of {n}: {v:?} at {at}");
                }
            }
        }
        check(|v| v as f32);
        check(|v| v);
    }
}
