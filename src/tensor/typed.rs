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
//!   shares it; and that the storage is exclusive
//!   ([`Storage::is_exclusive`]): memory dlbridge allocated, a `Vec` given
//!   to it, or a DLPack import through [`Tensor::from_raw_versioned`], whose
//!   safety contract says what the producer must not do meanwhile. Memory a
//!   library outside also holds (a NumPy array, a tensor imported from
//!   Python, C memory, shared memory) is not, until
//!   [`Tensor::assume_exclusive`] declares it so. Otherwise typed access
//!   fails with [`ErrorKind::NotUnique`].
//!
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
        let mut storage = unsafe {
            Storage::from_raw(
                ptr,
                bytes,
                Device::CPU,
                false,
                Owner::External(Box::new(data)),
            )
        };
        // SAFETY: the Vec moved into the storage: nothing else reaches it.
        unsafe { storage.assume_exclusive() };
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
    /// [crate docs](crate#typed-access-and-aliasing)).
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

    /// Declares that nothing outside this tensor reaches its memory, which
    /// typed access needs: for memory another library also holds (a NumPy
    /// array or a tensor imported from Python, C memory), which dlbridge
    /// cannot know to be unaliased. Fails with `NotUnique` unless this is
    /// the only handle to its storage.
    ///
    /// # Safety
    /// While this tensor lives, nothing outside it (the library that holds
    /// the memory, another import of the same memory, another process)
    /// writes the memory while a Rust reference from typed access is alive,
    /// nor reads it while a mutable one is. This is the promise rust-numpy's
    /// `unsafe` `PyArray::as_slice_mut` asks for.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let mut t = Tensor::from_vec(vec![1u8, 2], &[2])?;
    /// // SAFETY: a Vec given to dlbridge: nothing else reaches it (already known).
    /// unsafe { t.assume_exclusive() }?;
    /// assert!(t.storage().is_exclusive());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub unsafe fn assume_exclusive(&mut self) -> Result<()> {
        let storage = Arc::get_mut(&mut self.storage).ok_or_else(|| {
            err!(
                NotUnique,
                "another tensor, view, export or Python object shares this tensor's memory"
            )
        })?;
        // SAFETY: the caller's promise, for the storage this handle alone holds.
        unsafe { storage.assume_exclusive() };
        Ok(())
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
        if !self.storage.is_exclusive() {
            bail!(
                NotUnique,
                "this tensor's memory is also held outside dlbridge (a NumPy array, a tensor imported \
                 from Python or C, shared memory), so a Rust reference into it could alias that \
                 holder's writes: copy it (to_vec, clone_data), or see Tensor::assume_exclusive"
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Element, ErrorKind, Scalar};
    use ndarray::{ArcArray, Array, Array2, Axis, array};

    fn kind<T>(r: Result<T>) -> ErrorKind {
        r.err().expect("an error").kind()
    }

    /// A tensor of `dtype` over `bytes` (host memory unless `device` says
    /// otherwise, which no byte is read from), kept by an External owner.
    /// A tensor of `dtype` over `bytes` (host memory unless `device` says
    /// otherwise, which no byte is read from), kept by an External owner,
    /// as C memory comes in (not exclusive until declared so).
    fn foreign(bytes: Vec<u8>, dtype: DType, layout: Layout, device: Device, ro: bool) -> Tensor {
        let mut bytes = bytes;
        let (ptr, len) = (bytes.as_mut_ptr(), bytes.len());
        // SAFETY: the Vec's buffer lives in the owner as long as the storage.
        let s =
            unsafe { Storage::from_raw(ptr, len, device, ro, Owner::External(Box::new(bytes))) };
        Tensor::from_parts(Arc::new(s), layout, dtype).unwrap()
    }

    /// As [`foreign`], declared exclusive (the test holds nothing else).
    fn over(bytes: Vec<u8>, dtype: DType, layout: Layout, device: Device, ro: bool) -> Tensor {
        let mut t = foreign(bytes, dtype, layout, device, ro);
        // SAFETY: the test keeps no other way to the bytes.
        unsafe { t.assume_exclusive() }.unwrap();
        t
    }

    #[test]
    fn memory_held_outside_needs_a_declaration() {
        let mut t = foreign(
            vec![1, 2],
            DType::U8,
            Layout::contiguous(vec![2], 1),
            Device::CPU,
            false,
        );
        assert!(!t.storage().is_exclusive());
        assert_eq!(kind(t.as_slice::<u8>()), ErrorKind::NotUnique);
        assert_eq!(kind(t.as_array_mut::<u8>()), ErrorKind::NotUnique);
        assert_eq!(t.to_vec::<u8>().unwrap(), [1, 2]);
        let other = t.clone();
        // SAFETY: refused before anything is declared (two handles).
        assert_eq!(kind(unsafe { t.assume_exclusive() }), ErrorKind::NotUnique);
        drop(other);
        // SAFETY: the test keeps no other way to the bytes.
        unsafe { t.assume_exclusive() }.unwrap();
        assert_eq!(t.as_slice::<u8>().unwrap(), &[1, 2]);
        // Fresh allocations and results of ops are exclusive.
        let mut z = Tensor::zeros(&[2], DType::U8, Device::CPU)
            .unwrap()
            .add(1)
            .unwrap();
        assert_eq!(z.as_slice::<u8>().unwrap(), &[1, 1]);
    }

    #[cfg(not(miri))] // Miri has no memfd_create or shared mappings
    #[test]
    fn shared_memory_is_not_exclusive() {
        let mut t = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
        t.storage().share_memory().unwrap();
        assert_eq!(kind(t.as_slice::<i32>()), ErrorKind::NotUnique);
        assert_eq!(t.to_vec::<i32>().unwrap(), [1, 2]);
    }

    #[test]
    fn every_dtype_round_trips_through_vec_slice_and_array() {
        for dt in DType::ALL {
            crate::with_element!(dt, T => {
                let values: Vec<T> = (0..6).map(|i| T::from_scalar(Scalar::Int(i % 2))).collect();
                let given = values.clone();
                let ptr = given.as_ptr();
                let mut t = Tensor::from_vec(given, &[2, 3]).unwrap();
                assert_eq!((t.dtype(), t.shape()), (dt, &[2, 3][..]));
                assert_eq!(t.data_ptr().cast_const(), ptr.cast(), "{dt}: from_vec copies nothing");
                let bits = |v: &[T]| v.iter().map(|x| x.to_scalar()).map(|s| s.as_f64()).collect::<Vec<_>>();
                assert_eq!(bits(t.as_slice::<T>().unwrap()), bits(&values), "{dt}");
                assert_eq!(bits(&t.to_vec::<T>().unwrap()), bits(&values), "{dt}");
                let mut copy = Tensor::from_slice(&values, &[3, 2]).unwrap();
                assert_ne!(copy.data_ptr().cast_const(), ptr.cast());
                assert_eq!(bits(copy.as_array::<T>().unwrap().as_slice().unwrap()), bits(&values));
                let a = Array::from_shape_vec((3, 2), values.clone()).unwrap();
                let mut t = Tensor::from_array(a).unwrap();
                t.as_array_mut::<T>().unwrap()[[0, 0]] = T::from_scalar(Scalar::Int(1));
                assert_eq!(t.to_vec::<T>().unwrap()[0].to_scalar().as_f64(), 1.0, "{dt}");
            });
        }
    }

    #[test]
    fn from_array_keeps_owned_memory_and_any_strides() {
        let a: Array2<f64> = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let first = a.as_ptr();
        // Reversed rows: a negative stride and an offset into the buffer.
        let mut flipped = a;
        flipped.invert_axis(Axis(0));
        let mut t = Tensor::from_array(flipped).unwrap();
        assert_eq!(t.storage().as_ptr().cast_const(), first.cast(), "no copy");
        assert_eq!(t.layout().strides, vec![-24, 8]);
        assert_eq!(t.as_array::<f64>().unwrap()[[0, 0]], 4.0);
        assert_eq!(kind(t.as_slice::<f64>()), ErrorKind::NotContiguous);
        assert_eq!(t.to_vec::<f64>().unwrap(), [4.0, 5.0, 6.0, 1.0, 2.0, 3.0]);
        let mut reshaped = t.contiguous().unwrap();
        drop(t);
        assert_eq!(reshaped.as_slice::<f64>().unwrap()[3], 1.0);
        // A view is copied; a unique ArcArray is not.
        let owned: Array2<i32> = array![[1, 2], [3, 4]];
        let from_view = Tensor::from_array(owned.view()).unwrap();
        assert_ne!(from_view.data_ptr().cast_const(), owned.as_ptr().cast());
        let arc: ArcArray<i32, _> = owned.into_shared();
        let ptr = arc.as_ptr();
        assert_eq!(
            Tensor::from_array(arc).unwrap().data_ptr().cast_const(),
            ptr.cast()
        );
        // Empty and zero-dim arrays.
        let empty = Tensor::from_array(Array2::<u8>::zeros((0, 3))).unwrap();
        assert_eq!((empty.shape(), empty.numel()), (&[0, 3][..], 0));
        let mut scalar = Tensor::from_array(ndarray::arr0(5i64)).unwrap();
        assert_eq!(scalar.as_slice::<i64>().unwrap(), &[5]);
    }

    #[test]
    fn constructors_refuse_a_wrong_length() {
        assert_eq!(
            kind(Tensor::from_vec(vec![1u8; 5], &[2, 3])),
            ErrorKind::InvalidValue
        );
        assert_eq!(
            kind(Tensor::from_slice(&[1u8; 7], &[2, 3])),
            ErrorKind::InvalidValue
        );
        assert_eq!(
            kind(Tensor::from_vec(vec![0u8; 0], &[usize::MAX, 2])),
            ErrorKind::TooLarge
        );
        let mut empty = Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap();
        assert!(empty.as_slice::<f32>().unwrap().is_empty());
        assert!(empty.as_slice_mut::<f32>().unwrap().is_empty());
    }

    #[test]
    fn typed_access_refuses_with_a_typed_error() {
        let contiguous = |n: usize, size| Layout::contiguous(vec![n], size);
        // dtype
        let mut t = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
        assert_eq!(kind(t.as_slice::<u32>()), ErrorKind::DTypeMismatch);
        assert_eq!(kind(t.as_slice_mut::<f32>()), ErrorKind::DTypeMismatch);
        assert_eq!(kind(t.as_array::<i64>()), ErrorKind::DTypeMismatch);
        assert_eq!(kind(t.as_array_mut::<i16>()), ErrorKind::DTypeMismatch);
        assert_eq!(kind(t.to_vec::<i64>()), ErrorKind::DTypeMismatch);
        // uniqueness: a clone, a view, an export each share the storage
        let other = t.clone();
        assert_eq!(kind(t.as_slice::<i32>()), ErrorKind::NotUnique);
        assert_eq!(kind(t.as_slice_mut::<i32>()), ErrorKind::NotUnique);
        assert_eq!(kind(t.as_array::<i32>()), ErrorKind::NotUnique);
        assert_eq!(kind(t.as_array_mut::<i32>()), ErrorKind::NotUnique);
        assert_eq!(
            t.to_vec::<i32>().unwrap(),
            [1, 2],
            "a copy needs no uniqueness"
        );
        drop(other);
        let export = crate::dlpack::export_versioned(&t, Default::default()).unwrap();
        assert_eq!(kind(t.as_slice::<i32>()), ErrorKind::NotUnique);
        // SAFETY: the consumer's single deleter call.
        unsafe { ((*export).deleter.unwrap())(export) };
        t.as_slice_mut::<i32>().unwrap()[1] = 5;
        assert_eq!(t.as_slice::<i32>().unwrap(), &[1, 5]);
        // device: no byte of a CUDA tensor is read
        let mut gpu = over(
            vec![0; 8],
            DType::F32,
            contiguous(2, 4),
            Device::cuda(Some(0)),
            false,
        );
        assert_eq!(kind(gpu.as_slice::<f32>()), ErrorKind::WrongDevice);
        assert_eq!(kind(gpu.as_array_mut::<f32>()), ErrorKind::WrongDevice);
        // read-only
        let mut ro = over(vec![1, 0], DType::U8, contiguous(2, 1), Device::CPU, true);
        assert_eq!(ro.as_slice::<u8>().unwrap(), &[1, 0]);
        assert_eq!(kind(ro.as_slice_mut::<u8>()), ErrorKind::ReadOnly);
        assert_eq!(kind(ro.as_array_mut::<u8>()), ErrorKind::ReadOnly);
        // contiguity (slices only), and stride 0 (mutable views only)
        let t = Tensor::from_vec((0..6i64).collect(), &[2, 3]).unwrap();
        let mut tr = t.t().unwrap();
        drop(t);
        assert_eq!(kind(tr.as_slice::<i64>()), ErrorKind::NotContiguous);
        assert_eq!(kind(tr.as_slice_mut::<i64>()), ErrorKind::NotContiguous);
        assert_eq!(tr.as_array::<i64>().unwrap()[[2, 1]], 5);
        tr.as_array_mut::<i64>().unwrap()[[2, 1]] = 50;
        assert_eq!(tr.to_vec::<i64>().unwrap(), [0, 3, 1, 4, 2, 50]);
        let one = Tensor::from_vec(vec![7u8], &[1]).unwrap();
        let mut wide = one.expand(&[3]).unwrap();
        drop(one);
        assert_eq!(
            wide.as_array::<u8>()
                .unwrap()
                .iter()
                .copied()
                .collect::<Vec<_>>(),
            [7, 7, 7]
        );
        assert_eq!(kind(wide.as_array_mut::<u8>()), ErrorKind::InvalidOperation);
        // misaligned memory and partial-element strides (the offset is
        // picked from the buffer's address: Miri places a byte buffer at
        // any address, so a fixed offset of 1 can land on an aligned one)
        let bytes = vec![0u8; 12];
        let offset = if (bytes.as_ptr() as usize + 1).is_multiple_of(4) {
            2
        } else {
            1
        };
        let mut odd = over(
            bytes,
            DType::I32,
            Layout {
                shape: vec![2],
                strides: vec![4],
                offset,
            },
            Device::CPU,
            false,
        );
        assert_eq!(kind(odd.as_slice::<i32>()), ErrorKind::InvalidOperation);
        assert_eq!(kind(odd.as_array::<i32>()), ErrorKind::InvalidOperation);
        assert_eq!(
            odd.to_vec::<i32>().unwrap(),
            [0, 0],
            "a copy reads any layout"
        );
        let mut partial = over(
            vec![0; 8],
            DType::I16,
            Layout {
                shape: vec![2],
                strides: vec![3],
                offset: 0,
            },
            Device::CPU,
            false,
        );
        assert_eq!(kind(partial.as_array::<i16>()), ErrorKind::InvalidOperation);
    }

    #[test]
    fn bools_are_checked_before_a_reference_is_made() {
        let mut ok = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
        assert_eq!(ok.as_slice::<bool>().unwrap(), &[true, false, true]);
        ok.as_array_mut::<bool>().unwrap()[[1]] = true;
        assert_eq!(ok.to_vec::<bool>().unwrap(), [true; 3]);
        let mut bad = over(
            vec![1, 2],
            DType::Bool,
            Layout::contiguous(vec![2], 1),
            Device::CPU,
            false,
        );
        assert_eq!(kind(bad.as_slice::<bool>()), ErrorKind::InvalidTensor);
        assert_eq!(kind(bad.as_slice_mut::<bool>()), ErrorKind::InvalidTensor);
        assert_eq!(kind(bad.as_array::<bool>()), ErrorKind::InvalidTensor);
        assert_eq!(kind(bad.as_array_mut::<bool>()), ErrorKind::InvalidTensor);
        assert_eq!(kind(bad.to_vec::<bool>()), ErrorKind::InvalidTensor);
        // Its bytes still read as uint8.
        let mut bytes = bad.view_dtype(DType::U8).unwrap();
        drop(bad);
        assert_eq!(bytes.as_slice::<u8>().unwrap(), &[1, 2]);
    }
}
