//! Argument parsing: how the arguments PyTorch's API takes become core
//! values. Sizes (`f(2, 3)` or `f((2, 3))`) and dimensions, Python and NumPy
//! numbers, the forms of `to()` with its keywords, and a factory's
//! `dtype=`/`device=`. (Tensor arguments: `arg.rs`.)
//!
//! Layer: above `tensor` (`to(other)` reads a tensor's placement), below
//! every module that implements a method.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::device::{extract_device, extract_opt_device};
use super::dtype::{PyDType, extract_opt_dtype, foreign_dtype};
use super::errors::type_name;
use super::tensor::PyTensor;
use crate::{DType, Device, Scalar};
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyComplex, PyDict, PyFloat, PyInt, PyTuple};

// ----- sizes and dimensions -----

/// Shape arguments as PyTorch takes them: `f(2, 3)` or `f((2, 3))`.
pub(crate) fn parse_size(args: &Bound<'_, PyTuple>) -> PyResult<Vec<usize>> {
    check_sizes(&size_values(args)?, None)
}

/// The raw (possibly negative) sizes in `f(2, 3)` or `f((2, 3))`.
pub(crate) fn size_values(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    let size = |i: Bound<'_, PyAny>| {
        i.extract::<i64>().map_err(|_| {
            PyTypeError::new_err(format!(
                "size must be a tuple of ints, not {}",
                type_name(&i)
            ))
        })
    };
    if args.len() == 1 && !args.get_item(0)?.is_instance_of::<PyInt>() {
        args.get_item(0)?.try_iter()?.map(|i| size(i?)).collect()
    } else {
        args.iter().map(size).collect()
    }
}

/// Refuses negative sizes with PyTorch's message (`zeros` has its own).
pub(crate) fn check_sizes(sizes: &[i64], factory: Option<&str>) -> PyResult<Vec<usize>> {
    if let Some(&bad) = sizes.iter().find(|&&n| n < 0) {
        return Err(PyRuntimeError::new_err(match factory {
            Some(name) => format!("{name}: Dimension size must be non-negative."),
            None => format!("Trying to create tensor with negative dimension {bad}: {sizes:?}"),
        }));
    }
    Ok(sizes.iter().map(|&n| n as usize).collect())
}

/// A dimension index (negative counts from the end) for `ndim` dimensions;
/// a 0-d tensor takes 0 and -1.
pub(crate) fn normalize_dim(dim: isize, ndim: usize) -> PyResult<usize> {
    let n = ndim.max(1) as isize;
    let d = if dim < 0 { dim + n } else { dim };
    if d < 0 || d >= n {
        return Err(PyIndexError::new_err(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -n,
            n - 1
        )));
    }
    Ok(d as usize)
}

// ----- numbers -----

/// A Python number as a scalar, or `None` when `ob` is not a number.
pub(crate) fn to_scalar(ob: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if let Ok(b) = ob.cast::<PyBool>() {
        return Ok(Some(Scalar::Bool(b.is_true())));
    }
    if ob.is_instance_of::<PyInt>() {
        return int_scalar(ob).map(Some);
    }
    if let Ok(f) = ob.cast::<PyFloat>() {
        return Ok(Some(Scalar::Float(f.value())));
    }
    if let Ok(c) = ob.cast::<PyComplex>() {
        return Ok(Some(Scalar::Complex(c.real(), c.imag())));
    }
    // NumPy scalars (np.int32(3), np.bool_(True), ...) are not all Python number types.
    if is_numpy_scalar(ob)? {
        return to_scalar(&ob.call_method0(pyo3::intern!(ob.py(), "item"))?);
    }
    Ok(None)
}

/// A number argument (`fill_value`, `start`, ...), named `what` in the error.
pub(crate) fn number(ob: &Bound<'_, PyAny>, what: &str) -> PyResult<Scalar> {
    to_scalar(ob)?.ok_or_else(|| {
        PyTypeError::new_err(format!("{what} must be a number, not {}", type_name(ob)))
    })
}

static NUMPY_GENERIC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Whether `ob` is a NumPy scalar (an instance of `numpy.generic`).
pub(crate) fn is_numpy_scalar(ob: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = ob.py();
    let generic = NUMPY_GENERIC.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import("numpy")?.getattr("generic")?.unbind())
    })?;
    ob.is_instance(generic.bind(py))
}

fn int_scalar(ob: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if let Ok(i) = ob.extract::<i64>() {
        return Ok(Scalar::Int(i as i128));
    }
    if let Ok(u) = ob.extract::<u64>() {
        return Ok(Scalar::Int(u as i128));
    }
    Err(PyRuntimeError::new_err(format!(
        "Overflow when unpacking long: {ob} does not fit in 64 bits"
    )))
}

// ----- placement -----

/// Where `to()` sends a tensor: each part `None` when it stays.
pub(crate) struct Target {
    pub device: Option<Device>,
    pub dtype: Option<DType>,
    pub copy: bool,
}

/// `to(device)`, `to(dtype)`, `to(device, dtype)`, `to(other)`, with
/// `device=`, `dtype=`, `copy=` and `non_blocking=` keywords.
pub(crate) fn to_target(
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Target> {
    let (mut device, mut dtype, mut copy) = (None, None, false);
    for arg in args.iter() {
        if let Ok(d) = arg.cast::<PyDType>() {
            dtype = Some(d.get().0);
        } else if let Ok(t) = arg.cast::<PyTensor>() {
            device = Some(t.get().inner.device());
            dtype = Some(t.get().inner.dtype());
        } else if let Some(d) = foreign_dtype(&arg)? {
            // `to(torch.float16)`, `to(np.float32)`: another framework's dtype.
            dtype = Some(d);
        } else if arg.is_instance_of::<PyBool>() {
            // to(device, dtype, non_blocking, copy): positional flags.
            continue;
        } else {
            device = Some(extract_device(&arg)?);
        }
    }
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            match k.extract::<String>()?.as_str() {
                "device" => device = extract_opt_device(Some(&v))?.or(device),
                "dtype" => dtype = extract_opt_dtype(Some(&v))?.or(dtype),
                "copy" => copy = v.is_truthy()?,
                "non_blocking" | "memory_format" => {}
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "to() got an unexpected keyword argument '{other}'"
                    )));
                }
            }
        }
    }
    Ok(Target {
        device,
        dtype,
        copy,
    })
}

/// The `dtype=` and `device=` of a factory, with PyTorch's defaults (float32, CPU).
pub(crate) fn placement(
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<(DType, Device)> {
    Ok((
        extract_opt_dtype(dtype)?.unwrap_or(DType::DEFAULT_FLOAT),
        extract_opt_device(device)?.unwrap_or(Device::CPU),
    ))
}
