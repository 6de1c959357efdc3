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
//! and a writable tensor is rebuilt over a copy of that `bytes` object,
//! never over its memory (see `bytes_tensor`). A
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
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::errors::IntoPyResult;
use super::numpy::{descr_for, ndarray_over, tensor_from_ndarray};
use super::tensor::{PyTensor, maybe_detach};
use crate::foreign;
use crate::layout::Layout;
use crate::{DType, Device, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyTuple};

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

/// The buffer's bytes as a uint8 tensor over the same memory, or a copy
/// when a writable tensor must come from a read-only buffer.
///
/// Under protocols 0 to 4 the buffer is a `bytes` object the unpickler
/// made, and it is always copied: reusing its memory for a writable tensor
/// (as NumPy's unpickling does) would let a crafted pickle hand out that
/// same `bytes` object beside the tensor, or rebuild two tensors over it,
/// and writes would then change an immutable `bytes` object Python code
/// holds. No reference count can prove it unshared: the unpickler's memo
/// holds it during the call and can hand it out after it.
fn bytes_tensor(buffer: &Bound<'_, PyAny>, writable: Option<bool>) -> PyResult<Tensor> {
    let py = buffer.py();
    let frombuffer = FROMBUFFER.get_or_try_init(py, || {
        py.import("numpy")?.getattr("frombuffer").map(Bound::unbind)
    })?;
    let array = frombuffer
        .bind(py)
        .call1((buffer, descr_for(py, DType::U8)?))?;
    let bytes = tensor_from_ndarray(&array)?;
    if writable == Some(true) && bytes.is_read_only() {
        return maybe_detach(py, bytes.numel(), || bytes.clone_data()).py();
    }
    Ok(bytes)
}

/// `copy.copy(t)`: a new tensor object over the same memory, as PyTorch's.
pub(crate) fn shallow_copy(this: &PyTensor) -> PyTensor {
    this.derived(this.inner.clone())
}

/// The key of `copy.deepcopy`'s memo under which dlbridge keeps the storages
/// it has copied (PyTorch keeps its own under "torch").
const MEMO_KEY: &str = "dlbridge";

/// `copy.deepcopy(t, memo)`, as PyTorch's: the whole storage is copied once
/// per deepcopy call (on its device) and every view of it becomes the same
/// view of that one copy, strides and offset kept, so `deepcopy([w, w[1:3]])`
/// keeps the two sharing memory and tied weights stay tied. The memo maps
/// the storage's address to `(the original tensor, a tensor over the copy)`:
/// holding the original keeps the address from being reused meanwhile.
pub(crate) fn deep_copy(slf: &Bound<'_, PyTensor>, memo: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let py = slf.py();
    let this = slf.get();
    let t = &this.inner;
    let Ok(memo) = memo.cast::<PyDict>() else {
        // Called by hand without a memo dict: a copy of its own.
        return this.compute(py, Tensor::clone_data);
    };
    let storages =
        memo.call_method1(pyo3::intern!(py, "setdefault"), (MEMO_KEY, PyDict::new(py)))?;
    let storages = storages.cast::<PyDict>()?;
    let key = std::sync::Arc::as_ptr(t.storage()) as usize;
    let copied = match storages.get_item(key)? {
        Some(entry) => entry
            .cast::<PyTuple>()?
            .get_item(1)?
            .cast::<PyTensor>()?
            .get()
            .inner
            .clone(),
        None => {
            let storage = t.storage();
            let whole = Tensor::from_parts(
                storage.clone(),
                Layout::contiguous(vec![storage.len()], 1),
                DType::U8,
            )
            .py()?;
            let copy = maybe_detach(py, whole.numel(), || whole.clone_data()).py()?;
            let holder = Bound::new(py, PyTensor::new(copy.clone()))?;
            storages.set_item(key, (slf.clone(), holder))?;
            copy
        }
    };
    let view = Tensor::from_parts(copied.storage().clone(), t.layout().clone(), t.dtype()).py()?;
    Ok(this.derived(view))
}
