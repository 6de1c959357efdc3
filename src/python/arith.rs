//! Arithmetic glue: the binary operators (`+`, `-`, `*`, `/`, reflected and
//! in place, and their named forms), the in-place writes `copy_`, `fill_`
//! and `zero_`, `neg`, `sum` and `mean`, with PyTorch's `requires_grad` rules.
//!
//! Layer: above `args` (operands) and `creation` (`copy_` takes any data
//! `tensor()` takes); only `methods` uses it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> creation -> convert,
//! arith, index, cuda -> methods -> mod.rs)

use super::args::{Rhs, rhs, to_scalar};
use super::creation::tensor_from_data;
use super::dtype::extract_opt_dtype;
use super::errors::{IntoPyResult, type_name};
use super::tensor::{PyTensor, maybe_detach};
use crate::ops::{self, Operand};
use crate::{BinaryOp, DType, Scalar, Tensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// `self op other` (`other op self` when `reflected`); NotImplemented for
/// operands dlbridge does not know, so Python can try the other side and
/// then raise its own TypeError.
pub(crate) fn binary(
    this: &PyTensor,
    py: Python<'_>,
    other: &Bound<'_, PyAny>,
    op: BinaryOp,
    reflected: bool,
) -> PyResult<Py<PyAny>> {
    let Some(r) = rhs(other)? else {
        return Ok(py.NotImplemented());
    };
    let a = &this.inner;
    let (out, rg) = match &r {
        Rhs::Tensor(b, rg) => {
            let (x, y) = if reflected { (b, a) } else { (a, b) };
            let n = x.numel().max(y.numel());
            (
                maybe_detach(py, n, || ops::binary(x.into(), y.into(), op)),
                *rg,
            )
        }
        Rhs::Scalar(s) => {
            let (x, y): (Operand, Operand) = if reflected {
                ((*s).into(), a.into())
            } else {
                (a.into(), (*s).into())
            };
            (maybe_detach(py, a.numel(), || ops::binary(x, y, op)), false)
        }
    };
    Ok(Py::new(
        py,
        PyTensor::with_grad(out.py()?, this.requires_grad() || rg),
    )?
    .into_any())
}

/// `self op= other` (`__iadd__`, ...).
pub(crate) fn binary_inplace(
    this: &PyTensor,
    py: Python<'_>,
    other: &Bound<'_, PyAny>,
    op: BinaryOp,
) -> PyResult<()> {
    this.check_inplace()?;
    let r = rhs(other)?.ok_or_else(|| {
        PyTypeError::new_err(format!(
            "unsupported operand type for in-place arithmetic: '{}'",
            type_name(other)
        ))
    })?;
    let dst = &this.inner;
    match r {
        Rhs::Tensor(b, _) => {
            maybe_detach(py, dst.numel(), || ops::binary_(dst, (&b).into(), op)).py()
        }
        Rhs::Scalar(s) => maybe_detach(py, dst.numel(), || ops::binary_(dst, s.into(), op)).py(),
    }
}

/// `add_(other)`, `sub_`, `mul_`, `div_`: in place, returning the tensor.
pub(crate) fn named_inplace<'py>(
    slf: &Bound<'py, PyTensor>,
    other: &Bound<'py, PyAny>,
    op: BinaryOp,
) -> PyResult<Bound<'py, PyTensor>> {
    binary_inplace(slf.get(), slf.py(), other, op)?;
    Ok(slf.clone())
}

/// `copy_(src)`: copies `src` (broadcast and cast) into this tensor's memory.
pub(crate) fn copy_<'py>(
    slf: &Bound<'py, PyTensor>,
    src: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTensor>> {
    let this = slf.get();
    this.check_inplace()?;
    let py = slf.py();
    let src = match rhs(src)? {
        Some(Rhs::Tensor(t, _)) => t,
        Some(Rhs::Scalar(s)) => {
            Tensor::full(&[], s, this.inner.dtype(), this.inner.device()).py()?
        }
        None => tensor_from_data(py, src, None, None)?,
    };
    let dst = &this.inner;
    maybe_detach(py, dst.numel(), || dst.copy_(&src)).py()?;
    Ok(slf.clone())
}

/// `fill_(value)`: a number or a one-element tensor.
pub(crate) fn fill_<'py>(
    slf: &Bound<'py, PyTensor>,
    value: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTensor>> {
    slf.get().check_inplace()?;
    let v = match to_scalar(value)? {
        Some(v) => v,
        None => match value.cast::<PyTensor>() {
            Ok(t) if t.get().inner.numel() == 1 => t.get().inner.item().py()?,
            _ => {
                return Err(PyTypeError::new_err(
                    "fill_() expects a number or a one-element tensor",
                ));
            }
        },
    };
    fill_with(slf, v)
}

/// `zero_()`.
pub(crate) fn zero_<'py>(slf: &Bound<'py, PyTensor>) -> PyResult<Bound<'py, PyTensor>> {
    slf.get().check_inplace()?;
    fill_with(slf, Scalar::Int(0))
}

fn fill_with<'py>(slf: &Bound<'py, PyTensor>, v: Scalar) -> PyResult<Bound<'py, PyTensor>> {
    let dst = &slf.get().inner;
    maybe_detach(slf.py(), dst.numel(), || dst.fill_(v)).py()?;
    Ok(slf.clone())
}

/// `-t`, `neg()`.
pub(crate) fn neg(this: &PyTensor, py: Python<'_>) -> PyResult<PyTensor> {
    this.compute(py, ops::neg)
}

/// A reduction to one value (`ops::sum`, `ops::mean`) with its `dtype=`.
pub(crate) fn reduce(
    this: &PyTensor,
    py: Python<'_>,
    dtype: Option<&Bound<'_, PyAny>>,
    op: fn(&Tensor, Option<DType>) -> crate::Result<Tensor>,
) -> PyResult<PyTensor> {
    let dt = extract_opt_dtype(dtype)?;
    this.compute(py, |t| op(t, dt))
}
