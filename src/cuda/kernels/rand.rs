//! Uniform random numbers (`kernels/random.cu`).

use super::{Grid, RANDOM, arg, dev_ptr, launch, not_implemented, tag};
use crate::cuda::runtime::gpu_of;
use crate::{DType, Result, Tensor};

/// Fills a fresh contiguous floating tensor with uniform values in [0, 1).
pub fn rand(t: &Tensor) -> Result<()> {
    let tag = match t.dtype() {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => tag(t.dtype()).expect("real"),
        dt => return Err(not_implemented("uniform", dt)),
    };
    if t.numel() == 0 {
        return Ok(());
    }
    let gpu = gpu_of(t.device())?;
    let mut po = dev_ptr(t)?;
    let mut n = t.numel() as i64;
    let mut seed = crate::cpu::next_seed();
    let mut offset = 0u64;
    let name = format!("dlb_rand_{tag}");
    launch(
        gpu,
        RANDOM,
        "all",
        &name,
        Grid::Units(t.numel()),
        &mut [arg(&mut po), arg(&mut n), arg(&mut seed), arg(&mut offset)],
    )
}
