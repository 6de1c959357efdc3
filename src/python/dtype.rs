//! `dlbridge.dtype` objects: one singleton per dtype, so `t.dtype is dlbridge.float64`,
//! and reading a `dtype=` argument.
//!
//! Layer: a leaf; whatever takes a `dtype=` argument uses it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> creation -> convert,
//! arith, index, cuda, sharing -> methods -> mod.rs)

use crate::DType;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// A tensor element type (`dlbridge.float32`, ...).
#[pyclass(name = "dtype", module = "dlbridge", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub struct PyDType(pub DType);

static SINGLETONS: PyOnceLock<Vec<Py<PyDType>>> = PyOnceLock::new();

/// The singleton Python object for `dt`.
pub(crate) fn dtype_object(py: Python<'_>, dt: DType) -> Py<PyDType> {
    let all = SINGLETONS.get_or_init(py, || {
        DType::ALL
            .iter()
            // Only fails when the interpreter cannot allocate a tiny object
            // while the module loads; dlbridge could not work on then.
            .map(|&d| Py::new(py, PyDType(d)).expect("dtype object"))
            .collect()
    });
    // Every DType is in DType::ALL (a test in dtype.rs keeps it so).
    all[DType::ALL.iter().position(|&d| d == dt).unwrap_or(0)].clone_ref(py)
}

/// Reads a `dlbridge.dtype` argument.
pub(crate) fn extract_dtype(ob: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = ob.cast::<PyDType>() {
        return Ok(d.get().0);
    }
    Err(PyTypeError::new_err(format!(
        "dtype must be a dlbridge.dtype (e.g. dlbridge.float32), not {}",
        ob.get_type().name()?
    )))
}

pub(crate) fn extract_opt_dtype(ob: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match ob {
        Some(ob) if !ob.is_none() => extract_dtype(ob).map(Some),
        _ => Ok(None),
    }
}

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        self.0.to_string()
    }

    #[getter]
    fn is_floating_point(&self) -> bool {
        self.0.is_floating_point()
    }

    #[getter]
    fn is_complex(&self) -> bool {
        self.0.is_complex()
    }

    #[getter]
    fn is_signed(&self) -> bool {
        self.0.is_signed()
    }

    #[getter]
    fn itemsize(&self) -> usize {
        self.0.size()
    }

    /// Pickles as a lookup by name, so unpickling gives the same singleton.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (&'static str,))> {
        Ok((
            py.import("dlbridge")?.getattr("_dtype_by_name")?,
            (self.0.name(),),
        ))
    }
}

/// Adds `float32`, ... and PyTorch's aliases to the module.
pub(crate) fn add_dtypes(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    for dt in DType::ALL {
        m.add(dt.name(), dtype_object(py, dt))?;
    }
    for (alias, name) in [
        ("float", "float32"),
        ("double", "float64"),
        ("half", "float16"),
        ("int", "int32"),
        ("long", "int64"),
        ("short", "int16"),
        ("cfloat", "complex64"),
        ("cdouble", "complex128"),
        ("chalf", "complex32"),
    ] {
        // The names above are dtype names (a typo fails the module's import
        // in every test run, never a user's call).
        let dt = DType::from_name(name).ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err(format!("no dtype named {name}"))
        })?;
        m.add(alias, dtype_object(py, dt))?;
    }
    Ok(())
}
