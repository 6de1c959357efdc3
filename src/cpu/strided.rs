//! Building ndarray views over tensors, and walking arbitrary byte layouts.

use crate::{Element, Tensor};
use ndarray::{ArrayViewD, ArrayViewMutD, Axis, IxDyn, ShapeBuilder};
use smallvec::SmallVec;
use std::cmp::Reverse;

/// Element strides with negative axes flipped, plus the pointer to the
/// lowest-addressed element: the form ndarray's raw constructors accept.
fn normalized<T: Element>(t: &Tensor) -> Option<(*mut T, Vec<usize>, Vec<usize>)> {
    let mut ptr = t.data_ptr().cast::<T>();
    if !(ptr as usize).is_multiple_of(align_of::<T>()) {
        return None;
    }
    let strides = t.layout().element_strides(size_of::<T>())?;
    let mut out = Vec::with_capacity(strides.len());
    let mut flipped = Vec::new();
    for (axis, (&s, &n)) in strides.iter().zip(t.shape()).enumerate() {
        if s < 0 {
            // SAFETY: the last element along this axis lies inside the storage.
            ptr = unsafe { ptr.offset(s * (n as isize - 1)) };
            flipped.push(axis);
        }
        out.push(s.unsigned_abs());
    }
    Some((ptr, out, flipped))
}

/// A read-only typed view, or `None` when the layout needs a byte gather.
///
/// # Safety
/// `t` must be a CPU tensor of element type `T`, and nobody may write its
/// elements while the view lives.
pub(crate) unsafe fn view<T: Element>(t: &Tensor) -> Option<ArrayViewD<'_, T>> {
    if t.numel() == 0 {
        return ArrayViewD::from_shape(IxDyn(t.shape()), &[]).ok();
    }
    let (ptr, strides, flipped) = normalized::<T>(t)?;
    let shape = IxDyn(t.shape()).strides(IxDyn(&strides));
    // SAFETY: the tensor's layout keeps every element inside its storage, and
    // ptr is aligned (checked in `normalized`).
    let mut v = unsafe { ArrayViewD::from_shape_ptr(shape, ptr) };
    for axis in flipped {
        v.invert_axis(Axis(axis));
    }
    Some(v)
}

/// A writable typed view, or `None` when the layout needs a byte scatter
/// (misaligned, partial-element strides, or stride 0 on a long axis, where
/// distinct indices would alias one element).
///
/// # Safety
/// As for [`view`], and no other reference to these elements may be alive.
pub(crate) unsafe fn view_mut<T: Element>(t: &Tensor) -> Option<ArrayViewMutD<'_, T>> {
    if t.shape()
        .iter()
        .zip(&t.layout().strides)
        .any(|(&n, &s)| n > 1 && s == 0)
    {
        return None;
    }
    if t.numel() == 0 {
        return ArrayViewMutD::from_shape(IxDyn(t.shape()), &mut []).ok();
    }
    let (ptr, strides, flipped) = normalized::<T>(t)?;
    let shape = IxDyn(t.shape()).strides(IxDyn(&strides));
    // SAFETY: as in `view`; exclusivity is the caller's promise.
    let mut v = unsafe { ArrayViewMutD::from_shape_ptr(shape, ptr) };
    for axis in flipped {
        v.invert_axis(Axis(axis));
    }
    Some(v)
}

/// The dimensions in memory order, outermost (largest stride) first, as
/// TensorIterator reorders: a loop or copy in this order walks a permuted
/// layout (a transpose's `clone()`, cast or `+ 1`) as rows, not across
/// them. Size-1 dimensions, never stepped, come first of all; ties keep
/// their order.
pub(crate) fn memory_order(shape: &[usize], strides: &[isize]) -> SmallVec<[usize; 6]> {
    let mut dims: SmallVec<[usize; 6]> = (0..shape.len()).collect();
    dims.sort_by_key(|&d| {
        Reverse(if shape[d] == 1 {
            usize::MAX
        } else {
            strides[d].unsigned_abs()
        })
    });
    dims
}

/// Calls `f` with the byte offset (from element 0) of every element, in
/// row-major order.
pub(crate) fn for_each_offset(shape: &[usize], strides: &[isize], mut f: impl FnMut(isize)) {
    if shape.contains(&0) {
        return;
    }
    let mut index = vec![0usize; shape.len()];
    let mut offset = 0isize;
    loop {
        f(offset);
        let mut dim = shape.len();
        loop {
            if dim == 0 {
                return;
            }
            dim -= 1;
            index[dim] += 1;
            offset += strides[dim];
            if index[dim] < shape[dim] {
                break;
            }
            offset -= strides[dim] * shape[dim] as isize;
            index[dim] = 0;
        }
    }
}

/// One dimension of a walk: its length and its stride in elements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Dim {
    pub(crate) n: usize,
    pub(crate) s: isize,
}

/// Calls `f(k, offset)` for the `len` positions from flat position `start`
/// of `dims` (row-major), `offset` in elements.
pub(crate) fn walk(dims: &[Dim], start: usize, len: usize, mut f: impl FnMut(usize, isize)) {
    match dims {
        [] => {
            if len > 0 {
                f(start, 0)
            }
        }
        [d] => (start..start + len).for_each(|k| f(k, k as isize * d.s)),
        _ => {
            let mut idx = vec![0usize; dims.len()];
            let (mut rem, mut off) = (start, 0isize);
            for (i, d) in dims.iter().enumerate().rev() {
                idx[i] = rem % d.n;
                rem /= d.n;
                off += idx[i] as isize * d.s;
            }
            for k in start..start + len {
                f(k, off);
                for (i, d) in dims.iter().enumerate().rev() {
                    idx[i] += 1;
                    off += d.s;
                    if idx[i] < d.n {
                        break;
                    }
                    off -= d.s * d.n as isize;
                    idx[i] = 0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::memory_order;

    #[test]
    fn memory_order_puts_size_one_first_then_largest_stride() {
        // A transpose of a 3x4: dimension 1 steps 3 elements, 0 steps 1.
        assert_eq!(memory_order(&[3, 4], &[1, 3])[..], [1, 0]);
        // Size 1 first whatever its stride; ties (the negative stride's
        // magnitude equals the other) keep their order.
        assert_eq!(memory_order(&[2, 1, 2], &[-2, 7, 2])[..], [1, 0, 2]);
        assert_eq!(memory_order(&[], &[])[..], [] as [usize; 0]);
    }
}
