//! Full reductions. Floats accumulate in f64 and integers in i64 (PyTorch's
//! `sum` returns int64 for integers and bool), so results do not drift with size.

use super::strided::view;
use crate::{Element, Scalar, Tensor, with_element};
use num_complex::Complex64;

/// The sum of every element, as a scalar of the accumulation kind.
pub(crate) fn sum_all(t: &Tensor) -> Scalar {
    with_element!(t.dtype(), T => sum_typed::<T>(t))
}

fn sum_typed<T: Element>(t: &Tensor) -> Scalar {
    // SAFETY: the caller passes a materialized tensor of dtype T.
    let v = unsafe { view::<T>(t) }.unwrap();
    match T::DTYPE.category() {
        crate::Category::Complex => {
            let s = v
                .iter()
                .fold(Complex64::new(0.0, 0.0), |acc, &x| match x.to_scalar() {
                    Scalar::Complex(re, im) => acc + Complex64::new(re, im),
                    _ => acc,
                });
            Scalar::Complex(s.re, s.im)
        }
        crate::Category::Floating => {
            Scalar::Float(v.iter().fold(0.0, |acc, &x| acc + x.cast::<f64>()))
        }
        _ => Scalar::Int(
            v.iter()
                .fold(0i64, |acc, &x| acc.wrapping_add(x.cast::<i64>())) as i128,
        ),
    }
}
