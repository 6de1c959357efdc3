//! Building DLPack managed tensors that consumers own.
//!
//! Each export is one heap block: the DLPack header first (so the header
//! pointer is the block pointer), then the shape and strides it points into,
//! then an `Arc` of the storage. The consumer's single deleter call frees the
//! block and drops that `Arc`, so the memory stays valid exactly as long as
//! some owner (a tensor, an array, a capsule, a peer tensor) still needs it.

use crate::storage::Storage;
use crate::{Result, Tensor};
use dlpark::DlpackFlags;
use dlpark::ffi::{DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor};
use std::ffi::c_void;
use std::sync::Arc;

/// The DLPack version dlbridge implements.
pub const VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 3 };

/// How an export describes itself to its consumer.
#[derive(Copy, Clone, Debug, Default)]
pub struct ExportOptions {
    /// Set DLPACK_FLAG_BITMASK_IS_COPIED: this tensor is a copy made for the consumer.
    pub is_copied: bool,
    /// The version to stamp (defaults to [`VERSION`]).
    pub version: Option<DLPackVersion>,
    /// Refuse a tensor `version` cannot describe (C's `dlb_export_max_version`).
    /// Python's `__dlpack__(max_version=...)` does not: PyTorch asks for (1, 0)
    /// and reads the float8 codes that came with 1.1.
    pub refuse_undescribable: bool,
}

/// Points a DLTensor's shape and strides into `dims` (shape then strides).
///
/// # Safety
/// `dims` must hold `2 * ndim` values and outlive every use of `dl`.
unsafe fn point_into(dl: &mut DLTensor, dims: *mut i64, ndim: usize) {
    if ndim > 0 {
        dl.shape = dims;
        // SAFETY: dims holds 2 * ndim values (the caller's promise).
        dl.strides = unsafe { dims.add(ndim) };
    }
}

/// A non-owning DLTensor describing `t` (the C exchange API's DLTensor view
/// and the C ABI's `dlb_describe`). Its shape and strides point into
/// `dims`, filled on first use by whoever owns the view's lifetime (the
/// tensor object or handle), so the view stays valid as long as that does.
pub fn borrowed_view(t: &Tensor, dims: &std::sync::OnceLock<Box<[i64]>>) -> Result<DLTensor> {
    let mut dl = describe(t)?;
    let ndim = t.ndim();
    let stored = dims.get_or_init(|| {
        let mut fresh = vec![0i64; 2 * ndim].into_boxed_slice();
        fill_dims(t, &mut fresh);
        fresh
    });
    // SAFETY: stored holds 2 * ndim values and lives as long as `dims`.
    unsafe { point_into(&mut dl, stored.as_ptr() as *mut i64, ndim) };
    Ok(dl)
}

/// One export: the header the consumer sees first (so the header pointer
/// is the block pointer), then what only dlbridge reads, then `2 * ndim`
/// int64 (shape, then strides) in the same allocation, as NumPy lays its
/// exports out: one allocation per export and one free in the deleter.
#[repr(C)]
struct Exported<H> {
    header: H,
    /// Keeps the memory alive until the deleter runs.
    storage: Arc<Storage>,
    /// The rank the block was sized for. The deleter reads this private
    /// copy, never the header, which the consumer may have written to.
    ndim: usize,
    dims: [i64; 0],
}

impl<H> Exported<H> {
    /// The block's allocation layout for a tensor of rank `ndim`.
    fn layout(ndim: usize) -> std::alloc::Layout {
        let dims = std::alloc::Layout::array::<i64>(2 * ndim).expect("a tensor's rank is small");
        std::alloc::Layout::new::<Exported<H>>()
            .extend(dims)
            .expect("a tensor's rank is small")
            .0
            .pad_to_align()
    }
}

/// Allocates the block for `t`, writes `header` with its dims and storage
/// into it in place, then points the header's shape/strides into the block
/// and its `manager_ctx` at it: dlbridge's deleter never reads it, but some
/// consumers (PaddlePaddle) never call the deleter of a tensor whose
/// context is NULL. `describe(t)` must have succeeded.
fn finish<H>(
    header: H,
    t: &Tensor,
    fields: impl Fn(&mut H) -> (&mut DLTensor, &mut *mut std::ffi::c_void),
) -> *mut H {
    let ndim = t.ndim();
    let layout = Exported::<H>::layout(ndim);
    // SAFETY: the layout has a non-zero size (it holds the header).
    let block = unsafe { std::alloc::alloc(layout) }.cast::<Exported<H>>();
    if block.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: block is a fresh allocation of `layout`, uniquely ours until
    // the deleter frees it: every field is written before any is read, and
    // the dims follow the struct inside the same allocation.
    unsafe {
        std::ptr::addr_of_mut!((*block).header).write(header);
        std::ptr::addr_of_mut!((*block).storage).write(t.storage().clone());
        std::ptr::addr_of_mut!((*block).ndim).write(ndim);
        let dims = std::ptr::addr_of_mut!((*block).dims).cast::<i64>();
        fill_dims(t, std::slice::from_raw_parts_mut(dims, 2 * ndim));
        let (dl_tensor, manager_ctx) = fields(&mut (*block).header);
        point_into(dl_tensor, dims, ndim);
        *manager_ctx = block.cast();
    }
    block.cast()
}

/// Checks that `t` can be described in DLPack's units and returns the
/// DLTensor describing it (shape and strides are set by the caller).
fn describe(t: &Tensor) -> Result<DLTensor> {
    let layout = t.layout();
    let size = t.dtype().size() as isize;
    // A size-1 dimension's stride is never stepped, so any value will do
    // (as `Layout::element_strides`, without its allocation or divisions:
    // this is the hottest path of every export, and item sizes are powers
    // of two).
    let whole = |(&s, &n): (&isize, &usize)| n <= 1 || s & (size - 1) == 0;
    if !layout.strides.iter().zip(&layout.shape).all(whole) {
        return Err(crate::err!(
            InvalidTensor,
            "cannot export a tensor whose byte strides {:?} are not multiples of its {}-byte item \
             size through DLPack (strides count whole elements); call .contiguous() first",
            layout.strides,
            size
        ));
    }
    Ok(DLTensor {
        data: t.data_ptr().cast::<c_void>(),
        device: t.device().to_dlpack(),
        ndim: t.ndim() as i32,
        dtype: t.dtype().to_dlpack(),
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    })
}

/// Writes `t`'s shape then its element strides into `out` (`2 * ndim`
/// values). `describe(t)` has checked the strides are whole elements, so a
/// shift by log2 of the item size divides them exactly, without the
/// division's latency; the stride of a size-1 dimension may be any value
/// and is divided as `Layout::element_strides` does (toward zero).
fn fill_dims(t: &Tensor, out: &mut [i64]) {
    let layout = t.layout();
    let size = t.dtype().size() as isize;
    let shift = size.trailing_zeros();
    let (shape, strides) = out.split_at_mut(t.ndim());
    for (d, &n) in shape.iter_mut().zip(&layout.shape) {
        *d = n as i64;
    }
    for (d, &s) in strides.iter_mut().zip(&layout.strides) {
        *d = if s & (size - 1) == 0 {
            s >> shift
        } else {
            s / size
        } as i64;
    }
}

/// Frees a block without letting a panic cross the C boundary.
///
/// # Safety
/// `ptr` must come from [`finish`] for the same `H` and not be used again.
unsafe fn free_block<H>(ptr: *mut H) {
    if ptr.is_null() {
        return;
    }
    let block = ptr.cast::<Exported<H>>();
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the caller's promise: the block is live, its fields were
        // written by `finish`, and `ndim` is the rank it was allocated for.
        unsafe {
            let layout = Exported::<H>::layout((*block).ndim);
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*block).header));
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*block).storage));
            std::alloc::dealloc(block.cast(), layout);
        }
    }));
}

unsafe extern "C" fn delete_versioned(ptr: *mut DLManagedTensorVersioned) {
    // SAFETY: DLPack consumers call the deleter once, with the pointer we gave out.
    unsafe { free_block(ptr) }
}

unsafe extern "C" fn delete_legacy(ptr: *mut DLManagedTensor) {
    // SAFETY: as in delete_versioned.
    unsafe { free_block(ptr) }
}

/// The first DLPack minor version (of major 1) that declares a dtype code:
/// 0-6 (int to bool) are in 1.0; the float8/float6/float4 codes came with 1.1.
fn first_minor_with_code(code: u8) -> u32 {
    if code <= 6 { 0 } else { 1 }
}

/// Refuses an export stamped with a version that cannot describe the tensor
/// (a C consumer built against DLPack 1.0 would misread a float8 code or a
/// padded sub-byte tensor, whose flag came with 1.1).
fn check_describable(dl: &DLTensor, t: &Tensor, version: DLPackVersion) -> Result<()> {
    if version.major != 1 {
        return Ok(());
    }
    let need = first_minor_with_code(dl.dtype.code.0).max(u32::from(t.dtype().is_padded_subbyte()));
    if version.minor < need {
        return Err(crate::err!(
            InvalidTensor,
            "cannot export a {} tensor as DLPack {}.{}: its dtype came with DLPack 1.{}; ask for \
             version 1.{} or later (max_version) or convert it with .to() first",
            t.dtype(),
            version.major,
            version.minor,
            need,
            need
        ));
    }
    Ok(())
}

/// Exports `t` as a `DLManagedTensorVersioned` the caller now owns.
/// READ_ONLY follows the storage; IS_COPIED follows `options`.
pub fn export_versioned(
    t: &Tensor,
    options: ExportOptions,
) -> Result<*mut DLManagedTensorVersioned> {
    let dl_tensor = describe(t)?;
    let version = options.version.unwrap_or(VERSION);
    if options.refuse_undescribable {
        check_describable(&dl_tensor, t, version)?;
    }
    let mut flags = DlpackFlags::empty();
    flags.set(DlpackFlags::READ_ONLY, t.is_read_only());
    flags.set(DlpackFlags::IS_COPIED, options.is_copied);
    flags.set(
        DlpackFlags::IS_SUBBYTE_TYPE_PADDED,
        t.dtype().is_padded_subbyte(),
    );
    let header = DLManagedTensorVersioned {
        version,
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(delete_versioned),
        flags,
        dl_tensor,
    };
    Ok(finish(header, t, |h| {
        (&mut h.dl_tensor, &mut h.manager_ctx)
    }))
}

/// Exports `t` as a legacy `DLManagedTensor`. The legacy ABI has no flags,
/// so a read-only tensor is refused rather than handed out as writable
/// (NumPy does the same).
pub fn export_legacy(t: &Tensor) -> Result<*mut DLManagedTensor> {
    if t.is_read_only() {
        return Err(crate::err!(
            InvalidTensor,
            "cannot export a read-only tensor as a legacy (unversioned) DLManagedTensor, which \
             cannot say it is read-only: export a versioned one (__dlpack__(max_version=(1, 0)) \
             in Python, dlb_export in C) or a copy (clone(), dlb_clone)"
        ));
    }
    if t.dtype().is_padded_subbyte() {
        return Err(crate::err!(
            UnsupportedDtype,
            "cannot export {} (one value per byte) as a legacy DLPack capsule, which cannot say it \
             is padded and would be read as packed; ask for a versioned one (max_version=(1, 0) or \
             newer)",
            t.dtype().name()
        ));
    }
    let dl_tensor = describe(t)?;
    let header = DLManagedTensor {
        dl_tensor,
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(delete_legacy),
    };
    Ok(finish(header, t, |h| {
        (&mut h.dl_tensor, &mut h.manager_ctx)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dlpack::import_versioned_or_legacy;
    use crate::{DType, Device, Scalar};
    use dlpark::Managed;

    #[test]
    fn round_trip_shares_memory_and_frees_once() {
        let t = Tensor::full(&[2, 3], Scalar::Float(1.5), DType::F64, Device::CPU).unwrap();
        // Not the global live-storage count: tests on other threads move it.
        let source = Arc::downgrade(t.storage());
        let view = t
            .index(&[crate::Selection::Range {
                start: None,
                stop: None,
                step: 2,
            }])
            .unwrap();
        let raw = export_versioned(&view, ExportOptions::default()).unwrap();
        // SAFETY: raw is a fresh export we own.
        let managed = unsafe { Managed::from_raw(raw) }.unwrap();
        let back = import_versioned_or_legacy(managed).unwrap();
        assert_eq!(back.data_ptr(), t.data_ptr());
        assert_eq!(back.shape(), &[1, 3]);
        drop((t, view));
        assert_eq!(back.to_scalars().unwrap(), vec![Scalar::Float(1.5); 3]);
        assert!(
            source.upgrade().is_some(),
            "the import keeps the source alive"
        );
        drop(back);
        assert!(
            source.upgrade().is_none(),
            "the deleter ran and released it"
        );
    }

    #[test]
    fn strides_divide_as_element_strides_do() {
        let t = Tensor::zeros(&[8], DType::I32, Device::CPU).unwrap();
        // A size-1 dimension's stride need not be whole elements.
        let odd = t.with_layout(crate::Layout {
            shape: vec![1, 2, 2],
            strides: vec![-3, -8, 4],
            offset: 12,
        });
        let raw = export_versioned(&odd, ExportOptions::default()).unwrap();
        // SAFETY: raw is a fresh export we own; its strides hold ndim values.
        let strides = unsafe { std::slice::from_raw_parts((*raw).dl_tensor.strides, 3).to_vec() };
        // SAFETY: we own the export and call its deleter once.
        unsafe { ((*raw).deleter.unwrap())(raw) };
        let expected: Vec<i64> = odd
            .layout()
            .element_strides(4)
            .unwrap()
            .iter()
            .map(|&s| s as i64)
            .collect();
        assert_eq!(strides, expected);
        assert_eq!(strides, vec![0, -2, 1]);
    }

    #[test]
    fn high_rank_exports_keep_their_dims() {
        let shape = [1usize, 2, 1, 2, 1, 2, 1, 2, 1, 2];
        let t = Tensor::zeros(&shape, DType::U8, Device::CPU).unwrap();
        let raw = export_versioned(&t, ExportOptions::default()).unwrap();
        // SAFETY: raw is a fresh export we own.
        let managed = unsafe { Managed::from_raw(raw) }.unwrap();
        let back = import_versioned_or_legacy(managed).unwrap();
        assert_eq!(back.shape(), &shape);
        assert_eq!(back.layout().strides, t.layout().strides);
    }

    #[test]
    fn legacy_refuses_read_only_and_odd_strides_refused() {
        let t = Tensor::zeros(&[4], DType::I32, Device::CPU).unwrap();
        let odd = t.with_layout(crate::Layout {
            shape: vec![2],
            strides: vec![6],
            offset: 0,
        });
        assert!(
            export_versioned(&odd, ExportOptions::default())
                .err()
                .unwrap()
                .kind()
                == crate::ErrorKind::InvalidTensor
        );
        let raw = export_legacy(&t).unwrap();
        // SAFETY: we own the export and call its deleter once.
        unsafe { ((*raw).deleter.unwrap())(raw) };
    }
}
