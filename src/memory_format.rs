//! The strides PyTorch gives a tensor it makes from others
//! (`preserve_format`): a copy or cast of a transposed tensor is transposed
//! too, and so is the result of an elementwise op on one. Users coming from
//! PyTorch see the same strides, and a cast or op over permuted dense
//! memory runs as one contiguous loop instead of a transpose.
//!
//! Two rules, both ATen's:
//! - [`Layout::like`]: `empty_like` (`clone()`, `.to(dtype)`): a dense,
//!   non-overlapping layout keeps its strides; any other keeps the order of
//!   its strides (`infer_dense_strides`).
//! - [`Layout::for_elementwise`]: `TensorIterator`: contiguous when every
//!   operand is; the operands' strides when they all share one dense layout
//!   of the output's shape; else the order of the operands' strides, the
//!   first operand that tells two dimensions apart deciding
//!   (`reorder_dimensions`).

use crate::layout::{Layout, contiguous_strides};

impl Layout {
    /// The layout of a new tensor of elements of `out_size` bytes copied
    /// from this one (of `in_size`-byte elements): PyTorch's `empty_like`.
    pub fn like(&self, in_size: usize, out_size: usize) -> Layout {
        let strides = match dense_element_strides(self, in_size) {
            Some(elements) => elements.iter().map(|&s| s * out_size as isize).collect(),
            None => strides_in_order(&self.shape, &[&self.strides], out_size),
        };
        Layout {
            shape: self.shape.clone(),
            strides,
            offset: 0,
        }
    }

    /// The layout of an elementwise op's new output of `shape` from
    /// `operands` (their layouts and element sizes, in argument order),
    /// with elements of `out_size` bytes: PyTorch's `TensorIterator`. A
    /// number operand (`with_number`) has no strides to compare but, as a
    /// 0-dim operand, rules out the shortcuts for operands of one shape.
    pub fn for_elementwise(
        shape: &[usize],
        operands: &[(&Layout, usize)],
        with_number: bool,
        out_size: usize,
    ) -> Layout {
        let contiguous = || Layout::contiguous(shape.to_vec(), out_size);
        // Row-major operands without size-1 dimensions give a row-major
        // output whatever their shapes and a number beside them: no sort
        // (a small op's hot path).
        if operands
            .iter()
            .all(|(l, s)| l.is_contiguous(*s) && l.shape.iter().all(|&n| n > 1))
        {
            return contiguous();
        }
        let same_shape = !with_number && operands.iter().all(|(l, _)| l.shape == shape);
        if same_shape && operands.iter().all(|(l, s)| l.is_contiguous(*s)) {
            return contiguous();
        }
        if same_shape
            && let Some(first) = dense_element_strides(operands[0].0, operands[0].1)
            && operands[1..]
                .iter()
                .all(|(l, s)| dense_element_strides(l, *s).as_ref() == Some(&first))
        {
            let strides = first.iter().map(|&s| s * out_size as isize).collect();
            return Layout {
                shape: shape.to_vec(),
                strides,
                offset: 0,
            };
        }
        // Broadcast dimensions stride 0, as `TensorIterator` sees them.
        let broadcast: Vec<Vec<isize>> = operands
            .iter()
            .filter_map(|(l, _)| l.broadcast_to(shape).ok().map(|b| b.strides))
            .collect();
        let views: Vec<&[isize]> = broadcast.iter().map(Vec::as_slice).collect();
        Layout {
            shape: shape.to_vec(),
            strides: strides_in_order(shape, &views, out_size),
            offset: 0,
        }
    }
}

/// The element strides of a layout whose elements fill a block of memory
/// without gaps or overlaps, in any order (`is_non_overlapping_and_dense`);
/// `None` for any other.
fn dense_element_strides(layout: &Layout, size: usize) -> Option<Vec<isize>> {
    let strides: Vec<isize> = layout.element_strides(size)?;
    let mut order: Vec<usize> = (0..strides.len()).collect();
    // Size-1 dimensions last: their strides are never stepped.
    order.sort_by_key(|&d| (layout.shape[d] < 2, strides[d]));
    let mut want = 1isize;
    for &d in &order {
        let n = layout.shape[d];
        if n < 2 {
            break;
        }
        if strides[d] != want {
            return None;
        }
        want *= n as isize;
    }
    Some(strides)
}

/// Dense strides (in bytes, elements of `size`) laid out in the order of
/// the `operands`' strides: ATen's insertion sort, which leaves dimensions
/// it cannot tell apart (a stride 0, equal strides of an equal or shorter
/// dimension) in row-major order.
fn strides_in_order(shape: &[usize], operands: &[&[isize]], size: usize) -> Vec<isize> {
    let ndim = shape.len();
    if ndim <= 1 {
        return contiguous_strides(shape, size);
    }
    // 1: dimension `a` belongs after (outside) `b`; -1: before; 0: either.
    let after = |a: usize, b: usize| -> i32 {
        for s in operands {
            let (sa, sb) = (s[a], s[b]);
            if sa == 0 || sb == 0 {
                continue;
            }
            if sa != sb {
                return if sa < sb { -1 } else { 1 };
            }
            if shape[a] > shape[b] {
                return 1;
            }
        }
        0
    };
    // perm[0] is the fastest-moving dimension.
    let mut perm: Vec<usize> = (0..ndim).rev().collect();
    for i in 1..ndim {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match after(perm[d0], perm[d1]) {
                1 => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                -1 => break,
                _ => {}
            }
        }
    }
    let mut strides = vec![0isize; ndim];
    let mut next = size as isize;
    for &d in &perm {
        strides[d] = next;
        // Saturating: an output too large to exist is refused after its
        // layout (`Tensor::alloc_as`, TooLarge), not by an overflow panic.
        next = next.saturating_mul(shape[d].max(1) as isize);
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(shape: &[usize], elements: &[isize], size: usize) -> Layout {
        Layout {
            shape: shape.to_vec(),
            strides: elements.iter().map(|&s| s * size as isize).collect(),
            offset: 0,
        }
    }

    #[test]
    fn a_transpose_stays_transposed() {
        let t = layout(&[4, 3], &[1, 4], 4);
        assert_eq!(t.like(4, 2).strides, vec![2, 8]);
        let sliced = layout(&[4, 3], &[1, 8], 4); // t[:, ::2] of a 6x4's transpose
        assert_eq!(sliced.like(4, 4).strides, vec![4, 16]);
        let out = Layout::for_elementwise(&[4, 3], &[(&sliced, 4)], false, 1);
        assert_eq!(out.strides, vec![1, 4]);
    }

    #[test]
    fn an_output_too_large_to_exist_gets_a_layout_not_a_panic() {
        let e = layout(&[2, 1 << 61], &[0, 0], 8); // zeros(1, 1).expand(2, 2**61)
        let out = Layout::for_elementwise(&[2, 1 << 61], &[(&e, 8), (&e, 8)], true, 8);
        assert_eq!(out.shape, vec![2, 1 << 61]);
        let t = crate::Tensor::zeros(&[1, 1], crate::DType::F64, crate::Device::CPU).unwrap();
        let big = t.broadcast_to(&[2, 1 << 61]).unwrap();
        let err = crate::ops::binary((&big).into(), 1.0.into(), crate::BinaryOp::Add).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::TooLarge, "{err}");
    }

    #[test]
    fn the_first_operand_decides_and_broadcasts_do_not() {
        let p = layout(&[4, 2, 3], &[1, 12, 4], 4);
        let c = layout(&[4, 2, 3], &[6, 3, 1], 4);
        assert_eq!(
            Layout::for_elementwise(&[4, 2, 3], &[(&p, 4), (&c, 4)], false, 4).strides,
            vec![4, 48, 16]
        );
        let e = layout(&[2, 3, 4], &[0, 4, 1], 4); // expanded
        assert_eq!(e.like(4, 4).strides, vec![48, 16, 4]);
        // A size-1 dimension's odd stride: kept by a copy and a unary op,
        // ordered with a number beside it.
        let odd = layout(&[3, 1, 4], &[4, 100, 1], 4);
        assert_eq!(odd.like(4, 4).strides, odd.strides);
        let alone = Layout::for_elementwise(&[3, 1, 4], &[(&odd, 4)], false, 4);
        assert_eq!(alone.strides, vec![16, 16, 4]);
        let with_number = Layout::for_elementwise(&[3, 1, 4], &[(&odd, 4)], true, 4);
        assert_eq!(with_number.strides, vec![16, 48, 4]);
    }
}
