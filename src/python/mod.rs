//! The `dlbridge._core` extension module: PyTorch's tensor API over the core.

mod convert;
mod creation;
mod cuda;
mod device;
mod dlpack;
mod dtype;
mod errors;
mod exchange_api;
mod fastcall;
mod index;
mod numpy;
mod tensor;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tensor::PyTensor>()?;
    fastcall::install(&m.py().get_type::<tensor::PyTensor>())?;
    m.add_class::<dtype::PyDType>()?;
    m.add_class::<device::PyDevice>()?;
    dtype::add_dtypes(m)?;
    creation::register(m)?;
    numpy::register(m)?;
    dlpack::register(m)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(live_storages, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_current_device, m)?)?;
    cuda::register(m)?;
    m.add_function(wrap_pyfunction!(exchange_api::exchange_api_counts, m)?)?;
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
