//! Indexing: `t[key]`, `t[key] = value` and `iter(t)`, and the Python keys
//! they take (`t[1, ::2, None, ...]`) read as layout selections.
//!
//! Layer: above `args` (the value written) and `creation` (a value may be
//! any data `tensor()` takes); only `methods` uses it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> creation -> convert,
//! arith, index, cuda, sharing -> methods -> mod.rs)

use super::args::{Rhs, rhs};
use super::creation::tensor_from_data;
use super::errors::IntoPyResult;
use super::tensor::{PyTensor, maybe_detach};
use crate::Selection;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PyInt, PyList, PySlice, PyTuple};

/// `t[key]`: a view.
pub(crate) fn getitem(this: &PyTensor, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let sel = parse_key(key, this.inner.ndim())?;
    Ok(this.derived(this.inner.index(&sel).py()?))
}

/// `t[key] = value`: a number, a tensor, an ndarray or data `tensor()` takes.
pub(crate) fn setitem(
    this: &PyTensor,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    this.check_inplace()?;
    let view = this.inner.index(&parse_key(key, this.inner.ndim())?).py()?;
    match rhs(value)? {
        Some(Rhs::Scalar(s)) => maybe_detach(py, view.numel(), || view.fill_(s)).py(),
        Some(Rhs::Tensor(t, _)) => {
            super::errors::warn_if_imaginary_dropped(py, t.dtype(), view.dtype())?;
            maybe_detach(py, view.numel(), || view.copy_(&t)).py()
        }
        None => {
            let t = tensor_from_data(py, value, None, None)?;
            view.copy_(&t).py()
        }
    }
}

/// `iter(t)`: the rows along the first dimension.
pub(crate) fn iter(slf: &Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
    let this = slf.get();
    let n = this
        .inner
        .shape()
        .first()
        .copied()
        .ok_or_else(|| PyTypeError::new_err("iteration over a 0-d tensor"))?;
    let py = slf.py();
    let items = (0..n)
        .map(|i| {
            let row = this.inner.index(&[Selection::Index(i as isize)]).py()?;
            Py::new(py, this.derived(row))
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, items)?.try_iter()?.into_any().unbind())
}

/// A slice's bounds, read in C (`PySlice_Unpack`: no attribute lookups,
/// `__index__` honoured, `None` as the widest bound).
fn slice_selection(s: &Bound<'_, PySlice>) -> PyResult<Selection> {
    let (mut start, mut stop, mut step) = (0, 0, 0);
    // SAFETY: a live slice object and three writable slots.
    if unsafe { pyo3::ffi::PySlice_Unpack(s.as_ptr(), &mut start, &mut stop, &mut step) } < 0 {
        return Err(PyErr::fetch(s.py()));
    }
    // PySlice_Unpack reads a zero step as an error; a negative one is PyTorch's.
    if step < 0 {
        return Err(PyValueError::new_err("step must be greater than zero"));
    }
    Ok(Selection::Range {
        start: Some(start),
        stop: Some(stop),
        step,
    })
}

/// Converts a key into selections for a tensor of `ndim` dimensions.
pub(crate) fn parse_key(key: &Bound<'_, PyAny>, ndim: usize) -> PyResult<Vec<Selection>> {
    let tuple = key.cast::<PyTuple>().ok();
    let mut out = Vec::with_capacity(tuple.map_or(1, |t| t.len()));
    let mut ellipsis_at = None;
    let mut read = |item: &Bound<'_, PyAny>| -> PyResult<()> {
        if item.is_none() {
            out.push(Selection::NewAxis);
        } else if let Ok(b) = item.cast::<pyo3::types::PyBool>() {
            // As in NumPy and PyTorch: a scalar bool index adds an axis of
            // length 1 (True) or 0 (False); it is not the integer 0 or 1.
            out.push(if b.is_true() {
                Selection::NewAxis
            } else {
                Selection::EmptyAxis
            });
        } else if item.is(PyEllipsis::get(key.py())) {
            if ellipsis_at.is_some() {
                return Err(PyIndexError::new_err(
                    "an index can only have a single ellipsis ('...')",
                ));
            }
            ellipsis_at = Some(out.len());
        } else if let Ok(s) = item.cast::<PySlice>() {
            out.push(slice_selection(s)?);
        } else if item.is_instance_of::<PyInt>()
            || item.hasattr("__index__")? && !item.hasattr("shape")?
        {
            out.push(Selection::Index(item.extract()?));
        } else {
            return Err(PyIndexError::new_err(format!(
                "dlbridge supports only integers, slices (`:`), ellipsis (`...`) and None as indices (got {})",
                item.get_type().name()?
            )));
        }
        Ok(())
    };
    match tuple {
        Some(t) => t.iter().try_for_each(|item| read(&item))?,
        None => read(key)?,
    }
    if let Some(at) = ellipsis_at {
        let used = out
            .iter()
            .filter(|s| !matches!(s, Selection::NewAxis | Selection::EmptyAxis))
            .count();
        let fill = ndim.saturating_sub(used);
        let full = Selection::Range {
            start: None,
            stop: None,
            step: 1,
        };
        out.splice(at..at, std::iter::repeat_n(full, fill));
    }
    Ok(out)
}
