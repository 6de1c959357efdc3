//! The DLPack C exchange API (DLPack 1.3): exchange with PyTorch and other
//! frameworks through a table of C functions instead of the Python-level
//! `__dlpack__` protocol.
//!
//! - Producer: `dlbridge.Tensor.__dlpack_c_exchange_api__` is a capsule named
//!   `dlpack_exchange_api` pointing to [`API`], a static table.
//! - Consumer: `from_dlpack(x)` looks the table up on `type(x)` once per
//!   type (the 1.3 capsule, or the older integer `__c_dlpack_exchange_api__`),
//!   caches the answer, and imports through it; types without one use
//!   `__dlpack__`.
//!
//! None of the table's functions synchronise streams: the consumer asks the
//! producer for its current work stream and orders its own work after it.

use super::errors::IntoPyResult;
use super::tensor::PyTensor;
use crate::backend::Accelerator as _;
use crate::dlpack::{ExportOptions, borrowed_view, export_versioned, import::import_with};
use crate::{DType, Device, Tensor};
use dlpark::ffi::{
    DLDeviceType, DLManagedTensorVersioned, DLPackExchangeAPI, DLPackExchangeAPIHeader,
    DLPackVersion, DLTensor,
};
use dlpark::{DlpackFlags, Managed};
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyType;
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

const CAPSULE_NAME: &CStr = c"dlpack_exchange_api";

/// Imports that went through a producer's table, and exports made through
/// dlbridge's own (read by the tests to prove which path ran).
static IMPORTS: AtomicU64 = AtomicU64::new(0);
static EXPORTS: AtomicU64 = AtomicU64::new(0);
/// Exports through the Python-level `Tensor.__dlpack__`, for comparison.
pub(crate) static PROTOCOL_EXPORTS: AtomicU64 = AtomicU64::new(0);

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

/// `Tensor.__dlpack_c_exchange_api__`: the capsule pointing at [`API`].
pub(crate) fn capsule(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let ptr = &API.0 as *const DLPackExchangeAPI as *mut c_void;
    // SAFETY: the pointer and the name are 'static; no destructor is needed.
    let raw = unsafe { ffi::PyCapsule_New(ptr, CAPSULE_NAME.as_ptr(), None) };
    if raw.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: PyCapsule_New returned a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, raw) }.unbind())
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
        let managed = unsafe { Managed::from_raw(tensor) }
            .map_err(|e| PyBufferError::new_err(format!("invalid DLPack tensor: {e}")))?;
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

// ----- consumer -----

/// Per producer type: its table, or `None` (use `__dlpack__`). The type is
/// kept alive so its address cannot be reused by another type.
type TypeCache = HashMap<usize, (Py<PyType>, Option<usize>)>;
static CACHE: Mutex<Option<TypeCache>> = Mutex::new(None);

/// The exchange table of `ty`, looked up once per type.
fn table_of(ty: &Bound<'_, PyType>) -> Option<&'static DLPackExchangeAPI> {
    let key = ty.as_ptr() as usize;
    let cached = CACHE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .get(&key)
        .map(|(_, api)| *api);
    let found = match cached {
        Some(api) => api,
        None => {
            // Looked up without the lock held: the attribute lookup runs
            // Python code, which may switch threads, and another thread
            // waiting on the lock would hold the GIL this one needs.
            let api = discover(ty);
            CACHE
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(HashMap::new)
                .entry(key)
                .or_insert_with(|| (ty.clone().unbind(), api));
            api
        }
    };
    // SAFETY: discover only accepts tables that producers keep for the
    // life of their type (the API requires static tables).
    found.map(|p| unsafe { &*(p as *const DLPackExchangeAPI) })
}

/// Reads the table pointer from the 1.3 capsule or the older integer form,
/// and walks `prev_api` to a major version 1 table.
fn discover(ty: &Bound<'_, PyType>) -> Option<usize> {
    let py = ty.py();
    let from_capsule = ty
        .getattr(pyo3::intern!(py, "__dlpack_c_exchange_api__"))
        .ok()
        .and_then(|cap| {
            // SAFETY: IsValid accepts any object; GetPointer runs on a capsule of that name.
            unsafe {
                (ffi::PyCapsule_IsValid(cap.as_ptr(), CAPSULE_NAME.as_ptr()) == 1).then(|| {
                    ffi::PyCapsule_GetPointer(cap.as_ptr(), CAPSULE_NAME.as_ptr()) as usize
                })
            }
        });
    let ptr = from_capsule.or_else(|| {
        ty.getattr(pyo3::intern!(py, "__c_dlpack_exchange_api__"))
            .ok()
            .and_then(|v| v.extract::<usize>().ok())
    });
    // Failed lookups leave no exception behind.
    let _ = PyErr::take(py);
    let mut header = ptr.filter(|&p| p != 0)? as *const DLPackExchangeAPIHeader;
    // SAFETY: the producer published a pointer to a live table whose first
    // member is the header; prev_api links older, equally static, tables.
    unsafe {
        while !header.is_null() && (*header).version.major > 1 {
            header = (*header).prev_api;
        }
        if header.is_null() || (*header).version.major != 1 {
            return None;
        }
        let api = &*(header as *const DLPackExchangeAPI);
        api.managed_tensor_from_py_object_no_sync?;
        Some(header as usize)
    }
}

/// Imports `ob` through its type's exchange table; `None` when its type has
/// none. Also reports whether the producer said it copied.
pub(crate) fn import(ob: &Bound<'_, PyAny>) -> Option<PyResult<(Tensor, bool)>> {
    let api = table_of(&ob.get_type())?;
    let export = api.managed_tensor_from_py_object_no_sync?;
    let py = ob.py();
    Some((|| {
        let mut out: *mut DLManagedTensorVersioned = std::ptr::null_mut();
        // SAFETY: the producer's function, called with the GIL and an object of its type.
        let rc = unsafe { export(ob.as_ptr().cast(), &mut out) };
        if rc != 0 || out.is_null() {
            return Err(PyErr::take(py).unwrap_or_else(|| {
                PyBufferError::new_err(
                    "the producer's DLPack exchange API failed without saying why",
                )
            }));
        }
        // SAFETY: the producer handed over ownership of a managed tensor.
        let managed = unsafe { Managed::from_raw(out) }
            .map_err(|e| PyBufferError::new_err(format!("invalid DLPack tensor: {e}")))?;
        let flags = managed.flags();
        // SAFETY: the descriptor is the producer's, readable until the deleter runs.
        let device = unsafe { managed.tensor() }.device;
        // The API does not synchronise: order dlbridge's stream after the
        // producer's current one.
        let on_cuda = device.device_type == DLDeviceType::CUDA
            || device.device_type == DLDeviceType::CUDAMANAGED;
        if on_cuda && let Some(stream_of) = api.current_work_stream {
            let mut stream: *mut c_void = std::ptr::null_mut();
            // SAFETY: the producer's function with a writable slot.
            if unsafe { stream_of(device.device_type, device.device_id, &mut stream) } != 0 {
                return Err(PyErr::take(py)
                    .unwrap_or_else(|| PyRuntimeError::new_err("current_work_stream failed")));
            }
            let dev = Device::from_dlpack(device).py()?;
            crate::cuda::Cuda
                .wait_for_producer(dev, stream as usize as i64)
                .py()?;
        }
        let ro = flags.contains(DlpackFlags::READ_ONLY);
        let tensor = import_with(managed, ro).py()?;
        IMPORTS.fetch_add(1, Ordering::Relaxed);
        Ok((tensor, flags.contains(DlpackFlags::IS_COPIED)))
    })())
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
