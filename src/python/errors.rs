//! Core errors become the Python exceptions PyTorch raises for the same
//! mistake, and the type name that error messages quote.
//!
//! Layer: a leaf; every other file of `python/` may use it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use crate::{Error, PythonClass};
use pyo3::exceptions::{
    PyBufferError, PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;

/// A dlbridge error as the Python exception PyTorch raises for the same
/// mistake (the class comes from [`ErrorKind::python_class`](crate::ErrorKind::python_class)):
/// `?` on a [`crate::Result`] inside a `#[pyfunction]` raises it.
impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        to_py(e)
    }
}

pub(crate) fn to_py(e: Error) -> PyErr {
    let message = e.message().to_owned();
    match e.kind().python_class() {
        PythonClass::RuntimeError => PyRuntimeError::new_err(message),
        PythonClass::TypeError => PyTypeError::new_err(message),
        PythonClass::ValueError => PyValueError::new_err(message),
        PythonClass::IndexError => PyIndexError::new_err(message),
        PythonClass::BufferError => PyBufferError::new_err(message),
        PythonClass::NotImplementedError => PyNotImplementedError::new_err(message),
    }
}

/// PyTorch's `UserWarning` when a copy or cast drops the imaginary part
/// (complex to any real dtype but bool, which tests for non-zero): `copy_`,
/// `to`, `float()`, `type(...)` and `t[key] = complex_tensor` warn, as
/// PyTorch's do. The warning filters decide how often it shows (PyTorch
/// shows it once per process).
pub(crate) fn warn_if_imaginary_dropped(
    py: Python<'_>,
    from: crate::DType,
    to: crate::DType,
) -> PyResult<()> {
    if from.is_complex() && !to.is_complex() && to != crate::DType::Bool {
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyUserWarning>(),
            c"Casting complex values to real discards the imaginary part",
            1,
        )?;
    }
    Ok(())
}

/// `?` on core results inside Python entry points.
pub(crate) trait IntoPyResult<T> {
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPyResult<T> for crate::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}

/// The name of `ob`'s type, as error messages quote it (empty if unreadable).
pub(crate) fn type_name(ob: &Bound<'_, PyAny>) -> String {
    ob.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}
