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
    /// Computes the byte range every element lies in, refusing sizes and
    /// strides whose extent overflows, an extent that reaches below address
    /// 0, and a NULL data pointer with elements (`ErrorKind::InvalidTensor`).
    pub fn check(self) -> Result<Checked> {
        assert_eq!(
            self.shape.len(),
            self.byte_strides.len(),
            "one stride per dimension"
        );
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
        Tensor::from_parts(Arc::new(storage), self.layout, self.dtype)
            .expect("the checked extent covers the layout")
    }
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
        assert_eq!(byte_strides(&[i64::MIN], 1), Some(vec![isize::MIN]));
        assert_eq!(byte_strides(&[1 << 62], 8), None);
    }
}
