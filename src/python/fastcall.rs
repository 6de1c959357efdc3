//! Hand-made `METH_FASTCALL | METH_KEYWORDS` entry points for the hottest
//! calls (`Tensor.__dlpack__`, `from_dlpack`).
//!
//! Under the Python 3.9 stable ABI, pyo3 takes arguments as a tuple and a
//! dict and converts every keyword name to UTF-8, which costs more than a
//! whole zero-copy exchange. `METH_FASTCALL | METH_KEYWORDS` functions get
//! a C array and the keyword names as a tuple (CPython has called them since
//! 3.7; the flag's value joined the limited API unchanged in 3.10, and
//! `PyDescr_NewMethod`/`PyCFunction_NewEx` are in the stable ABI). The tuple
//! of keyword names a call site passes is remembered by identity (callers
//! pass one constant tuple), and new names are matched by pointer against
//! interned strings first, so parsing costs less than NumPy's. An entry
//! point implements [`FastCall`]; the trampoline parses, catches panics and
//! turns errors into exceptions.
//!
//! Layer: a leaf, beside `errors`; `dlpack_export` and `dlpack_import` use it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyString, PyTuple, PyType};
use std::cell::UnsafeCell;

/// `METH_FASTCALL` (see the module doc for why it is defined here).
const METH_FASTCALL: i32 = 0x0080;

/// The most keywords an entry point takes.
pub(crate) const MAX_KEYWORDS: usize = 4;

/// The most positional parameters an entry point takes.
pub(crate) const MAX_POSITIONAL: usize = 2;

/// Where the trampoline keeps the positional values of a call that named
/// them (see [`FastCall::NAMED`]).
type Named = [*mut ffi::PyObject; MAX_POSITIONAL];

/// Which keyword each name of a call's keyword-name tuple is.
pub(crate) type KeywordSlots = [u8; MAX_KEYWORDS];

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
    /// Positional parameters, all required (at most [`MAX_POSITIONAL`]).
    const POSITIONAL: &'static [&'static str];
    /// Whether a call may pass the positional parameters by name, as
    /// PyTorch's functions take `input=` and `other=`; else they are
    /// positional-only.
    const NAMED: bool = false;
    /// Keyword-only parameters, all optional.
    const KEYWORDS: &'static [&'static str];
    /// `KEYWORDS` as interned strings (one `PyOnceLock` per entry point).
    fn interned(py: Python<'_>) -> &'static [Py<PyString>];
    /// The keyword names last passed to this entry point and which keyword
    /// each one is (one cell per entry point, so two busy call sites on
    /// different entry points do not evict each other).
    fn last_names() -> &'static LastRead<KeywordSlots>;
    /// The body. `slf` is the instance for methods, NULL for functions.
    fn call(py: Python<'_>, slf: *mut ffi::PyObject, args: Args<'_, '_>) -> PyResult<Py<PyAny>>;
}

/// The two cells a [`FastCall`] impl owns (`interned`, `last_names`),
/// written once and expanded in each impl: each needs statics of its own,
/// and a static in a generic function would be one for all of them.
macro_rules! cells {
    () => {
        fn interned(py: ::pyo3::Python<'_>) -> &'static [::pyo3::Py<::pyo3::types::PyString>] {
            static NAMES: ::pyo3::sync::PyOnceLock<Vec<::pyo3::Py<::pyo3::types::PyString>>> =
                ::pyo3::sync::PyOnceLock::new();
            $crate::python::fastcall::intern_once(py, &NAMES, Self::KEYWORDS)
        }

        fn last_names()
        -> &'static $crate::python::fastcall::LastRead<$crate::python::fastcall::KeywordSlots> {
            static LAST: $crate::python::fastcall::LastRead<
                $crate::python::fastcall::KeywordSlots,
            > = $crate::python::fastcall::LastRead::new(
                [0; $crate::python::fastcall::MAX_KEYWORDS],
            );
            &LAST
        }
    };
}
pub(crate) use cells;

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

/// The last object a fast entry point read and what it read from it,
/// found again by identity. Callers pass the same constant tuple on every
/// call (the keyword names NumPy's `from_dlpack` passes, the `max_version`
/// tuple of every consumer), and a tuple cannot change, so a hit skips
/// reading it. The object is kept alive, so its address cannot be reused.
///
/// A static rather than a thread-local (whose lookup cost more than the
/// hit saves): every access takes a `Python` token, and this abi3
/// extension cannot load in a free-threaded interpreter, nor pyo3's
/// modules in a subinterpreter, so the GIL makes each access exclusive.
/// Reads copy the value out and a write replaces it, releasing the
/// previous object only once the cell is whole again, so no reference into
/// the cell lives while Python code (which could re-enter) runs. Callers
/// remember only tuples of exact str or int, whose release runs no Python
/// code and whose reading has no side effects to skip.
pub(crate) struct LastRead<V> {
    /// The object's address and the value.
    seen: UnsafeCell<(usize, V)>,
    kept: UnsafeCell<Option<Py<PyAny>>>,
}

// SAFETY: only touched with the GIL held, which serializes every access
// (see the type's doc); Py is Send and V is Copy + Send.
unsafe impl<V: Copy + Send> Sync for LastRead<V> {}

impl<V: Copy> LastRead<V> {
    /// Empty: address 0 is no object's.
    pub(crate) const fn new(empty: V) -> Self {
        LastRead {
            seen: UnsafeCell::new((0, empty)),
            kept: UnsafeCell::new(None),
        }
    }

    /// What was read from `ob`, if `ob` was the last one read.
    pub(crate) fn get(&self, _py: Python<'_>, ob: *mut ffi::PyObject) -> Option<V> {
        // SAFETY: the GIL is held (the token), so nothing writes meanwhile.
        let (seen, value) = unsafe { *self.seen.get() };
        (seen == ob as usize).then_some(value)
    }

    /// Remembers `value`, read from `ob` (kept alive).
    pub(crate) fn remember(&self, ob: Borrowed<'_, '_, PyAny>, value: V) {
        let kept = ob.to_owned().unbind();
        // SAFETY: the GIL is held (ob's token) and no reference into the
        // cell is alive; the old object is released after both writes.
        let previous = unsafe {
            *self.seen.get() = (ob.as_ptr() as usize, value);
            (*self.kept.get()).replace(kept)
        };
        // Released now, through the token: a bare `Py` dropped on a fast
        // entry point's path would wait in pyo3's deferred queue.
        drop(previous.map(|p| p.into_bound(ob.py())));
    }
}

/// Which keyword of `F` each of the `nkw` names in `kwnames` is (the
/// slots), or the `TypeError` for the first name `F` does not take.
///
/// # Safety
/// `kwnames` is a live tuple of `nkw` str, `0 < nkw <= MAX_KEYWORDS`.
unsafe fn slots<F: FastCall>(
    py: Python<'_>,
    kwnames: *mut ffi::PyObject,
    nkw: usize,
) -> PyResult<KeywordSlots> {
    if let Some(slots) = F::last_names().get(py, kwnames) {
        return Ok(slots);
    }
    let mut slots = [0u8; MAX_KEYWORDS];
    for (i, slot) in slots.iter_mut().enumerate().take(nkw) {
        // SAFETY: kwnames holds nkw names (the caller's promise).
        let key = unsafe { Borrowed::from_ptr(py, ffi::PyTuple_GetItem(kwnames, i as isize)) };
        *slot = keyword_of::<F>(py, key)? as u8;
    }
    // SAFETY: kwnames is a live tuple (the caller's promise).
    let names = unsafe { Borrowed::from_ptr(py, kwnames) };
    // Names may be str subclasses (`f(**{MyStr("copy"): 1})`), whose
    // release could run Python code: only exact str are remembered.
    // SAFETY: as above.
    let tuple = unsafe { names.cast_unchecked::<PyTuple>() };
    if tuple
        .iter_borrowed()
        .all(|n| n.is_exact_instance_of::<PyString>())
    {
        F::last_names().remember(names, slots);
    }
    Ok(slots)
}

/// Which keyword of `F` the name `key` is, or the `TypeError` for a name
/// `F` does not take.
fn keyword_of<F: FastCall>(py: Python<'_>, key: Borrowed<'_, '_, PyAny>) -> PyResult<usize> {
    match keyword_index::<F>(py, key) {
        Some(k) => Ok(k),
        None => Err(unexpected::<F>(key)?),
    }
}

/// The `TypeError` for keyword `key`, which `F` does not take.
fn unexpected<F: FastCall>(key: Borrowed<'_, '_, PyAny>) -> PyResult<PyErr> {
    let name = F::NAME;
    let key = key.cast::<PyString>()?.to_cow()?.into_owned();
    Ok(PyTypeError::new_err(
        if F::NAMED && F::POSITIONAL.contains(&key.as_str()) {
            format!("{name}() got multiple values for argument '{key}'")
        } else if F::POSITIONAL.contains(&key.as_str()) {
            format!(
                "{name}() got some positional-only arguments passed as keyword arguments: '{key}'"
            )
        } else {
            format!("{name}() got an unexpected keyword argument '{key}'")
        },
    ))
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
    named: &'a mut Named,
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
    if F::NAMED && nargs < want && nkw > 0 {
        return by_name::<F>(py, positional, values, key, named);
    }
    if nargs < want
        && let Some(i) = (0..nkw).find(|&i| keyword_index::<F>(py, key(i)).is_none())
    {
        return Err(unexpected::<F>(key(i))?);
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
    let mut put = |k: usize, value: &Borrowed<'a, 'py, PyAny>| {
        keywords[k] = Some(*value).filter(|v| !v.is_none());
    };
    if nkw <= MAX_KEYWORDS {
        if nkw > 0 {
            // SAFETY: kwnames is a tuple of nkw str (the caller's promise).
            let slots = unsafe { slots::<F>(py, kwnames, nkw) }?;
            for (value, &k) in values.iter().zip(&slots) {
                put(k as usize, value);
            }
        }
    } else {
        // More names than keywords: some repeat or are unknown.
        for (i, value) in values.iter().enumerate() {
            put(keyword_of::<F>(py, key(i))?, value);
        }
    }
    Ok(Args {
        positional,
        keywords,
    })
}

/// [`parse`] for a call that names some of `F`'s positional parameters
/// ([`FastCall::NAMED`]; `positional` holds the ones passed before):
/// each name is read and matched apart, the rare form needing no cache,
/// and the positional values are gathered in `named`.
fn by_name<'a, 'py, F: FastCall>(
    py: Python<'py>,
    positional: &[Borrowed<'a, 'py, PyAny>],
    values: &[Borrowed<'a, 'py, PyAny>],
    key: impl Fn(usize) -> Borrowed<'a, 'py, PyAny>,
    named: &'a mut Named,
) -> PyResult<Args<'a, 'py>> {
    let name = F::NAME;
    let want = F::POSITIONAL.len();
    debug_assert!(want <= MAX_POSITIONAL && positional.len() < want);
    for (slot, value) in named.iter_mut().zip(positional) {
        *slot = value.as_ptr();
    }
    let mut keywords = [None; MAX_KEYWORDS];
    for (i, value) in values.iter().enumerate() {
        let k = key(i);
        let text = k.cast::<PyString>()?;
        let text = text.to_cow()?;
        match F::POSITIONAL.iter().position(|p| *p == text) {
            Some(p) if !named[p].is_null() => {
                return Err(PyTypeError::new_err(format!(
                    "{name}() got multiple values for argument '{text}'"
                )));
            }
            Some(p) => named[p] = value.as_ptr(),
            None => keywords[keyword_of::<F>(py, k)?] = Some(*value).filter(|v| !v.is_none()),
        }
    }
    if let Some(p) = named[..want].iter().position(|v| v.is_null()) {
        return Err(PyTypeError::new_err(format!(
            "{name}() missing 1 required positional argument: '{}'",
            F::POSITIONAL[p]
        )));
    }
    let named: &'a Named = named;
    // SAFETY: named[..want] holds live, non-NULL values of this call;
    // Borrowed is a transparent pointer wrapper.
    let positional = unsafe { std::slice::from_raw_parts(named.as_ptr().cast(), want) };
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
        let mut named: Named = [std::ptr::null_mut(); MAX_POSITIONAL];
        // SAFETY: CPython's vectorcall contract is parse's contract.
        let parsed = unsafe { parse::<F>(py, args, nargs, kwnames, &mut named) }?;
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

/// `F`'s method table entry, named `F::NAME`, leaked with its name:
/// CPython keeps pointing at both (one per entry point, made once at
/// import).
fn method_def<F: FastCall>() -> *mut ffi::PyMethodDef {
    // `NAME` is a literal of this crate, without NULs.
    let name = std::ffi::CString::new(F::NAME).expect("a name without NUL");
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
        ml_name: name.into_raw(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunction: meth },
        ml_flags: METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: F::DOC.as_ptr(),
    }))
}

/// Installs `F` as the method `F::NAME` of `ty`.
pub(crate) fn install_method<F: FastCall>(ty: &Bound<'_, PyType>) -> PyResult<()> {
    let def = method_def::<F>();
    // SAFETY: the type object is live and `def` is 'static.
    let descr = unsafe { ffi::PyDescr_NewMethod(ty.as_ptr().cast(), def) };
    // SAFETY: PyDescr_NewMethod returns a new reference or NULL with an error set.
    let descr = unsafe { Bound::from_owned_ptr_or_err(ty.py(), descr) }?;
    ty.setattr(F::NAME, descr)
}

/// Adds an op's three entry points: the function `F` to module `m`, the
/// method `M` and its in-place form `I` to `Tensor`.
pub(crate) fn add_op<F: FastCall, M: FastCall, I: FastCall>(
    m: &Bound<'_, PyModule>,
) -> PyResult<()> {
    let ty = m.py().get_type::<super::tensor::PyTensor>();
    add_function::<F>(m)?;
    install_method::<M>(&ty)?;
    install_method::<I>(&ty)
}

/// Adds `F` as the function `F::NAME` of module `m`.
pub(crate) fn add_function<F: FastCall>(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let def = method_def::<F>();
    let module_name = m.name()?;
    // SAFETY: `def` is 'static; the module and its name are live.
    let func = unsafe { ffi::PyCFunction_NewEx(def, std::ptr::null_mut(), module_name.as_ptr()) };
    // SAFETY: PyCFunction_NewEx returns a new reference or NULL with an error set.
    let func = unsafe { Bound::from_owned_ptr_or_err(m.py(), func) }?;
    m.add(F::NAME, func)
}
