//! Reductions with PyTorch's rules: which dimensions, `keepdim`, the
//! output dtype, and the errors for empty or complex input.

use super::{blocks, check_computable};
use crate::backend::{self, BinaryOp, ReduceOp};
use crate::layout::Selection;
use crate::views::wrap_dim;
use crate::{Category, DType, Result, Scalar, Tensor, bail, ops};

/// `max(dim)` and `min(dim)`: the values and the first position of each.
#[derive(Clone, Debug)]
pub struct Reduced {
    /// The largest (or smallest) values.
    pub values: Tensor,
    /// Their positions along the reduced dimension (int64).
    pub indices: Tensor,
}

/// The dtype `sum` returns: integers and bools widen to int64.
fn sum_dtype(dtype: DType) -> DType {
    match dtype.category() {
        Category::Bool | Category::Integral => DType::I64,
        _ => dtype,
    }
}

/// The dimensions a reduction covers, sorted: `None` and an empty list (as
/// PyTorch reads `dim=()`) mean all of them.
fn dims_of(a: &Tensor, dims: Option<&[i64]>) -> Result<Vec<usize>> {
    let all = || (0..a.ndim()).collect();
    let Some(dims) = dims.filter(|d| !d.is_empty()) else {
        return Ok(all());
    };
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let w = wrap_dim(d, a.ndim())?;
        if out.contains(&w) {
            bail!(
                InvalidOperation,
                "dim {w} appears multiple times in the list of dims"
            );
        }
        out.push(w);
    }
    // A zero-dim tensor has no dimension to reduce: dim 0 or -1 means itself.
    out.retain(|&d| d < a.ndim());
    out.sort_unstable();
    Ok(out)
}

/// Runs a reduction into a fresh output shaped like `a` with `dims` set to 1,
/// then drops those dimensions unless `keepdim`.
fn run(
    a: &Tensor,
    dims: &[usize],
    keepdim: bool,
    op: ReduceOp,
    out_dtype: DType,
    with_indices: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    let kernel = match op {
        ReduceOp::Sum | ReduceOp::Mean => "sum",
        ReduceOp::Max | ReduceOp::Min => "max",
    };
    check_computable(kernel, a.dtype(), a.device())?;
    let mut shape = a.shape().to_vec();
    dims.iter().for_each(|&d| shape[d] = 1);
    let out = Tensor::empty(&shape, out_dtype, a.device())?;
    let indices = with_indices
        .then(|| Tensor::empty(&shape, DType::I64, a.device()))
        .transpose()?;
    backend::of(a.device()).reduce(a, dims, op, &out, indices.as_ref())?;
    Ok((
        drop_dims(a, dims, keepdim, out)?,
        indices
            .map(|i| drop_dims(a, dims, keepdim, i))
            .transpose()?,
    ))
}

/// A reduction's output (`dims` of `a` kept as 1) without those dimensions,
/// unless `keepdim`.
fn drop_dims(a: &Tensor, dims: &[usize], keepdim: bool, out: Tensor) -> Result<Tensor> {
    if keepdim {
        return Ok(out);
    }
    let kept: Vec<i64> = (0..a.ndim())
        .filter(|d| !dims.contains(d))
        .map(|d| a.shape()[d] as i64)
        .collect();
    out.view(&kept)
}

/// [`run`] (a sum or a mean) of `a` cast to `dt`, the cast made a block at a
/// time (`blocks.rs`), so no copy of the whole input is made. Outputs whose
/// inputs fit in a block go a block of outputs at a time, each computed as
/// from the whole cast; an output with more inputs sums its blocks'
/// partial sums pairwise in the backend's accumulator (float64, complex128
/// or int64), then divides for a mean.
fn run_cast(
    a: &Tensor,
    dims: &[usize],
    keepdim: bool,
    op: ReduceOp,
    dt: DType,
    out_dtype: DType,
) -> Result<Tensor> {
    if dt == a.dtype() || a.numel() == 0 {
        return Ok(run(&a.to_dtype(dt)?, dims, keepdim, op, out_dtype, false)?.0);
    }
    check_computable("sum", dt, a.device())?;
    let mut shape = a.shape().to_vec();
    dims.iter().for_each(|&d| shape[d] = 1);
    let out = Tensor::empty(&shape, out_dtype, a.device())?;
    let reduced: usize = dims.iter().map(|&d| a.shape()[d]).product();
    // A reduction's output is smaller than any useful block: the
    // temporaries are at most a block (the device's size).
    let len = backend::of(a.device()).block_elements();
    if reduced <= len {
        for sel in blocks::blocks(&shape, len / reduced) {
            let inputs: Vec<Selection> = (0..sel.len())
                .map(|d| {
                    if dims.contains(&d) {
                        blocks::WHOLE
                    } else {
                        sel[d]
                    }
                })
                .collect();
            let part = a.index(&inputs)?.to_dtype(dt)?;
            out.index(&sel)?
                .copy_(&run(&part, dims, true, op, out_dtype, false)?.0)?;
        }
        return drop_dims(a, dims, keepdim, out);
    }
    // The kept dimensions first: each block then lies within one output.
    let order: Vec<i64> = (0..a.ndim())
        .filter(|d| !dims.contains(d))
        .chain(dims.iter().copied())
        .map(|d| d as i64)
        .collect();
    let (input, output) = (a.permute(&order)?, out.permute(&order)?);
    let kept = a.ndim() - dims.len();
    let inner: Vec<usize> = (kept..a.ndim()).collect();
    // Partials in the backend's accumulator (float64 for every real float,
    // complex128 for complex), so the blocks round no more than one pass.
    let acc = match dt.category() {
        Category::Floating => DType::F64,
        Category::Complex => DType::C128,
        _ => sum_dtype(dt),
    };
    let finish = |at: &[Selection], partials: blocks::Pairwise| -> Result<()> {
        let Some(total) = partials.finish()? else {
            return Ok(());
        };
        // A mean divides in the dtype's compute type, as the backend's does.
        let value = match op {
            ReduceOp::Mean => ops::binary(
                (&total.to_dtype(dt.compute_dtype())?).into(),
                Scalar::Int(reduced as i128).into(),
                BinaryOp::Div,
            )?,
            _ => total,
        };
        let mut sel = at.to_vec();
        sel.resize(a.ndim(), blocks::WHOLE);
        output.index(&sel)?.copy_(&value)
    };
    let mut current: Option<(Vec<Selection>, blocks::Pairwise)> = None;
    for sel in blocks::blocks(input.shape(), len) {
        if current
            .as_ref()
            .is_some_and(|(at, _)| at[..] != sel[..kept])
        {
            let (at, partials) = current.take().expect("checked above");
            finish(&at, partials)?;
        }
        let part = input.index(&sel)?.to_dtype(dt)?.to_dtype(acc)?;
        let partial = run(&part, &inner, true, ReduceOp::Sum, sum_dtype(acc), false)?.0;
        current
            .get_or_insert_with(|| (sel[..kept].to_vec(), blocks::Pairwise::default()))
            .1
            .push(partial)?;
    }
    if let Some((at, partials)) = current {
        finish(&at, partials)?;
    }
    drop_dims(a, dims, keepdim, out)
}

/// `sum(dim=None, keepdim=False, *, dtype=None)`.
///
/// ```
/// use dlbridge::{DType, Tensor, ops};
/// let a = Tensor::from_vec(vec![true, true, false], &[3])?;
/// assert_eq!(ops::sum(&a, None, false, None)?.to_vec::<i64>()?, vec![2]);
/// assert_eq!(ops::sum(&a, None, false, Some(DType::F32))?.to_vec::<f32>()?, vec![2.0]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn sum(
    a: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let dims = dims_of(a, dims)?;
    let dt = dtype.unwrap_or(a.dtype());
    let out_dtype = sum_dtype(dt);
    let total = run_cast(a, &dims, keepdim, ReduceOp::Sum, dt, out_dtype)?;
    // An explicit dtype is the result's too (`sum(dtype=bool)` is bool).
    match dtype {
        Some(dt) if dt != out_dtype => total.to_dtype(dt),
        _ => Ok(total),
    }
}

/// `mean(dim=None, keepdim=False, *, dtype=None)`; floating and complex only.
///
/// ```
/// use dlbridge::{Tensor, ops};
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// assert_eq!(ops::mean(&a, Some(&[0]), false, None)?.to_vec::<f32>()?, vec![2.0, 3.0]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn mean(
    a: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let dt = dtype.unwrap_or(a.dtype());
    if !(dt.is_floating_point() || dt.is_complex()) {
        bail!(
            NotImplemented,
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex \
             dtype. Got: {}",
            dt.scalar_type_name()
        );
    }
    let dims = dims_of(a, dims)?;
    run_cast(a, &dims, keepdim, ReduceOp::Mean, dt, dt)
}

/// Refuses what `max`/`min`/`amax`/`amin` refuse: reducing an empty
/// dimension (or an empty tensor with no dimension named).
fn check_extremes(name: &str, a: &Tensor, dims: &[usize], named: bool) -> Result<()> {
    if !named && a.numel() == 0 {
        bail!(
            InvalidOperation,
            "{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the \
             reduction dim with the 'dim' argument."
        );
    }
    if let Some(&d) = dims.iter().find(|&&d| a.shape()[d] == 0) {
        bail!(
            IndexOutOfRange,
            "{name}(): Expected reduction dim {d} to have non-zero size."
        );
    }
    Ok(())
}

/// PyTorch's message for a kernel it lacks for a dtype, `"max_all"` say.
fn not_for_complex(kernel: &str, a: &Tensor) -> Result<()> {
    if a.dtype().is_complex() {
        bail!(
            NotImplemented,
            "\"{kernel}\" not implemented for '{}'",
            a.dtype().scalar_type_name()
        );
    }
    Ok(())
}

fn device_suffix(a: &Tensor) -> &'static str {
    a.device().kind.name()
}

fn extreme_all(name: &str, a: &Tensor, op: ReduceOp) -> Result<Tensor> {
    not_for_complex(&format!("{name}_all"), a)?;
    let dims: Vec<usize> = (0..a.ndim()).collect();
    check_extremes(name, a, &dims, false)?;
    Ok(run(a, &dims, false, op, a.dtype(), false)?.0)
}

fn extreme_dim(name: &str, a: &Tensor, dim: i64, keepdim: bool, op: ReduceOp) -> Result<Reduced> {
    if a.dtype().is_complex() {
        bail!(WrongType, "{name}(): does not support complex input");
    }
    let dims = dims_of(a, Some(&[dim]))?;
    check_extremes(name, a, &dims, true)?;
    let (values, indices) = run(a, &dims, keepdim, op, a.dtype(), true)?;
    Ok(Reduced {
        values,
        // `run(.., true)` always returns indices: asked for on the line above.
        indices: indices.expect("asked for"),
    })
}

fn extreme_values(
    name: &str,
    a: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    op: ReduceOp,
) -> Result<Tensor> {
    let kernel = if op == ReduceOp::Max {
        "max_values"
    } else {
        "min_values"
    };
    not_for_complex(&format!("{kernel}_{}", device_suffix(a)), a)?;
    let named = dims.is_some_and(|d| !d.is_empty());
    let dims = dims_of(a, dims)?;
    check_extremes(name, a, &dims, named)?;
    Ok(run(a, &dims, keepdim, op, a.dtype(), false)?.0)
}

/// `max()`: the largest element as a zero-dim tensor (NaN wins).
///
/// ```
/// use dlbridge::{Tensor, ops};
/// let a = Tensor::from_vec(vec![1.0f32, f32::NAN], &[2])?;
/// assert!(ops::max(&a)?.to_vec::<f32>()?[0].is_nan()); // NaN wins
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn max(a: &Tensor) -> Result<Tensor> {
    extreme_all("max", a, ReduceOp::Max)
}

/// `min()`: the smallest element as a zero-dim tensor (NaN wins).
///
/// ```
/// use dlbridge::{Tensor, ops};
/// let a = Tensor::from_vec(Vec::<f32>::new(), &[0])?;
/// assert!(ops::min(&a).is_err()); // no elements
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn min(a: &Tensor) -> Result<Tensor> {
    extreme_all("min", a, ReduceOp::Min)
}

/// `max(dim, keepdim=False)`: values and indices.
///
/// ```
/// use dlbridge::{Tensor, ops};
/// let a = Tensor::from_vec(vec![3i32, 9, 9, 1], &[2, 2])?;
/// let r = ops::max_dim(&a, 1, true)?;
/// assert_eq!((r.values.to_vec::<i32>()?, r.indices.to_vec::<i64>()?), (vec![9, 9], vec![1, 0]));
/// assert_eq!(r.values.shape(), &[2, 1]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn max_dim(a: &Tensor, dim: i64, keepdim: bool) -> Result<Reduced> {
    extreme_dim("max", a, dim, keepdim, ReduceOp::Max)
}

/// `min(dim, keepdim=False)`: values and indices.
///
/// ```
/// use dlbridge::{Tensor, ops};
/// let a = Tensor::from_vec(vec![3i32, 9, 9, 1], &[2, 2])?;
/// assert_eq!(ops::min_dim(&a, 0, false)?.indices.to_vec::<i64>()?, vec![0, 1]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn min_dim(a: &Tensor, dim: i64, keepdim: bool) -> Result<Reduced> {
    extreme_dim("min", a, dim, keepdim, ReduceOp::Min)
}

/// `amax(dim=(), keepdim=False)`: values only, over any dimensions.
///
/// ```
/// use dlbridge::{Tensor, ops};
/// let a = Tensor::from_vec(vec![3i32, 9, 7, 1], &[2, 2])?;
/// assert_eq!(ops::amax(&a, Some(&[0]), false)?.to_vec::<i32>()?, vec![7, 9]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn amax(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    extreme_values("amax", a, dims, keepdim, ReduceOp::Max)
}

/// `amin(dim=(), keepdim=False)`: values only, over any dimensions.
///
/// ```
/// use dlbridge::{Tensor, ops};
/// let a = Tensor::from_vec(vec![3i32, 9, 7, 1], &[2, 2])?;
/// assert_eq!(ops::amin(&a, None, false)?.to_vec::<i32>()?, vec![1]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn amin(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    extreme_values("amin", a, dims, keepdim, ReduceOp::Min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{arange, eye};
    use crate::{Device, ErrorKind, Scalar};

    fn ints(shape: &[usize], values: &[i128], dtype: DType) -> Tensor {
        let v: Vec<Scalar> = values.iter().map(|&i| Scalar::Int(i)).collect();
        Tensor::from_scalars(shape, &v, dtype).unwrap()
    }

    fn values(t: &Tensor) -> Vec<f64> {
        t.to_scalars().unwrap().iter().map(|s| s.as_f64()).collect()
    }

    #[test]
    fn full_reductions() {
        let r = arange(
            Scalar::Int(0),
            Scalar::Int(5),
            Scalar::Int(1),
            None,
            Device::CPU,
        )
        .unwrap();
        assert_eq!(r.dtype(), DType::I64);
        assert_eq!(
            sum(&r, None, false, None).unwrap().item().unwrap(),
            Scalar::Int(10)
        );
        assert!(mean(&r, None, false, None).is_err());
        let e = eye(2, Some(3), DType::F32, Device::CPU).unwrap();
        assert_eq!(
            sum(&e, None, false, None).unwrap().item().unwrap(),
            Scalar::Float(2.0)
        );
        let m = mean(&e, None, false, None).unwrap();
        assert_eq!(m.shape(), &[] as &[usize]);
        assert_eq!(
            m.item().unwrap(),
            Scalar::Float((2.0f64 / 6.0) as f32 as f64)
        );
        assert_eq!(max(&e).unwrap().item().unwrap(), Scalar::Float(1.0));
    }

    #[test]
    fn reductions_over_dimensions() {
        let a = ints(&[2, 3], &[1, 5, 2, 7, 0, 7], DType::I32);
        let s = sum(&a, Some(&[0]), false, None).unwrap();
        assert_eq!((s.shape(), s.dtype()), (&[3usize][..], DType::I64));
        assert_eq!(values(&s), [8.0, 5.0, 9.0]);
        let k = sum(&a, Some(&[-1]), true, Some(DType::F64)).unwrap();
        assert_eq!((k.shape(), values(&k)), (&[2usize, 1][..], vec![8.0, 14.0]));
        let m = max_dim(&a, 1, false).unwrap();
        assert_eq!(
            (values(&m.values), values(&m.indices)),
            (vec![5.0, 7.0], vec![1.0, 0.0])
        );
        let lo = min_dim(&a, 0, true).unwrap();
        assert_eq!(lo.values.shape(), &[1, 3]);
        assert_eq!(values(&lo.indices), [0.0, 1.0, 0.0]);
        assert_eq!(values(&amax(&a, Some(&[0, 1]), false).unwrap()), [7.0]);
        assert_eq!(values(&amin(&a, None, false).unwrap()), [0.0]);
        // A transposed (non-contiguous) input reduces the same.
        let t = a.t().unwrap();
        assert_eq!(
            values(&sum(&t, Some(&[1]), false, None).unwrap()),
            [8.0, 5.0, 9.0]
        );
    }

    #[test]
    fn nan_wins_and_errors_follow_torch() {
        let f = Tensor::from_scalars(
            &[3],
            &[
                Scalar::Float(1.0),
                Scalar::Float(f64::NAN),
                Scalar::Float(3.0),
            ],
            DType::F32,
        )
        .unwrap();
        assert!(values(&max(&f).unwrap())[0].is_nan());
        assert_eq!(values(&max_dim(&f, 0, false).unwrap().indices), [1.0]);
        let empty = Tensor::zeros(&[0, 3], DType::F32, Device::CPU).unwrap();
        let kind = |r: Result<Tensor>| r.err().unwrap().kind();
        assert_eq!(kind(max(&empty)), ErrorKind::InvalidOperation);
        assert_eq!(
            kind(amax(&empty, Some(&[0]), false)),
            ErrorKind::IndexOutOfRange
        );
        assert_eq!(amax(&empty, Some(&[1]), false).unwrap().shape(), &[0]);
        assert_eq!(
            values(&sum(&empty, Some(&[0]), false, None).unwrap()),
            [0.0; 3]
        );
        assert!(values(&mean(&empty, None, false, None).unwrap())[0].is_nan());
        let a = ints(&[2], &[1, 2], DType::I64);
        assert_eq!(
            kind(sum(&a, Some(&[0, 0]), false, None)),
            ErrorKind::InvalidOperation
        );
        assert_eq!(
            kind(sum(&a, Some(&[1]), false, None)),
            ErrorKind::IndexOutOfRange
        );
        let c = Tensor::zeros(&[2], DType::C64, Device::CPU).unwrap();
        assert_eq!(kind(max(&c)), ErrorKind::NotImplemented);
        assert_eq!(
            max_dim(&c, 0, false).err().unwrap().kind(),
            ErrorKind::WrongType
        );
        let scalar = ints(&[], &[3], DType::I64);
        assert_eq!(
            values(&sum(&scalar, Some(&[0]), false, None).unwrap()),
            [3.0]
        );
        assert_eq!(
            max_dim(&scalar, -1, false).unwrap().indices.shape(),
            &[] as &[usize]
        );
    }
}
