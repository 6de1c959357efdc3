//! DLPack in and out for Rust programs: one documented pair over raw
//! pointers, built on [`crate::dlpack`]'s import and export (the same code
//! Python's `from_dlpack`/`__dlpack__` and C's `dlb_import`/`dlb_export`
//! run). The ABI types are [`crate::ffi`].

use crate::dlpack::{ExportOptions, export_legacy, export_versioned, import_versioned_or_legacy};
use crate::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use crate::{Result, Tensor, err};
use dlpark::{Managed, ManagedTensorBase};

/// Takes ownership of a producer's managed tensor (either ABI) and wraps it.
///
/// # Safety
/// As [`Tensor::from_raw_versioned`].
unsafe fn import<M: ManagedTensorBase>(managed: *mut M) -> Result<Tensor> {
    if managed.is_null() {
        return Err(err!(
            InvalidValue,
            "the DLPack managed tensor pointer is NULL"
        ));
    }
    // SAFETY: the caller's contract: `managed` is a live managed tensor it
    // owned and now hands over. from_raw calls the deleter itself when the
    // major version is not 1.
    let managed = unsafe { Managed::from_raw(managed) }
        .map_err(|e| err!(UnsupportedVersion, "cannot import this DLPack tensor: {e}"))?;
    // Drops `managed` (so runs the deleter once) on any error.
    let mut t = import_versioned_or_legacy(managed)?;
    // SAFETY: the caller's contract: nothing outside the tensor writes the
    // memory while typed access's references live. The handle is fresh.
    unsafe { t.assume_exclusive() }?;
    Ok(t)
}

impl Tensor {
    /// Wraps a producer's `DLManagedTensorVersioned` (DLPack 1.x) as a
    /// tensor, without copying: its memory, shape, strides, dtype and device
    /// are checked (a malformed tensor is an error, never a crash), and a
    /// `READ_ONLY` flag makes the tensor read-only.
    ///
    /// Ownership passes to dlbridge at the call, **whatever the result**:
    /// on success the producer's deleter runs exactly once, when the last
    /// tensor, view or export of this memory drops (on any thread); on an
    /// error it has already run, exactly once, before this returns. The
    /// caller never calls it. (A NULL pointer is an error and nothing is
    /// called.)
    ///
    /// # Safety
    /// - `managed` is NULL or points to a valid, initialised
    ///   `DLManagedTensorVersioned` that the caller owns and gives up.
    /// - Its `shape` (and `strides`, if not NULL) hold `ndim` values, and its
    ///   `data` (+ `byte_offset`) is valid for every element the shape and
    ///   strides describe, on its device, and writable unless `READ_ONLY` is
    ///   set; all of this until the deleter is called.
    /// - The deleter, if not NULL, may be called once from any thread and
    ///   does not unwind. A NULL deleter means the producer keeps ownership:
    ///   then it must keep all of the above true until every tensor made from
    ///   this one is gone.
    /// - While a tensor made from it lives, nothing outside that tensor and
    ///   its views writes the memory while a Rust reference from typed
    ///   access ([`as_slice`](Self::as_slice), [`as_array`](Self::as_array),
    ///   ...) is alive, nor reads it while a mutable one is: not the
    ///   producer's other handles, not another import of the same memory.
    ///   (The import is marked exclusive on this promise, see
    ///   [`assume_exclusive`](Self::assume_exclusive); dlbridge's own
    ///   handles to it are checked.)
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// let raw = t.into_raw_versioned()?; // a managed tensor, as a C producer makes
    /// // SAFETY: a fresh export, owned here and handed over once.
    /// let mut back = unsafe { Tensor::from_raw_versioned(raw) }?;
    /// assert_eq!(back.as_slice::<f32>()?, &[1.0, 2.0]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub unsafe fn from_raw_versioned(managed: *mut DLManagedTensorVersioned) -> Result<Tensor> {
        // SAFETY: the caller's contract, passed on.
        unsafe { import(managed) }
    }

    /// Wraps a producer's legacy `DLManagedTensor` (DLPack 0.x, no version
    /// and no flags, so always writable), as
    /// [`from_raw_versioned`](Self::from_raw_versioned) does: ownership
    /// passes at the call, the deleter runs exactly once, also on error.
    ///
    /// # Safety
    /// As [`from_raw_versioned`](Self::from_raw_versioned), for a
    /// `DLManagedTensor` whose memory is writable.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let raw = Tensor::from_vec(vec![7i16], &[1])?.into_raw_legacy()?;
    /// // SAFETY: a fresh export, owned here and handed over once.
    /// let back = unsafe { Tensor::from_raw_legacy(raw) }?;
    /// assert_eq!(back.to_vec::<i16>()?, vec![7]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub unsafe fn from_raw_legacy(managed: *mut DLManagedTensor) -> Result<Tensor> {
        // SAFETY: the caller's contract, passed on.
        unsafe { import(managed) }
    }

    /// Hands this tensor to a consumer as a `DLManagedTensorVersioned`
    /// (DLPack 1.3, `READ_ONLY` set for read-only memory), without copying.
    /// The consumer owns the result and must call its `deleter` exactly once
    /// (from any thread); the memory stays valid until then, whatever
    /// happens to other tensors sharing it.
    ///
    /// Fails (and drops `self`) only for a layout DLPack cannot express:
    /// byte strides that are not whole elements (call
    /// [`contiguous`](Self::contiguous) first).
    ///
    /// ```
    /// use dlbridge::{Tensor, ffi::{DLDeviceType, DLDataTypeCode}};
    /// let raw = Tensor::from_vec(vec![1.5f64; 6], &[2, 3])?.into_raw_versioned()?;
    /// // SAFETY: a fresh export we own; read it, then call its deleter once.
    /// unsafe {
    ///     let dl = &(*raw).dl_tensor;
    ///     assert_eq!(dl.device.device_type, DLDeviceType::CPU);
    ///     assert_eq!((dl.dtype.code, dl.dtype.bits, dl.ndim), (DLDataTypeCode::FLOAT, 64, 2));
    ///     assert_eq!(*dl.shape.add(1), 3);
    ///     ((*raw).deleter.unwrap())(raw);
    /// }
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn into_raw_versioned(self) -> Result<*mut DLManagedTensorVersioned> {
        export_versioned(&self, ExportOptions::default())
    }

    /// Hands this tensor to a consumer as a legacy `DLManagedTensor`,
    /// without copying; the consumer calls its `deleter` exactly once. The
    /// legacy ABI cannot say "read-only", so a read-only tensor is refused
    /// (`InvalidTensor`), as NumPy refuses it; so are padded sub-byte dtypes.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let raw = Tensor::from_vec(vec![1u8], &[1])?.into_raw_legacy()?;
    /// // SAFETY: a fresh export we own; its deleter is called once.
    /// unsafe { ((*raw).deleter.unwrap())(raw) };
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn into_raw_legacy(self) -> Result<*mut DLManagedTensor> {
        export_legacy(&self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::{DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLPackVersion, DLTensor};
    use crate::{DType, ErrorKind};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A C-style producer: one heap block with the header, shape and data,
    /// and a deleter that counts its calls.
    #[repr(C)]
    struct Block {
        header: DLManagedTensorVersioned,
        shape: [i64; 1],
        data: [f32; 4],
        calls: *const AtomicUsize,
    }

    unsafe extern "C" fn delete(m: *mut DLManagedTensorVersioned) {
        // SAFETY: m is the header of a Block made by `produce` (first field
        // of a repr(C) struct), freed only here, once.
        let block = unsafe { Box::from_raw(m.cast::<Block>()) };
        // SAFETY: the counter outlives every block in these tests.
        unsafe { &*block.calls }.fetch_add(1, Ordering::SeqCst);
    }

    fn produce(
        calls: &AtomicUsize,
        flags: crate::ffi::DlpackFlags,
        major: u32,
        code: DLDataTypeCode,
    ) -> *mut DLManagedTensorVersioned {
        let block = Box::into_raw(Box::new(Block {
            header: DLManagedTensorVersioned {
                version: DLPackVersion { major, minor: 0 },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete),
                flags,
                dl_tensor: DLTensor {
                    data: std::ptr::null_mut(),
                    device: DLDevice {
                        device_type: DLDeviceType::CPU,
                        device_id: 0,
                    },
                    ndim: 1,
                    dtype: DLDataType {
                        code,
                        bits: 32,
                        lanes: 1,
                    },
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
            },
            shape: [4],
            data: [1.0, 2.0, 3.0, 4.0],
            calls,
        }));
        // SAFETY: block is a fresh, live allocation owned here.
        unsafe {
            (*block).header.dl_tensor.data = (&raw mut (*block).data).cast();
            (*block).header.dl_tensor.shape = (&raw mut (*block).shape).cast();
        }
        block.cast()
    }

    #[test]
    fn import_edits_in_place_and_deletes_once() {
        let calls = AtomicUsize::new(0);
        let raw = produce(
            &calls,
            crate::ffi::DlpackFlags::empty(),
            1,
            DLDataTypeCode::FLOAT,
        );
        // SAFETY: a fresh producer tensor, handed over once.
        let mut t = unsafe { Tensor::from_raw_versioned(raw) }.unwrap();
        t.as_slice_mut::<f32>().unwrap()[0] = 10.0;
        t.add_(1.0).unwrap();
        assert_eq!(t.as_slice::<f32>().unwrap(), &[11.0, 3.0, 4.0, 5.0]);
        let out = t.into_raw_versioned().unwrap();
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "the export keeps the import alive"
        );
        // SAFETY: the consumer's single deleter call.
        unsafe { ((*out).deleter.unwrap())(out) };
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn read_only_is_kept_and_errors_delete_once() {
        let calls = AtomicUsize::new(0);
        let ro = produce(
            &calls,
            crate::ffi::DlpackFlags::READ_ONLY,
            1,
            DLDataTypeCode::FLOAT,
        );
        // SAFETY: as above.
        let mut t = unsafe { Tensor::from_raw_versioned(ro) }.unwrap();
        assert!(t.is_read_only());
        assert_eq!(
            t.as_slice_mut::<f32>().unwrap_err().kind(),
            ErrorKind::ReadOnly
        );
        assert_eq!(
            t.as_array_mut::<f32>().unwrap_err().kind(),
            ErrorKind::ReadOnly
        );
        assert_eq!(t.fill_(0.0.into()).unwrap_err().kind(), ErrorKind::ReadOnly);
        assert_eq!(t.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            t.clone().into_raw_legacy().unwrap_err().kind(),
            ErrorKind::InvalidTensor
        );
        drop(t);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // A major version 2 and an unknown dtype code: refused, deleted once each.
        let v2 = produce(
            &calls,
            crate::ffi::DlpackFlags::empty(),
            2,
            DLDataTypeCode::FLOAT,
        );
        // SAFETY: as above.
        let e = unsafe { Tensor::from_raw_versioned(v2) }.unwrap_err();
        assert_eq!(
            (e.kind(), calls.load(Ordering::SeqCst)),
            (ErrorKind::UnsupportedVersion, 2)
        );
        let bad = produce(
            &calls,
            crate::ffi::DlpackFlags::empty(),
            1,
            DLDataTypeCode(99),
        );
        // SAFETY: as above.
        let e = unsafe { Tensor::from_raw_versioned(bad) }.unwrap_err();
        assert_eq!(
            (e.kind(), calls.load(Ordering::SeqCst)),
            (ErrorKind::UnsupportedDtype, 3)
        );
        // SAFETY: NULL is refused before anything is read.
        let e = unsafe { Tensor::from_raw_versioned(std::ptr::null_mut()) }.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidValue);
        // SAFETY: as above.
        let e = unsafe { Tensor::from_raw_legacy(std::ptr::null_mut()) }.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidValue);
    }

    #[test]
    fn legacy_round_trip_and_undescribable_strides() {
        let t = Tensor::from_vec(vec![1u16, 2, 3], &[3]).unwrap();
        let raw = t.clone().into_raw_legacy().unwrap();
        // SAFETY: a fresh export, handed over once.
        let back = unsafe { Tensor::from_raw_legacy(raw) }.unwrap();
        assert_eq!((back.data_ptr(), back.dtype()), (t.data_ptr(), DType::U16));
        let odd = t.with_layout(crate::Layout {
            shape: vec![2],
            strides: vec![3],
            offset: 0,
        });
        assert_eq!(
            odd.into_raw_versioned().unwrap_err().kind(),
            ErrorKind::InvalidTensor
        );
    }
}
