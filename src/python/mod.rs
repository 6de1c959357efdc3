//! The `dlbridge._core` extension module: PyTorch's tensor API over the core.

mod convert;
mod creation;
mod device;
mod dlpack;
mod dtype;
mod errors;
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
    m.add_function(wrap_pyfunction!(cuda_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_synchronize, m)?)?;
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

/// The CUDA seam: this build has no CUDA backend, so there is no device.
#[pyfunction]
fn cuda_is_available() -> bool {
    false
}

#[pyfunction]
fn cuda_device_count() -> usize {
    0
}

#[pyfunction]
fn cuda_synchronize() -> PyResult<()> {
    Err(errors::to_py(crate::Error::no_cuda("cuda")))
}
