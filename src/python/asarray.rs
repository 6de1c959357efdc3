//! `as_tensor` and `asarray`: data as a tensor, sharing memory whenever the
//! dtype and device allow (a dlbridge tensor comes back as the same object,
//! an ndarray or any DLPack producer is viewed zero-copy), copying only
//! what must be converted or moved; lists and numbers make new tensors.
//!
//! Layer: above `creation` (the copies) and `dlpack_import`; only `mod.rs`
//! uses it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::arg::{Producers, Value, read};
use super::creation::tensor_from_nested;
use super::device::extract_opt_device;
use super::dtype::extract_opt_dtype;
use super::errors::IntoPyResult;
use super::tensor::{PyTensor, maybe_detach};
use crate::Tensor;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(as_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(asarray, m)?)?;
    Ok(())
}

/// `as_tensor(data, dtype=None, device=None)`: shares memory when it can.
#[pyfunction]
#[pyo3(signature = (data, dtype=None, device=None))]
fn as_tensor<'py>(
    data: &Bound<'py, PyAny>,
    dtype: Option<&Bound<'py, PyAny>>,
    device: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    convert(data, dtype, device, None, false)
}

/// `asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False)`
/// with the array API's `copy`: `True` always copies, `False` never does
/// (a `ValueError` when it would have to), `None` copies only when needed.
#[pyfunction]
#[pyo3(signature = (obj, *, dtype=None, device=None, copy=None, requires_grad=false))]
fn asarray<'py>(
    obj: &Bound<'py, PyAny>,
    dtype: Option<&Bound<'py, PyAny>>,
    device: Option<&Bound<'py, PyAny>>,
    copy: Option<bool>,
    requires_grad: bool,
) -> PyResult<Bound<'py, PyAny>> {
    convert(obj, dtype, device, copy, requires_grad)
}

/// The memory `data` already has as a tensor (a dlbridge tensor with its
/// `requires_grad`, an ndarray, a DLPack producer), or `None` for data that
/// has none (lists, numbers).
fn existing(data: &Bound<'_, PyAny>) -> PyResult<Option<(Tensor, bool)>> {
    Ok(match read(data, Producers::Import)? {
        Value::Tensor {
            tensor,
            requires_grad,
            ..
        } => Some((tensor, requires_grad)),
        Value::Scalar(_) | Value::Other => None,
    })
}

fn convert<'py>(
    data: &Bound<'py, PyAny>,
    dtype: Option<&Bound<'py, PyAny>>,
    device: Option<&Bound<'py, PyAny>>,
    copy: Option<bool>,
    requires_grad: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let py = data.py();
    let dtype = extract_opt_dtype(dtype)?;
    let device = extract_opt_device(device)?;
    let Some((src, grad)) = existing(data)? else {
        if copy == Some(false) {
            return Err(PyValueError::new_err(
                "can't alias arbitrary sequence into a tensor.",
            ));
        }
        let t = tensor_from_nested(data, dtype, device)?;
        return finish(py, t, requires_grad);
    };
    let dt = dtype.unwrap_or(src.dtype());
    let dev = device.map_or(src.device(), |d| crate::backend::resolve(d).unwrap_or(d));
    let same = dt == src.dtype() && dev == src.device();
    if copy == Some(false) && !same {
        let why = if dt == src.dtype() {
            format!(
                "can't alias tensor on device '{}' into device '{dev}'.",
                src.device()
            )
        } else {
            format!(
                "can't alias tensor with dtype '{}' into dtype '{}'.",
                src.dtype().scalar_type_name(),
                dt.scalar_type_name()
            )
        };
        return Err(PyValueError::new_err(why));
    }
    if same && copy != Some(true) {
        // The very object for a dlbridge tensor, as PyTorch returns it.
        if data.is_instance_of::<PyTensor>() && (grad || !requires_grad) {
            return Ok(data.clone());
        }
        return finish(py, src, requires_grad || grad);
    }
    let n = src.numel();
    let out = maybe_detach(py, n, || -> crate::Result<Tensor> {
        let fresh = src.to_device(dev)?.to_dtype(dt)?;
        // Neither a move nor a conversion made new memory: `copy=True` does.
        if fresh.data_ptr() == src.data_ptr() && fresh.device() == src.device() {
            return fresh.clone_data();
        }
        Ok(fresh)
    })
    .py()?;
    let differentiable = dt.is_floating_point() || dt.is_complex();
    finish(py, out, requires_grad || grad && differentiable)
}

fn finish(py: Python<'_>, t: Tensor, requires_grad: bool) -> PyResult<Bound<'_, PyAny>> {
    let dt = t.dtype();
    if requires_grad && !(dt.is_floating_point() || dt.is_complex()) {
        return Err(PyRuntimeError::new_err(
            "Only Tensors of floating point and complex dtype can require gradients",
        ));
    }
    Ok(Bound::new(py, PyTensor::with_grad(t, requires_grad))?.into_any())
}
