//! `dlbridge.maximum(a, b)`, `t.maximum(b)`, `dlbridge.exp(t)`, `t.exp()`,
//! `t.exp_()`: the functions and methods of each generated row of
//! `backend.rs`'s op tables, made from the rows themselves
//! (`binary_ops!`/`unary_ops!` call back into this file), as fast entry
//! points (`fastcall.rs`): pyo3's functions take a tuple and a dict under
//! the abi3 ABI of Python 3.9, and a Python method around a native one
//! costs a frame; either was a tenth to a sixth of a 1000-element op.

use super::arith::{self, binary_named, named_inplace, tensor, unary_inplace, unary_op};
use super::fastcall::{self, Args, FastCall};
use super::tensor::PyTensor;
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::CStr;

/// The instance a method descriptor was called on.
pub(super) fn this<'a, 'py>(
    py: Python<'py>,
    slf: *mut ffi::PyObject,
) -> Borrowed<'a, 'py, PyTensor> {
    // SAFETY: the descriptor (installed on Tensor) checked that `slf` is a
    // live Tensor before calling.
    unsafe { Borrowed::from_ptr(py, slf).cast_unchecked::<PyTensor>() }
}

/// `s` (a literal ending in its only NUL) as a C string, at compile time.
pub(super) const fn cstr(s: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(s.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("one NUL, at the end"),
    }
}

/// One fast entry point `$S` named `$name` with the signature `$sig` and
/// the docstring `$doc`; its positional parameters `$p` may be named, its
/// keyword-only ones are `$k`.
macro_rules! entry {
    ($S:ident, $name:expr, $sig:expr, $doc:expr, [$($p:literal),*],
     |$py:ident, $slf:ident, $args:ident| $body:expr) => {
        entry!($S, $name, $sig, $doc, [$($p),*], [], |$py, $slf, $args| $body);
    };
    ($S:ident, $name:expr, $sig:expr, $doc:expr, [$($p:literal),*], [$($k:literal),*],
     |$py:ident, $slf:ident, $args:ident| $body:expr) => {
        pub(super) struct $S;

        impl FastCall for $S {
            const NAME: &'static str = $name;
            const DOC: &'static ::std::ffi::CStr =
                $crate::python::generated::cstr(concat!($sig, "\n--\n\n", $doc, "\0"));
            const POSITIONAL: &'static [&'static str] = &[$($p),*];
            const NAMED: bool = true;
            const KEYWORDS: &'static [&'static str] = &[$($k),*];

            fastcall::cells!();

            fn call($py: Python<'_>, $slf: *mut ffi::PyObject, $args: Args<'_, '_>) -> PyResult<Py<PyAny>> {
                $body
            }
        }
    };
}
pub(super) use entry;

/// A generated row's entry points, named after its function (PyTorch's;
/// the row's name is its kernel's: `div_floor` for `floor_divide`), in a
/// module of that name (`exp::Function`, `exp::Method`, `exp::InPlace`);
/// none for the other rows.
macro_rules! entries {
    (true, binary, $V:ident, $name:literal, $f:ident $(, $ip:ident)?) => {
        mod $f {
            use crate::python::generated::*;
            entry!(
                Function,
                stringify!($f),
                concat!(stringify!($f), "(input, other)"),
                concat!(
                    "`dlbridge.",
                    stringify!($f),
                    "(input, other)`, as `torch.",
                    stringify!($f),
                    "`."
                ),
                ["input", "other"],
                |py, _slf, args| {
                    let (input, other) = (&args.positional[0], &args.positional[1]);
                    let out = arith::binary_function(py, crate::BinaryOp::$V, input, other)?;
                    Ok(Py::new(py, out)?.into_any())
                }
            );
            entry!(
                Method,
                stringify!($f),
                concat!(stringify!($f), "($self, other)"),
                concat!("`t.", stringify!($f), "(other)`, as `torch.Tensor.", stringify!($f), "`."),
                ["other"],
                |py, slf, args| {
                    let out = binary_named(
                        this(py, slf).get(),
                        py,
                        crate::BinaryOp::$V,
                        &args.positional[0],
                    )?;
                    Ok(Py::new(py, out)?.into_any())
                }
            );
            $(entry!(
                InPlace,
                stringify!($ip),
                concat!(stringify!($ip), "($self, other)"),
                concat!("`t.", stringify!($ip), "(other)`: `", stringify!($f), "` in place, as torch's."),
                ["other"],
                |py, slf, args| {
                    let t = named_inplace(&this(py, slf), &args.positional[0], crate::BinaryOp::$V)?;
                    Ok(t.into_any().unbind())
                }
            );)?
        }
    };
    (true, unary, $V:ident, $name:literal, $f:ident, $ip:ident) => {
        mod $f {
            use crate::python::generated::*;
            entry!(
                Function,
                stringify!($f),
                concat!(stringify!($f), "(input)"),
                concat!("`dlbridge.", stringify!($f), "(input)`, as `torch.", stringify!($f), "`."),
                ["input"],
                |py, _slf, args| {
                    let t = tensor(stringify!($f), &args.positional[0])?;
                    Ok(Py::new(py, unary_op(t.get(), py, crate::UnaryOp::$V)?)?.into_any())
                }
            );
            entry!(
                Method,
                stringify!($f),
                concat!(stringify!($f), "($self)"),
                concat!("`t.", stringify!($f), "()`, as `torch.Tensor.", stringify!($f), "`."),
                [],
                |py, slf, _args| {
                    Ok(
                        Py::new(py, unary_op(this(py, slf).get(), py, crate::UnaryOp::$V)?)?
                            .into_any(),
                    )
                }
            );
            entry!(
                InPlace,
                concat!(stringify!($f), "_"),
                concat!(stringify!($f), "_($self)"),
                concat!(
                    "`t.",
                    stringify!($f),
                    "_()`: `",
                    stringify!($f),
                    "` in place, as `torch.Tensor.",
                    stringify!($f),
                    "_`."
                ),
                [],
                |py, slf, _args| {
                    Ok(unary_inplace(&this(py, slf), crate::UnaryOp::$V)?
                        .into_any()
                        .unbind())
                }
            );
        }
    };
    (false, $kind:ident, $($rest:tt)*) => {};
}

/// Registers a generated row's entry points: the function on the module,
/// the methods on `Tensor`.
macro_rules! register {
    (true, binary, $m:ident, $f:ident) => {
        fastcall::add_function::<$f::Function>($m)?;
        fastcall::install_method::<$f::Method>(&$m.py().get_type::<PyTensor>())?;
    };
    (true, $kind:ident, $m:ident, $f:ident $(, $ip:ident)?) => {
        fastcall::add_op::<$f::Function, $f::Method, $f::InPlace>($m)?;
    };
    (false, $kind:ident, $m:ident, $f:ident $(, $ip:ident)?) => {};
}

macro_rules! functions {
    ($kind:ident; $($(#[$doc:meta])* $V:ident, $name:literal, $f:ident, $promo:ident, $gen:tt $(, $ip:ident)?;)*) => {
        $(entries!($gen, $kind, $V, $name, $f $(, $ip)?);)*

        /// Adds this table's generated functions and methods.
        fn $kind(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(register!($gen, $kind, m, $f $(, $ip)?);)*
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

/// The operators of the bitwise, floor division and remainder rows, as
/// methods CPython makes `Tensor`'s number slots from: `&`, `|`, `^`, `//`,
/// `%` (reflected and in place too) and `~`.
macro_rules! operators {
    ($($m:ident: $V:ident, $sym:literal, $name:literal, $rname:literal, $iname:literal;)*) => {
        $(mod $m {
            use crate::python::generated::*;
            entry!(Op, $name, concat!($name, "($self, other)"),
                concat!("`t ", $sym, " other`, as torch's."), ["other"], |py, slf, args| {
                    arith::binary(this(py, slf).get(), py, &args.positional[0], crate::BinaryOp::$V, false)
                });
            entry!(Reflected, $rname, concat!($rname, "($self, other)"),
                concat!("`other ", $sym, " t`, as torch's."), ["other"], |py, slf, args| {
                    arith::binary(this(py, slf).get(), py, &args.positional[0], crate::BinaryOp::$V, true)
                });
            entry!(InPlace, $iname, concat!($iname, "($self, other)"),
                concat!("`t ", $sym, "= other`, as torch's."), ["other"], |py, slf, args| {
                    let t = named_inplace(&this(py, slf), &args.positional[0], crate::BinaryOp::$V)?;
                    Ok(t.into_any().unbind())
                });
        })*

        /// Installs the operators on `Tensor`.
        fn operators(m: &Bound<'_, PyModule>) -> PyResult<()> {
            let ty = m.py().get_type::<PyTensor>();
            $(
                fastcall::install_method::<$m::Op>(&ty)?;
                fastcall::install_method::<$m::Reflected>(&ty)?;
                fastcall::install_method::<$m::InPlace>(&ty)?;
            )*
            fastcall::install_method::<Invert>(&ty)
        }
    };
}
operators! {
    and: BitwiseAnd, "&", "__and__", "__rand__", "__iand__";
    or: BitwiseOr, "|", "__or__", "__ror__", "__ior__";
    xor: BitwiseXor, "^", "__xor__", "__rxor__", "__ixor__";
    floordiv: DivFloor, "//", "__floordiv__", "__rfloordiv__", "__ifloordiv__";
    rem: Remainder, "%", "__mod__", "__rmod__", "__imod__";
}

entry!(
    Invert,
    "__invert__",
    "__invert__($self)",
    "`~t`, as torch's: integers and bools only.",
    [],
    |py, slf, _args| {
        let t = this(py, slf);
        if !crate::UnaryOp::BitwiseNot
            .promotion()
            .allows(t.get().inner.dtype())
        {
            return Err(PyTypeError::new_err(
                "~ (operator.invert) is only implemented on integer and Boolean-type tensors",
            ));
        }
        Ok(Py::new(py, unary_op(t.get(), py, crate::UnaryOp::BitwiseNot)?)?.into_any())
    }
);

/// Adds every generated function to `dlbridge._core`, every generated
/// method and the bitwise operators to `Tensor`.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    binary(m)?;
    unary(m)?;
    operators(m)
}
