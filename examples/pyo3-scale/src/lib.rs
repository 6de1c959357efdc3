//! `dlbridge_scale`: a pyo3 extension module written with dlbridge's pyo3
//! layer. Both functions take a tensor of any framework (torch, NumPy, JAX,
//! CuPy, ...) zero-copy:
//!
//! - `scale(x, k)` returns `x * k` as a new tensor that any framework's
//!   `from_dlpack` takes (CPU or CUDA, as `x` is);
//! - `scale_(x, k)` multiplies `x` by `k` in place, so the caller's own
//!   tensor changes; read-only inputs (a JAX array, a non-writeable NumPy
//!   array) are refused.
//!
//! Lists, numbers and other objects are refused with a `TypeError`, and
//! dlbridge's errors become the Python exceptions PyTorch raises for the
//! same mistake.

use dlbridge::python::{TensorArg, TensorArgMut, TensorOut};
use pyo3::prelude::*;

/// `x * k`, a new tensor on `x`'s device (PyTorch's type promotion: an
/// integer tensor times a float gives float32).
#[pyfunction]
fn scale(x: TensorArg, k: f64) -> PyResult<TensorOut> {
    Ok(x.mul(k)?.into())
}

/// `x *= k` in the caller's memory.
#[pyfunction]
fn scale_(x: TensorArgMut, k: f64) -> PyResult<()> {
    Ok(x.mul_(k)?)
}

#[pymodule]
fn dlbridge_scale(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(scale, m)?)?;
    m.add_function(wrap_pyfunction!(scale_, m)?)
}
