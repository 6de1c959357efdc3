//! Python numbers <-> [`Scalar`], and nested Python sequences -> tensors.

use super::tensor::PyTensor;
use crate::{DType, Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
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
    // NumPy scalars (np.int32(3), np.bool_(True), ...) are not all Python number types.
    if ob.is_instance(numpy_generic(ob.py())?)? {
        return to_scalar(&ob.call_method0(pyo3::intern!(ob.py(), "item"))?);
    }
    Ok(None)
}

static NUMPY_GENERIC: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

/// `numpy.generic`, the base class of NumPy's scalar types.
fn numpy_generic(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    NUMPY_GENERIC
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("numpy")?.getattr("generic")?.unbind())
        })
        .map(|g| g.bind(py))
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
    pub dtype: DType,
}

/// Walks nested lists/tuples of numbers (and 0-d tensors), checking that
/// every level is rectangular. The dtype is PyTorch's inference: the
/// promotion of every element's own dtype, where NumPy scalars and 0-d
/// tensors bring theirs and Python numbers the defaults (bool, int64,
/// float32, complex64).
pub(crate) fn parse_nested(ob: &Bound<'_, PyAny>) -> PyResult<Parsed> {
    let mut walker = Walker {
        shape: Vec::new(),
        values: Vec::new(),
        dtype: None,
    };
    walker.walk(ob, 0)?;
    let Walker {
        shape,
        values,
        dtype,
    } = walker;
    Ok(Parsed {
        shape,
        values,
        dtype: dtype.unwrap_or(DType::DEFAULT_FLOAT),
    })
}

struct Walker {
    shape: Vec<usize>,
    values: Vec<Scalar>,
    dtype: Option<DType>,
}

impl Walker {
    fn push(&mut self, depth: usize, value: Scalar, dtype: DType) -> PyResult<()> {
        if depth != self.shape.len() {
            return Err(PyValueError::new_err(format!(
                "expected sequence of length {} at dim {} (got a number)",
                self.shape[depth], depth
            )));
        }
        self.values.push(value);
        self.dtype = Some(match self.dtype {
            None => dtype,
            Some(d) => DType::promote(d, dtype).map_err(super::errors::to_py)?,
        });
        Ok(())
    }

    fn walk(&mut self, ob: &Bound<'_, PyAny>, depth: usize) -> PyResult<()> {
        if let Ok(t) = ob.cast::<PyTensor>() {
            let t = &t.get().inner;
            if t.ndim() == 0 {
                return self.push(depth, t.item().map_err(super::errors::to_py)?, t.dtype());
            }
        }
        if ob.is_instance(numpy_generic(ob.py())?)? {
            let descr = ob.getattr(pyo3::intern!(ob.py(), "dtype"))?;
            let dtype = super::numpy::dtype_of(descr.cast::<numpy::PyArrayDescr>()?)?;
            let value = to_scalar(ob)?.expect("NumPy scalars are numbers");
            return self.push(depth, value, dtype);
        }
        if let Some(s) = to_scalar(ob)? {
            return self.push(depth, s, s.wrapped_dtype());
        }
        let seq = if ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>() {
            ob.cast::<PySequence>()?.clone()
        } else if ob.is_instance_of::<pyo3::types::PyString>() {
            // PyTorch's two messages for text: at the top, and inside a list.
            return Err(if depth == 0 {
                pyo3::exceptions::PyTypeError::new_err("new(): invalid data type 'str'")
            } else {
                PyValueError::new_err("too many dimensions 'str'")
            });
        } else {
            return Err(PyRuntimeError::new_err(format!(
                "Could not infer dtype of {}",
                ob.get_type().name()?
            )));
        };
        let len = seq.len()?;
        if depth == self.shape.len() {
            if !self.values.is_empty() {
                return Err(PyValueError::new_err(format!(
                    "expected a number at dim {depth} (got a sequence)"
                )));
            }
            self.shape.push(len);
        } else if self.shape[depth] != len {
            return Err(PyValueError::new_err(format!(
                "expected sequence of length {} at dim {} (got {})",
                self.shape[depth], depth, len
            )));
        }
        for item in seq.try_iter()? {
            self.walk(&item?, depth + 1)?;
        }
        Ok(())
    }
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
