//! Hand-made `METH_FASTCALL | METH_KEYWORDS` entry points for the hottest
//! calls (`Tensor.__dlpack__`, `from_dlpack`).
//!
//! Under the Python 3.9 stable ABI, pyo3 takes arguments as a tuple and a
//! dict and converts every keyword name to UTF-8, which costs more than a
//! whole zero-copy exchange. `METH_FASTCALL | METH_KEYWORDS` functions get
//! a C array and the keyword names as a tuple (CPython has called them since
//! 3.7; the flag's value joined the limited API unchanged in 3.10, and
//! `PyDescr_NewMethod`/`PyCFunction_NewEx` are in the stable ABI). Names are
//! matched by pointer against interned strings first, so parsing costs
//! about what NumPy's does. An entry point implements [`FastCall`]; the
//! trampoline parses, catches panics and turns errors into exceptions.
//!
//! Layer: a leaf, beside `errors`; `dlpack_export` and `dlpack_import` use it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> creation -> convert,
//! arith, index, cuda -> methods -> mod.rs)

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyString, PyType};

/// `METH_FASTCALL` (see the module doc for why it is defined here).
const METH_FASTCALL: i32 = 0x0080;

/// The most keywords an entry point takes.
pub(crate) const MAX_KEYWORDS: usize = 4;

/// Arguments as the trampoline hands them over: `N` positional values and
/// one slot per keyword (None when absent or passed as `None`).
pub(crate) struct Args<'a, 'py> {
    pub positional: &'a [Borrowed<'a, 'py, PyAny>],
    pub keywords: [Option<Borrowed<'a, 'py, PyAny>>; MAX_KEYWORDS],
}

/// One fast entry point: its signature and its body.
pub(crate) trait FastCall {
    /// As Python shows it: `__dlpack__`, `from_dlpack`.
    const NAME: &'static str;
    /// The signature line and docstring (`__text_signature__` format).
    const DOC: &'static std::ffi::CStr;
    /// Positional-only parameters, all required.
    const POSITIONAL: &'static [&'static str];
    /// Keyword-only parameters, all optional.
    const KEYWORDS: &'static [&'static str];
    /// `KEYWORDS` as interned strings (one `PyOnceLock` per entry point).
    fn interned(py: Python<'_>) -> &'static [Py<PyString>];
    /// The body. `slf` is the instance for methods, NULL for functions.
    fn call(py: Python<'_>, slf: *mut ffi::PyObject, args: Args<'_, '_>) -> PyResult<Py<PyAny>>;
}

/// Interns `names` once into `cell` (for [`FastCall::interned`]).
pub(crate) fn intern_once(
    py: Python<'_>,
    cell: &'static PyOnceLock<Vec<Py<PyString>>>,
    names: &[&str],
) -> &'static [Py<PyString>] {
    cell.get_or_init(py, || {
        names
            .iter()
            .map(|n| PyString::intern(py, n).unbind())
            .collect()
    })
}

/// Which keyword of `F` the str `name` is.
fn keyword_index<F: FastCall>(py: Python<'_>, name: Borrowed<'_, '_, PyAny>) -> Option<usize> {
    let interned = F::interned(py);
    if let Some(i) = interned.iter().position(|s| s.as_ptr() == name.as_ptr()) {
        return Some(i);
    }
    let name = name.cast::<PyString>().ok()?;
    let name = name.to_cow().ok()?;
    F::KEYWORDS.iter().position(|k| *k == name)
}

/// Parses the vectorcall arguments of `F`.
///
/// # Safety
/// `args` holds `nargs` positional values followed by one value per name in
/// `kwnames` (a tuple of str, or NULL), all live for the call.
unsafe fn parse<'a, 'py, F: FastCall>(
    py: Python<'py>,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> PyResult<Args<'a, 'py>> {
    let name = F::NAME;
    let nargs = nargs as usize;
    let nkw = if kwnames.is_null() {
        0
    } else {
        // SAFETY: kwnames is a tuple (the caller's promise).
        unsafe { ffi::PyTuple_Size(kwnames) as usize }
    };
    let all: &'a [Borrowed<'a, 'py, PyAny>] = if nargs + nkw == 0 {
        &[]
    } else {
        // SAFETY: args holds nargs + nkw live, non-NULL values (the
        // caller's promise); Borrowed is a transparent pointer wrapper.
        unsafe { std::slice::from_raw_parts(args.cast(), nargs + nkw) }
    };
    let (positional, values) = all.split_at(nargs);
    let want = F::POSITIONAL.len();
    // SAFETY (both closures): kwnames is a tuple of nkw names (the caller's promise).
    let key =
        |i: usize| unsafe { Borrowed::from_ptr(py, ffi::PyTuple_GetItem(kwnames, i as isize)) };
    let as_keyword = |key: Borrowed<'_, 'py, PyAny>| -> PyResult<PyErr> {
        let key = key.cast::<PyString>()?.to_cow()?.into_owned();
        Ok(PyTypeError::new_err(
            if F::POSITIONAL.contains(&key.as_str()) {
                format!(
                    "{name}() got some positional-only arguments passed as keyword arguments: '{key}'"
                )
            } else {
                format!("{name}() got an unexpected keyword argument '{key}'")
            },
        ))
    };
    if nargs < want
        && let Some(i) = (0..nkw).find(|&i| keyword_index::<F>(py, key(i)).is_none())
    {
        return Err(as_keyword(key(i))?);
    }
    if nargs != want {
        return Err(PyTypeError::new_err(if want == 0 {
            format!(
                "{name}() takes only keyword arguments ({})",
                F::KEYWORDS.join(", ")
            )
        } else if nargs < want {
            format!(
                "{name}() missing {} required positional argument: '{}'",
                want - nargs,
                F::POSITIONAL[nargs]
            )
        } else {
            format!("{name}() takes {want} positional arguments but {nargs} were given")
        }));
    }
    let mut keywords = [None; MAX_KEYWORDS];
    for (i, value) in values.iter().enumerate() {
        match keyword_index::<F>(py, key(i)) {
            Some(k) => keywords[k] = Some(*value).filter(|v| !v.is_none()),
            None => return Err(as_keyword(key(i))?),
        }
    }
    Ok(Args {
        positional,
        keywords,
    })
}

/// The C entry point of `F`.
unsafe extern "C" fn trampoline<F: FastCall>(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls functions and method descriptors with the GIL held.
    let py = unsafe { Python::assume_attached() };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: CPython's vectorcall contract is parse's contract.
        let parsed = unsafe { parse::<F>(py, args, nargs, kwnames) }?;
        F::call(py, slf, parsed)
    }));
    let result = outcome.unwrap_or_else(|_| {
        Err(PyRuntimeError::new_err(format!(
            "internal error: panic in {}",
            F::NAME
        )))
    });
    match result {
        Ok(obj) => obj.into_ptr(),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// `F`'s method table entry, leaked: CPython keeps pointing at it.
fn method_def<F: FastCall>(name: &'static std::ffi::CStr) -> *mut ffi::PyMethodDef {
    type Raw = unsafe extern "C" fn(
        *mut ffi::PyObject,
        *const *mut ffi::PyObject,
        ffi::Py_ssize_t,
        *mut ffi::PyObject,
    ) -> *mut ffi::PyObject;
    // SAFETY: the table stores every function as a PyCFunction pointer; with
    // METH_FASTCALL | METH_KEYWORDS CPython calls it with this real signature.
    let meth = unsafe { std::mem::transmute::<Raw, ffi::PyCFunction>(trampoline::<F>) };
    Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: name.as_ptr(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunction: meth },
        ml_flags: METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: F::DOC.as_ptr(),
    }))
}

/// Installs `F` as the method `name` of `ty`.
pub(crate) fn install_method<F: FastCall>(
    ty: &Bound<'_, PyType>,
    name: &'static std::ffi::CStr,
) -> PyResult<()> {
    let def = method_def::<F>(name);
    // SAFETY: the type object is live and `def` is 'static.
    let descr = unsafe { ffi::PyDescr_NewMethod(ty.as_ptr().cast(), def) };
    // SAFETY: PyDescr_NewMethod returns a new reference or NULL with an error set.
    let descr = unsafe { Bound::from_owned_ptr_or_err(ty.py(), descr) }?;
    ty.setattr(name.to_str().expect("ASCII name"), descr)
}

/// Adds `F` as the function `name` of module `m`.
pub(crate) fn add_function<F: FastCall>(
    m: &Bound<'_, PyModule>,
    name: &'static std::ffi::CStr,
) -> PyResult<()> {
    let def = method_def::<F>(name);
    let module_name = m.name()?;
    // SAFETY: `def` is 'static; the module and its name are live.
    let func = unsafe { ffi::PyCFunction_NewEx(def, std::ptr::null_mut(), module_name.as_ptr()) };
    // SAFETY: PyCFunction_NewEx returns a new reference or NULL with an error set.
    let func = unsafe { Bound::from_owned_ptr_or_err(m.py(), func) }?;
    m.add(name.to_str().expect("ASCII name"), func)
}
