//! Taking ownership of DLPack tensors from other producers.
//!
//! A foreign tensor is untrusted until checked: dlpark validates the ABI
//! (ndim, shape, strides, byte extents with overflow checks, a NULL data
//! pointer with elements), then dlbridge checks what it can compute with
//! (dtype, device, rank). On any failure the managed tensor is dropped, which
//! calls the producer's deleter exactly once.

use crate::foreign::{ForeignTensor, byte_strides};
use crate::storage::Owner;
use crate::{DType, Device, Error, Result, Tensor, err};
use dlpark::{DlpackFlags, Managed, ManagedTensorBase, TensorRef};

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
    let invalid = |e: dlpark::tensor::Error| match e {
        // An element count past int64's is PyTorch's RuntimeError wherever a
        // shape is made (`Layout`'s invariant), an import included.
        dlpark::tensor::Error::NumElementsOverflow | dlpark::tensor::Error::NumBytesOverflow => {
            err!(
                TooLarge,
                "invalid DLPack tensor: numel: integer multiplication overflow"
            )
        }
        e => err!(InvalidTensor, "invalid DLPack tensor: {e}"),
    };
    // The rank bounds how much of `shape`/`strides` validation reads, so it
    // is checked before anything else is read.
    // SAFETY: reads one plain field of the producer's descriptor.
    let ndim = unsafe { managed.tensor() }.ndim;
    if !(0..=MAX_NDIM as i32).contains(&ndim) {
        return Err(err!(
            InvalidTensor,
            "invalid DLPack tensor: ndim {ndim} is outside 0..={MAX_NDIM}"
        ));
    }
    // Not `managed.validate()`: dlpark refuses NULL strides on a versioned
    // tensor of DLPack 1.2 or newer, while NumPy and PyTorch (and the DLPack
    // spec before 1.2) read them as C-contiguous whatever the version; so
    // does dlbridge. Every other check is the same.
    // SAFETY: the descriptor is the producer's, readable until its deleter
    // runs, which `managed` holds back until it drops.
    let view = unsafe { TensorRef::from_raw(managed.tensor()) }.map_err(invalid)?;
    let mut dtype = DType::from_dlpack(view.dtype())?;
    let device = Device::from_dlpack(view.device())?;
    let itemsize = dtype.size() as i64;
    if view.byte_offset() % itemsize as u64 != 0 {
        return Err(err!(
            InvalidTensor,
            "invalid DLPack tensor: byte_offset {} is not a multiple of the {itemsize}-byte item size",
            view.byte_offset()
        ));
    }
    let mut shape: Vec<usize> = view.shape().iter().map(|&n| n as usize).collect();
    let mut strides = view.strides_or_compact().map_err(invalid)?;
    if dtype.is_padded_subbyte()
        && !managed
            .flags()
            .contains(DlpackFlags::IS_SUBBYTE_TYPE_PADDED)
    {
        let pairs = packed_float4_as_pairs(dtype, shape, strides.into_owned())?;
        (dtype, shape, strides) = (pairs.0, pairs.1, pairs.2.into());
    }
    let invalid_extent = || {
        err!(
            InvalidTensor,
            "invalid DLPack tensor: strides overflow the address space"
        )
    };
    let byte_strides = byte_strides(&strides, dtype.size()).ok_or_else(invalid_extent)?;
    // A NULL base stays NULL, so that the check below refuses it with elements.
    let base = view.data_ptr().cast::<u8>().cast_mut();
    let first = match usize::try_from(view.byte_offset()) {
        _ if base.is_null() => base,
        Ok(offset) if (base as usize).checked_add(offset).is_some() => base.wrapping_add(offset),
        _ => return Err(invalid_extent()),
    };
    let checked = ForeignTensor {
        data: first,
        shape,
        byte_strides,
        dtype,
        device,
        read_only,
    }
    .check()
    .map_err(|e| Error::new(e.kind(), format!("invalid DLPack tensor: {e}")))?;
    // SAFETY: the producer guarantees its elements are valid memory while the
    // managed tensor lives, and the owner keeps it alive (its deleter runs
    // when the owner drops, or right here on any error above).
    Ok(unsafe { checked.wrap(Owner::DlPack(managed.into_deleter())) })
}

/// A packed sub-byte tensor (the DLPack default for float6 and float4 without
/// `IS_SUBBYTE_TYPE_PADDED`; JAX's float4) read as dlbridge can hold it:
/// packed float4 as PyTorch's pairs, one byte each, which needs the values
/// of each pair side by side (an even, unit-stride last dimension). Packed
/// float6 straddles bytes and is refused.
fn packed_float4_as_pairs(
    dtype: DType,
    mut shape: Vec<usize>,
    mut strides: Vec<i64>,
) -> Result<(DType, Vec<usize>, Vec<i64>)> {
    if dtype != DType::F4E2M1FN {
        return Err(err!(
            UnsupportedDtype,
            "packed {} is not supported: dlbridge reads {} padded, one value per byte (a producer \
             says so with the IS_SUBBYTE_TYPE_PADDED flag)",
            dtype.name(),
            dtype.name()
        ));
    }
    let pairs = match (shape.last(), strides.last()) {
        (Some(&n), Some(&1)) if n % 2 == 0 => strides[..shape.len() - 1].iter().all(|s| s % 2 == 0),
        _ => false,
    };
    if !pairs {
        return Err(err!(
            InvalidTensor,
            "invalid DLPack tensor: packed float4_e2m1fn needs an even, unit-stride last dimension \
             to be read as float4_e2m1fn_x2 pairs (shape {shape:?}, strides {strides:?})"
        ));
    }
    *shape.last_mut().expect("checked above") /= 2;
    let last = strides.len() - 1;
    strides[..last].iter_mut().for_each(|s| *s /= 2);
    Ok((DType::F4E2M1FNX2, shape, strides))
}
