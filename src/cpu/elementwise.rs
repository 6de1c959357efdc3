//! Elementwise loops, written once and monomorphized per op and dtype: the
//! op tables of `backend.rs` (`binary_ops!`, `unary_ops!`) pick an `Arith`
//! method, and [`map_into`] / [`map_inplace`] run it over any layout.
//!
//! The layout is put in the output's memory order and collapsed first
//! (size-1 dimensions dropped, neighbours contiguous in every operand
//! merged: `plan.rs`), so most operands become one row;
//! the outer dimensions are walked with a counter and each row runs a loop
//! over slices the compiler vectorizes when its operands are contiguous (or
//! one of them is a single value), else a strided loop. float16 and bfloat16
//! are converted a block at a time to float32 (`narrow/`),
//! computed there and rounded once. Large loops split across threads
//! (`parallel.rs`). Costly ops (the general power, `exp` and `log` over
//! strided layouts) run [`map_kernel`]: the same walk, rows by
//! `kernel.rs`' loop, which calls the op by type.

use super::arith::{Arith, BinaryOp, CompareOp};
use super::kernel::{
    ExpKernel, FloorDivideKernel, FmodKernel, Kernel, LogKernel, RemainderKernel, row_kernel,
};
use super::narrow::{CHUNK, ChunkIsa};
use super::operand::{BLOCK, Sink, Src, load, slice, slice_mut};
use super::parallel::{Shared, for_elements, for_range, grain};
use super::plan::{DIMS, Plan, Strips};
use super::sqrt;
use super::strided::{view, view_mut};
use super::transpose::{self, SIDE};
use super::vmath;
use crate::backend::UnaryOp;
use crate::{Category, DType, Element, Scalar, Tensor, with_compute_element};
use ndarray::Zip;
use num_complex::{Complex32, Complex64};
use smallvec::SmallVec;
use std::mem::MaybeUninit;

/// The dense part of a float16/bfloat16 row (`a`, `b` each contiguous
/// from `pa`/`pb`, or one value `va`/`vb` where there is none; the output
/// contiguous) in chunks that stay in registers, memory to memory in one
/// pass; returns how many elements it did (whole chunks). Through
/// [`BLOCK`]-sized buffers each element was stored and loaded three more
/// times, and float16 `a + b` ran at about half torch's speed.
///
/// # Safety
/// As for [`row_into`], with `pa`, `pb` and `o` contiguous over `len`.
#[inline(always)]
unsafe fn dense_chunks<T: Arith, R: Copy + bytemuck::Zeroable, O: Sink<R>>(
    o: *mut O,
    (pa, va): (Option<*const T>, T::C),
    (pb, vb): (Option<*const T>, T::C),
    len: usize,
    f: &impl Fn(T::C, T::C) -> R,
) -> usize {
    // The conversions' instruction-set check, read once: a check inside the
    // loop kept each chunk's values on the stack for the other branch.
    // AVX-512 BF16 only for bfloat16 results, whose rows run in the
    // AVX-512 copy (`wide_row`), where its rounding inlines.
    const BF16X: u8 = ChunkIsa::Bf16x as u8;
    const AVX2: u8 = ChunkIsa::Avx2 as u8;
    const PLAIN: u8 = ChunkIsa::Plain as u8;
    // SAFETY (each arm): the caller's promise; the CPU has the level named
    // (checked).
    unsafe {
        if O::BF16 && super::isa::avx512_bf16() {
            chunks_with::<T, R, O, BF16X>(o, (pa, va), (pb, vb), len, f)
        } else if super::isa::avx2() {
            chunks_with::<T, R, O, AVX2>(o, (pa, va), (pb, vb), len, f)
        } else {
            chunks_with::<T, R, O, PLAIN>(o, (pa, va), (pb, vb), len, f)
        }
    }
}

/// [`dense_chunks`] for one answer of the instruction-set check (a
/// [`ChunkIsa`] as `u8`).
///
/// # Safety
/// As for [`dense_chunks`]; the CPU has what `ISA` names.
#[inline(always)]
unsafe fn chunks_with<T: Arith, R: Copy + bytemuck::Zeroable, O: Sink<R>, const ISA: u8>(
    o: *mut O,
    (pa, va): (Option<*const T>, T::C),
    (pb, vb): (Option<*const T>, T::C),
    len: usize,
    f: &impl Fn(T::C, T::C) -> R,
) -> usize {
    let isa = ChunkIsa::of(ISA);
    // SAFETY: chunks at i lie inside the caller's contiguous operands;
    // `isa` as the caller promised.
    let at = |p: Option<*const T>, v, i: usize| match p {
        Some(p) => unsafe { T::widen_chunk(&*p.add(i).cast::<[T; CHUNK]>(), isa) },
        None => [v; CHUNK],
    };
    let mut i = 0;
    while i + CHUNK <= len {
        let (x, y) = (at(pa, va, i), at(pb, vb, i));
        // A loop the vectorizer takes whole (`array::from_fn` was unrolled
        // first, and exp and log came out scalar, 3-9x slower).
        let mut r = [R::zeroed(); CHUNK];
        for ((r, &x), &y) in r.iter_mut().zip(&x).zip(&y) {
            *r = f(x, y);
        }
        // SAFETY: as above, for the output.
        unsafe { O::put_chunk(r, &mut *o.add(i).cast::<[O; CHUNK]>(), isa) };
        i += CHUNK;
    }
    i
}

super::isa::twin! {
    /// One row of `out = f(a, b)`, `out` not overlapping the inputs.
    ///
    /// # Safety
    /// Every pointer addresses `len` elements `strides` apart (the output's
    /// exclusively ours).
    unsafe fn row_into[T: Arith, R: Copy + bytemuck::Zeroable, O: Sink<R>](
        o: *mut O, a: Src<T>, b: Src<T>, strides: [isize; 3], len: usize, f: impl Fn(T::C, T::C) -> R,
    ) => row_into_body, avx512 if wide_row::<T>(size_of::<O>(), len);
}

/// Rows from this many elements on take the AVX-512 copy whatever they
/// hold: a thread's piece of a tensor past the caches (see [`wide_row`]).
#[cfg_attr(any(miri, not(target_arch = "x86_64")), allow(dead_code))]
const LONG_ROW: usize = 1 << 16;

/// Whether a row of `T` writing `out_size`-byte elements runs in the
/// AVX-512 copy: for float16 and bfloat16 (blocks through float32, whose
/// 512-bit conversions pay) and for narrower outputs (comparisons, packed
/// to bool through mask registers) always; for plain arithmetic only on long
/// rows. On data the L2 cache holds, the 512-bit copy of plain arithmetic
/// ran 6 to 24% slower than the AVX2 one (Sapphire Rapids, 10^5 elements on
/// two threads: float32 `a * b` 8.2 µs against 7.3, int64 17.4 against
/// 14.0, float64 `a + 1` 11.5 against 10.1); from memory, 0 to 8% faster.
// Read only by `twin!`'s AVX-512 copy, which Miri and other CPUs do not build.
#[cfg_attr(any(miri, not(target_arch = "x86_64")), allow(dead_code))]
#[inline(always)]
fn wide_row<T: Arith>(out_size: usize, len: usize) -> bool {
    T::WIDE || out_size < size_of::<T>() || len >= LONG_ROW
}

/// [`row_into`] as built.
///
/// # Safety
/// As for [`row_into`].
#[inline(always)]
unsafe fn row_into_body<T: Arith, R: Copy + bytemuck::Zeroable, O: Sink<R>>(
    o: *mut O,
    a: Src<T>,
    b: Src<T>,
    [so, sa, sb]: [isize; 3],
    len: usize,
    f: impl Fn(T::C, T::C) -> R,
) {
    // SAFETY (whole body): the caller's promise on every pointer and length.
    unsafe {
        if T::WIDE {
            // Blocks through the compute type: one rounding per element.
            let mut i = 0;
            if so == 1
                && [(a, sa), (b, sb)]
                    .iter()
                    .all(|&(src, s)| s == 1 || uniform(src, s))
            {
                let dense = |src, s| match src {
                    Src::Mem(p) if s == 1 => Some(p),
                    _ => None,
                };
                let (pa, pb) = (dense(a, sa), dense(b, sb));
                let value = |p: Option<_>, src| match p {
                    Some(_) => <T::C as bytemuck::Zeroable>::zeroed(),
                    None => load(src, 0),
                };
                let (va, vb) = (value(pa, a), value(pb, b));
                i = dense_chunks(o, (pa, va), (pb, vb), len, &f);
            }
            // A dense row's tail (shorter than a chunk) through buffers of
            // a chunk: zeroing three of BLOCK per row cost more than a
            // 300-element row's arithmetic (float16 `m + m[0]`, 300x300).
            // A row done in chunks sets up no buffers.
            match len - i {
                0 => {}
                n if n <= CHUNK => blocks::<T, R, O, CHUNK>(o, a, b, [so, sa, sb], i, len, &f),
                _ => blocks::<T, R, O, BLOCK>(o, a, b, [so, sa, sb], i, len, &f),
            }
            return;
        }
        let dense = |src, s| match src {
            Src::Mem(p) if so == 1 && s == 1 => Some(p),
            _ => None,
        };
        match (dense(a, sa), dense(b, sb)) {
            (Some(pa), Some(pb)) => {
                let (o, x, y) = (slice_mut(o, len), slice(pa, len), slice(pb, len));
                for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
                    *o = O::put(f(x.widen(), y.widen()));
                }
            }
            (Some(pa), None) => beside(o, pa, (b, sb), len, &f),
            (None, Some(pb)) => beside(o, pb, (a, sa), len, |y, x| f(x, y)),
            (None, None) => {
                for i in 0..len as isize {
                    *o.offset(i * so) = O::put(f(load(a, i * sa), load(b, i * sb)));
                }
            }
        }
    }
}

/// A row of [`row_into_body`] whose output and one operand (`p`) are
/// contiguous: the loop runs over their slices, and the other operand is
/// one value (hoisted, so the loop vectorizes) or indexed at its stride
/// (a transposed input walked in strips, on either side of the op: `g`
/// takes the contiguous side first). The general loop steps three
/// addresses an element: `m.T + m2` of 300x300, one thread, Zen 3, int8
/// 62.5 -> 50.5 us.
///
/// # Safety
/// As for [`row_into`], with `o` and `p` contiguous over `len`.
#[inline(always)]
unsafe fn beside<T: Arith, R, O: Sink<R>>(
    o: *mut O,
    p: *const T,
    (other, s): (Src<T>, isize),
    len: usize,
    g: impl Fn(T::C, T::C) -> R,
) {
    // SAFETY (whole body): the caller's promise on every pointer and length.
    unsafe {
        let rows = slice_mut(o, len).iter_mut().zip(slice(p, len));
        match other {
            Src::Mem(q) if s != 0 => {
                for (j, (o, &x)) in rows.enumerate() {
                    *o = O::put(g(x.widen(), (*q.offset(j as isize * s)).widen()));
                }
            }
            _ => {
                let y = load(other, 0);
                for (o, &x) in rows {
                    *o = O::put(g(x.widen(), y));
                }
            }
        }
    }
}

/// Whether an operand is one value (a number, or stride 0): its buffer is
/// filled once, and a dense row may have it.
#[inline(always)]
fn uniform<T: Arith>(src: Src<T>, s: isize) -> bool {
    matches!(src, Src::Value(_)) || s == 0
}

/// The rest of a float16/bfloat16 row from `i`, through buffers of `N`
/// elements of the compute type (an operand with one value fills its
/// buffer once): one rounding per element.
///
/// # Safety
/// As for [`row_into`].
#[inline(always)]
unsafe fn blocks<T: Arith, R: Copy + bytemuck::Zeroable, O: Sink<R>, const N: usize>(
    o: *mut O,
    a: Src<T>,
    b: Src<T>,
    [so, sa, sb]: [isize; 3],
    mut i: usize,
    len: usize,
    f: &impl Fn(T::C, T::C) -> R,
) {
    // SAFETY (whole body): the caller's promise on every pointer and length.
    unsafe {
        let mut xa = [<T::C as bytemuck::Zeroable>::zeroed(); N];
        let mut xb = xa;
        let mut r = [R::zeroed(); N];
        // A strided operand is gathered as stored, then widened as a slice:
        // an element at a time, float16 `a[::2] + b[::2]` ran 1.4x torch.
        // A strided output is narrowed as a slice, then scattered.
        let mut raw = [T::zeroed(); N];
        let mut put = [O::zeroed(); N];
        for (x, src, s) in [(&mut xa, a, sa), (&mut xb, b, sb)] {
            if uniform(src, s) {
                x.fill(load(src, 0));
            }
        }
        while i < len {
            let n = N.min(len - i);
            for (x, src, s) in [(&mut xa, a, sa), (&mut xb, b, sb)] {
                match src {
                    Src::Mem(p) if s == 1 => T::widen_slice(slice(p.add(i), n), &mut x[..n]),
                    Src::Mem(p) if s != 0 => {
                        let p = p.offset(i as isize * s);
                        raw[..n]
                            .iter_mut()
                            .enumerate()
                            .for_each(|(j, v)| *v = *p.offset(j as isize * s));
                        T::widen_slice(&raw[..n], &mut x[..n]);
                    }
                    _ => {} // one value: its buffer was filled once
                }
            }
            // Zipped slices: no bounds checks, so no scalar tail.
            for ((r, &x), &y) in r[..n].iter_mut().zip(&xa[..n]).zip(&xb[..n]) {
                *r = f(x, y);
            }
            if so == 1 {
                O::put_slice(&r[..n], slice_mut(o.add(i), n));
            } else {
                O::put_slice(&r[..n], &mut put[..n]);
                let o = o.offset(i as isize * so);
                put[..n]
                    .iter()
                    .enumerate()
                    .for_each(|(j, &v)| *o.offset(j as isize * so) = v);
            }
            i += n;
        }
    }
}

super::isa::twin! {
    /// One row of `out = f(out, b)` (an in-place op). Rows of plain
    /// arithmetic stay in the AVX2 copy however long (unlike
    /// [`row_into`]'s): the AVX-512 copy of `a.add_(1)` over 10^7 float32
    /// that the cache holds (two threads, Sapphire Rapids) ran 0.89-0.98 ms
    /// against the AVX2 copy's 0.75 and torch's 0.78 (int32 0.92 against
    /// 0.75, float64 1.78 against 1.58); `a.add_(b)` read the same either
    /// way, and both did from memory.
    ///
    /// # Safety
    /// As for [`row_into`]; `b` does not overlap the output.
    unsafe fn row_inplace[T: Arith + Sink<T::C>](
        o: *mut T, b: Src<T>, strides: [isize; 3], len: usize, f: impl Fn(T::C, T::C) -> T::C,
    ) => row_inplace_body, avx512 if T::WIDE;
}

/// [`row_inplace`] as built.
///
/// # Safety
/// As for [`row_inplace`].
#[inline(always)]
unsafe fn row_inplace_body<T: Arith + Sink<T::C>>(
    o: *mut T,
    b: Src<T>,
    [so, _, sb]: [isize; 3],
    len: usize,
    f: impl Fn(T::C, T::C) -> T::C,
) {
    // SAFETY (whole body): the caller's promise on every pointer and length.
    unsafe {
        if T::WIDE {
            return row_into_body(o, Src::Mem(o.cast_const()), b, [so, so, sb], len, f);
        }
        match b {
            Src::Mem(pb) if so == 1 && sb == 1 => {
                for (o, &y) in slice_mut(o, len).iter_mut().zip(slice(pb, len)) {
                    *o = T::put(f(o.widen(), y.widen()));
                }
            }
            _ if so == 1 && (sb == 0 || matches!(b, Src::Value(_))) => {
                let y = load(b, 0);
                for o in slice_mut(o, len) {
                    *o = T::put(f(o.widen(), y));
                }
            }
            _ => {
                for i in 0..len as isize {
                    let p = o.offset(i * so);
                    *p = T::put(f((*p).widen(), load(b, i * sb)));
                }
            }
        }
    }
}

/// Whether the loops can address `t` as elements of `size` bytes: aligned,
/// whole-element strides.
pub(crate) fn walkable(t: &Tensor, size: usize, align: usize) -> bool {
    (t.numel() == 0 || (t.data_ptr() as usize).is_multiple_of(align))
        && t.layout().has_element_strides(size)
}

/// Whether the loops can write `t`: walkable, and no two indices address
/// one element (a stride 0 on a longer dimension).
pub(crate) fn writable(t: &Tensor, size: usize, align: usize) -> bool {
    walkable(t, size, align)
        && !t
            .shape()
            .iter()
            .zip(&t.layout().strides)
            .any(|(&n, &s)| n > 1 && s == 0)
}

/// An operand of [`map_into`]: a tensor (broadcast to the output, walkable)
/// or a number.
#[derive(Clone, Copy)]
pub(crate) enum Arg<'a> {
    Tensor(&'a Tensor),
    Number(Scalar),
}

/// An operand's address (or value) and its element strides broadcast to
/// `shape` (new leading and size-1 dimensions step 0), without building the
/// broadcast tensor or allocating.
fn source<T: Arith>(arg: Arg, shape: &[usize]) -> (Src<T>, Strides) {
    match arg {
        Arg::Tensor(t) => {
            let l = t.layout();
            let lead = shape.len() - l.shape.len();
            let size = size_of::<T>() as isize;
            let mut strides: Strides = smallvec::smallvec![0; shape.len()];
            for (i, (&n, &s)) in l.shape.iter().zip(&l.strides).enumerate() {
                if n != 1 {
                    debug_assert!(
                        n == shape[lead + i] && s % size == 0,
                        "walkable, broadcastable"
                    );
                    strides[lead + i] = s / size;
                }
            }
            (Src::Mem(t.data_ptr().cast_const().cast()), strides)
        }
        Arg::Number(v) => (
            Src::Value(T::C::from_scalar(v)),
            smallvec::smallvec![0; shape.len()],
        ),
    }
}

/// `out = f(a, b)` over `out`'s shape: `out` (of `O`, writable) overlaps
/// neither input; tensor inputs (of `T`, walkable) broadcast to it.
pub(super) fn map_into<T: Arith, R: Copy + bytemuck::Zeroable, O: Sink<R> + Element>(
    out: &Tensor,
    a: Arg,
    b: Arg,
    f: impl Fn(T::C, T::C) -> R + Sync,
) {
    map_rows::<T, O>(out, a, b, grain::<T>(), |o, a, b, strides, len| {
        // SAFETY: map_rows' promise.
        unsafe { row_into(o, a, b, strides, len, &f) }
    });
}

/// Calls `row(o, a, b, strides, len)` for each row of `out`'s shape in
/// memory order, split across threads: `o`, `a` and `b` point at the
/// row's first element of each operand (or carry its value), `strides`
/// are their element strides along the row (out, a, b), and every element
/// of the row lies inside its tensor; threads get disjoint rows of `out`,
/// from `split_from` elements on. `out` (of `O`) is writable, tensor inputs
/// (of `T`) walkable and broadcast to it.
fn map_rows<T: Arith, O: Element>(
    out: &Tensor,
    a: Arg,
    b: Arg,
    split_from: usize,
    row: impl Fn(*mut O, Src<T>, Src<T>, [isize; 3], usize) + Sync,
) {
    let shape = out.shape();
    let (sa, ka) = source::<T>(a, shape);
    let (sb, kb) = source::<T>(b, shape);
    let ko: Strides = out
        .layout()
        .element_strides_in(size_of::<O>())
        .expect("writable");
    let plan = Plan::new(shape, [&ko, &ka, &kb]);
    let (po, sa, sb) = (Shared(out.data_ptr().cast::<O>()), Shared(sa), Shared(sb));
    let (stage, strips) = staging::<T>(&plan, [sa.0, sb.0]);
    let stage = Shared(stage);
    for_range(out.numel(), split_from, 64, |start, end| {
        let (po, sa, sb, stage) = (po, sa, sb, stage);
        let (inner, step) = (plan.inner(), plan.row_step());
        plan.walk_strips(start, end, strips, |off, n, len| {
            band_rows(stage.0, step, off, n, len, |[oo, oa, ob], line| {
                let at = |s: Src<T>, k, off| match (line, s) {
                    (Some((j, l)), _) if j == k => Src::Mem(l),
                    // SAFETY: the offset of an element of this operand.
                    (_, Src::Mem(p)) => Src::Mem(unsafe { p.offset(off) }),
                    (_, v) => v,
                };
                let mut strides = inner;
                if let Some((k, _)) = line {
                    strides[k] = 1;
                }
                // SAFETY: the plan keeps every offset inside its tensor;
                // a staged line holds the row's `len` elements.
                row(
                    unsafe { po.0.offset(oo) },
                    at(sa.0, 1, oa),
                    at(sb.0, 2, ob),
                    strides,
                    len,
                )
            })
        });
    });
}

/// Columns of a strip whose transposed input is staged (see
/// [`band_rows`]): [`SIDE`] lines of them, 4 to 32 KiB, stay in L1 while
/// the strip's bands read 16 rows of each input line. Strips of 64 one-byte
/// columns (a call per 64 elements of a row) spent more on the calls than
/// on the arithmetic; strips of 256 bytes of wider elements (64 of
/// float32, 32 of float64) left `m.T + m2` of float32 and float64 at
/// 1.5-2x torch's time where 256 columns of them ran at 1.0-1.2x (2000x2000
/// and 1000x1000, Zen 4, noisy).
const STAGED: usize = 256;

/// The input to stage for [`band_rows`] (its index, stride along the row
/// and address) and how [`Plan::walk_strips`] then cuts the walk: an input
/// of 1, 2, 4 or 8 bytes the plan reads transposed, in bands of [`SIDE`]
/// rows and strips of [`STAGED`] columns; else none, and rows one at a
/// time.
fn staging<T: Arith>(
    plan: &Plan,
    inputs: [Src<T>; 2],
) -> (Option<(usize, isize, *const T)>, Strips) {
    if !transpose::fits::<T>() {
        return (None, Strips::ROWS);
    }
    match plan.transposed().map(|(k, ld)| (k, ld, inputs[k - 1])) {
        Some((k, ld, Src::Mem(p))) => (
            Some((k, ld, p)),
            Strips {
                rows: SIDE,
                cols: STAGED,
            },
        ),
        _ => (None, Strips::ROWS),
    }
}

/// The `n` rows of a band from [`Plan::walk_strips`] (from `off`, `step`
/// apart): `row(offsets, line)` for each. A whole band of a transposed
/// input (`stage`: its index, stride along the row and address) goes
/// through [`staged_band`].
#[inline(always)]
fn band_rows<T>(
    stage: Option<(usize, isize, *const T)>,
    step: [isize; 3],
    off: [isize; 3],
    n: usize,
    len: usize,
    mut row: impl FnMut([isize; 3], Option<(usize, *const T)>),
) {
    match stage {
        Some(stage) if n == SIDE && len <= STAGED => staged_band(stage, step, off, len, row),
        _ => (0..n).for_each(|i| row([0, 1, 2].map(|k| off[k] + i as isize * step[k]), None)),
    }
}

/// [`band_rows`] for a whole band of a transposed input: its [`SIDE`]
/// rows of `len` are first transposed into a buffer in registers
/// (`transpose.rs`), and each row gets its line there (`line`: the input's
/// index and the line's address), which the loops read as a contiguous
/// slice. Read an element at a time from the input, `m.T + m2` of bool
/// and int8 ran at 1.5-1.9x NumPy's time and of bfloat16 at 2.6x torch's;
/// through a byte-by-byte gather per row, slower still (the loads after
/// its stores could not forward). Kept out of line: its buffer (4 to 32 KiB) in
/// the callers' frame cost every elementwise call a stack probe (float32
/// `a + b` of 10^3 elements 0.80 -> 0.86 us; out of line, 0.82).
#[inline(never)]
fn staged_band<T>(
    (k, ld, p): (usize, isize, *const T),
    step: [isize; 3],
    off: [isize; 3],
    len: usize,
    mut row: impl FnMut([isize; 3], Option<(usize, *const T)>),
) {
    let mut buf = MaybeUninit::<[[T; STAGED]; SIDE]>::uninit();
    let lines = buf.as_mut_ptr().cast::<T>();
    // SAFETY: the band's SIDE rows of `len` elements of input k lie inside
    // it (the plan's promise); `buf` holds SIDE lines of STAGED elements.
    let staged =
        unsafe { transpose::band_of(p.offset(off[k]), ld, lines, STAGED as isize, SIDE, len) };
    debug_assert!(staged, "staging stages only elements band_of takes");
    for i in 0..SIDE {
        let at = [0, 1, 2].map(|j| off[j] + i as isize * step[j]);
        // SAFETY: line i of `buf`.
        let line = unsafe { lines.add(i * STAGED) }.cast_const();
        row(at, Some((k, line)));
    }
}

/// `out = K(a, b)` as [`map_into`], through [`row_kernel`]; `a` may be
/// `out` itself (an in-place op: same layout, each block read before it is
/// written).
pub(super) fn map_kernel<T: Arith + Sink<T::C>, K: Kernel<T::C>>(
    out: &Tensor,
    a: Arg,
    b: Arg,
    kernel: K,
) {
    map_rows::<T, T>(
        out,
        a,
        b,
        (grain::<T>() / K::cost().max(1)).max(1),
        |o, a, b, strides, len| {
            // SAFETY: map_rows' promise; an output that is `a` has a's layout.
            unsafe { row_kernel(o, a, b, strides, len, kernel) }
        },
    );
}

/// `out = f(out, b)` in place; `b` broadcasts to `out` and does not overlap it.
pub(super) fn map_inplace<T: Arith + Sink<T::C>>(
    out: &Tensor,
    b: Arg,
    f: impl Fn(T::C, T::C) -> T::C + Sync,
) {
    let shape = out.shape();
    let (sb, kb) = source::<T>(b, shape);
    let ko: Strides = out
        .layout()
        .element_strides_in(size_of::<T>())
        .expect("writable");
    let plan = Plan::new(shape, [&ko, &ko, &kb]);
    let (po, sb) = (Shared(out.data_ptr().cast::<T>()), Shared(sb));
    // Only b may be staged: input 1 is the output itself, passed as a
    // value here.
    let zero = <T::C as bytemuck::Zeroable>::zeroed();
    let (stage, strips) = staging::<T>(&plan, [Src::Value(zero), sb.0]);
    let stage = Shared(stage);
    for_elements::<T>(out.numel(), |start, end| {
        let (po, sb, stage) = (po, sb, stage);
        let (inner, step) = (plan.inner(), plan.row_step());
        plan.walk_strips(start, end, strips, |off, n, len| {
            band_rows(stage.0, step, off, n, len, |[oo, _, ob], line| {
                let (b, strides) = match (line, sb.0) {
                    (Some((_, l)), _) => (Src::Mem(l), [inner[0], inner[1], 1]),
                    // SAFETY: the offset of an element of b.
                    (None, Src::Mem(p)) => (Src::Mem(unsafe { p.offset(ob) }), inner),
                    (None, v) => (v, inner),
                };
                // SAFETY: as in map_into; a staged line holds the row's
                // `len` elements.
                unsafe { row_inplace(po.0.offset(oo), b, strides, len, &f) }
            })
        });
    });
}

/// An operand's element strides.
type Strides = SmallVec<[isize; DIMS]>;

macro_rules! binary_dispatch {
    ($($(#[$doc:meta])* $V:ident, $name:literal, $f:ident, $promo:ident, $gen:literal $(, $ip:ident)?;)*) => {
        /// `out = a op b` in `out`'s dtype (see [`map_into`]); `in_place`:
        /// `a` is `out` itself. Inlined into `binary`, which takes pow
        /// apart first, so the compiler drops pow's arm (and its closure).
        #[inline(always)]
        fn binary_typed<T: Arith + Sink<T::C>>(out: &Tensor, a: Arg, b: Arg, op: BinaryOp, in_place: bool) {
            match op {
                $(BinaryOp::$V => {
                    let f = |x: T::C, y: T::C| Arith::$f(x, y);
                    if in_place { map_inplace::<T>(out, b, f) } else { map_into::<T, T::C, T>(out, a, b, f) }
                })*
            }
        }
    };
}
crate::binary_ops!(binary_dispatch);

/// `out = a op b`, every tensor of `out`'s dtype; `a` and `b` broadcast to
/// `out` and are walkable, `out` is writable. `out` overlaps neither input,
/// unless `in_place`: `a` is `out` itself (and `b` a tensor apart or a number).
pub(crate) fn binary(out: &Tensor, a: Arg, b: Arg, op: BinaryOp, in_place: bool) {
    with_compute_element!(out.dtype(), T => {
        if op == BinaryOp::Pow {
            // Not through binary_typed's closure (see `Kernel`); its arm
            // for pow is dead, and the compiler drops it.
            return super::pow::pow::<T>(out, a, b, in_place);
        }
        // Rounding division and remainder of floats and 64-bit integers
        // by blocks (`rounding.rs`); narrower integers vectorize as they are.
        if const {
            matches!(<T as Element>::DTYPE.category(), Category::Floating)
                || matches!(<T as Element>::DTYPE, DType::I64 | DType::U64)
        } {
            match op {
                BinaryOp::DivFloor => return map_kernel::<T, _>(out, a, b, FloorDivideKernel),
                BinaryOp::Remainder => return map_kernel::<T, _>(out, a, b, RemainderKernel),
                BinaryOp::Fmod => return map_kernel::<T, _>(out, a, b, FmodKernel),
                _ => {}
            }
        }
        binary_typed::<T>(out, a, b, op, in_place)
    })
}

/// `out = a / b` into the float32 `out` for integer operands of
/// `dtype`, each element converted to float32 as it is read (to nearest,
/// as the cast converts it) and divided there: PyTorch's true division of
/// integers, in one pass. False (nothing written) for other dtypes.
pub(crate) fn divide_casting(out: &Tensor, a: Arg, b: Arg, dtype: DType) -> bool {
    debug_assert_eq!(out.dtype(), DType::F32);
    with_compute_element!(dtype, T => {
        if !const { matches!(<T as Element>::DTYPE.category(), Category::Integral) } {
            return false;
        }
        map_into::<T, f32, f32>(out, a, b, |x, y| x.as_f32() / y.as_f32());
        true
    })
}

/// `out = a op b` into the bool tensor `out`, `a` and `b` of one dtype
/// `dtype` (a number rounded to it), as [`binary`] otherwise.
pub(crate) fn compare(out: &Tensor, a: Arg, b: Arg, dtype: DType, op: CompareOp) {
    with_compute_element!(dtype, T => {
        match op {
            CompareOp::Eq => map_into::<T, bool, bool>(out, a, b, |x, y| x == y),
            CompareOp::Ne => map_into::<T, bool, bool>(out, a, b, |x, y| x != y),
            CompareOp::Lt => map_into::<T, bool, bool>(out, a, b, |x, y| x.less(y)),
            CompareOp::Le => map_into::<T, bool, bool>(out, a, b, |x, y| x.less(y) || x == y),
            CompareOp::Gt => map_into::<T, bool, bool>(out, a, b, |x, y| y.less(x)),
            CompareOp::Ge => map_into::<T, bool, bool>(out, a, b, |x, y| y.less(x) || x == y),
        }
    })
}

macro_rules! unary_dispatch {
    ($($(#[$doc:meta])* $V:ident, $name:literal, $f:ident, $promo:ident, $gen:literal $(, $ip:ident)?;)*) => {
        /// `out = op(src)` in `out`'s dtype; `in_place`: `src` is `out`.
        /// Inlined into `unary`, whose match leaves the arms of exp and
        /// log dead, so the compiler drops them (and their closures).
        #[inline(always)]
        fn unary_typed<T: Arith + Sink<T::C>>(out: &Tensor, src: &Tensor, op: UnaryOp, in_place: bool) {
            let zero = Arg::Number(Scalar::Int(0));
            match op {
                $(UnaryOp::$V => {
                    let f = |x: T::C, _: T::C| Arith::$f(x);
                    if in_place { map_inplace::<T>(out, zero, f) } else { map_into::<T, T::C, T>(out, Arg::Tensor(src), zero, f) }
                })*
            }
        }
    };
}
crate::unary_ops!(unary_dispatch);

/// `out = op(src)`; `src` walkable and of `out`'s dtype (for the magnitude
/// of complex numbers, `out` is of the real dtype), `out` writable and
/// either `src` itself (`in_place`) or apart from it.
pub(crate) fn unary(out: &Tensor, src: &Tensor, op: UnaryOp, in_place: bool) {
    // The magnitude in the components' precision (`hypot`), as PyTorch's `abs`.
    macro_rules! magnitudes {
        ($real:ty, $complex:ty) => {{
            // SAFETY: src is walkable and of this dtype, out fresh and real.
            let (mut o, va) = unsafe {
                (
                    view_mut::<$real>(out).unwrap(),
                    view::<$complex>(src).unwrap(),
                )
            };
            Zip::from(&mut o).and(&va).for_each(|o, z| *o = z.norm());
        }};
    }
    // float16 and bfloat16 `-x` and `|x|` on the sign bit of the 16-bit
    // patterns: the value widening, the op and rounding back give, without
    // the two conversions (a signalling NaN stays signalling, where the
    // conversions would quiet it).
    macro_rules! sign_bit {
        ($f:expr) => {{
            let f = $f;
            let zero = Arg::Number(Scalar::Int(0));
            return if in_place {
                map_inplace::<u16>(out, zero, |x, _| f(x))
            } else {
                map_into::<u16, u16, u16>(out, Arg::Tensor(src), zero, |x, _| f(x))
            };
        }};
    }
    match (op, src.dtype()) {
        (UnaryOp::Abs, DType::C64) => return magnitudes!(f32, Complex32),
        (UnaryOp::Abs, DType::C128) => return magnitudes!(f64, Complex64),
        (UnaryOp::Abs, DType::F16 | DType::BF16) => sign_bit!(|x: u16| x & 0x7fff),
        (UnaryOp::Neg, DType::F16 | DType::BF16) => sign_bit!(|x: u16| x ^ 0x8000),
        (UnaryOp::Sqrt, _) if sqrt::dense(out, src) => return,
        _ if vmath::unary_dense(out, src, op) => return,
        _ => {}
    }
    // exp and ln over other layouts as the loops' `Kernel` (the vmath
    // kernels behind a closure stayed out of line, compiled for the
    // baseline with a software `fma`); their arms of unary_typed are dead.
    let x = Arg::Tensor(src);
    let zero = Arg::Number(Scalar::Int(0));
    with_compute_element!(out.dtype(), T => match op {
        UnaryOp::Exp => map_kernel::<T, _>(out, x, zero, ExpKernel),
        UnaryOp::Log => map_kernel::<T, _>(out, x, zero, LogKernel),
        _ => unary_typed::<T>(out, src, op, in_place),
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
