//! Shape-only operations (PyTorch's view ops): they return views sharing
//! memory, never copy (except `reshape`, which copies only when no view can
//! express the new shape, exactly as PyTorch does).

use crate::layout::{Layout, checked_numel};
use crate::{Result, Tensor, bail};

/// A possibly negative dimension index, checked against `ndim` (a zero-dim
/// tensor accepts 0 and -1, as in PyTorch).
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    let d = if dim < 0 { dim + n } else { dim };
    if d < 0 || d >= n {
        return Err(crate::err!(
            IndexOutOfRange,
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -n,
            n - 1
        ));
    }
    Ok(d as usize)
}

/// Resolves one `-1` in a requested shape against `numel` elements.
fn infer_shape(sizes: &[i64], numel: usize) -> Result<Vec<usize>> {
    let invalid = || {
        crate::err!(
            InvalidOperation,
            "shape '{sizes:?}' is invalid for input of size {numel}"
        )
    };
    let mut infer = None;
    let mut known: usize = 1;
    for (i, &s) in sizes.iter().enumerate() {
        match s {
            -1 if infer.is_none() => infer = Some(i),
            -1 => bail!(InvalidOperation, "only one dimension can be inferred"),
            s if s < 0 => bail!(InvalidOperation, "invalid shape dimension {s}"),
            s => known = known.saturating_mul(s as usize),
        }
    }
    // PyTorch checks the requested sizes' product before anything else, so
    // an overflow is its numel error even when the sizes hold a zero.
    let listed: Vec<usize> = sizes
        .iter()
        .filter(|&&s| s >= 0)
        .map(|&s| s as usize)
        .collect();
    checked_numel(&listed)?;
    let mut shape: Vec<usize> = sizes.iter().map(|&s| s.max(0) as usize).collect();
    match infer {
        Some(i) => {
            if known == 0 || !numel.is_multiple_of(known) {
                return Err(invalid());
            }
            shape[i] = numel / known;
        }
        None if known != numel => return Err(invalid()),
        None => {}
    }
    Ok(shape)
}

/// PyTorch's `computeStride`: strides (in bytes) that let `new_shape` view a
/// tensor of `old_shape`/`old_strides`, if any exist.
fn view_strides(
    old_shape: &[usize],
    old_strides: &[isize],
    new_shape: &[usize],
    itemsize: usize,
) -> Option<Vec<isize>> {
    if old_shape.is_empty() {
        return Some(vec![itemsize as isize; new_shape.len()]);
    }
    let numel: usize = old_shape.iter().product();
    if numel == 0 {
        return Some(crate::layout::contiguous_strides(new_shape, itemsize));
    }
    let mut new_strides = crate::layout::zeros(new_shape.len());
    let mut view_d = new_shape.len() as isize - 1;
    let mut chunk_base = *old_strides.last().expect("ndim > 0");
    let (mut tensor_numel, mut view_numel) = (1usize, 1usize);
    for tensor_d in (0..old_shape.len()).rev() {
        tensor_numel *= old_shape[tensor_d];
        let chunk_ends = tensor_d == 0
            || (old_shape[tensor_d - 1] != 1
                && old_strides[tensor_d - 1] != tensor_numel as isize * chunk_base);
        if chunk_ends {
            while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1) {
                new_strides[view_d as usize] = view_numel as isize * chunk_base;
                view_numel *= new_shape[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base = old_strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    (view_d == -1).then_some(new_strides)
}

impl Tensor {
    fn restrided(&self, shape: Vec<usize>, strides: Vec<isize>) -> Tensor {
        self.with_layout(Layout {
            shape,
            strides,
            offset: self.layout().offset,
        })
    }

    /// `permute(dims)`: the same memory with its dimensions reordered.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![0u8; 24], &[2, 3, 4])?;
    /// assert_eq!(t.permute(&[2, 0, 1])?.shape(), &[4, 2, 3]);
    /// assert!(t.permute(&[0, 0, 1]).is_err());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        let n = self.ndim();
        if dims.len() != n {
            bail!(
                InvalidOperation,
                "permute(sparse_coo): number of dimensions in the tensor input does not match the \
                 length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to \
                 len(dims) = {}",
                dims.len()
            );
        }
        let mut seen = vec![false; n];
        let mut order = Vec::with_capacity(n);
        for &d in dims {
            let d = wrap_dim(d, n)?;
            if std::mem::replace(&mut seen[d], true) {
                bail!(
                    InvalidOperation,
                    "permute(): duplicate dims are not allowed."
                );
            }
            order.push(d);
        }
        let l = self.layout();
        Ok(self.restrided(
            order.iter().map(|&d| l.shape[d]).collect(),
            order.iter().map(|&d| l.strides[d]).collect(),
        ))
    }

    /// `transpose(dim0, dim1)`.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![0u8; 6], &[1, 2, 3])?;
    /// assert_eq!(t.transpose(0, -1)?.shape(), &[3, 2, 1]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn transpose(&self, dim0: i64, dim1: i64) -> Result<Tensor> {
        let n = self.ndim();
        let (a, b) = (wrap_dim(dim0, n)?, wrap_dim(dim1, n)?);
        if n == 0 {
            return Ok(self.clone());
        }
        let mut l = self.layout().clone();
        l.shape.swap(a, b);
        l.strides.swap(a, b);
        Ok(self.with_layout(l))
    }

    /// `t()`: transposes a 2-D tensor; 0-D and 1-D tensors come back as they are.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3])?;
    /// assert_eq!(t.t()?.to_vec::<i32>()?, vec![1, 4, 2, 5, 3, 6]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn t(&self) -> Result<Tensor> {
        match self.ndim() {
            0 | 1 => Ok(self.clone()),
            2 => self.transpose(0, 1),
            n => bail!(
                InvalidOperation,
                "t() expects a tensor with <= 2 dimensions, but self is {n}D"
            ),
        }
    }

    /// `T`: every dimension reversed.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![0u8; 6], &[1, 2, 3])?;
    /// assert_eq!(t.reversed_dims().shape(), &[3, 2, 1]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn reversed_dims(&self) -> Tensor {
        let l = self.layout();
        self.restrided(
            l.shape.iter().rev().copied().collect(),
            l.strides.iter().rev().copied().collect(),
        )
    }

    /// `unsqueeze(dim)`: a new size-1 dimension at `dim`.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![0u8; 6], &[2, 3])?;
    /// assert_eq!(t.unsqueeze(-1)?.shape(), &[2, 3, 1]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let n = self.ndim();
        let d = wrap_dim(dim, n + 1)?;
        let l = self.layout();
        let stride = if d < n {
            l.strides[d] * l.shape[d] as isize
        } else {
            self.dtype().size() as isize
        };
        let mut shape = l.shape.clone();
        let mut strides = l.strides.clone();
        shape.insert(d, 1);
        strides.insert(d, stride);
        Ok(self.restrided(shape, strides))
    }

    /// `expand(*sizes)`: size-1 dimensions repeated without copying; -1
    /// keeps a size; new leading dimensions may be added.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1u8, 2], &[2, 1])?;
    /// assert_eq!(t.expand(&[2, 3])?.to_vec::<u8>()?, vec![1, 1, 1, 2, 2, 2]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn expand(&self, sizes: &[i64]) -> Result<Tensor> {
        let n = self.ndim();
        if sizes.len() < n {
            bail!(
                InvalidOperation,
                "expand(torch.FloatTensor{{{:?}}}, size=[{}]): the number of sizes provided ({}) must be \
                 greater or equal to the number of dimensions in the tensor ({n})",
                self.shape(),
                sizes.len(),
                sizes.len()
            );
        }
        let lead = sizes.len() - n;
        let mut target = Vec::with_capacity(sizes.len());
        for (i, &s) in sizes.iter().enumerate() {
            target.push(match s {
                -1 if i >= lead => self.shape()[i - lead],
                s if s < 0 => bail!(
                    InvalidOperation,
                    "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing \
                     dimension {i}"
                ),
                s => s as usize,
            });
        }
        self.broadcast_to(&target)
    }

    /// `view(*shape)`: the same memory under a new shape, when strides allow.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![0u8; 6], &[2, 3])?;
    /// assert_eq!(t.view(&[3, -1])?.shape(), &[3, 2]);
    /// assert!(t.t()?.view(&[6]).is_err()); // not expressible without a copy
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn view(&self, sizes: &[i64]) -> Result<Tensor> {
        let shape = infer_shape(sizes, self.numel())?;
        let l = self.layout();
        let strides =
            view_strides(&l.shape, &l.strides, &shape, self.dtype().size()).ok_or_else(|| {
                crate::err!(
                    InvalidOperation,
                    "view size is not compatible with input tensor's size and stride (at least one \
                     dimension spans across two contiguous subspaces). Use .reshape(...) instead."
                )
            })?;
        Ok(self.restrided(shape, strides))
    }

    /// `reshape(*shape)`: a view when one exists, else a contiguous copy.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![1u8, 2, 3, 4, 5, 6], &[2, 3])?;
    /// assert_eq!(t.reshape(&[3, 2])?.data_ptr(), t.data_ptr()); // a view
    /// assert_eq!(t.t()?.reshape(&[6])?.to_vec::<u8>()?, vec![1, 4, 2, 5, 3, 6]); // a copy
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn reshape(&self, sizes: &[i64]) -> Result<Tensor> {
        match self.view(sizes) {
            Ok(v) => Ok(v),
            Err(_) => {
                let shape = infer_shape(sizes, self.numel())?;
                checked_numel(&shape)?;
                self.clone_data()?.view(sizes)
            }
        }
    }

    /// `flatten(start_dim=0, end_dim=-1)`.
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![0u8; 24], &[2, 3, 4])?;
    /// assert_eq!(t.flatten(1, -1)?.shape(), &[2, 12]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn flatten(&self, start: i64, end: i64) -> Result<Tensor> {
        let n = self.ndim();
        if n == 0 {
            return self.reshape(&[1]);
        }
        let (s, e) = (wrap_dim(start, n)?, wrap_dim(end, n)?);
        if s > e {
            bail!(
                InvalidOperation,
                "flatten() has invalid args: start_dim cannot come after end_dim"
            );
        }
        let shape = self.shape();
        let mut sizes: Vec<i64> = shape[..s].iter().map(|&x| x as i64).collect();
        sizes.push(shape[s..=e].iter().product::<usize>() as i64);
        sizes.extend(shape[e + 1..].iter().map(|&x| x as i64));
        self.reshape(&sizes)
    }

    /// `squeeze()`: every size-1 dimension dropped; `squeeze(dims)`: those
    /// of `dims` that have size 1 (others stay, as in PyTorch 2.x).
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![0u8; 3], &[1, 3, 1])?;
    /// assert_eq!(t.squeeze(None)?.shape(), &[3]);
    /// assert_eq!(t.squeeze(Some(&[0, 1]))?.shape(), &[3, 1]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn squeeze(&self, dims: Option<&[i64]>) -> Result<Tensor> {
        let l = self.layout();
        let n = self.ndim();
        let mut drop = vec![false; n];
        match dims {
            None => (0..n).for_each(|d| drop[d] = l.shape[d] == 1),
            Some(ds) => {
                let mut seen = vec![false; n.max(1)];
                for &d in ds {
                    let w = wrap_dim(d, n)?;
                    if std::mem::replace(&mut seen[w], true) {
                        bail!(
                            InvalidOperation,
                            "dim {w} appears multiple times in the list of dims"
                        );
                    }
                    if w < n {
                        drop[w] = l.shape[w] == 1;
                    }
                }
            }
        }
        let keep = (0..n).filter(|&d| !drop[d]);
        Ok(self.restrided(
            keep.clone().map(|d| l.shape[d]).collect(),
            keep.map(|d| l.strides[d]).collect(),
        ))
    }

    /// `mT`: the last two dimensions swapped (a batch of matrices transposed).
    ///
    /// ```
    /// use dlbridge::Tensor;
    /// let t = Tensor::from_vec(vec![0u8; 24], &[2, 3, 4])?;
    /// assert_eq!(t.matrix_transpose("mT")?.shape(), &[2, 4, 3]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn matrix_transpose(&self, name: &str) -> Result<Tensor> {
        if self.ndim() < 2 {
            bail!(
                InvalidOperation,
                "tensor.{name} is only supported on matrices or batches of matrices. Got {}-D tensor.",
                self.ndim()
            );
        }
        self.transpose(-2, -1)
    }
}

#[cfg(test)]
mod tests {
    use crate::{DType, Device, Scalar, Tensor};

    fn arange(n: usize) -> Tensor {
        let v: Vec<Scalar> = (0..n).map(|i| Scalar::Int(i as i128)).collect();
        Tensor::from_scalars(&[n], &v, DType::I64).unwrap()
    }

    fn ints(t: &Tensor) -> Vec<i128> {
        t.to_scalars()
            .unwrap()
            .into_iter()
            .map(|s| match s {
                Scalar::Int(i) => i,
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn view_and_reshape_follow_torch() {
        let t = arange(12).view(&[3, 4]).unwrap();
        assert_eq!(t.strides().unwrap(), vec![4, 1]);
        let tt = t.t().unwrap();
        assert_eq!(tt.shape(), &[4, 3]);
        assert!(
            tt.view(&[12]).is_err(),
            "a transpose cannot be flattened in place"
        );
        let flat = tt.reshape(&[-1]).unwrap();
        assert_eq!(ints(&flat), vec![0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
        // Splitting a transposed dimension is still a view.
        let split = tt.view(&[2, 2, 3]).unwrap();
        assert_eq!(split.strides().unwrap(), vec![2, 1, 4]);
        assert!(arange(5).view(&[2, -1]).is_err());
        assert!(arange(6).view(&[-1, -1]).is_err());
    }

    #[test]
    fn permute_unsqueeze_expand() {
        let t = Tensor::zeros(&[2, 3, 4], DType::F32, Device::CPU).unwrap();
        let p = t.permute(&[2, 0, 1]).unwrap();
        assert_eq!(p.shape(), &[4, 2, 3]);
        assert_eq!(p.strides().unwrap(), vec![1, 12, 4]);
        assert!(t.permute(&[0, 0, 1]).is_err());
        assert_eq!(t.unsqueeze(-1).unwrap().shape(), &[2, 3, 4, 1]);
        assert_eq!(
            t.unsqueeze(1).unwrap().strides().unwrap(),
            vec![12, 12, 4, 1]
        );
        let col = arange(3).unsqueeze(1).unwrap();
        let e = col.expand(&[2, -1, 5]).unwrap();
        assert_eq!(e.shape(), &[2, 3, 5]);
        assert_eq!(e.strides().unwrap(), vec![0, 1, 0]);
        assert_eq!(t.reversed_dims().shape(), &[4, 3, 2]);
        assert_eq!(t.flatten(1, -1).unwrap().shape(), &[2, 12]);
    }
}
