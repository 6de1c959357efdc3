//! Max and min over runs and rows: the winner rules written once
//! ([`replaces`]: a NaN wins and stays, ties keep the earlier element) and
//! the loops that apply them, as running winners in lanes the compiler
//! vectorises (floats), a plain max/min fold (integers) or order keys on
//! the bits (float16/bfloat16). `reduce_run.rs`'s kernels pick among them.

use super::arith::Arith;
use super::reduce_run::LANES;

/// Of two candidates, the left (earlier) one unless the right one wins:
/// a NaN on the left stays, a NaN on the right wins, ties stay left.
#[inline(always)]
pub(super) fn better_of<T: Arith>(a: (T, usize), b: (T, usize), max: bool) -> (T, usize) {
    if replaces(a.0, b.0, max) { b } else { a }
}

/// Whether a later `x` replaces the running winner `b`: a NaN winner stays,
/// a NaN `x` wins, ties stay with `b` (every row and candidate update).
#[inline(always)]
pub(super) fn replaces<T: Arith>(b: T, x: T, max: bool) -> bool {
    !b.is_nan() && (x.is_nan() || if max { b.less(x) } else { x.less(b) })
}

/// [`replaces`] evaluated whole (`&` and `|`), without branches: blocks of
/// columns held in registers then compare as vectors (with the
/// short-circuits they ran 3x slower; in the run and float16/bfloat16
/// kernels, this form ran up to 6x slower, so they keep [`replaces`]).
#[inline(always)]
fn replaces_branchless<T: Arith>(b: T, x: T, max: bool) -> bool {
    !b.is_nan() & (x.is_nan() | if max { b.less(x) } else { x.less(b) })
}

/// The first winner by a plain scan (any type with `Arith`).
#[inline(always)]
pub(super) fn extreme_scalar<T: Arith>(xs: &[T], max: bool) -> (T, usize) {
    let (mut best, mut at) = (xs[0], 0);
    if best.is_nan() {
        return (best, 0);
    }
    for (i, &x) in xs.iter().enumerate().skip(1) {
        if x.is_nan() {
            return (x, i);
        }
        if if max { best.less(x) } else { x.less(best) } {
            (best, at) = (x, i);
        }
    }
    (best, at)
}

/// Per-column update of running winners with one more row `r` (NaN wins
/// and stays; ties keep the earlier row), two selects per column the
/// compiler vectorises (`max` taken out of the loop): with a branch per
/// column, `max(dim=0)` of 300x300 ran eight times `amax(dim=0)`, as
/// long as torch's.
#[inline(always)]
pub(super) fn extreme_row_generic<T: Arith>(
    best: &mut [T],
    at: &mut [i64],
    row: &[T],
    r: i64,
    max: bool,
) {
    if max {
        positions_row::<T, true>(best, at, row, r)
    } else {
        positions_row::<T, false>(best, at, row, r)
    }
}

/// [`extreme_row_generic`] for one direction.
#[inline(always)]
fn positions_row<T: Arith, const MAX: bool>(best: &mut [T], at: &mut [i64], row: &[T], r: i64) {
    let n = best.len().min(at.len()).min(row.len());
    let (best, at, row) = (&mut best[..n], &mut at[..n], &row[..n]);
    for j in 0..n {
        let (b, x) = (best[j], row[j]);
        let w = replaces_branchless(b, x, MAX);
        best[j] = if w { x } else { b };
        at[j] = if w { r } else { at[j] };
    }
}

/// [`extreme_row_generic`] without positions: a select per column the
/// compiler vectorises (`max` taken out of the loop).
#[inline(always)]
pub(super) fn extreme_values_row<T: Arith>(best: &mut [T], row: &[T], max: bool) {
    if max {
        for (b, &x) in best.iter_mut().zip(row) {
            *b = if replaces_branchless(*b, x, true) {
                x
            } else {
                *b
            };
        }
    } else {
        for (b, &x) in best.iter_mut().zip(row) {
            *b = if replaces_branchless(*b, x, false) {
                x
            } else {
                *b
            };
        }
    }
}

/// [`Kernel::extreme_rows`](super::reduce_run::Kernel::extreme_rows) for
/// float32 and float64: `best[j]` updated with `rows[r * stride + j]` for
/// `r` in `0..count`. Per column a plain max (or min) select, which a NaN
/// never enters, and a running sum of the values, NaN once a NaN passed
/// (or both infinities): two vector instructions a row, where
/// [`replaces_branchless`]' NaN tests took six (`amax(dim=0)` float32
/// 200x100x200 ran 2.3x NumPy's). A column so marked is done again by
/// [`replaces`], so the result is the rule's.
#[inline(always)]
pub(super) fn float_winner_rows<T: Arith>(
    best: &mut [T],
    rows: &[T],
    stride: usize,
    count: usize,
    max: bool,
) {
    let init: smallvec::SmallVec<[T; WINNER_ROWS_INIT]> = smallvec::SmallVec::from_slice(best);
    let mut c0 = 0;
    macro_rules! blocks {
        ($w:expr) => {
            while best.len() - c0 >= $w {
                let part: &mut [T; $w] = (&mut best[c0..c0 + $w]).try_into().expect("width");
                *part = if max {
                    winner_block::<T, true, $w>(*part, rows, stride, count, c0)
                } else {
                    winner_block::<T, false, $w>(*part, rows, stride, count, c0)
                };
                c0 += $w;
            }
        };
    }
    blocks!(32);
    blocks!(8);
    blocks!(1);
    for (j, b) in best.iter_mut().enumerate() {
        if b.is_nan() {
            *b = init[j];
            for r in 0..count {
                let x = rows[r * stride + j];
                if replaces(*b, x, max) {
                    *b = x;
                }
            }
        }
    }
}

/// Columns [`float_winner_rows`] keeps a copy of on the stack (a tile).
const WINNER_ROWS_INIT: usize = 256;

/// `W` columns of [`float_winner_rows`] from `c0`, in registers: the
/// winners, or NaN where a NaN (or both infinities) passed.
#[inline(always)]
fn winner_block<T: Arith, const MAX: bool, const W: usize>(
    mut best: [T; W],
    rows: &[T],
    stride: usize,
    count: usize,
    c0: usize,
) -> [T; W] {
    let mut odd = best.map(|b| b.sub(b));
    for r in 0..count {
        let row: &[T; W] = rows[r * stride + c0..][..W].try_into().expect("width");
        for ((b, o), &x) in best.iter_mut().zip(odd.iter_mut()).zip(row) {
            let wins = if MAX { b.less(x) } else { x.less(*b) };
            *b = if wins { x } else { *b };
            *o = o.add(x);
        }
    }
    for (b, o) in best.iter_mut().zip(odd) {
        if o.is_nan() {
            *b = o;
        }
    }
    best
}

/// The winner of a non-empty run and its first position (`usize::MAX`
/// when not asked for and not needed): lanes of running winners, which a
/// NaN never enters, and a NaN maybe noticed; then a scan for the
/// first NaN, or for the first element equal to the winner when its
/// position (or the sign of a zero) matters.
#[inline(always)]
pub(super) fn extreme_lanes<T: Arith>(xs: &[T], max: bool, need_pos: bool) -> (T, usize) {
    let (b, nan_maybe) = if max {
        winner_lanes_sized::<T, true>(xs)
    } else {
        winner_lanes_sized::<T, false>(xs)
    };
    if nan_maybe && let Some(at) = xs.iter().position(|x| x.is_nan()) {
        return (xs[at], at);
    }
    if !need_pos && b != T::zeroed() {
        return (b, usize::MAX);
    }
    let at = xs.iter().position(|&x| x == b).unwrap_or(0);
    (xs[at], at)
}

/// The winner of a non-empty float16/bfloat16 run, by its bits, without
/// widening: keys that order as the values do
/// (positives with the sign bit set, negatives with every bit flipped), whose
/// max or min vectorises 32 to a vector, and the largest magnitude, above
/// [`HalfBits::INF`] only for a NaN. Then, as [`extreme_lanes`], a scan for the first
/// NaN, or for the winner's first position where that (or a zero's sign)
/// matters: the two zeros have different keys but are equal.
#[inline(always)]
pub(super) fn extreme_bits<T: HalfBits>(xs: &[T], max: bool, need_pos: bool) -> (u16, usize) {
    let (bits, inf) = (T::bits, T::INF);
    let (key, mag) = if max {
        key_lanes::<T, true>(xs)
    } else {
        key_lanes::<T, false>(xs)
    };
    if mag > inf {
        let at = xs.iter().position(|&x| bits(x) & 0x7fff > inf).unwrap_or(0);
        return (bits(xs[at]), at);
    }
    let b = key_bits(key);
    let zero = b & 0x7fff == 0;
    if !need_pos && !zero {
        return (b, usize::MAX);
    }
    let at = xs.iter().position(|&x| {
        if zero {
            bits(x) & 0x7fff == 0
        } else {
            bits(x) == b
        }
    });
    let at = at.unwrap_or(0);
    (bits(xs[at]), at)
}

/// float16 and bfloat16 as their bits.
pub(super) trait HalfBits: Copy {
    /// The bits of +infinity: a larger magnitude is a NaN.
    const INF: u16;
    fn bits(self) -> u16;
    fn from_bits(b: u16) -> Self;
}

macro_rules! half_bits {
    ($($t:ty),*) => {$(
        impl HalfBits for $t {
            const INF: u16 = <$t>::INFINITY.to_bits();
            #[inline(always)]
            fn bits(self) -> u16 { self.to_bits() }
            #[inline(always)]
            fn from_bits(b: u16) -> Self { <$t>::from_bits(b) }
        }
    )*};
}
half_bits!(half::f16, half::bf16);

/// The order key of 16-bit float bits: positives with the sign bit set,
/// negatives with every bit flipped, so keys order as the values do (a NaN
/// sorts beyond an infinity of its sign).
#[inline(always)]
fn order_key(b: u16) -> u16 {
    b ^ ((((b as i16) >> 15) as u16) | 0x8000)
}

/// The bits of an order key.
#[inline(always)]
fn key_bits(key: u16) -> u16 {
    if key & 0x8000 != 0 {
        key ^ 0x8000
    } else {
        !key
    }
}

/// Running float16/bfloat16 winners down rows, values only, as
/// [`extreme_values_row`] row after row but on order keys (as
/// [`extreme_bits`]): a block of columns keeps its keys and largest
/// magnitudes in registers, 32 to a vector, while every row passes (widened
/// to float32 and compared there, a row at a time, `amax(dim=0)` ran 3x
/// torch). A column whose winner is a NaN or a zero (the keys of the two
/// zeros differ, their values do not) is scanned again for the first one.
#[inline(always)]
pub(super) fn extreme_rows_bits<T: HalfBits>(
    best: &mut [T],
    rows: &[T],
    stride: usize,
    count: usize,
    max: bool,
) {
    let n = best.len();
    let mut c0 = 0;
    for w in [64, 16] {
        while n - c0 >= w {
            key_block(&mut best[c0..c0 + w], rows, stride, c0, count, max);
            c0 += w;
        }
    }
    if n >= 16 && c0 < n {
        // The last columns as one more block of 16 that overlaps the last
        // one: a winner taken again from the same rows is the same winner.
        key_block(&mut best[n - 16..], rows, stride, n - 16, count, max);
    } else {
        for c in c0..n {
            key_block(&mut best[c..c + 1], rows, stride, c, count, max);
        }
    }
}

/// [`extreme_rows_bits`] for the columns `best` holds, from `c0`: 64, 16
/// or one. A function, not a closure (and [`key_rows`] indexes its rows
/// itself): a closure the compiler keeps apart is compiled for the
/// baseline, not for the `twin!` copy that calls it.
#[inline(always)]
fn key_block<T: HalfBits>(
    best: &mut [T],
    rows: &[T],
    stride: usize,
    c0: usize,
    count: usize,
    max: bool,
) {
    match (max, best.len()) {
        (true, 64) => key_rows::<T, true, 64>(best, rows, stride, c0, count),
        (false, 64) => key_rows::<T, false, 64>(best, rows, stride, c0, count),
        (true, 16) => key_rows::<T, true, 16>(best, rows, stride, c0, count),
        (false, 16) => key_rows::<T, false, 16>(best, rows, stride, c0, count),
        (true, _) => key_rows::<T, true, 1>(best, rows, stride, c0, count),
        (false, _) => key_rows::<T, false, 1>(best, rows, stride, c0, count),
    }
}

/// [`extreme_rows_bits`] for `W` columns from `c0` (`best` holds them) of
/// `count` rows `stride` elements apart.
#[inline(always)]
fn key_rows<T: HalfBits, const MAX: bool, const W: usize>(
    best: &mut [T],
    rows: &[T],
    stride: usize,
    c0: usize,
    count: usize,
) {
    let (bits, inf) = (T::bits, T::INF);
    let pick = |a: u16, b: u16| if MAX { a.max(b) } else { a.min(b) };
    let (mut k, mut m) = ([0u16; W], [0u16; W]);
    for ((k, m), &b) in k.iter_mut().zip(m.iter_mut()).zip(best.iter()) {
        (*k, *m) = (order_key(bits(b)), bits(b) & 0x7fff);
    }
    for r in 0..count {
        let xs: &[T; W] = rows[r * stride + c0..][..W]
            .try_into()
            .expect("a row of the block");
        for ((k, m), &x) in k.iter_mut().zip(m.iter_mut()).zip(xs) {
            let b = bits(x);
            *k = pick(*k, order_key(b));
            *m = (*m).max(b & 0x7fff);
        }
    }
    for (j, (o, (&k, &m))) in best.iter_mut().zip(k.iter().zip(&m)).enumerate() {
        let b = key_bits(k);
        if m <= inf && b & 0x7fff != 0 {
            *o = T::from_bits(b);
            continue;
        }
        // The first NaN, else the first zero, from the running winner on.
        let first = |hit: &dyn Fn(u16) -> bool| {
            let later = (0..count).map(|r| rows[r * stride + c0 + j]);
            std::iter::once(*o).chain(later).find(|&x| hit(bits(x)))
        };
        *o = if m > inf {
            first(&|b| b & 0x7fff > inf)
        } else {
            first(&|b| b & 0x7fff == 0)
        }
        .unwrap_or(*o);
    }
}

/// The largest (`MAX`) or smallest order key of 16-bit float bits, and the
/// largest magnitude, in 32 lanes of each.
#[inline(always)]
fn key_lanes<T: HalfBits, const MAX: bool>(xs: &[T]) -> (u16, u16) {
    let bits = T::bits;
    const L: usize = 32;
    let start = if MAX { 0 } else { u16::MAX };
    let pick = |a: u16, b: u16| if MAX { a.max(b) } else { a.min(b) };
    let (mut k, mut m) = ([start; L], [0u16; L]);
    let mut chunks = xs.chunks_exact(L);
    for c in &mut chunks {
        for ((k, m), &x) in k.iter_mut().zip(m.iter_mut()).zip(c) {
            let b = bits(x);
            *k = pick(*k, order_key(b));
            *m = (*m).max(b & 0x7fff);
        }
    }
    // The tail as a fold of its own: through one closure shared with the
    // chunks (as `winner_lanes` does), `max()` float16 ran 4.8 -> 5.4 us.
    let tail = chunks.remainder().iter().fold((start, 0u16), |(k, m), &x| {
        let b = bits(x);
        (pick(k, order_key(b)), m.max(b & 0x7fff))
    });
    let k = k.iter().fold(tail.0, |a, &b| pick(a, b));
    let m = m.iter().fold(tail.1, |a, &b| a.max(b));
    (k, m)
}

/// The winner of a non-empty integer run: a max or min reduction (which
/// the loop vectoriser knows), then, if asked, a scan for its position.
#[inline(always)]
pub(super) fn extreme_ord<T: Ord + Copy>(xs: &[T], max: bool, need_pos: bool) -> (T, usize) {
    // A fold over values (`Iterator::max` tracks a reference: no vectors).
    let b = if max {
        xs.iter().fold(xs[0], |b, &x| b.max(x))
    } else {
        xs.iter().fold(xs[0], |b, &x| b.min(x))
    };
    if !need_pos {
        return (b, usize::MAX);
    }
    (b, xs.iter().position(|&x| x == b).unwrap_or(0))
}

/// [`winner_lanes`] with the lanes the run and the registers suit: 8 in a
/// run shorter than `4 * LANES`; in a longer one [`LANES`] with AVX-512,
/// else 128 bytes of them (4 registers of winners, 4 of NaN sums): with
/// AVX2's 16 registers, 64 lanes spilled to the stack in the loop
/// (`amax()` of 10^5 on one Zen 3 thread: float32 9.5 → 7.6 µs, float64
/// 17 → 15 µs). The result does not depend on the lanes.
#[inline(always)]
fn winner_lanes_sized<T: Arith, const MAX: bool>(xs: &[T]) -> (T, bool) {
    if xs.len() < 4 * LANES {
        winner_lanes::<T, MAX, 8>(xs)
    } else if super::isa::avx512() {
        winner_lanes::<T, MAX, LANES>(xs)
    } else if size_of::<T>() == 8 {
        winner_lanes::<T, MAX, 16>(xs)
    } else {
        winner_lanes::<T, MAX, 32>(xs)
    }
}

/// `L` running winners over chunks of `L` (then the last `L` elements, when
/// the chunks leave a tail; then the lanes halved as a tree: no scalar pass
/// over them), and whether a NaN may have passed: lanes of the values
/// summed, NaN after a NaN (or after both infinities, or sums overflowing
/// both ways: the caller's scan then finds no NaN). One addition a vector:
/// flags of `is_nan` cost five mask steps (`amax()` of 10^5 float32, 1.4x
/// torch's), and lanes of `x - x` two instructions, which bound a run read
/// from L3 on 4 KiB pages by the instructions in flight (`amax()` of 10^7
/// float32 in torch's memory, one Sapphire Rapids thread: 2.3 ms, this
/// 1.7, torch 1.6; AVX-512's `vrangeps` would take one, but it drops a
/// quiet NaN as `vmaxps` does). The lanes start at `xs[0]`; a NaN there is
/// seen when its chunk is.
#[inline(always)]
fn winner_lanes<T: Arith, const MAX: bool, const L: usize>(xs: &[T]) -> (T, bool) {
    let better = |x: T, b: T| if MAX { b.less(x) } else { x.less(b) };
    let mut best = [xs[0]; L];
    let mut seen = [T::zeroed(); L];
    let mut chunks = xs.chunks_exact(L);
    let mut take = |c: &[T]| {
        for ((b, s), &x) in best.iter_mut().zip(seen.iter_mut()).zip(c) {
            *s = s.add(x);
            *b = if better(x, *b) { x } else { *b };
        }
    };
    for c in &mut chunks {
        take(c);
    }
    // The tail as the run's last whole chunk, which overlaps the chunks
    // before it (a winner and a NaN are the same seen twice), or a run
    // shorter than a chunk padded with its first element: a partial chunk
    // wrote some lanes and read them all back, stalling the loads
    // (`amax(dim=1)` float32 900x100 ran 1.8x torch's).
    if !chunks.remainder().is_empty() {
        match xs.last_chunk::<L>() {
            Some(last) => take(last),
            None => {
                let mut c = [xs[0]; L];
                c[..xs.len()].copy_from_slice(xs);
                take(&c);
            }
        }
    }
    let mut w = L;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            best[l] = if better(best[l + w], best[l]) {
                best[l + w]
            } else {
                best[l]
            };
        }
    }
    (best[0], seen.iter().any(|s| s.is_nan()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`float_winner_rows`] against the rule applied column by column, on
    /// widths through every block size and values with NaN, both
    /// infinities and both zeros, bit for bit.
    #[test]
    fn float_winner_rows_follow_the_rule() {
        fn check<T: Arith + Into<f64>>(values: &[T]) {
            let pick = |i: usize| values[(i * 7 + i / 3) % values.len()];
            for cols in [1, 7, 8, 9, 31, 32, 33, 45] {
                for count in [1, 2, 5] {
                    let stride = cols + 3;
                    let rows: Vec<T> = (0..count * stride).map(pick).collect();
                    for max in [true, false] {
                        let start: Vec<T> = (0..cols).map(|j| pick(j + 11)).collect();
                        let mut got = start.clone();
                        float_winner_rows(&mut got, &rows, stride, count, max);
                        for (j, (&g, &s)) in got.iter().zip(&start).enumerate() {
                            let mut want = s;
                            for r in 0..count {
                                let x = rows[r * stride + j];
                                if replaces(want, x, max) {
                                    want = x;
                                }
                            }
                            let (g, w): (f64, f64) = (g.into(), want.into());
                            assert!(
                                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                                "{cols} columns, {count} rows, max {max}, column {j}: {g} vs {w}"
                            );
                        }
                    }
                }
            }
        }
        let v = [
            1.5,
            -2.0,
            f64::NAN,
            f64::INFINITY,
            -f64::INFINITY,
            0.0,
            -0.0,
            3.25,
            -7.5,
            0.5,
        ];
        check::<f64>(&v);
        check::<f32>(&v.map(|x| x as f32));
    }
}
