//! Tensors made from a range: `arange` and `eye`.

use super::check_computable;
use crate::{DType, Device, Result, Scalar, Tensor, bail};

/// `arange(start, end, step)`: integers when every bound is an integer.
///
/// ```
/// use dlbridge::{DType, Device, ops};
/// let r = ops::arange(0.into(), 1.into(), 0.25.into(), None, Device::CPU)?;
/// assert_eq!((r.dtype(), r.to_vec::<f32>()?), (DType::F32, vec![0.0, 0.25, 0.5, 0.75]));
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn arange(
    start: Scalar,
    end: Scalar,
    step: Scalar,
    dtype: Option<DType>,
    device: Device,
) -> Result<Tensor> {
    let all_int = [start, end, step]
        .iter()
        .all(|s| matches!(s, Scalar::Int(_) | Scalar::Bool(_)));
    let dtype = dtype.unwrap_or(if all_int {
        DType::I64
    } else {
        DType::DEFAULT_FLOAT
    });
    check_computable("arange", dtype, device)?;
    let (s, e, st) = (start.as_f64(), end.as_f64(), step.as_f64());
    if st == 0.0 {
        bail!(InvalidOperation, "step must be nonzero");
    }
    if !(s.is_finite() && e.is_finite()) {
        bail!(InvalidOperation, "unsupported range: {s} -> {e}");
    }
    if (st > 0.0 && e < s) || (st < 0.0 && e > s) {
        bail!(
            InvalidOperation,
            "upper bound and lower bound inconsistent with step sign"
        );
    }
    let count = ((e - s) / st).ceil();
    // PyTorch's check and words; NaN fails it too.
    if !(0.0..=crate::layout::MAX_NUMEL as f64).contains(&count) {
        bail!(TooLarge, "invalid size, possible overflow?");
    }
    let n = count as usize;
    let t = match (start, step) {
        (Scalar::Int(a), Scalar::Int(b)) if all_int => {
            Tensor::from_fn(&[n], dtype, |i| Scalar::Int(a + b * i as i128))
        }
        _ => Tensor::from_fn(&[n], dtype, |i| Scalar::Float(s + st * i as f64)),
    }?;
    t.to_device(device)
}

/// The identity matrix (`eye(n, m)`).
///
/// ```
/// use dlbridge::{DType, Device, ops};
/// let i = ops::eye(2, Some(3), DType::U8, Device::CPU)?;
/// assert_eq!(i.to_vec::<u8>()?, vec![1, 0, 0, 0, 1, 0]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn eye(n: usize, m: Option<usize>, dtype: DType, device: Device) -> Result<Tensor> {
    let m = m.unwrap_or(n);
    let t = Tensor::zeros(&[n, m], dtype, device)?;
    let diagonal = t.with_layout(crate::Layout {
        shape: vec![n.min(m)],
        strides: vec![t.layout().strides.iter().sum()],
        offset: 0,
    });
    diagonal.fill_(Scalar::Int(1))?;
    Ok(t)
}
