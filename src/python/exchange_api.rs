//! dlbridge's DLPack C exchange API table (DLPack 1.3): the producer side of
//! the exchange through a table of C functions instead of the Python-level
//! `__dlpack__` protocol. `dlbridge.Tensor.__dlpack_c_exchange_api__` is a
//! capsule named `dlpack_exchange_api` pointing to [`API`], a static table
//! (made in `dlpack_export.rs`); the consumer side, which imports through
//! other producers' tables, is in `dlpack_import.rs`. Also the counters that
//! tell the tests which exchange path ran.
//!
//! None of the table's functions synchronise streams: the consumer asks the
//! producer for its current work stream and orders its own work after it.
//!
//! Layer: above `capsule` and `tensor`; `dlpack_export` and `dlpack_import`
//! use it (the table, the counters).
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::capsule::take_managed;
use super::errors::IntoPyResult;
use super::tensor::PyTensor;
use crate::dlpack::{ExportOptions, borrowed_view, export_versioned, import::import_with};
use crate::{DType, Device, Tensor};
use dlpark::DlpackFlags;
use dlpark::ffi::{
    DLDeviceType, DLManagedTensorVersioned, DLPackExchangeAPI, DLPackExchangeAPIHeader,
    DLPackVersion, DLTensor,
};
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

/// Imports that went through a producer's table, and exports made through
/// dlbridge's own (read by the tests to prove which path ran).
pub(crate) static IMPORTS: AtomicU64 = AtomicU64::new(0);
static EXPORTS: AtomicU64 = AtomicU64::new(0);
/// Exports through the Python-level `Tensor.__dlpack__`, for comparison.
pub(crate) static PROTOCOL_EXPORTS: AtomicU64 = AtomicU64::new(0);

/// Counts one `__dlpack__` export. Callers hold the GIL, which orders
/// them, so a plain load and store will do: a locked add would cost a
/// tenth of the whole export.
pub(crate) fn count_protocol_export(_py: Python<'_>) {
    let n = PROTOCOL_EXPORTS.load(Ordering::Relaxed);
    PROTOCOL_EXPORTS.store(n + 1, Ordering::Relaxed);
}

/// The table is immutable; the wrapper only lets it live in a static.
struct Table(DLPackExchangeAPI);
// SAFETY: the table holds function pointers and a null `prev_api`, never written.
unsafe impl Sync for Table {}

static API: Table = Table(DLPackExchangeAPI {
    header: DLPackExchangeAPIHeader {
        version: DLPackVersion { major: 1, minor: 3 },
        prev_api: std::ptr::null_mut(),
    },
    managed_tensor_allocator: Some(allocator),
    managed_tensor_from_py_object_no_sync: Some(from_py_object),
    managed_tensor_to_py_object_no_sync: Some(to_py_object),
    dltensor_from_py_object_no_sync: Some(dltensor_from_py_object),
    current_work_stream: Some(current_work_stream),
});

/// dlbridge's table, for the capsule `Tensor.__dlpack_c_exchange_api__`.
pub(crate) fn table() -> *const DLPackExchangeAPI {
    &API.0
}

/// Runs `f` with the GIL, turning an error or a panic into a set Python
/// exception and -1. The API says consumers call with the GIL held; taking
/// it again is then nearly free, and a consumer that forgot gets a working
/// call rather than a crash.
fn with_python(f: impl FnOnce(Python<'_>) -> PyResult<()>) -> c_int {
    let run = std::panic::AssertUnwindSafe(|| {
        Python::attach(|py| {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(py)))
                .unwrap_or_else(|_| {
                    Err(PyRuntimeError::new_err("dlbridge: internal error (panic)"))
                });
            match result {
                Ok(()) => 0,
                Err(e) => {
                    e.restore(py);
                    -1
                }
            }
        })
    });
    std::panic::catch_unwind(run).unwrap_or(-1)
}

fn tensor_of<'py>(py: Python<'py>, py_object: *mut c_void) -> PyResult<Bound<'py, PyTensor>> {
    if py_object.is_null() {
        return Err(PyTypeError::new_err(
            "NULL object passed to dlbridge's exchange API",
        ));
    }
    // SAFETY: a non-NULL PyObject* the consumer holds a reference to.
    let ob = unsafe { Bound::from_borrowed_ptr(py, py_object.cast::<ffi::PyObject>()) };
    let t = ob
        .cast_into::<PyTensor>()
        .map_err(|e| PyTypeError::new_err(e.to_string()))?;
    if t.get().requires_grad() {
        return Err(PyBufferError::new_err(
            "Can't export tensors that require gradient, use tensor.detach()",
        ));
    }
    Ok(t)
}

unsafe extern "C" fn from_py_object(
    py_object: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
) -> c_int {
    with_python(|py| {
        if out.is_null() {
            return Err(PyTypeError::new_err("NULL out pointer"));
        }
        let t = tensor_of(py, py_object)?;
        let managed = export_versioned(&t.get().inner, ExportOptions::default()).py()?;
        // SAFETY: out is non-NULL and points to writable storage for one pointer.
        unsafe { *out = managed };
        EXPORTS.fetch_add(1, Ordering::Relaxed);
        Ok(())
    })
}

unsafe extern "C" fn dltensor_from_py_object(py_object: *mut c_void, out: *mut DLTensor) -> c_int {
    with_python(|py| {
        if out.is_null() {
            return Err(PyTypeError::new_err("NULL out pointer"));
        }
        let t = tensor_of(py, py_object)?;
        let this = t.get();
        // The shape and strides live in the tensor object, so the view stays
        // valid as long as the object does.
        let view = borrowed_view(&this.inner, &this.dl_dims).py()?;
        // SAFETY: out points to a DLTensor the caller allocated.
        unsafe { out.write(view) };
        Ok(())
    })
}

unsafe extern "C" fn to_py_object(
    tensor: *mut DLManagedTensorVersioned,
    out_py_object: *mut *mut c_void,
) -> c_int {
    with_python(|py| {
        if tensor.is_null() || out_py_object.is_null() {
            return Err(PyTypeError::new_err(
                "NULL pointer passed to dlbridge's exchange API",
            ));
        }
        // SAFETY: ownership of a valid managed tensor is handed to us (the
        // API says the call steals it); a version mismatch calls its deleter.
        let managed = unsafe { take_managed(tensor) }?;
        let ro = managed.flags().contains(DlpackFlags::READ_ONLY);
        let imported = import_with(managed, ro).py()?;
        let object = Py::new(py, PyTensor::new(imported))?;
        // SAFETY: out_py_object is non-NULL; the caller receives a new reference.
        unsafe { *out_py_object = object.into_ptr().cast() };
        Ok(())
    })
}

type SetError = unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char);

unsafe extern "C" fn allocator(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: Option<SetError>,
) -> c_int {
    let fail = |kind: &CStr, message: String| {
        if let Some(set) = set_error {
            let text = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
            // SAFETY: the consumer's callback, with its own context and two C strings.
            unsafe { set(error_ctx, kind.as_ptr(), text.as_ptr()) };
        }
        -1
    };
    let made = std::panic::catch_unwind(|| -> crate::Result<*mut DLManagedTensorVersioned> {
        if prototype.is_null() || out.is_null() {
            crate::bail!(InvalidValue, "NULL prototype or out pointer");
        }
        // SAFETY: a DLTensor the caller owns; only dtype, ndim, shape and device are read.
        let p = unsafe { &*prototype };
        if p.ndim < 0 || (p.ndim > 0 && p.shape.is_null()) {
            crate::bail!(
                InvalidValue,
                "prototype has ndim {} and shape {:?}",
                p.ndim,
                p.shape
            );
        }
        // SAFETY: shape holds ndim entries (checked non-NULL above when ndim > 0).
        let raw = unsafe { crate::raw::c_array(p.shape, p.ndim as usize) };
        let shape = raw
            .iter()
            .map(|&n| {
                usize::try_from(n).map_err(|_| crate::err!(InvalidValue, "negative size {n}"))
            })
            .collect::<crate::Result<Vec<usize>>>()?;
        let dtype = DType::from_dlpack(p.dtype)?;
        let device = Device::from_dlpack(p.device)?;
        let t = Tensor::empty(&shape, dtype, device)?;
        export_versioned(&t, ExportOptions::default())
    });
    match made {
        Ok(Ok(managed)) => {
            // SAFETY: out was checked non-NULL.
            unsafe { *out = managed };
            0
        }
        Ok(Err(e)) => fail(c"RuntimeError", e.to_string()),
        Err(_) => fail(c"RuntimeError", "dlbridge: internal error (panic)".into()),
    }
}

/// dlbridge does all its work on the legacy default stream: NULL.
unsafe extern "C" fn current_work_stream(
    _device_type: DLDeviceType,
    _device_id: i32,
    out_current_stream: *mut *mut c_void,
) -> c_int {
    if !out_current_stream.is_null() {
        // SAFETY: a writable pointer slot the caller provided.
        unsafe { *out_current_stream = std::ptr::null_mut() };
    }
    0
}

/// `(imports through producers' tables, exports through dlbridge's table,
/// exports through __dlpack__)`: the tests read these to prove which path ran.
#[pyfunction]
pub(crate) fn exchange_api_counts() -> (u64, u64, u64) {
    (
        IMPORTS.load(Ordering::Relaxed),
        EXPORTS.load(Ordering::Relaxed),
        PROTOCOL_EXPORTS.load(Ordering::Relaxed),
    )
}
