//! What the elementwise loops read and write: an input in memory or one
//! value ([`Src`]), an output and how results are stored into it ([`Sink`]:
//! rounded to float16 and bfloat16 by `narrow/`'s conversions), and the
//! slices over raw pointers the loops vectorise.

use super::arith::Arith;
use super::narrow::{CHUNK, ChunkIsa};

/// Elements per block of the float16/bfloat16 paths (three stack arrays of
/// float32 stay in L1).
pub(super) const BLOCK: usize = 256;

/// Where the values of `out = f(a, b)` come from and go to: an output of
/// `O`, inputs of `T` in memory or one value (already in the compute type).
pub(crate) trait Sink<R>: Copy + bytemuck::Zeroable {
    /// Whether [`put_chunk`](Self::put_chunk) rounds to bfloat16 (and so
    /// gains from [`ChunkIsa::Bf16x`]).
    const BF16: bool = false;
    fn put(r: R) -> Self;
    /// A chunk of results stored, by value (see `Arith::narrow_chunk`).
    ///
    /// # Safety
    /// The CPU has what `isa` names.
    #[inline(always)]
    unsafe fn put_chunk(src: [R; CHUNK], dst: &mut [Self; CHUNK], isa: ChunkIsa) {
        let _ = isa;
        *dst = src.map(Self::put);
    }
    #[inline(always)]
    fn put_slice(src: &[R], dst: &mut [Self])
    where
        R: Copy,
    {
        dst.iter_mut()
            .zip(src)
            .for_each(|(d, &s)| *d = Self::put(s));
    }
}

impl<T: Copy + bytemuck::Zeroable> Sink<T> for T {
    #[inline(always)]
    fn put(r: T) -> T {
        r
    }
    #[inline(always)]
    fn put_slice(src: &[T], dst: &mut [T]) {
        dst.copy_from_slice(src)
    }
}

macro_rules! narrow_sink {
    ($($t:ty => $bf16:literal),*) => {$(
        impl Sink<f32> for $t {
            const BF16: bool = $bf16;
            #[inline(always)]
            fn put(r: f32) -> Self { <$t as Arith>::narrow(r) }
            #[inline(always)]
            fn put_slice(src: &[f32], dst: &mut [Self]) { <$t as Arith>::narrow_slice(src, dst) }
            #[inline(always)]
            unsafe fn put_chunk(src: [f32; CHUNK], dst: &mut [Self; CHUNK], isa: ChunkIsa) {
                // SAFETY: the caller's promise, passed on.
                unsafe { <$t as Arith>::narrow_chunk(src, dst, isa) }
            }
        }
    )*};
}
narrow_sink!(half::f16 => false, half::bf16 => true);

/// An input of the loops.
#[derive(Clone, Copy)]
pub(super) enum Src<T: Arith> {
    /// Memory at this address (element strides come from the plan).
    Mem(*const T),
    /// One value for every element (a Python number, or unary ops' unused side).
    Value(T::C),
}

/// A slice of `len` elements at `p`.
///
/// # Safety
/// `p` addresses `len` contiguous, initialised elements nobody writes meanwhile.
#[inline(always)]
pub(super) unsafe fn slice<'a, T>(p: *const T, len: usize) -> &'a [T] {
    // SAFETY: the caller's promise.
    unsafe { std::slice::from_raw_parts(p, len) }
}

/// As [`slice`], writable.
///
/// # Safety
/// As for [`slice`], and no other reference to these elements is alive.
#[inline(always)]
pub(super) unsafe fn slice_mut<'a, T>(p: *mut T, len: usize) -> &'a mut [T] {
    // SAFETY: the caller's promise.
    unsafe { std::slice::from_raw_parts_mut(p, len) }
}

/// The value of `src` at element offset `off`, in the compute type.
///
/// # Safety
/// A `Mem` source holds an element at `off`.
#[inline(always)]
pub(super) unsafe fn load<T: Arith>(src: Src<T>, off: isize) -> T::C {
    match src {
        // SAFETY: the caller's promise.
        Src::Mem(p) => unsafe { *p.offset(off) }.widen(),
        Src::Value(v) => v,
    }
}
