//! Every raw `PyCapsule` call of the extension: the DLPack capsule names,
//! one-shot tensor capsules (made with a destructor that frees an unconsumed
//! export), taking a tensor out of a capsule (renaming it `used_*`), static
//! capsules (the C exchange API table), and reading the pointer of a named
//! capsule. Also the one place a raw managed-tensor pointer becomes owned.
//!
//! Layer: a leaf; it knows nothing else of `python/`. `dlpack_export` makes
//! capsules with it, `dlpack_import` and `exchange_api` take them.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use dlpark::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use dlpark::{Managed, ManagedTensorBase};
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{CStr, c_void};

/// The name of the capsule holding a DLPack C exchange API table.
pub(crate) const EXCHANGE_API: &CStr = c"dlpack_exchange_api";

/// The two managed-tensor ABIs a DLPack capsule can carry.
#[derive(Clone, Copy)]
pub(crate) enum Abi {
    Versioned,
    Legacy,
}

impl Abi {
    fn name(self) -> &'static CStr {
        match self {
            Abi::Versioned => c"dltensor_versioned",
            Abi::Legacy => c"dltensor",
        }
    }

    /// The name a consumer gives the capsule when it takes the tensor.
    fn used_name(self) -> &'static CStr {
        match self {
            Abi::Versioned => c"used_dltensor_versioned",
            Abi::Legacy => c"used_dltensor",
        }
    }

    fn destructor(self) -> unsafe extern "C" fn(*mut ffi::PyObject) {
        match self {
            Abi::Versioned => versioned_destructor,
            Abi::Legacy => legacy_destructor,
        }
    }

    /// Frees a managed tensor of this ABI through its own deleter.
    ///
    /// # Safety
    /// `ptr` is a live managed tensor of this ABI that the caller owns.
    unsafe fn delete(self, ptr: *mut c_void) {
        // SAFETY: the caller's promise; drop_raw calls the deleter, if any, once.
        unsafe {
            match self {
                Abi::Versioned => DLManagedTensorVersioned::drop_raw(ptr.cast()),
                Abi::Legacy => DLManagedTensor::drop_raw(ptr.cast()),
            }
        }
    }
}

/// A tensor taken out of a DLPack capsule: the caller owns it now.
pub(crate) enum Taken {
    Versioned(Managed<DLManagedTensorVersioned>),
    Legacy(Managed<DLManagedTensor>),
}

/// Frees an unconsumed capsule's tensor. Runs inside the capsule's dealloc,
/// so the GIL is held; a pending exception (a capsule dropped while one
/// propagates) is saved around the deleter, which may run arbitrary code (a
/// producer's deleter dropping Python objects). With none pending there is
/// nothing to save: the common case, every `__dlpack__()` result dropped
/// unconsumed, skips the fetch and restore.
unsafe fn destroy(capsule: *mut ffi::PyObject, abi: Abi) {
    // SAFETY (whole body): `capsule` is a live capsule object passed by CPython.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, abi.used_name().as_ptr()) == 1 {
            return; // a consumer owns it now
        }
        if ffi::PyErr_Occurred().is_null() {
            delete_held(capsule, abi);
            // A foreign deleter that left an exception set must not leak it
            // out of a dealloc.
            if !ffi::PyErr_Occurred().is_null() {
                ffi::PyErr_WriteUnraisable(capsule);
            }
            return;
        }
        let (mut ty, mut value, mut tb) = (
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        #[allow(deprecated)]
        ffi::PyErr_Fetch(&mut ty, &mut value, &mut tb);
        delete_held(capsule, abi);
        #[allow(deprecated)]
        ffi::PyErr_Restore(ty, value, tb);
    }
}

/// Frees the tensor an unconsumed capsule holds (no exception pending).
///
/// # Safety
/// `capsule` is a live capsule of `abi`'s name that still owns its tensor.
unsafe fn delete_held(capsule: *mut ffi::PyObject, abi: Abi) {
    // SAFETY: the caller's promise.
    unsafe {
        let ptr = ffi::PyCapsule_GetPointer(capsule, abi.name().as_ptr());
        if ptr.is_null() {
            ffi::PyErr_WriteUnraisable(capsule);
        } else {
            abi.delete(ptr);
        }
    }
}

unsafe extern "C" fn versioned_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by CPython with the capsule being destroyed.
    unsafe { destroy(capsule, Abi::Versioned) }
}

unsafe extern "C" fn legacy_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: as above.
    unsafe { destroy(capsule, Abi::Legacy) }
}

/// A new capsule around `ptr`, or the Python error that prevented it.
fn new_capsule(
    py: Python<'_>,
    ptr: *mut c_void,
    name: &'static CStr,
    destructor: Option<ffi::PyCapsule_Destructor>,
) -> PyResult<Py<PyAny>> {
    // SAFETY: the name is a static C string; the caller vouches for ptr.
    let raw = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), destructor) };
    if raw.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: PyCapsule_New returned a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, raw) }.unbind())
}

/// Wraps an owned export (a managed tensor of `abi`) in a one-shot capsule,
/// whose destructor frees it unless a consumer renamed the capsule; frees it
/// at once if the capsule cannot be made.
pub(crate) fn wrap_export(py: Python<'_>, ptr: *mut c_void, abi: Abi) -> PyResult<Py<PyAny>> {
    new_capsule(py, ptr, abi.name(), Some(abi.destructor())).inspect_err(|_| {
        // SAFETY: no capsule took the export, so we still own it.
        unsafe { abi.delete(ptr) }
    })
}

/// A capsule named `name` around a pointer that lives forever (no destructor).
pub(crate) fn wrap_static(
    py: Python<'_>,
    ptr: *const c_void,
    name: &'static CStr,
) -> PyResult<Py<PyAny>> {
    new_capsule(py, ptr.cast_mut(), name, None)
}

/// Whether `ob` is exactly a capsule (of any name).
pub(crate) fn is_capsule(ob: &Bound<'_, PyAny>) -> bool {
    // SAFETY: a type check on a live object.
    unsafe { ffi::PyCapsule_CheckExact(ob.as_ptr()) == 1 }
}

/// The pointer in `ob` when it is a capsule named `name`.
pub(crate) fn pointer_named(ob: &Bound<'_, PyAny>, name: &CStr) -> Option<*mut c_void> {
    // SAFETY: IsValid accepts any object; GetPointer runs on a capsule of that name.
    unsafe {
        (ffi::PyCapsule_IsValid(ob.as_ptr(), name.as_ptr()) == 1)
            .then(|| ffi::PyCapsule_GetPointer(ob.as_ptr(), name.as_ptr()))
    }
}

/// Takes the tensor out of a DLPack capsule: checks its name, renames it
/// `used_*` and takes ownership. `None` when `ob` is no DLPack capsule (the
/// caller says what it expected); a `used_*` capsule is a `ValueError`, and
/// neither calls the deleter.
pub(crate) fn take(ob: &Bound<'_, PyAny>) -> PyResult<Option<Taken>> {
    let p = ob.as_ptr();
    for abi in [Abi::Versioned, Abi::Legacy] {
        // SAFETY: IsValid accepts any object; GetPointer and SetName run only
        // on a capsule with the expected name.
        let ptr = unsafe {
            if ffi::PyCapsule_IsValid(p, abi.used_name().as_ptr()) == 1 {
                return Err(PyValueError::new_err(
                    "this DLPack capsule was already consumed (a capsule can be used only once)",
                ));
            }
            if ffi::PyCapsule_IsValid(p, abi.name().as_ptr()) != 1 {
                continue;
            }
            let ptr = ffi::PyCapsule_GetPointer(p, abi.name().as_ptr());
            if ptr.is_null() {
                return Err(PyBufferError::new_err(
                    "DLPack capsule holds a NULL pointer",
                ));
            }
            if ffi::PyCapsule_SetName(p, abi.used_name().as_ptr()) != 0 {
                return Err(PyErr::fetch(ob.py()));
            }
            ptr
        };
        // SAFETY: ownership moved to us with the rename: a version mismatch
        // makes take_managed call the deleter before returning the error.
        return Ok(Some(unsafe {
            match abi {
                Abi::Versioned => Taken::Versioned(take_managed(ptr.cast())?),
                Abi::Legacy => Taken::Legacy(take_managed(ptr.cast())?),
            }
        }));
    }
    Ok(None)
}

/// Takes ownership of a raw managed tensor handed to dlbridge (from a
/// capsule or an exchange-API call); a malformed one is a `BufferError`.
///
/// # Safety
/// `ptr` is NULL or a managed tensor whose ownership the caller holds; a
/// version mismatch calls its deleter before the error returns.
pub(crate) unsafe fn take_managed<M: ManagedTensorBase>(ptr: *mut M) -> PyResult<Managed<M>> {
    // SAFETY: the caller's promise.
    unsafe { Managed::from_raw(ptr) }
        .map_err(|e| PyBufferError::new_err(format!("invalid DLPack tensor: {e}")))
}
