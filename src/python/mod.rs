//! The `dlbridge._core` extension module: PyTorch's tensor API over the core.
//!
//! Layer: the top; it declares the files of `python/` and registers what
//! they define. Each file depends only on files of earlier lines in this
//! order, never on one of its own line (`tests/python/test_layering.py`
//! fails on a cycle):
//!
//! ```text
//! errors, capsule, dtype,     leaves: exceptions, raw PyCapsule calls, dtype objects,
//! fastcall                    hand-made fast entry points (__dlpack__, from_dlpack)
//!   -> device                 device objects and arguments
//!   -> tensor                 PyTensor: the pyclass, constructors, requires_grad
//!   -> numpy                  the NumPy bridge (from_numpy, numpy(), __array__)
//!   -> pickle                 __reduce_ex__, its reconstructor, copy and deepcopy
//!   -> args                   argument parsing: sizes, dims, numbers, operands, to()
//!   -> nested, exchange_api   nested Python data; dlbridge's C exchange API table
//!   -> dlpack_export,         the DLPack producer (__dlpack__, __dlpack_device__)
//!      dlpack_import          the DLPack consumer (from_dlpack)
//!   -> creation               factories and tensor_from_data
//!   -> convert, arith,        to()/cpu()/item()/..., operators and in-place writes,
//!      index, asarray, cuda,  t[key], as_tensor/asarray, dlbridge.cuda and __cuda_array_interface__,
//!      sharing                share_memory_() and multiprocessing handles
//!   -> methods                the #[pymethods] block of Tensor
//!   -> package                the extension module: registers everything
//!   -> mod.rs                 the public types
//! ```

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
mod index;
mod methods;
mod nested;
mod numpy;
#[doc(hidden)] // the Python package's module, for python/'s extension crate and fuzz/
pub mod package;
mod pickle;
mod sharing;
mod tensor;
