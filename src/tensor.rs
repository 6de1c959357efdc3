//! The tensor: shared storage, a strided layout and a dtype (candle's model).
//! Cloning a `Tensor` makes another view of the same memory.

mod dlpack;
mod methods;
mod typed;

use crate::backend;
use crate::cpu;
use crate::layout::{Layout, Selection, checked_numel};
use crate::storage::Storage;
use crate::{DType, Device, Result, Scalar, bail};
use smallvec::SmallVec;
use std::sync::Arc;

/// An n-dimensional array on a device: shared memory ([`Storage`]), a
/// strided [`Layout`] (byte strides, any sign) and a [`DType`], as a
/// PyTorch tensor is.
///
/// Cloning a `Tensor` is cheap and makes another handle to the same
/// memory, as do views (`t()`, `reshape`, `index`, ...): writes through one
/// (`fill_`, `add_`, `copy_`, which take `&self` as PyTorch's do) show in
/// all. Memory comes from dlbridge's allocator ([`zeros`](Tensor::zeros)),
/// from Rust values ([`from_vec`](Tensor::from_vec),
/// [`from_array`](Tensor::from_array), no copy), or from a DLPack producer
/// ([`from_raw_versioned`](Tensor::from_raw_versioned), no copy); it goes
/// back out as Rust values ([`as_slice`](Tensor::as_slice),
/// [`as_array`](Tensor::as_array), [`to_vec`](Tensor::to_vec)) or as DLPack
/// ([`into_raw_versioned`](Tensor::into_raw_versioned)).
///
/// ```
/// use dlbridge::{DType, Device, Tensor};
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let b = a.mul(10.0)?.add(&a)?; // PyTorch's promotion and broadcasting
/// assert_eq!(b.to_vec::<f32>()?, vec![11.0, 22.0, 33.0, 44.0]);
/// assert_eq!((b.shape(), b.dtype(), b.device()), (&[2, 2][..], DType::F32, Device::CPU));
/// # Ok::<(), dlbridge::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor {
    storage: Arc<Storage>,
    layout: Layout,
    dtype: DType,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("shape", &self.layout.shape)
            .field("dtype", &self.dtype)
            .field("device", &self.device())
            .finish()
    }
}

impl Tensor {
    /// A view of `storage`. Checks that the element count fits (see
    /// [`Layout`]'s invariant) and that every element lies inside it.
    ///
    /// ```
    /// use dlbridge::{DType, Layout, Tensor};
    /// let t = Tensor::from_vec(vec![1u8, 2, 3, 4], &[4])?;
    /// let odd = Layout { shape: vec![2], strides: vec![2], offset: 1 }; // t[1::2]
    /// let v = Tensor::from_parts(t.storage().clone(), odd, DType::U8)?;
    /// assert_eq!(v.to_vec::<u8>()?, vec![2, 4]);
    /// let outside = Layout { shape: vec![5], strides: vec![1], offset: 0 };
    /// assert!(Tensor::from_parts(t.storage().clone(), outside, DType::U8).is_err());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn from_parts(storage: Arc<Storage>, layout: Layout, dtype: DType) -> Result<Tensor> {
        checked_numel(&layout.shape)?;
        let (lo, hi) = layout.byte_extent(dtype.size());
        let start = layout.offset as isize + lo;
        if layout.numel() > 0 && (start < 0 || layout.offset as isize + hi > storage.len() as isize)
        {
            bail!(
                InvalidOperation,
                "layout (shape {:?}, byte strides {:?}, offset {}) reaches outside its {}-byte storage",
                layout.shape,
                layout.strides,
                layout.offset,
                storage.len()
            );
        }
        Ok(Tensor {
            storage,
            layout,
            dtype,
        })
    }

    /// A new contiguous tensor whose elements are left for the caller to
    /// write (their values are unspecified, never undefined behaviour).
    ///
    /// ```
    /// use dlbridge::{DType, Device, Tensor};
    /// let t = Tensor::empty(&[2, 3], DType::F16, Device::CPU)?;
    /// assert_eq!((t.numel(), t.nbytes()), (6, 12));
    /// assert!(Tensor::empty(&[usize::MAX, 2], DType::F32, Device::CPU).is_err());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn empty(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::alloc(shape, dtype, device, false)
    }

    /// A new contiguous tensor of zeros.
    ///
    /// ```
    /// use dlbridge::{DType, Device, Tensor};
    /// let t = Tensor::zeros(&[3], DType::I64, Device::CPU)?;
    /// assert_eq!(t.to_vec::<i64>()?, vec![0, 0, 0]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn zeros(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::alloc(shape, dtype, device, true)
    }

    fn alloc(shape: &[usize], dtype: DType, device: Device, zeroed: bool) -> Result<Tensor> {
        Tensor::alloc_as(shape, None, dtype, device, zeroed)
    }

    /// New memory for `shape`, laid out as `layout` (dense strides for
    /// `shape`, from `memory_format.rs`) or row-major.
    fn alloc_as(
        shape: &[usize],
        layout: Option<Layout>,
        dtype: DType,
        device: Device,
        zeroed: bool,
    ) -> Result<Tensor> {
        // PyTorch's words for both overflows here.
        let bytes = checked_numel(shape)
            .ok()
            .and_then(|n| n.checked_mul(dtype.size()))
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| {
                crate::err!(
                    TooLarge,
                    "Storage size calculation overflowed with sizes={shape:?}"
                )
            })?;
        let storage = backend::of(device).allocate(device, bytes, zeroed)?;
        Ok(Tensor {
            storage: Arc::new(storage),
            layout: layout.unwrap_or_else(|| Layout::contiguous(shape.to_vec(), dtype.size())),
            dtype,
        })
    }

    /// A new uninitialised tensor of `dtype` with this one's shape and the
    /// strides PyTorch's `empty_like` gives it: a dense layout's own (a
    /// transpose stays transposed), else row-major in the order of this
    /// one's strides.
    ///
    /// ```
    /// use dlbridge::{DType, Tensor};
    /// let t = Tensor::from_vec(vec![1f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?.t()?;
    /// assert_eq!(t.empty_like(DType::F64)?.strides()?, vec![1, 3]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn empty_like(&self, dtype: DType) -> Result<Tensor> {
        self.alloc_like(dtype, self.device(), false)
    }

    /// [`empty_like`](Self::empty_like) on `device`, zeroed or not (the
    /// `*_like` creation functions).
    pub(crate) fn alloc_like(&self, dtype: DType, device: Device, zeroed: bool) -> Result<Tensor> {
        let layout = self.layout.like(self.dtype.size(), dtype.size());
        Tensor::alloc_as(self.shape(), Some(layout), dtype, device, zeroed)
    }

    /// A new uninitialised output of an elementwise op of `shape` on
    /// `operands` (in argument order; `with_number`: a number beside them):
    /// the strides PyTorch's `TensorIterator` gives it (`memory_format.rs`).
    pub(crate) fn empty_for_elementwise(
        shape: &[usize],
        operands: &[&Tensor],
        with_number: bool,
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let sized: SmallVec<[(&Layout, usize); 2]> = operands
            .iter()
            .map(|t| (&t.layout, t.dtype.size()))
            .collect();
        let layout = Layout::for_elementwise(shape, &sized, with_number, dtype.size());
        Tensor::alloc_as(shape, Some(layout), dtype, device, false)
    }

    /// A new contiguous tensor with every element `value` (range-checked
    /// for integer dtypes, as PyTorch does).
    ///
    /// ```
    /// use dlbridge::{DType, Device, Scalar, Tensor};
    /// let t = Tensor::full(&[2], Scalar::Float(0.5), DType::F64, Device::CPU)?;
    /// assert_eq!(t.to_vec::<f64>()?, vec![0.5, 0.5]);
    /// assert!(Tensor::full(&[1], Scalar::Int(300), DType::U8, Device::CPU).is_err());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn full(shape: &[usize], value: Scalar, dtype: DType, device: Device) -> Result<Tensor> {
        let t = Tensor::empty(shape, dtype, device)?;
        t.fill_(value)?;
        Ok(t)
    }

    /// A contiguous host tensor holding `values` (row-major), cast to
    /// `dtype` (the way Python's lists come in; from Rust values,
    /// [`from_vec`](Tensor::from_vec) copies nothing).
    ///
    /// ```
    /// use dlbridge::{DType, Scalar, Tensor};
    /// let t = Tensor::from_scalars(&[2], &[Scalar::Int(1), Scalar::Float(2.5)], DType::F32)?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![1.0, 2.5]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn from_scalars(shape: &[usize], values: &[Scalar], dtype: DType) -> Result<Tensor> {
        for v in values {
            v.check_fits(dtype, dtype.name())?;
        }
        if values.len() != checked_numel(shape)? {
            bail!(
                InvalidValue,
                "{} values for a tensor of shape {shape:?}",
                values.len()
            );
        }
        Tensor::from_fn(shape, dtype, |i| values[i])
    }

    /// A contiguous host tensor whose element `i` (row-major) is `value(i)`,
    /// cast to `dtype` (each checked to fit). The memory comes first, from the
    /// fallible allocator, so a huge shape is an error rather than a failed
    /// allocation of the values (which aborts the process).
    ///
    /// ```
    /// use dlbridge::{DType, Scalar, Tensor};
    /// let t = Tensor::from_fn(&[4], DType::I32, |i| Scalar::Int(i as i128 * 10))?;
    /// assert_eq!(t.to_vec::<i32>()?, vec![0, 10, 20, 30]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn from_fn(
        shape: &[usize],
        dtype: DType,
        value: impl Fn(usize) -> Scalar,
    ) -> Result<Tensor> {
        let t = Tensor::empty(shape, dtype, Device::CPU)?;
        crate::with_element!(dtype, T => {
            let out = t.data_ptr().cast::<T>();
            for i in 0..t.numel() {
                let v = value(i);
                v.check_fits(dtype, dtype.name())?;
                // SAFETY: t is a fresh contiguous buffer of numel elements of T.
                unsafe { out.add(i).write(<T as crate::Element>::from_scalar(v)) };
            }
        });
        Ok(t)
    }

    /// The memory this tensor views (shared with its clones and views).
    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    /// Shape, byte strides and byte offset.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![0u32; 6], &[2, 3])?;
    /// assert_eq!(t.layout().strides, vec![12, 4]);
    /// assert_eq!(t.t()?.layout().strides, vec![4, 12]);
    /// assert_eq!(t.t()?.strides()?, vec![1, 3]); // in elements, as PyTorch
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Where the memory is.
    pub fn device(&self) -> Device {
        self.storage.device()
    }

    /// The size of each dimension.
    pub fn shape(&self) -> &[usize] {
        &self.layout.shape
    }

    /// The number of dimensions.
    pub fn ndim(&self) -> usize {
        self.layout.ndim()
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// Bytes the elements occupy if stored contiguously.
    pub fn nbytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }

    /// Address of element `[0, 0, ...]`.
    pub fn data_ptr(&self) -> *mut u8 {
        self.storage.as_ptr().wrapping_add(self.layout.offset)
    }

    /// Whether the elements are laid out row-major without gaps (PyTorch's
    /// `is_contiguous`: size-1 dimensions' strides do not matter).
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous(self.dtype.size())
    }

    /// Whether the memory may not be written: a DLPack import flagged
    /// `READ_ONLY`, a non-writeable NumPy array. Writes fail with
    /// [`ErrorKind::ReadOnly`](crate::ErrorKind::ReadOnly).
    pub fn is_read_only(&self) -> bool {
        self.storage.is_read_only()
    }

    /// Strides in elements, as PyTorch reports them.
    pub fn strides(&self) -> Result<Vec<isize>> {
        self.layout.element_strides(self.dtype.size()).ok_or_else(|| {
            crate::err!(
                InvalidOperation,
                "this tensor's byte strides {:?} are not whole multiples of its {}-byte elements",
                self.layout.strides,
                self.dtype.size()
            )
        })
    }

    /// Another view of the same memory, under `layout`, unchecked: crate
    /// code passes layouts it derived from this tensor's. (Public callers
    /// use [`from_parts`](Tensor::from_parts), which checks the layout
    /// stays inside the storage: an unchecked one would let safe code read
    /// out of bounds.)
    pub(crate) fn with_layout(&self, layout: Layout) -> Tensor {
        Tensor {
            storage: self.storage.clone(),
            layout,
            dtype: self.dtype,
        }
    }

    /// Python-style indexing (`t[1, ::2, None]`): a view sharing memory.
    ///
    /// ```
    /// use dlbridge::{Selection, Tensor};
    /// let t = Tensor::from_vec((0..6).collect::<Vec<i64>>(), &[2, 3])?;
    /// let every_other = Selection::Range { start: None, stop: None, step: 2 };
    /// let v = t.index(&[Selection::Index(1), every_other])?; // t[1, ::2]
    /// assert_eq!(v.to_vec::<i64>()?, vec![3, 5]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn index(&self, selections: &[Selection]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout.select(selections, self.dtype.size())?))
    }

    /// A view of this tensor broadcast to `shape` (stride 0 along new or
    /// size-1 dimensions), PyTorch's `broadcast_to`.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1u8, 2], &[2])?;
    /// assert_eq!(t.broadcast_to(&[2, 2])?.to_vec::<u8>()?, vec![1, 2, 1, 2]);
    /// assert!(t.broadcast_to(&[3]).is_err());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        if shape == self.shape() {
            return Ok(self.clone());
        }
        Ok(self.with_layout(self.layout.broadcast_to(shape)?))
    }

    /// Does any byte of `self` possibly coincide with a byte of `other`?
    /// Compares addresses, not storages: two imports of one buffer overlap too.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1u16, 2, 3, 4], &[4])?;
    /// assert!(t.reshape(&[2, 2])?.may_overlap(&t));
    /// assert!(!t.clone_data()?.may_overlap(&t));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn may_overlap(&self, other: &Tensor) -> bool {
        let (a, b) = (self.byte_range(), other.byte_range());
        self.device() == other.device() && a.0 < b.1 && b.0 < a.1
    }

    /// The same elements: one storage, layout and dtype.
    fn is_same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
            && self.dtype == other.dtype
            && self.layout == other.layout
    }

    fn byte_range(&self) -> (usize, usize) {
        let (lo, hi) = self.layout.byte_extent(self.dtype.size());
        let base = self.data_ptr() as isize;
        ((base + lo) as usize, (base + hi) as usize)
    }

    pub(crate) fn ensure_writable(&self) -> Result<()> {
        // A stride-0 dimension makes several elements one memory location
        // (an `expand`ed tensor): writes would race, so PyTorch refuses.
        let l = self.layout();
        if l.shape
            .iter()
            .zip(&l.strides)
            .any(|(&n, &s)| s == 0 && n > 1)
        {
            bail!(
                InvalidOperation,
                "unsupported operation: more than one element of the written-to tensor refers to a \
                 single memory location. Please clone() the tensor before performing the operation."
            );
        }
        if self.is_read_only() {
            bail!(
                ReadOnly,
                "cannot write into a read-only tensor (it views a read-only buffer, e.g. a non-writeable \
                 NumPy array or a DLPack tensor flagged READ_ONLY); clone() it first"
            );
        }
        Ok(())
    }

    /// A contiguous copy, always fresh memory (PyTorch's
    /// `clone(memory_format=torch.contiguous_format)`; [`clone_like`](Self::clone_like)
    /// is its `clone()`).
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1i32, 2], &[2])?;
    /// let c = t.clone_data()?;
    /// c.fill_(0.into())?;
    /// assert_eq!((t.to_vec::<i32>()?, c.to_vec::<i32>()?), (vec![1, 2], vec![0, 0]));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn clone_data(&self) -> Result<Tensor> {
        let out = Tensor::empty(self.shape(), self.dtype, self.device())?;
        out.copy_from_same_device(self)?;
        Ok(out)
    }

    /// A copy in fresh memory laid out as [`empty_like`](Self::empty_like)
    /// lays it out: PyTorch's `clone()`, whose result keeps a dense
    /// tensor's strides (a copy of a transpose is a transpose).
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1u8, 2, 3, 4], &[2, 2])?.t()?;
    /// let c = t.clone_like()?;
    /// assert_eq!((c.strides()?, c.to_vec::<u8>()?), (vec![1, 2], vec![1, 3, 2, 4]));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn clone_like(&self) -> Result<Tensor> {
        let out = self.empty_like(self.dtype)?;
        out.copy_from_same_device(self)?;
        Ok(out)
    }

    /// `self[...] = src[...]` with casting and broadcasting, on one device,
    /// no overlap: the backend dispatch behind copies and casts.
    ///
    /// The storage-only dtypes have no kernels: the same dtype is copied bit
    /// for bit as the unsigned type of its size; a cast to or from one runs
    /// on the host (through float32, as PyTorch's conversions do).
    fn copy_from_same_device(&self, src: &Tensor) -> Result<()> {
        let (to, from) = (self.dtype, src.dtype);
        if to == from && to.is_storage_only() {
            return backend::of(self.device()).copy(&self.as_bits(), &src.as_bits());
        }
        // The packed float4 pairs convert to nothing (as in PyTorch); the
        // other storage-only formats convert where their backend can.
        if to != from && (to == DType::F4E2M1FNX2 || from == DType::F4E2M1FNX2) {
            bail!(
                NotImplemented,
                "\"copy_kernel\" not implemented for 'Float4_e2m1fn_x2'"
            );
        }
        backend::of(self.device()).copy(self, src)
    }

    /// `view(dtype)`: the same memory read as another dtype of the same size
    /// (`t.view(uint8)` shows a float8 tensor's codes).
    ///
    /// ```
    /// use dlbridge::{DType, Tensor};
    /// let t = Tensor::from_vec(vec![1.0f32], &[1])?;
    /// assert_eq!(t.view_dtype(DType::I32)?.to_vec::<i32>()?, vec![0x3f80_0000]);
    /// assert!(t.view_dtype(DType::F64).is_err());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn view_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype.size() != self.dtype.size() {
            bail!(
                InvalidOperation,
                "dlbridge views a tensor as another dtype only of the same element size ({} has {} \
                 bytes, {} has {})",
                self.dtype,
                self.dtype.size(),
                dtype,
                dtype.size()
            );
        }
        Ok(self.reinterpreted(dtype))
    }

    /// The same memory seen as the unsigned integer type of the same size.
    fn as_bits(&self) -> Tensor {
        self.reinterpreted(self.dtype.bits_twin())
    }

    /// The same storage and layout read as `dtype` (of the same size).
    fn reinterpreted(&self, dtype: DType) -> Tensor {
        Tensor {
            storage: self.storage.clone(),
            layout: self.layout.clone(),
            dtype,
        }
    }

    /// Itself when already contiguous, else a contiguous copy.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1u8, 2, 3, 4], &[2, 2])?.t()?;
    /// assert!(!t.is_contiguous() && t.contiguous()?.is_contiguous());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            Ok(self.clone())
        } else {
            self.clone_data()
        }
    }

    /// Itself when already of `dtype`, else a converted copy laid out as
    /// [`empty_like`](Self::empty_like) lays it out (PyTorch's `.to(dtype)`:
    /// a transpose stays transposed; truncation toward zero, wrapping
    /// integers).
    ///
    /// ```
    /// use dlbridge::{DType, Tensor};
    /// let t = Tensor::from_vec(vec![-1.5f32, 2.7], &[2])?;
    /// assert_eq!(t.to_dtype(DType::I8)?.to_vec::<i8>()?, vec![-1, 2]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype {
            return Ok(self.clone());
        }
        let out = self.empty_like(dtype)?;
        out.copy_from_same_device(self)?;
        Ok(out)
    }

    /// Itself when already on `device`, else a copy there (fresh memory).
    /// `cuda` without an index means `cuda:0`. Without a CUDA device a move
    /// there fails with [`ErrorKind::NoCuda`](crate::ErrorKind::NoCuda).
    ///
    /// ```
    /// use dlbridge::{Device, Tensor};
    /// let t = Tensor::from_vec(vec![1u8], &[1])?;
    /// assert_eq!(t.to_device(Device::CPU)?.data_ptr(), t.data_ptr()); // already there
    /// match t.to_device(Device::cuda(None)) {
    ///     Ok(on_gpu) => assert_eq!(on_gpu.to_device(Device::CPU)?.to_vec::<u8>()?, vec![1]),
    ///     Err(e) => assert_eq!(e.kind(), dlbridge::ErrorKind::NoCuda),
    /// }
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        if device.canonical() == self.device() {
            return Ok(self.clone());
        }
        let target = backend::resolve(device)?;
        if target == self.device() {
            return Ok(self.clone());
        }
        let out = Tensor::empty(self.shape(), self.dtype, target)?;
        self.transfer_into(&out, true)?;
        Ok(out)
    }

    /// Copies this tensor into `dst`, a contiguous tensor of the same shape
    /// and dtype on another device. The device that is not the host does
    /// the moving. `fresh`: `dst` was just allocated and never written.
    fn transfer_into(&self, dst: &Tensor, fresh: bool) -> Result<()> {
        let (mover, _) = Device::host_last(dst.device(), self.device());
        backend::of(mover).transfer_into(self, dst, fresh)
    }

    /// Copies `src` into `self`, broadcasting and casting (`Tensor.copy_`).
    ///
    /// ```
    /// use dlbridge::{DType, Device, Tensor};
    /// let dst = Tensor::zeros(&[2, 2], DType::F64, Device::CPU)?;
    /// dst.copy_(&Tensor::from_vec(vec![1i32, 2], &[2])?)?;
    /// assert_eq!(dst.to_vec::<f64>()?, vec![1.0, 2.0, 1.0, 2.0]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        let shape = crate::layout::broadcast_shapes(self.shape(), src.shape())?;
        if shape != self.shape() {
            bail!(
                InvalidOperation,
                "output with shape {:?} doesn't match the broadcast shape {:?}",
                self.shape(),
                shape
            );
        }
        self.ensure_writable()?;
        if self.is_same(src) {
            // Each element onto itself, as torch's `copy_` skips it.
            return Ok(());
        }
        let src = if src.device() != self.device() {
            if src.dtype == self.dtype && src.shape() == self.shape() && self.is_contiguous() {
                // Straight into this memory, as torch's copy_: no temporary.
                return src.transfer_into(self, false);
            }
            src.to_device(self.device())?
        } else if self.may_overlap(src) {
            src.clone_data()?
        } else {
            src.clone()
        };
        self.copy_from_same_device(&src)
    }

    /// Sets every element to `value` (`Tensor.fill_`).
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![0i16; 3], &[3])?;
    /// t.fill_(7.into())?;
    /// assert_eq!(t.to_vec::<i16>()?, vec![7; 3]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn fill_(&self, value: Scalar) -> Result<()> {
        value.check_fits(self.dtype, self.dtype.c_type_name())?;
        self.ensure_writable()?;
        if self.dtype.is_storage_only() {
            if self.dtype == DType::F4E2M1FNX2 {
                bail!(
                    NotImplemented,
                    "\"fill_\" not implemented for 'Float4_e2m1fn_x2'"
                );
            }
            // The value's bits, written as the unsigned type of the same size.
            let code = Tensor::from_scalars(&[], &[value], self.dtype)?;
            let bits = code.as_bits().item()?;
            return backend::of(self.device()).fill(&self.as_bits(), bits);
        }
        backend::of(self.device()).fill(self, value)
    }

    /// The value of a one-element tensor.
    ///
    /// ```
    /// use dlbridge::{Scalar, Tensor};
    /// let t = Tensor::from_vec(vec![1i32, 2, 3], &[3])?;
    /// assert_eq!(t.sum()?.item()?, Scalar::Int(6));
    /// assert!(t.item().is_err());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            bail!(
                InvalidOperation,
                "a Tensor with {} elements cannot be converted to Scalar",
                self.numel()
            );
        }
        Ok(self.to_scalars()?[0])
    }

    /// Every element in row-major order, as [`Scalar`]s (any dtype; for one
    /// Rust type, [`to_vec`](Tensor::to_vec) is faster).
    ///
    /// ```
    /// use dlbridge::{Scalar, Tensor};
    /// let t = Tensor::from_vec(vec![true, false], &[2])?;
    /// assert_eq!(t.to_scalars()?, vec![Scalar::Bool(true), Scalar::Bool(false)]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn to_scalars(&self) -> Result<Vec<Scalar>> {
        if self.dtype == DType::F4E2M1FNX2 {
            bail!(
                NotImplemented,
                "a float4_e2m1fn_x2 element holds two values and has no single one (as in PyTorch)"
            );
        }
        let t = self.to_device(Device::CPU)?.contiguous()?;
        let t = cpu::materialize(&t)?;
        // Reserved fallibly: a failed allocation in `collect` aborts the process.
        let mut out = Vec::new();
        out.try_reserve_exact(t.numel()).map_err(|_| {
            crate::err!(
                OutOfMemory,
                "out of memory: cannot hold the {} values of a tensor of shape {:?}",
                t.numel(),
                t.shape()
            )
        })?;
        crate::with_element!(t.dtype, T => {
            let ptr = t.data_ptr().cast::<T>();
            // SAFETY: t is contiguous, aligned and holds numel elements of T.
            out.extend((0..t.numel()).map(|i| <T as crate::Element>::to_scalar(unsafe { ptr.add(i).read() })));
        });
        Ok(out)
    }

    /// A new floating tensor of uniform values in [0, 1) (`rand`), from the
    /// generator [`manual_seed`](crate::manual_seed) seeds.
    ///
    /// ```
    /// use dlbridge::{DType, Device, Tensor};
    /// dlbridge::manual_seed(0);
    /// let t = Tensor::rand(&[100], DType::F32, Device::CPU)?;
    /// assert!(t.to_vec::<f32>()?.iter().all(|&x| (0.0..1.0).contains(&x)));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn rand(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        if !(dtype.is_floating_point() || dtype.is_complex()) || dtype.is_storage_only() {
            bail!(
                NotImplemented,
                "\"check_uniform_bounds\" not implemented for '{}'",
                dtype.scalar_type_name()
            );
        }
        let t = Tensor::empty(shape, dtype, device)?;
        backend::of(t.device()).random(&t)?;
        Ok(t)
    }
}
