//! The orders in which one contiguous run is summed, written once for
//! every element type (`reduce_run.rs` picks one per type):
//!
//! - float64: NumPy's pairwise summation, step for step (`numpy_sum.rs`);
//! - float32 and the half types: float32 lanes flushed to float64 lanes
//!   every [`F32_ADDS`] chunks ([`lanes_f32`]);
//! - integers: wrapping int64 lanes ([`lanes_i64`]); the rest float64 lanes
//!   ([`lanes_f64`]).
//!
//! The lanes are plain arrays the compiler vectorises; how many a run gets
//! depends on its length only, so the bits never depend on the threads.

use super::narrow::ToF32;
use super::reduce_run::{LANES, SHORT_RUN};

/// The sum of a leaf in float64 lanes, as many as the run fills: a short
/// run (the rows of `sum(dim=-1)` on a small last dimension) spends more on
/// the lanes' tail and tree than on its elements, and a long one needs
/// [`LANES`] of them, eight vectors, for enough independent additions.
#[inline(always)]
pub(super) fn lanes_f64<X: Copy>(xs: &[X], f: impl Fn(X) -> f64) -> f64 {
    if xs.len() < 64 {
        lanes_f64_n::<4, X>(xs, f)
    } else if xs.len() < SHORT_RUN {
        lanes_f64_n::<16, X>(xs, f)
    } else {
        lanes_f64_n::<LANES, X>(xs, f)
    }
}

/// Chunks a float32 lane adds before its float64 lane takes the sum: each
/// lane's sum rounds at most 7 times (NumPy's float32 accumulators round
/// 15 times over a block of 128, then its float32 tree rounds again).
pub(super) const F32_ADDS: usize = 8;

/// Runs from this length get [`LANES`] float32 lanes in [`lanes_f32`].
/// 16 lanes are as fast at every length (their blocks of [`F32_ADDS`]
/// chunks overlap in the CPU), and 64 cost a long tree per run (`sum(dim=1)`
/// float32 300x300 ran 2.2x torch's); but with only two tiers LLVM's SLP
/// vectoriser split the 16 lanes into pairs (`xmm`, 1.7x slower), so the
/// long tier stays, where its tree is cheap. `bench_ops.py` watches it.
const LONG_RUN: usize = 4096;

/// The sum of a run in float32 lanes: 4 in a run shorter than 64, 16 up to
/// [`LONG_RUN`], [`LANES`] from there, flushed to float64 lanes every
/// [`F32_ADDS`] chunks: the error of NumPy's pairwise float32 sum at most,
/// at nearly the cost of float32 additions (accumulating every element in
/// float64 cost 2-3x torch's float32 sums).
#[inline(always)]
pub(super) fn lanes_f32<X: Copy>(xs: &[X], w: impl ToF32<X>) -> f64 {
    if xs.len() < 64 {
        lanes_f32_n::<4, X>(xs, w)
    } else if xs.len() < LONG_RUN {
        lanes_f32_n::<16, X>(xs, w)
    } else {
        lanes_f32_n::<LANES, X>(xs, w)
    }
}

/// `L` float32 lanes over chunks of `L` (`w` widens them), flushed to
/// float64 lanes every [`F32_ADDS`] chunks; the lanes added as a tree,
/// then the tail.
#[inline(always)]
fn lanes_f32_n<const L: usize, X: Copy>(xs: &[X], w: impl ToF32<X>) -> f64 {
    let body = xs.len() - xs.len() % L;
    let mut wide = [0.0f64; L];
    for block in xs[..body].chunks(F32_ADDS * L) {
        let mut acc = [0.0f32; L];
        for c in block.chunks_exact(L) {
            let values = w.chunk::<L>(c.try_into().expect("chunk"));
            acc.iter_mut().zip(values).for_each(|(a, x)| *a += x);
        }
        wide.iter_mut()
            .zip(acc)
            .for_each(|(w, a)| *w += f64::from(a));
    }
    lanes_total(wide) + lanes_tail(&xs[body..], |x| f64::from(w.one(x)))
}

/// `L` accumulators over chunks of `L`, the lanes added as a tree, then
/// the tail.
#[inline(always)]
fn lanes_f64_n<const L: usize, X: Copy>(xs: &[X], f: impl Fn(X) -> f64) -> f64 {
    let body = xs.len() - xs.len() % L;
    let acc = lanes_add([0.0f64; L], &xs[..body], &f);
    lanes_total(acc) + lanes_tail(&xs[body..], f)
}

/// `acc[j] += f(xs[i * L + j])` over whole chunks of `L`. The lanes pass
/// by value: through a `&mut`, inlined into a loop over runs, they stayed
/// in memory (a load and a store per chunk).
#[inline(always)]
fn lanes_add<const L: usize, X: Copy>(
    mut acc: [f64; L],
    xs: &[X],
    f: impl Fn(X) -> f64,
) -> [f64; L] {
    for c in xs.chunks_exact(L) {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += f(x);
        }
    }
    acc
}

/// The lanes halved as a tree.
#[inline(always)]
fn lanes_total<const L: usize>(mut acc: [f64; L]) -> f64 {
    let mut w = L;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            acc[l] += acc[l + w];
        }
    }
    acc[0]
}

/// The last elements of a run (fewer than a chunk), in 4 lanes.
#[inline(always)]
fn lanes_tail<X: Copy>(xs: &[X], f: impl Fn(X) -> f64) -> f64 {
    let b4 = xs.len() - xs.len() % 4;
    let acc = lanes_add([0.0f64; 4], &xs[..b4], &f);
    let tail = xs[b4..].iter().fold(0.0, |s, &x| s + f(x));
    lanes_total(acc) + tail
}

/// The wrapping int64 sum of `f(x)` over a run, in lanes: integer sums are
/// exact in any order. 32 lanes for 8-byte elements (8 AVX2 registers:
/// int64 `sum()` of 10^7, one Sapphire Rapids thread, 4.5 ms in 16 lanes,
/// 3.1 in 32), 16 for narrower ones, whose widening spilled registers in
/// the AVX2 copies with more.
#[inline(always)]
pub(super) fn lanes_i64<X: Copy>(xs: &[X], f: impl Fn(X) -> i64) -> i64 {
    if size_of::<X>() == 8 {
        lanes_i64_n::<X, 32>(xs, f)
    } else {
        lanes_i64_n::<X, 16>(xs, f)
    }
}

#[inline(always)]
fn lanes_i64_n<X: Copy, const L: usize>(xs: &[X], f: impl Fn(X) -> i64) -> i64 {
    let mut acc = [0i64; L];
    let mut chunks = xs.chunks_exact(L);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a = a.wrapping_add(f(x));
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(0i64, |s, &x| s.wrapping_add(f(x)));
    acc.iter().fold(tail, |s, &a| s.wrapping_add(a))
}
