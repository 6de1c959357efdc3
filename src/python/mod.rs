//! The pyo3 layer (feature `pyo3`): Python tensors in and out of your own
//! pyo3 extension module, zero-copy, and the `dlbridge` Python package built
//! on the same code.
//!
//! - [`TensorArg`]: a `#[pyfunction]` argument that takes any DLPack
//!   producer (torch, NumPy, JAX, CuPy, TensorFlow, `dlbridge.Tensor`, ...)
//!   or capsule, with the protocol's negotiation done for you.
//! - [`TensorArgMut`]: the same, refusing read-only memory, for functions
//!   that write in place (the caller sees the edit).
//! - [`TensorOut`]: a return value every framework's `from_dlpack` takes.
//! - `impl From<Error> for PyErr`: `?` on a dlbridge [`Result`](crate::Result)
//!   raises the exception class the Python package raises for it (PyTorch's
//!   for the same mistake).
//!
//! ```no_run
//! use dlbridge::python::{TensorArg, TensorArgMut, TensorOut};
//! use pyo3::prelude::*;
//!
//! #[pyfunction]
//! fn scale(x: TensorArg, k: f64) -> PyResult<TensorOut> {
//!     Ok(x.mul(k)?.into())
//! }
//!
//! #[pyfunction]
//! fn scale_(x: TensorArgMut, k: f64) -> PyResult<()> {
//!     Ok(x.mul_(k)?)
//! }
//!
//! #[pymodule]
//! fn my_ext(m: &Bound<'_, PyModule>) -> PyResult<()> {
//!     m.add_function(wrap_pyfunction!(scale, m)?)?;
//!     m.add_function(wrap_pyfunction!(scale_, m)?)
//! }
//! ```
//!
//! An argument's memory is also its caller's: typed access to it
//! ([`Tensor::as_slice_mut`](crate::Tensor::as_slice_mut) and the like) is
//! refused until the `unsafe` [`Tensor::assume_exclusive`](crate::Tensor::assume_exclusive)
//! promises nothing else touches it meanwhile; the ops above need no such
//! promise.
//!
//! `examples/pyo3-scale/` is that extension as a crate, with its tests; docs/rust.md
//! has the guide.
//!
//! # The files
//!
//! Each file depends only on files of earlier lines in this order, never on
//! one of its own line (`tests/python/test_layering.py` fails on a cycle):
//!
//! ```text
//! errors, capsule, dtype,     leaves: exceptions, raw PyCapsule calls, dtype objects,
//! fastcall                    hand-made fast entry points (__dlpack__, from_dlpack)
//!   -> device                 device objects and arguments
//!   -> tensor                 PyTensor: the pyclass, constructors, requires_grad
//!   -> numpy                  the NumPy bridge (from_numpy, numpy(), __array__)
//!   -> pickle                 __reduce_ex__, its reconstructor, copy and deepcopy
//!   -> args                   argument parsing: sizes, dims, numbers, to()
//!   -> nested, exchange_api   nested Python data; dlbridge's C exchange API table
//!   -> dlpack_export,         the DLPack producer (__dlpack__, __dlpack_device__)
//!      dlpack_import          the DLPack consumer (any producer or capsule)
//!   -> arg                    the one routine for tensor arguments; from_dlpack
//!   -> api, creation          the pyo3 layer's public types; factories and tensor_from_data
//!   -> convert, arith,        to()/cpu()/item()/..., operators and in-place writes,
//!      index, asarray, cuda,  t[key], as_tensor/asarray, dlbridge.cuda and __cuda_array_interface__,
//!      sharing                share_memory_() and multiprocessing handles
//!   -> methods                the #[pymethods] block of Tensor
//!   -> package                the extension module: registers everything
//!   -> mod.rs                 the public types
//! ```

mod api;
mod arg;
mod args;
mod arith;
mod asarray;
mod capsule;
mod convert;
mod creation;
mod cuda;
mod device;
mod dlpack_export;
mod dlpack_import;
mod dtype;
mod errors;
mod exchange_api;
mod fastcall;
mod generated;
mod index;
mod methods;
mod named;
mod nested;
mod numpy;
#[doc(hidden)] // the Python package's module, for python/'s extension crate and fuzz/
pub mod package;
mod pickle;
mod sharing;
mod tensor;

pub use api::{TensorArg, TensorArgMut, TensorOut};
