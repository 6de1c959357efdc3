//! The ops as methods that read as Rust: `a.add(&b)?`, `a.mul(2.0)?`,
//! `a.exp()?`, `a.sum()?`, `a.lt(0)?`. Each calls the function of
//! [`crate::ops`] that Python's and C's entries call, so the semantics
//! (PyTorch's promotion, broadcasting, errors) are the same everywhere.
//! The elementwise ones are generated from the op tables of
//! [`crate::backend`] ([`binary_ops!`](crate::binary_ops),
//! [`unary_ops!`](crate::unary_ops)): a new row is a new method, and its
//! in-place column (`exp_`) the in-place one.

use crate::ops::{self, Operand};
use crate::{BinaryOp, CompareOp, DType, Result, Tensor, UnaryOp};

/// `op(a)` as Python's `t.op()` computes it: `neg` and `abs` have rules of
/// their own (bool refused, complex `abs` real), the others the table's.
fn unary(a: &Tensor, op: UnaryOp) -> Result<Tensor> {
    match op {
        UnaryOp::Neg => ops::neg(a),
        UnaryOp::Abs => ops::abs(a),
        _ => ops::unary(a, op),
    }
}

/// The doc examples' operands by promotion rule: integers for the bitwise
/// rows (which refuse floats), float32 for the others.
macro_rules! example {
    (Integral, data) => {
        "vec![1i32, 4]"
    };
    (Integral, three) => {
        "vec![1i32; 3]"
    };
    (Integral, num) => {
        "2"
    };
    (Integral, dtype) => {
        "DType::I32"
    };
    (Integral, elem) => {
        "i32"
    };
    (Integral, orig) => {
        "vec![1, 4]"
    };
    ($p:ident, data) => {
        "vec![1.0f32, 4.0]"
    };
    ($p:ident, three) => {
        "vec![1.0f32; 3]"
    };
    ($p:ident, num) => {
        "2.0"
    };
    ($p:ident, dtype) => {
        "DType::F32"
    };
    ($p:ident, elem) => {
        "f32"
    };
    ($p:ident, orig) => {
        "vec![1.0, 4.0]"
    };
}

macro_rules! binary_methods {
    ($($(#[$doc:meta])* $V:ident, $name:literal, $f:ident, $promo:ident, $gen:literal $(, $ip:ident)?;)*) => {
        /// The binary ops of [`binary_ops!`](crate::binary_ops), one method
        /// per row: the other operand is a `&Tensor` or a number (`f64`,
        /// `i64`, `bool`, [`Scalar`](crate::Scalar), ...).
        impl Tensor {$(
            #[doc = concat!("`", $name, "(self, other)` as a new tensor, with PyTorch's type promotion and broadcasting.")]
            ///
            $(#[$doc])*
            ///
            /// ```
            /// use dlbridge::{DType, Tensor};
            #[doc = concat!("let a = Tensor::from_vec(", example!($promo, data), ", &[2])?;")]
            #[doc = concat!("let r = a.", stringify!($f), "(&a)?.", stringify!($f), "(", example!($promo, num), ")?; // a tensor, then a number")]
            #[doc = concat!("assert_eq!((r.shape(), r.dtype()), (&[2][..], ", example!($promo, dtype), "));")]
            #[doc = concat!("assert!(a.", stringify!($f), "(&Tensor::from_vec(", example!($promo, three), ", &[3])?).is_err()); // shapes that do not broadcast")]
            /// # Ok::<(), dlbridge::Error>(())
            /// ```
            pub fn $f<'a>(&self, other: impl Into<Operand<'a>>) -> Result<Tensor> {
                ops::binary(Operand::Tensor(self), other.into(), BinaryOp::$V)
            }
        $(
            #[doc = concat!("`self.", stringify!($ip), "(other)`: `", $name,
                "` written into this tensor's memory (refused where the result dtype cannot be cast back, or the memory is read-only).")]
            ///
            /// ```
            /// use dlbridge::Tensor;
            #[doc = concat!("let a = Tensor::from_vec(", example!($promo, data), ", &[2])?;")]
            /// let shared = a.clone(); // the same memory
            #[doc = concat!("a.", stringify!($ip), "(", example!($promo, num), ")?;")]
            #[doc = concat!("assert_ne!(shared.to_vec::<", example!($promo, elem), ">()?, ", example!($promo, orig), "); // the clone sees the write")]
            /// # Ok::<(), dlbridge::Error>(())
            /// ```
            pub fn $ip<'a>(&self, other: impl Into<Operand<'a>>) -> Result<()> {
                ops::binary_(self, other.into(), BinaryOp::$V)
            }
        )?
        )*}
    };
}
crate::binary_ops!(binary_methods);

macro_rules! unary_methods {
    ($($(#[$doc:meta])* $V:ident, $name:literal, $f:ident, $promo:ident, $gen:literal $(, $ip:ident)?;)*) => {
        /// The unary ops of [`unary_ops!`](crate::unary_ops), one method per row.
        impl Tensor {$(
            #[doc = concat!("`", $name, "(self)` as a new tensor.")]
            ///
            $(#[$doc])*
            ///
            /// ```
            /// use dlbridge::{DType, Tensor};
            #[doc = concat!("let a = Tensor::from_vec(", example!($promo, data), ", &[2])?;")]
            #[doc = concat!("let r = a.", stringify!($f), "()?;")]
            #[doc = concat!("assert_eq!((r.shape(), r.dtype()), (&[2][..], ", example!($promo, dtype), "));")]
            /// # Ok::<(), dlbridge::Error>(())
            /// ```
            pub fn $f(&self) -> Result<Tensor> {
                unary(self, UnaryOp::$V)
            }
        $(
            #[doc = concat!("`self.", stringify!($ip), "()`: `", $name, "` written into this tensor's memory.")]
            ///
            /// ```
            /// use dlbridge::Tensor;
            #[doc = concat!("let a = Tensor::from_vec(", example!($promo, data), ", &[2])?;")]
            #[doc = concat!("a.", stringify!($ip), "()?;")]
            #[doc = concat!("assert_ne!(a.to_vec::<", example!($promo, elem), ">()?, ", example!($promo, orig), ");")]
            /// # Ok::<(), dlbridge::Error>(())
            /// ```
            pub fn $ip(&self) -> Result<()> {
                ops::unary_(self, UnaryOp::$V)
            }
        )?
        )*}
    };
}
crate::unary_ops!(unary_methods);

macro_rules! compare_methods {
    ($($f:ident => $V:ident),*) => {
        impl Tensor {$(
            #[doc = concat!("`self ", stringify!($f), " other` elementwise, as a bool tensor (both sides promoted, then broadcast).")]
            ///
            /// ```
            /// use dlbridge::{DType, Tensor};
            /// let a = Tensor::from_vec(vec![1i32, 2, 3], &[3])?;
            #[doc = concat!("let m = a.", stringify!($f), "(2)?;")]
            /// assert_eq!((m.shape(), m.dtype()), (&[3][..], DType::Bool));
            /// # Ok::<(), dlbridge::Error>(())
            /// ```
            pub fn $f<'a>(&self, other: impl Into<Operand<'a>>) -> Result<Tensor> {
                ops::compare(Operand::Tensor(self), other.into(), CompareOp::$V)
            }
        )*}
    };
}
compare_methods!(eq => Eq, ne => Ne, lt => Lt, le => Le, gt => Gt, ge => Ge);

/// Reductions.
impl Tensor {
    /// The sum of every element, a zero-dim tensor (integers and bools sum
    /// in int64, as PyTorch).
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1i32, 2, 3], &[3])?;
    /// assert_eq!(t.sum()?.to_vec::<i64>()?, vec![6]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn sum(&self) -> Result<Tensor> {
        ops::sum(self, None, false, None)
    }

    /// The sum over `dims` (negative counts from the end), keeping them as
    /// size 1 if `keepdim`; `dtype` converts first (`sum(dim, keepdim, dtype=)`).
    pub fn sum_dims(&self, dims: &[i64], keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        ops::sum(self, Some(dims), keepdim, dtype)
    }

    /// The mean of every element (floating and complex tensors only).
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 6.0], &[3])?;
    /// assert_eq!(t.mean()?.to_vec::<f64>()?, vec![3.0]);
    /// assert!(Tensor::from_vec(vec![1i32], &[1])?.mean().is_err());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn mean(&self) -> Result<Tensor> {
        ops::mean(self, None, false, None)
    }

    /// The mean over `dims`, as [`sum_dims`](Self::sum_dims).
    pub fn mean_dims(&self, dims: &[i64], keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        ops::mean(self, Some(dims), keepdim, dtype)
    }

    /// The largest element (NaN wins), a zero-dim tensor; refused when empty.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![3i8, -9, 7], &[3])?;
    /// assert_eq!(t.max()?.to_vec::<i8>()?, vec![7]);
    /// assert_eq!(t.min()?.to_vec::<i8>()?, vec![-9]);
    /// assert_eq!(t.argmax(None, false)?.to_vec::<i64>()?, vec![2]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn max(&self) -> Result<Tensor> {
        ops::max(self)
    }

    /// The smallest element (NaN wins), a zero-dim tensor; refused when empty.
    pub fn min(&self) -> Result<Tensor> {
        ops::min(self)
    }

    /// The largest values along `dim` and their first positions.
    pub fn max_dim(&self, dim: i64, keepdim: bool) -> Result<ops::Reduced> {
        ops::max_dim(self, dim, keepdim)
    }

    /// The smallest values along `dim` and their first positions.
    pub fn min_dim(&self, dim: i64, keepdim: bool) -> Result<ops::Reduced> {
        ops::min_dim(self, dim, keepdim)
    }

    /// The largest values over `dims` (all of them for an empty list).
    pub fn amax(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        ops::amax(self, Some(dims), keepdim)
    }

    /// The smallest values over `dims` (all of them for an empty list).
    pub fn amin(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        ops::amin(self, Some(dims), keepdim)
    }

    /// The position of the largest value along `dim`, or in the flattened
    /// tensor for `None` (int64).
    pub fn argmax(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        ops::argmax(self, dim, keepdim)
    }

    /// The position of the smallest value, as [`argmax`](Self::argmax).
    pub fn argmin(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        ops::argmin(self, dim, keepdim)
    }

    /// Whether every element is non-zero (a bool zero-dim tensor).
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 0.0], &[2])?;
    /// assert_eq!(t.all()?.to_vec::<bool>()?, vec![false]);
    /// assert_eq!(t.any()?.to_vec::<bool>()?, vec![true]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn all(&self) -> Result<Tensor> {
        ops::all(self, None, false)
    }

    /// Whether some element is non-zero (a bool zero-dim tensor).
    pub fn any(&self) -> Result<Tensor> {
        ops::any(self, None, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Device, ErrorKind};

    #[test]
    fn methods_compute_as_the_ops_do() {
        let a = Tensor::from_vec(vec![1i32, 2, 3, 4], &[2, 2]).unwrap();
        let b = Tensor::from_vec(vec![10i32, 20], &[2]).unwrap();
        assert_eq!(
            a.add(&b).unwrap().to_vec::<i32>().unwrap(),
            [11, 22, 13, 24]
        );
        assert_eq!(a.sub(1).unwrap().to_vec::<i32>().unwrap(), [0, 1, 2, 3]);
        assert_eq!(
            a.mul(0.5).unwrap().to_vec::<f32>().unwrap(),
            [0.5, 1.0, 1.5, 2.0]
        );
        assert_eq!(a.div(&a).unwrap().dtype(), DType::F32);
        assert_eq!(a.pow(2).unwrap().to_vec::<i32>().unwrap(), [1, 4, 9, 16]);
        assert_eq!(
            a.maximum(&b).unwrap().to_vec::<i32>().unwrap(),
            [10, 20, 10, 20]
        );
        assert_eq!(
            a.minimum(&b).unwrap().to_vec::<i32>().unwrap(),
            [1, 2, 3, 4]
        );
        assert_eq!(a.neg().unwrap().to_vec::<i32>().unwrap(), [-1, -2, -3, -4]);
        assert_eq!(
            a.neg().unwrap().abs().unwrap().to_vec::<i32>().unwrap(),
            [1, 2, 3, 4]
        );
        assert_eq!(a.exp().unwrap().dtype(), DType::F32);
        assert_eq!(a.sqrt().unwrap().to_vec::<f32>().unwrap()[3], 2.0);
        assert_eq!(a.log().unwrap().to_vec::<f32>().unwrap()[0], 0.0);
        assert_eq!(
            a.gt(2).unwrap().to_vec::<bool>().unwrap(),
            [false, false, true, true]
        );
        assert_eq!(
            a.eq(&a).unwrap().all().unwrap().to_vec::<bool>().unwrap(),
            [true]
        );
        assert_eq!(
            a.ne(1).unwrap().to_vec::<bool>().unwrap(),
            [false, true, true, true]
        );
        assert_eq!(
            a.le(2).unwrap().to_vec::<bool>().unwrap(),
            [true, true, false, false]
        );
        assert_eq!(
            a.lt(2).unwrap().to_vec::<bool>().unwrap(),
            [true, false, false, false]
        );
        assert_eq!(
            a.ge(4).unwrap().to_vec::<bool>().unwrap(),
            [false, false, false, true]
        );
        assert_eq!(
            a.sum_dims(&[0], false, None)
                .unwrap()
                .to_vec::<i64>()
                .unwrap(),
            [4, 6]
        );
        let f = a.to_dtype(DType::F64).unwrap();
        assert_eq!(f.mean_dims(&[-1], true, None).unwrap().shape(), &[2, 1]);
        assert_eq!(
            a.amax(&[1], false).unwrap().to_vec::<i32>().unwrap(),
            [2, 4]
        );
        assert_eq!(a.amin(&[], false).unwrap().to_vec::<i32>().unwrap(), [1]);
        let m = a.max_dim(0, false).unwrap();
        assert_eq!(m.values.to_vec::<i32>().unwrap(), [3, 4]);
        assert_eq!(m.indices.to_vec::<i64>().unwrap(), [1, 1]);
        assert_eq!(
            a.min_dim(1, false)
                .unwrap()
                .indices
                .to_vec::<i64>()
                .unwrap(),
            [0, 0]
        );
        assert_eq!(
            a.argmin(Some(1), false).unwrap().to_vec::<i64>().unwrap(),
            [0, 0]
        );
        assert_eq!(
            a.lt(0).unwrap().any().unwrap().to_vec::<bool>().unwrap(),
            [false]
        );
    }

    #[test]
    fn in_place_methods_write_and_refuse_as_pytorch() {
        let a = Tensor::from_vec(vec![1.0f32, 4.0], &[2]).unwrap();
        a.add_(1.0).unwrap();
        a.mul_(&a).unwrap();
        a.sub_(1).unwrap();
        a.div_(2).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), [1.5, 12.0]);
        a.pow_(1).unwrap(); // (Miri makes powf, exp, log inexact on purpose)
        a.sqrt_().unwrap();
        a.exp_().unwrap();
        a.log_().unwrap();
        assert!((a.to_vec::<f32>().unwrap()[0] - 1.5f32.sqrt()).abs() < 1e-4);
        let i = Tensor::zeros(&[2], DType::I64, Device::CPU).unwrap();
        // An int tensor cannot take a float result in place, nor exp.
        assert_eq!(i.add_(0.5).unwrap_err().kind(), ErrorKind::InvalidOperation);
        assert_eq!(i.exp_().unwrap_err().kind(), ErrorKind::InvalidOperation);
        let b = Tensor::from_vec(vec![true], &[1]).unwrap();
        assert_eq!(b.neg().unwrap_err().kind(), ErrorKind::NotImplemented);
    }
}
