//! Arithmetic glue: the binary operators (`+`, `-`, `*`, `/`, reflected and
//! in place, and their named forms), the in-place writes `copy_`, `fill_`
//! and `zero_`, `neg`, `abs`, `**`, comparisons, and the reductions (`sum`,
//! `mean`, `max`, `min`, `amax`, `amin`), with PyTorch's `requires_grad` rules.
//!
//! Layer: above `args` (operands) and `creation` (`copy_` takes any data
//! `tensor()` takes); only `methods` uses it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::arg::{Producers, Rhs, Value, read, rhs};
use super::args::to_scalar;
use super::creation::tensor_from_nested;
use super::dtype::extract_opt_dtype;
use super::errors::{IntoPyResult, type_name, warn_if_imaginary_dropped};
use super::tensor::{PyTensor, maybe_detach};
use crate::ops::{self, Operand};
use crate::{BinaryOp, CompareOp, DType, Promotion, Scalar, Tensor, UnaryOp};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple};

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
        refuse_foreign(other, op.name(), reflected)?;
        return Ok(py.NotImplemented());
    };
    let rg = matches!(r, Rhs::Tensor(_, true));
    let out = apply(py, &this.inner, &r, reflected, |x, y| ops::binary(x, y, op));
    Ok(Py::new(
        py,
        PyTensor::with_grad(out.py()?, this.requires_grad() || rg),
    )?
    .into_any())
}

/// Another framework's tensor (any DLPack producer that is not an ndarray)
/// as an operand: a `TypeError` that says how to bring it in, zero-copy. As
/// PyTorch refuses a JAX array in `+`, dlbridge does not import foreign
/// tensors behind an operator (the result's framework would depend on the
/// operand order, and a copy or a device move would hide there).
fn refuse_foreign(other: &Bound<'_, PyAny>, op: &str, reflected: bool) -> PyResult<()> {
    if other.hasattr(pyo3::intern!(other.py(), "__dlpack__"))? {
        let ty = other.get_type();
        let theirs = format!("'{}.{}'", ty.module()?, ty.qualname()?);
        let ours = "'dlbridge.Tensor'".to_owned();
        let (a, b) = if reflected {
            (theirs, ours)
        } else {
            (ours, theirs)
        };
        return Err(PyTypeError::new_err(format!(
            "unsupported operand type(s) for {op}: {a} and {b}: dlbridge computes with its own \
             tensors, NumPy arrays and numbers; import the other tensor first, zero-copy: \
             dlbridge.from_dlpack(x)"
        )));
    }
    Ok(())
}

/// `f(a, r)` (`f(r, a)` when `reflected`), without the GIL when the
/// operands are large: the operand handling every binary operator shares.
fn apply<T: Send>(
    py: Python<'_>,
    a: &Tensor,
    r: &Rhs,
    reflected: bool,
    f: impl FnOnce(Operand, Operand) -> crate::Result<T> + Send,
) -> crate::Result<T> {
    let (b, n): (Operand, usize) = match r {
        Rhs::Tensor(b, _) => (b.into(), a.numel().max(b.numel())),
        Rhs::Scalar(s) => ((*s).into(), a.numel()),
    };
    let (x, y) = if reflected {
        (b, a.into())
    } else {
        (a.into(), b)
    };
    maybe_detach(py, n, || f(x, y))
}

/// `self op= other` (`__iadd__`, ...).
pub(crate) fn binary_inplace(
    this: &PyTensor,
    py: Python<'_>,
    other: &Bound<'_, PyAny>,
    op: BinaryOp,
) -> PyResult<()> {
    this.check_inplace()?;
    let Some(r) = rhs(other)? else {
        refuse_foreign(other, op.name(), false)?;
        return Err(PyTypeError::new_err(format!(
            "unsupported operand type for in-place arithmetic: '{}'",
            type_name(other)
        )));
    };
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

/// `f(self, other)` (`f(other, self)` when `reflected`) for a named op
/// (`t.add(other, alpha=2)`, `dlbridge.sub(2, t)`): as [`binary`], but an
/// operand dlbridge does not know is PyTorch's `TypeError` for argument
/// `other` at `position`, not NotImplemented.
pub(crate) fn named(
    this: &PyTensor,
    py: Python<'_>,
    other: &Bound<'_, PyAny>,
    (name, position): (&str, usize),
    reflected: bool,
    f: impl FnOnce(Operand, Operand) -> crate::Result<Tensor> + Send,
) -> PyResult<PyTensor> {
    let r = known(other, name, position)?;
    let rg = matches!(r, Rhs::Tensor(_, true));
    let out = apply(py, &this.inner, &r, reflected, f);
    Ok(PyTensor::with_grad(out.py()?, this.requires_grad() || rg))
}

/// `f(self, other)` written into self (`t.add_(other, alpha=2)`), as [`named`].
pub(crate) fn named_<'py>(
    slf: &Bound<'py, PyTensor>,
    other: &Bound<'py, PyAny>,
    name: &str,
    f: impl FnOnce(&Tensor, Operand) -> crate::Result<()> + Send,
) -> PyResult<Bound<'py, PyTensor>> {
    let this = slf.get();
    this.check_inplace()?;
    let r = known(other, name, 1)?;
    let dst = &this.inner;
    let b = match &r {
        Rhs::Tensor(b, _) => Operand::Tensor(b),
        Rhs::Scalar(s) => Operand::Scalar(*s),
    };
    maybe_detach(slf.py(), dst.numel(), || f(dst, b)).py()?;
    Ok(slf.clone())
}

/// `other` as an operand, or PyTorch's `TypeError` for argument `other`.
fn known(other: &Bound<'_, PyAny>, name: &str, position: usize) -> PyResult<Rhs> {
    match rhs(other)? {
        Some(r) => Ok(r),
        None => {
            refuse_foreign(other, name, false)?;
            Err(PyTypeError::new_err(format!(
                "{name}(): argument 'other' (position {position}) must be Tensor, not {}",
                type_name(other)
            )))
        }
    }
}

/// `copy_(src)`: copies `src` (broadcast and cast) into this tensor's memory.
pub(crate) fn copy_<'py>(
    slf: &Bound<'py, PyTensor>,
    src: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTensor>> {
    let this = slf.get();
    this.check_inplace()?;
    let py = slf.py();
    let src = match read(src, Producers::Import)? {
        Value::Tensor { tensor, .. } => tensor,
        Value::Scalar(s) => Tensor::full(&[], s, this.inner.dtype(), this.inner.device()).py()?,
        Value::Other => tensor_from_nested(src, None, None)?,
    };
    let dst = &this.inner;
    warn_if_imaginary_dropped(py, src.dtype(), dst.dtype())?;
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

/// `self op other` for a comparison (`==`, `<`, ..., `eq()`, `lt()`, ...):
/// a bool tensor that requires no grad. Operators give NotImplemented for
/// an operand dlbridge does not know, so `t == [1, 2]` is False as in
/// PyTorch; the named forms (`named`) raise TypeError.
pub(crate) fn compare(
    this: &PyTensor,
    py: Python<'_>,
    other: &Bound<'_, PyAny>,
    op: CompareOp,
    named: bool,
) -> PyResult<Py<PyAny>> {
    let Some(r) = rhs(other)? else {
        refuse_foreign(other, op.name(), false)?;
        if named {
            return Err(PyTypeError::new_err(format!(
                "{}(): argument 'other' must be Tensor or Number, not {}",
                op.name(),
                type_name(other)
            )));
        }
        return Ok(py.NotImplemented());
    };
    let out = apply(py, &this.inner, &r, false, |x, y| ops::compare(x, y, op));
    Ok(Py::new(py, PyTensor::new(out.py()?))?.into_any())
}

/// `abs(t)`, `t.abs()`: the magnitude (real for complex input).
pub(crate) fn abs(this: &PyTensor, py: Python<'_>) -> PyResult<PyTensor> {
    this.compute(py, ops::abs)
}

/// The ops whose Python entry points come from their rows (`generated` in
/// `backend.rs`'s tables; made in `generated.rs`): `(name, "unary" |
/// "binary")`, for `dlbridge/__init__.py` to export and the tests to walk.
#[pyfunction]
pub(crate) fn _generated_ops() -> Vec<(&'static str, &'static str)> {
    let unary = UnaryOp::ALL.iter().filter(|op| op.generated());
    let binary = BinaryOp::ALL.iter().filter(|op| op.generated());
    unary
        .map(|op| (op.function(), "unary"))
        .chain(binary.map(|op| (op.function(), "binary")))
        .collect()
}

/// `op(t)` for a unary op of the table.
pub(crate) fn unary_op(this: &PyTensor, py: Python<'_>, op: UnaryOp) -> PyResult<PyTensor> {
    this.compute(py, |t| ops::unary(t, op))
}

/// `t.name_()` for a unary op of the table (`exp_`).
pub(crate) fn unary_inplace<'py>(
    slf: &Bound<'py, PyTensor>,
    op: UnaryOp,
) -> PyResult<Bound<'py, PyTensor>> {
    slf.get().check_inplace()?;
    let dst = &slf.get().inner;
    maybe_detach(slf.py(), dst.numel(), || ops::unary_(dst, op)).py()?;
    Ok(slf.clone())
}

/// `input` as a tensor, or PyTorch's error for a functional form given
/// something else.
pub(crate) fn tensor<'a, 'py>(
    name: &str,
    input: &'a Bound<'py, PyAny>,
) -> PyResult<&'a Bound<'py, PyTensor>> {
    input.cast::<PyTensor>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{name}(): argument 'input' (position 1) must be Tensor, not {}",
            type_name(input)
        ))
    })
}

/// Whether torch's function of a generated binary row takes a number for
/// `other`: the bitwise ops, rounding divisions and remainders do
/// (`bitwise_and(t, 1)`, `remainder(t, 2)`), `maximum` does not.
fn takes_numbers(op: BinaryOp) -> bool {
    matches!(op.promotion(), Promotion::Integral | Promotion::Real)
}

/// `dlbridge.name(input, other)` for a generated binary row: a tensor
/// first, or a number before a tensor where PyTorch has that overload
/// (`remainder(5, t)`, `floor_divide(5, t)`, `bitwise_and(5, t)`: its
/// `Scalar_Tensor` forms; `fmod` and `maximum` have none).
pub(crate) fn binary_function(
    py: Python<'_>,
    op: BinaryOp,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let name = op.function();
    let number_first = takes_numbers(op) && op != BinaryOp::Fmod;
    if let (Err(_), Ok(t), true) = (
        input.cast::<PyTensor>(),
        other.cast::<PyTensor>(),
        number_first,
    ) && let Some(r @ Rhs::Scalar(_)) = rhs(input)?
    {
        let this = t.get();
        let out = apply(py, &this.inner, &r, true, |x, y| ops::binary(x, y, op));
        return Ok(PyTensor::with_grad(out.py()?, this.requires_grad()));
    }
    binary_named(tensor(name, input)?.get(), py, op, other)
}

/// `t.name(other)` for a binary op that takes only a tensor `other`
/// (`maximum`, and `max(other)`), or also a number (the bitwise ops, the
/// rounding divisions and remainders).
pub(crate) fn binary_named(
    this: &PyTensor,
    py: Python<'_>,
    op: BinaryOp,
    other: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let name = op.function();
    let r = match rhs(other)? {
        Some(r @ Rhs::Tensor(..)) => r,
        Some(r @ Rhs::Scalar(_)) if takes_numbers(op) => r,
        _ => {
            return Err(PyTypeError::new_err(format!(
                "{name}(): argument 'other' (position 1) must be Tensor, not {}",
                type_name(other)
            )));
        }
    };
    let rg = matches!(r, Rhs::Tensor(_, true));
    let out = apply(py, &this.inner, &r, false, |x, y| ops::binary(x, y, op));
    Ok(PyTensor::with_grad(out.py()?, this.requires_grad() || rg))
}

/// The `dim=` of a reduction: `None` (every dimension), an int, or a tuple
/// or list of ints.
fn extract_dims(dim: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<Vec<i64>>> {
    let Some(dim) = dim.filter(|d| !d.is_none()) else {
        return Ok(None);
    };
    if let Ok(d) = dim.extract::<i64>() {
        return Ok(Some(vec![d]));
    }
    if (dim.is_instance_of::<PyTuple>() || dim.is_instance_of::<PyList>())
        && let Ok(ds) = dim.extract::<Vec<i64>>()
    {
        return Ok(Some(ds));
    }
    Err(PyTypeError::new_err(format!(
        "{name}(): argument 'dim' must be int, tuple of ints or None, not {}",
        type_name(dim)
    )))
}

/// `ops::sum` or `ops::mean`.
type SumLike = fn(&Tensor, Option<&[i64]>, bool, Option<DType>) -> crate::Result<Tensor>;

/// `sum` and `mean`: over `dim` (every dimension when None), with `keepdim`
/// and `dtype=`.
pub(crate) fn reduce(
    this: &PyTensor,
    py: Python<'_>,
    name: &str,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    dtype: Option<&Bound<'_, PyAny>>,
    op: SumLike,
) -> PyResult<PyTensor> {
    let dims = extract_dims(dim, name)?;
    let dt = extract_opt_dtype(dtype)?;
    this.compute(py, |t| op(t, dims.as_deref(), keepdim, dt))
}

/// `amax` and `amin`: values only, over any dimensions.
pub(crate) fn extreme_values(
    this: &PyTensor,
    py: Python<'_>,
    name: &str,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    op: fn(&Tensor, Option<&[i64]>, bool) -> crate::Result<Tensor>,
) -> PyResult<PyTensor> {
    let dims = extract_dims(dim, name)?;
    this.compute(py, |t| op(t, dims.as_deref(), keepdim))
}

/// `max()`/`min()`: the extreme element; `max(dim, keepdim=False)`: a
/// `dlbridge.return_types.max` of values and indices, as PyTorch returns;
/// `max(other)`: the elementwise `maximum`.
pub(crate) fn extreme(
    this: &PyTensor,
    py: Python<'_>,
    name: &'static str,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
) -> PyResult<Py<PyAny>> {
    let is_max = name == "max";
    if let Some(other) = dim.filter(|d| d.is_instance_of::<PyTensor>()) {
        // `t.max(other)`, `dlbridge.max(a, b)`: elementwise, as PyTorch's.
        let elementwise = if is_max {
            BinaryOp::Maximum
        } else {
            BinaryOp::Minimum
        };
        return Ok(Py::new(py, binary_named(this, py, elementwise, other)?)?.into_any());
    }
    let Some(dim) = dim.filter(|d| !d.is_none()) else {
        let all = if is_max { ops::max } else { ops::min };
        return Ok(Py::new(py, this.compute(py, all)?)?.into_any());
    };
    let dim: i64 = dim.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "{name}(): argument 'dim' must be int, not {}",
            type_name(dim)
        ))
    })?;
    let by_dim = if is_max { ops::max_dim } else { ops::min_dim };
    let t = &this.inner;
    let r = maybe_detach(py, t.numel(), || by_dim(t, dim, keepdim)).py()?;
    let values = Py::new(py, this.derived(r.values))?;
    let indices = Py::new(py, PyTensor::new(r.indices))?;
    static RETURN_TYPES: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module = RETURN_TYPES
        .get_or_try_init(py, || py.import("dlbridge.return_types").map(Bound::unbind))?;
    Ok(module
        .bind(py)
        .getattr(name)?
        .call1(((values, indices),))?
        .unbind())
}

// ----- PyTorch habits: `axis=`, `all`/`any`, `argmax`/`argmin`, `mH`/`H` -----

/// `dim=` or its alias `axis=` (PyTorch takes either, as NumPy spells it).
pub(crate) fn dim_or_axis<'a, 'py>(
    name: &str,
    dim: Option<&'a Bound<'py, PyAny>>,
    axis: Option<&'a Bound<'py, PyAny>>,
) -> PyResult<Option<&'a Bound<'py, PyAny>>> {
    let given = |o: Option<&'a Bound<'py, PyAny>>| o.filter(|d| !d.is_none());
    match (given(dim), given(axis)) {
        (Some(_), Some(_)) => Err(PyTypeError::new_err(format!(
            "{name}(): argument 'dim' and its alias 'axis' were both given"
        ))),
        (d, a) => Ok(d.or(a)),
    }
}

/// `all`, `any`: bool results (uint8 for uint8 input) that require no grad.
pub(crate) fn truth(
    this: &PyTensor,
    py: Python<'_>,
    name: &str,
    dim: Option<&Bound<'_, PyAny>>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    op: fn(&Tensor, Option<&[i64]>, bool) -> crate::Result<Tensor>,
) -> PyResult<PyTensor> {
    let dims = extract_dims(dim_or_axis(name, dim, axis)?, name)?;
    let t = &this.inner;
    let out = maybe_detach(py, t.numel(), || op(t, dims.as_deref(), keepdim));
    Ok(PyTensor::new(out.py()?))
}

/// `argmax`, `argmin`: int64 positions over `dim`, or in the flattened tensor.
pub(crate) fn arg_extreme(
    this: &PyTensor,
    py: Python<'_>,
    name: &str,
    dim: Option<&Bound<'_, PyAny>>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    op: fn(&Tensor, Option<i64>, bool) -> crate::Result<Tensor>,
) -> PyResult<PyTensor> {
    let dim = dim_or_axis(name, dim, axis)?
        .map(|d| {
            d.extract::<i64>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{name}(): argument 'dim' must be int, not {}",
                    type_name(d)
                ))
            })
        })
        .transpose()?;
    let t = &this.inner;
    let out = maybe_detach(py, t.numel(), || op(t, dim, keepdim));
    Ok(PyTensor::new(out.py()?))
}

/// `squeeze(dim=None)`: `dim` an int or a tuple of ints.
pub(crate) fn squeeze(this: &PyTensor, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
    let dims = extract_dims(dim, "squeeze")?;
    Ok(this.derived(this.inner.squeeze(dims.as_deref()).py()?))
}

/// `mH` (any batch of matrices) and `H` (2-D only): the conjugate transpose,
/// a view for real dtypes and a copy for complex ones (dlbridge has no lazy
/// conjugation).
pub(crate) fn adjoint(this: &PyTensor, py: Python<'_>, name: &str) -> PyResult<PyTensor> {
    let n = this.inner.ndim();
    if name == "H" && n != 2 && n != 0 {
        let hint = if n > 2 {
            " For batches of matrices, consider using tensor.mH"
        } else {
            ""
        };
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "tensor.H is only supported on matrices (2-D tensors). Got {n}-D tensor.{hint}"
        )));
    }
    this.compute(py, |t| {
        let m = if name == "H" && n == 0 {
            t.clone()
        } else {
            t.matrix_transpose(name)?
        };
        ops::conj_physical(&m)
    })
}
