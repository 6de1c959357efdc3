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
//!   -> mod.rs                 the module
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
mod pickle;
mod sharing;
mod tensor;

use pyo3::prelude::*;

#[pymodule]
pub fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tensor::PyTensor>()?;
    fastcall::install_method::<dlpack_export::DlpackMethod>(
        &m.py().get_type::<tensor::PyTensor>(),
        c"__dlpack__",
    )?;
    m.add_class::<dtype::PyDType>()?;
    m.add_class::<device::PyDevice>()?;
    dtype::add_dtypes(m)?;
    creation::register(m)?;
    asarray::register(m)?;
    numpy::register(m)?;
    pickle::register(m)?;
    dlpack_import::register(m)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(live_storages, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_current_device, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_exception_type, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    cuda::register(m)?;
    sharing::register(m)?;
    m.add_function(wrap_pyfunction!(exchange_api::exchange_api_counts, m)?)?;
    m.add_function(wrap_pyfunction!(arith::_generated_ops, m)?)?;
    Ok(())
}

/// Seeds the generator behind `rand` (like `torch.manual_seed`).
#[pyfunction]
fn manual_seed(seed: u64) {
    crate::manual_seed(seed);
}

/// How many dlbridge storages are alive (for leak tests).
#[pyfunction]
fn live_storages() -> isize {
    crate::storage::live_storages()
}

/// `dlbridge.cuda.current_device()`.
#[pyfunction]
fn cuda_current_device() -> PyResult<u32> {
    cuda::current_device()
}

/// pyo3's `PanicException` type as this module raises it (a `BaseException`
/// subclass); `dlbridge/__init__.py` rebases it onto `RuntimeError` so a
/// panic in any method reaches Python as a catchable `RuntimeError`.
#[pyfunction]
fn _panic_exception_type(py: Python<'_>) -> Bound<'_, pyo3::types::PyType> {
    use pyo3::PyTypeInfo;
    pyo3::panic::PanicException::type_object(py)
}

/// Panics on purpose, so the tests can check what Python sees.
#[pyfunction]
fn _panic_for_tests() {
    panic!("dlbridge test panic");
}
