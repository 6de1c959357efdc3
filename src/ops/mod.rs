//! PyTorch's semantics, written once for every device: type promotion,
//! broadcasting, in-place rules and scalar rounding. Each function checks
//! and prepares its operands, then hands the computation to
//! `backend::of(device)`; nothing here branches on the device.
//!
//! - `mod.rs`: operands, `result_type`, where an op runs;
//! - `arith.rs`: arithmetic, powers, comparisons, `neg`, `abs`, the zero
//!   divisor check of the rounding divisions and remainders;
//! - `scaled.rs`: `add`/`sub` with PyTorch's `alpha=`;
//! - `blocks.rs`: ops whose operands are cast a block of the output at a time;
//! - `reduce.rs`: `sum`, `mean`, `max`, `min`, `amax`, `amin`;
//! - `range.rs`: `arange`, `eye`;
//! - `derived.rs`: `all`, `any`, `argmax`, `argmin`, `conj_physical`, from the ops above;
//! - `index.rs`: advanced indexing (index tensors, masks), read and write.
//!
//! The methods of [`Tensor`] (`a.add(&b)`, `a.sum()`) call these; the free
//! functions take every argument PyTorch's do:
//!
//! ```
//! use dlbridge::{BinaryOp, Tensor, ops};
//! let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let b = ops::binary((&a).into(), 1.into(), BinaryOp::Add)?;
//! let s = ops::sum(&b, Some(&[0]), true, None)?;
//! assert_eq!((s.shape(), s.to_vec::<f32>()?), (&[1, 2][..], vec![6.0, 8.0]));
//! let r = ops::arange(0.into(), 5.into(), 2.into(), None, dlbridge::Device::CPU)?;
//! assert_eq!(r.to_vec::<i64>()?, vec![0, 2, 4]);
//! # Ok::<(), dlbridge::Error>(())
//! ```

mod arith;
mod blocks;
mod derived;
mod index;
mod range;
mod reduce;
mod scaled;

pub use arith::{abs, binary, binary_, compare, neg, neg_, unary, unary_};
pub use derived::{all, any, argmax, argmin, conj_physical};
pub use index::{AdvancedIndex, index_gather, index_put};
pub use range::{arange, eye};
pub use reduce::{Reduced, amax, amin, max, max_dim, mean, min, min_dim, sum};
pub use scaled::{binary_scaled, binary_scaled_};

use crate::{Category, DType, Device, Result, Scalar, Tensor, bail};

/// One side of a binary op: a tensor, or a Python number (a "wrapped number"
/// in PyTorch, which has the lowest say in the result dtype).
///
/// `&Tensor`, [`Scalar`] and Rust numbers convert into it, so methods such
/// as [`Tensor::add`] take either: `a.add(&b)`, `a.add(1)`, `a.add(0.5)`.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// A tensor operand.
    Tensor(&'a Tensor),
    /// A number operand.
    Scalar(Scalar),
}

macro_rules! operand_from_number {
    ($($t:ty),*) => {$(
        impl From<$t> for Operand<'_> {
            fn from(v: $t) -> Self {
                Operand::Scalar(Scalar::from(v))
            }
        }
    )*};
}
operand_from_number!(
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    f32,
    f64,
    bool,
    num_complex::Complex32,
    num_complex::Complex64
);

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

/// PyTorch's refusal of an op on a dtype it has no kernel for, which is what
/// dlbridge answers for arithmetic on the storage-only dtypes (float8,
/// float6, float4, complex32): `"add_cpu" not implemented for 'Float8_e4m3fn'`.
pub(crate) fn check_computable(kernel: &str, dtype: DType, device: Device) -> Result<()> {
    if dtype.is_storage_only() {
        bail!(
            NotImplemented,
            "\"{kernel}_{}\" not implemented for '{}'",
            device.kind.name(),
            dtype.scalar_type_name()
        );
    }
    Ok(())
}

/// `torch.result_type` over any operands: tensors with dimensions first,
/// then zero-dim tensors, then Python numbers.
///
/// ```
/// use dlbridge::{DType, Scalar, Tensor, ops::result_type};
/// let t = Tensor::from_vec(vec![1i32], &[1])?;
/// assert_eq!(result_type(&[(&t).into(), Scalar::Float(0.5).into()])?, DType::F32);
/// assert_eq!(result_type(&[(&t).into(), 2i64.into()])?, DType::I32);
/// # Ok::<(), dlbridge::Error>(())
/// ```
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
    combine(dims, combine(zero, wrapped)?)?
        .ok_or_else(|| crate::err!(InvalidValue, "result_type needs at least one operand"))
}

fn device_of(operands: &[Operand]) -> Result<Device> {
    let mut devices = operands.iter().filter_map(|op| match op {
        Operand::Tensor(t) => Some(t.device()),
        Operand::Scalar(_) => None,
    });
    let first = devices.next().ok_or_else(|| {
        crate::err!(
            WrongType,
            "an operation needs at least one tensor operand, got only numbers"
        )
    })?;
    for d in devices {
        if d != first {
            let (accelerator, other) = Device::host_last(first, d);
            bail!(
                InvalidOperation,
                "Expected all tensors to be on the same device, but found at least two devices, {accelerator} and {other}!"
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
}
