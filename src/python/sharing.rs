//! Tensors shared between processes: `share_memory_()`, `is_shared()`, and
//! the Rust half of the `multiprocessing` reducer
//! (`python/dlbridge/_sharing.py` is the other half): the handle a shared
//! tensor travels as, and the tensor rebuilt from one in the receiver.
//!
//! A host tensor whose storage is in a shared segment travels as the
//! segment's descriptor (which `multiprocessing` passes with `SCM_RIGHTS`),
//! its byte length, and the tensor's own description (dtype, element shape,
//! strides and offset inside the storage, read-only, requires_grad): views
//! send their storage and their layout, so no byte is copied whatever the
//! size. The receiver trusts none of it: the segment is checked
//! (`storage::SharedSegment::open`) and the description goes through
//! `foreign::view_in`, which refuses anything reaching outside the storage.
//!
//! Layer: above `tensor` only; `methods` and `mod.rs` use it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> creation -> convert,
//! arith, index, cuda, sharing -> methods -> mod.rs)

use super::errors::IntoPyResult;
use super::tensor::PyTensor;
use crate::storage::{SharedSegment, Storage};
use crate::{DType, Tensor, err, foreign};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::Arc;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_rebuild_shared_fd, m)?)
}

/// `Tensor.share_memory_()`: moves the storage into shared memory (see
/// [`Storage::share_memory`]); returns the tensor itself.
pub(crate) fn share_memory_<'py>(slf: &Bound<'py, PyTensor>) -> PyResult<Bound<'py, PyTensor>> {
    let storage = slf.get().inner.storage();
    storage.share_memory().py()?;
    Ok(slf.clone())
}

/// `Tensor.is_shared()`: the storage is in a shared segment; always true
/// for CUDA tensors, as in PyTorch (they travel as CUDA IPC handles).
pub(crate) fn is_shared(t: &Tensor) -> bool {
    !t.device().is_cpu() || t.storage().shared_segment().is_some()
}

/// `t`'s layout inside its storage in elements: `(strides, offset)`.
fn element_layout(t: &Tensor) -> crate::Result<(Vec<isize>, usize)> {
    let itemsize = t.dtype().size();
    let offset = t.layout().offset;
    if !offset.is_multiple_of(itemsize) {
        return Err(err!(
            InvalidOperation,
            "cannot send this tensor as a handle: it starts {offset} bytes into its storage, not a \
             whole number of its {itemsize}-byte elements; send t.clone() instead"
        ));
    }
    Ok((t.strides()?, offset / itemsize))
}

/// `Tensor._share_handle()`: what the `multiprocessing` reducer sends, or
/// `None` for a tensor that is not shared (it goes by value, pickled).
/// A host tensor: `("fd", descriptor, storage bytes, dtype name, shape,
/// element strides, element offset, read_only, requires_grad)`; the
/// descriptor stays the storage's (`multiprocessing.reduction.DupFd`
/// duplicates it).
pub(crate) fn share_handle<'py>(
    slf: &Bound<'py, PyTensor>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let py = slf.py();
    let this = slf.get();
    let t = &this.inner;
    let Some(segment) = t.storage().shared_segment() else {
        return Ok(None);
    };
    let (strides, offset) = element_layout(t).py()?;
    let handle = (
        "fd",
        segment.fd(),
        t.storage().len(),
        t.dtype().name(),
        PyTuple::new(py, t.shape())?,
        PyTuple::new(py, strides)?,
        offset,
        t.is_read_only(),
        this.requires_grad(),
    );
    Ok(Some(handle.into_pyobject(py)?))
}

/// Rebuilds a tensor from a shared segment's descriptor `fd` (which the
/// caller keeps and closes) and the description a sender's
/// `_share_handle()` gave. A descriptor that is not a dlbridge segment of
/// `nbytes` bytes, or a description reaching outside it, is a `BufferError`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _rebuild_shared_fd(
    fd: i32,
    nbytes: usize,
    dtype: &str,
    shape: Vec<i64>,
    strides: Vec<i64>,
    offset: i64,
    read_only: bool,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let dtype = DType::from_name(dtype)
        .ok_or_else(|| {
            err!(
                InvalidTensor,
                "unknown dtype '{dtype}' in a shared tensor's handle"
            )
        })
        .py()?;
    let segment = SharedSegment::open(fd, nbytes, read_only).py()?;
    let storage = Arc::new(Storage::from_shared(segment, read_only));
    let t = foreign::view_in(storage, &shape, &strides, offset, dtype).py()?;
    let out = PyTensor::new(t);
    out.set_requires_grad(requires_grad)?;
    Ok(out)
}
