//! PyTorch's named arithmetic with its keywords, as fast entry points:
//! `t.add(other, *, alpha=1)`, `t.sub`, `t.mul`, `t.div(other, *,
//! rounding_mode=None)`, `t.neg()`, their in-place forms (`add_`), their
//! aliases (`subtract`, `multiply`, `divide`, `true_divide`, `negative`)
//! and the functions (`dlbridge.add(input, other, *, alpha=1)`, which also
//! takes a number first, as `torch.add(2, t)`). The operators (`+`, `-=`)
//! stay in `methods.rs`; the rows' own entry points are in `generated.rs`.
//!
//! Layer: beside `generated` (whose `entry!` it uses), above `arith`.

use super::args::to_scalar;
use super::arith::{self, tensor};
use super::errors::{IntoPyResult, type_name};
use super::fastcall::{self, Args, FastCall};
use super::generated::this;
use super::tensor::{PyTensor, maybe_detach};
use crate::ops::{self, Operand};
use crate::{BinaryOp, Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;

/// The op a call computes and the alpha it scales `other` by: `div`'s
/// `rounding_mode` picks another row, `add`'s and `sub`'s `alpha` scales
/// (None where the keyword is absent). `keyword` is the entry's one
/// keyword-only parameter, if any.
fn resolve(
    name: &str,
    op: BinaryOp,
    keyword: Option<&str>,
    args: &Args<'_, '_>,
) -> PyResult<(BinaryOp, Option<Scalar>)> {
    let Some(value) = args.keywords[0] else {
        return Ok((op, None));
    };
    match keyword {
        Some("alpha") => match to_scalar(&value)? {
            Some(alpha) => Ok((op, Some(alpha))),
            None => Err(PyTypeError::new_err(format!(
                "{name}(): argument 'alpha' must be Number, not {}",
                type_name(&value)
            ))),
        },
        _ => {
            let mode = value.extract::<String>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{name}(): argument 'rounding_mode' must be str, not {}",
                    type_name(&value)
                ))
            })?;
            match mode.as_str() {
                "trunc" => Ok((BinaryOp::DivTrunc, None)),
                "floor" => Ok((BinaryOp::DivFloor, None)),
                _ => Err(PyRuntimeError::new_err(format!(
                    "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'"
                ))),
            }
        }
    }
}

/// `a op b`, or `a op alpha * b`.
fn run(a: Operand, b: Operand, op: BinaryOp, alpha: Option<Scalar>) -> crate::Result<Tensor> {
    match alpha {
        Some(alpha) => ops::binary_scaled(a, b, alpha, op),
        None => ops::binary(a, b, op),
    }
}

/// `dlbridge.name(input, other, ...)`: a tensor first, or a number before
/// a tensor (computed as `other`'s reflected op).
fn function(
    py: Python<'_>,
    name: &str,
    op: BinaryOp,
    keyword: Option<&str>,
    args: Args<'_, '_>,
) -> PyResult<Py<PyAny>> {
    let (op, alpha) = resolve(name, op, keyword, &args)?;
    let (input, other) = (&args.positional[0], &args.positional[1]);
    let out = match (input.cast::<PyTensor>(), other.cast::<PyTensor>()) {
        (Ok(t), _) => arith::named(t.get(), py, other, (name, 2), false, move |a, b| {
            run(a, b, op, alpha)
        })?,
        (Err(_), Ok(t)) if to_scalar(input)?.is_some() => {
            arith::named(t.get(), py, input, (name, 1), true, move |a, b| {
                run(a, b, op, alpha)
            })?
        }
        _ => return Err(tensor(name, input).unwrap_err()),
    };
    Ok(Py::new(py, out)?.into_any())
}

/// `t.name(other, ...)`.
fn method(
    py: Python<'_>,
    slf: *mut ffi::PyObject,
    name: &str,
    op: BinaryOp,
    keyword: Option<&str>,
    args: Args<'_, '_>,
) -> PyResult<Py<PyAny>> {
    let (op, alpha) = resolve(name, op, keyword, &args)?;
    let t = this(py, slf);
    let out = arith::named(
        t.get(),
        py,
        &args.positional[0],
        (name, 1),
        false,
        move |a, b| run(a, b, op, alpha),
    )?;
    Ok(Py::new(py, out)?.into_any())
}

/// `t.name_(other, ...)`: written into t's memory.
fn in_place(
    py: Python<'_>,
    slf: *mut ffi::PyObject,
    name: &str,
    op: BinaryOp,
    keyword: Option<&str>,
    args: Args<'_, '_>,
) -> PyResult<Py<PyAny>> {
    let (op, alpha) = resolve(name, op, keyword, &args)?;
    let t = this(py, slf);
    let t = arith::named_(&t, &args.positional[0], name, move |dst, b| match alpha {
        Some(alpha) => ops::binary_scaled_(dst, b, alpha, op),
        None => ops::binary_(dst, b, op),
    })?;
    Ok(t.into_any().unbind())
}

/// The entry points of the named binary ops: per line, the module, the row,
/// the function and method name, the in-place name and the keyword-only
/// parameter with its default as the signature shows it.
macro_rules! named_binary {
    ($($m:ident: $V:ident, $name:literal, $iname:literal, [$($k:literal = $default:literal)?];)*) => {
        $(mod $m {
            use crate::python::generated::entry;
            use crate::python::named::*;
            const KEYWORD: Option<&str> = [$($k)?].first().copied();
            entry!(Function, $name,
                concat!($name, "(input, other", $(", *, ", $k, "=", $default,)? ")"),
                concat!("`dlbridge.", $name, "(input, other)`, as `torch.", $name, "`."),
                ["input", "other"], [$($k)?],
                |py, _slf, args| function(py, $name, BinaryOp::$V, KEYWORD, args));
            entry!(Method, $name,
                concat!($name, "($self, other", $(", *, ", $k, "=", $default,)? ")"),
                concat!("`t.", $name, "(other)`, as `torch.Tensor.", $name, "`."),
                ["other"], [$($k)?],
                |py, slf, args| method(py, slf, $name, BinaryOp::$V, KEYWORD, args));
            entry!(InPlace, $iname,
                concat!($iname, "($self, other", $(", *, ", $k, "=", $default,)? ")"),
                concat!("`t.", $iname, "(other)`: `", $name, "` written into t's memory, as torch's."),
                ["other"], [$($k)?],
                |py, slf, args| in_place(py, slf, $iname, BinaryOp::$V, KEYWORD, args));
        })*

        /// Adds the named binary ops' functions and methods.
        fn binary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(fastcall::add_op::<$m::Function, $m::Method, $m::InPlace>(m)?;)*
            Ok(())
        }
    };
}
named_binary! {
    add: Add, "add", "add_", ["alpha" = "1"];
    sub: Sub, "sub", "sub_", ["alpha" = "1"];
    subtract: Sub, "subtract", "subtract_", ["alpha" = "1"];
    mul: Mul, "mul", "mul_", [];
    multiply: Mul, "multiply", "multiply_", [];
    div: Div, "div", "div_", ["rounding_mode" = "None"];
    divide: Div, "divide", "divide_", ["rounding_mode" = "None"];
    true_divide: Div, "true_divide", "true_divide_", [];
}

/// `-t`, as a new tensor or in place.
fn negate(py: Python<'_>, t: &Bound<'_, PyTensor>, in_place: bool) -> PyResult<Py<PyAny>> {
    let this = t.get();
    if in_place {
        this.check_inplace()?;
        let dst = &this.inner;
        maybe_detach(py, dst.numel(), || ops::neg_(dst)).py()?;
        return Ok(t.clone().into_any().unbind());
    }
    Ok(Py::new(py, arith::neg(this, py)?)?.into_any())
}

/// The entry points of `neg` and its alias `negative`.
macro_rules! named_unary {
    ($($m:ident: $name:literal, $iname:literal;)*) => {
        $(mod $m {
            use crate::python::generated::entry;
            use crate::python::named::*;
            entry!(Function, $name, concat!($name, "(input)"),
                concat!("`dlbridge.", $name, "(input)`: `-input`, as `torch.", $name, "`."), ["input"],
                |py, _slf, args| negate(py, tensor($name, &args.positional[0])?, false));
            entry!(Method, $name, concat!($name, "($self)"),
                concat!("`t.", $name, "()`: `-t`, as `torch.Tensor.", $name, "`."), [],
                |py, slf, _args| negate(py, &this(py, slf), false));
            entry!(InPlace, $iname, concat!($iname, "($self)"),
                concat!("`t.", $iname, "()`: `-t` written into t's memory, as torch's."), [],
                |py, slf, _args| negate(py, &this(py, slf), true));
        })*

        /// Adds `neg` and `negative`.
        fn unary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(fastcall::add_op::<$m::Function, $m::Method, $m::InPlace>(m)?;)*
            Ok(())
        }
    };
}
named_unary! {
    neg: "neg", "neg_";
    negative: "negative", "negative_";
}

/// Adds the named ops' functions to `dlbridge._core` and methods to `Tensor`.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    binary(m)?;
    unary(m)
}
