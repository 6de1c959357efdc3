//! `dlbridge.maximum(a, b)`, `dlbridge.exp(t)`, ...: a native module
//! function for each generated row of `backend.rs`'s op tables, made from
//! the rows themselves (`binary_ops!`/`unary_ops!` call back into this
//! file). A Python wrapper around the method cost a frame per call, a
//! sixth of a 1000-element op.

use super::arith::{binary_named, unary_op};
use super::tensor::PyTensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// `input` as a tensor, or PyTorch's error for a functional form given
/// something else.
fn tensor<'a, 'py>(name: &str, input: &'a Bound<'py, PyAny>) -> PyResult<&'a Bound<'py, PyTensor>> {
    input.cast::<PyTensor>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{name}(): argument 'input' (position 1) must be Tensor, not {}",
            super::errors::type_name(input)
        ))
    })
}

/// One function for a generated row, none for the others.
macro_rules! function {
    (true, binary, $V:ident, $name:literal, $f:ident) => {
        #[doc = concat!("`dlbridge.", $name, "(input, other)`, as `torch.", $name, "`.")]
        #[pyfunction]
        pub(super) fn $f(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
            let t = tensor($name, input)?;
            binary_named(t.get(), input.py(), crate::BinaryOp::$V, other)
        }
    };
    (true, unary, $V:ident, $name:literal, $f:ident) => {
        #[doc = concat!("`dlbridge.", $name, "(input)`, as `torch.", $name, "`.")]
        #[pyfunction]
        pub(super) fn $f(input: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
            let t = tensor($name, input)?;
            unary_op(t.get(), input.py(), crate::UnaryOp::$V)
        }
    };
    (false, $kind:ident, $V:ident, $name:literal, $f:ident) => {};
}

/// Registers the generated rows' functions (a row that is not generated
/// registers nothing).
macro_rules! register {
    (true, $m:ident, $f:ident) => {
        $m.add_function(wrap_pyfunction!($f, $m)?)?;
    };
    (false, $m:ident, $f:ident) => {};
}

macro_rules! functions {
    ($kind:ident; $($(#[$doc:meta])* $V:ident, $name:literal, $f:ident, $promo:ident, $gen:tt $(, $ip:ident)?;)*) => {
        $(function!($gen, $kind, $V, $name, $f);)*

        /// Adds this table's generated functions to the module.
        fn $kind(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(register!($gen, m, $f);)*
            Ok(())
        }
    };
}

macro_rules! binary_functions {
    ($($rows:tt)*) => { functions!(binary; $($rows)*); };
}
macro_rules! unary_functions {
    ($($rows:tt)*) => { functions!(unary; $($rows)*); };
}
crate::binary_ops!(binary_functions);
crate::unary_ops!(unary_functions);

/// Adds every generated function to `dlbridge._core`.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    binary(m)?;
    unary(m)
}
