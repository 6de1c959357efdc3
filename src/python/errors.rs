//! Core errors become the Python exceptions PyTorch raises for the same mistake.

use crate::{Error, PythonClass};
use pyo3::PyErr;
use pyo3::exceptions::{
    PyBufferError, PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};

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

/// `?` on core results inside Python entry points.
pub(crate) trait IntoPyResult<T> {
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPyResult<T> for crate::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
