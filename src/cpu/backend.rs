//! The CPU's implementation of [`Backend`]: the typed loops of this folder,
//! plus the staging they need for layouts ndarray cannot write in place.

use super::copy::{copy_into, materialize};
use super::elementwise::{binary_inplace, binary_into, compare_into, fill, unary_into};
use super::random::fill_uniform;
use super::reduce::reduce_into;
use crate::backend::{Backend, BinaryOp, CompareOp, ReduceOp, Rhs, UnaryOp};
use crate::storage::Storage;
use crate::{DType, Device, Result, Scalar, Tensor};

/// Host memory, computed on by this process's threads.
pub(crate) struct Cpu;

/// A fresh host tensor shaped like `like`, of `dtype`.
fn scratch(like: &Tensor, dtype: DType) -> Result<Tensor> {
    Tensor::empty(like.shape(), dtype, Device::CPU)
}

/// `out` and `lhs` are one tensor (an in-place op).
fn same_view(a: &Tensor, b: &Tensor) -> bool {
    a.data_ptr() == b.data_ptr() && a.layout() == b.layout()
}

/// The right-hand side as a tensor the typed loops can read (a number
/// becomes a zero-dim tensor of `dtype`), and whether it goes on the left.
fn operand(rhs: Rhs, dtype: DType) -> Result<(Tensor, bool)> {
    Ok(match rhs {
        Rhs::Tensor(t) => (materialize(t)?, false),
        Rhs::Scalar { value, left } => {
            let t = Tensor::empty(&[], dtype, Device::CPU)?;
            fill(&t, value);
            (t, left)
        }
    })
}

impl Backend for Cpu {
    fn allocate(&self, _device: Device, bytes: usize, zeroed: bool) -> Result<Storage> {
        Storage::new_host(bytes, zeroed)
    }

    fn copy(&self, dst: &Tensor, src: &Tensor) -> Result<()> {
        copy_into(dst, src)
    }

    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()> {
        if !fill(dst, value) {
            let staged = scratch(dst, dst.dtype())?;
            fill(&staged, value);
            copy_into(dst, &staged)?;
        }
        Ok(())
    }

    fn binary(&self, out: &Tensor, lhs: &Tensor, rhs: Rhs, op: BinaryOp) -> Result<()> {
        let dtype = out.dtype();
        let compute = dtype.compute_dtype();
        if compute != dtype && matches!(rhs, Rhs::Scalar { .. }) {
            // The number meets the tensor in float32, unrounded (see `Rhs`).
            let wide = scratch(out, compute)?;
            self.binary(&wide, &lhs.to_dtype(compute)?, rhs, op)?;
            return copy_into(out, &wide);
        }
        let (rhs, left) = operand(rhs, dtype)?;
        let in_place = same_view(out, lhs);
        if in_place && !left && binary_inplace(out, &rhs, op) {
            return Ok(());
        }
        let lhs = materialize(lhs)?;
        let (a, b) = if left { (&rhs, &lhs) } else { (&lhs, &rhs) };
        if in_place {
            // out's layout needs staging (or the number is on the left).
            let staged = scratch(out, dtype)?;
            binary_into(&staged, a, b, op);
            return copy_into(out, &staged);
        }
        binary_into(out, a, b, op);
        Ok(())
    }

    fn compare(&self, out: &Tensor, lhs: &Tensor, rhs: Rhs, op: CompareOp) -> Result<()> {
        let (rhs, left) = operand(rhs, lhs.dtype())?;
        let lhs = materialize(lhs)?;
        let (a, b) = if left { (&rhs, &lhs) } else { (&lhs, &rhs) };
        compare_into(out, a, b, op);
        Ok(())
    }

    fn unary(&self, out: &Tensor, src: &Tensor, op: UnaryOp) -> Result<()> {
        unary_into(out, &materialize(src)?, op);
        Ok(())
    }

    fn reduce(
        &self,
        src: &Tensor,
        dims: &[usize],
        op: ReduceOp,
        out: &Tensor,
        indices: Option<&Tensor>,
    ) -> Result<()> {
        reduce_into(src, dims, op, out, indices)
    }

    fn random(&self, dst: &Tensor) -> Result<()> {
        fill_uniform(dst)
    }

    fn transfer(&self, src: &Tensor, _target: Device) -> Result<Tensor> {
        // Host to host: the only transfer the CPU backend is asked for.
        src.clone_data()
    }
}
