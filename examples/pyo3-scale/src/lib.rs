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
use dlbridge::{BinaryOp, Scalar, ops};
use pyo3::prelude::*;

/// `x * k`, a new tensor on `x`'s device.
#[pyfunction]
fn scale(x: TensorArg, k: f64) -> PyResult<TensorOut> {
    let out = ops::binary((&*x).into(), Scalar::Float(k).into(), BinaryOp::Mul)?;
    Ok(out.into())
}

/// `x *= k` in the caller's memory.
#[pyfunction]
fn scale_(x: TensorArgMut, k: f64) -> PyResult<()> {
    ops::binary_(&x, Scalar::Float(k).into(), BinaryOp::Mul)?;
    Ok(())
}

#[pymodule]
fn dlbridge_scale(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(scale, m)?)?;
    m.add_function(wrap_pyfunction!(scale_, m)?)
}
