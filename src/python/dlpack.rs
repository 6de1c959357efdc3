//! The DLPack Python protocol, both ways.
//!
//! Export (`__dlpack__`): a fresh managed tensor per call wrapped in a
//! one-shot capsule; the capsule destructor frees it only if no consumer
//! renamed it to `used_*`, and preserves any pending exception.
//! Import (`from_dlpack`): calls the producer's `__dlpack__` (versioned
//! first, legacy on `TypeError`), consumes the capsule, and validates the
//! foreign tensor before trusting it.

use super::device::extract_opt_device;
use super::errors::IntoPyResult;
use super::tensor::PyTensor;
use crate::backend::Accelerator as _;
use crate::dlpack::{
    ExportOptions, export::VERSION, export_legacy, export_versioned, import::import_with,
};
use crate::{Device, Tensor};
use dlpark::ffi::{DLManagedTensor, DLManagedTensorVersioned, DLPackVersion};
use dlpark::{DlpackFlags, Managed};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use std::ffi::{CStr, c_void};

const DLTENSOR: &CStr = c"dltensor";
const USED_DLTENSOR: &CStr = c"used_dltensor";
const DLTENSOR_VERSIONED: &CStr = c"dltensor_versioned";
const USED_DLTENSOR_VERSIONED: &CStr = c"used_dltensor_versioned";

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)
}

// ----- export -----

/// Frees an unconsumed capsule's tensor. Runs inside the capsule's dealloc,
/// so the GIL is held; a pending exception is saved around the deleter,
/// which may run arbitrary code (a producer's deleter dropping Python objects).
unsafe fn destroy_capsule(capsule: *mut ffi::PyObject, name: &CStr, used: &CStr, versioned: bool) {
    // SAFETY (whole body): `capsule` is a live capsule object passed by CPython.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, used.as_ptr()) == 1 {
            return; // a consumer owns it now
        }
        let (mut ty, mut value, mut tb) = (
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        #[allow(deprecated)]
        ffi::PyErr_Fetch(&mut ty, &mut value, &mut tb);
        let ptr = ffi::PyCapsule_GetPointer(capsule, name.as_ptr());
        if ptr.is_null() {
            ffi::PyErr_WriteUnraisable(capsule);
        } else if versioned {
            let m = ptr.cast::<DLManagedTensorVersioned>();
            if let Some(deleter) = (*m).deleter {
                deleter(m);
            }
        } else {
            let m = ptr.cast::<DLManagedTensor>();
            if let Some(deleter) = (*m).deleter {
                deleter(m);
            }
        }
        #[allow(deprecated)]
        ffi::PyErr_Restore(ty, value, tb);
    }
}

unsafe extern "C" fn versioned_capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by CPython with the capsule being destroyed.
    unsafe { destroy_capsule(capsule, DLTENSOR_VERSIONED, USED_DLTENSOR_VERSIONED, true) }
}

unsafe extern "C" fn legacy_capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: as above.
    unsafe { destroy_capsule(capsule, DLTENSOR, USED_DLTENSOR, false) }
}

/// Wraps an owned export in a capsule; frees it if the capsule cannot be made.
fn capsule(py: Python<'_>, ptr: *mut c_void, versioned: bool) -> PyResult<Py<PyAny>> {
    let (name, destructor): (&CStr, ffi::PyCapsule_Destructor) = if versioned {
        (DLTENSOR_VERSIONED, versioned_capsule_destructor)
    } else {
        (DLTENSOR, legacy_capsule_destructor)
    };
    // SAFETY: ptr is a live export we own; the name is a static C string.
    let raw = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), Some(destructor)) };
    if raw.is_null() {
        // SAFETY: we still own the export, so free it through its own deleter.
        unsafe {
            if versioned {
                let m = ptr.cast::<DLManagedTensorVersioned>();
                ((*m).deleter.unwrap())(m);
            } else {
                let m = ptr.cast::<DLManagedTensor>();
                ((*m).deleter.unwrap())(m);
            }
        }
        return Err(PyErr::fetch(py));
    }
    // SAFETY: PyCapsule_New returned a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, raw) }.unbind())
}

/// `Tensor.__dlpack__(*, stream, max_version, dl_device, copy)` per the DLPack Python spec.
pub(crate) fn dlpack(
    slf: &Bound<'_, PyTensor>,
    stream: Option<&Bound<'_, PyAny>>,
    max_version: Option<(u32, u32)>,
    dl_device: Option<(i32, i32)>,
    copy: Option<bool>,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let this = slf.get();
    let t = &this.inner;
    if this.requires_grad() {
        return Err(PyBufferError::new_err(
            "Can't export tensors that require gradient, use tensor.detach()",
        ));
    }
    let stream: Option<i64> = match stream {
        Some(s) if !s.is_none() => Some(s.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "stream must be None or an int, not {}",
                s.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?),
        _ => None,
    };
    let target = match dl_device {
        None => t.device(),
        Some((ty, id)) => {
            let dev = dlpark::ffi::DLDevice {
                device_type: dlpark::ffi::DLDeviceType(ty as u32),
                device_id: id,
            };
            Device::from_dlpack(dev).map_err(|e| PyBufferError::new_err(e.to_string()))?
        }
    };
    let target = if target.is_cpu() {
        target
    } else {
        crate::backend::resolve(target).map_err(|e| PyBufferError::new_err(e.to_string()))?
    };
    // The stream names the consumer's queue on the exported tensor's device.
    if target.is_cpu() {
        if stream.is_some() {
            return Err(PyValueError::new_err(
                "dlbridge CPU tensors only support stream=None",
            ));
        }
    } else if let Some(s) = stream {
        crate::cuda::Cuda.check_stream(s).py()?;
    }
    let moves = target != t.device();
    if moves && copy == Some(false) {
        return Err(PyBufferError::new_err(format!(
            "copy=False, but exporting to {target} needs a copy from {}",
            t.device()
        )));
    }
    let exported;
    let (src, is_copied) = if moves || copy == Some(true) {
        let moved = t
            .to_device(target)
            .map_err(|e| PyBufferError::new_err(e.to_string()))?;
        exported = if moves {
            moved
        } else {
            moved.clone_data().py()?
        };
        (&exported, true)
    } else {
        (t, false)
    };
    super::exchange_api::PROTOCOL_EXPORTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if !src.device().is_cpu() {
        // None means the legacy default stream (1), as the spec says for CUDA.
        crate::cuda::Cuda
            .order_before_consumer(src.device(), stream.unwrap_or(1))
            .py()?;
    }
    match max_version {
        Some((major, minor)) if major >= 1 => {
            let version = if major == 1 {
                DLPackVersion {
                    major: 1,
                    minor: minor.min(VERSION.minor),
                }
            } else {
                VERSION
            };
            let options = ExportOptions {
                is_copied,
                version: Some(version),
            };
            let ptr = export_versioned(src, options).py()?;
            capsule(py, ptr.cast(), true)
        }
        _ => {
            let ptr = export_legacy(src).py()?;
            capsule(py, ptr.cast(), false)
        }
    }
}

// ----- import -----

/// Consumes a capsule: checks its name, renames it `used_*`, and takes ownership.
fn consume_capsule(ob: &Bound<'_, PyAny>) -> PyResult<Imported> {
    let p = ob.as_ptr();
    // SAFETY: IsValid accepts any object; GetPointer and SetName run only on
    // a capsule with the expected name.
    unsafe {
        for (name, used, versioned) in [
            (DLTENSOR_VERSIONED, USED_DLTENSOR_VERSIONED, true),
            (DLTENSOR, USED_DLTENSOR, false),
        ] {
            if ffi::PyCapsule_IsValid(p, used.as_ptr()) == 1 {
                return Err(PyValueError::new_err(
                    "this DLPack capsule was already consumed (a capsule can be used only once)",
                ));
            }
            if ffi::PyCapsule_IsValid(p, name.as_ptr()) != 1 {
                continue;
            }
            let ptr = ffi::PyCapsule_GetPointer(p, name.as_ptr());
            if ptr.is_null() {
                return Err(PyBufferError::new_err(
                    "DLPack capsule holds a NULL pointer",
                ));
            }
            if ffi::PyCapsule_SetName(p, used.as_ptr()) != 0 {
                return Err(PyErr::fetch(ob.py()));
            }
            let bad = |e: dlpark::dlpack::FromRawError| {
                PyBufferError::new_err(format!("invalid DLPack tensor: {e}"))
            };
            // Ownership moved to us with the rename: a version mismatch makes
            // from_raw call the deleter before returning the error.
            return Ok(if versioned {
                Imported::Versioned(Managed::from_raw(ptr.cast()).map_err(bad)?)
            } else {
                Imported::Legacy(Managed::from_raw(ptr.cast()).map_err(bad)?)
            });
        }
    }
    Err(PyTypeError::new_err(format!(
        "from_dlpack expects an object with __dlpack__ and __dlpack_device__, or a DLPack capsule; got {}",
        ob.get_type().name()?
    )))
}

enum Imported {
    Versioned(Managed<DLManagedTensorVersioned>),
    Legacy(Managed<DLManagedTensor>),
}

static REQUEST: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
static CUDA_REQUEST: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
static CUDA_LEGACY_REQUEST: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// The keyword arguments dlbridge passes to `__dlpack__`, built once
/// (producers only read them): `max_version=(1, 3)`, plus `stream=1` for
/// CUDA producers, since dlbridge works on the legacy default stream and the
/// producer must order its pending work before it.
fn request_kwargs(py: Python<'_>, cuda: bool, versioned: bool) -> PyResult<&Bound<'_, PyDict>> {
    let cell = match (cuda, versioned) {
        (false, _) => &REQUEST,
        (true, true) => &CUDA_REQUEST,
        (true, false) => &CUDA_LEGACY_REQUEST,
    };
    let d = cell.get_or_try_init(py, || -> PyResult<_> {
        let d = PyDict::new(py);
        if versioned {
            d.set_item("max_version", (VERSION.major, VERSION.minor))?;
        }
        if cuda {
            d.set_item("stream", 1)?;
        }
        Ok(d.unbind())
    })?;
    Ok(d.bind(py))
}

/// Whether a producer's `__dlpack_device__` says CUDA memory (NumPy arrays,
/// by far the most common producer, are known to be host memory).
fn is_cuda_producer(ob: &Bound<'_, PyAny>) -> PyResult<bool> {
    if ob.is_instance_of::<numpy::PyUntypedArray>() {
        return Ok(false);
    }
    let py = ob.py();
    let Ok(method) = ob.getattr(pyo3::intern!(py, "__dlpack_device__")) else {
        return Ok(false);
    };
    let (ty, _id): (i64, i64) = method.call0()?.extract()?;
    Ok(ty == dlpark::ffi::DLDeviceType::CUDA.0 as i64
        || ty == dlpark::ffi::DLDeviceType::CUDAMANAGED.0 as i64)
}

/// JAX arrays are immutable to their users, but JAX exports legacy capsules,
/// which cannot say so: dlbridge marks imports from JAX read-only itself.
fn is_immutable_producer(ob: &Bound<'_, PyAny>) -> bool {
    ob.get_type()
        .module()
        .ok()
        .and_then(|m| m.to_cow().ok().map(|m| m.starts_with("jax")))
        .unwrap_or(false)
}

/// Calls the producer's `__dlpack__`, preferring a versioned capsule.
fn request_capsule<'py>(ob: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = ob.py();
    let method = ob.getattr(pyo3::intern!(py, "__dlpack__")).map_err(|_| {
        PyTypeError::new_err(format!(
            "from_dlpack expects an object with __dlpack__ and __dlpack_device__, or a DLPack capsule; got {}",
            ob.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let cuda = is_cuda_producer(ob)?;
    match method.call((), Some(request_kwargs(py, cuda, true)?)) {
        Ok(capsule) => Ok(capsule),
        // Producers predating DLPack 1.0 do not know max_version.
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            method.call((), Some(request_kwargs(py, cuda, false)?))
        }
        Err(e) => Err(e),
    }
}

/// Imports any DLPack producer (or capsule) as a tensor sharing its memory.
/// Also reports whether the producer said it copied.
pub(crate) fn import_object(ob: &Bound<'_, PyAny>) -> PyResult<(Tensor, bool)> {
    // SAFETY: a type check on a live object.
    let is_capsule = unsafe { ffi::PyCapsule_CheckExact(ob.as_ptr()) } == 1;
    if !is_capsule && let Some(imported) = super::exchange_api::import(ob) {
        return imported;
    }
    let capsule = if is_capsule {
        ob.clone()
    } else {
        request_capsule(ob)?
    };
    match consume_capsule(&capsule)? {
        Imported::Versioned(m) => {
            let flags = m.flags();
            let copied = flags.contains(DlpackFlags::IS_COPIED);
            let ro = flags.contains(DlpackFlags::READ_ONLY) || is_immutable_producer(ob);
            Ok((import_with(m, ro).py()?, copied))
        }
        // Legacy capsules cannot carry READ_ONLY, so only they need the producer check.
        Imported::Legacy(m) => Ok((import_with(m, is_immutable_producer(ob)).py()?, false)),
    }
}

/// `from_dlpack(x, /, *, device=None, copy=None)` with the array API's meaning:
/// zero-copy by default, `copy=True` always copies, `copy=False` never does,
/// and `device` places the result (copying only when it differs).
#[pyfunction]
#[pyo3(signature = (x, /, *, device=None, copy=None))]
fn from_dlpack(
    x: &Bound<'_, PyAny>,
    device: Option<&Bound<'_, PyAny>>,
    copy: Option<bool>,
) -> PyResult<PyTensor> {
    let device = extract_opt_device(device)?;
    let (t, copied) = match x.cast::<PyTensor>() {
        Ok(own) => (own.get().inner.clone(), false),
        Err(_) => import_object(x)?,
    };
    if copy == Some(false) && copied {
        return Err(PyBufferError::new_err(
            "copy=False, but the producer made a copy",
        ));
    }
    let device = match device {
        Some(d) if !d.is_cpu() => Some(crate::backend::resolve(d).py()?),
        other => other,
    };
    let placed = match device {
        Some(d) if d != t.device() => {
            if copy == Some(false) {
                return Err(PyBufferError::new_err(format!(
                    "copy=False, but moving to {d} needs a copy"
                )));
            }
            t.to_device(d).py()?
        }
        _ if copy == Some(true) && !copied => t.clone_data().py()?,
        _ => t,
    };
    Ok(PyTensor::new(placed))
}

/// `Tensor.__dlpack_device__()`: `(device_type, device_id)`.
pub(crate) fn dlpack_device(t: &Tensor) -> (u32, i32) {
    let d = t.device().to_dlpack();
    (d.device_type.0, d.device_id)
}
