//! Nested Python data (lists and tuples of numbers, NumPy scalars and 0-d
//! tensors) -> a fresh tensor, with PyTorch's dtype inference; what
//! `tensor([...])` reads when its data is no tensor, ndarray or DLPack producer.
//!
//! Layer: above `args` (numbers) and `numpy` (NumPy scalars' dtypes), used by
//! `creation` only.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::args::{is_numpy_scalar, to_scalar};
use super::errors::IntoPyResult;
use super::tensor::PyTensor;
use crate::{DType, Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PySequence, PyString, PyTuple};

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
            Some(d) => DType::promote(d, dtype).py()?,
        });
        Ok(())
    }

    fn walk(&mut self, ob: &Bound<'_, PyAny>, depth: usize) -> PyResult<()> {
        if let Ok(t) = ob.cast::<PyTensor>() {
            let t = &t.get().inner;
            if t.ndim() == 0 {
                return self.push(depth, t.item().py()?, t.dtype());
            }
        }
        if is_numpy_scalar(ob)? {
            let descr = ob.getattr(pyo3::intern!(ob.py(), "dtype"))?;
            let dtype = super::numpy::dtype_of(descr.cast::<numpy::PyArrayDescr>()?)?;
            // dtype_of accepted the scalar's dtype, so it is a number; a
            // scalar type that is not still gets a TypeError, never a panic.
            let value = to_scalar(ob)?.ok_or_else(|| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "can't convert a NumPy scalar of type {} to a tensor element",
                    super::errors::type_name(ob)
                ))
            })?;
            return self.push(depth, value, dtype);
        }
        if let Some(s) = to_scalar(ob)? {
            return self.push(depth, s, s.wrapped_dtype());
        }
        let seq = if ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>() {
            ob.cast::<PySequence>()?.clone()
        } else if ob.is_instance_of::<PyString>() {
            // PyTorch's two messages for text: at the top, and inside a list.
            return Err(if depth == 0 {
                PyTypeError::new_err("new(): invalid data type 'str'")
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
