//! The CPU's implementation of [`Backend`]: the typed loops of this folder,
//! plus the staging they need for layouts ndarray cannot write in place.

use super::copy::{copy_into, materialize};
use super::elementwise::{Arg, binary, compare, divide_casting, fill, unary, walkable, writable};
use super::random::fill_uniform;
use super::reduce::reduce_into;
use crate::backend::{Backend, BinaryOp, CompareOp, ReduceOp, Rhs, UnaryOp};
use crate::layout::broadcast_shapes;
use crate::storage::Storage;
use crate::{DType, Device, Result, Scalar, Tensor};
use std::borrow::Cow;

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

/// `t` itself when the loops can read it (borrowed: a clone would cost two
/// allocations per operand per call), else a contiguous copy.
fn readable(t: &Tensor) -> Result<Cow<'_, Tensor>> {
    let size = t.dtype().size();
    if walkable(t, size, size) {
        Ok(Cow::Borrowed(t))
    } else {
        materialize(t).map(Cow::Owned)
    }
}

/// Runs `write(target)` into `out`, or into a fresh tensor copied to `out`
/// after when the loops cannot write `out`'s layout or `out` is an input
/// (`in_place` ops the loops do not run in place).
fn into(out: &Tensor, in_place: bool, write: impl FnOnce(&Tensor)) -> Result<()> {
    let size = out.dtype().size();
    if !in_place && writable(out, size, size) {
        write(out);
        return Ok(());
    }
    let staged = scratch(out, out.dtype())?;
    write(&staged);
    copy_into(out, &staged)
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
        let size = out.dtype().size();
        let in_place = same_view(out, lhs);
        match rhs {
            Rhs::Tensor(r) => {
                let r = readable(r)?;
                if in_place && writable(out, size, size) {
                    binary(out, Arg::Tensor(out), Arg::Tensor(&r), op, true);
                    return Ok(());
                }
                let l = readable(lhs)?;
                into(out, in_place, |o| {
                    binary(o, Arg::Tensor(&l), Arg::Tensor(&r), op, false)
                })
            }
            Rhs::Scalar { value, left } => {
                if in_place && !left && writable(out, size, size) {
                    binary(out, Arg::Tensor(out), Arg::Number(value), op, true);
                    return Ok(());
                }
                let l = readable(lhs)?;
                let (a, b) = match left {
                    false => (Arg::Tensor(&l), Arg::Number(value)),
                    true => (Arg::Number(value), Arg::Tensor(&l)),
                };
                into(out, in_place, |o| binary(o, a, b, op, false))
            }
        }
    }

    fn divide_casting(&self, lhs: &Tensor, rhs: &Tensor, dtype: DType) -> Result<Option<Tensor>> {
        if dtype != DType::F32 {
            return Ok(None); // the loop converts to float32 only
        }
        let shape = broadcast_shapes(lhs.shape(), rhs.shape())?;
        let out = Tensor::empty_for_elementwise(&shape, &[lhs, rhs], false, dtype, lhs.device())?;
        let (l, r) = (readable(lhs)?, readable(rhs)?);
        let done = divide_casting(&out, Arg::Tensor(&l), Arg::Tensor(&r), lhs.dtype());
        Ok(done.then_some(out))
    }

    fn compare(&self, out: &Tensor, lhs: &Tensor, rhs: Rhs, op: CompareOp) -> Result<()> {
        let dtype = lhs.dtype();
        let l = readable(lhs)?;
        let r;
        let (a, b) = match rhs {
            Rhs::Tensor(t) => {
                r = readable(t)?;
                (Arg::Tensor(&l), Arg::Tensor(&r))
            }
            Rhs::Scalar { value, left: false } => (Arg::Tensor(&l), Arg::Number(value)),
            Rhs::Scalar { value, left: true } => (Arg::Number(value), Arg::Tensor(&l)),
        };
        into(out, false, |o| compare(o, a, b, dtype, op))
    }

    fn unary(&self, out: &Tensor, src: &Tensor, op: UnaryOp) -> Result<()> {
        let size = out.dtype().size();
        let in_place = same_view(out, src);
        if in_place && writable(out, size, size) {
            unary(out, out, op, true);
            return Ok(());
        }
        let src = readable(src)?;
        into(out, in_place, |o| unary(o, &src, op, false))
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

    fn block_elements(&self) -> usize {
        1 << 16 // 512 KiB of float64: in L2 between the cast and the op
    }

    fn transfer_into(&self, src: &Tensor, dst: &Tensor, _fresh: bool) -> Result<()> {
        // Host to host: the only transfer the CPU backend is asked for.
        dst.copy_(src)
    }
}
