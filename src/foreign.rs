//! The one door for memory another library owns.
//!
//! NumPy arrays, DLPack imports and C host buffers all arrive as the same
//! description: where element 0 is, the shape, byte strides, dtype, device
//! and whether it may be written. [`ForeignTensor::check`] validates that
//! description once, with every product and sum overflow-checked, before
//! anything is trusted; [`Checked::wrap`] then builds the tensor and cannot
//! fail, so a caller can hand over its owner (a deleter, a free callback, a
//! Python reference) only once nothing can go wrong any more.

use crate::layout::Layout;
use crate::storage::{Owner, Storage};
use crate::{DType, Device, Result, Tensor, err};
use std::sync::Arc;

/// Memory another library owns, as it describes it.
pub struct ForeignTensor {
    /// Address of element `[0, 0, ...]` (NULL is allowed when there are no elements).
    pub data: *mut u8,
    pub shape: Vec<usize>,
    /// Byte distance between neighbours along each dimension (may be negative).
    pub byte_strides: Vec<isize>,
    pub dtype: DType,
    pub device: Device,
    pub read_only: bool,
}

/// A [`ForeignTensor`] whose extent has been computed and checked.
pub struct Checked {
    start: *mut u8,
    len: usize,
    layout: Layout,
    dtype: DType,
    device: Device,
    read_only: bool,
}

/// Strides in elements (DLPack's and the C ABI's unit) as byte strides, or
/// `None` when one overflows.
pub fn byte_strides(element_strides: &[i64], itemsize: usize) -> Option<Vec<isize>> {
    element_strides
        .iter()
        .map(|&s| isize::try_from(s.checked_mul(itemsize as i64)?).ok())
        .collect()
}

fn overflow() -> crate::Error {
    err!(InvalidTensor, "strides overflow the address space")
}

impl ForeignTensor {
    /// Computes the byte range every element lies in, refusing an element
    /// count that overflows (`ErrorKind::TooLarge`, PyTorch's
    /// `RuntimeError`, even when zero strides keep the extent small), sizes
    /// and strides whose extent overflows, an extent that reaches below
    /// address 0, a NULL data pointer with elements, and a stride count
    /// that is not the rank (`ErrorKind::InvalidTensor`).
    pub fn check(self) -> Result<Checked> {
        if self.shape.len() != self.byte_strides.len() {
            return Err(err!(
                InvalidTensor,
                "{} strides for {} dimensions",
                self.byte_strides.len(),
                self.shape.len()
            ));
        }
        crate::layout::checked_numel(&self.shape)?;
        let itemsize = self.dtype.size() as isize;
        let (mut lo, mut hi) = (0isize, itemsize);
        if self.shape.contains(&0) {
            hi = 0;
        } else {
            for (&n, &s) in self.shape.iter().zip(&self.byte_strides) {
                let span = isize::try_from(n)
                    .ok()
                    .and_then(|n| (n - 1).checked_mul(s))
                    .ok_or_else(overflow)?;
                let bound = if span < 0 { &mut lo } else { &mut hi };
                *bound = bound.checked_add(span).ok_or_else(overflow)?;
            }
        }
        if self.data.is_null() && hi > lo {
            return Err(err!(
                InvalidTensor,
                "data is NULL but the tensor has elements"
            ));
        }
        let below = lo.checked_neg().ok_or_else(overflow)? as usize;
        let len = hi.checked_sub(lo).ok_or_else(overflow)? as usize;
        let start = (self.data as usize)
            .checked_sub(below)
            .ok_or_else(overflow)?;
        (start as u64)
            .checked_add(len as u64)
            .filter(|&end| end <= usize::MAX as u64)
            .ok_or_else(overflow)?;
        Ok(Checked {
            start: self.data.wrapping_sub(below),
            len,
            layout: Layout {
                shape: self.shape,
                strides: self.byte_strides,
                offset: below,
            },
            dtype: self.dtype,
            device: self.device,
            read_only: self.read_only,
        })
    }
}

impl Checked {
    /// The tensor over this memory, kept alive by `owner` until its last
    /// view, export or capsule goes.
    ///
    /// # Safety
    /// The description checked must be true: every element lies in memory
    /// valid on its device (and writable unless read-only) while `owner` lives.
    pub unsafe fn wrap(self, owner: Owner) -> Tensor {
        // SAFETY: the caller's contract; start..start+len spans every element.
        let storage =
            unsafe { Storage::from_raw(self.start, self.len, self.device, self.read_only, owner) };
        // `check` refused an overflowing element count and computed
        // start..start+len to cover every element: from_parts's two checks.
        Tensor::from_parts(Arc::new(storage), self.layout, self.dtype)
            .expect("the checked extent covers the layout")
    }
}

/// A tensor of `dtype` inside memory dlbridge already holds, described by
/// numbers nobody vouches for (a pickle's state, a handle from another
/// process): `shape`, `strides` and `offset` count elements, as PyTorch's
/// `as_strided` does. Negative sizes or offsets, overflowing strides and
/// any element outside `storage` are refused (`ErrorKind::InvalidTensor`),
/// so no such description ever builds a view reaching past the memory.
// Only the Python layer (pickles, process handles) takes such descriptions so far.
#[cfg_attr(not(feature = "pyo3"), allow(dead_code))]
pub fn view_in(
    storage: Arc<Storage>,
    shape: &[i64],
    strides: &[i64],
    offset: i64,
    dtype: DType,
) -> Result<Tensor> {
    let itemsize = dtype.size();
    let refuse = |why: String| {
        err!(
            InvalidTensor,
            "invalid tensor description (shape {shape:?}, strides {strides:?}, storage offset \
             {offset}, {itemsize}-byte {}) for a storage of {} bytes: {why}",
            dtype.name(),
            storage.len()
        )
    };
    if shape.len() != strides.len() {
        return Err(refuse("one stride per dimension is needed".into()));
    }
    let shape = shape
        .iter()
        .map(|&n| usize::try_from(n))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| refuse("negative dimension".into()))?;
    // An element count past int64 is PyTorch's RuntimeError, whatever the strides.
    crate::layout::checked_numel(&shape)?;
    let byte_offset = usize::try_from(offset)
        .ok()
        .and_then(|o| o.checked_mul(itemsize))
        .filter(|&o| o <= storage.len())
        .ok_or_else(|| refuse("the storage offset lies outside the storage".into()))?;
    let byte_strides =
        byte_strides(strides, itemsize).ok_or_else(|| refuse("strides overflow".into()))?;
    let base = storage.as_ptr();
    let checked = ForeignTensor {
        data: base.wrapping_add(byte_offset),
        shape: shape.clone(),
        byte_strides: byte_strides.clone(),
        dtype,
        device: storage.device(),
        read_only: storage.is_read_only(),
    }
    .check()
    .map_err(|e| refuse(e.to_string()))?;
    let start = (checked.start as usize).wrapping_sub(base as usize);
    let inside = checked.len == 0
        || (checked.start as usize >= base as usize
            && start
                .checked_add(checked.len)
                .is_some_and(|end| end <= storage.len()));
    if !inside {
        return Err(refuse("elements reach outside the storage".into()));
    }
    let layout = Layout {
        shape,
        strides: byte_strides,
        offset: byte_offset,
    };
    Tensor::from_parts(storage, layout, dtype)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn foreign(data: usize, shape: &[usize], strides: &[isize]) -> ForeignTensor {
        ForeignTensor {
            data: data as *mut u8,
            shape: shape.to_vec(),
            byte_strides: strides.to_vec(),
            dtype: DType::F32,
            device: Device::CPU,
            read_only: false,
        }
    }

    #[test]
    fn negative_strides_reach_below_the_first_element() {
        let c = foreign(0x1000, &[2, 4], &[16, -4]).check().ok().unwrap();
        assert_eq!(
            (c.start as usize, c.len, c.layout.offset),
            (0x1000 - 12, 32, 12)
        );
        let empty = foreign(0, &[0, 3], &[-20, 4]).check().ok().unwrap();
        assert_eq!((empty.len, empty.layout.offset), (0, 0));
    }

    #[test]
    fn overflowing_or_impossible_extents_are_refused() {
        let kind = |f: ForeignTensor| f.check().err().unwrap().kind();
        assert_eq!(
            kind(foreign(8, &[5], &[-(1 << 61)])),
            ErrorKind::InvalidTensor
        );
        assert_eq!(
            kind(foreign(8, &[3], &[isize::MAX])),
            ErrorKind::InvalidTensor
        );
        assert_eq!(kind(foreign(8, &[2], &[-16])), ErrorKind::InvalidTensor);
        assert_eq!(
            kind(foreign(usize::MAX - 2, &[1], &[4])),
            ErrorKind::InvalidTensor
        );
        assert_eq!(kind(foreign(0, &[1], &[4])), ErrorKind::InvalidTensor);
        assert_eq!(
            kind(foreign(8, &[1 << 62, 1 << 62], &[0, 0])),
            ErrorKind::TooLarge
        );
        assert_eq!(kind(foreign(8, &[2, 2], &[4])), ErrorKind::InvalidTensor);
        assert_eq!(byte_strides(&[i64::MIN], 1), Some(vec![isize::MIN]));
        assert_eq!(byte_strides(&[1 << 62], 8), None);
    }

    fn storage(len: usize) -> Arc<Storage> {
        Arc::new(Storage::new_host(len, true).unwrap())
    }

    #[test]
    fn view_in_builds_views_inside_the_storage() {
        let t = view_in(storage(24), &[2, 3], &[1, 2], 0, DType::F32).unwrap();
        assert_eq!(
            (t.shape(), t.layout().strides.as_slice()),
            (&[2, 3][..], &[4isize, 8][..])
        );
        let rev = view_in(storage(24), &[3], &[-2], 4, DType::F32).unwrap();
        assert_eq!(rev.layout().offset, 16);
        let empty = view_in(storage(0), &[0, 5], &[5, 1], 0, DType::F64).unwrap();
        assert_eq!(empty.numel(), 0);
    }

    #[test]
    fn view_in_refuses_descriptions_reaching_outside() {
        let kind = |shape: &[i64], strides: &[i64], offset: i64| {
            view_in(storage(24), shape, strides, offset, DType::F32)
                .err()
                .unwrap()
                .kind()
        };
        assert_eq!(kind(&[7], &[1], 0), ErrorKind::InvalidTensor); // 28 > 24 bytes
        assert_eq!(kind(&[-1], &[1], 0), ErrorKind::InvalidTensor);
        assert_eq!(kind(&[2], &[1], -1), ErrorKind::InvalidTensor);
        assert_eq!(kind(&[2], &[1], 6), ErrorKind::InvalidTensor);
        assert_eq!(kind(&[3], &[-1], 1), ErrorKind::InvalidTensor); // below the start
        assert_eq!(kind(&[2], &[i64::MAX], 0), ErrorKind::InvalidTensor);
        assert_eq!(kind(&[2, 2], &[1], 0), ErrorKind::InvalidTensor);
        assert_eq!(kind(&[1 << 62, 1 << 62], &[1, 1], 0), ErrorKind::TooLarge);
        // Zero strides keep the extent tiny; the element count still overflows.
        assert_eq!(kind(&[1 << 62, 1 << 62], &[0, 0], 0), ErrorKind::TooLarge);
    }
}
