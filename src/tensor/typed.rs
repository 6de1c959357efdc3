//! Rust values in and out of tensors: safe constructors from `Vec`, slices
//! and `ndarray` arrays, and typed access to host memory.
//!
//! # The rule that keeps typed access sound
//!
//! dlbridge's tensors share memory: a clone or a view of a tensor, a DLPack
//! export and a Python tensor all reach the same bytes, and the write ops
//! (`fill_`, `add_`, `copy_`) take `&self`, as PyTorch's do. A Rust
//! reference into that memory must not see a write it does not know of,
//! so every typed accessor ([`Tensor::as_slice`], [`Tensor::as_slice_mut`],
//! [`Tensor::as_array`], [`Tensor::as_array_mut`]):
//!
//! - takes `&mut self`, so the handle it borrows cannot be cloned, viewed
//!   or written while the reference lives; and
//! - checks that this handle is the only one to its storage (as
//!   [`Arc::get_mut`] does): no other tensor, view, export or Python object
//!   shares it. Otherwise it fails with [`ErrorKind::NotUnique`].
//!
//! Memory that came from outside (a DLPack producer, a NumPy array) may
//! still be reachable by its producer; [`Tensor::from_raw_versioned`]'s
//! safety contract says what the producer must not do meanwhile.
//! [`Tensor::to_vec`] copies and needs none of this.
//!
//! [`ErrorKind::NotUnique`]: crate::ErrorKind::NotUnique

use crate::element::Plain;
use crate::layout::{Layout, checked_numel};
use crate::storage::{Owner, Storage};
use crate::{Device, Result, Tensor, bail, err};
use ndarray::{ArrayBase, ArrayViewD, ArrayViewMutD, Dimension};
use std::sync::Arc;

/// Fails unless `shape` holds exactly `len` elements.
fn check_len(shape: &[usize], len: usize) -> Result<()> {
    if checked_numel(shape)? != len {
        bail!(
            InvalidValue,
            "shape {shape:?} is invalid for input of size {len}"
        );
    }
    Ok(())
}

/// Fails unless every byte is a valid `T` (only `bool` has invalid bytes).
fn check_bits<T: Plain>(bytes: impl IntoIterator<Item = u8>) -> Result<()> {
    if !T::EVERY_BIT_PATTERN && bytes.into_iter().any(|b| b > 1) {
        bail!(
            InvalidTensor,
            "this bool tensor holds a byte other than 0 or 1, which is no Rust bool"
        );
    }
    Ok(())
}

impl Tensor {
    /// A host tensor that owns `data` (row-major, `shape`), without a copy:
    /// the vector's buffer becomes the tensor's memory and is freed when the
    /// last tensor, view or export of it goes.
    ///
    /// ```
    /// use dlbridge::{DType, Tensor};
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// assert_eq!((t.shape(), t.dtype()), (&[2, 3][..], DType::F32));
    /// assert!(Tensor::from_vec(vec![1u8, 2, 3], &[2, 2]).is_err()); // 3 values, 4 places
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn from_vec<T: Plain>(mut data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        check_len(shape, data.len())?;
        let (ptr, bytes) = (
            data.as_mut_ptr().cast::<u8>(),
            std::mem::size_of_val(&*data),
        );
        // SAFETY: the vector's buffer holds `bytes` initialised bytes (Plain:
        // no padding), stays put when the Vec moves into the owner, and is
        // freed only when the owner drops with the storage.
        let storage = unsafe {
            Storage::from_raw(
                ptr,
                bytes,
                Device::CPU,
                false,
                Owner::External(Box::new(data)),
            )
        };
        let layout = Layout::contiguous(shape.to_vec(), T::DTYPE.size());
        Tensor::from_parts(Arc::new(storage), layout, T::DTYPE)
    }

    /// A host tensor holding a copy of `data` (row-major, `shape`), in
    /// fresh 64-byte-aligned memory.
    ///
    /// ```
    /// use dlbridge::{Tensor, half::f16};
    /// let halves = [f16::from_f32(0.5), f16::from_f32(-2.0)];
    /// let mut t = Tensor::from_slice(&halves, &[2])?;
    /// assert_eq!(t.as_slice::<f16>()?, &halves);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn from_slice<T: Plain>(data: &[T], shape: &[usize]) -> Result<Tensor> {
        check_len(shape, data.len())?;
        let t = Tensor::empty(shape, T::DTYPE, Device::CPU)?;
        if !data.is_empty() {
            // SAFETY: t is fresh contiguous host memory of exactly these
            // bytes, which cannot overlap `data`; Plain has no padding bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    data.as_ptr().cast::<u8>(),
                    t.data_ptr(),
                    std::mem::size_of_val(data),
                )
            };
        }
        Ok(t)
    }

    /// A host tensor from an `ndarray` array of any dimension. An owned
    /// array (`Array`, `ArrayD`, a uniquely held `ArcArray`) gives its
    /// buffer to the tensor without a copy, whatever its strides (a
    /// transposed or reversed array stays so); a view is copied.
    ///
    /// ```
    /// use dlbridge::{Tensor, ndarray::array};
    /// let a = array![[1i64, 2, 3], [4, 5, 6]];
    /// let first = a.as_ptr();
    /// let mut t = Tensor::from_array(a.reversed_axes())?;
    /// assert_eq!(t.shape(), &[3, 2]);
    /// assert_eq!(t.data_ptr().cast_const(), first.cast()); // no copy
    /// assert_eq!(t.as_array::<i64>()?[[2, 1]], 6);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn from_array<T, S, D>(array: ArrayBase<S, D>) -> Result<Tensor>
    where
        T: Plain,
        S: ndarray::Data<Elem = T>,
        D: Dimension,
    {
        let array = array.into_owned();
        let size = T::DTYPE.size();
        let shape = array.shape().to_vec();
        let strides = array.strides().iter().map(|&s| s * size as isize).collect();
        let (data, first) = array.into_raw_vec_and_offset();
        let layout = Layout {
            shape,
            strides,
            offset: first.unwrap_or(0) * size,
        };
        let n = data.len();
        Tensor::from_vec(data, &[n])?.reshaped_as(layout)
    }

    /// The same storage under another layout, checked to stay inside it.
    fn reshaped_as(self, layout: Layout) -> Result<Tensor> {
        Tensor::from_parts(self.storage, layout, self.dtype)
    }

    /// Every element, row-major, copied into a `Vec` (from any device, any
    /// layout). No uniqueness is needed: it is a copy.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1i32, 2, 3, 4], &[2, 2])?;
    /// assert_eq!(t.t()?.to_vec::<i32>()?, vec![1, 3, 2, 4]);
    /// assert!(t.to_vec::<f32>().is_err()); // the dtype is int32
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn to_vec<T: Plain>(&self) -> Result<Vec<T>> {
        self.check_dtype::<T>()?;
        let t = self.to_device(Device::CPU)?.contiguous()?;
        let n = t.numel();
        let mut out: Vec<T> = Vec::new();
        out.try_reserve_exact(n).map_err(|_| {
            err!(
                OutOfMemory,
                "out of memory: cannot copy the {n} elements of a tensor"
            )
        })?;
        if n > 0 {
            // SAFETY: t is contiguous host memory of n elements, alive while
            // t is; nothing writes it during this read (t is a private copy
            // or only read here by this thread's call).
            let bytes = unsafe { std::slice::from_raw_parts(t.data_ptr(), n * size_of::<T>()) };
            check_bits::<T>(bytes.iter().copied())?;
            // SAFETY: `out` has room for n elements; the bytes are valid T
            // (checked above; Plain), copied bytewise so alignment is moot.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    out.as_mut_ptr().cast::<u8>(),
                    bytes.len(),
                );
                out.set_len(n);
            }
        }
        Ok(out)
    }

    /// The elements as a slice: the tensor must be of `T`'s dtype, in host
    /// memory, contiguous, and the only handle to its storage (see the
    /// [module docs](self#the-rule-that-keeps-typed-access-sound)).
    ///
    /// ```
    /// use dlbridge::{ErrorKind, Tensor};
    /// let mut t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?;
    /// assert_eq!(t.as_slice::<f64>()?, &[1.0, 2.0, 3.0]);
    /// assert_eq!(t.as_slice::<f32>().unwrap_err().kind(), ErrorKind::DTypeMismatch);
    /// let view = t.clone();
    /// assert_eq!(t.as_slice::<f64>().unwrap_err().kind(), ErrorKind::NotUnique);
    /// drop(view);
    /// assert!(t.as_slice::<f64>().is_ok());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn as_slice<T: Plain>(&mut self) -> Result<&[T]> {
        self.check_typed_access::<T>(false)?;
        self.check_contiguous::<T>()?;
        let n = self.numel();
        if n == 0 {
            return Ok(&[]);
        }
        let ptr = self.data_ptr().cast::<T>().cast_const();
        // SAFETY: contiguous and aligned (checked) host memory of n elements
        // of T's dtype, alive while the storage is; the handle is unique and
        // mutably borrowed for the slice's lifetime, so nothing in Rust
        // writes it meanwhile (foreign holders: the import's contract).
        let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), n * size_of::<T>()) };
        check_bits::<T>(bytes.iter().copied())?;
        // SAFETY: as above, and every element is a valid T (checked).
        Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
    }

    /// The elements as a mutable slice: as [`as_slice`](Self::as_slice),
    /// and the memory must be writable (not READ_ONLY).
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let mut t = Tensor::from_vec(vec![1u8, 2, 3, 4], &[2, 2])?;
    /// t.as_slice_mut::<u8>()?[3] = 40;
    /// assert_eq!(t.to_vec::<u8>()?, vec![1, 2, 3, 40]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn as_slice_mut<T: Plain>(&mut self) -> Result<&mut [T]> {
        self.check_typed_access::<T>(true)?;
        self.check_contiguous::<T>()?;
        let n = self.numel();
        if n == 0 {
            return Ok(&mut []);
        }
        let ptr = self.data_ptr().cast::<T>();
        // SAFETY: as in as_slice; the memory is writable (checked), and the
        // unique handle is mutably borrowed, so this is the only reference.
        let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), n * size_of::<T>()) };
        check_bits::<T>(bytes.iter().copied())?;
        // SAFETY: as above, and every element is a valid T (checked).
        Ok(unsafe { std::slice::from_raw_parts_mut(ptr, n) })
    }

    /// An `ndarray` view of the elements, with the tensor's strides (any,
    /// negative included): of `T`'s dtype, in host memory, the only handle
    /// to its storage. Fails with `InvalidOperation` for the layouts
    /// ndarray cannot express (misaligned memory, strides that are not
    /// whole elements).
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec((0..6).map(|i| i as f32).collect(), &[2, 3])?;
    /// let mut flipped = t.t()?; // a view: drop `t` so that it is the only handle
    /// drop(t);
    /// let a = flipped.as_array::<f32>()?;
    /// assert_eq!(a.shape(), &[3, 2]);
    /// assert_eq!(a[[2, 0]], 2.0);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn as_array<T: Plain>(&mut self) -> Result<ArrayViewD<'_, T>> {
        self.check_typed_access::<T>(false)?;
        if !T::EVERY_BIT_PATTERN {
            // SAFETY: the checks above; bytes are valid u8 whatever they hold.
            let bytes = unsafe { crate::cpu::view::<u8>(self) }.ok_or_else(|| self.unviewable())?;
            check_bits::<T>(bytes.iter().copied())?;
        }
        // SAFETY: host memory of T's dtype, every element valid (Plain, or
        // checked above); the unique handle is mutably borrowed while the
        // view lives, so nothing in Rust writes it.
        unsafe { crate::cpu::view::<T>(self) }.ok_or_else(|| self.unviewable())
    }

    /// A mutable `ndarray` view: as [`as_array`](Self::as_array), and the
    /// memory must be writable, with no two elements at one address (an
    /// `expand`ed tensor).
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let mut t = Tensor::zeros(&[2, 2], dlbridge::DType::I16, dlbridge::Device::CPU)?;
    /// t.as_array_mut::<i16>()?.diag_mut().fill(7);
    /// assert_eq!(t.to_vec::<i16>()?, vec![7, 0, 0, 7]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn as_array_mut<T: Plain>(&mut self) -> Result<ArrayViewMutD<'_, T>> {
        self.check_typed_access::<T>(true)?;
        self.ensure_writable()?;
        if !T::EVERY_BIT_PATTERN {
            // SAFETY: as in as_array.
            let bytes = unsafe { crate::cpu::view::<u8>(self) }.ok_or_else(|| self.unviewable())?;
            check_bits::<T>(bytes.iter().copied())?;
        }
        // SAFETY: as in as_array, writable, no element aliases another
        // (ensure_writable refuses stride 0), and the unique handle is
        // mutably borrowed: this is the only reference to the elements.
        unsafe { crate::cpu::view_mut::<T>(self) }.ok_or_else(|| self.unviewable())
    }

    fn check_dtype<T: Plain>(&self) -> Result<()> {
        if T::DTYPE != self.dtype() {
            bail!(
                DTypeMismatch,
                "expected a tensor of dtype {} (the Rust type {}), but it is {}",
                T::DTYPE,
                std::any::type_name::<T>(),
                self.dtype()
            );
        }
        Ok(())
    }

    /// What every typed accessor checks: dtype, host memory, one handle,
    /// and (for `write`) writable memory.
    fn check_typed_access<T: Plain>(&mut self, write: bool) -> Result<()> {
        self.check_dtype::<T>()?;
        let device = self.device();
        if !device.is_cpu() {
            bail!(
                WrongDevice,
                "typed access needs host memory, and this tensor is on {device}: copy it with \
                 .to_device(Device::CPU) first"
            );
        }
        if Arc::get_mut(&mut self.storage).is_none() {
            bail!(
                NotUnique,
                "another tensor, view, export or Python object shares this tensor's memory, so a Rust \
                 reference into it could alias that one's writes: drop the others, or copy (to_vec, \
                 clone_data)"
            );
        }
        if write && self.is_read_only() {
            bail!(
                ReadOnly,
                "cannot write into a read-only tensor (a DLPack tensor flagged READ_ONLY, a \
                 non-writeable NumPy array); clone_data() it first"
            );
        }
        Ok(())
    }

    fn check_contiguous<T: Plain>(&self) -> Result<()> {
        if !self.is_contiguous() {
            bail!(
                NotContiguous,
                "a slice needs a contiguous tensor, and this one has shape {:?} and byte strides {:?}: \
                 use as_array (any strides), or contiguous()",
                self.shape(),
                self.layout().strides
            );
        }
        if self.numel() > 0 && !(self.data_ptr() as usize).is_multiple_of(align_of::<T>()) {
            return Err(self.unviewable());
        }
        Ok(())
    }

    fn unviewable(&self) -> crate::Error {
        err!(
            InvalidOperation,
            "this tensor's memory cannot be viewed as Rust values: its first element is misaligned or \
             its byte strides {:?} are not whole {}-byte elements; clone_data() it first",
            self.layout().strides,
            self.dtype().size()
        )
    }
}
