//! Advanced indexing with PyTorch's rules: integer index tensors and boolean
//! masks, to read (`t[idx]`, a copy) and to write (`t[idx] = v`).
//!
//! The caller has applied the basic part of the key (integers, slices,
//! `None`, `...`) as a view and hands over that view and, for each advanced
//! index, the view's dimension it starts at. A mask of `k` dimensions stands
//! for the `k` integer indices of its true elements (`nonzero`). The indices
//! broadcast together to `B`; when their dimensions are adjacent the result
//! has `B` in their place, else `B` comes first (NumPy's and PyTorch's rule).
//!
//! The element moves are byte copies by offset on the host: device-blind,
//! exact for every dtype and for misaligned memory. A CUDA tensor makes the
//! round trip through host memory (copy there, gather or scatter, copy
//! back): correct but not fast; a device kernel would take its place.

use crate::layout::broadcast_shapes;
use crate::{Category, DType, Device, Result, Tensor, bail, err};

/// One advanced index: an integer (any width) or a bool tensor, and the
/// dimension of the view it starts at.
pub struct AdvancedIndex {
    /// The dimension of the view the index applies to.
    pub dim: usize,
    /// An integer tensor (positions) or a bool tensor (a mask).
    pub index: Tensor,
}

/// Integer indices on the host, one per view dimension they select.
struct Indices {
    /// The view dimension each index selects.
    dims: Vec<usize>,
    /// Each index's shape and values.
    values: Vec<(Vec<usize>, Vec<i64>)>,
}

/// `view[indices]`: a fresh contiguous tensor on the view's device.
///
/// ```
/// use dlbridge::{Tensor, ops::{AdvancedIndex, index_gather}};
/// let t = Tensor::from_vec(vec![10i32, 20, 30], &[3])?;
/// let index = Tensor::from_vec(vec![2i64, 0, 2], &[3])?;
/// let picked = index_gather(&t, &[AdvancedIndex { dim: 0, index }])?;
/// assert_eq!(picked.to_vec::<i32>()?, vec![30, 10, 30]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn index_gather(view: &Tensor, indices: &[AdvancedIndex]) -> Result<Tensor> {
    let host = view.to_device(Device::CPU)?;
    let plan = Plan::new(&host, indices)?;
    let out = Tensor::empty(&plan.out_shape, view.dtype(), Device::CPU)?;
    let size = view.dtype().size();
    let (src, dst) = (host.data_ptr(), out.data_ptr());
    let mut i = 0;
    plan.for_each_offset(|off| {
        // SAFETY: `off` is the byte offset of an element of `host`'s layout
        // (every index was bounds-checked by `Plan::new`), and `out` is a
        // fresh contiguous buffer of `out_shape`'s elements, written in order.
        unsafe {
            std::ptr::copy_nonoverlapping(src.offset(off), dst.add(i * size), size);
        }
        i += 1;
    });
    out.to_device(view.device())
}

/// `view[indices] = value`: `value` (same dtype, or a 0-d tensor of a number)
/// broadcast to the indexed shape. Repeated indices: the last write wins.
///
/// ```
/// use dlbridge::{Tensor, ops::{AdvancedIndex, index_put}};
/// let t = Tensor::from_vec(vec![10i32, 20, 30], &[3])?;
/// let mask = Tensor::from_vec(vec![true, false, true], &[3])?;
/// index_put(&t, &[AdvancedIndex { dim: 0, index: mask }], &Tensor::from_vec(vec![0i32], &[])?)?;
/// assert_eq!(t.to_vec::<i32>()?, vec![0, 20, 0]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn index_put(view: &Tensor, indices: &[AdvancedIndex], value: &Tensor) -> Result<()> {
    view.ensure_writable()?;
    let host = view.to_device(Device::CPU)?;
    let plan = Plan::new(&host, indices)?;
    if value.dtype() != view.dtype() {
        bail!(
            InvalidOperation,
            "Index put requires the source and destination dtypes match, got {} for the destination \
             and {} for the source.",
            view.dtype().scalar_type_name(),
            value.dtype().scalar_type_name()
        );
    }
    let src = value
        .to_device(Device::CPU)?
        .broadcast_to(&plan.out_shape)
        .map_err(|_| {
            err!(
                InvalidOperation,
                "shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result \
                 of shape {:?}",
                value.shape(),
                plan.out_shape
            )
        })?
        // Always a fresh buffer: the value may view the memory written.
        .clone_data()?;
    let size = view.dtype().size();
    let (from, to) = (src.data_ptr(), host.data_ptr());
    let mut i = 0;
    plan.for_each_offset(|off| {
        // SAFETY: `src` is a fresh contiguous buffer of `out_shape`'s
        // elements, read in order; `off` is a bounds-checked element of the
        // writable `host` layout, and the two buffers are distinct.
        unsafe {
            std::ptr::copy_nonoverlapping(from.add(i * size), to.offset(off), size);
        }
        i += 1;
    });
    // Back to the view's device; on the host `host` is `view` itself, and
    // `copy_` skips a tensor copied onto itself.
    view.copy_(&host)
}

/// The integer positions of a mask's true elements, one list per dimension.
fn nonzero(mask: &Tensor) -> Result<Vec<Vec<i64>>> {
    let m = mask
        .to_device(Device::CPU)?
        .to_dtype(DType::Bool)?
        .contiguous()?;
    let shape = m.shape().to_vec();
    let mut out = vec![Vec::new(); shape.len()];
    let base = m.data_ptr();
    let mut pos = vec![0usize; shape.len()];
    for flat in 0..m.numel() {
        // SAFETY: `m` is contiguous bool (one byte each) with `numel` elements.
        if unsafe { *base.add(flat) } != 0 {
            for (d, &p) in pos.iter().enumerate() {
                out[d].push(p as i64);
            }
        }
        // Odometer over the mask's shape, last dimension fastest.
        for d in (0..shape.len()).rev() {
            pos[d] += 1;
            if pos[d] < shape[d] {
                break;
            }
            pos[d] = 0;
        }
    }
    Ok(out)
}

/// An index tensor's values as int64 on the host.
fn int_values(index: &Tensor) -> Result<Vec<i64>> {
    let t = index
        .to_device(Device::CPU)?
        .to_dtype(DType::I64)?
        .contiguous()?;
    let base = t.data_ptr() as *const i64;
    // SAFETY: `t` is a contiguous int64 tensor of `numel` elements (its
    // buffer may be misaligned, hence the unaligned reads).
    Ok((0..t.numel())
        .map(|i| unsafe { base.add(i).read_unaligned() })
        .collect())
}

impl Indices {
    /// Expands masks, checks dtypes and mask shapes.
    fn read(view: &Tensor, indices: &[AdvancedIndex]) -> Result<Indices> {
        let mut out = Indices {
            dims: Vec::new(),
            values: Vec::new(),
        };
        for a in indices {
            let dt = a.index.dtype();
            if dt == DType::Bool || dt == DType::U8 {
                let k = a.index.ndim();
                let span = view.shape().get(a.dim..a.dim + k);
                if let Some(bad) = (0..k).find(|&j| span.is_none_or(|s| s[j] != a.index.shape()[j]))
                {
                    bail!(
                        IndexOutOfRange,
                        "The shape of the mask {:?} at index {bad} does not match the shape of the \
                         indexed tensor {:?} at index {}",
                        a.index.shape(),
                        view.shape(),
                        a.dim + bad
                    );
                }
                for (j, positions) in nonzero(&a.index)?.into_iter().enumerate() {
                    out.dims.push(a.dim + j);
                    out.values.push((vec![positions.len()], positions));
                }
            } else if dt.category() != Category::Integral {
                bail!(
                    IndexOutOfRange,
                    "tensors used as indices must be long, int, byte or bool tensors"
                );
            } else {
                out.dims.push(a.dim);
                out.values
                    .push((a.index.shape().to_vec(), int_values(&a.index)?));
            }
        }
        Ok(out)
    }
}

/// Where each element of the result lives in the (host) view, in the
/// result's row-major order: `pre` dimensions, then the broadcast index
/// shape, then `post` dimensions.
struct Plan {
    out_shape: Vec<usize>,
    /// Byte offsets of the view's elements for the leading plain dimensions.
    pre: Vec<isize>,
    /// Byte offset contributed by each position of the broadcast indices.
    base: Vec<isize>,
    /// Byte offsets for the trailing plain dimensions.
    post: Vec<isize>,
}

impl Plan {
    fn new(view: &Tensor, indices: &[AdvancedIndex]) -> Result<Plan> {
        let idx = Indices::read(view, indices)?;
        let shapes: Vec<&[usize]> = idx.values.iter().map(|(s, _)| s.as_slice()).collect();
        let mut b = Vec::new();
        for s in &shapes {
            b = broadcast_shapes(&b, s).map_err(|_| {
                let listed: Vec<String> = shapes.iter().map(|s| format!("{s:?}")).collect();
                err!(
                    IndexOutOfRange,
                    "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                    listed.join(", ")
                )
            })?;
        }
        let layout = view.layout();
        let bn: usize = b.iter().product();
        let mut base = vec![0isize; bn];
        for (k, ((shape, values), &d)) in idx.values.iter().zip(&idx.dims).enumerate() {
            let (size, stride) = (layout.shape[d] as i64, layout.strides[d]);
            // Broadcast `shape` (right-aligned) against `b`: element strides of
            // the index, 0 where it broadcasts.
            let lead = b.len() - shape.len();
            let mut st = vec![0usize; b.len()];
            let mut acc = 1;
            for j in (0..shape.len()).rev() {
                st[lead + j] = if shape[j] == 1 { 0 } else { acc };
                acc *= shape[j];
            }
            for (flat, slot) in base.iter_mut().enumerate() {
                let mut rem = flat;
                let mut at = 0;
                for j in (0..b.len()).rev() {
                    at += (rem % b[j]) * st[j];
                    rem /= b[j];
                }
                let v = values[at];
                if v < -size || v >= size {
                    bail!(
                        IndexOutOfRange,
                        "index {v} is out of bounds for dimension {k} with size {size}"
                    );
                }
                let v = if v < 0 { v + size } else { v };
                *slot += v as isize * stride;
            }
        }
        // Adjacent index dimensions keep their place; separated ones go first.
        let mut dims = idx.dims.clone();
        dims.sort_unstable();
        dims.dedup();
        let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
        let plain: Vec<usize> = (0..view.ndim()).filter(|d| !dims.contains(d)).collect();
        let split = if adjacent {
            dims.first().copied().unwrap_or(0)
        } else {
            0
        };
        let (pre_dims, post_dims): (Vec<usize>, Vec<usize>) =
            plain.iter().partition(|&&d| d < split);
        let offsets = |ds: &[usize]| -> Vec<isize> {
            let mut offs = vec![0isize];
            for &d in ds {
                let (n, s) = (layout.shape[d], layout.strides[d]);
                offs = offs
                    .iter()
                    .flat_map(|&o| (0..n).map(move |i| o + i as isize * s))
                    .collect();
            }
            offs
        };
        let mut out_shape: Vec<usize> = pre_dims.iter().map(|&d| layout.shape[d]).collect();
        out_shape.extend(&b);
        out_shape.extend(post_dims.iter().map(|&d| layout.shape[d]));
        crate::layout::checked_numel(&out_shape)?;
        Ok(Plan {
            out_shape,
            pre: offsets(&pre_dims),
            base,
            post: offsets(&post_dims),
        })
    }

    /// Calls `f` with each result element's byte offset from the view's
    /// element `[0, 0, ...]`, in the result's row-major order.
    fn for_each_offset(&self, mut f: impl FnMut(isize)) {
        if self.out_shape.contains(&0) {
            return;
        }
        for &p in &self.pre {
            for &b in &self.base {
                for &q in &self.post {
                    f(p + b + q);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scalar;

    fn ints(shape: &[usize], v: &[i64], dt: DType) -> Tensor {
        let s: Vec<Scalar> = v.iter().map(|&x| Scalar::Int(x as i128)).collect();
        Tensor::from_scalars(shape, &s, dt).unwrap()
    }

    fn values(t: &Tensor) -> Vec<Scalar> {
        t.to_scalars().unwrap()
    }

    #[test]
    fn gather_scatter_and_errors() {
        let t = ints(&[2, 3], &[0, 1, 2, 3, 4, 5], DType::I64);
        // t[:, [2, 0]]: the index dimension keeps its place.
        let idx = AdvancedIndex {
            dim: 1,
            index: ints(&[2], &[2, -3], DType::I32),
        };
        let g = index_gather(&t, &[idx]).unwrap();
        assert_eq!(g.shape(), &[2, 2]);
        let expect: Vec<Scalar> = [2, 0, 5, 3].iter().map(|&x| Scalar::Int(x)).collect();
        assert_eq!(values(&g), expect);
        // t[t > 2] = -1 through a mask.
        let mask = ints(&[2, 3], &[0, 0, 0, 1, 1, 1], DType::Bool);
        let m = || AdvancedIndex {
            dim: 0,
            index: mask.clone(),
        };
        assert_eq!(index_gather(&t, &[m()]).unwrap().shape(), &[3]);
        index_put(&t, &[m()], &ints(&[], &[-1], DType::I64)).unwrap();
        let expect: Vec<Scalar> = [0, 1, 2, -1, -1, -1]
            .iter()
            .map(|&x| Scalar::Int(x))
            .collect();
        assert_eq!(values(&t), expect);
        let bad = AdvancedIndex {
            dim: 0,
            index: ints(&[1], &[2], DType::I64),
        };
        let e = index_gather(&t, &[bad]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "index 2 is out of bounds for dimension 0 with size 2"
        );
    }
}
