//! Elementwise arithmetic kernels (`kernels/elementwise.cu`): binary ops
//! on tensors and numbers, and the unary ops of `unary_ops!`.

use super::{
    ELEMENTWISE, Grid, Indexer, arg, compute_scalar_bytes, dev_ptr, element_strides, indexer,
    is_wide, launch, tag_for,
};
use crate::backend::{BinaryOp, Rhs, UnaryOp};
use crate::cuda::runtime::gpu_of;
use crate::{DType, Result, Scalar, Tensor};
use cudarc::driver::sys;
use std::ffi::c_void;

/// The operands of an elementwise kernel: `a` (and a tensor `b`) broadcast
/// to `out`'s shape, a number by value in the compute type of `dtype`, and
/// which operands are tensors (`mode`, as `kernels/elementwise.cu` names it).
pub(super) struct Operands {
    a: Tensor,
    b: Option<Tensor>,
    po: sys::CUdeviceptr,
    pa: sys::CUdeviceptr,
    pb: sys::CUdeviceptr,
    scalar: [u8; 16],
    mode: i32,
}

impl Operands {
    pub(super) fn new(out: &Tensor, a: &Tensor, rhs: Rhs, dtype: DType) -> Result<Operands> {
        let (b, scalar, scalar_left) = match rhs {
            Rhs::Tensor(t) => (Some(t), Scalar::Int(0), false),
            Rhs::Scalar { value, left } => (None, value, left),
        };
        let a = a.broadcast_to(out.shape())?;
        let b = b.map(|b| b.broadcast_to(out.shape())).transpose()?;
        let mode = match (&b, scalar_left) {
            (Some(_), _) => 0,
            (None, false) => 1,
            (None, true) => 2,
        };
        Ok(Operands {
            po: dev_ptr(out)?,
            pa: dev_ptr(&a)?,
            pb: b.as_ref().map(dev_ptr).transpose()?.unwrap_or(0),
            scalar: compute_scalar_bytes(dtype, scalar),
            mode,
            a,
            b,
        })
    }

    pub(super) fn contiguous(&self, out: &Tensor) -> bool {
        out.is_contiguous()
            && self.a.is_contiguous()
            && self.b.as_ref().is_none_or(|b| b.is_contiguous())
    }

    /// The parameters every binary and comparison kernel starts with: out,
    /// a, b, the number, the mode and the element count `n`. The pointers
    /// are into `self` and `n`, which must outlive the launch.
    pub(super) fn params(&mut self, n: &mut i64) -> Vec<*mut c_void> {
        vec![
            arg(&mut self.po),
            arg(&mut self.pa),
            arg(&mut self.pb),
            arg(&mut self.scalar),
            arg(&mut self.mode),
            arg(n),
        ]
    }

    /// The kernel for this layout: `dlb_{op}_contig_{tag}` or `dlb_{op}_strided_{tag}`.
    pub(super) fn kernel_name(opname: &str, contiguous: bool, tag: &str) -> String {
        let layout = if contiguous { "contig" } else { "strided" };
        format!("dlb_{opname}_{layout}_{tag}")
    }

    /// The strided indexer over out, a and b (stride 0 for a number).
    pub(super) fn indexer(&self, out: &Tensor) -> Result<Indexer> {
        let zeros = vec![0i64; out.ndim()];
        let strides = [
            element_strides(out)?,
            element_strides(&self.a)?,
            self.b
                .as_ref()
                .map(element_strides)
                .transpose()?
                .unwrap_or(zeros),
        ];
        indexer(out.shape(), &strides)
    }
}

/// `out = a op rhs`, all of `out`'s dtype, `a` (and a tensor `rhs`)
/// broadcast to out's shape. `out` may be `a` itself. A number on the right
/// (or on the left, `Rhs::Scalar { left: true }`) is passed by value in the
/// dtype's compute type.
pub fn binary(out: &Tensor, a: &Tensor, rhs: Rhs, op: BinaryOp) -> Result<()> {
    let opname = op.name();
    let dtype = out.dtype();
    let tag = tag_for(opname, dtype)?;
    if out.numel() == 0 {
        return Ok(());
    }
    let gpu = gpu_of(out.device())?;
    let mut o = Operands::new(out, a, rhs, dtype)?;
    let mut n = out.numel() as i64;
    let contiguous = o.contiguous(out);
    // The contiguous kernel ends with whether every pointer allows 16-byte
    // vectors (a thread then does 16 bytes), the strided one with the indexer.
    let mut wide = is_wide(&[o.po, o.pa, o.pb]);
    let mut ix = if contiguous {
        None
    } else {
        Some(o.indexer(out)?)
    };
    let per_thread = if contiguous && wide == 1 {
        16 / dtype.size()
    } else {
        1
    };
    let name = Operands::kernel_name(opname, contiguous, tag);
    let mut params = o.params(&mut n);
    params.push(match ix.as_mut() {
        Some(ix) => arg(ix),
        None => arg(&mut wide),
    });
    launch(
        gpu,
        ELEMENTWISE,
        tag,
        &name,
        Grid::Units(out.numel().div_ceil(per_thread)),
        &mut params,
    )
}

/// `out = op(src)`, one shape and dtype (real dtypes only): the kernel
/// `dlb_{name}_{tag}` of the op's row. `out` is fresh or `src` itself.
pub fn unary(out: &Tensor, src: &Tensor, op: UnaryOp) -> Result<()> {
    let tag = tag_for(op.name(), src.dtype())?;
    if out.numel() == 0 {
        return Ok(());
    }
    let gpu = gpu_of(out.device())?;
    let mut po = dev_ptr(out)?;
    let mut ps = dev_ptr(src)?;
    let mut n = out.numel() as i64;
    let mut ix = indexer(out.shape(), &[element_strides(out)?, element_strides(src)?])?;
    let name = format!("dlb_{}_{tag}", op.name());
    launch(
        gpu,
        ELEMENTWISE,
        tag,
        &name,
        Grid::Units(out.numel()),
        &mut [arg(&mut po), arg(&mut ps), arg(&mut n), arg(&mut ix)],
    )
}
