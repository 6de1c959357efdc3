//! Loops for costly kernels (the general power, `exp` and `log` over
//! strided layouts), called by type rather than through a closure.
//!
//! The elementwise loops take an op as a closure; one whose body is large
//! stays out of line, so the compiler builds it once, for the baseline, and
//! every `twin!` copy of the loop calls it per element (with `mul_add` as a
//! software `fma`): pow ran ten times slower than libm's. A [`Kernel`]'s
//! function is called by name inside [`row_kernel`], so it inlines into
//! each copy; operands go through block buffers of the compute type, so the
//! kernel's loop is dense and vectorises for every layout and dtype.

use super::arith::{Arith, BinaryOp};
use super::operand::{BLOCK, Sink, Src, slice, slice_mut};

/// A binary function of the compute type that the loops call by its type.
pub(crate) trait Kernel<C: Copy>: Copy + Sync {
    /// About how many times an element of plain arithmetic an element of
    /// this kernel costs: its loops split across threads from
    /// `parallel::grain / cost()` elements, where the work outweighs a worker's
    /// wake-up. A function, not a constant: a kernel's cost may follow the
    /// CPU (float32 `**` has another kernel on AVX-512 CPUs).
    fn cost() -> usize;
    fn apply(x: C, y: C) -> C;
    /// `r[i] = apply(x[i], y[i])` over a block: a kernel may override it
    /// with explicit vector code that gives `apply`'s bits.
    #[inline(always)]
    fn block(x: &[C], y: &[C], r: &mut [C]) {
        for ((r, &x), &y) in r.iter_mut().zip(x).zip(y) {
            *r = Self::apply(x, y);
        }
    }
}

super::isa::twin! {
    /// One row of `out = K(a, b)`, `out` apart from the inputs or the same
    /// elements as `a`.
    ///
    /// # Safety
    /// Every pointer addresses `len` elements `strides` apart (out, a, b),
    /// the output exclusively ours; `o` is apart from the inputs or
    /// addresses `a`'s elements in `a`'s order.
    pub(super) unsafe fn row_kernel[T: Arith + Sink<T::C>, K: Kernel<T::C>](
        o: *mut T, a: Src<T>, b: Src<T>, strides: [isize; 3], len: usize, kernel: K,
    ) => row_kernel_body, avx512 if true;
}

/// [`row_kernel`] as built: any layout, through buffers of [`BLOCK`] elements of the
/// compute type (the kernel's loop is then dense and vectorises, and a
/// strided or narrow operand costs a copy in L1 beside a costly kernel).
///
/// # Safety
/// As for [`row_kernel`].
#[inline(always)]
unsafe fn row_kernel_body<T: Arith + Sink<T::C>, K: Kernel<T::C>>(
    o: *mut T,
    a: Src<T>,
    b: Src<T>,
    [so, sa, sb]: [isize; 3],
    len: usize,
    _: K,
) {
    const N: usize = BLOCK;
    let zero = <T::C as bytemuck::Zeroable>::zeroed();
    let (mut xa, mut xb, mut r) = ([zero; N], [zero; N], [zero; N]);
    let mut raw = [T::zeroed(); N];
    let mut i = 0;
    // SAFETY (whole loop): the caller's promise on every pointer and length;
    // a block of `a` is read before the same block of `o` is written.
    unsafe {
        while i < len {
            let n = N.min(len - i);
            for (x, src, s) in [(&mut xa, a, sa), (&mut xb, b, sb)] {
                match src {
                    Src::Mem(p) if s == 1 => T::widen_slice(slice(p.add(i), n), &mut x[..n]),
                    Src::Mem(p) => {
                        let p = p.offset(i as isize * s);
                        for (j, v) in raw[..n].iter_mut().enumerate() {
                            *v = *p.offset(j as isize * s);
                        }
                        T::widen_slice(&raw[..n], &mut x[..n]);
                    }
                    Src::Value(v) => x[..n].fill(v),
                }
            }
            K::block(&xa[..n], &xb[..n], &mut r[..n]);
            if so == 1 {
                T::put_slice(&r[..n], slice_mut(o.add(i), n));
            } else {
                T::put_slice(&r[..n], &mut raw[..n]);
                let o = o.offset(i as isize * so);
                for (j, &v) in raw[..n].iter().enumerate() {
                    *o.offset(j as isize * so) = v;
                }
            }
            i += n;
        }
    }
}

/// Ops of `Arith` as [`Kernel`]s, a few times plain arithmetic's element
/// each (their loops split from 8192): `exp` and `log` (the second operand
/// unused), and for floats and 64-bit integers the rounding rows
/// (`floor_divide`, `remainder`, `fmod`), whose blocks go through
/// [`Arith::rounding_slice`] (two passes, the first vectorized: libm's
/// `fmod` per element cost 8 to 30 ns, `idiv` 20 to 40 cycles).
macro_rules! kernels {
    ($($(#[$doc:meta])* $name:ident: |$x:ident, $y:ident| $apply:expr $(, by $V:ident)?;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub(super) struct $name;

        impl<C: Arith> Kernel<C> for $name {
            fn cost() -> usize {
                4
            }
            #[inline(always)]
            fn apply($x: C, $y: C) -> C {
                $apply
            }
            $(
                #[inline(always)]
                fn block(x: &[C], y: &[C], r: &mut [C]) {
                    C::rounding_slice(BinaryOp::$V, x, y, r)
                }
            )?
        }
    )*};
}

kernels! {
    /// [`Arith::exp`].
    ExpKernel: |x, _y| x.exp();
    /// [`Arith::log`].
    LogKernel: |x, _y| x.log();
    /// [`Arith::floor_divide`].
    FloorDivideKernel: |x, y| x.floor_divide(y), by DivFloor;
    /// [`Arith::remainder`].
    RemainderKernel: |x, y| x.remainder(y), by Remainder;
    /// [`Arith::fmod`].
    FmodKernel: |x, y| x.fmod(y), by Fmod;
}
