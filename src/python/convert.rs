//! Conversions of a tensor: to another device or dtype (`to`, `cuda`, `cpu`,
//! `type`, `float`, ... `contiguous`), and to Python values (`item`,
//! `tolist`, `len`, `bool`, `float`, `int`, `index`, `dlbridge.Size` shapes
//! and strides, `repr`).
//!
//! Layer: above `args`; only `methods` uses it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::args::{Target, normalize_dim, to_target};
use super::device::extract_opt_device;
use super::dtype::extract_dtype;
use super::errors::{IntoPyResult, warn_if_imaginary_dropped};
use super::tensor::{PyTensor, legacy_type_name, maybe_detach};
use crate::{DType, Device, Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyComplex, PyDict, PyList, PyTuple};

// ----- device and dtype -----

/// The shared body of `to`, `cuda`, `cpu`, `type` and the dtype shortcuts:
/// the same object when nothing changes, a new tensor otherwise.
fn convert(slf: &Bound<'_, PyTensor>, target: Target) -> PyResult<Py<PyAny>> {
    let Target {
        device,
        dtype,
        copy,
    } = target;
    let py = slf.py();
    let this = slf.get();
    let t = &this.inner;
    let device = device.map(resolve_device);
    let same_device = device.is_none_or(|d| d == t.device());
    let same_dtype = dtype.is_none_or(|d| d == t.dtype());
    if same_device && same_dtype && !copy {
        return Ok(slf.clone().into_any().unbind());
    }
    if let Some(d) = dtype {
        warn_if_imaginary_dropped(py, t.dtype(), d)?;
    }
    let out = maybe_detach(py, t.numel(), || -> crate::Result<Tensor> {
        let moved = match device {
            Some(d) if d != t.device() => t.to_device(d)?,
            _ => t.clone(),
        };
        let cast = moved.to_dtype(dtype.unwrap_or(t.dtype()))?;
        if copy && cast.storage().as_ptr() == t.storage().as_ptr() {
            cast.clone_like()
        } else {
            Ok(cast)
        }
    })
    .py()?;
    Ok(Py::new(py, this.derived(out))?.into_any())
}

/// `cuda` without an index means the current device, which is device 0
/// (as in PyTorch, a `cuda:1` tensor's `.to('cuda')` moves to it).
fn resolve_device(d: Device) -> Device {
    match (d.kind, d.index) {
        (crate::DeviceKind::Cuda, None) => Device::cuda(Some(0)),
        _ => d.canonical(),
    }
}

fn moved_to(device: Device) -> Target {
    Target {
        device: Some(device),
        dtype: None,
        copy: false,
    }
}

/// `to(...)`: see [`to_target`] for the forms it takes.
pub(crate) fn to(
    slf: &Bound<'_, PyTensor>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    convert(slf, to_target(args, kwargs)?)
}

/// `cuda(device=None)`: a copy on a CUDA device (the current one by default).
pub(crate) fn cuda(
    slf: &Bound<'_, PyTensor>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let d = extract_opt_device(device)?.unwrap_or(Device::cuda(None));
    if d.is_cpu() {
        return Err(PyRuntimeError::new_err(format!(
            "Invalid device, must be cuda device, got {d}"
        )));
    }
    convert(slf, moved_to(d))
}

/// `cpu(device=None)`: itself when on the CPU, else a host copy.
pub(crate) fn cpu(
    slf: &Bound<'_, PyTensor>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    if let Some(d) = extract_opt_device(device)?
        && !d.is_cpu()
    {
        return Err(PyRuntimeError::new_err(format!(
            "cpu() moves to the CPU, but device {d} was given"
        )));
    }
    convert(slf, moved_to(Device::CPU))
}

/// `type()`: the legacy type name; `type(dtype)`: a cast.
pub(crate) fn type_(
    slf: &Bound<'_, PyTensor>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    match dtype {
        None => Ok(legacy_type_name(&slf.get().inner)
            .into_pyobject(slf.py())?
            .into_any()
            .unbind()),
        Some(d) => cast(slf, extract_dtype(d)?),
    }
}

/// `float()`, `double()`, ...: the tensor as `dtype` (itself if it already is).
pub(crate) fn cast(slf: &Bound<'_, PyTensor>, dtype: DType) -> PyResult<Py<PyAny>> {
    convert(
        slf,
        Target {
            device: None,
            dtype: Some(dtype),
            copy: false,
        },
    )
}

/// `contiguous()`: itself when contiguous, else a contiguous copy.
pub(crate) fn contiguous(slf: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
    let this = slf.get();
    if this.inner.is_contiguous() {
        return Ok(slf.clone().into_any().unbind());
    }
    let copy = this.compute(slf.py(), Tensor::clone_data)?;
    Ok(Py::new(slf.py(), copy)?.into_any())
}

// ----- Python values -----

pub(crate) fn scalar_to_py(py: Python<'_>, s: Scalar) -> PyResult<Py<PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        Scalar::Complex(re, im) => PyComplex::from_doubles(py, re, im).into_any().unbind(),
    })
}

/// Nested lists of `values`, shaped like `shape` (a bare scalar for 0-d).
fn nested_list(py: Python<'_>, shape: &[usize], values: &[Scalar]) -> PyResult<Py<PyAny>> {
    if shape.is_empty() {
        return scalar_to_py(py, values[0]);
    }
    let step = values.len().checked_div(shape[0]).unwrap_or(0);
    let items = (0..shape[0])
        .map(|i| nested_list(py, &shape[1..], &values[i * step..(i + 1) * step]))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, items)?.into_any().unbind())
}

/// `item()`.
pub(crate) fn item(py: Python<'_>, t: &Tensor) -> PyResult<Py<PyAny>> {
    scalar_to_py(py, t.item().py()?)
}

/// `tolist()`.
pub(crate) fn tolist(py: Python<'_>, t: &Tensor) -> PyResult<Py<PyAny>> {
    nested_list(py, t.shape(), &t.to_scalars().py()?)
}

/// `len(t)`: the first dimension.
pub(crate) fn len(t: &Tensor) -> PyResult<usize> {
    t.shape()
        .first()
        .copied()
        .ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
}

/// `bool(t)`: only for one element.
pub(crate) fn truth(t: &Tensor) -> PyResult<bool> {
    if t.numel() != 1 {
        return Err(PyRuntimeError::new_err(format!(
            "Boolean value of Tensor with {} is ambiguous",
            if t.numel() == 0 {
                "no values"
            } else {
                "more than one value"
            }
        )));
    }
    Ok(match t.item().py()? {
        Scalar::Bool(b) => b,
        Scalar::Int(i) => i != 0,
        Scalar::Float(f) => f != 0.0,
        Scalar::Complex(re, im) => re != 0.0 || im != 0.0,
    })
}

/// The single value behind `float(t)` and `int(t)`.
fn scalar_value(t: &Tensor) -> PyResult<Scalar> {
    if t.numel() != 1 {
        return Err(PyValueError::new_err(
            "only one element tensors can be converted to Python scalars",
        ));
    }
    t.item().py()
}

/// `float(t)`.
pub(crate) fn float(t: &Tensor) -> PyResult<f64> {
    match scalar_value(t)? {
        Scalar::Bool(b) => Ok(b as u8 as f64),
        Scalar::Int(i) => Ok(i as f64),
        Scalar::Float(f) => Ok(f),
        Scalar::Complex(..) => Err(PyTypeError::new_err("can't convert complex to float")),
    }
}

/// `int(t)`.
pub(crate) fn int(t: &Tensor) -> PyResult<i128> {
    match scalar_value(t)? {
        Scalar::Bool(b) => Ok(b as i128),
        Scalar::Int(i) => Ok(i),
        Scalar::Float(f) if f.is_finite() => Ok(f.trunc() as i128),
        Scalar::Float(_) => Err(PyRuntimeError::new_err(
            "cannot convert float infinity or NaN to integer",
        )),
        Scalar::Complex(..) => Err(PyTypeError::new_err("can't convert complex to int")),
    }
}

/// `operator.index(t)`: only one-element integer (or bool) tensors.
pub(crate) fn index(t: &Tensor) -> PyResult<i128> {
    match (t.dtype().category(), t.numel()) {
        (crate::Category::Integral | crate::Category::Bool, 1) => int(t),
        _ => Err(PyTypeError::new_err(
            "only integer tensors of a single element can be converted to an index",
        )),
    }
}

// ----- shapes -----

static SIZE_TYPE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `dlbridge.Size(...)`, the tuple subclass PyTorch returns for shapes.
pub(crate) fn shape<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let tuple = PyTuple::new(py, t.shape())?;
    match SIZE_TYPE.get_or_try_init(py, || -> PyResult<_> {
        Ok(py.import("dlbridge")?.getattr("Size")?.unbind())
    }) {
        Ok(size) => size.bind(py).call1((tuple,)),
        Err(_) => Ok(tuple.into_any()),
    }
}

/// Entry `dim` of `values` (1 for a 0-d tensor's dimension 0 or -1).
fn entry<'py, T>(py: Python<'py>, values: &[T], dim: isize) -> PyResult<Bound<'py, PyAny>>
where
    T: IntoPyObject<'py, Output = Bound<'py, pyo3::types::PyInt>> + Copy + From<u8>,
    PyErr: From<T::Error>,
{
    let d = normalize_dim(dim, values.len())?;
    let v = values.get(d).copied().unwrap_or(T::from(1));
    Ok(v.into_pyobject(py)?.into_any())
}

/// `size(dim=None)`: the shape, or one of its entries.
pub(crate) fn size<'py>(
    py: Python<'py>,
    t: &Tensor,
    dim: Option<isize>,
) -> PyResult<Bound<'py, PyAny>> {
    match dim {
        None => shape(py, t),
        Some(d) => entry(py, t.shape(), d),
    }
}

/// `stride(dim=None)`: the element strides, or one of them.
pub(crate) fn stride<'py>(
    py: Python<'py>,
    t: &Tensor,
    dim: Option<isize>,
) -> PyResult<Bound<'py, PyAny>> {
    let strides = t.strides().py()?;
    match dim {
        None => Ok(PyTuple::new(py, strides)?.into_any()),
        Some(d) => entry(py, &strides, d),
    }
}

/// `repr(t)`, formatted in Python by `dlbridge._repr`.
pub(crate) fn repr(slf: &Bound<'_, PyTensor>) -> PyResult<String> {
    slf.py()
        .import("dlbridge")?
        .getattr("_repr")?
        .call1((slf,))?
        .extract()
}
