//! `dlbridge.dtype` objects: one singleton per dtype, so `t.dtype is dlbridge.float64`,
//! and reading a `dtype=` argument.
//!
//! Layer: a leaf; whatever takes a `dtype=` argument uses it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

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
    all[dt.index()].clone_ref(py)
}

/// Reads a `dtype=` argument: a `dlbridge.dtype`, or another framework's
/// spelling of one (see [`foreign_dtype`]).
pub(crate) fn extract_dtype(ob: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = ob.cast::<PyDType>() {
        return Ok(d.get().0);
    }
    if let Some(dt) = foreign_dtype(ob)? {
        return Ok(dt);
    }
    Err(PyTypeError::new_err(format!(
        "dtype must be a dlbridge.dtype (e.g. dlbridge.float32), not {}",
        ob.get_type().name()?
    )))
}

/// Another framework's dtype as dlbridge's, or `None` when `ob` is not a
/// dtype at all: `torch.float16`; NumPy's `np.float32` and
/// `np.dtype('float32')` (ml_dtypes' too); JAX's `jnp.float32`; Python's
/// `float`, `int`, `bool`, `complex` (float64, int64, bool, complex128, as
/// PyTorch reads them). A dtype dlbridge lacks is a `TypeError` that says so.
pub(crate) fn foreign_dtype(ob: &Bound<'_, PyAny>) -> PyResult<Option<DType>> {
    let py = ob.py();
    let ty = ob.get_type();
    let unknown = |what: String| {
        PyTypeError::new_err(format!(
            "{what} has no dlbridge dtype; dlbridge has the dtypes PyTorch has, spelled as torch \
             spells them (e.g. dlbridge.float32)"
        ))
    };
    if ty.module()?.to_cow()? == "torch" && ty.name()?.to_cow()? == "dtype" {
        let spelled = ob.str()?.to_cow()?.into_owned();
        let name = spelled.strip_prefix("torch.").unwrap_or(&spelled);
        return DType::from_name(name)
            .map(Some)
            .ok_or_else(|| unknown(spelled.clone()));
    }
    // Only NumPy's dtype objects and types (a NumPy, JAX or Python scalar
    // type) are read through `numpy.dtype`: a string or an array is no dtype.
    let Ok(np) = py.import("numpy") else {
        return Ok(None);
    };
    let is_dtype = ob.is_instance(&np.getattr("dtype")?)?;
    let is_type = ob.is_instance_of::<pyo3::types::PyType>()
        && (ob.hasattr("dtype")? && ob.getattr("dtype")?.is_instance(&np.getattr("dtype")?)?
            || ob
                .cast::<pyo3::types::PyType>()?
                .is_subclass(&np.getattr("generic")?)?
            || ["float", "int", "bool", "complex"].iter().any(|b| {
                py.import("builtins")
                    .and_then(|m| m.getattr(*b))
                    .is_ok_and(|t| t.is(ob))
            }));
    if !(is_dtype || is_type) {
        return Ok(None);
    }
    let d = np.getattr("dtype")?.call1((ob,))?;
    let name = d.getattr("name")?.extract::<String>()?;
    DType::from_name(&name)
        .map(Some)
        .ok_or_else(|| unknown(format!("NumPy's dtype {name}")))
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
    for dt in DType::ALL {
        for alias in dt.aliases() {
            m.add(*alias, dtype_object(py, dt))?;
        }
    }
    Ok(())
}
