//! Pickling: `Tensor.__reduce_ex__`, its reconstructor, `__copy__` and
//! `__deepcopy__`.
//!
//! A tensor pickles as the bytes it spans plus its own description (dtype,
//! shape, element strides, offset into the bytes, device, requires_grad),
//! so views keep their strides, as PyTorch's pickles do. Under protocol 5
//! the bytes go as a `pickle.PickleBuffer` over the tensor's own memory:
//! with a `buffer_callback` nothing is copied at `dumps`, and `loads` from
//! that buffer wraps it without a copy (a read-only buffer, as Ray's object
//! store hands out, gives a read-only tensor). Older protocols (which
//! `multiprocessing` uses before Python 3.14) carry one copy as `bytes`,
//! and a writable tensor is rebuilt over that fresh `bytes` object's own
//! memory, as NumPy rebuilds its arrays: one copy each way, as NumPy's. A
//! CUDA tensor pickles through host memory and comes back on the same
//! device index.
//!
//! The reconstructor trusts nothing: the buffer is foreign memory and the
//! description goes through `foreign::view_in`, which refuses anything
//! reaching outside the buffer. (Pickle itself can run any code: never
//! unpickle data you do not trust.)
//!
//! Layer: above `numpy` (the bytes travel as a uint8 ndarray) and `tensor`.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> creation -> convert,
//! arith, index, cuda, sharing -> methods -> mod.rs)

use super::errors::IntoPyResult;
use super::numpy::{descr_for, ndarray_over, release_array, tensor_from_ndarray};
use super::tensor::PyTensor;
use crate::foreign::{self, ForeignTensor};
use crate::layout::Layout;
use crate::storage::{Owner, Retained};
use crate::{DType, Device, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyTuple};

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
        // Copied through raw pointers, never a `&[u8]` over tensor memory:
        // another thread may write it meanwhile, and an empty tensor's data
        // pointer may be NULL (torch's are).
        let (src, len) = (bytes.data_ptr(), bytes.numel());
        PyBytes::new_with(py, len, |out| {
            if len > 0 {
                // SAFETY: the span holds len bytes that `host` keeps alive,
                // and `out` is a fresh buffer of len bytes.
                unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), len) };
            }
            Ok(())
        })?
        .into_any()
    };
    // Protocol 5 lets the buffer's own flag say; `bytes` says read-only.
    let writable = (protocol < 5).then_some(!host.is_read_only());
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
        writable,
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
/// `writable`: None takes the buffer's own flag; True (older protocols)
/// makes the tensor writable, over a fresh `bytes` object's memory.
#[pyfunction]
#[pyo3(signature = (buffer, dtype, shape, strides, offset, device, requires_grad, writable=None))]
#[allow(clippy::too_many_arguments)]
fn _rebuild_tensor_v1(
    buffer: &Bound<'_, PyAny>,
    dtype: &str,
    shape: Vec<i64>,
    strides: Vec<i64>,
    offset: i64,
    device: &str,
    requires_grad: bool,
    writable: Option<bool>,
) -> PyResult<PyTensor> {
    let dtype = DType::from_name(dtype).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "unknown dtype '{dtype}' in a pickled dlbridge tensor"
        ))
    })?;
    let device = Device::parse(device).py()?;
    let bytes = bytes_tensor(buffer, writable)?;
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

/// The buffer's bytes as a uint8 tensor over the same memory (a copy only
/// when a writable tensor must come from a tiny or non-`bytes` read-only
/// buffer).
fn bytes_tensor(buffer: &Bound<'_, PyAny>, writable: Option<bool>) -> PyResult<Tensor> {
    let py = buffer.py();
    if writable == Some(true)
        && let Ok(b) = buffer.cast_exact::<PyBytes>()
        && b.as_bytes().len() > 1
    {
        // A `bytes` object the unpickler just made for this tensor alone:
        // its memory becomes the tensor's, written in place, as NumPy's
        // unpickling does (the empty and one-byte `bytes` are interpreter
        // singletons, hence the length check).
        let data = b.as_bytes();
        let checked = ForeignTensor {
            data: data.as_ptr().cast_mut(),
            shape: vec![data.len()],
            byte_strides: vec![1],
            dtype: DType::U8,
            device: Device::CPU,
            read_only: false,
        }
        .check()
        .py()?;
        // SAFETY: release_array gives back exactly the reference into_ptr takes.
        let owner = Owner::Retained(unsafe {
            Retained::new(b.clone().into_any().into_ptr().cast(), release_array)
        });
        // SAFETY: a bytes object's data stays put while it lives, and the
        // owner holds it.
        return Ok(unsafe { checked.wrap(owner) });
    }
    let frombuffer = FROMBUFFER.get_or_try_init(py, || {
        py.import("numpy")?.getattr("frombuffer").map(Bound::unbind)
    })?;
    let array = frombuffer
        .bind(py)
        .call1((buffer, descr_for(py, DType::U8)?))?;
    let bytes = tensor_from_ndarray(&array)?;
    if writable == Some(true) && bytes.is_read_only() {
        return bytes.clone_data().py();
    }
    Ok(bytes)
}

/// `copy.copy(t)`: a new tensor object over the same memory, as PyTorch's.
pub(crate) fn shallow_copy(this: &PyTensor) -> PyTensor {
    this.derived(this.inner.clone())
}

/// `copy.deepcopy(t)`: a contiguous copy in new memory, on the same device.
pub(crate) fn deep_copy(py: Python<'_>, this: &PyTensor) -> PyResult<PyTensor> {
    this.compute(py, Tensor::clone_data)
}
