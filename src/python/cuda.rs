//! `dlbridge.cuda` (device queries, as in `torch.cuda`) and the
//! `__cuda_array_interface__` of CUDA tensors.
//!
//! Layer: above `device` and `tensor`; `methods` and `mod.rs` use it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::device::extract_opt_device;
use super::errors::IntoPyResult;
use super::tensor::PyTensor;
use crate::backend::Accelerator as _;
use crate::{DType, Device, NumpyType};
use pyo3::exceptions::{PyAttributeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::path::PathBuf;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Wheels put libnvrtc under site-packages/nvidia/*/lib: let the loader
    // look in every sys.path entry (read now, searched only when needed).
    let path = m.py().import("sys")?.getattr("path")?;
    let roots: Vec<PathBuf> = path
        .try_iter()?
        .filter_map(|p| p.ok()?.extract::<String>().ok())
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .collect();
    crate::cuda::Cuda.add_library_roots(roots);
    m.add_function(wrap_pyfunction!(cuda_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_unavailable_reason, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_get_device_name, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_get_device_capability, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_nvrtc_version, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_nvrtc_path, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_compile_kernels, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_kernel_cache_dir, m)?)?;
    Ok(())
}

#[pyfunction]
fn cuda_is_available() -> bool {
    crate::cuda::Cuda.is_available()
}

#[pyfunction]
fn cuda_device_count() -> usize {
    crate::cuda::Cuda.device_count()
}

#[pyfunction]
fn cuda_unavailable_reason() -> Option<String> {
    crate::cuda::Cuda.unavailable_reason()
}

/// A device index from `None`, an int, a string or a `dlbridge.device`.
fn device_index(device: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u32>> {
    match extract_opt_device(device)? {
        None => Ok(None),
        Some(d) if d.is_cpu() => Err(PyValueError::new_err(format!(
            "Expected a cuda device, but got: {d}"
        ))),
        Some(d) => Ok(d.index),
    }
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn cuda_synchronize(py: Python<'_>, device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let index = device_index(device)?;
    py.detach(|| crate::cuda::Cuda.synchronize(index)).py()
}

#[pyfunction]
fn cuda_empty_cache(py: Python<'_>) -> PyResult<()> {
    py.detach(|| crate::cuda::Cuda.empty_cache()).py()
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn cuda_get_device_name(device: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
    crate::cuda::Cuda
        .device_name(device_index(device)?.unwrap_or(0))
        .py()
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn cuda_get_device_capability(device: Option<&Bound<'_, PyAny>>) -> PyResult<(i32, i32)> {
    crate::cuda::Cuda
        .capability(device_index(device)?.unwrap_or(0))
        .py()
}

#[pyfunction]
fn cuda_nvrtc_version() -> PyResult<(i32, i32)> {
    crate::cuda::nvrtc_version().py()
}

#[pyfunction]
fn cuda_nvrtc_path() -> Option<String> {
    crate::cuda::nvrtc_path().map(|p| p.display().to_string())
}

/// Compiles every kernel file for `arch` (e.g. "sm_90"), no GPU needed.
#[pyfunction]
fn cuda_compile_kernels(py: Python<'_>, arch: String) -> PyResult<Vec<(String, usize)>> {
    let sizes = py.detach(|| crate::cuda::compile_all(&arch)).py()?;
    Ok(sizes.into_iter().map(|(n, s)| (n.to_string(), s)).collect())
}

#[pyfunction]
fn cuda_kernel_cache_dir() -> Option<String> {
    crate::cuda::cache_dir().map(|p| p.display().to_string())
}

/// NumPy's type string for a dtype, as `__cuda_array_interface__` wants it
/// (NumPy has none for bfloat16 and the storage-only dtypes).
fn typestr(dtype: DType) -> Option<&'static str> {
    match dtype.numpy() {
        NumpyType::Builtin(typestr) => Some(typestr),
        _ => None,
    }
}

/// `Tensor.__cuda_array_interface__` (version 3), for CuPy, Numba and others.
/// `stream` is 1: consumers synchronise with the legacy default stream,
/// where all of dlbridge's work runs.
pub(crate) fn array_interface<'py>(slf: &Bound<'py, PyTensor>) -> PyResult<Bound<'py, PyDict>> {
    let py = slf.py();
    let this = slf.get();
    let t = &this.inner;
    if t.device().is_cpu() {
        return Err(PyAttributeError::new_err(format!(
            "Can't get __cuda_array_interface__ on non-CUDA tensor type: {}. If CUDA data is required \
             use tensor.cuda() to copy tensor to device memory.",
            super::tensor::legacy_type_name(t)
        )));
    }
    if this.requires_grad() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "Can't get __cuda_array_interface__ on Variable that requires grad. If gradients aren't \
             required, use var.detach() to get Variable that doesn't require grad.",
        ));
    }
    let ts = typestr(t.dtype()).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "dtype {} is not supported by __cuda_array_interface__",
            t.dtype().name()
        ))
    })?;
    let d = PyDict::new(py);
    d.set_item("typestr", ts)?;
    d.set_item("shape", PyTuple::new(py, t.shape())?)?;
    if t.is_contiguous() {
        d.set_item("strides", py.None())?;
    } else {
        d.set_item("strides", PyTuple::new(py, &t.layout().strides)?)?;
    }
    let ptr = if t.numel() == 0 {
        0
    } else {
        t.data_ptr() as usize
    };
    d.set_item("data", (ptr, t.is_read_only()))?;
    d.set_item("version", 3)?;
    d.set_item("stream", 1)?;
    t.storage().mark_device_use(&crate::cuda::Cuda);
    Ok(d)
}

/// The current device, as `torch.cuda.current_device()`: dlbridge has no
/// device switching, so it is always 0.
pub(crate) fn current_device() -> PyResult<u32> {
    if !crate::cuda::Cuda.is_available() {
        return Err(super::errors::to_py(crate::Error::no_cuda(Device::cuda(
            None,
        ))));
    }
    Ok(0)
}
