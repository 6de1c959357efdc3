//! Taking ownership of DLPack tensors from other producers.
//!
//! A foreign tensor is untrusted until checked: dlpark validates the ABI
//! (ndim, shape, strides, byte extents with overflow checks, a NULL data
//! pointer with elements), then dlbridge checks what it can compute with
//! (dtype, device, rank). On any failure the managed tensor is dropped, which
//! calls the producer's deleter exactly once.

use crate::storage::{Owner, Storage};
use crate::{DType, Device, Error, Layout, Result, Tensor};
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
    let invalid = |e: dlpark::tensor::Error| Error::Buffer(format!("invalid DLPack tensor: {e}"));
    // The rank bounds how much of `shape`/`strides` validation reads, so it
    // is checked before anything else is read.
    // SAFETY: reads one plain field of the producer's descriptor.
    let ndim = unsafe { managed.tensor() }.ndim;
    if !(0..=MAX_NDIM as i32).contains(&ndim) {
        return Err(Error::Buffer(format!(
            "invalid DLPack tensor: ndim {ndim} is outside 0..={MAX_NDIM}"
        )));
    }
    let view = managed.validate().map_err(invalid)?;
    let dtype = DType::from_dlpack(view.dtype())?;
    let device = Device::from_dlpack(view.device())?;
    let itemsize = dtype.size() as i64;
    if view.byte_offset() % itemsize as u64 != 0 {
        return Err(Error::Buffer(format!(
            "invalid DLPack tensor: byte_offset {} is not a multiple of the {itemsize}-byte item size",
            view.byte_offset()
        )));
    }
    let too_big =
        || Error::Buffer("invalid DLPack tensor: strides overflow the address space".into());
    let shape: Vec<usize> = view.shape().iter().map(|&n| n as usize).collect();
    let strides = view.strides_or_compact().map_err(invalid)?;
    let byte_strides = strides
        .iter()
        .map(|&s| {
            s.checked_mul(itemsize)
                .and_then(|b| isize::try_from(b).ok())
                .ok_or_else(too_big)
        })
        .collect::<Result<Vec<isize>>>()?;
    let layout = Layout {
        shape,
        strides: byte_strides,
        offset: 0,
    };
    let (lo, hi) = checked_extent(&layout, dtype.size()).ok_or_else(too_big)?;
    if view.data_ptr().is_null() && layout.numel() > 0 {
        return Err(Error::Buffer(
            "invalid DLPack tensor: the data pointer is NULL but the tensor has elements".into(),
        ));
    }
    // Both the offset below the first element and the whole extent must fit.
    let below = lo.checked_neg().ok_or_else(too_big)?;
    let len = hi.checked_sub(lo).ok_or_else(too_big)?;
    let first = (view.data_ptr() as usize)
        .checked_add(usize::try_from(view.byte_offset()).map_err(|_| too_big())?)
        .ok_or_else(too_big)?;
    let start = (first as isize).checked_add(lo).ok_or_else(too_big)?;
    let layout = Layout {
        offset: below as usize,
        ..layout
    };
    let len = len as usize;
    let owner = Owner::DlPack(managed.into_deleter());
    // SAFETY: the producer guarantees its elements are valid memory while the
    // managed tensor lives; `owner` keeps it alive and the extent covers every
    // element (computed with overflow checks above).
    let storage = unsafe { Storage::from_raw(start as *mut u8, len, device, read_only, owner) };
    Tensor::from_parts(Arc::new(storage), layout, dtype)
}

/// Byte extent like [`Layout::byte_extent`], but refusing overflow.
fn checked_extent(layout: &Layout, itemsize: usize) -> Option<(isize, isize)> {
    if layout.shape.contains(&0) {
        return Some((0, 0));
    }
    let (mut lo, mut hi) = (0isize, itemsize as isize);
    for (&n, &s) in layout.shape.iter().zip(&layout.strides) {
        let span = isize::try_from(n).ok()?.checked_sub(1)?.checked_mul(s)?;
        if span < 0 {
            lo = lo.checked_add(span)?
        } else {
            hi = hi.checked_add(span)?
        }
    }
    Some((lo, hi))
}
