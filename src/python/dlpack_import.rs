//! The DLPack consumer: the import of any DLPack producer or capsule
//! (`try_import`). A producer whose type publishes a C exchange API table
//! is imported through it (with the CUDA stream handshake the table offers);
//! any other is asked for a capsule with `__dlpack__` (the newest keywords
//! first, fewer on `TypeError`; `stream=1` for CUDA producers), which is
//! consumed (see `capsule.rs`); the foreign tensor is validated by the core
//! before it is trusted.
//!
//! Layer: above `capsule`, `tensor` and `exchange_api` (its import counter);
//! only `arg` (the one routine for Python arguments) uses it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::capsule::{self, Taken};
use super::errors::{IntoPyResult, type_name};
use super::exchange_api;
use crate::backend::Accelerator as _;
use crate::dlpack::{export::VERSION, import::import_with};
use crate::{Device, Tensor};
use dlpark::DlpackFlags;
use dlpark::ffi::{
    DLDeviceType, DLManagedTensorVersioned, DLPackExchangeAPI, DLPackExchangeAPIHeader,
};
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

/// What `from_dlpack` says of an object that is neither a producer nor a DLPack capsule.
pub(crate) fn not_a_producer(ob: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "from_dlpack expects an object with __dlpack__ and __dlpack_device__, or a DLPack capsule; got {}",
        type_name(ob)
    ))
}

static REQUEST: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
static CUDA_REQUEST: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
static CUDA_STREAM_ONLY: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// The keyword arguments of one `__dlpack__` request, built once (producers
/// only read them): `max_version=(1, 3)` when `versioned`, plus `stream=1`
/// for CUDA producers, since dlbridge works on the legacy default stream and
/// the producer must order its pending work before it. `None`: no keywords.
fn request_kwargs(
    py: Python<'_>,
    cuda: bool,
    versioned: bool,
) -> PyResult<Option<&Bound<'_, PyDict>>> {
    let cell = match (cuda, versioned) {
        (false, false) => return Ok(None),
        (false, true) => &REQUEST,
        (true, true) => &CUDA_REQUEST,
        (true, false) => &CUDA_STREAM_ONLY,
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
    Ok(Some(d.bind(py)))
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

/// Calls the producer's `__dlpack__` method as the array API standard's
/// consumers do: with the newest keywords first, then, on `TypeError` (a
/// producer predating them, such as ONNX Runtime's `OrtValue` or Warp's
/// arrays, which take no `max_version`), with fewer, down to a bare
/// `__dlpack__()`. Any other exception is the producer's own and goes back
/// unchanged.
fn request_capsule<'py>(
    ob: &Bound<'py, PyAny>,
    method: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = ob.py();
    let cuda = is_cuda_producer(ob)?;
    let mut err = match method.call((), request_kwargs(py, cuda, true)?) {
        Ok(capsule) => return Ok(capsule),
        Err(e) if e.is_instance_of::<PyTypeError>(py) => e,
        Err(e) => return Err(e),
    };
    // Without max_version: stream only (CUDA), then bare.
    let fallbacks = if cuda {
        vec![request_kwargs(py, true, false)?, None]
    } else {
        vec![None]
    };
    for kwargs in fallbacks {
        match method.call((), kwargs) {
            Ok(capsule) => return Ok(capsule),
            Err(e) if e.is_instance_of::<PyTypeError>(py) => err = e,
            Err(e) => return Err(e),
        }
    }
    Err(err)
}

/// Imports `ob` as a tensor sharing its memory when it is a DLPack producer
/// (its type's exchange table, else its `__dlpack__`) or a DLPack capsule;
/// `None` when it is neither. Also reports whether the producer said it
/// copied.
pub(crate) fn try_import(ob: &Bound<'_, PyAny>) -> PyResult<Option<(Tensor, bool)>> {
    let capsule = if capsule::is_capsule(ob) {
        ob.clone()
    } else if let Some(imported) = import_through_table(ob) {
        return imported.map(Some);
    } else {
        let Ok(method) = ob.getattr(pyo3::intern!(ob.py(), "__dlpack__")) else {
            return Ok(None);
        };
        request_capsule(ob, &method)?
    };
    let taken = capsule::take(&capsule)?.ok_or_else(|| not_a_producer(&capsule))?;
    Ok(Some(match taken {
        Taken::Versioned(m) => {
            let flags = m.flags();
            let copied = flags.contains(DlpackFlags::IS_COPIED);
            let ro = flags.contains(DlpackFlags::READ_ONLY) || is_immutable_producer(ob);
            (import_with(m, ro).py()?, copied)
        }
        // Legacy capsules cannot carry READ_ONLY, so only they need the producer check.
        Taken::Legacy(m) => (import_with(m, is_immutable_producer(ob)).py()?, false),
    }))
}

/// What torch's `__dlpack__` (and so NumPy's `from_dlpack`) says of a tensor
/// that requires grad; dlbridge's own exports say the same.
pub(crate) fn requires_grad_refused() -> PyErr {
    PyBufferError::new_err("Can't export tensors that require gradient, use tensor.detach()")
}

// ----- through the producer's C exchange API table -----

/// What dlbridge knows of a producer type: its exchange table, if any, and
/// whether its instances have a `requires_grad` attribute (torch's tensors).
#[derive(Clone, Copy)]
struct Producer {
    table: Option<usize>,
    has_grad: bool,
}

/// Per producer type: what `discover` found. The type is kept alive so its
/// address cannot be reused by another type.
type TypeCache = HashMap<usize, (Py<PyType>, Producer)>;
static CACHE: Mutex<Option<TypeCache>> = Mutex::new(None);

/// The exchange table of `ty` and whether its instances may require grad,
/// looked up once per type.
fn table_of(ty: &Bound<'_, PyType>) -> Option<(&'static DLPackExchangeAPI, bool)> {
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
    let table = found
        .table
        .map(|p| unsafe { &*(p as *const DLPackExchangeAPI) });
    table.map(|t| (t, found.has_grad))
}

/// Reads the table pointer from the 1.3 capsule or the older integer form,
/// and walks `prev_api` to a major version 1 table; and whether the type
/// has `requires_grad` (torch's tensors: their table exports them even so,
/// while their `__dlpack__` refuses).
fn discover(ty: &Bound<'_, PyType>) -> Producer {
    let has_grad = ty
        .hasattr(pyo3::intern!(ty.py(), "requires_grad"))
        .unwrap_or(false);
    let _ = PyErr::take(ty.py());
    Producer {
        table: discover_table(ty),
        has_grad,
    }
}

fn discover_table(ty: &Bound<'_, PyType>) -> Option<usize> {
    let py = ty.py();
    let from_capsule = ty
        .getattr(pyo3::intern!(py, "__dlpack_c_exchange_api__"))
        .ok()
        .and_then(|cap| capsule::pointer_named(&cap, capsule::EXCHANGE_API))
        .map(|p| p as usize);
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
fn import_through_table(ob: &Bound<'_, PyAny>) -> Option<PyResult<(Tensor, bool)>> {
    let (api, has_grad) = table_of(&ob.get_type())?;
    let export = api.managed_tensor_from_py_object_no_sync?;
    let py = ob.py();
    Some((|| {
        // Torch's table exports a tensor that requires grad, which its
        // `__dlpack__` refuses: refuse it as that path would.
        if has_grad
            && ob
                .getattr(pyo3::intern!(py, "requires_grad"))?
                .is_truthy()?
        {
            return Err(requires_grad_refused());
        }
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
        let managed = unsafe { capsule::take_managed(out) }?;
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
        exchange_api::IMPORTS.fetch_add(1, Ordering::Relaxed);
        Ok((tensor, flags.contains(DlpackFlags::IS_COPIED)))
    })())
}
