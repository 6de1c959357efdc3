//! PyTorch's `alpha=` of `add` and `sub`: `a + alpha * b` with its checks
//! of alpha against the result dtype, composed from the elementwise ops.

use super::arith::{binary, binary_, check_bool_op};
use super::{Operand, result_type};
use crate::{BinaryOp, Category, DType, Result, Scalar, Tensor, bail};

/// `a op alpha * b` for `Add` and `Sub`: PyTorch's `add(other, alpha=)`,
/// with its checks of alpha against the result dtype (no bool alpha but for
/// bool results, no float alpha for integers, no complex alpha for real
/// dtypes, none out of the dtype's range). `b` is cast to the result dtype's
/// compute type (float32 for float16 and bfloat16, which round once at the
/// end, as PyTorch's opmath does) before it is scaled, so the product wraps
/// or rounds as PyTorch's does. The scaled operand is a temporary of the
/// output's size (of twice it for float16 and bfloat16).
///
/// ```
/// use dlbridge::{BinaryOp, Scalar, Tensor, ops};
/// let a = Tensor::from_vec(vec![1i32, 2], &[2])?;
/// let r = ops::binary_scaled((&a).into(), (&a).into(), Scalar::Int(3), BinaryOp::Sub)?;
/// assert_eq!(r.to_vec::<i32>()?, vec![-2, -4]);
/// assert!(ops::binary_scaled((&a).into(), (&a).into(), Scalar::Float(0.5), BinaryOp::Add).is_err());
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn binary_scaled(a: Operand, b: Operand, alpha: Scalar, op: BinaryOp) -> Result<Tensor> {
    let Some((scaled, dtype)) = scaled(a, b, alpha, op)? else {
        return binary(a, b, op);
    };
    let a = match a {
        Operand::Scalar(s) => Operand::Scalar(s.rounded_to(dtype)),
        t => t,
    };
    let out = binary(a, scaled.as_operand(), op)?;
    if out.dtype() == dtype {
        return Ok(out);
    }
    out.to_dtype(dtype)
}

/// `dst op= alpha * b` (PyTorch's `add_(other, alpha=)`), as [`binary_scaled`].
pub fn binary_scaled_(dst: &Tensor, b: Operand, alpha: Scalar, op: BinaryOp) -> Result<()> {
    match scaled(Operand::Tensor(dst), b, alpha, op)? {
        Some((scaled, _)) => binary_(dst, scaled.as_operand(), op),
        None => binary_(dst, b, op),
    }
}

/// `alpha * b` for [`binary_scaled`].
enum Scaled {
    Tensor(Tensor),
    Number(Scalar),
}

impl Scaled {
    fn as_operand(&self) -> Operand<'_> {
        match self {
            Scaled::Tensor(t) => Operand::Tensor(t),
            Scaled::Number(s) => Operand::Scalar(*s),
        }
    }
}

/// `alpha * b` in `a op b`'s result dtype's compute type, and that result
/// dtype; None where alpha is 1 (no product to make).
fn scaled(a: Operand, b: Operand, alpha: Scalar, op: BinaryOp) -> Result<Option<(Scaled, DType)>> {
    if !matches!(op, BinaryOp::Add | BinaryOp::Sub) {
        bail!(
            InvalidValue,
            "alpha scales the other operand of add and sub only, not {}",
            op.name()
        );
    }
    check_bool_op(op, &a, &b)?;
    let dtype = result_type(&[a, b])?;
    check_alpha(dtype, alpha)?;
    let alpha = if dtype == DType::Bool {
        Scalar::Bool(alpha.as_f64() != 0.0)
    } else {
        alpha
    };
    if matches!(alpha, Scalar::Bool(true) | Scalar::Int(1)) {
        return Ok(None);
    }
    let scaled = match b {
        Operand::Tensor(t) => {
            let wide = t.to_dtype(dtype)?.to_dtype(dtype.compute_dtype())?;
            Scaled::Tensor(binary(Operand::Tensor(&wide), alpha.into(), BinaryOp::Mul)?)
        }
        Operand::Scalar(s) => Scaled::Number(s.rounded_to(dtype).times(alpha)),
    };
    Ok(Some((scaled, dtype)))
}

/// PyTorch's `alpha_check` and its conversion of alpha to the result dtype.
fn check_alpha(dtype: DType, alpha: Scalar) -> Result<()> {
    let category = dtype.category();
    if matches!(alpha, Scalar::Bool(_)) && dtype != DType::Bool {
        bail!(
            InvalidOperation,
            "Boolean alpha only supported for Boolean results."
        );
    }
    if matches!(category, Category::Bool | Category::Integral)
        && matches!(alpha, Scalar::Float(_) | Scalar::Complex(..))
    {
        bail!(
            InvalidOperation,
            "For integral input tensors, argument alpha must not be a floating point number."
        );
    }
    if category != Category::Complex && matches!(alpha, Scalar::Complex(..)) {
        bail!(
            InvalidOperation,
            "For non-complex input tensors, argument alpha must not be a complex number."
        );
    }
    let overflows = match (category, alpha) {
        // Unsigned types take negative values down to -max (they wrap).
        (Category::Integral, Scalar::Int(i)) if !dtype.is_signed() => {
            Scalar::Int(i.saturating_abs())
                .check_fits(dtype, "")
                .is_err()
        }
        (Category::Integral, _) => alpha.check_fits(dtype, "").is_err(),
        (Category::Floating | Category::Complex, _) => {
            let max = match dtype {
                DType::F16 => half::f16::MAX.to_f64(),
                DType::BF16 => half::bf16::MAX.to_f64(),
                DType::F32 | DType::C64 => f32::MAX.into(),
                _ => f64::MAX,
            };
            let (re, im) = match alpha {
                Scalar::Complex(re, im) => (re, im),
                _ => (alpha.as_f64(), 0.0),
            };
            [re, im].iter().any(|x| x.is_finite() && x.abs() > max)
        }
        _ => false,
    };
    if overflows {
        bail!(
            InvalidOperation,
            "value cannot be converted to type {} without overflow",
            cpp_type(dtype)
        );
    }
    Ok(())
}

/// The C++ type PyTorch's messages name a dtype by (`int8_t`, `int`,
/// `c10::Half`, `float`, `c10::complex<float>`).
fn cpp_type(dtype: DType) -> String {
    let bits = dtype.size() * 8;
    match (dtype.category(), dtype.size()) {
        (Category::Integral, 4) if dtype.is_signed() => "int".into(),
        (Category::Integral, _) if dtype.is_signed() => format!("int{bits}_t"),
        (Category::Integral, _) => format!("uint{bits}_t"),
        (Category::Floating, 2) => format!("c10::{}", dtype.scalar_type_name()),
        (Category::Floating, 4) => "float".into(),
        (Category::Complex, 8) => "c10::complex<float>".into(),
        (Category::Complex, _) => "c10::complex<double>".into(),
        _ => "double".into(),
    }
}
