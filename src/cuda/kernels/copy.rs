//! Copies, casts (`kernels/copy.cu`, `kernels/cast.cu`) and fills.

use super::{
    CAST, COPY, Grid, arg, dev_ptr, element_strides, indexer, is_wide, launch, scalar_bytes,
    tag_for,
};
use crate::cuda::driver;
use crate::cuda::runtime::gpu_of;
use crate::{Result, Scalar, Tensor};

/// `dst[...] = src[...]`, casting when the dtypes differ; `src` is on
/// dst's device and broadcasts to dst's shape. They must not overlap.
pub fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.numel() == 0 {
        return Ok(());
    }
    let gpu = gpu_of(dst.device())?;
    let src = src.broadcast_to(dst.shape())?;
    let mut pd = dev_ptr(dst)?;
    let mut ps = dev_ptr(&src)?;
    let mut n = dst.numel() as i64;
    if dst.dtype() == src.dtype() {
        if dst.is_contiguous() && src.is_contiguous() {
            let _ctx = gpu.bind()?;
            // SAFETY: both ranges hold nbytes on this device and do not overlap.
            return unsafe { driver::copy_on_device(pd, ps, dst.nbytes()) };
        }
        let mut ix = indexer(
            dst.shape(),
            &[element_strides(dst)?, element_strides(&src)?],
        )?;
        let name = format!("dlb_copy_strided_w{}", dst.dtype().size());
        return launch(
            gpu,
            COPY,
            "all",
            &name,
            Grid::Units(dst.numel()),
            &mut [arg(&mut pd), arg(&mut ps), arg(&mut n), arg(&mut ix)],
        );
    }
    let stag = tag_for("copy", src.dtype())?;
    let dtag = tag_for("copy", dst.dtype())?;
    let mut ix = indexer(
        dst.shape(),
        &[element_strides(dst)?, element_strides(&src)?],
    )?;
    let name = format!("dlb_cast_{stag}_{dtag}");
    launch(
        gpu,
        CAST,
        stag,
        &name,
        Grid::Units(dst.numel()),
        &mut [arg(&mut pd), arg(&mut ps), arg(&mut n), arg(&mut ix)],
    )
}

/// Sets every element of `dst` to `value` (already range-checked).
pub fn fill(dst: &Tensor, value: Scalar) -> Result<()> {
    if dst.numel() == 0 {
        return Ok(());
    }
    let gpu = gpu_of(dst.device())?;
    let mut pd = dev_ptr(dst)?;
    let mut v = scalar_bytes(dst.dtype(), value);
    let mut n = dst.numel() as i64;
    let width = dst.dtype().size();
    if dst.is_contiguous() {
        let mut wide = is_wide(&[pd]);
        let per_thread = if wide == 1 && width < 16 {
            16 / width
        } else {
            1
        };
        let name = format!("dlb_fill_contig_w{width}");
        launch(
            gpu,
            COPY,
            "all",
            &name,
            Grid::Units(dst.numel().div_ceil(per_thread)),
            &mut [arg(&mut pd), arg(&mut v), arg(&mut n), arg(&mut wide)],
        )
    } else {
        let mut ix = indexer(dst.shape(), &[element_strides(dst)?])?;
        let name = format!("dlb_fill_strided_w{width}");
        launch(
            gpu,
            COPY,
            "all",
            &name,
            Grid::Units(dst.numel()),
            &mut [arg(&mut pd), arg(&mut v), arg(&mut n), arg(&mut ix)],
        )
    }
}
