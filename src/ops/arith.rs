//! Elementwise arithmetic and comparisons with PyTorch's promotion,
//! broadcasting and in-place rules.

use super::{Operand, blocks, check_computable, device_of, lift_cpu_scalar, result_type};
use crate::backend::{self, BinaryOp, CompareOp, Promotion, ReduceOp, Rhs, UnaryOp};
use crate::layout::broadcast_shapes;
use crate::{Category, DType, Device, Result, Scalar, Tensor, bail};
use smallvec::{SmallVec, smallvec};

fn is_bool(op: &Operand) -> bool {
    match op {
        Operand::Tensor(t) => t.dtype() == DType::Bool,
        Operand::Scalar(s) => matches!(s, Scalar::Bool(_)),
    }
}

/// PyTorch refuses subtraction whenever an operand is bool.
pub(super) fn check_bool_op(op: BinaryOp, a: &Operand, b: &Operand) -> Result<()> {
    if op != BinaryOp::Sub {
        return Ok(());
    }
    match (is_bool(a), is_bool(b)) {
        (true, true) => bail!(
            NotImplemented,
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or \
             `logical_xor()` operator instead."
        ),
        (true, false) | (false, true) => bail!(
            NotImplemented,
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to \
             invert a mask, use the `~` or `logical_not()` operator instead."
        ),
        _ => Ok(()),
    }
}

/// PyTorch refuses an integer tensor raised to a negative integer number
/// (a tensor of negative exponents is allowed: those powers are 0, 1 or -1),
/// and has no bool power of a bool tensor (`bool ** 2` promotes to int64,
/// and `bool ** True` is a copy).
fn check_integer_power(op: BinaryOp, dtype: DType, exponent: &Operand) -> Result<()> {
    if op == BinaryOp::Pow && dtype == DType::Bool && matches!(exponent, Operand::Tensor(_)) {
        bail!(NotImplemented, "\"pow\" not implemented for 'Bool'");
    }
    let integral = matches!(dtype.category(), Category::Integral | Category::Bool);
    if op == BinaryOp::Pow
        && integral
        && matches!(exponent, Operand::Scalar(Scalar::Int(e)) if *e < 0)
    {
        bail!(
            InvalidOperation,
            "Integers to negative integer powers are not allowed."
        );
    }
    Ok(())
}

/// The ops that refuse a zero integer divisor (PyTorch's CPU kernels raise
/// `ZeroDivisionError`; its CUDA ones leave garbage): checked before any
/// element is written, so an in-place op leaves its tensor whole.
fn check_divisor(op: BinaryOp, dtype: DType, divisor: &Operand) -> Result<()> {
    let rounding = matches!(
        op,
        BinaryOp::DivFloor | BinaryOp::DivTrunc | BinaryOp::Remainder | BinaryOp::Fmod
    );
    if !rounding || dtype.category() != Category::Integral {
        return Ok(());
    }
    // The divisor as the op reads it: a number or a zero-dim tensor wraps to
    // the dtype (an int8 tensor // 256 divides by zero, as in PyTorch).
    let zero = match divisor {
        Operand::Scalar(s) => s.rounded_to(dtype) == Scalar::Int(0),
        Operand::Tensor(t) if t.numel() == 0 => false,
        Operand::Tensor(t) => {
            // Seen as the unsigned type of its width, zero is the smallest
            // value and nothing else is (a negative reads as a large
            // number): one min reduction, one value read back (the
            // backend's: `ops/reduce.rs` sits above this file). Copying a
            // `== 0` mask out and scanning it took 70 µs of int32 `a // b`'s
            // 140 at 10^5.
            let bits = t.to_dtype(dtype)?;
            let bits = bits.view_dtype(dtype.bits_twin())?;
            let least = Tensor::empty(&vec![1; bits.ndim()], bits.dtype(), bits.device())?;
            let dims: Vec<usize> = (0..bits.ndim()).collect();
            backend::of(bits.device()).reduce(&bits, &dims, ReduceOp::Min, &least, None)?;
            least.item()? == Scalar::Int(0)
        }
    };
    if zero {
        bail!(InvalidOperation, "ZeroDivisionError");
    }
    Ok(())
}

/// [`check_computable`] for an op of the tables, which also refuses the
/// dtypes its promotion rule excludes, with PyTorch's error
/// (`"bitwise_and_cpu" not implemented for 'Float'`).
fn check_op(name: &str, promotion: Promotion, dtype: DType, device: Device) -> Result<()> {
    check_computable(name, dtype, device)?;
    if !promotion.allows(dtype) {
        bail!(
            NotImplemented,
            "\"{name}_{}\" not implemented for '{}'",
            device.kind.name(),
            dtype.scalar_type_name()
        );
    }
    Ok(())
}

/// The dtype an op computes and returns in: its row's promotion rule.
fn compute_dtype(op: BinaryOp, promoted: DType) -> DType {
    op.promotion().apply(promoted)
}

/// A Python number as the backend gets it: for `+`, `-`, `//`, `%`, `fmod`
/// (either side) and on the left of `/` it is first rounded to the op's
/// dtype (PyTorch's kernels read the number cast to the common dtype, and
/// `rdiv` wraps it in a tensor of that dtype: `half_x + 0.1` adds float16(0.1));
/// elsewhere it keeps its full precision and meets the tensor in the dtype's
/// compute type (see [`Rhs::Scalar`]).
fn number(value: Scalar, dtype: DType, op: BinaryOp, left: bool) -> Rhs<'static> {
    let rounded = matches!(
        op,
        BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::DivFloor
            | BinaryOp::DivTrunc
            | BinaryOp::Remainder
            | BinaryOp::Fmod
    ) || (left && op == BinaryOp::Div);
    let value = if rounded {
        value.rounded_to(dtype)
    } else {
        value
    };
    Rhs::Scalar { value, left }
}

/// `a op b` as a new tensor.
///
/// ```
/// use dlbridge::{BinaryOp, Tensor, ops};
/// let a = Tensor::from_vec(vec![1i32, 2], &[2])?;
/// let r = ops::binary(2.5.into(), (&a).into(), BinaryOp::Sub)?; // 2.5 - a
/// assert_eq!(r.to_vec::<f32>()?, vec![1.5, 0.5]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn binary(a: Operand, b: Operand, op: BinaryOp) -> Result<Tensor> {
    let (lifted_a, lifted_b) = lift_pair(a, b)?;
    let a = lifted_a.as_ref().map_or(a, Operand::Tensor);
    let b = lifted_b.as_ref().map_or(b, Operand::Tensor);
    let device = device_of(&[a, b])?;
    let dtype = compute_dtype(op, result_type(&[a, b])?);
    check_op(op.name(), op.promotion(), dtype, device)?;
    check_bool_op(op, &a, &b)?;
    check_integer_power(op, dtype, &b)?;
    check_divisor(op, dtype, &b)?;
    if matches!(op, BinaryOp::Maximum | BinaryOp::Minimum) && dtype.is_complex() {
        bail!(
            WrongType,
            "{} not implemented for complex tensors.",
            op.name()
        );
    }
    if let (BinaryOp::Div, Operand::Tensor(x), Operand::Tensor(y)) = (op, a, b)
        && x.dtype() == y.dtype()
        && x.dtype().category() == Category::Integral
        && let Some(out) = backend::of(device).divide_casting(x, y, dtype)?
    {
        return Ok(out);
    }
    let number = |s, left| number(s, dtype, op, left);
    let tensors = tensors_of(a, b);
    let block = backend::of(device).block_elements();
    if tensors
        .iter()
        .any(|t| t.dtype() != dtype && t.numel() > CAST_BLOCKS_FROM * block)
    {
        // A whole cast of a large operand is a temporary as large as the
        // output, written to fresh memory and read back from DRAM: cast
        // and compute a block at a time, in cache.
        let shape = broadcast_shape(&tensors)?;
        let out =
            Tensor::empty_for_elementwise(&shape, &tensors, tensors.len() == 1, dtype, device)?;
        by_blocks(a, b, dtype, &out, block, number, |part, lhs, rhs| {
            backend::of(device).binary(part, lhs, rhs, op)
        })?;
        return Ok(out);
    }
    elementwise(a, b, dtype, number, |lhs, rhs, shape| {
        let out = Tensor::empty_for_elementwise(
            &shape,
            &operands(lhs, &rhs),
            is_number(&rhs),
            dtype,
            device,
        )?;
        backend::of(device).binary(&out, lhs, rhs, op)?;
        Ok(out)
    })
}

/// Blocks ([`Backend::block_elements`](crate::backend::Backend::block_elements))
/// in an operand to cast from which `binary` casts a block at a time:
/// below this, a whole cast's temporary stays in L2 and one call costs less
/// than a call per block (a few µs each).
const CAST_BLOCKS_FROM: usize = 4;

/// The tensor operands, in argument order.
fn tensors_of<'a>(a: Operand<'a>, b: Operand<'a>) -> SmallVec<[&'a Tensor; 2]> {
    [a, b]
        .into_iter()
        .filter_map(|o| match o {
            Operand::Tensor(t) => Some(t),
            Operand::Scalar(_) => None,
        })
        .collect()
}

/// The shape the tensor operands (one or two) broadcast to.
fn broadcast_shape(tensors: &[&Tensor]) -> Result<Vec<usize>> {
    match tensors {
        [x, y] => broadcast_shapes(x.shape(), y.shape()),
        _ => Ok(tensors[0].shape().to_vec()),
    }
}

/// Runs `run(part, lhs, rhs)` for each block of `out` (at most `len`
/// elements, see `blocks.rs`): `part` the block's view of `out`, `lhs` and
/// `rhs` the operands' blocks cast to `dtype` as [`elementwise`] gives them.
/// An operand no larger than a block (a 0-d tensor, a broadcast row) is
/// cast once, whole, not once a block.
fn by_blocks(
    a: Operand,
    b: Operand,
    dtype: DType,
    out: &Tensor,
    len: usize,
    number: impl Fn(Scalar, bool) -> Rhs<'static>,
    run: impl Fn(&Tensor, &Tensor, Rhs) -> Result<()>,
) -> Result<()> {
    let shape = out.shape();
    let small = |o: Operand| match o {
        Operand::Tensor(t) if t.numel() <= len => t.to_dtype(dtype).map(Some),
        _ => Ok(None),
    };
    let (small_a, small_b) = (small(a)?, small(b)?);
    let a = small_a.as_ref().map_or(a, Operand::Tensor);
    let b = small_b.as_ref().map_or(b, Operand::Tensor);
    for sel in blocks::blocks(shape, len) {
        let part = out.index(&sel)?;
        let view = |o: Operand| match o {
            Operand::Tensor(t) => blocks::block_of(t, shape, &sel).map(Some),
            Operand::Scalar(_) => Ok(None),
        };
        let (va, vb) = (view(a)?, view(b)?);
        let pa = va.as_ref().map_or(a, Operand::Tensor);
        let pb = vb.as_ref().map_or(b, Operand::Tensor);
        elementwise(pa, pb, dtype, &number, |lhs, rhs, _| run(&part, lhs, rhs))?;
    }
    Ok(())
}

/// Both sides' zero-dim CPU tensors lifted onto the other side's device
/// where PyTorch allows it (see [`lift_cpu_scalar`]).
fn lift_pair(a: Operand, b: Operand) -> Result<(Option<Tensor>, Option<Tensor>)> {
    match (a, b) {
        (Operand::Tensor(x), Operand::Tensor(y)) => {
            Ok((lift_cpu_scalar(x, &b)?, lift_cpu_scalar(y, &a)?))
        }
        _ => Ok((None, None)),
    }
}

/// Calls `run(lhs, rhs, shape)` for an elementwise op on `a` and `b`: the
/// tensor side (the left one when both are) cast to `dtype`, the other as a
/// tensor of `dtype` or as the number `number(value, left)` gives, and the
/// broadcast output shape.
fn elementwise<R>(
    a: Operand,
    b: Operand,
    dtype: DType,
    number: impl Fn(Scalar, bool) -> Rhs<'static>,
    run: impl FnOnce(&Tensor, Rhs, Vec<usize>) -> Result<R>,
) -> Result<R> {
    // Operands already of `dtype` are borrowed (a clone costs allocations).
    let (cast_lhs, cast_rhs): (Tensor, Tensor);
    let (lhs, rhs) = match (a, b) {
        (Operand::Tensor(x), Operand::Tensor(y)) if y.dtype() == dtype => (x, Rhs::Tensor(y)),
        (Operand::Tensor(x), Operand::Tensor(y)) => {
            cast_rhs = y.to_dtype(dtype)?;
            (x, Rhs::Tensor(&cast_rhs))
        }
        (Operand::Tensor(x), Operand::Scalar(s)) => (x, number(s, false)),
        (Operand::Scalar(s), Operand::Tensor(y)) => (y, number(s, true)),
        (Operand::Scalar(_), Operand::Scalar(_)) => crate::bail!(
            WrongType,
            "an operation needs at least one tensor operand, got only numbers"
        ),
    };
    let lhs = if lhs.dtype() == dtype {
        lhs
    } else {
        cast_lhs = lhs.to_dtype(dtype)?;
        &cast_lhs
    };
    let shape = match rhs {
        Rhs::Tensor(r) => broadcast_shapes(lhs.shape(), r.shape())?,
        Rhs::Scalar { .. } => lhs.shape().to_vec(),
    };
    run(lhs, rhs, shape)
}

/// The tensors of an elementwise op, in argument order (a number is none).
fn operands<'a>(lhs: &'a Tensor, rhs: &Rhs<'a>) -> SmallVec<[&'a Tensor; 2]> {
    match rhs {
        Rhs::Tensor(r) => smallvec![lhs, *r],
        Rhs::Scalar { .. } => smallvec![lhs],
    }
}

/// Whether the other operand is a number.
fn is_number(rhs: &Rhs) -> bool {
    matches!(rhs, Rhs::Scalar { .. })
}

/// An in-place op computes in `dtype` and writes into `dst`: refused, with
/// PyTorch's words, where `dtype` cannot be cast to dst's dtype.
fn check_writes_back(dtype: DType, dst: &Tensor) -> Result<()> {
    if !DType::can_cast(dtype, dst.dtype()) {
        bail!(
            InvalidOperation,
            "result type {} can't be cast to the desired output type {}",
            dtype.scalar_type_name(),
            dst.dtype().scalar_type_name()
        );
    }
    Ok(())
}

/// `dst op= b`, writing into dst's memory (PyTorch's `add_` and `+=`).
///
/// ```
/// use dlbridge::{BinaryOp, Tensor, ops};
/// let a = Tensor::from_vec(vec![1i32, 2], &[2])?;
/// ops::binary_(&a, 3.into(), BinaryOp::Mul)?;
/// assert_eq!(a.to_vec::<i32>()?, vec![3, 6]);
/// assert!(ops::binary_(&a, 0.5.into(), BinaryOp::Mul).is_err()); // float into int
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn binary_(dst: &Tensor, b: Operand, op: BinaryOp) -> Result<()> {
    let lifted = match b {
        Operand::Tensor(t) => lift_cpu_scalar(t, &Operand::Tensor(dst))?,
        Operand::Scalar(_) => None,
    };
    let b = lifted.as_ref().map_or(b, Operand::Tensor);
    let device = device_of(&[Operand::Tensor(dst), b])?;
    let dtype = compute_dtype(op, result_type(&[Operand::Tensor(dst), b])?);
    check_op(op.name(), op.promotion(), dtype, device)?;
    check_writes_back(dtype, dst)?;
    check_bool_op(op, &Operand::Tensor(dst), &b)?;
    check_integer_power(op, dtype, &b)?;
    check_divisor(op, dtype, &b)?;
    if let Operand::Tensor(t) = b {
        let shape = broadcast_shapes(dst.shape(), t.shape())?;
        if shape != dst.shape() {
            bail!(
                InvalidOperation,
                "output with shape {:?} doesn't match the broadcast shape {:?}",
                dst.shape(),
                shape
            );
        }
    }
    dst.ensure_writable()?;
    if dtype != dst.dtype() {
        // Compute in the promoted dtype, then cast back into dst (PyTorch does the same).
        let result = binary(Operand::Tensor(dst), b, op)?;
        return dst.copy_(&result);
    }
    // A right-hand side sharing dst's memory is read from a copy: the
    // backends write dst as they go.
    let cast_rhs: Tensor;
    let rhs = match b {
        Operand::Tensor(t) => {
            cast_rhs = match t.to_dtype(dtype)? {
                r if r.may_overlap(dst) => r.clone_data()?,
                r => r,
            };
            Rhs::Tensor(&cast_rhs)
        }
        Operand::Scalar(s) => number(s, dtype, op, false),
    };
    backend::of(device).binary(dst, dst, rhs, op)
}

/// `-a`.
///
/// ```
/// use dlbridge::{Tensor, ops};
/// let a = Tensor::from_vec(vec![1.0f32, -2.0], &[2])?;
/// assert_eq!(ops::neg(&a)?.to_vec::<f32>()?, vec![-1.0, 2.0]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn neg(a: &Tensor) -> Result<Tensor> {
    check_negatable(a)?;
    let out = Tensor::empty_for_elementwise(a.shape(), &[a], false, a.dtype(), a.device())?;
    backend::of(a.device()).unary(&out, a, UnaryOp::Neg)?;
    Ok(out)
}

/// `a = -a`, in a's memory (PyTorch's `neg_`), refused for bool as [`neg`].
pub fn neg_(a: &Tensor) -> Result<()> {
    check_negatable(a)?;
    a.ensure_writable()?;
    backend::of(a.device()).unary(a, a, UnaryOp::Neg)
}

/// PyTorch's refusals of `-a`: bool, and the storage-only dtypes.
fn check_negatable(a: &Tensor) -> Result<()> {
    if a.dtype() == DType::Bool {
        bail!(
            NotImplemented,
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert \
             a mask, use the `~` or `logical_not()` operator instead."
        );
    }
    check_computable("neg", a.dtype(), a.device())
}

/// `|a|`: the magnitude, a real tensor for complex input; refused for bool.
///
/// ```
/// use dlbridge::{Tensor, ops, num_complex::Complex32};
/// let z = Tensor::from_vec(vec![Complex32::new(3.0, 4.0)], &[1])?;
/// assert_eq!(ops::abs(&z)?.to_vec::<f32>()?, vec![5.0]); // a real result
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn abs(a: &Tensor) -> Result<Tensor> {
    if a.dtype() == DType::Bool {
        bail!(
            NotImplemented,
            "\"abs_{}\" not implemented for 'Bool'",
            a.device().kind.name()
        );
    }
    check_computable("abs", a.dtype(), a.device())?;
    let out =
        Tensor::empty_for_elementwise(a.shape(), &[a], false, a.dtype().to_real(), a.device())?;
    backend::of(a.device()).unary(&out, a, UnaryOp::Abs)?;
    Ok(out)
}

/// `op(a)` for a unary op of the table: a new tensor of the dtype the op's
/// promotion gives (integers and bools become float for `exp`).
///
/// ```
/// use dlbridge::{DType, Tensor, UnaryOp, ops};
/// let a = Tensor::from_vec(vec![4i64], &[1])?;
/// let r = ops::unary(&a, UnaryOp::Sqrt)?;
/// assert_eq!((r.dtype(), r.to_vec::<f32>()?), (DType::F32, vec![2.0]));
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn unary(a: &Tensor, op: UnaryOp) -> Result<Tensor> {
    let dtype = op.promotion().apply(a.dtype());
    check_op(op.name(), op.promotion(), dtype, a.device())?;
    let src = a.to_dtype(dtype)?;
    let out = Tensor::empty_for_elementwise(a.shape(), &[a], false, dtype, a.device())?;
    backend::of(a.device()).unary(&out, &src, op)?;
    Ok(out)
}

/// `dst = op(dst)` in dst's memory (`exp_()`): refused where the op's
/// dtype cannot be cast back to dst's, as PyTorch does.
///
/// ```
/// use dlbridge::{Tensor, UnaryOp, ops};
/// let a = Tensor::from_vec(vec![4.0f64], &[1])?;
/// ops::unary_(&a, UnaryOp::Sqrt)?;
/// assert_eq!(a.to_vec::<f64>()?, vec![2.0]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn unary_(dst: &Tensor, op: UnaryOp) -> Result<()> {
    let dtype = op.promotion().apply(dst.dtype());
    check_op(op.name(), op.promotion(), dtype, dst.device())?;
    check_writes_back(dtype, dst)?;
    dst.ensure_writable()?;
    if dtype != dst.dtype() {
        return dst.copy_(&unary(dst, op)?);
    }
    backend::of(dst.device()).unary(dst, dst, op)
}

/// `a op b` for a comparison, as a bool tensor: both sides promoted to
/// their result type (a number rounded to it, as PyTorch does), broadcast.
///
/// ```
/// use dlbridge::{CompareOp, Tensor, ops};
/// let a = Tensor::from_vec(vec![1u8, 5], &[2])?;
/// let m = ops::compare((&a).into(), 3.into(), CompareOp::Lt)?;
/// assert_eq!(m.to_vec::<bool>()?, vec![true, false]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn compare(a: Operand, b: Operand, op: CompareOp) -> Result<Tensor> {
    let (lifted_a, lifted_b) = lift_pair(a, b)?;
    let a = lifted_a.as_ref().map_or(a, Operand::Tensor);
    let b = lifted_b.as_ref().map_or(b, Operand::Tensor);
    let device = device_of(&[a, b])?;
    let dtype = result_type(&[a, b])?;
    check_computable(op.name(), dtype, device)?;
    if op.orders() && dtype.is_complex() {
        bail!(
            NotImplemented,
            "\"{}_{}\" not implemented for '{}'",
            op.name(),
            device.kind.name(),
            dtype.scalar_type_name()
        );
    }
    let number = |value: Scalar, left| Rhs::Scalar {
        value: value.rounded_to(dtype),
        left,
    };
    let tensors = tensors_of(a, b);
    if tensors.iter().all(|t| t.dtype() == dtype) {
        return elementwise(a, b, dtype, number, |lhs, rhs, shape| {
            let out = Tensor::empty_for_elementwise(
                &shape,
                &operands(lhs, &rhs),
                is_number(&rhs),
                DType::Bool,
                device,
            )?;
            backend::of(device).compare(&out, lhs, rhs, op)?;
            Ok(out)
        });
    }
    // An operand to cast: a block of the output at a time, so the cast
    // copies stay no larger than the bool output (or a few KiB).
    let shape = broadcast_shape(&tensors)?;
    let out =
        Tensor::empty_for_elementwise(&shape, &tensors, tensors.len() == 1, DType::Bool, device)?;
    let len = blocks::block_len(
        out.numel(),
        1,
        dtype.size(),
        backend::of(device).block_elements(),
    );
    by_blocks(a, b, dtype, &out, len, number, |part, lhs, rhs| {
        backend::of(device).compare(part, lhs, rhs, op)
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    fn t(shape: &[usize], dtype: DType) -> Tensor {
        Tensor::zeros(shape, dtype, Device::CPU).unwrap()
    }

    #[test]
    fn arithmetic_broadcasts_and_promotes() {
        let a =
            Tensor::from_scalars(&[2, 1], &[Scalar::Int(1), Scalar::Int(2)], DType::I32).unwrap();
        let b = Tensor::from_scalars(&[3], &[Scalar::Float(0.5); 3], DType::F64).unwrap();
        let c = binary((&a).into(), (&b).into(), BinaryOp::Add).unwrap();
        assert_eq!(c.shape(), &[2, 3]);
        assert_eq!(c.dtype(), DType::F64);
        assert_eq!(c.to_scalars().unwrap()[3], Scalar::Float(2.5));
        let d = binary((&a).into(), Scalar::Int(2).into(), BinaryOp::Div).unwrap();
        assert_eq!(d.dtype(), DType::F32);
        assert_eq!(
            d.to_scalars().unwrap(),
            vec![Scalar::Float(0.5), Scalar::Float(1.0)]
        );
    }

    #[test]
    fn in_place_rules() {
        let a = t(&[3], DType::I64);
        let err = binary_(&a, Scalar::Float(1.5).into(), BinaryOp::Add).unwrap_err();
        assert_eq!(
            err.to_string(),
            "result type Float can't be cast to the desired output type Long"
        );
        let wide = t(&[2, 3], DType::I64);
        assert!(binary_(&a, (&wide).into(), BinaryOp::Add).is_err());
        let f = t(&[3], DType::F32);
        binary_(&f, Scalar::Int(2).into(), BinaryOp::Add).unwrap();
        binary_(&f, (&f).into(), BinaryOp::Mul).unwrap();
        assert_eq!(f.to_scalars().unwrap(), vec![Scalar::Float(4.0); 3]);
    }

    fn from(values: &[Scalar], dtype: DType) -> Tensor {
        Tensor::from_scalars(&[values.len()], values, dtype).unwrap()
    }

    #[test]
    fn comparisons_promote_and_round_numbers_to_the_dtype() {
        let i = from(
            &[Scalar::Int(1), Scalar::Int(2), Scalar::Int(3)],
            DType::I32,
        );
        let eq = compare((&i).into(), Scalar::Int(2).into(), CompareOp::Eq).unwrap();
        assert_eq!(eq.dtype(), DType::Bool);
        assert_eq!(
            eq.to_scalars().unwrap(),
            [false, true, false].map(Scalar::Bool)
        );
        let lt = compare((&i).into(), Scalar::Float(2.5).into(), CompareOp::Lt).unwrap();
        assert_eq!(
            lt.to_scalars().unwrap(),
            [true, true, false].map(Scalar::Bool)
        );
        // uint8 < -1: -1 wraps to 255 in uint8, as in PyTorch.
        let u = from(&[Scalar::Int(1)], DType::U8);
        let wrapped = compare((&u).into(), Scalar::Int(-1).into(), CompareOp::Lt).unwrap();
        assert_eq!(wrapped.item().unwrap(), Scalar::Bool(true));
        let h = from(&[Scalar::Float(1.5)], DType::F16);
        let close = compare((&h).into(), Scalar::Float(1.5000001).into(), CompareOp::Eq).unwrap();
        assert_eq!(close.item().unwrap(), Scalar::Bool(true));
        let nan = from(&[Scalar::Float(f64::NAN)], DType::F32);
        for op in [CompareOp::Eq, CompareOp::Lt, CompareOp::Ge] {
            let r = compare((&nan).into(), (&nan).into(), op).unwrap();
            assert_eq!(r.item().unwrap(), Scalar::Bool(false), "{op:?}");
        }
        let c = from(&[Scalar::Complex(0.0, 1.0)], DType::C64);
        assert!(compare((&c).into(), Scalar::Int(1).into(), CompareOp::Lt).is_err());
        assert!(compare((&c).into(), Scalar::Complex(0.0, 1.0).into(), CompareOp::Eq).is_ok());
    }

    #[test]
    fn powers_and_magnitudes_follow_torch() {
        let i = from(
            &[Scalar::Int(1), Scalar::Int(2), Scalar::Int(3)],
            DType::I32,
        );
        let sq = binary((&i).into(), Scalar::Int(2).into(), BinaryOp::Pow).unwrap();
        assert_eq!(
            (sq.dtype(), sq.to_scalars().unwrap()),
            (DType::I32, [1, 4, 9].map(Scalar::Int).to_vec())
        );
        assert!(binary((&i).into(), Scalar::Int(-1).into(), BinaryOp::Pow).is_err());
        let e = from(
            &[Scalar::Int(-1), Scalar::Int(-1), Scalar::Int(-2)],
            DType::I32,
        );
        let b = from(
            &[Scalar::Int(2), Scalar::Int(-1), Scalar::Int(-1)],
            DType::I32,
        );
        let neg = binary((&b).into(), (&e).into(), BinaryOp::Pow).unwrap();
        assert_eq!(neg.to_scalars().unwrap(), [0, -1, 1].map(Scalar::Int));
        let f = binary((&i).into(), Scalar::Float(0.5).into(), BinaryOp::Pow).unwrap();
        assert_eq!(f.dtype(), DType::F32);
        let wrap = from(&[Scalar::Int(3)], DType::I8);
        let w = binary((&wrap).into(), Scalar::Int(5).into(), BinaryOp::Pow).unwrap();
        assert_eq!(w.item().unwrap(), Scalar::Int(-13));
        let m = abs(&from(&[Scalar::Complex(-3.0, 4.0)], DType::C64)).unwrap();
        // Within rounding: Miri perturbs libm results on purpose.
        assert_eq!(m.dtype(), DType::F32);
        assert!(matches!(m.item().unwrap(), Scalar::Float(x) if (x - 5.0).abs() < 1e-5));
        let min = abs(&from(&[Scalar::Int(-128)], DType::I8)).unwrap();
        assert_eq!(min.item().unwrap(), Scalar::Int(-128));
        assert!(abs(&from(&[Scalar::Bool(true)], DType::Bool)).is_err());
    }
}
