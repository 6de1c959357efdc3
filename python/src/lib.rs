//! The `dlbridge._core` extension module: the Python package's compiled half.
//!
//! Everything it registers is written in the core crate under its `pyo3`
//! feature (`dlbridge::python`); this crate exists so that the cdylib is a
//! build target of its own (see ARCHITECTURE.md).

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    dlbridge::python::package::init(m)
}
