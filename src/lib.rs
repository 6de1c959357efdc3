//! dlbridge: tensors that are DLPack managed tensors, exchanged zero-copy
//! between NumPy, PyTorch, JAX, CuPy and C.
//!
//! The core (`Tensor` = shared [`storage::Storage`] + [`Layout`] + [`DType`])
//! knows nothing of Python; `python/` binds it, `dlpack/` moves it across
//! the DLPack ABI, and `cpu/` computes on host memory.

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
