//! Arithmetic with PyTorch's type promotion, broadcasting and in-place rules.

use crate::backend::{self, BinaryOp, ReduceOp, Rhs, UnaryOp};
use crate::layout::broadcast_shapes;
use crate::{Category, DType, Device, Result, Scalar, Tensor, bail};

/// One side of a binary op: a tensor, or a Python number (a "wrapped number"
/// in PyTorch, which has the lowest say in the result dtype).
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    Tensor(&'a Tensor),
    Scalar(Scalar),
}

impl<'a> From<&'a Tensor> for Operand<'a> {
    fn from(t: &'a Tensor) -> Self {
        Operand::Tensor(t)
    }
}

impl From<Scalar> for Operand<'_> {
    fn from(s: Scalar) -> Self {
        Operand::Scalar(s)
    }
}

/// PyTorch's `combine_categories`: a lower-priority operand only matters when
/// it is of a higher category than `higher`.
fn combine(higher: Option<DType>, lower: Option<DType>) -> Result<Option<DType>> {
    let (Some(h), Some(l)) = (higher, lower) else {
        return Ok(higher.or(lower));
    };
    Ok(Some(match (h.category(), l.category()) {
        (Category::Complex, _) => h,
        (Category::Floating, Category::Complex) => DType::promote(h, DType::C64)?,
        (_, Category::Complex) => l,
        (Category::Floating, _) => h,
        (Category::Bool, _) | (_, Category::Floating) => DType::promote(h, l)?,
        _ => h,
    }))
}

/// `torch.result_type` over any operands: tensors with dimensions first,
/// then zero-dim tensors, then Python numbers.
pub fn result_type(operands: &[Operand]) -> Result<DType> {
    let (mut dims, mut zero, mut wrapped) = (None, None, None);
    for op in operands {
        let (slot, dt) = match op {
            Operand::Tensor(t) if t.ndim() > 0 => (&mut dims, t.dtype()),
            Operand::Tensor(t) => (&mut zero, t.dtype()),
            Operand::Scalar(s) => (&mut wrapped, s.wrapped_dtype()),
        };
        *slot = Some(match *slot {
            None => dt,
            Some(prev) => DType::promote(prev, dt)?,
        });
    }
    Ok(combine(dims, combine(zero, wrapped)?)?.expect("at least one operand"))
}

fn device_of(operands: &[Operand]) -> Result<Device> {
    let mut devices = operands.iter().filter_map(|op| match op {
        Operand::Tensor(t) => Some(t.device()),
        Operand::Scalar(_) => None,
    });
    let first = devices.next().expect("a tensor operand");
    for d in devices {
        if d != first {
            bail!(
                InvalidOperation,
                "Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
                if first.is_cpu() { d } else { first },
                if first.is_cpu() { first } else { d }
            );
        }
    }
    Ok(first)
}

/// PyTorch lets a zero-dim CPU tensor take part in a CUDA op as a value:
/// the copy of `t` on `other`'s device when that applies.
fn lift_cpu_scalar(t: &Tensor, other: &Operand) -> Result<Option<Tensor>> {
    match other {
        Operand::Tensor(o) if t.ndim() == 0 && t.device().is_cpu() && !o.device().is_cpu() => {
            Ok(Some(t.to_device(o.device())?))
        }
        _ => Ok(None),
    }
}

fn is_bool(op: &Operand) -> bool {
    match op {
        Operand::Tensor(t) => t.dtype() == DType::Bool,
        Operand::Scalar(s) => matches!(s, Scalar::Bool(_)),
    }
}

/// PyTorch refuses subtraction whenever an operand is bool.
fn check_bool_op(op: BinaryOp, a: &Operand, b: &Operand) -> Result<()> {
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

/// The dtype an op computes and returns in: true division of integers and
/// bools gives the default float type.
fn compute_dtype(op: BinaryOp, promoted: DType) -> DType {
    match promoted.category() {
        Category::Bool | Category::Integral if op == BinaryOp::Div => DType::DEFAULT_FLOAT,
        _ => promoted,
    }
}

/// A Python number as the backend gets it: on the left of `-` or `/` it is
/// first rounded to the op's dtype (PyTorch's `rsub`/`rdiv` wrap it in a
/// tensor of that dtype); elsewhere it keeps its full precision and meets the
/// tensor in the dtype's compute type (see [`Rhs::Scalar`]).
fn number(value: Scalar, dtype: DType, op: BinaryOp, left: bool) -> Rhs<'static> {
    let value = if left && matches!(op, BinaryOp::Sub | BinaryOp::Div) {
        value.rounded_to(dtype)
    } else {
        value
    };
    Rhs::Scalar { value, left }
}

/// `a op b` as a new tensor.
pub fn binary(a: Operand, b: Operand, op: BinaryOp) -> Result<Tensor> {
    let (lifted_a, lifted_b) = match (a, b) {
        (Operand::Tensor(x), Operand::Tensor(y)) => {
            (lift_cpu_scalar(x, &b)?, lift_cpu_scalar(y, &a)?)
        }
        _ => (None, None),
    };
    let a = lifted_a.as_ref().map_or(a, Operand::Tensor);
    let b = lifted_b.as_ref().map_or(b, Operand::Tensor);
    let device = device_of(&[a, b])?;
    let dtype = compute_dtype(op, result_type(&[a, b])?);
    check_bool_op(op, &a, &b)?;
    let cast_rhs: Tensor;
    let (lhs, rhs) = match (a, b) {
        (Operand::Tensor(x), Operand::Tensor(y)) => {
            cast_rhs = y.to_dtype(dtype)?;
            (x, Rhs::Tensor(&cast_rhs))
        }
        (Operand::Tensor(x), Operand::Scalar(s)) => (x, number(s, dtype, op, false)),
        (Operand::Scalar(s), Operand::Tensor(y)) => (y, number(s, dtype, op, true)),
        (Operand::Scalar(_), Operand::Scalar(_)) => unreachable!("device_of needs a tensor"),
    };
    let lhs = lhs.to_dtype(dtype)?;
    let shape = match rhs {
        Rhs::Tensor(r) => broadcast_shapes(lhs.shape(), r.shape())?,
        Rhs::Scalar { .. } => lhs.shape().to_vec(),
    };
    let out = Tensor::empty(&shape, dtype, device)?;
    backend::of(device).binary(&out, &lhs, rhs, op)?;
    Ok(out)
}

/// `dst op= b`, writing into dst's memory (PyTorch's `add_` and `+=`).
pub fn binary_(dst: &Tensor, b: Operand, op: BinaryOp) -> Result<()> {
    let lifted = match b {
        Operand::Tensor(t) => lift_cpu_scalar(t, &Operand::Tensor(dst))?,
        Operand::Scalar(_) => None,
    };
    let b = lifted.as_ref().map_or(b, Operand::Tensor);
    let device = device_of(&[Operand::Tensor(dst), b])?;
    let dtype = compute_dtype(op, result_type(&[Operand::Tensor(dst), b])?);
    if !DType::can_cast(dtype, dst.dtype()) {
        bail!(
            InvalidOperation,
            "result type {} can't be cast to the desired output type {}",
            dtype.scalar_type_name(),
            dst.dtype().scalar_type_name()
        );
    }
    check_bool_op(op, &Operand::Tensor(dst), &b)?;
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
pub fn neg(a: &Tensor) -> Result<Tensor> {
    if a.dtype() == DType::Bool {
        bail!(
            NotImplemented,
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert \
             a mask, use the `~` or `logical_not()` operator instead."
        );
    }
    let out = Tensor::empty(a.shape(), a.dtype(), a.device())?;
    backend::of(a.device()).unary(&out, a, UnaryOp::Neg)?;
    Ok(out)
}

/// The dtype `sum` returns: integers and bools widen to int64.
fn sum_dtype(dtype: DType) -> DType {
    match dtype.category() {
        Category::Bool | Category::Integral => DType::I64,
        _ => dtype,
    }
}

/// The sum of every element, as a zero-dim tensor.
pub fn sum(a: &Tensor, dtype: Option<DType>) -> Result<Tensor> {
    let src = match dtype {
        Some(dt) => a.to_dtype(dt)?,
        None => a.clone(),
    };
    backend::of(a.device()).reduce(&src, ReduceOp::Sum, sum_dtype(src.dtype()))
}

/// The mean of every element; floating and complex tensors only, as in PyTorch.
pub fn mean(a: &Tensor, dtype: Option<DType>) -> Result<Tensor> {
    let dt = dtype.unwrap_or(a.dtype());
    if !(dt.is_floating_point() || dt.is_complex()) {
        bail!(
            NotImplemented,
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex \
             dtype. Got: {}",
            dt.scalar_type_name()
        );
    }
    backend::of(a.device()).reduce(&a.to_dtype(dt)?, ReduceOp::Mean, dt)
}

/// `arange(start, end, step)`: integers when every bound is an integer.
pub fn arange(
    start: Scalar,
    end: Scalar,
    step: Scalar,
    dtype: Option<DType>,
    device: Device,
) -> Result<Tensor> {
    let all_int = [start, end, step]
        .iter()
        .all(|s| matches!(s, Scalar::Int(_) | Scalar::Bool(_)));
    let dtype = dtype.unwrap_or(if all_int {
        DType::I64
    } else {
        DType::DEFAULT_FLOAT
    });
    let (s, e, st) = (start.as_f64(), end.as_f64(), step.as_f64());
    if st == 0.0 {
        bail!(InvalidOperation, "step must be nonzero");
    }
    if !(s.is_finite() && e.is_finite()) {
        bail!(InvalidOperation, "unsupported range: {s} -> {e}");
    }
    if (st > 0.0 && e < s) || (st < 0.0 && e > s) {
        bail!(
            InvalidOperation,
            "upper bound and lower bound inconsistent with step sign"
        );
    }
    let n = ((e - s) / st).ceil() as usize;
    let values: Vec<Scalar> = match (start, step) {
        (Scalar::Int(a), Scalar::Int(b)) if all_int => {
            (0..n).map(|i| Scalar::Int(a + b * i as i128)).collect()
        }
        _ => (0..n).map(|i| Scalar::Float(s + st * i as f64)).collect(),
    };
    Tensor::from_scalars(&[n], &values, dtype)?.to_device(device)
}

/// The identity matrix (`eye(n, m)`).
pub fn eye(n: usize, m: Option<usize>, dtype: DType, device: Device) -> Result<Tensor> {
    let m = m.unwrap_or(n);
    let t = Tensor::zeros(&[n, m], dtype, device)?;
    let diagonal = t.with_layout(crate::Layout {
        shape: vec![n.min(m)],
        strides: vec![t.layout().strides.iter().sum()],
        offset: 0,
    });
    diagonal.fill_(Scalar::Int(1))?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[usize], dtype: DType) -> Tensor {
        Tensor::zeros(shape, dtype, Device::CPU).unwrap()
    }

    #[test]
    fn result_type_follows_torch() {
        let (f16v, i32v, i32s, f64s) = (
            t(&[2], DType::F16),
            t(&[2], DType::I32),
            t(&[], DType::I32),
            t(&[], DType::F64),
        );
        let rt = |ops: &[Operand]| result_type(ops).unwrap();
        assert_eq!(rt(&[(&i32v).into(), Scalar::Float(1.0).into()]), DType::F32);
        assert_eq!(rt(&[(&i32v).into(), Scalar::Int(1).into()]), DType::I32);
        assert_eq!(rt(&[(&f16v).into(), Scalar::Float(1.0).into()]), DType::F16);
        assert_eq!(rt(&[(&i32v).into(), (&f64s).into()]), DType::F64);
        assert_eq!(rt(&[(&f16v).into(), (&f64s).into()]), DType::F16);
        assert_eq!(rt(&[(&i32s).into(), Scalar::Float(1.0).into()]), DType::F32);
        assert_eq!(
            rt(&[(&f16v).into(), Scalar::Complex(0.0, 1.0).into()]),
            DType::C64
        );
        assert_eq!(
            rt(&[Scalar::Bool(true).into(), (&t(&[1], DType::Bool)).into()]),
            DType::Bool
        );
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

    #[test]
    fn reductions_and_ranges() {
        let r = arange(
            Scalar::Int(0),
            Scalar::Int(5),
            Scalar::Int(1),
            None,
            Device::CPU,
        )
        .unwrap();
        assert_eq!(r.dtype(), DType::I64);
        assert_eq!(sum(&r, None).unwrap().item().unwrap(), Scalar::Int(10));
        assert!(mean(&r, None).is_err());
        let e = eye(2, Some(3), DType::F32, Device::CPU).unwrap();
        assert_eq!(sum(&e, None).unwrap().item().unwrap(), Scalar::Float(2.0));
        let m = mean(&e, None).unwrap();
        assert_eq!(
            m.item().unwrap(),
            Scalar::Float((2.0f64 / 6.0) as f32 as f64)
        );
    }
}
