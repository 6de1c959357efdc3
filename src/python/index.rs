//! Indexing: `t[key]`, `t[key] = value` and `iter(t)`, and the Python keys
//! they take (`t[1, ::2, None, ...]`) read as layout selections.
//!
//! Layer: above `args` (the value written) and `creation` (a value may be
//! any data `tensor()` takes); only `methods` uses it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::arg::{Producers, Value, read};
use super::creation::{tensor_from_data, tensor_from_nested};
use super::errors::IntoPyResult;
use super::tensor::{PyTensor, maybe_detach};
use crate::{DType, Device, Selection, Tensor, ops};
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PyInt, PyList, PySlice, PyTuple};

/// `t[key]`: a view, or a copy when the key has an index tensor, a list or
/// a mask (advanced indexing, as PyTorch).
pub(crate) fn getitem(this: &PyTensor, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let py = key.py();
    let key = parse_key(key, this.inner.ndim())?;
    let view = this.inner.index(&key.selections).py()?;
    if key.advanced.is_empty() {
        return Ok(this.derived(view));
    }
    let out = maybe_detach(py, view.numel(), || ops::index_gather(&view, &key.advanced));
    Ok(this.derived(out.py()?))
}

/// `t[key] = value`: a number, a tensor, an ndarray or data `tensor()` takes.
pub(crate) fn setitem(
    this: &PyTensor,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    this.check_inplace()?;
    let key = parse_key(key, this.inner.ndim())?;
    let view = this.inner.index(&key.selections).py()?;
    if !key.advanced.is_empty() {
        // As PyTorch's `index_put_`: numbers and data take the tensor's
        // dtype; a tensor must already have it.
        let dt = view.dtype();
        let v = match read(value, Producers::Import)? {
            Value::Scalar(s) => Tensor::full(&[], s, dt, Device::CPU).py()?,
            Value::Tensor { tensor, .. } => tensor,
            Value::Other => tensor_from_nested(value, Some(dt), None)?,
        };
        return maybe_detach(py, view.numel(), || {
            ops::index_put(&view, &key.advanced, &v)
        })
        .py();
    }
    match read(value, Producers::Import)? {
        Value::Scalar(s) => maybe_detach(py, view.numel(), || view.fill_(s)).py(),
        Value::Tensor { tensor: t, .. } => {
            super::errors::warn_if_imaginary_dropped(py, t.dtype(), view.dtype())?;
            maybe_detach(py, view.numel(), || view.copy_(&t)).py()
        }
        Value::Other => {
            let t = tensor_from_nested(value, None, None)?;
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

/// A key read for a tensor: the basic part as view selections (each
/// advanced index keeps its dimensions whole), and the advanced indices
/// with the view dimension each starts at.
pub(crate) struct Key {
    pub selections: Vec<Selection>,
    pub advanced: Vec<ops::AdvancedIndex>,
}

/// One item of a key before `...` is expanded.
enum Item {
    Basic(Selection),
    Advanced(Tensor),
}

impl Item {
    /// How many of the tensor's dimensions the item consumes.
    fn consumes(&self) -> usize {
        match self {
            Item::Basic(Selection::NewAxis | Selection::EmptyAxis) => 0,
            Item::Basic(_) => 1,
            Item::Advanced(t) if matches!(t.dtype(), DType::Bool | DType::U8) => t.ndim(),
            Item::Advanced(_) => 1,
        }
    }
}

/// An index tensor (a tensor, an ndarray, a list, any DLPack producer), or
/// `None` when `item` is none of them. A 0-d integer tensor is an integer
/// and a 0-d bool one a scalar bool, as in PyTorch.
fn index_tensor(item: &Bound<'_, PyAny>) -> PyResult<Option<Item>> {
    let py = item.py();
    // NumPy's integer and bool scalars (`np.int64(1)`, `np.True_`).
    if super::args::is_numpy_scalar(item)? {
        return Ok(match super::args::to_scalar(item)? {
            Some(crate::Scalar::Int(i)) => Some(Item::Basic(Selection::Index(i as isize))),
            Some(crate::Scalar::Bool(b)) => Some(Item::Basic(if b {
                Selection::NewAxis
            } else {
                Selection::EmptyAxis
            })),
            _ => None,
        });
    }
    let t = if let Ok(t) = item.cast::<PyTensor>() {
        t.get().inner.clone()
    } else if super::numpy::is_ndarray(item) {
        super::numpy::tensor_from_ndarray(item)?
    } else if item.is_instance_of::<PyList>() || item.is_instance_of::<PyTuple>() {
        let t = tensor_from_data(py, item, None, None)?;
        // `t[[]]`: an empty list indexes as int64, as PyTorch reads it.
        if t.numel() == 0 && t.dtype().is_floating_point() {
            t.to_dtype(DType::I64).py()?
        } else {
            t
        }
    } else if item.hasattr(pyo3::intern!(py, "__dlpack__"))? {
        tensor_from_data(py, item, None, None)?
    } else {
        return Ok(None);
    };
    if t.ndim() == 0 {
        if t.dtype() == DType::Bool {
            let on = t.item().py()? == crate::Scalar::Bool(true);
            return Ok(Some(Item::Basic(if on {
                Selection::NewAxis
            } else {
                Selection::EmptyAxis
            })));
        }
        if t.dtype().category() == crate::Category::Integral {
            let crate::Scalar::Int(i) = t.item().py()? else {
                unreachable!("an integral tensor's item is an integer")
            };
            return Ok(Some(Item::Basic(Selection::Index(i as isize))));
        }
    }
    Ok(Some(Item::Advanced(t)))
}

/// Converts a key into selections for a tensor of `ndim` dimensions.
pub(crate) fn parse_key(key: &Bound<'_, PyAny>, ndim: usize) -> PyResult<Key> {
    let tuple = key.cast::<PyTuple>().ok();
    let mut items = Vec::with_capacity(tuple.map_or(1, |t| t.len()));
    let mut ellipsis_at = None;
    let mut read = |item: &Bound<'_, PyAny>| -> PyResult<()> {
        if item.is_none() {
            items.push(Item::Basic(Selection::NewAxis));
        } else if let Ok(b) = item.cast::<pyo3::types::PyBool>() {
            // As in NumPy and PyTorch: a scalar bool index adds an axis of
            // length 1 (True) or 0 (False); it is not the integer 0 or 1.
            items.push(Item::Basic(if b.is_true() {
                Selection::NewAxis
            } else {
                Selection::EmptyAxis
            }));
        } else if item.is(PyEllipsis::get(key.py())) {
            if ellipsis_at.is_some() {
                return Err(PyIndexError::new_err(
                    "an index can only have a single ellipsis ('...')",
                ));
            }
            ellipsis_at = Some(items.len());
        } else if let Ok(s) = item.cast::<PySlice>() {
            items.push(Item::Basic(slice_selection(s)?));
        } else if item.is_instance_of::<PyInt>()
            || item.hasattr("__index__")? && !item.hasattr("shape")?
        {
            items.push(Item::Basic(Selection::Index(item.extract()?)));
        } else if let Some(t) = index_tensor(item)? {
            items.push(t);
        } else {
            return Err(PyIndexError::new_err(format!(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are \
                 valid indices (got {})",
                item.get_type().name()?
            )));
        }
        Ok(())
    };
    match tuple {
        Some(t) => t.iter().try_for_each(|item| read(&item))?,
        None => read(key)?,
    }
    let full = || Selection::Range {
        start: None,
        stop: None,
        step: 1,
    };
    if let Some(at) = ellipsis_at {
        let used: usize = items.iter().map(Item::consumes).sum();
        let fill = ndim.saturating_sub(used);
        items.splice(
            at..at,
            std::iter::repeat_with(|| Item::Basic(full())).take(fill),
        );
    }
    let mut out = Key {
        selections: Vec::with_capacity(items.len()),
        advanced: Vec::new(),
    };
    // The view's dimension each item's output starts at.
    let mut dim = 0;
    for item in items {
        match item {
            Item::Basic(s) => {
                if !matches!(s, Selection::Index(_)) {
                    dim += 1;
                }
                out.selections.push(s);
            }
            Item::Advanced(t) => {
                let k = Item::Advanced(t.clone()).consumes();
                out.selections.extend(std::iter::repeat_with(full).take(k));
                out.advanced.push(ops::AdvancedIndex { dim, index: t });
                dim += k;
            }
        }
    }
    Ok(out)
}
