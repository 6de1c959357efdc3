//! `x ** e` for a number `e` PyTorch computes without `pow`: `x * x` for 2
//! is exact where `powf` costs a hundred times more. Which exponents, and
//! how, per dtype, follows ATen's `pow_tensor_scalar_kernel` (and `pow_out`,
//! which fills 1 for 0 and copies for 1), so the results are torch's bits:
//!
//! - float32, float64, bfloat16: 2 `x*x`, 3 `x*x*x`, 0.5 `sqrt`, -0.5
//!   `1/sqrt`, -1 `1/x`, -2 `1/(x*x)`; bfloat16 rounds `x*x` to bfloat16
//!   before the next step, as torch's bfloat16 arithmetic does. `sqrt` is
//!   correctly rounded (as NumPy's `x ** 0.5`); torch's SLEEF square root
//!   and its `rsqrt` are within an ulp of `sqrt` and `1/sqrt`, and give the
//!   same at the edges (`-0` to `-0` and `-inf`, `-inf` to NaN, where `pow`
//!   gives `+0` and `+inf`).
//! - float16: 2 only (torch calls `pow` for the rest; `x*x` is exact in
//!   float32, so it is `pow`'s correctly rounded result).
//! - integers: 2 and 3, wrapping as `pow` does.
//! - every real dtype: 0 gives 1 (NaN too), 1 the input.
//!
//! Complex numbers and bools keep the general path.
//!
//! The general path is [`Arith::pow`] (for float32 and float64 `vpow.rs`'
//! kernels, which float16 and bfloat16 compute in) as the loops'
//! [`Kernel`]: called by type, through buffers, so that the kernel's loop
//! inlines into the instruction-set copies and vectorises.

use super::arith::Arith;
use super::elementwise::{Arg, map_inplace, map_into, map_kernel};
use super::kernel::Kernel;
use super::operand::Sink;
use super::vpow;
use crate::{Category, DType, Element, Scalar, Tensor};

/// `out = a ** b` (`in_place`: `a` is `out` itself), every tensor of
/// `out`'s dtype, as `elementwise::binary` takes it.
pub(crate) fn pow<T: Arith + Sink<T::C>>(out: &Tensor, a: Arg, b: Arg, in_place: bool) {
    if let Arg::Number(e) = b
        && pow_by_number::<T>(out, a, e, in_place)
    {
        return;
    }
    map_kernel::<T, _>(out, a, b, Pow)
}

/// [`Arith::pow`] as the loops' [`Kernel`].
#[derive(Clone, Copy)]
struct Pow;

impl<C: Arith> Kernel<C> for Pow {
    // float64 splits from 2048 elements: two threads against one (Sapphire
    // Rapids, 2 cores) even at 1000 (3.9 µs against 4.0), 5.5 against 7.4
    // at 2000; so does float32 where its kernel is float64's (CPUs without
    // AVX-512; Zen 3's AVX2 copy: 2000 elements 9.8 µs on one thread, 9.5
    // on two, 3000 14.2 and 10.3). float32's kernel in float32 lanes (AVX-512) is a third of
    // that: from 5461, where 4000 elements took 3.6-4.0 µs on two threads,
    // 8000 5.2 (one thread: 0.8 ns an element and 0.4 µs).
    #[inline(always)]
    fn cost() -> usize {
        if C::DTYPE == DType::F32 && vpow::lanes() {
            6
        } else {
            16
        }
    }
    #[inline(always)]
    fn apply(x: C, y: C) -> C {
        x.pow(y)
    }
    #[inline(always)]
    fn block(x: &[C], y: &[C], r: &mut [C]) {
        C::pow_slice(x, y, r)
    }
}

/// `out = a ** e` (`in_place`: `a` is `out`) when `e` has a special form
/// for this dtype; false (nothing written) otherwise.
fn pow_by_number<T: Arith + Sink<T::C>>(out: &Tensor, a: Arg, e: Scalar, in_place: bool) -> bool {
    let e = match e {
        Scalar::Int(i) => i as f64,
        Scalar::Float(f) => f,
        Scalar::Bool(b) => f64::from(u8::from(b)),
        Scalar::Complex(..) => return false,
    };
    let float = match T::DTYPE.category() {
        Category::Floating => true,
        Category::Integral => false,
        Category::Bool | Category::Complex => return false,
    };
    let all = float && T::DTYPE != crate::DType::F16;
    let one = T::C::from_scalar(Scalar::Int(1));
    // The value rounded to the dtype (a no-op but for bfloat16 and float16).
    let round = |x: T::C| T::narrow(x).widen();
    let unused = Arg::Number(Scalar::Int(0));
    macro_rules! run {
        ($f:expr) => {{
            if in_place {
                map_inplace::<T>(out, unused, $f)
            } else {
                map_into::<T, T::C, T>(out, a, unused, $f)
            }
            true
        }};
    }
    match e {
        0.0 => run!(move |_, _| one),
        1.0 => run!(|x, _| x),
        2.0 => run!(|x: T::C, _| x.mul(x)),
        3.0 if all || !float => run!(move |x: T::C, _| round(x.mul(x)).mul(x)),
        0.5 if all => run!(|x: T::C, _| x.sqrt()),
        -0.5 if all => run!(move |x: T::C, _| one.div(x.sqrt())),
        -1.0 if all => run!(move |x: T::C, _| one.div(x)),
        -2.0 if all => run!(move |x: T::C, _| one.div(round(x.mul(x)))),
        _ => false,
    }
}
