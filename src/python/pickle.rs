//! Pickling: `Tensor.__reduce_ex__`, its reconstructor, `__copy__` and
//! `__deepcopy__`.
//!
//! A tensor pickles as the bytes it spans plus its own description (dtype,
//! shape, element strides, offset into the bytes, device, requires_grad),
//! so views keep their strides, as PyTorch's pickles do. Under protocol 5
//! the bytes go as a `pickle.PickleBuffer` over the tensor's own memory:
//! with a `buffer_callback` nothing is copied at `dumps`, and `loads` from
//! that buffer wraps it without a copy (a read-only buffer, as Ray's object
//! store hands out, gives a read-only tensor). Older protocols carry a
//! copy (`bytearray`, or `bytes` for a read-only tensor). A CUDA tensor
//! pickles through host memory and comes back on the same device index.
//!
//! The reconstructor trusts nothing: the buffer is foreign memory and the
//! description goes through `foreign::view_in`, which refuses anything
//! reaching outside the buffer. (Pickle itself can run any code: never
//! unpickle data you do not trust.)
//!
//! Layer: above `numpy` (the bytes travel as a uint8 ndarray) and `tensor`.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> creation -> convert,
//! arith, index, cuda -> methods -> mod.rs)

use super::errors::IntoPyResult;
use super::numpy::{descr_for, ndarray_over, tensor_from_ndarray};
use super::tensor::PyTensor;
use crate::layout::Layout;
use crate::{DType, Device, Tensor, foreign};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyTuple};

/// The reconstructor's name: a new state layout gets a new name, so old
/// pickles keep loading.
const REBUILD: &str = "_rebuild_tensor_v1";

static PICKLE_BUFFER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static FROMBUFFER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static REBUILD_FN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_rebuild_tensor_v1, m)?)
}

/// `t` as a host tensor whose element strides are whole numbers (a copy
/// only when it is on a device, or its byte strides split elements).
fn host_tensor(t: &Tensor) -> PyResult<Tensor> {
    let host = t.to_device(Device::CPU).py()?;
    if host.layout().element_strides(host.dtype().size()).is_some() {
        Ok(host)
    } else {
        host.clone_data().py()
    }
}

/// The bytes `t` spans, as a uint8 tensor over the same memory, and the
/// element offset of `t`'s first element inside them.
fn spanned_bytes(t: &Tensor) -> (Tensor, usize) {
    let itemsize = t.dtype().size();
    let (lo, hi) = t.layout().byte_extent(itemsize);
    // `lo <= 0` is how far below element 0 the lowest element lies.
    let start = (t.layout().offset as isize + lo) as usize;
    let layout = Layout {
        shape: vec![(hi - lo) as usize],
        strides: vec![1],
        offset: start,
    };
    let bytes = Tensor::from_parts(t.storage().clone(), layout, DType::U8)
        .expect("a tensor's extent lies inside its storage");
    (bytes, (-lo) as usize / itemsize)
}

/// `Tensor.__reduce_ex__(protocol)`.
pub(crate) fn reduce_ex<'py>(
    slf: &Bound<'py, PyTensor>,
    protocol: i64,
) -> PyResult<Bound<'py, PyTuple>> {
    let py = slf.py();
    let this = slf.get();
    let t = &this.inner;
    let host = host_tensor(t)?;
    // The ndarray (protocol 5) must keep the bytes alive: the tensor object
    // itself when nothing was copied, else a new one over the copy.
    let holder = if std::ptr::eq(host.storage().as_ref(), t.storage().as_ref()) {
        slf.clone()
    } else {
        Bound::new(py, PyTensor::new(host.clone()))?
    };
    let (bytes, offset) = spanned_bytes(&host);
    let buffer = if protocol >= 5 {
        let array = ndarray_over(holder.as_any(), &bytes)?;
        PICKLE_BUFFER
            .get_or_try_init(py, || {
                py.import("pickle")?
                    .getattr("PickleBuffer")
                    .map(Bound::unbind)
            })?
            .bind(py)
            .call1((array,))?
    } else {
        // SAFETY: the span is initialised host memory that `host` keeps
        // alive for this borrow; no Python code runs while it is read.
        let data = unsafe { std::slice::from_raw_parts(bytes.data_ptr(), bytes.numel()) };
        if host.is_read_only() {
            PyBytes::new(py, data).into_any()
        } else {
            PyByteArray::new(py, data).into_any()
        }
    };
    let itemsize = host.dtype().size() as isize;
    let strides: Vec<isize> = host.layout().strides.iter().map(|s| s / itemsize).collect();
    let rebuild = REBUILD_FN.get_or_try_init(py, || {
        py.import("dlbridge._core")?
            .getattr(REBUILD)
            .map(Bound::unbind)
    })?;
    let state = (
        buffer,
        host.dtype().name(),
        PyTuple::new(py, host.shape())?,
        PyTuple::new(py, strides)?,
        offset,
        t.device().to_string(),
        this.requires_grad(),
    );
    PyTuple::new(
        py,
        [
            rebuild.bind(py).clone(),
            state.into_pyobject(py)?.into_any(),
        ],
    )
}

/// Rebuilds a pickled tensor: `buffer` holds the bytes (any object with
/// the buffer protocol), the rest describes the tensor inside them.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _rebuild_tensor_v1(
    py: Python<'_>,
    buffer: &Bound<'_, PyAny>,
    dtype: &str,
    shape: Vec<i64>,
    strides: Vec<i64>,
    offset: i64,
    device: &str,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let dtype = DType::from_name(dtype).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "unknown dtype '{dtype}' in a pickled dlbridge tensor"
        ))
    })?;
    let device = Device::parse(device).py()?;
    let frombuffer = FROMBUFFER.get_or_try_init(py, || {
        py.import("numpy")?.getattr("frombuffer").map(Bound::unbind)
    })?;
    let array = frombuffer
        .bind(py)
        .call1((buffer, descr_for(py, DType::U8)?))?;
    let bytes = tensor_from_ndarray(&array)?;
    let host = foreign::view_in(bytes.storage().clone(), &shape, &strides, offset, dtype).py()?;
    let t = if device.is_cpu() {
        host
    } else {
        if crate::backend::resolve(device).is_err() {
            return Err(PyRuntimeError::new_err(format!(
                "Attempting to deserialize a dlbridge tensor on {device}, but that device is not \
                 available here (dlbridge.cuda.is_available() is {}); send it with .cpu() instead",
                if crate::backend::resolve(Device::cuda(Some(0))).is_ok() {
                    "True"
                } else {
                    "False"
                }
            )));
        }
        host.to_device(device).py()?
    };
    let out = PyTensor::new(t);
    out.set_requires_grad(requires_grad)?;
    Ok(out)
}

/// `copy.copy(t)`: a new tensor object over the same memory, as PyTorch's.
pub(crate) fn shallow_copy(this: &PyTensor) -> PyTensor {
    this.derived(this.inner.clone())
}

/// `copy.deepcopy(t)`: a contiguous copy in new memory, on the same device.
pub(crate) fn deep_copy(py: Python<'_>, this: &PyTensor) -> PyResult<PyTensor> {
    this.compute(py, Tensor::clone_data)
}
