//! Copies between layouts and dtypes (`contiguous`, `copy_`, casts), in
//! the destination's memory order.
//!
//! Into a contiguous destination: contiguous casts run the vectorised loops
//! of `cast.rs`; same-dtype copies of strided views collapse the source's
//! contiguous inner dimensions and copy whole rows, transpose through
//! cache-sized tiles when the source's unit stride is on the second-to-last
//! dimension, and gather with a typed strided loop otherwise. The other
//! layouts go through `ndarray`, and memory that is misaligned or has strides
//! that are not whole elements through a byte-wise gather.

use super::cast::cast_contiguous;
use super::parallel::{for_each, for_range, threads};
use super::strided::{self, Dim, for_each_offset, view, view_mut, walk};
use super::transpose;
use crate::{Element, Result, Tensor, with_element};
use ndarray::Zip;

/// Elements past which a strided copy splits across threads.
const PARALLEL_MIN: usize = 1 << 16;
/// Side of a transpose tile, in elements.
const TILE: usize = 32;

/// `src` as a tensor the typed loops can read: itself when ndarray can view
/// it, else a contiguous copy gathered byte by byte (memory not aligned to
/// the element size, strides that are not whole elements): the aligned
/// staging every typed loop relies on.
pub(crate) fn materialize(src: &Tensor) -> Result<Tensor> {
    // SAFETY: only probes whether a view can be built; nothing is read.
    let viewable = with_element!(src.dtype(), T => unsafe { view::<T>(src) }.is_some());
    if viewable {
        return Ok(src.clone());
    }
    let out = Tensor::empty(src.shape(), src.dtype(), src.device())?;
    copy_bytes(&out, src);
    Ok(out)
}

fn aligned(t: &Tensor) -> bool {
    (t.data_ptr() as usize).is_multiple_of(t.dtype().size().clamp(1, 8))
}

/// Writes `src` (broadcast to `dst`'s shape, cast to its dtype) into `dst`.
/// The caller has checked devices, shapes and that the two do not overlap.
pub(crate) fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    let src = src.broadcast_to(dst.shape())?;
    if src.numel() == 0 {
        return Ok(());
    }
    let permuted;
    let (dst, src) = match memory_permutation(dst) {
        Some(dims) => {
            permuted = (dst.permute(&dims)?, src.permute(&dims)?);
            (&permuted.0, permuted.1)
        }
        None => (dst, src),
    };
    let contiguous = dst.is_contiguous() && src.is_contiguous();
    if src.dtype() == dst.dtype() {
        if contiguous {
            // One memcpy, split across threads past a size, as torch's
            // `clone()` is.
            let (from, to) = (src.data_ptr() as usize, dst.data_ptr() as usize);
            for_range(dst.nbytes(), PARALLEL_MIN * 4, 64, |a, b| {
                // SAFETY: both ranges hold numel elements and do not
                // overlap; each piece is a part of them.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        (from + a) as *const u8,
                        (to + a) as *mut u8,
                        b - a,
                    )
                }
            });
            return Ok(());
        }
        if dst.is_contiguous() && aligned(dst) && aligned(&src) && strided_copy(dst, &src) {
            return Ok(());
        }
        // SAFETY: probe only.
        let typed = with_element!(dst.dtype(), T => unsafe { view_mut::<T>(dst).is_some() && view::<T>(&src).is_some() });
        if !typed {
            copy_bytes(dst, &src);
            return Ok(());
        }
    } else if contiguous
        && aligned(dst)
        && aligned(&src)
        // SAFETY: both are contiguous, aligned, of numel elements of their
        // dtypes, and do not overlap (the caller's promise).
        && unsafe { cast_contiguous(src.dtype(), dst.dtype(), src.data_ptr(), dst.data_ptr(), dst.numel()) }
    {
        return Ok(());
    }
    let src = materialize(&src)?;
    // SAFETY: probe only.
    let writable = with_element!(dst.dtype(), T => unsafe { view_mut::<T>(dst).is_some() });
    if writable {
        with_element!(src.dtype(), S => with_element!(dst.dtype(), D => cast_typed::<S, D>(dst, &src)));
    } else {
        let staged = Tensor::empty(dst.shape(), dst.dtype(), dst.device())?;
        with_element!(src.dtype(), S => with_element!(dst.dtype(), D => cast_typed::<S, D>(&staged, &src)));
        copy_bytes(dst, &staged);
    }
    Ok(())
}

/// The dimensions of a non-contiguous `dst` in its memory order, outermost
/// (largest stride) first, where that is not their order: a copy into a
/// permuted destination (a transpose's `clone()` or cast) then runs over
/// both sides in the destination's order, a contiguous pass when the source
/// is permuted alike.
fn memory_permutation(dst: &Tensor) -> Option<Vec<i64>> {
    if dst.is_contiguous() {
        return None;
    }
    let dims = strided::memory_order(dst.shape(), &dst.layout().strides);
    dims.iter()
        .enumerate()
        .any(|(i, &d)| i != d)
        .then(|| dims.iter().map(|&d| d as i64).collect())
}

fn cast_typed<S: Element, D: Element>(dst: &Tensor, src: &Tensor) {
    // SAFETY: the caller checked that both views exist; dst is exclusively ours
    // for the duration and does not overlap src.
    let (Some(mut out), Some(input)) = (unsafe { view_mut::<D>(dst) }, unsafe { view::<S>(src) })
    else {
        return;
    };
    if let (Some(o), Some(i)) = (out.as_slice_mut(), input.as_slice()) {
        // Split across threads as `cast.rs`'s loops are: the pairs it has no
        // loop for (bool, the 8- and 16-bit integers, complex) wrote, and
        // so first touched, a new output's pages on one thread (bool to
        // float64 of 2000x2000: 1.43 ms, torch 1.18; 1.22 into memory
        // written before).
        let o = o.as_mut_ptr() as usize;
        for_range(i.len(), PARALLEL_MIN, 64, |start, end| {
            // SAFETY: start..end lies inside the output, which holds as
            // many elements as the input; the pieces are disjoint.
            let o =
                unsafe { std::slice::from_raw_parts_mut((o as *mut D).add(start), end - start) };
            o.iter_mut()
                .zip(&i[start..end])
                .for_each(|(o, &x)| *o = x.cast());
        });
        return;
    }
    Zip::from(&mut out)
        .and(&input)
        .for_each(|o, &x| *o = x.cast());
}

/// A same-dtype copy of an aligned strided `src` into the contiguous `dst`,
/// element by element as the unsigned type of the element's size; false
/// when the strides are not whole elements.
fn strided_copy(dst: &Tensor, src: &Tensor) -> bool {
    match dst.dtype().size() {
        1 => strided_typed::<u8>(dst, src),
        2 => strided_typed::<u16>(dst, src),
        4 => strided_typed::<u32>(dst, src),
        8 => strided_typed::<u64>(dst, src),
        16 => strided_typed::<[u64; 2]>(dst, src),
        _ => false,
    }
}

fn strided_typed<T: Copy + Send + Sync>(dst: &Tensor, src: &Tensor) -> bool {
    let Some(strides) = src.layout().element_strides(size_of::<T>()) else {
        return false;
    };
    let mut dims: Vec<Dim> = Vec::new();
    for (&n, &s) in src.shape().iter().zip(&strides) {
        if n == 1 {
            continue;
        }
        match dims.last_mut() {
            Some(last) if last.s == s * n as isize => {
                last.n *= n;
                last.s = s;
            }
            _ => dims.push(Dim { n, s }),
        }
    }
    let (s, d) = (src.data_ptr() as usize, dst.data_ptr() as usize);
    match dims.as_slice() {
        [] => copy_rows::<T>(s, d, &[], Dim { n: 1, s: 1 }),
        [outer @ .., rows, cols] if rows.s == 1 && cols.s != 1 => {
            transpose::<T>(s, d, outer, *rows, *cols)
        }
        [outer @ .., last] => copy_rows::<T>(s, d, outer, *last),
    }
    true
}

/// Rows along `last` (memcpy when contiguous, else a strided loop).
fn copy_rows<T: Copy + Send + Sync>(src: usize, dst: usize, outer: &[Dim], last: Dim) {
    let rows: usize = outer.iter().map(|d| d.n).product();
    let row = |r: usize, off: isize| {
        let (s, d) = (src as *const T, dst as *mut T);
        // Locals: read through `last` in the loop, they were reloaded per
        // element (as in `transpose`).
        let (n, step) = (last.n, last.s);
        // SAFETY: row r of the contiguous destination holds n elements;
        // the source's layout keeps each element of the row in its storage;
        // the two do not overlap (the caller's promise).
        unsafe {
            let (d, s) = (d.add(r * n), s.offset(off));
            if step == 1 {
                std::ptr::copy_nonoverlapping(s, d, n);
            } else {
                for j in 0..n {
                    *d.add(j) = *s.offset(j as isize * step);
                }
            }
        }
    };
    if rows > 1 && rows * last.n >= PARALLEL_MIN {
        let tasks = (threads() * 4).min(rows);
        let per = rows.div_ceil(tasks);
        for_each(tasks, |t| {
            let start = (t * per).min(rows);
            walk(outer, start, per.min(rows - start), row);
        });
    } else {
        walk(outer, 0, rows, row);
    }
}

/// `dst[.., r, c] = src[.. + r + c * cols.s]`: the transpose of the last two
/// dimensions, in bands of [`TILE`] rows (the last band takes the rest, up
/// to twice as many), tile by tile so both sides stay in cache; elements of
/// 1, 2, 4 or 8 bytes in register blocks (`transpose.rs`).
fn transpose<T: Copy + Send + Sync>(src: usize, dst: usize, outer: &[Dim], rows: Dim, cols: Dim) {
    let planes: usize = outer.iter().map(|d| d.n).product();
    // Sizes and strides as plain locals: read through `rows`/`cols` inside
    // the loop, they were reloaded from memory on every element (the
    // stores through `d` might have changed them), and the copy ran 2x
    // slower than NumPy's.
    let (n_rows, n_cols, cs) = (rows.n, cols.n, cols.s);
    let plane = n_rows * n_cols;
    let bands = (n_rows / TILE).max(1);
    let band = move |u: usize| {
        // Read into the body's own locals: a closure reads its captures
        // through its environment, and the stores through `d` (bytes, for
        // bool and int8, may alias anything) had `cs` reloaded on every
        // element (`permute(2,0,1).contiguous()` of bool 40x20x40 ran 1.5x
        // NumPy's).
        let (n_rows, n_cols, cs) = (n_rows, n_cols, cs);
        let (p, b) = (u / bands, u % bands);
        let mut base = 0;
        walk(outer, p, 1, |_, off| base = off);
        let (s, d) = (src as *const T, dst as *mut T);
        let r0 = b * TILE;
        let r1 = if b + 1 == bands { n_rows } else { r0 + TILE };
        // SAFETY: (r, c) lies inside plane p of both tensors for every
        // r0 <= r < r1, c < n_cols; bands are disjoint in the destination.
        let blocks = unsafe {
            let (s, d) = (s.offset(base + r0 as isize), d.add(p * plane + r0 * n_cols));
            transpose::band_of(s, cs, d, n_cols as isize, r1 - r0, n_cols)
        };
        if blocks {
            return;
        }
        for c0 in (0..n_cols).step_by(TILE) {
            let c1 = (c0 + TILE).min(n_cols);
            for r in r0..r1 {
                // SAFETY: as above, for the elements of T.
                unsafe {
                    let (dr, sr) = (d.add(p * plane + r * n_cols), s.offset(base + r as isize));
                    for c in c0..c1 {
                        *dr.add(c) = *sr.offset(c as isize * cs);
                    }
                }
            }
        }
    };
    let units = planes * bands;
    if units > 1 && planes * plane >= PARALLEL_MIN {
        for_each(units, band);
    } else {
        (0..units).for_each(band);
    }
}

/// Element-by-element byte copy between two same-dtype layouts of one shape:
/// works for any alignment and any stride.
fn copy_bytes(dst: &Tensor, src: &Tensor) {
    let size = dst.dtype().size();
    let mut src_offsets = Vec::with_capacity(src.numel());
    for_each_offset(src.shape(), &src.layout().strides, |o| src_offsets.push(o));
    let (s, d) = (src.data_ptr(), dst.data_ptr());
    let mut k = 0;
    for_each_offset(dst.shape(), &dst.layout().strides, |o| {
        if let Some(&from) = src_offsets.get(k) {
            // SAFETY: both offsets address whole elements inside their storages.
            unsafe { std::ptr::copy(s.offset(from), d.offset(o), size) };
        }
        k += 1;
    });
}
