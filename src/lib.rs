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
