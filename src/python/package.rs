//! The Python package's extension module (`dlbridge._core`): registers
//! every class and function. python/'s extension crate calls [`init`] from
//! its `#[pymodule]`; this is the top of the layer (see `mod.rs`).

use pyo3::prelude::*;

/// Registers the package's classes and functions on `m` (the `_core`
/// module of python/'s extension crate, or an embedding such as fuzz/).
pub fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<super::tensor::PyTensor>()?;
    super::fastcall::install_method::<super::dlpack_export::DlpackMethod>(
        &m.py().get_type::<super::tensor::PyTensor>(),
    )?;
    m.add_class::<super::dtype::PyDType>()?;
    m.add_class::<super::device::PyDevice>()?;
    super::dtype::add_dtypes(m)?;
    super::creation::register(m)?;
    super::asarray::register(m)?;
    super::numpy::register(m)?;
    super::pickle::register(m)?;
    super::arg::register(m)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(live_storages, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_current_device, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_exception_type, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    super::cuda::register(m)?;
    super::sharing::register(m)?;
    m.add_function(wrap_pyfunction!(
        super::exchange_api::exchange_api_counts,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(super::arith::_generated_ops, m)?)?;
    super::generated::register(m)?;
    super::named::register(m)?;
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
    super::cuda::current_device()
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
