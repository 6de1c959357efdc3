//! The DLPack producer: `Tensor.__dlpack__` (the DLPack Python protocol),
//! `__dlpack_device__`, and the capsule of dlbridge's C exchange API table
//! (`__dlpack_c_exchange_api__`).
//!
//! `__dlpack__` makes a fresh managed tensor per call and wraps it in a
//! one-shot capsule (see `capsule.rs`), whose destructor frees it only if no
//! consumer renamed it `used_*`. It is the hottest entry point of the
//! library, so it is installed by hand as a vectorcall method descriptor:
//! under the Python 3.9 stable ABI, pyo3 parses keywords from a dict and
//! converts every keyword name to UTF-8, which costs more than the whole
//! export (~100 ns per call). `METH_FASTCALL | METH_KEYWORDS` descriptors
//! (`PyDescr_NewMethod` is in the stable ABI; CPython has run METH_FASTCALL
//! methods since 3.7 and the flag's value joined the limited API unchanged
//! in 3.10) get the keyword names as a tuple; they are matched by pointer
//! against interned strings first, so a call costs about what NumPy's does.
//!
//! Layer: above `capsule`, `tensor` and `exchange_api` (the table and the
//! export counters); `methods` and `mod.rs` (which installs `__dlpack__`) use it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> creation -> convert,
//! arith, index, cuda -> methods -> mod.rs)

use super::capsule::{self, Abi};
use super::errors::{IntoPyResult, type_name};
use super::exchange_api;
use super::tensor::PyTensor;
use crate::backend::Accelerator as _;
use crate::dlpack::{ExportOptions, export::VERSION, export_legacy, export_versioned};
use crate::{Device, Tensor};
use dlpark::ffi::DLPackVersion;
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use std::ffi::CStr;
use std::sync::atomic::Ordering;

/// `Tensor.__dlpack__(*, stream, max_version, dl_device, copy)` per the DLPack Python spec.
fn dlpack(
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
                type_name(s)
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
    exchange_api::PROTOCOL_EXPORTS.fetch_add(1, Ordering::Relaxed);
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
            capsule::wrap_export(py, ptr.cast(), Abi::Versioned)
        }
        _ => {
            let ptr = export_legacy(src).py()?;
            capsule::wrap_export(py, ptr.cast(), Abi::Legacy)
        }
    }
}

/// `Tensor.__dlpack_device__()`: `(device_type, device_id)`.
pub(crate) fn dlpack_device(t: &Tensor) -> (u32, i32) {
    let d = t.device().to_dlpack();
    (d.device_type.0, d.device_id)
}

/// `Tensor.__dlpack_c_exchange_api__`: a capsule pointing at dlbridge's
/// static C exchange API table (see `exchange_api.rs`).
pub(crate) fn exchange_api_capsule(py: Python<'_>) -> PyResult<Py<PyAny>> {
    capsule::wrap_static(py, exchange_api::table().cast(), capsule::EXCHANGE_API)
}

// ----- the vectorcall descriptor -----

/// `METH_FASTCALL` (see the module doc for why it is defined here).
const METH_FASTCALL: i32 = 0x0080;

/// A two-integer tuple keyword (`max_version`, `dl_device`), refused with
/// NumPy's exception class (`TypeError`) when it is anything else.
fn pair<T: for<'a> FromPyObject<'a, 'a>>(v: &Bound<'_, PyAny>, wrong: &str) -> PyResult<(T, T)>
where
    for<'a> <T as FromPyObject<'a, 'a>>::Error: Into<PyErr>,
{
    let t = v
        .cast::<PyTuple>()
        .ok()
        .filter(|t| t.len() == 2)
        .ok_or_else(|| PyTypeError::new_err(wrong.to_owned()))?;
    Ok((
        t.get_borrowed_item(0)?.extract().map_err(Into::into)?,
        t.get_borrowed_item(1)?.extract().map_err(Into::into)?,
    ))
}

/// `copy=`: any object's truth, but a string is refused, as NumPy does
/// (`copy="no"` would otherwise read as true).
fn copy_flag(v: &Bound<'_, PyAny>) -> PyResult<bool> {
    if v.is_instance_of::<PyString>() {
        return Err(PyValueError::new_err(
            "strings are not allowed for 'copy' keyword. Use True/False/None instead.",
        ));
    }
    v.is_truthy()
}

const KEYWORDS: [&CStr; 4] = [c"stream", c"max_version", c"dl_device", c"copy"];

/// Which `__dlpack__` keyword `name` is, if any.
///
/// # Safety
/// `name` must be a live `str` object; the GIL must be held.
unsafe fn keyword_index(py: Python<'_>, name: *mut ffi::PyObject) -> Option<usize> {
    let interned = [
        pyo3::intern!(py, "stream"),
        pyo3::intern!(py, "max_version"),
        pyo3::intern!(py, "dl_device"),
        pyo3::intern!(py, "copy"),
    ];
    if let Some(i) = interned.iter().position(|s| s.as_ptr() == name) {
        return Some(i);
    }
    // SAFETY: name is a str (the caller's promise) and KEYWORDS are ASCII.
    KEYWORDS
        .iter()
        .position(|k| unsafe { ffi::PyUnicode_CompareWithASCIIString(name, k.as_ptr()) } == 0)
}

/// The METH_FASTCALL | METH_KEYWORDS body of `Tensor.__dlpack__`.
unsafe extern "C" fn dlpack_fastcall(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls method descriptors with the GIL held.
    let py = unsafe { Python::assume_attached() };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
        || -> PyResult<Py<PyAny>> {
            // SAFETY: the descriptor checked that `slf` is a Tensor instance;
            // args holds nargs positional values followed by one per kwname.
            unsafe {
                let slf = Bound::from_borrowed_ptr(py, slf).cast_into::<PyTensor>()?;
                if nargs != 0 {
                    return Err(PyTypeError::new_err(
                        "__dlpack__() takes only keyword arguments (stream, max_version, dl_device, copy)",
                    ));
                }
                let mut values: [Option<Bound<'_, PyAny>>; 4] = Default::default();
                let nkw = if kwnames.is_null() {
                    0
                } else {
                    ffi::PyTuple_Size(kwnames)
                };
                for i in 0..nkw {
                    let name = ffi::PyTuple_GetItem(kwnames, i);
                    let value = Bound::from_borrowed_ptr(py, *args.offset(i));
                    match keyword_index(py, name) {
                        Some(k) => values[k] = Some(value).filter(|v| !v.is_none()),
                        None => {
                            let name =
                                Bound::from_borrowed_ptr(py, name).cast_into::<PyString>()?;
                            return Err(PyTypeError::new_err(format!(
                                "__dlpack__() got an unexpected keyword argument '{}'",
                                name.to_cow()?
                            )));
                        }
                    }
                }
                let [stream, max_version, dl_device, copy] = values;
                let max_version = max_version
                    .map(|v| pair(&v, "max_version must be None or a tuple with two elements."))
                    .transpose()?;
                let dl_device = dl_device
                    .map(|v| pair(&v, "dl_device must be a tuple of two integers"))
                    .transpose()?;
                let copy = copy.map(|v| copy_flag(&v)).transpose()?;
                dlpack(&slf, stream.as_ref(), max_version, dl_device, copy)
            }
        },
    ));
    let result = outcome.unwrap_or_else(|_| {
        Err(PyRuntimeError::new_err(
            "internal error: panic in __dlpack__",
        ))
    });
    match result {
        Ok(obj) => obj.into_ptr(),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// Installs the fast `__dlpack__` on the Tensor type.
pub(crate) fn install(tensor_type: &Bound<'_, pyo3::types::PyType>) -> PyResult<()> {
    // The method table must outlive the type: leak one small struct, once.
    type FastCall = unsafe extern "C" fn(
        *mut ffi::PyObject,
        *const *mut ffi::PyObject,
        ffi::Py_ssize_t,
        *mut ffi::PyObject,
    ) -> *mut ffi::PyObject;
    // SAFETY: the table stores every method as a PyCFunction pointer; with
    // METH_FASTCALL | METH_KEYWORDS CPython calls it with this real signature.
    let meth = unsafe { std::mem::transmute::<FastCall, ffi::PyCFunction>(dlpack_fastcall) };
    let def = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: c"__dlpack__".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunction: meth },
        ml_flags: METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: c"__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n\
Exports the tensor as a DLPack capsule (the DLPack Python protocol)."
            .as_ptr(),
    }));
    let py = tensor_type.py();
    // SAFETY: the type object is live and `def` is 'static.
    let descr = unsafe { ffi::PyDescr_NewMethod(tensor_type.as_ptr().cast(), def) };
    // SAFETY: PyDescr_NewMethod returns a new reference or NULL with an error set.
    let descr = unsafe { Bound::from_owned_ptr_or_err(py, descr) }?;
    tensor_type.setattr("__dlpack__", descr)
}
