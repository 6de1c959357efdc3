//! Elementwise kernels: binary ops with broadcasting, negation, fill.

use super::arith::{Arith, BinaryOp, CompareOp};
use super::strided::{view, view_mut};
use crate::backend::UnaryOp;
use crate::{DType, Element, Scalar, Tensor, with_compute_element};
use ndarray::Zip;
use num_complex::{Complex32, Complex64};

/// Above this many elements, contiguous loops split across cores.
const PARALLEL_THRESHOLD: usize = 1 << 20;

/// Threads for large contiguous loops: `DLBRIDGE_NUM_THREADS`, else the
/// available cores (at most 8; memory bandwidth saturates before that).
fn worker_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::env::var("DLBRIDGE_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .min(8)
            })
    })
}

/// Splits three equal-length slices into per-thread chunks and runs `f` on each.
fn par_chunks<A: Send, B: Sync, C: Sync>(
    out: &mut [A],
    a: &[B],
    b: &[C],
    f: impl Fn(&mut [A], &[B], &[C]) + Sync,
) {
    let threads = worker_threads();
    if out.len() < PARALLEL_THRESHOLD || threads == 1 {
        return f(out, a, b);
    }
    // Chunks of whole cache lines so threads never share one.
    let chunk = out.len().div_ceil(threads).next_multiple_of(64);
    std::thread::scope(|s| {
        for ((o, x), y) in out
            .chunks_mut(chunk)
            .zip(a.chunks(chunk))
            .zip(b.chunks(chunk))
        {
            let f = &f;
            s.spawn(move || f(o, x, y));
        }
    });
}

/// `out = a op b`, all three of one dtype; `a` and `b` broadcast to `out`.
/// `out` is fresh, so it overlaps neither input.
pub(crate) fn binary_into(out: &Tensor, a: &Tensor, b: &Tensor, op: BinaryOp) {
    with_compute_element!(out.dtype(), T => binary_typed::<T>(out, a, b, op))
}

fn binary_typed<T: Arith>(out: &Tensor, a: &Tensor, b: &Tensor, op: BinaryOp) {
    // SAFETY: callers pass materialized inputs of dtype T and a fresh output.
    let (mut o, va, vb) = unsafe {
        (
            view_mut::<T>(out).unwrap(),
            view::<T>(a).unwrap(),
            view::<T>(b).unwrap(),
        )
    };
    if va.shape() == o.shape()
        && vb.shape() == o.shape()
        && let (Some(os), Some(xs), Some(ys)) = (o.as_slice_mut(), va.as_slice(), vb.as_slice())
    {
        let kernel = move |o: &mut [T], x: &[T], y: &[T]| match op {
            // One monomorphic loop per operator keeps each one vectorised.
            BinaryOp::Add => o
                .iter_mut()
                .zip(x)
                .zip(y)
                .for_each(|((o, &x), &y)| *o = x.add(y)),
            BinaryOp::Sub => o
                .iter_mut()
                .zip(x)
                .zip(y)
                .for_each(|((o, &x), &y)| *o = x.sub(y)),
            BinaryOp::Mul => o
                .iter_mut()
                .zip(x)
                .zip(y)
                .for_each(|((o, &x), &y)| *o = x.mul(y)),
            BinaryOp::Div => o
                .iter_mut()
                .zip(x)
                .zip(y)
                .for_each(|((o, &x), &y)| *o = x.div(y)),
            BinaryOp::Pow => o
                .iter_mut()
                .zip(x)
                .zip(y)
                .for_each(|((o, &x), &y)| *o = x.pow(y)),
        };
        return par_chunks(os, xs, ys, kernel);
    }
    if vb.len() == 1 && va.shape() == o.shape() {
        let y = *vb.iter().next().unwrap();
        return Zip::from(&mut o)
            .and(&va)
            .for_each(|o, &x| *o = T::apply(op, x, y));
    }
    if va.len() == 1 && vb.shape() == o.shape() {
        let x = *va.iter().next().unwrap();
        return Zip::from(&mut o)
            .and(&vb)
            .for_each(|o, &y| *o = T::apply(op, x, y));
    }
    let (va, vb) = (
        va.broadcast(o.raw_dim()).unwrap(),
        vb.broadcast(o.raw_dim()).unwrap(),
    );
    Zip::from(&mut o)
        .and(&va)
        .and(&vb)
        .for_each(|o, &x, &y| *o = T::apply(op, x, y));
}

/// `dst = dst op src` in place; `src` has dst's dtype, broadcasts to dst and
/// does not overlap it. Returns false when dst's layout needs staging.
pub(crate) fn binary_inplace(dst: &Tensor, src: &Tensor, op: BinaryOp) -> bool {
    with_compute_element!(dst.dtype(), T => {
        // SAFETY: dst is not aliased by src (checked by the caller).
        let Some(mut d) = (unsafe { view_mut::<T>(dst) }) else { return false };
        // SAFETY: src is materialized and of dtype T.
        let s = unsafe { view::<T>(src) }.unwrap();
        if s.len() == 1 {
            let y = *s.iter().next().unwrap();
            Zip::from(&mut d).for_each(|x| *x = T::apply(op, *x, y));
        } else {
            let s = s.broadcast(d.raw_dim()).unwrap();
            Zip::from(&mut d).and(&s).for_each(|x, &y| *x = T::apply(op, *x, y));
        }
        true
    })
}

/// `out = a op b` for a comparison: `a` and `b` of one dtype, materialized,
/// broadcast to the fresh bool tensor `out`.
pub(crate) fn compare_into(out: &Tensor, a: &Tensor, b: &Tensor, op: CompareOp) {
    with_compute_element!(a.dtype(), T => {
        // SAFETY: as in binary_into; out is a fresh bool tensor.
        let (mut o, va, vb) = unsafe {
            (view_mut::<bool>(out).unwrap(), view::<T>(a).unwrap(), view::<T>(b).unwrap())
        };
        let (va, vb) = (va.broadcast(o.raw_dim()).unwrap(), vb.broadcast(o.raw_dim()).unwrap());
        Zip::from(&mut o)
            .and(&va)
            .and(&vb)
            .for_each(|o, &x, &y| *o = T::compare(op, x, y));
    })
}

/// `out = op(a)`; `out` is fresh and `a` materialized, both of one dtype
/// (for the magnitude of complex numbers, `out` is of the real dtype).
pub(crate) fn unary_into(out: &Tensor, a: &Tensor, op: UnaryOp) {
    // The magnitude in the components' precision (`hypot`), as PyTorch's `abs`.
    macro_rules! magnitudes {
        ($real:ty, $complex:ty) => {{
            // SAFETY: as in binary_into; out holds the real dtype.
            let (mut o, va) = unsafe {
                (
                    view_mut::<$real>(out).unwrap(),
                    view::<$complex>(a).unwrap(),
                )
            };
            Zip::from(&mut o).and(&va).for_each(|o, z| *o = z.norm());
        }};
    }
    match (op, a.dtype()) {
        (UnaryOp::Abs, DType::C64) => return magnitudes!(f32, Complex32),
        (UnaryOp::Abs, DType::C128) => return magnitudes!(f64, Complex64),
        _ => {}
    }
    with_compute_element!(out.dtype(), T => {
        // SAFETY: as in binary_into.
        let (mut o, va) = unsafe { (view_mut::<T>(out).unwrap(), view::<T>(a).unwrap()) };
        match op {
            UnaryOp::Neg => Zip::from(&mut o).and(&va).for_each(|o, &x| *o = Arith::neg(x)),
            UnaryOp::Abs => Zip::from(&mut o).and(&va).for_each(|o, &x| *o = Arith::abs(x)),
        }
    })
}

/// Sets every element of `dst` to `value` (cast to dst's dtype). Returns
/// false when dst's layout needs staging.
pub(crate) fn fill(dst: &Tensor, value: Scalar) -> bool {
    with_compute_element!(dst.dtype(), T => {
        // SAFETY: the caller holds dst exclusively for the call.
        let Some(mut d) = (unsafe { view_mut::<T>(dst) }) else { return false };
        d.fill(T::from_scalar(value));
        true
    })
}
