//! Ops whose operands must be cast first, run a block of the output at a
//! time: each block's operands are cast into a temporary of that block's
//! size, so the temporaries stay small however large the tensors are (a
//! whole-tensor cast of the operands of `int32 < float64` would be 8 bytes
//! an element, eight times the bool output; those of a large `int32 /
//! int32`, written to fresh memory and read back, took longer than the
//! division). An operand no larger than a block (a number as a 0-d tensor,
//! a broadcast row) is cast once, whole.

use crate::backend::BinaryOp;
use crate::layout::Selection;
use crate::{Result, Tensor, ops};

/// The fewest elements a block has: below this a block is smaller than
/// the overhead of an op call is worth (32 KiB of float64); outputs this
/// small are one block.
const MIN_BLOCK: usize = 1 << 12;

/// A whole dimension (`:`), the selection of a dimension a block does not cut.
pub(super) const WHOLE: Selection = Selection::Range {
    start: None,
    stop: None,
    step: 1,
};

/// How many elements a block may have so that a temporary of `temp_size`
/// bytes an element is no larger than the output (`numel` elements of
/// `out_size` bytes), within [`MIN_BLOCK`] and `max` (the backend's
/// [`block_elements`](crate::backend::Backend::block_elements)).
pub(super) fn block_len(numel: usize, out_size: usize, temp_size: usize, max: usize) -> usize {
    (numel.saturating_mul(out_size) / temp_size.max(1)).clamp(MIN_BLOCK.min(max), max)
}

/// Row-major blocks of `shape`'s index space, each at most `max` elements
/// (`max >= 1`): the selections that view one block and keep every
/// dimension. Blocks are whole inner rows where a row fits, so a block of
/// a contiguous tensor is contiguous.
pub(super) fn blocks(shape: &[usize], max: usize) -> Vec<Vec<Selection>> {
    let range = |start: usize, stop: usize| Selection::Range {
        start: Some(start as isize),
        stop: Some(stop as isize),
        step: 1,
    };
    if shape.contains(&0) {
        return Vec::new();
    }
    // The outermost dimension whose inner rows fit in a block; the ones
    // before it go an index at a time, the ones after it whole.
    let Some(split) = (0..shape.len()).find(|&d| shape[d + 1..].iter().product::<usize>() <= max)
    else {
        return vec![Vec::new()]; // a 0-d tensor: one block of one element
    };
    let inner: usize = shape[split + 1..].iter().product();
    let rows = (max / inner).max(1);
    let mut out = Vec::new();
    let mut index = vec![0usize; split];
    loop {
        for start in (0..shape[split]).step_by(rows) {
            let mut sel: Vec<Selection> = index.iter().map(|&i| range(i, i + 1)).collect();
            sel.push(range(start, (start + rows).min(shape[split])));
            sel.extend(std::iter::repeat_n(WHOLE, shape.len() - split - 1));
            out.push(sel);
        }
        // The next index of the outer dimensions, last fastest.
        let Some(d) = (0..split).rev().find(|&d| index[d] + 1 < shape[d]) else {
            return out;
        };
        index[d] += 1;
        index[d + 1..].iter_mut().for_each(|i| *i = 0);
    }
}

/// Partial results added as a binary counter: two of one level make one of
/// the next, so `n` partials are summed in a tree of depth `log2 n` (the
/// error of a pairwise sum, not of a running one).
#[derive(Default)]
pub(super) struct Pairwise {
    levels: Vec<(u32, Tensor)>,
}

impl Pairwise {
    pub(super) fn push(&mut self, mut t: Tensor) -> Result<()> {
        let mut level = 0;
        while self.levels.last().is_some_and(|(l, _)| *l == level) {
            let (_, earlier) = self.levels.pop().expect("checked above");
            t = ops::binary((&earlier).into(), (&t).into(), BinaryOp::Add)?;
            level += 1;
        }
        self.levels.push((level, t));
        Ok(())
    }

    /// The sum of every partial pushed (`None` when there was none).
    pub(super) fn finish(mut self) -> Result<Option<Tensor>> {
        let Some((_, mut total)) = self.levels.pop() else {
            return Ok(None);
        };
        while let Some((_, earlier)) = self.levels.pop() {
            total = ops::binary((&earlier).into(), (&total).into(), BinaryOp::Add)?;
        }
        Ok(Some(total))
    }
}

/// `t` broadcast to `shape`, then the block `sel` of it.
pub(super) fn block_of(t: &Tensor, shape: &[usize], sel: &[Selection]) -> Result<Tensor> {
    t.broadcast_to(shape)?.index(sel)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of `shape` once, in row-major order, by the blocks.
    fn covered(shape: &[usize], max: usize) -> Vec<Vec<usize>> {
        let mut seen = Vec::new();
        for sel in blocks(shape, max) {
            assert_eq!(sel.len(), shape.len());
            let ranges: Vec<(usize, usize)> = sel
                .iter()
                .map(|s| match *s {
                    Selection::Range { start, stop, .. } => (
                        start.map_or(0, |v| v as usize),
                        stop.map_or(usize::MAX, |v| v as usize),
                    ),
                    _ => unreachable!(),
                })
                .collect();
            let n: usize = ranges
                .iter()
                .zip(shape)
                .map(|(&(a, b), &s)| b.min(s) - a)
                .product();
            assert!(n <= max.max(1), "{n} elements in a block of at most {max}");
            let mut idx: Vec<usize> = ranges.iter().map(|r| r.0).collect();
            'walk: loop {
                seen.push(idx.clone());
                for d in (0..shape.len()).rev() {
                    idx[d] += 1;
                    if idx[d] < ranges[d].1.min(shape[d]) {
                        continue 'walk;
                    }
                    idx[d] = ranges[d].0;
                }
                break;
            }
        }
        seen
    }

    #[test]
    fn blocks_cover_every_element_once_in_order() {
        for (shape, max) in [
            (vec![10usize], 3usize),
            (vec![7, 5], 12),
            (vec![7, 5], 4),
            (vec![3, 4, 5], 7),
            (vec![3, 4, 5], 1),
            (vec![3, 4, 5], 1000),
            (vec![2, 1, 9], 9),
        ] {
            let all: Vec<Vec<usize>> = {
                let mut v = vec![vec![]];
                for &s in &shape {
                    v = v
                        .into_iter()
                        .flat_map(|p| {
                            (0..s).map(move |i| {
                                let mut q = p.clone();
                                q.push(i);
                                q
                            })
                        })
                        .collect();
                }
                v
            };
            assert_eq!(covered(&shape, max), all, "{shape:?} by {max}");
        }
        assert_eq!(blocks(&[], 5).len(), 1);
        assert!(blocks(&[4, 0, 2], 5).is_empty());
    }

    #[test]
    fn a_block_is_never_larger_than_the_output_past_the_floor() {
        // int32 < float64: 8-byte temporaries for a 1-byte output.
        let max = 1 << 16;
        assert_eq!(block_len(10_000_000, 1, 8, max), max);
        assert_eq!(block_len(100_000, 1, 8, max), 12_500);
        assert_eq!(block_len(1_000, 1, 8, max), MIN_BLOCK);
    }
}
