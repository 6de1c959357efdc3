//! Arithmetic through the C ABI: the same operations, promotion and
//! in-place rules as the Python API, on CPU and CUDA tensors.

use super::error::{core, dlb_status, fail, guard};
use super::tensor::{derive, dlb_tensor, handle, need_out, put};
use crate::ops::{self, Operand};
use crate::{BinaryOp, Scalar, UnaryOp};
use std::ffi::{CStr, c_char};

/// `a + b`.
pub const DLB_ADD: u32 = 0;
/// `a - b`.
pub const DLB_SUB: u32 = 1;
/// `a * b`.
pub const DLB_MUL: u32 = 2;
/// `a / b` (true division: integers give float32, as in PyTorch).
pub const DLB_DIV: u32 = 3;

fn op_of(op: u32) -> Result<BinaryOp, dlb_status> {
    Ok(match op {
        DLB_ADD => BinaryOp::Add,
        DLB_SUB => BinaryOp::Sub,
        DLB_MUL => BinaryOp::Mul,
        DLB_DIV => BinaryOp::Div,
        other => {
            return Err(fail(
                dlb_status::DLB_ERR_INVALID_ARGUMENT,
                format!("unknown operator {other}; use DLB_ADD, DLB_SUB, DLB_MUL or DLB_DIV"),
            ));
        }
    })
}

fn binary_new(
    a: *const dlb_tensor,
    b: Operand,
    op: u32,
    out: *mut *mut dlb_tensor,
) -> Result<(), dlb_status> {
    let x = handle(a, "a")?;
    need_out(out)?;
    let r = ops::binary(Operand::Tensor(x), b, op_of(op)?).map_err(core)?;
    put(out, r);
    Ok(())
}

/// `a op b` as a new tensor (`op` is `DLB_ADD`, `DLB_SUB`, `DLB_MUL` or
/// `DLB_DIV`), with broadcasting and PyTorch's type promotion. Errors:
/// `DLB_ERR_NULL_POINTER`, `DLB_ERR_INVALID_ARGUMENT` (unknown op),
/// `DLB_ERR_INVALID_OPERATION` (shapes that do not broadcast, tensors on
/// different devices, bool subtraction), CUDA errors. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_binary(
    a: *const dlb_tensor,
    b: *const dlb_tensor,
    op: u32,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    guard(|| {
        let y = handle(b, "b")?;
        binary_new(a, Operand::Tensor(y), op, out)
    })
}

/// `a op value` for a floating-point number (a Python float in PyTorch's
/// promotion: an integer tensor gives float32). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_binary_scalar_f64(
    a: *const dlb_tensor,
    value: f64,
    op: u32,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    guard(|| binary_new(a, Operand::Scalar(Scalar::Float(value)), op, out))
}

/// `a op value` for an integer (a Python int: the tensor keeps its dtype).
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_binary_scalar_i64(
    a: *const dlb_tensor,
    value: i64,
    op: u32,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    guard(|| binary_new(a, Operand::Scalar(Scalar::Int(value as i128)), op, out))
}

fn binary_in_place(dst: *const dlb_tensor, b: Operand, op: u32) -> Result<(), dlb_status> {
    let d = handle(dst, "dst")?;
    ops::binary_(d, b, op_of(op)?).map_err(core)
}

/// `dst op= b` in `dst`'s memory (`add_` and friends): `b` broadcasts to
/// `dst`, and the result must be castable to `dst`'s dtype. Errors add
/// `DLB_ERR_INVALID_OPERATION` for a read-only `dst`. Not thread-safe for
/// concurrent writers of the same memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_binary_(
    dst: *const dlb_tensor,
    b: *const dlb_tensor,
    op: u32,
) -> dlb_status {
    guard(|| {
        let y = handle(b, "b")?;
        binary_in_place(dst, Operand::Tensor(y), op)
    })
}

/// `dst op= value` (a float) in place. Same rules and errors as
/// `dlb_binary_`; not for concurrent writers of the same memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_binary_scalar_f64_(
    dst: *const dlb_tensor,
    value: f64,
    op: u32,
) -> dlb_status {
    guard(|| binary_in_place(dst, Operand::Scalar(Scalar::Float(value)), op))
}

/// `dst op= value` (an integer) in place. Same rules and errors as
/// `dlb_binary_`; not for concurrent writers of the same memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_binary_scalar_i64_(
    dst: *const dlb_tensor,
    value: i64,
    op: u32,
) -> dlb_status {
    guard(|| binary_in_place(dst, Operand::Scalar(Scalar::Int(value as i128)), op))
}

/// Sets every element of `dst` to `value` (`fill_`); the value must fit the
/// dtype (`DLB_ERR_INVALID_OPERATION` otherwise), and `dst` must be
/// writable. Not for concurrent writers of the same memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_fill_f64_(dst: *const dlb_tensor, value: f64) -> dlb_status {
    guard(|| {
        handle(dst, "dst")?
            .fill_(Scalar::Float(value))
            .map_err(core)
    })
}

/// `fill_` with an integer; same rules as `dlb_fill_f64_`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_fill_i64_(dst: *const dlb_tensor, value: i64) -> dlb_status {
    guard(|| {
        handle(dst, "dst")?
            .fill_(Scalar::Int(value as i128))
            .map_err(core)
    })
}

/// `-a` as a new tensor (bool tensors refuse, as in PyTorch). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_neg(a: *const dlb_tensor, out: *mut *mut dlb_tensor) -> dlb_status {
    derive(a, "a", out, ops::neg)
}

/// The sum of every element as a zero-dim tensor on `a`'s device (integer
/// and bool tensors sum to int64). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_sum(a: *const dlb_tensor, out: *mut *mut dlb_tensor) -> dlb_status {
    derive(a, "a", out, |x| ops::sum(x, None, false, None))
}

/// The value of a one-element tensor as a double (copied from the GPU if
/// needed). Errors: `DLB_ERR_INVALID_OPERATION` when it has another number
/// of elements. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_item_f64(a: *const dlb_tensor, out: *mut f64) -> dlb_status {
    guard(|| {
        let x = handle(a, "a")?;
        need_out(out)?;
        let v = x.item().map_err(core)?.as_f64();
        // SAFETY: out checked non-NULL.
        unsafe { *out = v };
        Ok(())
    })
}

/// The op table row named `name` (a NUL-terminated C string).
fn row<Op: Copy>(
    all: &[Op],
    name: *const c_char,
    of: impl Fn(Op) -> &'static str,
) -> Result<Op, dlb_status> {
    if name.is_null() {
        return Err(fail(dlb_status::DLB_ERR_NULL_POINTER, "name is NULL"));
    }
    // SAFETY: checked non-NULL; the caller passes a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(name) };
    all.iter()
        .copied()
        .find(|&op| of(op).as_bytes() == name.to_bytes())
        .ok_or_else(|| {
            fail(
                dlb_status::DLB_ERR_INVALID_ARGUMENT,
                format!("no elementwise op named {name:?}"),
            )
        })
}

/// `name(a)` as a new tensor for any unary op of dlbridge's table, by its
/// PyTorch name (`"exp"`, `"sqrt"`, `"abs"`, ...), with PyTorch's promotion
/// (`exp` of an integer tensor is float32). Errors: `DLB_ERR_NULL_POINTER`,
/// `DLB_ERR_INVALID_ARGUMENT` (unknown name), `DLB_ERR_NOT_IMPLEMENTED`
/// (a dtype the op lacks), CUDA errors. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_unary_op(
    name: *const c_char,
    a: *const dlb_tensor,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    guard(|| {
        let op = row(UnaryOp::ALL, name, UnaryOp::function)?;
        let x = handle(a, "a")?;
        need_out(out)?;
        put(out, ops::unary(x, op).map_err(core)?);
        Ok(())
    })
}

/// `name(a, b)` as a new tensor for any binary op of dlbridge's table, by
/// its PyTorch function name (`"maximum"`, `"add"`, `"floor_divide"`,
/// `"remainder"`, `"fmod"`; `"div_trunc"` is `div` rounding toward zero),
/// with broadcasting and PyTorch's promotion. Errors as `dlb_unary_op`, plus
/// those of `dlb_binary` and `DLB_ERR_INVALID_OPERATION` for a zero integer
/// divisor of the rounding divisions and remainders. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlb_binary_op(
    name: *const c_char,
    a: *const dlb_tensor,
    b: *const dlb_tensor,
    out: *mut *mut dlb_tensor,
) -> dlb_status {
    guard(|| {
        let op = row(BinaryOp::ALL, name, BinaryOp::function)?;
        let (x, y) = (handle(a, "a")?, handle(b, "b")?);
        need_out(out)?;
        put(
            out,
            ops::binary(Operand::Tensor(x), Operand::Tensor(y), op).map_err(core)?,
        );
        Ok(())
    })
}
