//! Shape, strides and offset: how a tensor's elements sit in its storage.
//!
//! Strides and the offset are in **bytes**, so every layout NumPy allows
//! (negative strides, strides that are not a multiple of the item size)
//! imports without a copy. DLPack wants element strides; the exporter converts
//! and refuses what cannot be expressed.

use crate::{Result, bail};

/// A strided view of a storage buffer.
///
/// Invariant: the element count fits in `MAX_NUMEL` (`isize::MAX`). Layouts with new
/// sizes are checked where they are made (`broadcast_to`, `Tensor::alloc`,
/// `Tensor::from_parts`, `ForeignTensor::check`, `view`'s shape inference);
/// every other layout is a view that never has more elements than the
/// layout it came from (indexing, permutes, unsqueeze), so `numel` cannot
/// overflow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The size of each dimension.
    pub shape: Vec<usize>,
    /// Byte distance between neighbours along each dimension.
    pub strides: Vec<isize>,
    /// Byte offset of element `[0, 0, ...]` from the start of the storage.
    pub offset: usize,
}

/// Which part of a dimension an index selects.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// One position: the dimension disappears.
    Index(isize),
    /// `start..stop` by a positive `step` (Python slice semantics).
    Range {
        /// The first position (negative counts from the end); `None`: the start.
        start: Option<isize>,
        /// The position past the last (negative counts from the end); `None`: the end.
        stop: Option<isize>,
        /// The distance between positions (positive).
        step: isize,
    },
    /// A new dimension of size 1 (`None` or `True` in Python).
    NewAxis,
    /// A new dimension of size 0 (`False` in Python).
    EmptyAxis,
}

/// `n` zeros from the allocator's fast path: `vec![0; n]` asks for zeroed
/// memory (calloc), which glibc serves without its per-thread cache, and
/// the small vectors of shapes and strides paid more for that than for
/// the rest of a view.
pub(crate) fn zeros<T: Copy + Default>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    v.resize(n, T::default());
    v
}

/// Row-major byte strides for `shape`.
pub fn contiguous_strides(shape: &[usize], itemsize: usize) -> Vec<isize> {
    let mut strides = zeros(shape.len());
    let mut acc = itemsize as isize;
    for (s, &n) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        // Saturating: only a shape too large to allocate passes isize.
        acc = acc.saturating_mul(n.max(1) as isize);
    }
    strides
}

/// The most elements a tensor may have: PyTorch counts them in an int64,
/// and byte extents are `isize`.
pub const MAX_NUMEL: usize = isize::MAX as usize;

/// Number of elements, refusing shapes whose product passes [`MAX_NUMEL`]
/// with PyTorch's error (`RuntimeError: numel: integer multiplication
/// overflow`). Like PyTorch's, an overflow is not excused by a zero after
/// it: `[2**62, 2**62, 0]` is refused too.
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &n| {
            acc.checked_mul(n).filter(|&p| p <= MAX_NUMEL)
        })
        .ok_or_else(|| {
            crate::err!(
                TooLarge,
                "numel: integer multiplication overflow (shape {shape:?})"
            )
        })
}

impl Layout {
    /// A row-major layout of `shape` for elements of `itemsize` bytes, at offset 0.
    pub fn contiguous(shape: Vec<usize>, itemsize: usize) -> Layout {
        let strides = contiguous_strides(&shape, itemsize);
        Layout {
            shape,
            strides,
            offset: 0,
        }
    }

    /// The number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        // Cannot overflow: see the type's invariant.
        self.shape.iter().product()
    }

    /// Row-major contiguous (size-1 dimensions may have any stride, as in PyTorch).
    pub fn is_contiguous(&self, itemsize: usize) -> bool {
        let mut expected = itemsize as isize;
        for (&n, &s) in self.shape.iter().zip(&self.strides).rev() {
            if n == 0 {
                return true;
            }
            if n != 1 && s != expected {
                return false;
            }
            expected *= n as isize;
        }
        true
    }

    /// Lowest and one-past-highest byte touched, relative to element 0.
    pub fn byte_extent(&self, itemsize: usize) -> (isize, isize) {
        if self.numel() == 0 {
            return (0, 0);
        }
        let (mut lo, mut hi) = (0isize, itemsize as isize);
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            let span = (n as isize - 1) * s;
            if span < 0 { lo += span } else { hi += span }
        }
        (lo, hi)
    }

    /// Every stride is a whole number of elements (what DLPack and the typed
    /// loops need).
    pub fn element_strides(&self, itemsize: usize) -> Option<Vec<isize>> {
        self.element_strides_in(itemsize)
    }

    /// [`element_strides`](Self::element_strides) into any collection (the
    /// CPU loops collect into one on the stack).
    pub(crate) fn element_strides_in<C: FromIterator<isize>>(&self, itemsize: usize) -> Option<C> {
        let size = itemsize as isize;
        self.has_element_strides(itemsize)
            .then(|| self.strides.iter().map(|&s| s / size).collect())
    }

    /// Whether every stride of a dimension longer than 1 is a whole number
    /// of `itemsize`-byte elements ([`element_strides`](Self::element_strides)
    /// would give them), without allocating.
    pub(crate) fn has_element_strides(&self, itemsize: usize) -> bool {
        let size = itemsize as isize;
        self.strides
            .iter()
            .zip(&self.shape)
            // A size-1 dimension's stride is never stepped, so any value will do.
            .all(|(&s, &n)| n <= 1 || s % size == 0)
    }

    /// The layout broadcast to `shape` (NumPy rules): new leading dimensions
    /// and size-1 dimensions get stride 0.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout> {
        if shape.len() < self.ndim() {
            bail!(
                InvalidOperation,
                "cannot broadcast shape {:?} to {:?}",
                self.shape,
                shape
            );
        }
        let lead = shape.len() - self.ndim();
        let mut strides = zeros(shape.len());
        for (i, (&n, &s)) in self.shape.iter().zip(&self.strides).enumerate() {
            let target = shape[lead + i];
            strides[lead + i] = if n == target {
                s
            } else if n == 1 {
                0
            } else {
                bail!(
                    InvalidOperation,
                    "The expanded size of the tensor ({target}) must match the existing size ({n}) at \
                     non-singleton dimension {}.  Target sizes: {shape:?}.  Tensor sizes: {:?}",
                    lead + i,
                    self.shape
                );
            };
        }
        // Broadcasting is where sizes grow without memory: check them here,
        // once, for `expand`, `broadcast_to` and every broadcasting op.
        checked_numel(shape)?;
        Ok(Layout {
            shape: shape.to_vec(),
            strides,
            offset: self.offset,
        })
    }

    /// Applies Python-style indexing and returns the view's layout.
    pub fn select(&self, selections: &[Selection], itemsize: usize) -> Result<Layout> {
        let consumed = selections
            .iter()
            .filter(|s| !matches!(s, Selection::NewAxis | Selection::EmptyAxis))
            .count();
        if self.ndim() == 0 && consumed > 0 {
            bail!(
                IndexOutOfRange,
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in \
                 C++ to convert a 0-dim tensor to a number"
            );
        }
        if consumed > self.ndim() {
            bail!(
                IndexOutOfRange,
                "too many indices for tensor of dimension {}",
                self.ndim()
            );
        }
        // At most: the dimensions left, plus one per new axis.
        let rank = self.ndim() + (selections.len() - consumed);
        let mut out = Layout {
            shape: Vec::with_capacity(rank),
            strides: Vec::with_capacity(rank),
            offset: self.offset,
        };
        let mut dim = 0;
        for sel in selections {
            match *sel {
                Selection::NewAxis | Selection::EmptyAxis => {
                    out.shape.push(usize::from(*sel == Selection::NewAxis));
                    out.strides.push(NEW_AXIS);
                }
                Selection::Index(i) => {
                    let n = self.shape[dim] as isize;
                    let pos = if i < 0 { i + n } else { i };
                    if pos < 0 || pos >= n {
                        bail!(
                            IndexOutOfRange,
                            "index {i} is out of bounds for dimension {dim} with size {n}"
                        );
                    }
                    out.offset = offset_by(out.offset, pos * self.strides[dim]);
                    dim += 1;
                }
                Selection::Range { start, stop, step } => {
                    if step == 0 {
                        bail!(InvalidValue, "slice step cannot be zero");
                    }
                    if step < 0 {
                        bail!(InvalidValue, "step must be greater than zero");
                    }
                    let n = self.shape[dim] as isize;
                    let clamp = |v: Option<isize>, default: isize| match v {
                        None => default,
                        Some(v) if v < 0 => (v + n).max(0),
                        Some(v) => v.min(n),
                    };
                    let (lo, hi) = (clamp(start, 0), clamp(stop, n));
                    let len = if hi > lo {
                        (hi - lo + step - 1) / step
                    } else {
                        0
                    };
                    if len > 0 {
                        out.offset = offset_by(out.offset, lo * self.strides[dim]);
                    }
                    out.shape.push(len as usize);
                    out.strides.push(self.strides[dim] * step);
                    dim += 1;
                }
            }
        }
        out.shape.extend_from_slice(&self.shape[dim..]);
        out.strides.extend_from_slice(&self.strides[dim..]);
        // New axes take the stride `unsqueeze` gives them: the span of the
        // dimension to their right (one element at the end).
        for i in (0..out.ndim()).rev() {
            if out.strides[i] == NEW_AXIS {
                out.strides[i] = match out.shape.get(i + 1) {
                    Some(&n) => out.strides[i + 1] * n as isize,
                    None => itemsize as isize,
                };
            }
        }
        Ok(out)
    }
}

/// Placeholder stride for new axes until their neighbours are known.
const NEW_AXIS: isize = isize::MIN;

fn offset_by(offset: usize, delta: isize) -> usize {
    // Views never step outside their storage, so the sum stays in range.
    (offset as isize + delta) as usize
}

/// The shape two operands broadcast to, with PyTorch's message on mismatch.
///
/// ```
/// use dlbridge::broadcast_shapes;
/// assert_eq!(broadcast_shapes(&[3, 1], &[4])?, vec![3, 4]);
/// assert!(broadcast_shapes(&[3], &[4]).is_err());
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = zeros(n);
    // Right to left, so a mismatch names the dimension PyTorch names.
    for i in (0..n).rev() {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            bail!(
                InvalidOperation,
                "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton \
                 dimension {i} (shapes {a:?} and {b:?})"
            );
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::Selection::*;
    use super::*;

    #[test]
    fn contiguity_and_extent() {
        let l = Layout::contiguous(vec![2, 3], 4);
        assert_eq!(l.strides, vec![12, 4]);
        assert!(l.is_contiguous(4));
        assert_eq!(l.byte_extent(4), (0, 24));
        let t = Layout {
            shape: vec![3, 2],
            strides: vec![4, 12],
            offset: 0,
        };
        assert!(!t.is_contiguous(4));
        let rev = Layout {
            shape: vec![3],
            strides: vec![-8],
            offset: 16,
        };
        assert_eq!(rev.byte_extent(8), (-16, 8));
    }

    #[test]
    fn slicing_matches_python() {
        let l = Layout::contiguous(vec![4, 5], 8);
        let v = l
            .select(
                &[
                    Index(-1),
                    Range {
                        start: Some(1),
                        stop: None,
                        step: 2,
                    },
                ],
                8,
            )
            .unwrap();
        assert_eq!(v.shape, vec![2]);
        assert_eq!(v.strides, vec![16]);
        assert_eq!(v.offset, 3 * 40 + 8);
        let e = l
            .select(
                &[Range {
                    start: Some(3),
                    stop: Some(1),
                    step: 1,
                }],
                8,
            )
            .unwrap();
        assert_eq!(e.shape, vec![0, 5]);
        let n = l.select(&[NewAxis, Index(0)], 8).unwrap();
        assert_eq!(n.shape, vec![1, 5]);
        assert!(
            l.select(&[Index(4)], 8).err().unwrap().kind() == crate::ErrorKind::IndexOutOfRange
        );
        assert!(
            l.select(&[Index(0), Index(0), Index(0)], 8)
                .err()
                .unwrap()
                .kind()
                == crate::ErrorKind::IndexOutOfRange
        );
        let step0 = l.select(
            &[Range {
                start: None,
                stop: None,
                step: 0,
            }],
            8,
        );
        assert!(step0.err().unwrap().kind() == crate::ErrorKind::InvalidValue);
    }

    #[test]
    fn broadcasting() {
        assert_eq!(
            broadcast_shapes(&[2, 1, 3], &[4, 1]).unwrap(),
            vec![2, 4, 3]
        );
        assert_eq!(broadcast_shapes(&[], &[3]).unwrap(), vec![3]);
        let err = broadcast_shapes(&[3], &[4]).unwrap_err();
        assert!(err.to_string().contains("[3] and [4]"));
        let l = Layout::contiguous(vec![3, 1], 4)
            .broadcast_to(&[2, 3, 5])
            .unwrap();
        assert_eq!(l.strides, vec![0, 4, 0]);
        assert!(checked_numel(&[usize::MAX, 2]).is_err());
        // PyTorch's limit is int64's, and a later zero excuses nothing.
        assert!(checked_numel(&[1 << 62, 2]).is_err());
        assert!(checked_numel(&[1 << 62, 1 << 62, 0]).is_err());
        assert_eq!(checked_numel(&[1 << 31, 1 << 31]).unwrap(), 1 << 62);
        let huge = Layout::contiguous(vec![1, 1], 4).broadcast_to(&[1 << 62, 1 << 62]);
        assert_eq!(huge.unwrap_err().kind(), crate::ErrorKind::TooLarge);
    }

    #[test]
    fn element_strides_refuse_partial_items() {
        let l = Layout {
            shape: vec![3],
            strides: vec![3],
            offset: 0,
        };
        assert_eq!(l.element_strides(4), None);
        let ok = Layout {
            shape: vec![3, 1],
            strides: vec![-8, 3],
            offset: 16,
        };
        assert_eq!(ok.element_strides(8), Some(vec![-1, 0]));
    }
}
