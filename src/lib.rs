#![warn(missing_docs)]
//! dlbridge: tensors that are DLPack managed tensors, exchanged zero-copy
//! between Rust, C, NumPy, PyTorch, JAX and CuPy.
//!
//! A [`Tensor`] is shared memory ([`storage::Storage`]) seen through a
//! strided [`Layout`] as elements of a [`DType`], on a [`Device`] (the host,
//! or a CUDA device). It computes with PyTorch's semantics (type promotion,
//! broadcasting, in-place rules, the same errors), and it crosses the DLPack
//! ABI both ways without copying.
//!
//! # For Rust programs
//!
//! Make tensors from Rust values (zero-copy from a `Vec` or an owned
//! `ndarray` array), compute, and read the result back as a slice, an
//! `ndarray` view or a `Vec`:
//!
//! ```
//! use dlbridge::{DType, Tensor};
//!
//! let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
//! let y = x.mul(2.0)?.add(&x.exp()?)?.sum_dims(&[1], false, None)?;
//! assert_eq!((y.shape(), y.dtype()), (&[2][..], DType::F32));
//!
//! let mut z = x.gt(2.5)?.to_dtype(DType::I64)?;
//! z.as_slice_mut::<i64>()?[0] = 9; // typed, in place
//! assert_eq!(z.as_array::<i64>()?.sum(), 13);
//! # Ok::<(), dlbridge::Error>(())
//! ```
//!
//! Every fallible call returns [`Result`], whose [`Error`] carries a typed
//! [`ErrorKind`]: match on the kind, never on the message.
//!
//! ```
//! use dlbridge::{ErrorKind, Tensor};
//! let a = Tensor::from_vec(vec![1i32, 2, 3], &[3])?;
//! let b = Tensor::from_vec(vec![1i32, 2], &[2])?;
//! assert_eq!(a.add(&b).unwrap_err().kind(), ErrorKind::InvalidOperation); // shapes
//! assert_eq!(a.to_vec::<f32>().unwrap_err().kind(), ErrorKind::DTypeMismatch);
//! # Ok::<(), dlbridge::Error>(())
//! ```
//!
//! ## Element types
//!
//! Each [`DType`] has one Rust type, its [`Element`]: the integers, `f32`,
//! `f64`, `bool`, [`half::f16`], [`half::bf16`], [`num_complex::Complex32`]
//! (`complex64`), [`num_complex::Complex64`] (`complex128`), [`ComplexHalf`]
//! (`complex32`) and one-byte codes for the float8/float6/float4 formats
//! ([`Float8E4M3Fn`], ...). The crates behind them are re-exported
//! ([`half`], [`num_complex`], [`ndarray`]) so a program uses the same versions.
//!
//! ## Typed access and aliasing
//!
//! Tensors share memory (clones, views, exports, Python objects), and their
//! write ops take `&self`, as PyTorch's do. So [`Tensor::as_slice`],
//! [`Tensor::as_slice_mut`], [`Tensor::as_array`] and
//! [`Tensor::as_array_mut`] take `&mut self` and check that the handle is
//! the only one to its storage, and that no library outside dlbridge holds
//! the memory too (a NumPy array, a tensor imported from Python: see
//! [`Tensor::assume_exclusive`]); [`ErrorKind::NotUnique`] otherwise. Besides,
//! they check its dtype ([`ErrorKind::DTypeMismatch`]), device
//! ([`ErrorKind::WrongDevice`]), contiguity for slices
//! ([`ErrorKind::NotContiguous`]) and writability for the mutable ones
//! ([`ErrorKind::ReadOnly`]). [`Tensor::to_vec`] copies and works on any
//! tensor.
//!
//! **Threads: a known gap.** `Tensor` is `Send` and `Sync`, and the in-place
//! ops (`add_`, `fill_`, `copy_`, ...) write through `&self`, as PyTorch's
//! do. Two threads writing the same memory at once (through clones or
//! views), or one writing while another reads it (`to_vec`, an op), race:
//! in Rust's terms that is undefined behaviour that safe code can reach.
//! dlbridge does not lock storages (PyTorch does not either); until it
//! does, give each thread its own memory to write, or order the writes
//! yourself (a `Mutex` around the tensor, a join). Typed access is not
//! affected: it needs the only handle.
//!
//! ## DLPack in and out
//!
//! [`Tensor::from_raw_versioned`] (and [`Tensor::from_raw_legacy`]) take a
//! producer's managed tensor, validate it and wrap it without copying; the
//! producer's deleter runs exactly once, when the last user of the memory
//! goes (or at once, on an error). [`Tensor::into_raw_versioned`] hands a
//! tensor to a consumer, who calls its deleter once. The ABI types are
//! [`ffi`] (dlpark's bindings, re-exported):
//!
//! ```
//! use dlbridge::{Tensor, ffi::DLDeviceType};
//!
//! let t = Tensor::from_vec(vec![1u8, 2, 3], &[3])?;
//! let managed = t.into_raw_versioned()?; // what a C consumer receives
//! // SAFETY: `managed` is a live export; reading its header is fine.
//! assert_eq!(unsafe { (*managed).dl_tensor.device.device_type }, DLDeviceType::CPU);
//! // A consumer that is Rust again takes it back (deleter: once, later).
//! // SAFETY: we own `managed` and hand it over exactly once.
//! let mut back = unsafe { Tensor::from_raw_versioned(managed) }?;
//! assert_eq!(back.as_slice::<u8>()?, &[1, 2, 3]);
//! # Ok::<(), dlbridge::Error>(())
//! ```
//!
//! `examples/c_producer.rs` does the whole round with a C-style producer
//! whose deleter counts its calls; docs/rust.md compares dlbridge with
//! dlpark and rust-numpy task by task.
//!
//! # For pyo3 extension authors
//!
//! With the feature `pyo3`, `dlbridge::python` gives a `#[pyfunction]`
//! argument types that accept any DLPack producer zero-copy (torch, NumPy,
//! JAX, CuPy, dlbridge: `TensorArg`, and `TensorArgMut`, which refuses
//! read-only inputs), a return type that `torch.from_dlpack` and the others
//! take zero-copy (`TensorOut`), and `From<dlbridge::Error> for PyErr`
//! raising the exception classes of the Python package
//! ([`ErrorKind::python_class`]). See that module's documentation (built
//! with `cargo doc --features pyo3`).
//!
//! # Modules
//!
//! - [`ops`]: PyTorch's semantics as free functions (what the methods call);
//! - [`backend`]: the op tables and the traits every device implements;
//! - [`storage`]: memory and what keeps it alive;
//! - [`dlpack`]: the DLPack export and import beneath the raw-pointer pair;
//! - [`cuda`]: the CUDA backend (or its stand-in without the `cuda` feature);
//! - [`ffi`]: the DLPack ABI types.
//!
//! The crate knows nothing of Python unless the `pyo3` feature is on;
//! `python/` (the extension module) and `capi/` (the C library) are crates
//! of this workspace built on it (see ARCHITECTURE.md).

pub mod backend;
#[cfg(feature = "capi")]
#[allow(non_camel_case_types)]
pub mod capi;
mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(not(feature = "cuda"))]
#[path = "cuda_disabled.rs"]
pub mod cuda;
mod device;
pub mod dlpack;
mod dtype;
mod element;
mod error;
mod foreign;
mod layout;
mod memory_format;
mod minifloat;
pub mod ops;
#[cfg(any(feature = "pyo3", feature = "capi", test))]
// only the foreign-facing layers read C arrays
mod raw;
mod scalar;
pub mod storage;
mod tensor;
mod views;

#[cfg(feature = "pyo3")]
pub mod python;

pub use backend::{Accelerator, BinaryOp, CompareOp, Promotion, UnaryOp};
pub use cpu::manual_seed;
pub use device::{Device, DeviceKind};
pub use dtype::{Category, DType, NumpyType};
pub use element::Element;
pub use error::{Error, ErrorKind, PythonClass, Result};
pub use layout::{Layout, Selection, broadcast_shapes};
pub use scalar::Scalar;
pub use tensor::Tensor;

pub use element::{
    ComplexHalf, Float4E2M1Fn, Float4E2M1FnX2, Float6E2M3Fn, Float6E3M2Fn, Float8E3M4, Float8E4M3,
    Float8E4M3B11Fnuz, Float8E4M3Fn, Float8E4M3Fnuz, Float8E5M2, Float8E5M2Fnuz, Float8E8M0Fnu,
    Plain,
};
/// The crates whose types dlbridge's API takes, re-exported so that a
/// program uses the same versions: `dlbridge::half::f16`,
/// `dlbridge::num_complex::Complex32`, `dlbridge::ndarray::ArrayD`.
pub use {half, ndarray, num_complex};

/// The DLPack ABI (`dlpack.h`) as Rust types: dlpark's bindings, so that a
/// program needs no dependency of its own on `dlpark` to build or read a
/// managed tensor.
///
/// The spellings: device types are associated constants of
/// [`DLDeviceType`](ffi::DLDeviceType) (`DLDeviceType::CPU`, `::CUDA`,
/// `::CUDAHOST`, ...), dtype codes of [`DLDataTypeCode`](ffi::DLDataTypeCode)
/// (`INT`, `UINT`, `FLOAT`, `BFLOAT`, `COMPLEX`, `BOOL`, `FLOAT8_E4M3FN`,
/// ...), and a dtype is `DLDataType { code, bits, lanes: 1 }` (float32:
/// `FLOAT` 32, bool: `BOOL` 8). The flags of a versioned tensor are
/// [`DlpackFlags`](ffi::DlpackFlags) (`READ_ONLY`, `IS_COPIED`,
/// `IS_SUBBYTE_TYPE_PADDED`). [`DType::to_dlpack`] and
/// [`DType::from_dlpack`] convert.
///
/// ```
/// use dlbridge::{DType, ffi::{DLDataTypeCode, DLDeviceType, DlpackFlags}};
/// let dt = DType::BF16.to_dlpack();
/// assert_eq!((dt.code, dt.bits, dt.lanes), (DLDataTypeCode::BFLOAT, 16, 1));
/// assert_eq!(DLDeviceType::CPU.0, 1);
/// assert!(DlpackFlags::READ_ONLY.bits() == 1);
/// ```
pub mod ffi {
    pub use dlpark::DlpackFlags;
    pub use dlpark::ffi::*;
}
