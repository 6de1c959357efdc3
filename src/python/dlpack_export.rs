//! The DLPack producer: `Tensor.__dlpack__` (the DLPack Python protocol),
//! `__dlpack_device__`, and the capsule of dlbridge's C exchange API table
//! (`__dlpack_c_exchange_api__`).
//!
//! `__dlpack__` makes a fresh managed tensor per call and wraps it in a
//! one-shot capsule (see `capsule.rs`), whose destructor frees it only if no
//! consumer renamed it `used_*`. It is the hottest entry point of the
//! library, so it is a hand-made fast entry point (`fastcall.rs`), and the
//! `max_version` tuple consumers pass is read once per tuple object.
//!
//! Layer: above `fastcall`, `capsule`, `tensor` and `exchange_api` (the
//! table and the export counters); `methods` and `mod.rs` (which installs
//! `__dlpack__`) use it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::capsule::{self, Abi};
use super::errors::{IntoPyResult, type_name};
use super::exchange_api;
use super::fastcall::{self, Args, FastCall, LastRead};
use super::tensor::PyTensor;
use crate::backend::Accelerator as _;
use crate::dlpack::{ExportOptions, export::VERSION, export_legacy, export_versioned};
use crate::{Device, Tensor};
use dlpark::ffi::DLPackVersion;
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use std::ffi::CStr;

/// `__dlpack__(*, stream, max_version, dl_device, copy)` per the DLPack
/// Python spec, for `Tensor` and the pyo3 layer's `TensorOut`: the keywords
/// as given (`None` for absent ones), checked here.
pub(crate) fn dlpack_keywords(
    py: Python<'_>,
    t: &Tensor,
    requires_grad: bool,
    [stream, max_version, dl_device, copy]: [Option<Borrowed<'_, '_, PyAny>>; 4],
) -> PyResult<Py<PyAny>> {
    // An explicit `None` arrives as `None` from both callers (fastcall's
    // keyword slots and pyo3's `Option` arguments).
    let max_version = max_version.map(read_max_version).transpose()?;
    let dl_device = dl_device
        .map(|v| pair(v, "dl_device must be a tuple of two integers"))
        .transpose()?;
    let copy = copy.map(copy_flag).transpose()?;
    dlpack(py, t, requires_grad, stream, max_version, dl_device, copy)
}

fn dlpack(
    py: Python<'_>,
    t: &Tensor,
    requires_grad: bool,
    stream: Option<Borrowed<'_, '_, PyAny>>,
    max_version: Option<(u32, u32)>,
    dl_device: Option<(i32, i32)>,
    copy: Option<bool>,
) -> PyResult<Py<PyAny>> {
    if requires_grad {
        return Err(PyBufferError::new_err(
            "Can't export tensors that require gradient, use tensor.detach()",
        ));
    }
    let stream: Option<i64> = match stream {
        Some(s) if !s.is_none() => Some(s.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "stream must be None or an int, not {}",
                type_name(&s)
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
    exchange_api::count_protocol_export(py);
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
                refuse_undescribable: false,
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

// ----- the fast entry point -----

/// A two-integer tuple keyword (`max_version`, `dl_device`), refused with
/// NumPy's exception class (`TypeError`) when it is anything else.
fn pair<T: TryFrom<i64>>(v: Borrowed<'_, '_, PyAny>, wrong: &str) -> PyResult<(T, T)> {
    let refuse = || PyTypeError::new_err(wrong.to_owned());
    let t = v
        .cast::<PyTuple>()
        .ok()
        .filter(|t| t.len() == 2)
        .ok_or_else(refuse)?;
    let item = |i| -> PyResult<T> {
        let n: i64 = t.get_borrowed_item(i)?.extract()?;
        T::try_from(n).map_err(|_| {
            pyo3::exceptions::PyOverflowError::new_err(format!("{n} is out of range in {wrong}"))
        })
    };
    Ok((item(0)?, item(1)?))
}

/// The last `max_version` tuple read and the pair it held (see [`LastRead`]).
static LAST_MAX_VERSION: LastRead<(u32, u32)> = LastRead::new((0, 0));

/// `max_version=`: a pair of non-negative integers. A tuple of two exact
/// ints is remembered (reading one again has no effect to skip, and
/// releasing one runs no Python code).
fn read_max_version(v: Borrowed<'_, '_, PyAny>) -> PyResult<(u32, u32)> {
    if let Some(parsed) = LAST_MAX_VERSION.get(v.py(), v.as_ptr()) {
        return Ok(parsed);
    }
    let parsed = pair(v, "max_version must be None or a tuple with two elements.")?;
    let exact_ints = v.cast_exact::<PyTuple>().is_ok_and(|t| {
        t.iter_borrowed()
            .all(|item| item.is_exact_instance_of::<pyo3::types::PyInt>())
    });
    if exact_ints {
        LAST_MAX_VERSION.remember(v, parsed);
    }
    Ok(parsed)
}

/// `copy=`: any object's truth, but a string is refused, as NumPy does
/// (`copy="no"` would otherwise read as true).
fn copy_flag(v: Borrowed<'_, '_, PyAny>) -> PyResult<bool> {
    if v.is_instance_of::<PyString>() {
        return Err(PyValueError::new_err(
            "strings are not allowed for 'copy' keyword. Use True/False/None instead.",
        ));
    }
    v.is_truthy()
}

/// `Tensor.__dlpack__` as a fast entry point (see `fastcall.rs`).
pub(crate) struct DlpackMethod;

impl FastCall for DlpackMethod {
    const NAME: &'static str = "__dlpack__";
    const DOC: &'static CStr = c"__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n\
Exports the tensor as a DLPack capsule (the DLPack Python protocol).";
    const POSITIONAL: &'static [&'static str] = &[];
    const KEYWORDS: &'static [&'static str] = &["stream", "max_version", "dl_device", "copy"];

    fastcall::cells!();

    fn call(py: Python<'_>, slf: *mut ffi::PyObject, args: Args<'_, '_>) -> PyResult<Py<PyAny>> {
        // SAFETY: the method descriptor checked that `slf` is a live Tensor.
        let slf = unsafe { Borrowed::from_ptr(py, slf).cast_unchecked::<PyTensor>() };
        let this = slf.get();
        dlpack_keywords(py, &this.inner, this.requires_grad(), args.keywords)
    }
}
