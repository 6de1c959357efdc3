//! The iteration plan of the elementwise loops: out, a and b's layout put
//! in the output's memory order and collapsed (size-1 dimensions dropped,
//! neighbours contiguous in every operand merged), walked by rows or, for
//! a transposed input, by strips.

use super::strided::memory_order;
use smallvec::SmallVec;

/// Dimensions kept on the stack by a call's strides and plan.
pub(super) const DIMS: usize = 6;

/// Columns of a strip of [`Plan::walk_strips`]: 64 lines of a transposed
/// operand, 4 KiB, stay in L1.
const STRIP: usize = 64;

/// How [`Plan::walk_strips`] cuts a transposed walk: strips of `cols`
/// columns, `rows` rows of a strip at a time.
#[derive(Clone, Copy, Debug)]
pub(super) struct Strips {
    pub(super) rows: usize,
    pub(super) cols: usize,
}

impl Strips {
    /// Strips of [`STRIP`] columns, a row at a time.
    pub(super) const ROWS: Strips = Strips {
        rows: 1,
        cols: STRIP,
    };
}

/// The collapsed iteration space of out, a and b: row-major sizes and
/// element strides, the last dimension the row.
pub(super) struct Plan {
    dims: SmallVec<[(usize, [isize; 3]); DIMS]>,
}

impl Plan {
    pub(super) fn new(shape: &[usize], operands: [&[isize]; 3]) -> Plan {
        // The output's memory order, its size-1 dimensions dropped.
        let order = memory_order(shape, operands[0]);
        let mut dims: SmallVec<[(usize, [isize; 3]); DIMS]> = SmallVec::new();
        for &d in order.iter().rev().filter(|&&d| shape[d] != 1) {
            let st = [operands[0][d], operands[1][d], operands[2][d]];
            if let Some((inner, ist)) = dims.last_mut()
                && (0..3).all(|k| st[k] == ist[k] * *inner as isize)
            {
                *inner *= shape[d];
                continue;
            }
            dims.push((shape[d], st));
        }
        if dims.is_empty() {
            dims.push((1, [0; 3]));
        }
        dims.reverse();
        Plan { dims }
    }

    /// Calls `row(offsets, len)` for the rows (or parts of rows) covering
    /// elements `start..end` in row-major order.
    pub(super) fn walk(&self, start: usize, end: usize, mut row: impl FnMut([isize; 3], usize)) {
        if start >= end {
            return; // also keeps a size-0 dimension out of the divisions below
        }
        let nd = self.dims.len();
        // The index on the stack for up to 8 collapsed dimensions.
        let (mut small, mut large) = ([0usize; 8], Vec::new());
        let idx: &mut [usize] = if nd <= small.len() {
            &mut small[..nd]
        } else {
            large.resize(nd, 0);
            &mut large
        };
        let mut rem = start;
        for d in (0..nd).rev() {
            idx[d] = rem % self.dims[d].0;
            rem /= self.dims[d].0;
        }
        let mut pos = start;
        while pos < end {
            let mut off = [0isize; 3];
            for (&i, (_, st)) in idx.iter().zip(&self.dims) {
                for (o, &s) in off.iter_mut().zip(st) {
                    *o += i as isize * s;
                }
            }
            let len = (self.dims[nd - 1].0 - idx[nd - 1]).min(end - pos);
            row(off, len);
            pos += len;
            idx[nd - 1] += len;
            let mut d = nd - 1;
            while d > 0 && idx[d] == self.dims[d].0 {
                idx[d] = 0;
                d -= 1;
                idx[d] += 1;
            }
        }
    }

    /// As [`walk`](Self::walk), but a 2-D plan with an input that reads
    /// across its memory along the row (a transposed operand: its row
    /// stride larger than its column stride) goes in strips of [`STRIP`]
    /// columns, every row of the range in turn: the strip's lines of that
    /// input stay in L1 from one row to the next, where whole rows touched
    /// a new line per element (`m.T + m2` 2000x2000 float32 took 7.5 ms,
    /// `m.T.contiguous()` 1.2). Rows cut by `start` or `end` go by `walk`.
    /// `rows(offsets, n, len)` gets up to `strips.rows` rows of a strip at
    /// a time, each [`row_step`](Self::row_step) past the one before (one
    /// at a time outside the strips).
    pub(super) fn walk_strips(
        &self,
        start: usize,
        end: usize,
        strips: Strips,
        mut rows: impl FnMut([isize; 3], usize, usize),
    ) {
        let mut one = |off, len| rows(off, 1, len);
        let &[(n_rows, by_row), (cols, by_col)] = &self.dims[..] else {
            return self.walk(start, end, one);
        };
        let across = (1..3).any(|k| by_col[k].abs() > 1 && by_row[k].abs() < by_col[k].abs());
        let (first, last) = (start.div_ceil(cols.max(1)), (end / cols.max(1)).min(n_rows));
        let Strips {
            rows: band,
            cols: strip,
        } = strips;
        // A row a time in strips as wide as the row: plain rows.
        if !across || (cols <= strip && band <= 1) || first >= last {
            return self.walk(start, end, one);
        }
        self.walk(start, first * cols, &mut one);
        for c in (0..cols).step_by(strip) {
            let mut r = first;
            while r < last {
                let n = band.max(1).min(last - r);
                rows(
                    [0, 1, 2].map(|k| r as isize * by_row[k] + c as isize * by_col[k]),
                    n,
                    strip.min(cols - c),
                );
                r += n;
            }
        }
        self.walk(last * cols, end, |off, len| rows(off, 1, len));
    }

    /// The offsets from one row of a 2-D plan to the next.
    pub(super) fn row_step(&self) -> [isize; 3] {
        match &self.dims[..] {
            [(_, by_row), _] => *by_row,
            _ => [0; 3],
        }
    }

    /// The one input of a 2-D plan that is exactly transposed (unit stride
    /// from row to row, a larger one along the row), when only one is: its
    /// index (1 or 2) and its stride along the row.
    pub(super) fn transposed(&self) -> Option<(usize, isize)> {
        let &[(_, by_row), (_, by_col)] = &self.dims[..] else {
            return None;
        };
        let mut across = (1..3).filter(|&k| by_row[k] == 1 && by_col[k].abs() > 1);
        match (across.next(), across.next()) {
            (Some(k), None) => Some((k, by_col[k])),
            _ => None,
        }
    }

    pub(super) fn inner(&self) -> [isize; 3] {
        self.dims.last().expect("a plan has a dimension").1
    }
}

#[cfg(test)]
mod tests {
    use super::Plan;

    #[test]
    fn plans_collapse_contiguous_and_keep_broadcasts_apart() {
        let p = Plan::new(&[2, 3, 4], [&[12, 4, 1], &[12, 4, 1], &[0, 0, 0]]);
        assert_eq!(p.dims[..], [(24, [1, 1, 0])]);
        // m + m[0]: b repeats along the first dimension.
        let p = Plan::new(&[5, 7], [&[7, 1], &[7, 1], &[0, 1]]);
        assert_eq!(p.dims.iter().map(|d| d.0).collect::<Vec<_>>(), vec![5, 7]);
        let p = Plan::new(&[], [&[], &[], &[]]);
        assert_eq!(p.dims[..], [(1, [0; 3])]);
    }

    #[test]
    fn walks_past_eight_dimensions() {
        // Ten dimensions of 2 that never merge: b steps 1 along each.
        let shape = [2; 10];
        let out: Vec<isize> = (0..10).map(|d| 1 << (9 - d)).collect();
        let b = [1; 10];
        let p = Plan::new(&shape, [&out, &out, &b]);
        assert_eq!(p.dims.len(), 10);
        let mut seen = vec![];
        p.walk(3, 1024, |off, len| seen.push((off[0], off[2], len)));
        assert_eq!(seen.len(), 1021 / 2 + 1);
        assert_eq!(seen[0], (3, 2, 1));
        // b's offset counts the ones among the output's index bits.
        assert!(seen.iter().all(|&(o, b, _)| o.count_ones() as isize == b));
    }

    /// A transposed input goes in strips of columns, bands of rows at a
    /// time, and the strips and the cut rows at either end cover each
    /// element of any range once; the transposed input is found.
    #[test]
    fn strips_cover_each_element_once() {
        let (rows, cols) = (7, 2 * super::STRIP + 5);
        // out row-major, a transposed (column stride rows), b row-major.
        let p = Plan::new(
            &[rows, cols],
            [
                &[cols as isize, 1],
                &[1, rows as isize],
                &[cols as isize, 1],
            ],
        );
        assert_eq!(p.transposed(), Some((1, rows as isize)));
        assert_eq!(p.row_step(), [cols as isize, 1, cols as isize]);
        for band in [1, 3] {
            let strips = super::Strips {
                rows: band,
                cols: super::STRIP,
            };
            for (start, end) in [
                (0, rows * cols),
                (3, rows * cols - 2),
                (cols + 1, 3 * cols),
                (5, 9),
            ] {
                let mut seen = vec![0u8; rows * cols];
                let mut calls = 0;
                p.walk_strips(start, end, strips, |off, n, len| {
                    calls += 1;
                    assert!(n >= 1 && n <= band);
                    for i in 0..n as isize {
                        let [o, a, b] = [0, 1, 2].map(|k| off[k] + i * p.row_step()[k]);
                        for j in 0..len as isize {
                            let (r, c) = ((o + j) as usize / cols, (o + j) as usize % cols);
                            assert_eq!(
                                (a + j * rows as isize, b + j),
                                ((c * rows + r) as isize, o + j)
                            );
                            seen[(o + j) as usize] += 1;
                        }
                    }
                });
                let want: Vec<u8> = (0..rows * cols)
                    .map(|i| u8::from((start..end).contains(&i)))
                    .collect();
                assert_eq!(seen, want, "{start}..{end} by {band}");
                if start == 0 && end == rows * cols {
                    let per_strip = rows.div_ceil(band);
                    assert_eq!(calls, per_strip * 3, "strips, not whole rows");
                }
            }
        }
        // Two transposed inputs, or none: nothing to stage.
        let both = Plan::new(
            &[rows, cols],
            [
                &[cols as isize, 1],
                &[1, rows as isize],
                &[1, rows as isize],
            ],
        );
        assert_eq!(both.transposed(), None);
        let none = Plan::new(
            &[rows, cols],
            [&[cols as isize, 1], &[cols as isize, 1], &[0, 1]],
        );
        assert_eq!(none.transposed(), None);
    }

    #[test]
    fn walks_cover_each_element_once_from_any_start() {
        let p = Plan::new(&[3, 5], [&[10, 2], &[5, 1], &[0, 1]]);
        let mut seen = vec![];
        p.walk(4, 13, |off, len| seen.push((off, len)));
        assert_eq!(
            seen,
            vec![([8, 4, 4], 1), ([10, 5, 0], 5), ([20, 10, 0], 3)]
        );
    }
}
