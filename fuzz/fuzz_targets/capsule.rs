//! Fuzzes foreign-tensor validation and import through a DLPack capsule:
//! the same fuzzed producer tensor as the `import` target (and the same
//! corpus), wrapped in a `PyCapsule` the way a Python producer wraps it,
//! and handed to the real `dlbridge._core.from_dlpack` in an embedded
//! interpreter.
//!
//! Whatever the tensor holds, `from_dlpack` must return a tensor or raise an
//! ordinary Python exception (never panic, never a `SystemError`), a
//! consumed capsule must refuse a second use, and the producer's deleter
//! must run exactly once: by dlbridge after its last owner is gone (the
//! tensor, a re-export of it, a second import of that), or by the capsule's
//! own destructor when dlbridge refused it. The deleter poisons the tensor
//! (see `fuzz/src/lib.rs`), so dlbridge touching it afterwards is an ASan
//! report, and dlbridge's live-storage count must return to its start.
//! LeakSanitizer is off for this target: it cannot tell dlbridge's leaks
//! from the embedded interpreter's start-up allocations.
//!
//! Bytes after the tensor pick the options: bit 0 names the capsule as
//! already used, bit 1 gives it a foreign name, bit 2 re-exports the tensor
//! (versioned or, with bit 3, legacy) and imports that again.
#![no_main]

use dlbridge_fuzz::{Foreign, Reader, deletes, unpoison};
use dlpark::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use libfuzzer_sys::fuzz_target;
use pyo3::exceptions::{PyException, PySystemError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::ffi::{CStr, c_void};

/// The real extension module (what python/'s extension crate builds),
/// made once in the embedded interpreter.
static CORE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    dlbridge::python::package::init(m)
}

fn core(py: Python<'_>) -> &Bound<'_, PyModule> {
    CORE.get_or_init(py, || pyo3::wrap_pymodule!(_core)(py))
        .bind(py)
}

/// A producer's capsule destructor, as the DLPack spec asks: free the
/// tensor unless a consumer renamed the capsule (and so took it).
unsafe extern "C" fn producer_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: CPython passes the capsule being destroyed; the pointer is
    // read only under the name it was stored with.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, c"dltensor_versioned".as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, c"dltensor_versioned".as_ptr())
                .cast::<DLManagedTensorVersioned>();
            ((*m).deleter.unwrap())(m);
        } else if ffi::PyCapsule_IsValid(capsule, c"dltensor".as_ptr()) == 1 {
            let m =
                ffi::PyCapsule_GetPointer(capsule, c"dltensor".as_ptr()).cast::<DLManagedTensor>();
            ((*m).deleter.unwrap())(m);
        }
    }
}

/// Fails the run on a panic that reached Python, or a C-API misuse.
fn assert_ordinary(py: Python<'_>, e: &PyErr) {
    assert!(
        e.is_instance_of::<PyException>(py) && !e.is_instance_of::<PySystemError>(py),
        "from_dlpack raised {e} ({})",
        e.get_type(py)
    );
}

/// One import of the capsule-wrapped tensor, and whatever follows it; every
/// Python object it makes is gone when it returns.
fn exchange(
    py: Python<'_>,
    ptr: *mut c_void,
    name: &'static CStr,
    consumable: bool,
    (reexport, reexport_legacy): (bool, bool),
) {
    let from_dlpack = core(py).getattr("from_dlpack").unwrap();
    // SAFETY: ptr is a live managed tensor (boxed above, outliving the
    // capsule); the name is a static C string.
    let raw = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), Some(producer_destructor)) };
    // SAFETY: PyCapsule_New returned a new reference (or NULL: unwrap fails).
    let capsule = unsafe { Bound::from_owned_ptr_or_err(py, raw) }.unwrap();

    match from_dlpack.call1((&capsule,)) {
        Ok(t) => {
            assert!(consumable, "imported a capsule named {name:?}");
            t.getattr("shape").unwrap();
            // A consumed capsule is never taken twice.
            let again = from_dlpack.call1((&capsule,)).unwrap_err();
            assert!(
                again.is_instance_of::<PyValueError>(py),
                "second use: {again}"
            );
            drop(capsule);
            assert_eq!(
                deletes(),
                0,
                "deleter ran while dlbridge still owns the tensor"
            );
            if reexport {
                let kwargs = pyo3::types::PyDict::new(py);
                if !reexport_legacy {
                    kwargs.set_item("max_version", (1, 3)).unwrap();
                }
                match t.call_method("__dlpack__", (), Some(&kwargs)) {
                    Ok(out) => {
                        let back = from_dlpack.call1((out,));
                        drop(t);
                        match back {
                            Ok(back) => {
                                assert_eq!(deletes(), 0, "deleter ran under a re-import");
                                drop(back);
                            }
                            Err(e) => assert_ordinary(py, &e),
                        }
                    }
                    Err(e) => assert_ordinary(py, &e),
                }
            }
        }
        Err(e) => {
            assert_ordinary(py, &e);
            if !consumable {
                drop(capsule);
                assert_eq!(deletes(), 0, "dlbridge freed a capsule it must not touch");
            }
        }
    }
}

fuzz_target!(init: Python::initialize(), |input: &[u8]| {
    let mut r = Reader(input);
    let foreign = Foreign::read(&mut r);
    let options = r.u8();
    let (used_name, foreign_name) = (options & 1 == 1, options & 2 == 2);
    let (reexport, reexport_legacy) = (options & 4 == 4, options & 8 == 8);

    // The managed tensor lives here, on the producer's side, until the end.
    let mut versioned = Box::new(foreign.versioned());
    let mut legacy = Box::new(foreign.legacy());
    let (ptr, name): (*mut c_void, &CStr) = match (foreign.legacy, used_name, foreign_name) {
        (_, _, true) => (std::ptr::from_mut(&mut *versioned).cast(), c"not_a_dltensor"),
        (false, true, _) => (std::ptr::from_mut(&mut *versioned).cast(), c"used_dltensor_versioned"),
        (false, false, _) => (std::ptr::from_mut(&mut *versioned).cast(), c"dltensor_versioned"),
        (true, true, _) => (std::ptr::from_mut(&mut *legacy).cast(), c"used_dltensor"),
        (true, false, _) => (std::ptr::from_mut(&mut *legacy).cast(), c"dltensor"),
    };
    let consumable = !used_name && !foreign_name;

    Python::attach(|py| {
        // dlbridge's count of live storages must come back to where it was:
        // with the deleter count, this stands in for LeakSanitizer, which
        // cannot tell dlbridge's leaks from the embedded Python's.
        let live_storages = core(py).getattr("live_storages").unwrap();
        let live = || live_storages.call0().unwrap().extract::<isize>().unwrap();
        let before = live();
        exchange(py, ptr, name, consumable, (reexport, reexport_legacy));
        assert_eq!(live(), before, "a dlbridge storage outlived every owner");
    });
    let deletes = deletes();
    if consumable {
        assert_eq!(deletes, 1, "deleter ran {deletes} times");
    }
    unpoison(); // the deleter poisoned the tensor; it is freed here
    drop((versioned, legacy));
});
