//! Ops composed from other ops, with PyTorch's results: `all` and `any`
//! (a count of zero or non-zero elements), `argmax` and `argmin` (the
//! indices of `max`/`min` over one dimension or the flattened tensor), and
//! `conj_physical` (for `mH`: the imaginary parts negated in a copy).
//! Nothing here needs a kernel of its own, so every device has them.

use super::{Operand, binary_, compare, max_dim, min_dim, sum};
use crate::layout::Layout;
use crate::{BinaryOp, CompareOp, DType, Result, Scalar, Tensor, bail};

/// `all(dim=None, keepdim=False)`: whether every element is non-zero (NaN
/// counts as non-zero); bool, or uint8 for uint8 input, as PyTorch.
///
/// ```
/// use dlbridge::{Tensor, ops};
/// let a = Tensor::from_vec(vec![1i32, 0, 2, 3], &[2, 2])?;
/// assert_eq!(ops::all(&a, Some(&[1]), false)?.to_vec::<bool>()?, vec![false, true]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn all(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    truth(a, dims, keepdim, CompareOp::Eq, CompareOp::Eq)
}

/// `any(dim=None, keepdim=False)`: whether some element is non-zero.
///
/// ```
/// use dlbridge::{Tensor, ops};
/// let a = Tensor::from_vec(vec![0u8, 0, 2, 0], &[2, 2])?;
/// assert_eq!(ops::any(&a, Some(&[0]), false)?.to_vec::<u8>()?, vec![1, 0]); // uint8 in, uint8 out
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn any(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    truth(a, dims, keepdim, CompareOp::Ne, CompareOp::Gt)
}

/// Counts the elements for which `a pick 0` holds, then `count verdict 0`.
fn truth(
    a: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    pick: CompareOp,
    verdict: CompareOp,
) -> Result<Tensor> {
    let zero = Operand::Scalar(Scalar::Int(0));
    // A bool tensor against `false`: against the integer 0 it promoted to
    // int64 first (8 bytes an element), and 10^5 bools took 52 µs to `any`.
    let zero_of_a = match a.dtype() {
        DType::Bool => Operand::Scalar(Scalar::Bool(false)),
        _ => zero,
    };
    let picked = compare(a.into(), zero_of_a, pick)?;
    let count = sum(&picked, dims, keepdim, None)?;
    let out = compare((&count).into(), zero, verdict)?;
    if a.dtype() == DType::U8 {
        return out.to_dtype(DType::U8);
    }
    Ok(out)
}

/// `argmax(dim=None, keepdim=False)`: int64 positions of the largest values
/// (the first of equals; NaN wins); without `dim`, in the flattened tensor.
///
/// ```
/// use dlbridge::{Tensor, ops};
/// let a = Tensor::from_vec(vec![1.0f32, 5.0, 2.0], &[3])?;
/// assert_eq!(ops::argmax(&a, None, false)?.to_vec::<i64>()?, vec![1]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn argmax(a: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    arg("argmax", a, dim, keepdim, max_dim)
}

/// `argmin(dim=None, keepdim=False)`.
///
/// ```
/// use dlbridge::{Tensor, ops};
/// let a = Tensor::from_vec(vec![1.0f32, 5.0, 0.5], &[3])?;
/// assert_eq!(ops::argmin(&a, Some(0), true)?.to_vec::<i64>()?, vec![2]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn argmin(a: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    arg("argmin", a, dim, keepdim, min_dim)
}

fn arg(
    name: &str,
    a: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    by_dim: fn(&Tensor, i64, bool) -> Result<super::Reduced>,
) -> Result<Tensor> {
    match dim {
        Some(d) => Ok(by_dim(a, d, keepdim)?.indices),
        None if a.numel() == 0 => bail!(
            IndexOutOfRange,
            "{name}(): Expected reduction dim to be specified for input.numel() == 0."
        ),
        None => {
            let flat = by_dim(&a.reshape(&[-1])?, 0, false)?.indices;
            if keepdim {
                return flat.view(&vec![1; a.ndim()]);
            }
            Ok(flat)
        }
    }
}

/// `conj_physical()`: a copy with the imaginary parts negated; real tensors
/// come back as they are (PyTorch's `conj` of a real tensor is itself).
///
/// ```
/// use dlbridge::{Tensor, ops, num_complex::Complex64};
/// let z = Tensor::from_vec(vec![Complex64::new(1.0, 2.0)], &[1])?;
/// assert_eq!(ops::conj_physical(&z)?.to_vec::<Complex64>()?, vec![Complex64::new(1.0, -2.0)]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn conj_physical(a: &Tensor) -> Result<Tensor> {
    if !a.dtype().is_complex() {
        return Ok(a.clone());
    }
    let out = a.clone_data()?;
    // The imaginary parts of the fresh contiguous copy, seen as reals.
    let real = a.dtype().to_real();
    let l = out.layout();
    let mut shape = l.shape.clone();
    let mut strides = l.strides.clone();
    shape.push(1);
    strides.push(real.size() as isize);
    let imag = Tensor::from_parts(
        out.storage().clone(),
        Layout {
            shape,
            strides,
            offset: l.offset + real.size(),
        },
        real,
    )?;
    binary_(&imag, Scalar::Int(-1).into(), BinaryOp::Mul)?;
    Ok(out)
}
