//! Tensor handles: import, export, creation, description, transfer, release.

use super::error::{core, dlb_status, fail, guard};
use crate::dlpack::{
    ExportOptions, VERSION, borrowed_view, export_legacy, export_versioned, import::import_with,
};
use crate::foreign::{ForeignTensor, byte_strides};
use crate::layout::checked_numel;
use crate::storage::Owner;
use crate::{DType, Device, Tensor};
use dlpark::ffi::{
    DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor,
};
use dlpark::{DlpackFlags, Managed};
use std::ffi::{c_char, c_void};
use std::sync::OnceLock;

/// An owned dlbridge tensor. Opaque to C: create it with `dlb_import_*`,
/// `dlb_empty`, `dlb_zeros`, `dlb_from_host_buffer` or an operation, and
/// release it with `dlb_free`. Views and exports keep the memory alive on
/// their own, so freeing a handle never invalidates them.
pub struct dlb_tensor {
    inner: Tensor,
    /// Shape then element strides, for `dlb_describe`'s view.
    dims: OnceLock<Box<[i64]>>,
}

impl dlb_tensor {
    pub(crate) fn boxed(inner: Tensor) -> *mut dlb_tensor {
        Box::into_raw(Box::new(dlb_tensor {
            inner,
            dims: OnceLock::new(),
        }))
    }
}

/// Reads a handle argument, or records a NULL-pointer error.
pub(crate) fn handle<'a>(t: *const dlb_tensor, name: &str) -> Result<&'a Tensor, dlb_status> {
    if t.is_null() {
        return Err(fail(
            dlb_status::DLB_ERR_NULL_POINTER,
            format!("{name} is NULL"),
        ));
    }
    // SAFETY: a non-NULL handle from this library that the caller has not freed.
    Ok(unsafe { &(*t).inner })
}

/// Stores a new handle in `out` (checked non-NULL by the caller).
pub(crate) fn put(out: *mut *mut dlb_tensor, t: Tensor) {
    // SAFETY: out was checked non-NULL and points to writable storage.
    unsafe { *out = dlb_tensor::boxed(t) };
}

/// The body of every function that makes one new handle from another:
/// checks both pointers, runs `f`, stores its result in `out`.
pub(crate) fn derive(
    tensor: *const dlb_tensor,
    name: &str,
    out: *mut *mut dlb_tensor,
    f: impl FnOnce(&Tensor) -> crate::Result<Tensor>,
) -> dlb_status {
    guard(|| {
        let t = handle(tensor, name)?;
        need_out(out)?;
        put(out, f(t).map_err(core)?);
        Ok(())
    })
}

pub(crate) fn need_out<T>(out: *mut T) -> Result<(), dlb_status> {
    if out.is_null() {
        return Err(fail(dlb_status::DLB_ERR_NULL_POINTER, "out is NULL"));
    }
    Ok(())
}

/// dlbridge's version, e.g. "0.1.0". Static; thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn dlb_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

fn import_managed<M: dlpark::ManagedTensorBase>(
    managed: *mut M,
    out: *mut *mut dlb_tensor,
    read_only: impl FnOnce(&Managed<M>) -> bool,
) -> Result<(), dlb_status> {
    if managed.is_null() {
        return Err(fail(dlb_status::DLB_ERR_NULL_POINTER, "managed is NULL"));
    }
    // SAFETY: the caller hands over a managed tensor it owned. from_raw
    // calls its deleter itself when the major version is not 1.
    let m = unsafe { Managed::from_raw(managed) }
        .map_err(|e| fail(dlb_status::DLB_ERR_UNSUPPORTED_VERSION, format!("{e}")))?;
    if out.is_null() {
        drop(m); // ownership moved to us: release it as promised
        return Err(fail(dlb_status::DLB_ERR_NULL_POINTER, "out is NULL"));
    }
    let ro = read_only(&m);
    // import_with drops (and so deletes) the managed tensor when it fails.
    // A shape whose element count overflows is a malformed tensor here (an
    // import has no shape argument), whatever Python calls it.
    let t = import_with(m, ro).map_err(|e| match e.kind() {
        crate::ErrorKind::TooLarge => fail(dlb_status::DLB_ERR_INVALID_TENSOR, e.to_string()),
        _ => core(e),
    })?;
    put(out, t);
    Ok(())
}

/// Takes ownership of a DLPack 1.x managed tensor and returns a handle
/// sharing its memory (zero-copy; READ_ONLY is honoured).
///
/// Ownership: whenever `managed` is not NULL it belongs to dlbridge from the
/// call on, success or not. On success the producer's deleter runs when the
/// last dlbridge owner goes (that may be on any thread); on failure it has
/// already run, exactly once, before this returns. Never call it yourself.
///
/// Errors: `DLB_ERR_NULL_POINTER`, `DLB_ERR_UNSUPPORTED_VERSION` (major
/// version not 1), `DLB_ERR_INVALID_TENSOR` (negative ndim, NULL shape, NULL
/// data with elements, unaligned byte_offset, overflowing extent),
/// `DLB_ERR_UNSUPPORTED_DTYPE`, `DLB_ERR_UNSUPPORTED_DEVICE`.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_import_versioned(
    managed: *mut DLManagedTensorVersioned,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    guard(|| import_managed(managed, out, |m| m.flags().contains(DlpackFlags::READ_ONLY)))
}

/// `dlb_import_versioned` for a legacy (pre-1.0) `DLManagedTensor`, which
/// has no flags: the result is writable. Same ownership rules and errors.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_import_legacy(
    managed: *mut DLManagedTensor,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    guard(|| import_managed(managed, out, |_| false))
}

/// Exports `tensor` as a new DLPack 1.3 managed tensor sharing its memory
/// (`dlb_export_max_version` for a consumer that reads an older 1.x).
///
/// Ownership: the caller owns `*out` and must call its deleter exactly once.
/// The memory stays valid until then, even after `dlb_free(tensor)`.
/// READ_ONLY is set for read-only tensors. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_export(
    tensor: *const dlb_tensor,
    out: *mut *mut DLManagedTensorVersioned,
) -> dlb_status {
    guard(|| {
        let t = handle(tensor, "tensor")?;
        need_out(out)?;
        let m = export_versioned(t, ExportOptions::default()).map_err(core)?;
        // SAFETY: out checked non-NULL.
        unsafe { *out = m };
        Ok(())
    })
}

/// `dlb_export` for a consumer that reads DLPack up to `max_major.max_minor`
/// (as Python's `__dlpack__(max_version=...)`): the export is stamped with the
/// older of that version and 1.3, and a tensor that version cannot describe
/// (a float8/float6/float4 dtype, or a padded sub-byte one, before 1.1) is
/// refused with `DLB_ERR_INVALID_TENSOR` rather than misread. A major
/// version above 1 gets 1.3 (the consumer reads 1.x too, per the spec).
/// Errors: as `dlb_export`, and `DLB_ERR_UNSUPPORTED_VERSION` for major 0
/// (no versioned struct: use `dlb_export_legacy`). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_export_max_version(
    tensor: *const dlb_tensor,
    max_major: u32,
    max_minor: u32,
    out: *mut *mut DLManagedTensorVersioned,
) -> dlb_status {
    guard(|| {
        let t = handle(tensor, "tensor")?;
        need_out(out)?;
        let version = match max_major {
            0 => {
                return Err(fail(
                    dlb_status::DLB_ERR_UNSUPPORTED_VERSION,
                    format!(
                        "DLPack {max_major}.{max_minor} has no versioned managed tensor; \
                         use dlb_export_legacy"
                    ),
                ));
            }
            1 => DLPackVersion {
                major: 1,
                minor: max_minor.min(VERSION.minor),
            },
            _ => VERSION,
        };
        let options = ExportOptions {
            is_copied: false,
            version: Some(version),
            refuse_undescribable: true,
        };
        let m = export_versioned(t, options).map_err(core)?;
        // SAFETY: out checked non-NULL.
        unsafe { *out = m };
        Ok(())
    })
}

/// Exports `tensor` as a new legacy (unversioned, pre-1.0) `DLManagedTensor`
/// sharing its memory, for consumers that only know that struct. Prefer
/// `dlb_export`.
///
/// Ownership: as `dlb_export`: the caller owns `*out` and must call its
/// deleter exactly once; the memory stays valid until then.
///
/// The legacy struct has no flags, so it cannot say "read-only": a read-only
/// tensor is refused with `DLB_ERR_INVALID_TENSOR` (as NumPy refuses a
/// legacy export of a read-only array), never handed out as writable. Export
/// it with `dlb_export` (READ_ONLY set), or export a `dlb_clone` of it.
/// Errors: `DLB_ERR_NULL_POINTER`, `DLB_ERR_INVALID_TENSOR` (read-only, or
/// strides that are not whole elements). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_export_legacy(
    tensor: *const dlb_tensor,
    out: *mut *mut DLManagedTensor,
) -> dlb_status {
    guard(|| {
        let t = handle(tensor, "tensor")?;
        need_out(out)?;
        let m = export_legacy(t).map_err(core)?;
        // SAFETY: out checked non-NULL.
        unsafe { *out = m };
        Ok(())
    })
}

/// Releases a handle (NULL is ignored). Memory shared with exports, views
/// or other handles lives on until their owners release it too.
/// Each handle must be freed exactly once. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_free(tensor: *mut dlb_tensor) {
    if tensor.is_null() {
        return;
    }
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: a handle from this library, freed once (the caller's promise).
        drop(unsafe { Box::from_raw(tensor) })
    }));
}

/// The shape from `ndim`/`shape`, checked (a negative ndim or size, a NULL
/// shape with ndim > 0, or an element count that overflows is an error).
fn read_shape(ndim: i32, shape: *const i64) -> Result<Vec<usize>, dlb_status> {
    if !(0..=64).contains(&ndim) {
        return Err(fail(
            dlb_status::DLB_ERR_INVALID_ARGUMENT,
            format!("ndim must be in 0..=64, got {ndim}"),
        ));
    }
    if ndim > 0 && shape.is_null() {
        return Err(fail(dlb_status::DLB_ERR_NULL_POINTER, "shape is NULL"));
    }
    // SAFETY: shape points to ndim readable values (checked non-NULL when ndim > 0).
    let raw = unsafe { crate::raw::c_array(shape, ndim as usize) };
    let dims = raw
        .iter()
        .map(|&n| {
            usize::try_from(n).map_err(|_| {
                fail(
                    dlb_status::DLB_ERR_INVALID_ARGUMENT,
                    format!("negative size {n} in shape {raw:?}"),
                )
            })
        })
        .collect::<Result<Vec<usize>, _>>()?;
    checked_numel(&dims).map_err(|e| fail(dlb_status::DLB_ERR_INVALID_ARGUMENT, e.to_string()))?;
    Ok(dims)
}

fn dtype_and_device(dtype: DLDataType, device: DLDevice) -> Result<(DType, Device), dlb_status> {
    let dt = DType::from_dlpack(dtype).map_err(core)?;
    let dev = Device::from_dlpack(device).map_err(core)?;
    Ok((dt, dev))
}

fn create(
    ndim: i32,
    shape: *const i64,
    dtype: DLDataType,
    device: DLDevice,
    zeroed: bool,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    guard(|| {
        need_out(out)?;
        let dims = read_shape(ndim, shape)?;
        let (dt, dev) = dtype_and_device(dtype, device)?;
        let t = if zeroed {
            Tensor::zeros(&dims, dt, dev)
        } else {
            Tensor::empty(&dims, dt, dev)
        }
        .map_err(core)?;
        put(out, t);
        Ok(())
    })
}

/// A new contiguous tensor of `shape` (ndim values), `dtype` and `device`
/// whose elements are not initialised (host memory happens to be zeroed).
/// Errors: `DLB_ERR_NULL_POINTER`, `DLB_ERR_INVALID_ARGUMENT` (ndim < 0 or >
/// 64, a negative size, an element count that overflows),
/// `DLB_ERR_UNSUPPORTED_DTYPE`, `DLB_ERR_UNSUPPORTED_DEVICE`,
/// `DLB_ERR_NO_CUDA`, `DLB_ERR_OUT_OF_MEMORY`. The caller owns `*out`.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_empty(
    ndim: i32,
    shape: *const i64,
    dtype: DLDataType,
    device: DLDevice,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    create(ndim, shape, dtype, device, false, out)
}

/// `dlb_empty`, with every element zero.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_zeros(
    ndim: i32,
    shape: *const i64,
    dtype: DLDataType,
    device: DLDevice,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    create(ndim, shape, dtype, device, true, out)
}

/// Calls the C free callback exactly once, when the storage goes.
struct HostOwner {
    free_fn: Option<unsafe extern "C" fn(*mut c_void)>,
    ctx: *mut c_void,
}

// SAFETY: the callback contract (documented on dlb_from_host_buffer) is
// that it may run on any thread.
unsafe impl Send for HostOwner {}
// SAFETY: nothing reads the fields concurrently; they are only used in Drop.
unsafe impl Sync for HostOwner {}

impl Drop for HostOwner {
    fn drop(&mut self) {
        if let Some(f) = self.free_fn {
            // SAFETY: the caller's callback with the caller's context, once.
            unsafe { f(self.ctx) };
        }
    }
}

/// Wraps host memory the caller allocated, without copying.
///
/// `strides` counts elements (NULL means C-contiguous). `free_fn(ctx)` is
/// called exactly once, from whichever thread releases the last owner, when
/// dlbridge no longer needs `data`; it may be NULL when the caller manages
/// the memory itself (and keeps it valid long enough).
///
/// Ownership: on success, `data` belongs to dlbridge until `free_fn` runs.
/// On failure, nothing was taken: `free_fn` is not called and the caller
/// still owns `data`.
///
/// Errors: as `dlb_empty`, plus `DLB_ERR_INVALID_TENSOR` for NULL `data`
/// with elements, or strides whose byte extent overflows.
/// Thread-safe.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dlb_from_host_buffer(
    data: *mut c_void,
    ndim: i32,
    shape: *const i64,
    strides: *const i64,
    dtype: DLDataType,
    free_fn: Option<unsafe extern "C" fn(*mut c_void)>,
    ctx: *mut c_void,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    guard(|| {
        need_out(out)?;
        let dims = read_shape(ndim, shape)?;
        let dt = DType::from_dlpack(dtype).map_err(core)?;
        let element_strides: Vec<i64> = if strides.is_null() {
            crate::layout::contiguous_strides(&dims, 1)
                .iter()
                .map(|&s| s as i64)
                .collect()
        } else {
            // SAFETY: strides points to ndim readable values.
            unsafe { crate::raw::c_array(strides, dims.len()) }.to_vec()
        };
        let byte_strides = byte_strides(&element_strides, dt.size()).ok_or_else(|| {
            fail(
                dlb_status::DLB_ERR_INVALID_TENSOR,
                "strides overflow the address space",
            )
        })?;
        let checked = ForeignTensor {
            data: data.cast(),
            shape: dims,
            byte_strides,
            dtype: dt,
            device: Device::CPU,
            read_only: false,
        }
        .check()
        .map_err(core)?;
        // The owner (which calls free_fn when dropped) is made only once
        // nothing can fail any more: a failed call must take nothing.
        let owner = Owner::External(Box::new(HostOwner { free_fn, ctx }));
        // SAFETY: the caller promises data covers every element of this
        // layout until free_fn is called, which the owner does on drop.
        let t = unsafe { checked.wrap(owner) };
        put(out, t);
        Ok(())
    })
}

/// Fills `*out` with a non-owning DLTensor view of `tensor`: data pointer,
/// device, dtype, ndim, and shape/strides (in elements) that point into the
/// handle. The view is valid until `dlb_free(tensor)`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_describe(tensor: *const dlb_tensor, out: *mut DLTensor) -> dlb_status {
    guard(|| {
        let t = handle(tensor, "tensor")?;
        need_out(out)?;
        // SAFETY: tensor is a live handle (checked by `handle`).
        let view = borrowed_view(t, unsafe { &(*tensor).dims }).map_err(core)?;
        // SAFETY: out checked non-NULL.
        unsafe { out.write(view) };
        Ok(())
    })
}

/// Whether the tensor's memory may not be written (an import flagged
/// READ_ONLY). Returns false for NULL. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_is_read_only(tensor: *const dlb_tensor) -> bool {
    if tensor.is_null() {
        return false;
    }
    // SAFETY: a live handle.
    unsafe { (*tensor).inner.is_read_only() }
}

/// A copy of `tensor` on `device` (a new handle; the same data when the
/// device is the same, as `Tensor.to`). Errors: `DLB_ERR_NULL_POINTER`,
/// `DLB_ERR_UNSUPPORTED_DEVICE`, `DLB_ERR_NO_CUDA`, `DLB_ERR_OUT_OF_MEMORY`,
/// `DLB_ERR_RUNTIME`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_to_device(
    tensor: *const dlb_tensor,
    device: DLDevice,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    derive(tensor, "tensor", out, |t| {
        t.to_device(Device::from_dlpack(device)?)
    })
}

/// A contiguous copy of `tensor` in new memory, on the same device.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_clone(
    tensor: *const dlb_tensor,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    derive(tensor, "tensor", out, Tensor::clone_data)
}

/// `tensor` converted to `dtype` (new memory; the same data when the dtype
/// is the same), with `tensor`'s strides when it is dense, as PyTorch's
/// `.to(dtype)` (a transpose stays a transpose: read the strides, or
/// `dlb_clone` the result for a row-major copy). Errors add
/// `DLB_ERR_UNSUPPORTED_DTYPE`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_cast(
    tensor: *const dlb_tensor,
    dtype: DLDataType,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    derive(tensor, "tensor", out, |t| {
        t.to_dtype(DType::from_dlpack(dtype)?)
    })
}

/// Copies `src` into `dst`'s memory, broadcasting and casting, across
/// devices too (`Tensor.copy_`). Errors: `DLB_ERR_NULL_POINTER`,
/// `DLB_ERR_INVALID_OPERATION` (shapes, a read-only `dst`), CUDA errors.
/// Thread-safe (but not for two writers of the same memory).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_copy_(dst: *const dlb_tensor, src: *const dlb_tensor) -> dlb_status {
    guard(|| {
        let d = handle(dst, "dst")?;
        let s = handle(src, "src")?;
        d.copy_(s).map_err(core)
    })
}
