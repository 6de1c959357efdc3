//! Reductions over some or all dimensions, reading the input where it lies
//! (no copy of it, whatever its layout): sums accumulate in float64,
//! complex128 or int64 (PyTorch's `sum` returns int64 for integers and
//! bool); `max` and `min` let NaN win and report the first position of the
//! winner.
//!
//! The dimensions are split into kept and reduced ones, each collapsed where
//! memory allows. When the innermost reduced dimension is contiguous, each
//! output reduces contiguous runs ([`by_runs`], the kernels of
//! `reduce_run.rs`); when the innermost kept one is, whole rows of columns
//! are accumulated into a tile of accumulators ([`by_rows`]); otherwise the
//! runs are gathered a block at a time. Without indices to report, the
//! reduced dimensions are first ordered by stride (a sum or an extreme does
//! not depend on the order), so any permutation of a contiguous tensor reads
//! contiguous runs. Work past [`PARALLEL_MIN`] elements is spread over
//! threads.

use super::cast::cast_contiguous;
use super::copy::materialize;
use super::extreme::better_of;
use super::parallel::{for_each, threads};
use super::reduce_run::{
    Acc, Kernel, PARALLEL_MIN, Pairwise, SHORT_RUN, add_row, add_rows2, extreme, extreme_row,
    extreme_run, leaf_sums, short_extremes, sum_run,
};
use super::row_groups::{add_rows, extreme_rows};
use super::strided::{Dim, walk};
use crate::backend::ReduceOp;
use crate::{DType, Element, Result, Scalar, Tensor, bail, with_compute_element, with_element};

/// Columns per tile when accumulating whole rows.
const TILE: usize = 256;
/// Elements gathered at a time from a run that is not contiguous.
const GATHER: usize = 1024;
/// Sums written to the output at a time.
const BATCH: usize = 64;

/// Reduces `src` over `dims` into `out` (and `indices`), as
/// `Backend::reduce` describes: `out` and `indices` are fresh and contiguous,
/// in the order of the kept dimensions.
///
/// Memory that is not aligned to the element size (or strides that are not
/// whole elements) is staged into an aligned copy first: the typed loops
/// read aligned elements.
pub(crate) fn reduce_into(
    src: &Tensor,
    dims: &[usize],
    op: ReduceOp,
    out: &Tensor,
    indices: Option<&Tensor>,
) -> Result<()> {
    let src = materialize(src)?;
    if out.numel() == 0 {
        return Ok(());
    }
    with_compute_element!(src.dtype(), T => reduce_typed::<T>(&src, dims, op, out, indices))
}

/// Merges neighbours that step through memory as one dimension would.
fn collapse(dims: Vec<Dim>) -> Vec<Dim> {
    let mut out: Vec<Dim> = Vec::with_capacity(dims.len());
    for d in dims {
        match out.last_mut() {
            Some(last) if last.s == d.s * d.n as isize => {
                last.n *= d.n;
                last.s = d.s;
            }
            _ => out.push(d),
        }
    }
    out
}

fn count(dims: &[Dim]) -> usize {
    dims.iter().map(|d| d.n).product()
}

/// Where results go: the fresh contiguous output (and indices), with what
/// turns an accumulator into an output value.
#[derive(Clone, Copy)]
struct Sink {
    out: usize,
    dtype: DType,
    indices: usize,
    op: ReduceOp,
    n: usize,
}

impl Sink {
    /// Outputs `first..first + sums.len()` from their accumulators, the
    /// output dtype matched once for the batch (a match per output cost
    /// more than the sum of a short run).
    fn put_sums<A: Acc>(&self, first: usize, sums: &[A]) {
        let averaging = self.op == ReduceOp::Mean;
        if let Some(wide) = A::as_f64s(sums)
            && self.put_float_sums(first, wide, averaging)
        {
            return;
        }
        with_element!(self.dtype, O => {
            // SAFETY: `out` holds the output's elements of O; these indices
            // are below its numel, and each is written by one thread.
            let out = unsafe { (self.out as *mut O).add(first) };
            for (j, a) in sums.iter().enumerate() {
                let v = if averaging { mean(a.scalar(), self.dtype, self.n) } else { a.scalar() };
                // SAFETY: as above.
                unsafe { out.add(j).write(O::from_scalar(v)) }
            }
        })
    }

    /// [`put_sums`](Self::put_sums) of float64 accumulators into a float
    /// output, a batch at a time (a `Scalar` per output cost as much as a
    /// 200-element run's sum): the cast rounds as `from_scalar` does, bit
    /// for bit (`cast.rs` tests it), and a mean divides in the compute
    /// type as [`mean`] does. False (nothing written) for other outputs.
    fn put_float_sums(&self, first: usize, sums: &[f64], averaging: bool) -> bool {
        let (dtype, n) = (self.dtype, self.n);
        if !matches!(dtype, DType::F64 | DType::F32 | DType::F16 | DType::BF16) {
            return false;
        }
        // Output `first` of the fresh contiguous output, which holds
        // `sums.len()` more of `dtype`, written by this thread only.
        let dst = (self.out + first * dtype.size()) as *mut u8;
        let cast = |from: DType, src: *const u8, at: usize, len: usize| {
            // SAFETY: `src` holds `len` elements of `from` (`sums` or a
            // buffer), and `at + len` outputs from `dst` are ours (above).
            unsafe { cast_contiguous(from, dtype, src, dst.add(at * dtype.size()), len) }
        };
        let out_of = |len: usize| {
            // SAFETY: `len` outputs from `dst` are ours (above); called for
            // a float64 output only.
            unsafe { std::slice::from_raw_parts_mut(dst as *mut f64, len) }
        };
        match (averaging, dtype.compute_dtype()) {
            (false, _) if dtype == DType::F64 => out_of(sums.len()).copy_from_slice(sums),
            (false, _) => return cast(DType::F64, sums.as_ptr().cast(), 0, sums.len()),
            (true, DType::F64) if dtype == DType::F64 => {
                let out = out_of(sums.len());
                out.iter_mut()
                    .zip(sums)
                    .for_each(|(o, &s)| *o = s / n as f64);
            }
            (true, DType::F32) => {
                let mut buf = [0f32; 64];
                for (k, part) in sums.chunks(buf.len()).enumerate() {
                    let q = &mut buf[..part.len()];
                    q.iter_mut()
                        .zip(part)
                        .for_each(|(q, &s)| *q = s as f32 / n as f32);
                    if dtype == DType::F32 {
                        // SAFETY: outputs `k * 64..` (`q.len()` of them) of
                        // the float32 output are ours (above).
                        let out = unsafe { (dst as *mut f32).add(k * 64) };
                        // SAFETY: as above; `q` is a local buffer.
                        unsafe { out.copy_from_nonoverlapping(q.as_ptr(), q.len()) };
                    } else if !cast(DType::F32, q.as_ptr().cast(), k * 64, q.len()) {
                        return false;
                    }
                }
            }
            _ => return false,
        }
        true
    }

    /// Outputs `first..first + values.len()` and, when indices are wanted,
    /// their positions `at`: one copy each where the output has the input's
    /// dtype (a call per output cost a quarter of a short column max).
    fn put_extremes<T: Element>(&self, first: usize, values: &[T], at: &[i64]) {
        if self.dtype == T::DTYPE {
            // SAFETY: as in `put_sums`; the output has T's dtype.
            let out = unsafe { (self.out as *mut T).add(first) };
            // SAFETY: `values.len()` outputs from `first` are ours to write,
            // and the fresh output does not overlap the input.
            unsafe { out.copy_from_nonoverlapping(values.as_ptr(), values.len()) }
        } else {
            with_element!(self.dtype, O => {
                // SAFETY: as in `put_sums`.
                let out = unsafe { (self.out as *mut O).add(first) };
                for (j, v) in values.iter().enumerate() {
                    // SAFETY: as in `put_sums`.
                    unsafe { out.add(j).write(O::from_scalar(v.to_scalar())) }
                }
            })
        }
        if self.indices != 0 {
            // SAFETY: `indices` holds as many int64 as the output; as above.
            let indices = unsafe { (self.indices as *mut i64).add(first) };
            debug_assert_eq!(at.len(), values.len());
            // SAFETY: as above.
            unsafe { indices.copy_from_nonoverlapping(at.as_ptr(), at.len()) }
        }
    }

    fn put_extreme<T: Element>(&self, i: usize, v: T, at: usize) {
        if self.dtype == T::DTYPE {
            // SAFETY: as in `put_sum`; the output has T's dtype.
            unsafe { (self.out as *mut T).add(i).write(v) }
        } else {
            with_element!(self.dtype, O => {
                // SAFETY: as in `put_sum`.
                unsafe { (self.out as *mut O).add(i).write(O::from_scalar(v.to_scalar())) }
            })
        }
        if self.indices != 0 {
            // SAFETY: `indices` holds as many int64 as the output; as above.
            unsafe { (self.indices as *mut i64).add(i).write(at as i64) }
        }
    }
}

fn reduce_typed<T: Kernel>(
    src: &Tensor,
    dims: &[usize],
    op: ReduceOp,
    out: &Tensor,
    indices: Option<&Tensor>,
) -> Result<()> {
    let Some(strides) = src.layout().element_strides(size_of::<T>()) else {
        bail!(
            InvalidOperation,
            "reduction over a layout that is not whole elements"
        );
    };
    let sink = Sink {
        out: out.data_ptr() as usize,
        dtype: out.dtype(),
        indices: indices.map_or(0, |t| t.data_ptr() as usize),
        op,
        n: dims.iter().map(|&d| src.shape()[d]).product(),
    };
    let summing = matches!(op, ReduceOp::Sum | ReduceOp::Mean);
    if src.numel() == 0 {
        // Only sums get here (PyTorch refuses empty max and min first).
        if summing {
            (0..out.numel()).for_each(|i| sink.put_sums(i, &[T::A::ZERO]));
        }
        return Ok(());
    }
    let mut base = src.data_ptr().cast::<T>();
    let (mut kept, mut red) = (Vec::new(), Vec::new());
    for (d, (&n, &s)) in src.shape().iter().zip(&strides).enumerate() {
        if n > 1 {
            let dim = Dim { n, s };
            if dims.contains(&d) {
                red.push(dim)
            } else {
                kept.push(dim)
            }
        }
    }
    if indices.is_none() {
        // The order of the reduced elements does not matter: read them
        // forwards, in memory order.
        for d in &mut red {
            if d.s < 0 {
                // SAFETY: the last element along d lies inside the storage.
                base = unsafe { base.offset(d.s * (d.n as isize - 1)) };
                d.s = -d.s;
            }
        }
        red.sort_by_key(|d| std::cmp::Reverse(d.s));
    }
    let (kept, mut red) = (collapse(kept), collapse(red));
    if red.is_empty() {
        red.push(Dim { n: 1, s: 1 });
    }
    let base = base as usize;
    let rows = red.last().is_some_and(|d| d.s != 1) && kept.last().is_some_and(|d| d.s == 1);
    if rows {
        by_rows::<T>(base, &kept, &red, sink);
    } else {
        by_runs::<T>(base, &kept, &red, sink);
    }
    Ok(())
}

/// Each output reduces the runs along the last reduced dimension (slices of
/// memory when it is contiguous, else gathered a block at a time).
fn by_runs<T: Kernel>(base: usize, kept: &[Dim], red: &[Dim], sink: Sink) {
    let outputs = count(kept);
    let (run, outer) = match red.split_last() {
        Some((&run, outer)) => (run, outer),
        None => return,
    };
    let runs = count(outer);
    let summing = matches!(sink.op, ReduceOp::Sum | ReduceOp::Mean);
    let total = |koff: isize| {
        if runs == 1 {
            run_sum::<T>(base, koff, run)
        } else {
            let mut p = Pairwise::new();
            walk(outer, 0, runs, |_, roff| {
                p.push(run_sum::<T>(base, koff + roff, run))
            });
            p.total()
        }
    };
    let one_extreme = |i: usize, koff: isize| {
        let max = sink.op == ReduceOp::Max;
        let need_pos = sink.indices != 0;
        let mut best: Option<(T, usize)> = None;
        walk(outer, 0, runs, |k, roff| {
            let (v, at) = run_extreme::<T>(base, koff + roff, run, max, need_pos);
            let cand = (v, k * run.n + at.min(run.n));
            best = Some(best.map_or(cand, |b| better_of(b, cand, max)));
        });
        if let Some((v, at)) = best {
            sink.put_extreme(i, v, at);
        }
    };
    // Short contiguous runs are reduced a batch a call (`leaf_sums`,
    // `short_extremes`), the others one `total` or `one_extreme` each.
    let short = runs == 1 && run.s == 1 && run.n < SHORT_RUN;
    // Outputs `start..start + n`: sums a batch at a time into `put_sums`.
    let some = |start: usize, n: usize| {
        if !summing && short {
            return short_extremes_of::<T>(base, kept, run.n, start, n, sink);
        }
        if !summing {
            return walk(kept, start, n, one_extreme);
        }
        let mut batch = [T::A::ZERO; BATCH];
        let flush = |offs: &[isize], first: usize| {
            let sums = &mut batch[..offs.len()];
            if short {
                leaf_sums(&runs_at::<T>(base, offs, run.n)[..offs.len()], sums);
            } else {
                for (s, &off) in sums.iter_mut().zip(offs) {
                    *s = total(off);
                }
            }
            sink.put_sums(first, sums);
        };
        in_batches(kept, start, n, flush);
    };
    if outputs > 1 && outputs * runs * run.n >= PARALLEL_MIN {
        let tasks = (threads() * 4).min(outputs);
        let per = outputs.div_ceil(tasks);
        for_each(tasks, |t| {
            let start = (t * per).min(outputs);
            some(start, per.min(outputs - start));
        });
    } else {
        some(0, outputs);
    }
}

/// Outputs `start..start + n` of a max or min along short contiguous runs
/// of `len` elements: a batch of runs a call, a batch of outputs a copy.
fn short_extremes_of<T: Kernel>(
    base: usize,
    kept: &[Dim],
    len: usize,
    start: usize,
    n: usize,
    sink: Sink,
) {
    let (max, need_pos) = (sink.op == ReduceOp::Max, sink.indices != 0);
    let (mut values, mut at) = ([T::zeroed(); BATCH], [0i64; BATCH]);
    let flush = |offs: &[isize], first: usize| {
        let k = offs.len();
        let runs = runs_at::<T>(base, offs, len);
        short_extremes(&runs[..k], max, need_pos, &mut values[..k], &mut at[..k]);
        sink.put_extremes(first, &values[..k], &at[..k]);
    };
    in_batches(kept, start, n, flush);
}

/// Calls `flush(offsets, first)` for outputs `start..start + n` of the
/// `kept` dimensions, [`BATCH`] element offsets at a time (the outputs
/// `first..first + offsets.len()`). One kept dimension, the usual case once
/// collapsed, counts its offsets directly: through `walk`, a call per
/// output cost as much as a short run's reduction.
fn in_batches(kept: &[Dim], start: usize, n: usize, mut flush: impl FnMut(&[isize], usize)) {
    let mut offs = [0isize; BATCH];
    if let [d] = kept {
        let step = d.s;
        for first in (start..start + n).step_by(BATCH) {
            let k = BATCH.min(start + n - first);
            for (j, o) in offs[..k].iter_mut().enumerate() {
                *o = (first + j) as isize * step;
            }
            flush(&offs[..k], first);
        }
        return;
    }
    let mut k = 0;
    walk(kept, start, n, |i, koff| {
        offs[k] = koff;
        k += 1;
        if k == BATCH {
            flush(&offs, i + 1 - BATCH);
            k = 0;
        }
    });
    flush(&offs[..k], start + n - k);
}

/// The contiguous runs of `len` elements at a batch of offsets (the first
/// `offs.len()` of the array).
fn runs_at<'a, T>(base: usize, offs: &[isize], len: usize) -> [&'a [T]; BATCH] {
    let mut runs: [&[T]; BATCH] = [&[]; BATCH];
    for (r, &off) in runs.iter_mut().zip(offs) {
        *r = slice(base, off, len);
    }
    runs
}

/// The run of `run.n` elements at `off`, as a slice when contiguous.
fn slice<'a, T>(base: usize, off: isize, n: usize) -> &'a [T] {
    // SAFETY: the tensor's layout keeps these n elements inside its
    // storage (aligned: `materialize` staged misaligned memory), and
    // nothing writes them during the reduction (the output is fresh).
    unsafe { std::slice::from_raw_parts((base as *const T).offset(off), n) }
}

/// Calls `f(k, block)` with the elements of a strided run, `GATHER` at a
/// time, `k` the position of the block's first element.
fn gathered<T: Element>(base: usize, off: isize, run: Dim, mut f: impl FnMut(usize, &[T])) {
    let mut buf = [T::zeroed(); GATHER];
    let p = base as *const T;
    for k in (0..run.n).step_by(GATHER) {
        let len = GATHER.min(run.n - k);
        for (j, b) in buf[..len].iter_mut().enumerate() {
            // SAFETY: element k + j of the run lies inside the storage.
            *b = unsafe { *p.offset(off + (k + j) as isize * run.s) };
        }
        f(k, &buf[..len]);
    }
}

fn run_sum<T: Kernel>(base: usize, off: isize, run: Dim) -> T::A {
    if run.s == 1 {
        return sum_run::<T>(slice(base, off, run.n));
    }
    let mut p = Pairwise::new();
    gathered::<T>(base, off, run, |_, xs| p.push(sum_run::<T>(xs)));
    p.total()
}

fn run_extreme<T: Kernel>(
    base: usize,
    off: isize,
    run: Dim,
    max: bool,
    need_pos: bool,
) -> (T, usize) {
    if run.s == 1 {
        return extreme_run::<T>(slice(base, off, run.n), max, need_pos);
    }
    let mut best: Option<(T, usize)> = None;
    gathered::<T>(base, off, run, |k, xs| {
        let (v, at) = extreme::<T>(xs, max, true);
        let cand = (v, k + at);
        best = Some(best.map_or(cand, |b| better_of(b, cand, max)));
    });
    best.unwrap_or((T::zeroed(), 0))
}

/// The innermost kept dimension is contiguous: tiles of its columns
/// accumulate every reduced row (a vectorised add or compare per row).
fn by_rows<T: Kernel>(base: usize, kept: &[Dim], red: &[Dim], sink: Sink) {
    let Some((&cols, outer)) = kept.split_last() else {
        return;
    };
    let tiles = cols.n.div_ceil(TILE);
    let units = count(outer) * tiles;
    let rows = count(red);
    let unit = |u: usize| {
        let (o, t) = (u / tiles, u % tiles);
        let mut koff = 0;
        walk(outer, o, 1, |_, off| koff = off);
        let c0 = t * TILE;
        let w = TILE.min(cols.n - c0);
        let koff = koff + c0 as isize;
        let first = o * cols.n + c0;
        if matches!(sink.op, ReduceOp::Sum | ReduceOp::Mean) {
            let mut acc = [T::A::ZERO; TILE];
            let acc = &mut acc[..w];
            if let [r] = red {
                // Rows evenly apart (a stride made non-negative above).
                let s = r.s as usize;
                add_rows::<T>(acc, slice(base, koff, (r.n - 1) * s + w), s, r.n);
            } else {
                // Rows two at a time (the accumulators' loads and stores
                // bound the loop), in order.
                let mut pending = None;
                walk(red, 0, rows, |_, roff| match pending.take() {
                    None => pending = Some(roff),
                    Some(prev) => add_rows2::<T>(
                        acc,
                        slice(base, koff + prev, w),
                        slice(base, koff + roff, w),
                    ),
                });
                if let Some(last) = pending {
                    add_row::<T>(acc, slice(base, koff + last, w));
                }
            }
            sink.put_sums(first, acc);
        } else {
            let max = sink.op == ReduceOp::Max;
            let row0 = slice::<T>(base, koff, w);
            let mut best = [row0[0]; TILE];
            best[..w].copy_from_slice(row0);
            let mut at = [0i64; TILE];
            let at_w = if sink.indices != 0 { w } else { 0 };
            match red {
                // Values only, rows evenly apart (a non-negative stride).
                [r] if at_w == 0 => {
                    let s = r.s as usize;
                    let rest = slice(base, koff + r.s, (r.n - 2) * s + w);
                    extreme_rows::<T>(&mut best[..w], rest, s, r.n - 1, max);
                }
                _ => walk(red, 1, rows - 1, |r, roff| {
                    extreme_row::<T>(
                        &mut best[..w],
                        &mut at[..at_w],
                        slice(base, koff + roff, w),
                        r as i64,
                        max,
                    )
                }),
            }
            sink.put_extremes(first, &best[..w], &at[..at_w]);
        }
    };
    if units > 1 && units / tiles * cols.n * rows >= PARALLEL_MIN {
        for_each(units, unit);
    } else {
        (0..units).for_each(unit);
    }
}

/// PyTorch divides in the dtype's compute type: float16 and bfloat16 means
/// are a float32 sum divided in float32 (so `ones(100000, float16).mean()`
/// is 1, though the float16 sum is inf). A float total rounds to the
/// compute type with a cast (`rounded_to` matches on the dtype, which cost
/// more than a short mean's sum per output).
fn mean(total: Scalar, dtype: DType, n: usize) -> Scalar {
    let compute = dtype.compute_dtype();
    match (compute, total) {
        (DType::F32, Scalar::Float(x)) => return Scalar::Float(f64::from(x as f32 / n as f32)),
        (DType::F64, Scalar::Float(x)) => return Scalar::Float(x / n as f64),
        _ => {}
    }
    match total.rounded_to(compute) {
        Scalar::Complex(re, im) => Scalar::Complex(re / n as f64, im / n as f64),
        s if compute == DType::F32 => Scalar::Float(f64::from(s.as_f64() as f32 / n as f32)),
        s => Scalar::Float(s.as_f64() / n as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapse_merges_contiguous_neighbours() {
        let d = |n, s| Dim { n, s };
        assert_eq!(collapse(vec![d(2, 12), d(3, 4), d(4, 1)]), vec![d(24, 1)]);
        assert_eq!(
            collapse(vec![d(2, 24), d(3, 4), d(4, 1)]),
            vec![d(2, 24), d(12, 1)]
        );
    }

    #[test]
    fn walk_visits_row_major_offsets() {
        let dims = [Dim { n: 2, s: 10 }, Dim { n: 3, s: -1 }];
        let mut seen = Vec::new();
        walk(&dims, 1, 4, |k, off| seen.push((k, off)));
        assert_eq!(seen, vec![(1, -1), (2, -2), (3, 10), (4, 9)]);
    }
}
