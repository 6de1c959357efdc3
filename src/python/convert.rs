//! Python numbers <-> [`Scalar`], and nested Python sequences -> tensors.

use super::tensor::PyTensor;
use crate::{DType, Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt, PyList, PySequence, PyTuple};

/// A Python number as a scalar, or `None` when `ob` is not a number.
pub(crate) fn to_scalar(ob: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if let Ok(b) = ob.cast::<PyBool>() {
        return Ok(Some(Scalar::Bool(b.is_true())));
    }
    if ob.is_instance_of::<PyInt>() {
        return int_scalar(ob).map(Some);
    }
    if let Ok(f) = ob.cast::<PyFloat>() {
        return Ok(Some(Scalar::Float(f.value())));
    }
    if let Ok(c) = ob.cast::<PyComplex>() {
        return Ok(Some(Scalar::Complex(c.real(), c.imag())));
    }
    // NumPy scalars (np.int32(3), np.bool_(True), ...) are not Python number types.
    if ob.hasattr(pyo3::intern!(ob.py(), "dtype"))? && ob.hasattr(pyo3::intern!(ob.py(), "item"))? {
        if let Ok(t) = ob.cast::<PyTensor>() {
            let _ = t;
            return Ok(None);
        }
        let ndim: usize = ob.getattr("ndim").and_then(|n| n.extract()).unwrap_or(1);
        if ndim == 0 {
            return to_scalar(&ob.call_method0("item")?);
        }
    }
    Ok(None)
}

fn int_scalar(ob: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if let Ok(i) = ob.extract::<i64>() {
        return Ok(Scalar::Int(i as i128));
    }
    if let Ok(u) = ob.extract::<u64>() {
        return Ok(Scalar::Int(u as i128));
    }
    Err(PyRuntimeError::new_err(format!(
        "Overflow when unpacking long: {ob} does not fit in 64 bits"
    )))
}

pub(crate) fn scalar_to_py(py: Python<'_>, s: Scalar) -> PyResult<Py<PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        Scalar::Complex(re, im) => PyComplex::from_doubles(py, re, im).into_any().unbind(),
    })
}

/// Nested lists of `values`, shaped like `shape` (a bare scalar for 0-d).
pub(crate) fn nested_list(
    py: Python<'_>,
    shape: &[usize],
    values: &[Scalar],
) -> PyResult<Py<PyAny>> {
    if shape.is_empty() {
        return scalar_to_py(py, values[0]);
    }
    let step = values.len().checked_div(shape[0]).unwrap_or(0);
    let items = (0..shape[0])
        .map(|i| nested_list(py, &shape[1..], &values[i * step..(i + 1) * step]))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, items)?.into_any().unbind())
}

/// What `tensor([...])` infers from nested Python data.
pub(crate) struct Parsed {
    pub shape: Vec<usize>,
    pub values: Vec<Scalar>,
    /// PyTorch's inference: bool < int64 < float32 < complex64.
    pub dtype: DType,
}

/// Walks nested lists/tuples of numbers (and 0-d tensors), checking that
/// every level is rectangular.
pub(crate) fn parse_nested(ob: &Bound<'_, PyAny>) -> PyResult<Parsed> {
    let mut shape = Vec::new();
    let mut values = Vec::new();
    walk(ob, 0, &mut shape, &mut values)?;
    let dtype = values.iter().fold(None::<DType>, |acc, s| {
        let d = s.wrapped_dtype();
        Some(match acc {
            Some(a) => a.max(d),
            None => d,
        })
    });
    let dtype = match dtype {
        Some(DType::Bool) => DType::Bool,
        Some(DType::I64) => DType::I64,
        Some(DType::C64) => DType::C64,
        _ => DType::F32,
    };
    Ok(Parsed {
        shape,
        values,
        dtype,
    })
}

fn walk(
    ob: &Bound<'_, PyAny>,
    depth: usize,
    shape: &mut Vec<usize>,
    values: &mut Vec<Scalar>,
) -> PyResult<()> {
    if let Some(s) = to_scalar(ob)? {
        if depth != shape.len() {
            return Err(PyValueError::new_err(format!(
                "expected sequence of length {} at dim {} (got a number)",
                shape[depth], depth
            )));
        }
        values.push(s);
        return Ok(());
    }
    if let Ok(t) = ob.cast::<PyTensor>() {
        let t = &t.get().inner;
        if t.numel() == 1 && t.ndim() == 0 {
            values.push(t.item().map_err(super::errors::to_py)?);
            return Ok(());
        }
    }
    let seq = if ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>() {
        ob.cast::<PySequence>()?.clone()
    } else {
        return Err(PyTypeError::new_err(format!(
            "Could not infer dtype of {}",
            ob.get_type().name()?
        )));
    };
    let len = seq.len()?;
    if depth == shape.len() {
        if !values.is_empty() {
            return Err(PyValueError::new_err(format!(
                "expected a number at dim {depth} (got a sequence)"
            )));
        }
        shape.push(len);
    } else if shape[depth] != len {
        return Err(PyValueError::new_err(format!(
            "expected sequence of length {} at dim {} (got {})",
            shape[depth], depth, len
        )));
    }
    for item in seq.try_iter()? {
        walk(&item?, depth + 1, shape, values)?;
    }
    Ok(())
}

/// Builds a fresh tensor from parsed nested data.
pub(crate) fn tensor_from_parsed(p: &Parsed, dtype: Option<DType>) -> crate::Result<Tensor> {
    let shape = if p.values.is_empty() && p.shape.is_empty() {
        vec![0]
    } else {
        p.shape.clone()
    };
    Tensor::from_scalars(&shape, &p.values, dtype.unwrap_or(p.dtype))
}
