//! Core errors become the Python exceptions PyTorch raises for the same mistake.

use crate::Error;
use pyo3::PyErr;
use pyo3::exceptions::{
    PyBufferError, PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};

pub(crate) fn to_py(e: Error) -> PyErr {
    match e {
        Error::Runtime(m) => PyRuntimeError::new_err(m),
        Error::Type(m) => PyTypeError::new_err(m),
        Error::Value(m) => PyValueError::new_err(m),
        Error::Index(m) => PyIndexError::new_err(m),
        Error::Buffer(m) => PyBufferError::new_err(m),
        Error::NotImplemented(m) => PyNotImplementedError::new_err(m),
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
