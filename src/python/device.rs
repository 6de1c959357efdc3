//! `dlbridge.device`, and reading the many ways PyTorch lets users name one.
//!
//! Layer: above `errors` only; whatever takes a `device=` argument uses it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::errors::IntoPyResult;
use crate::{Device, DeviceKind};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyString};

/// A device (`device('cuda', 0)`, `device('cpu')`).
#[pyclass(name = "device", module = "dlbridge", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash, Clone, Copy)]
pub struct PyDevice(pub Device);

#[pymethods]
impl PyDevice {
    /// `device('cuda:0')`, `device('cuda', 0)`, `device(0)`,
    /// `device(type='cuda', index=0)`, and `device(device=...)` as the seeds use.
    #[new]
    #[pyo3(signature = (r#type=None, index=None, *, device=None))]
    fn new(
        r#type: Option<&Bound<'_, PyAny>>,
        index: Option<i64>,
        device: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let spec = match (r#type, device) {
            (Some(t), None) | (None, Some(t)) => t,
            _ => {
                return Err(PyTypeError::new_err(
                    "device() takes a type string or an index",
                ));
            }
        };
        // Keeps `cpu:0`'s index for display, unlike placement arguments.
        let mut parsed = match spec.cast::<PyString>() {
            Ok(s) => Device::parse(&s.to_cow()?).py()?,
            Err(_) => extract_device(spec)?,
        };
        if let Some(i) = index {
            if parsed.index.is_some() {
                return Err(PyRuntimeError::new_err(format!(
                    "type (string) must not include an index because index was passed explicitly: {parsed}"
                )));
            }
            if i < 0 {
                return Err(PyRuntimeError::new_err(format!(
                    "Device index must not be negative, got {i}"
                )));
            }
            if parsed.kind == DeviceKind::Cpu && i != 0 {
                return Err(PyRuntimeError::new_err(format!(
                    "CPU device index must be -1 or zero, got {i}"
                )));
            }
            parsed.index = Some(i as u32);
        }
        Ok(PyDevice(parsed))
    }

    #[getter]
    fn r#type(&self) -> &'static str {
        self.0.kind.name()
    }

    #[getter]
    fn index(&self) -> Option<u32> {
        self.0.index
    }

    fn __repr__(&self) -> String {
        match self.0.index {
            Some(i) => format!("device(type='{}', index={i})", self.r#type()),
            None => format!("device(type='{}')", self.r#type()),
        }
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, pyo3::types::PyType>, (String,)) {
        (slf.get_type(), (slf.get().0.to_string(),))
    }
}

/// Reads a device given as a string, an int (a CUDA index) or a `device`.
pub(crate) fn extract_device(ob: &Bound<'_, PyAny>) -> PyResult<Device> {
    if let Ok(d) = ob.cast::<PyDevice>() {
        return Ok(d.get().0.canonical());
    }
    if let Ok(s) = ob.cast::<PyString>() {
        return Device::parse(&s.to_cow()?).map(Device::canonical).py();
    }
    if ob.is_instance_of::<PyInt>() {
        let i: i64 = ob.extract()?;
        if i < 0 {
            return Err(PyRuntimeError::new_err(format!(
                "Device index must not be negative, got {i}"
            )));
        }
        return Ok(Device::cuda(Some(i as u32)));
    }
    if let Some(d) = foreign_device(ob)? {
        return Ok(d);
    }
    Err(PyTypeError::new_err(format!(
        "device must be a string, an int or a dlbridge.device (e.g. 'cpu', 'cuda:0' or \
         dlbridge.device('cuda', 0)), not {}",
        ob.get_type().name()?
    )))
}

/// Another framework's device object as dlbridge's, or `None` when `ob` is
/// none: `torch.device` (by its string), a JAX device (`platform` `cpu` or
/// `gpu`/`cuda`, its local ordinal) and a CuPy device (`id`).
fn foreign_device(ob: &Bound<'_, PyAny>) -> PyResult<Option<Device>> {
    let ty = ob.get_type();
    let module = ty.module()?.to_cow()?.into_owned();
    let root = module.split('.').next().unwrap_or_default();
    if root == "torch" && ty.name()?.to_cow()? == "device" {
        return Device::parse(&ob.str()?.to_cow()?)
            .map(|d| Some(d.canonical()))
            .py();
    }
    if matches!(root, "jax" | "jaxlib") && ob.hasattr("platform")? {
        let platform: String = ob.getattr("platform")?.extract()?;
        let ordinal = match ob.getattr("local_hardware_id") {
            Ok(i) if !i.is_none() => i.extract::<u32>()?,
            _ => ob.getattr("id")?.extract::<u32>()?,
        };
        return match platform.as_str() {
            "cpu" => Ok(Some(Device::CPU)),
            "gpu" | "cuda" => Ok(Some(Device::cuda(Some(ordinal)))),
            other => Err(PyTypeError::new_err(format!(
                "dlbridge has no device for JAX's platform '{other}' (it has 'cpu' and 'cuda')"
            ))),
        };
    }
    if root == "cupy" && ob.hasattr("id")? {
        return Ok(Some(Device::cuda(Some(ob.getattr("id")?.extract()?))));
    }
    Ok(None)
}

pub(crate) fn extract_opt_device(ob: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Device>> {
    match ob {
        Some(ob) if !ob.is_none() => extract_device(ob).map(Some),
        _ => Ok(None),
    }
}
