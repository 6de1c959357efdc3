//! Tensor factories: `Tensor(...)`, `tensor`, `zeros`, `ones`, `empty`,
//! `full`, `arange`, `eye`, `rand` and the `*_like` forms, with PyTorch's
//! defaults; and `tensor_from_data`, the copy of any data they take
//! (`tensor_from_nested` for data already read as no tensor).
//!
//! Layer: above `arg` (the one reader of tensor arguments) and `nested`;
//! `arith`, `index` and `asarray` use `tensor_from_data`/`tensor_from_nested`,
//! `methods` the constructor.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::arg::{Producers, Value, read};
use super::args::{check_sizes, number, parse_size, placement, size_values};
use super::device::extract_opt_device;
use super::dtype::extract_opt_dtype;
use super::errors::IntoPyResult;
use super::nested::{parse_nested, tensor_from_parsed};
use super::tensor::{PyTensor, maybe_detach};
use crate::{DType, Device, Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyTuple};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tensor, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(eye, m)?)?;
    m.add_function(wrap_pyfunction!(rand, m)?)?;
    m.add_function(wrap_pyfunction!(zeros_like, m)?)?;
    m.add_function(wrap_pyfunction!(ones_like, m)?)?;
    m.add_function(wrap_pyfunction!(empty_like, m)?)?;
    m.add_function(wrap_pyfunction!(full_like, m)?)?;
    m.add_function(wrap_pyfunction!(rand_like, m)?)?;
    Ok(())
}

/// `Tensor(data)`: a float32 copy of `data`; `Tensor(2, 3)`: a 2x3 tensor.
pub(crate) fn tensor_new(args: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
    if args.is_empty() {
        return Ok(PyTensor::new(
            Tensor::zeros(&[0], DType::F32, Device::CPU).py()?,
        ));
    }
    let first = args.get_item(0)?;
    if first.is_instance_of::<PyInt>() {
        return Ok(PyTensor::new(
            Tensor::zeros(&parse_size(args)?, DType::F32, Device::CPU).py()?,
        ));
    }
    if args.len() != 1 {
        return Err(PyTypeError::new_err(
            "Tensor() takes either sizes or one data argument",
        ));
    }
    let t = tensor_from_data(args.py(), &first, Some(DType::F32), None)?;
    Ok(PyTensor::new(t))
}

/// A fresh tensor holding `data`: nested sequences and numbers, an ndarray
/// (dtype kept), a tensor, or any DLPack producer.
pub(crate) fn tensor_from_data(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<DType>,
    device: Option<Device>,
) -> PyResult<Tensor> {
    match read(data, Producers::Import)? {
        Value::Tensor { tensor: src, .. } => {
            let dt = dtype.unwrap_or(src.dtype());
            let n = src.numel();
            let fresh = maybe_detach(py, n, || -> crate::Result<Tensor> {
                let out = Tensor::empty(src.shape(), dt, Device::CPU)?;
                out.copy_(&src.to_device(Device::CPU)?)?;
                Ok(out)
            })
            .py()?;
            placed(fresh, device)
        }
        Value::Scalar(_) | Value::Other => tensor_from_nested(data, dtype, device),
    }
}

/// A fresh tensor from nested sequences and numbers: `data` that
/// [`read`] found no tensor memory in (callers that already read it come
/// here directly rather than reading it again).
pub(crate) fn tensor_from_nested(
    data: &Bound<'_, PyAny>,
    dtype: Option<DType>,
    device: Option<Device>,
) -> PyResult<Tensor> {
    placed(
        tensor_from_parsed(&parse_nested(data)?, dtype).py()?,
        device,
    )
}

/// `t` (made on the host) on `device`.
fn placed(t: Tensor, device: Option<Device>) -> PyResult<Tensor> {
    match device {
        Some(d) if !d.is_cpu() => t.to_device(d).py(),
        _ => Ok(t),
    }
}

fn finish(t: Tensor, requires_grad: bool) -> PyResult<PyTensor> {
    let out = PyTensor::new(t);
    if requires_grad {
        let dt = out.inner.dtype();
        if !(dt.is_floating_point() || dt.is_complex()) {
            return Err(PyRuntimeError::new_err(
                "Only Tensors of floating point and complex dtype can require gradients",
            ));
        }
        return Ok(PyTensor::with_grad(out.inner, true));
    }
    Ok(out)
}

/// `tensor(data, *, dtype=None, device=None, requires_grad=False)`: always copies.
#[pyfunction]
#[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false))]
fn tensor(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let t = tensor_from_data(
        py,
        data,
        extract_opt_dtype(dtype)?,
        extract_opt_device(device)?,
    )?;
    finish(t, requires_grad)
}

macro_rules! filled_factory {
    ($name:ident, $doc:literal, $value:expr) => {
        #[doc = $doc]
        #[pyfunction]
        #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
        fn $name(
            size: &Bound<'_, PyTuple>,
            dtype: Option<&Bound<'_, PyAny>>,
            device: Option<&Bound<'_, PyAny>>,
            requires_grad: bool,
        ) -> PyResult<PyTensor> {
            let (dtype, device) = placement(dtype, device)?;
            let factory = (stringify!($name) == "zeros").then_some("zeros");
            let shape = check_sizes(&size_values(size)?, factory)?;
            let value: Option<Scalar> = $value;
            let t = match value {
                Some(v) => Tensor::full(&shape, v, dtype, device),
                None => Tensor::zeros(&shape, dtype, device),
            };
            finish(t.py()?, requires_grad)
        }
    };
}

filled_factory!(zeros, "A tensor of zeros (float32 by default).", None);
filled_factory!(
    ones,
    "A tensor of ones (float32 by default).",
    Some(Scalar::Int(1))
);
// `empty` hands out zeroed memory: reading it is then defined, and for large
// sizes the kernel's zero pages cost nothing extra.
filled_factory!(empty, "An uninitialised tensor (zeroed in practice).", None);

/// `rand(*size)`: uniform values in [0, 1).
#[pyfunction]
#[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
fn rand(
    size: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let (dtype, device) = placement(dtype, device)?;
    let shape = parse_size(size)?;
    finish(Tensor::rand(&shape, dtype, device).py()?, requires_grad)
}

/// `full(size, fill_value)`: the dtype follows the value (bool, int64, float32).
#[pyfunction]
#[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false))]
fn full(
    size: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let value = number(fill_value, "fill_value")?;
    let shape = parse_size(&PyTuple::new(size.py(), [size])?)?;
    let device = extract_opt_device(device)?.unwrap_or(Device::CPU);
    let dtype = extract_opt_dtype(dtype)?.unwrap_or(value.wrapped_dtype());
    finish(
        Tensor::full(&shape, value, dtype, device).py()?,
        requires_grad,
    )
}

/// `arange(end)`, `arange(start, end, step=1)`.
#[pyfunction]
#[pyo3(signature = (start, end=None, step=None, *, dtype=None, device=None, requires_grad=false))]
fn arange(
    start: &Bound<'_, PyAny>,
    end: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let (s, e) = match end {
        Some(e) if !e.is_none() => (number(start, "start")?, number(e, "end")?),
        _ => (Scalar::Int(0), number(start, "end")?),
    };
    let st = match step {
        Some(st) => number(st, "step")?,
        None => Scalar::Int(1),
    };
    let device = extract_opt_device(device)?.unwrap_or(Device::CPU);
    let t = crate::ops::arange(s, e, st, extract_opt_dtype(dtype)?, device).py()?;
    finish(t, requires_grad)
}

/// `eye(n, m=None)`: the identity matrix.
#[pyfunction]
#[pyo3(signature = (n, m=None, *, dtype=None, device=None, requires_grad=false))]
fn eye(
    n: i64,
    m: Option<i64>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let size = |v: i64, name: &str| {
        usize::try_from(v).map_err(|_| {
            PyRuntimeError::new_err(format!("{name} must be greater or equal to 0, got {v}"))
        })
    };
    let (n, m) = (size(n, "n")?, m.map(|m| size(m, "m")).transpose()?);
    let (dtype, device) = placement(dtype, device)?;
    finish(crate::ops::eye(n, m, dtype, device).py()?, requires_grad)
}

/// The tensor of `like`, and its dtype and device with the overrides.
fn like<'py>(
    like: &'py Bound<'py, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<(&'py Tensor, DType, Device)> {
    let t = like
        .cast::<PyTensor>()
        .map_err(|_| PyTypeError::new_err("expected a dlbridge.Tensor"))?;
    let t = &t.get().inner;
    Ok((
        t,
        extract_opt_dtype(dtype)?.unwrap_or(t.dtype()),
        extract_opt_device(device)?.unwrap_or(t.device()),
    ))
}

/// A new tensor shaped and laid out as `like` (PyTorch's `preserve_format`:
/// the strides of a transpose stay a transpose's), filled with `value`
/// (zeros when `None`).
fn filled_like(
    input: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    value: Option<Scalar>,
) -> PyResult<Tensor> {
    let (t, dtype, device) = like(input, dtype, device)?;
    let out = t.alloc_like(dtype, device, value.is_none()).py()?;
    if let Some(v) = value {
        out.fill_(v).py()?;
    }
    Ok(out)
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, device=None, requires_grad=false))]
fn zeros_like(
    input: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    finish(filled_like(input, dtype, device, None)?, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, device=None, requires_grad=false))]
fn empty_like(
    input: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    zeros_like(input, dtype, device, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, device=None, requires_grad=false))]
fn ones_like(
    input: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    finish(
        filled_like(input, dtype, device, Some(Scalar::Int(1)))?,
        requires_grad,
    )
}

#[pyfunction]
#[pyo3(signature = (input, fill_value, *, dtype=None, device=None, requires_grad=false))]
fn full_like(
    input: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let value = number(fill_value, "fill_value")?;
    finish(
        filled_like(input, dtype, device, Some(value))?,
        requires_grad,
    )
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, device=None, requires_grad=false))]
fn rand_like(
    input: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let (t, dtype, device) = like(input, dtype, device)?;
    finish(Tensor::rand(t.shape(), dtype, device).py()?, requires_grad)
}
