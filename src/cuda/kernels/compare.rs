//! Comparison kernels (`kernels/compare.cu`) into bool tensors.

use super::elementwise::Operands;
use super::{COMPARE, Grid, arg, launch, tag_for};
use crate::backend::{CompareOp, Rhs};
use crate::cuda::runtime::gpu_of;
use crate::{Result, Tensor};

/// `out = a op rhs` into the fresh bool tensor `out`; `a` (and a tensor
/// `rhs`) share one dtype and broadcast to out's shape; a number has
/// already been rounded to that dtype and travels in its compute type.
pub fn compare(out: &Tensor, a: &Tensor, rhs: Rhs, op: CompareOp) -> Result<()> {
    let opname = op.name();
    let dtype = a.dtype();
    let tag = tag_for(opname, dtype)?;
    if out.numel() == 0 {
        return Ok(());
    }
    let gpu = gpu_of(out.device())?;
    let mut o = Operands::new(out, a, rhs, dtype)?;
    let mut n = out.numel() as i64;
    let contiguous = o.contiguous(out);
    // The indexer only for the strided kernel (as `binary` does).
    let mut ix = if contiguous {
        None
    } else {
        Some(o.indexer(out)?)
    };
    let name = Operands::kernel_name(opname, contiguous, tag);
    let mut params = o.params(&mut n);
    if let Some(ix) = ix.as_mut() {
        params.push(arg(ix));
    }
    launch(
        gpu,
        COMPARE,
        tag,
        &name,
        Grid::Units(out.numel()),
        &mut params,
    )
}
