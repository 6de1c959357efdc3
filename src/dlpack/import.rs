//! Taking ownership of DLPack tensors from other producers.
//!
//! A foreign tensor is untrusted until checked: dlpark validates the ABI
//! (ndim, shape, strides, byte extents with overflow checks, a NULL data
//! pointer with elements), then dlbridge checks what it can compute with
//! (dtype, device, rank). On any failure the managed tensor is dropped, which
//! calls the producer's deleter exactly once.

use crate::layout::foreign_layout;
use crate::storage::{Owner, Storage};
use crate::{DType, Device, Result, Tensor};
use dlpark::{DlpackFlags, Managed, ManagedTensorBase};
use std::sync::Arc;

/// The most dimensions dlbridge accepts from a foreign tensor.
pub const MAX_NDIM: usize = 64;

/// Wraps a foreign managed tensor (legacy or versioned) as a dlbridge tensor
/// without copying. Its deleter runs when the last dlbridge owner goes.
pub fn import_versioned_or_legacy<M: ManagedTensorBase>(managed: Managed<M>) -> Result<Tensor> {
    let read_only = managed.flags().contains(DlpackFlags::READ_ONLY);
    import_with(managed, read_only)
}

/// As [`import_versioned_or_legacy`], with the read-only decision made by the caller
/// (e.g. for producers whose arrays are immutable but cannot say so).
pub fn import_with<M: ManagedTensorBase>(managed: Managed<M>, read_only: bool) -> Result<Tensor> {
    let invalid =
        |e: dlpark::tensor::Error| crate::err!(InvalidTensor, "invalid DLPack tensor: {e}");
    // The rank bounds how much of `shape`/`strides` validation reads, so it
    // is checked before anything else is read.
    // SAFETY: reads one plain field of the producer's descriptor.
    let ndim = unsafe { managed.tensor() }.ndim;
    if !(0..=MAX_NDIM as i32).contains(&ndim) {
        return Err(crate::err!(
            InvalidTensor,
            "invalid DLPack tensor: ndim {ndim} is outside 0..={MAX_NDIM}"
        ));
    }
    let view = managed.validate().map_err(invalid)?;
    let dtype = DType::from_dlpack(view.dtype())?;
    let device = Device::from_dlpack(view.device())?;
    let itemsize = dtype.size() as i64;
    if view.byte_offset() % itemsize as u64 != 0 {
        return Err(crate::err!(
            InvalidTensor,
            "invalid DLPack tensor: byte_offset {} is not a multiple of the {itemsize}-byte item size",
            view.byte_offset()
        ));
    }
    let too_big = || {
        crate::err!(
            InvalidTensor,
            "invalid DLPack tensor: strides overflow the address space"
        )
    };
    let shape: Vec<usize> = view.shape().iter().map(|&n| n as usize).collect();
    let strides = view.strides_or_compact().map_err(invalid)?;
    let (layout, len) = foreign_layout(shape, &strides, dtype.size()).ok_or_else(too_big)?;
    if view.data_ptr().is_null() && layout.numel() > 0 {
        return Err(crate::err!(
            InvalidTensor,
            "invalid DLPack tensor: the data pointer is NULL but the tensor has elements"
        ));
    }
    let first = (view.data_ptr() as usize)
        .checked_add(usize::try_from(view.byte_offset()).map_err(|_| too_big())?)
        .ok_or_else(too_big)?;
    let start = first.checked_sub(layout.offset).ok_or_else(too_big)?;
    let owner = Owner::DlPack(managed.into_deleter());
    // SAFETY: the producer guarantees its elements are valid memory while the
    // managed tensor lives; `owner` keeps it alive and the extent covers every
    // element (computed with overflow checks above).
    let storage = unsafe { Storage::from_raw(start as *mut u8, len, device, read_only, owner) };
    Tensor::from_parts(Arc::new(storage), layout, dtype)
}
