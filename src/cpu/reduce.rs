//! Reductions over some or all dimensions. Sums accumulate in float64,
//! complex128 or int64 (PyTorch's `sum` returns int64 for integers and
//! bool), so results do not drift with size; `max` and `min` let NaN win and
//! report the first position of the winner.

use super::arith::Arith;
use super::strided::view;
use crate::backend::ReduceOp;
use crate::{DType, Element, Result, Scalar, Tensor, with_compute_element, with_element};
use num_complex::Complex64;

/// Reduces `src` over `dims` into `out` (and `indices`), as `Backend::reduce`
/// describes: the reduced dimensions move last, so that each output element
/// reduces one contiguous run of the (copied if need be) input.
pub(crate) fn reduce_into(
    src: &Tensor,
    dims: &[usize],
    op: ReduceOp,
    out: &Tensor,
    indices: Option<&Tensor>,
) -> Result<()> {
    let kept = (0..src.ndim()).filter(|d| !dims.contains(d));
    let order: Vec<i64> = kept.chain(dims.iter().copied()).map(|d| d as i64).collect();
    let rows = src.permute(&order)?.contiguous()?;
    let run: usize = dims.iter().map(|&d| src.shape()[d]).product();
    with_compute_element!(src.dtype(), T => reduce_typed::<T>(&rows, run, op, out, indices));
    Ok(())
}

fn reduce_typed<T: Arith>(
    rows: &Tensor,
    run: usize,
    op: ReduceOp,
    out: &Tensor,
    indices: Option<&Tensor>,
) {
    // SAFETY: rows is a contiguous tensor of T (fresh or the caller's, not
    // written while we read).
    let input = unsafe { view::<T>(rows) }.unwrap();
    let values = input.as_slice().expect("contiguous");
    let count = out.numel();
    let runs = (0..count).map(|r| &values[r * run..(r + 1) * run]);
    match op {
        ReduceOp::Sum | ReduceOp::Mean => {
            let out_dtype = out.dtype();
            let totals = runs.map(|xs| {
                let total = sum(xs);
                match op {
                    ReduceOp::Mean => mean(total, out_dtype, xs.len()),
                    _ => total,
                }
            });
            write_scalars(out, totals);
        }
        ReduceOp::Max | ReduceOp::Min => {
            let max = op == ReduceOp::Max;
            // SAFETY: out and indices are fresh contiguous tensors of `count`
            // elements of T and i64, written only here.
            let (o, mut ix) = unsafe {
                (
                    std::slice::from_raw_parts_mut(out.data_ptr().cast::<T>(), count),
                    indices
                        .map(|t| std::slice::from_raw_parts_mut(t.data_ptr().cast::<i64>(), count)),
                )
            };
            for (r, xs) in runs.enumerate() {
                let (best, at) = extreme(xs, max);
                o[r] = best;
                if let Some(ix) = ix.as_deref_mut() {
                    ix[r] = at as i64;
                }
            }
        }
    }
}

/// The sum of a run, in the accumulation kind of its type.
fn sum<T: Element>(xs: &[T]) -> Scalar {
    match T::DTYPE.category() {
        crate::Category::Complex => {
            let s = xs
                .iter()
                .fold(Complex64::new(0.0, 0.0), |acc, &x| match x.to_scalar() {
                    Scalar::Complex(re, im) => acc + Complex64::new(re, im),
                    _ => acc,
                });
            Scalar::Complex(s.re, s.im)
        }
        crate::Category::Floating => {
            Scalar::Float(xs.iter().fold(0.0, |acc, &x| acc + x.cast::<f64>()))
        }
        _ => Scalar::Int(
            xs.iter()
                .fold(0i64, |acc, &x| acc.wrapping_add(x.cast::<i64>())) as i128,
        ),
    }
}

/// PyTorch divides in the dtype's compute type: float16 and bfloat16 means
/// are a float32 sum divided in float32 (so `ones(100000, float16).mean()`
/// is 1, though the float16 sum is inf).
fn mean(total: Scalar, dtype: DType, n: usize) -> Scalar {
    let compute = dtype.compute_dtype();
    match total.rounded_to(compute) {
        Scalar::Complex(re, im) => Scalar::Complex(re / n as f64, im / n as f64),
        s if compute == DType::F32 => Scalar::Float(f64::from(s.as_f64() as f32 / n as f32)),
        s => Scalar::Float(s.as_f64() / n as f64),
    }
}

/// The largest (or smallest) value of a non-empty run and its first position;
/// the first NaN wins outright.
fn extreme<T: Arith>(xs: &[T], max: bool) -> (T, usize) {
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

/// Writes one value per element of the fresh contiguous `out`, cast to its dtype.
fn write_scalars(out: &Tensor, values: impl Iterator<Item = Scalar>) {
    with_element!(out.dtype(), O => {
        let ptr = out.data_ptr().cast::<O>();
        for (i, v) in values.enumerate().take(out.numel()) {
            // SAFETY: out is fresh, contiguous and holds numel elements of O.
            unsafe { ptr.add(i).write(O::from_scalar(v)) };
        }
    })
}
