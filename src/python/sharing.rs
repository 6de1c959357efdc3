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
//! size. A CUDA tensor travels the same way as a CUDA IPC handle of its
//! storage (`backend::CudaIpcHandle`: dlbridge's pool as a descriptor, the
//! driver's record of the allocation). The receiver trusts none of it: the
//! segment is checked (`storage::SharedSegment::open`; the driver and the
//! allocation's size check a CUDA handle) and the description goes through
//! `foreign::view_in`, which refuses anything reaching outside the storage.
//!
//! Layer: above `tensor` only; `methods` and `mod.rs` use it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::errors::IntoPyResult;
use super::tensor::PyTensor;
use crate::backend::{Accelerator as _, CudaIpcHandle};
use crate::storage::{SharedSegment, Storage};
use crate::{DType, Tensor, err, foreign};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::sync::Arc;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_rebuild_shared_fd, m)?)?;
    m.add_function(wrap_pyfunction!(_rebuild_shared_cuda, m)?)
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
/// `None` for a host tensor that is not shared (it goes by value, pickled).
/// A host tensor: `("fd", descriptor, storage bytes, dtype name, shape,
/// element strides, element offset, read_only, requires_grad)`; the
/// descriptor stays the storage's (`multiprocessing.reduction.DupFd`
/// duplicates it). A CUDA tensor: `("cuda", pool descriptor, pool id,
/// device, device UUID, allocation record, address, storage bytes, ...)`
/// and the same description; the pool descriptor stays dlbridge's.
pub(crate) fn share_handle<'py>(
    slf: &Bound<'py, PyTensor>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let py = slf.py();
    let this = slf.get();
    let t = &this.inner;
    let head: Vec<Bound<'py, PyAny>> = if !t.device().is_cpu() {
        let h = crate::cuda::Cuda.export_ipc(t.storage()).py()?;
        vec![
            "cuda".into_pyobject(py)?.into_any(),
            h.pool_fd.into_pyobject(py)?.into_any(),
            PyBytes::new(py, &h.pool_id).into_any(),
            h.device.into_pyobject(py)?.into_any(),
            PyBytes::new(py, &h.uuid).into_any(),
            PyBytes::new(py, &h.pointer).into_any(),
            h.address.into_pyobject(py)?.into_any(),
            h.len.into_pyobject(py)?.into_any(),
        ]
    } else if let Some(segment) = t.storage().shared_segment() {
        vec![
            "fd".into_pyobject(py)?.into_any(),
            segment.fd().into_pyobject(py)?.into_any(),
            t.storage().len().into_pyobject(py)?.into_any(),
        ]
    } else {
        return Ok(None);
    };
    let (strides, offset) = element_layout(t).py()?;
    let description = [
        t.dtype().name().into_pyobject(py)?.into_any(),
        PyTuple::new(py, t.shape())?.into_any(),
        PyTuple::new(py, strides)?.into_any(),
        offset.into_pyobject(py)?.into_any(),
        pyo3::types::PyBool::new(py, t.is_read_only())
            .to_owned()
            .into_any(),
        pyo3::types::PyBool::new(py, this.requires_grad())
            .to_owned()
            .into_any(),
    ];
    let items: Vec<Bound<'py, PyAny>> = head.into_iter().chain(description).collect();
    Ok(Some(PyTuple::new(py, items)?))
}

/// The tensor `description` gives inside `storage`, as a Python tensor.
fn rebuilt(
    storage: Arc<Storage>,
    dtype: DType,
    shape: &[i64],
    strides: &[i64],
    offset: i64,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let t = foreign::view_in(storage, shape, strides, offset, dtype).py()?;
    let out = PyTensor::new(t);
    out.set_requires_grad(requires_grad)?;
    Ok(out)
}

fn dtype_named(name: &str) -> PyResult<DType> {
    DType::from_name(name)
        .ok_or_else(|| {
            err!(
                InvalidTensor,
                "unknown dtype '{name}' in a shared tensor's handle"
            )
        })
        .py()
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
    let dtype = dtype_named(dtype)?;
    let segment = SharedSegment::open(fd, nbytes, read_only).py()?;
    let storage = Arc::new(Storage::from_shared(segment, read_only));
    rebuilt(storage, dtype, &shape, &strides, offset, requires_grad)
}

/// `N` bytes of a handle, or a `BufferError` naming the field.
fn fixed<const N: usize>(bytes: &[u8], what: &str) -> PyResult<[u8; N]> {
    bytes
        .try_into()
        .map_err(|_| {
            err!(
                InvalidTensor,
                "invalid CUDA IPC handle: {what} has {} bytes, not {N}",
                bytes.len()
            )
        })
        .py()
}

/// Rebuilds a CUDA tensor from a CUDA IPC handle: `pool_fd` is this
/// process's copy of the exporting pool's descriptor (the caller keeps and
/// closes it), the rest is what the sender's `_share_handle()` gave.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _rebuild_shared_cuda(
    pool_fd: i32,
    pool_id: &[u8],
    device: u32,
    uuid: &[u8],
    pointer: &[u8],
    address: u64,
    nbytes: usize,
    dtype: &str,
    shape: Vec<i64>,
    strides: Vec<i64>,
    offset: i64,
    read_only: bool,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let handle = CudaIpcHandle {
        pool_fd,
        pool_id: fixed(pool_id, "the pool id")?,
        device,
        uuid: fixed(uuid, "the device UUID")?,
        pointer: fixed(pointer, "the allocation record")?,
        address,
        len: nbytes,
    };
    let dtype = dtype_named(dtype)?;
    let storage = crate::cuda::Cuda.import_ipc(&handle, read_only).py()?;
    rebuilt(storage, dtype, &shape, &strides, offset, requires_grad)
}
