//! Launching `kernels/*.cu` on tensors: the CUDA counterpart of `cpu/`,
//! one file per kernel family, sharing what is here: the kernel files, dtype
//! tags, device pointers, the collapsed strided [`Indexer`], scalars as
//! kernel arguments and the one [`launch`] helper.
//!
//! Every function takes tensors already on one device, of the dtypes the
//! kernel wants, with inputs broadcast to the output's shape; `ops/` and
//! `tensor.rs` do the promotion, broadcasting and checks, exactly as for the
//! CPU.

mod compare;
mod copy;
mod elementwise;
mod rand;
mod reduce;

pub use compare::compare;
pub use copy::{copy_into, fill};
pub use elementwise::{binary, unary};
pub use rand::rand;
pub use reduce::reduce;

use super::compile::{FILES, KernelFile};
use super::runtime::Gpu;
use crate::{DType, Error, Result, Scalar, Tensor, bail, with_element};
use cudarc::driver::sys;
use std::ffi::c_void;

pub(super) const ELEMENTWISE: &KernelFile = &FILES[0];
pub(super) const CAST: &KernelFile = &FILES[1];
pub(super) const COPY: &KernelFile = &FILES[2];
pub(super) const REDUCE: &KernelFile = &FILES[3];
pub(super) const RANDOM: &KernelFile = &FILES[4];
pub(super) const COMPARE: &KernelFile = &FILES[5];

/// Must match `DLB_MAX_DIMS` in `kernels/common.cuh`.
const MAX_DIMS: usize = 16;

/// Must match `struct Indexer` in `kernels/common.cuh`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct Indexer {
    pub(super) ndim: i32,
    pad: i32,
    pub(super) shape: [i64; MAX_DIMS],
    pub(super) strides: [[i64; MAX_DIMS]; 3],
}

/// The kernel name suffix of a dtype (its CUDA type name), for the real
/// dtypes the kernels cover.
pub(super) fn tag(dtype: DType) -> Option<&'static str> {
    dtype.cuda_type()
}

/// PyTorch's wording for a kernel missing a dtype.
pub(super) fn not_implemented(what: &str, dtype: DType) -> Error {
    crate::err!(
        NotImplemented,
        "\"{what}_cuda\" not implemented for '{}'",
        dtype.scalar_type_name()
    )
}

pub(super) fn tag_for(what: &str, dtype: DType) -> Result<&'static str> {
    tag(dtype).ok_or_else(|| not_implemented(what, dtype))
}

/// The device address of `t`'s first element, checked for alignment. Marks
/// the storage as used by dlbridge's stream (see `Storage::drop`).
pub(super) fn dev_ptr(t: &Tensor) -> Result<sys::CUdeviceptr> {
    let p = t.data_ptr() as u64;
    let align = t.dtype().size().min(8) as u64;
    if t.numel() > 0 && !p.is_multiple_of(align) {
        bail!(
            InvalidOperation,
            "this CUDA tensor's data pointer {p:#x} is not aligned to its {align}-byte elements"
        );
    }
    t.storage().mark_device_use(&crate::cuda::Cuda);
    Ok(p)
}

pub(super) fn element_strides(t: &Tensor) -> Result<Vec<i64>> {
    Ok(t.strides()?.into_iter().map(|s| s as i64).collect())
}

/// Drops size-1 dimensions and merges neighbours that are contiguous in
/// every operand, so most layouts become one or two dimensions.
pub(super) fn indexer(shape: &[usize], operands: &[Vec<i64>]) -> Result<Indexer> {
    let mut dims: Vec<(i64, [i64; 3])> = Vec::new();
    for d in (0..shape.len()).rev() {
        if shape[d] == 1 {
            continue;
        }
        let size = shape[d] as i64;
        let mut st = [0i64; 3];
        for (k, s) in operands.iter().enumerate() {
            st[k] = s[d];
        }
        if let Some((inner, inner_st)) = dims.last_mut()
            && (0..operands.len()).all(|k| st[k] == inner_st[k] * *inner)
        {
            *inner *= size;
            continue;
        }
        dims.push((size, st));
    }
    if dims.len() > MAX_DIMS {
        bail!(
            NotImplemented,
            "this layout has {} dimensions that cannot be merged; dlbridge's CUDA kernels handle up to \
             {MAX_DIMS}. Call .contiguous() on the CPU first, or reshape",
            dims.len()
        );
    }
    let mut ix = Indexer {
        ndim: dims.len() as i32,
        pad: 0,
        shape: [0; MAX_DIMS],
        strides: [[0; MAX_DIMS]; 3],
    };
    // dims was built innermost first; the kernel wants row-major order.
    for (i, (size, st)) in dims.iter().rev().enumerate() {
        ix.shape[i] = *size;
        for (k, s) in st.iter().enumerate() {
            ix.strides[k][i] = *s;
        }
    }
    Ok(ix)
}

/// The bytes of `value` converted to `dtype` (the kernel reads the first
/// `dtype.size()` of them).
pub(super) fn scalar_bytes(dtype: DType, value: Scalar) -> [u8; 16] {
    let mut out = [0u8; 16];
    with_element!(dtype, T => {
        let v = <T as crate::Element>::from_scalar(value);
        // SAFETY: T is at most 16 bytes; both pointers are valid for its size.
        unsafe {
            std::ptr::copy_nonoverlapping((&v as *const T).cast::<u8>(), out.as_mut_ptr(), std::mem::size_of::<T>())
        };
    });
    out
}

/// The bytes of `value` in the type the kernel computes `dtype` in
/// (`Tr<T>::C` in `kernels/common.cuh`): the table's compute dtype
/// (float32 for float16 and bfloat16: the scalar goes unrounded, as PyTorch
/// passes it), and integers narrower than 32 bits wrapped to their dtype,
/// then widened to 32 bits, as C's arithmetic promotes them.
pub(super) fn compute_scalar_bytes(dtype: DType, value: Scalar) -> [u8; 16] {
    let compute = dtype.compute_dtype();
    if compute != dtype {
        return scalar_bytes(compute, value);
    }
    if dtype.category() == crate::Category::Integral && dtype.size() < 4 {
        let wide = if dtype.is_signed() {
            DType::I32
        } else {
            DType::U32
        };
        return scalar_bytes(wide, wrapped(dtype, value));
    }
    scalar_bytes(dtype, value)
}

/// `value` wrapped to `dtype`, as a number again.
fn wrapped(dtype: DType, value: Scalar) -> Scalar {
    with_element!(dtype, T => crate::Element::to_scalar(<T as crate::Element>::from_scalar(value)))
}

pub(super) fn arg<T>(v: &mut T) -> *mut c_void {
    (v as *mut T).cast()
}

/// How a launch's threads are laid out.
#[derive(Clone, Copy, Debug)]
pub(super) enum Grid {
    /// One thread per unit (an element, or a 16-byte pack) in 128-thread
    /// blocks, as PyTorch launches its elementwise kernels: on an H100 this
    /// streamed 1-4% faster than a grid-stride loop over a capped grid. The
    /// kernels still loop, so a grid past the hardware's limit is covered.
    Units(usize),
    /// Exactly this many blocks of 256 threads (the reductions' shared
    /// memory is sized for 256).
    Blocks(u32),
}

impl Grid {
    /// (blocks, threads per block) of the launch.
    fn shape(self) -> (u32, u32) {
        match self {
            Grid::Units(units) => {
                let blocks = units.div_ceil(UNIT_BLOCK as usize).clamp(1, MAX_BLOCKS);
                (blocks as u32, UNIT_BLOCK)
            }
            Grid::Blocks(blocks) => (blocks, 256),
        }
    }
}

/// Threads per block of [`Grid::Units`] launches.
const UNIT_BLOCK: u32 = 128;
/// The most blocks one launch's x dimension takes (CUDA's limit, 2^31 - 1).
const MAX_BLOCKS: usize = i32::MAX as usize;

/// The one way a kernel of `file` is launched: `dlb_*` function `name`
/// (compiled for `tag`) with `params`, on dlbridge's stream of `gpu`.
pub(super) fn launch(
    gpu: &Gpu,
    file: &'static KernelFile,
    tag: &'static str,
    name: &str,
    grid: Grid,
    params: &mut [*mut c_void],
) -> Result<()> {
    let f = gpu.function(file, tag, name)?;
    let (blocks, threads) = grid.shape();
    // SAFETY: callers build `params` to match the kernel's signature in
    // kernels/*.cu, from locals that outlive this call (cuLaunchKernel copies
    // the values), and device pointers kept alive by their tensors' storages
    // (freed in stream order after the kernel).
    unsafe { gpu.launch(f, name, (blocks, threads), params) }
}

/// Whether every pointer allows 16-byte vector loads and stores.
pub(super) fn is_wide(ptrs: &[u64]) -> i32 {
    ptrs.iter().all(|p| p.is_multiple_of(16)) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn dims(ix: &Indexer) -> (Vec<i64>, Vec<Vec<i64>>) {
        let n = ix.ndim as usize;
        (
            ix.shape[..n].to_vec(),
            (0..3).map(|k| ix.strides[k][..n].to_vec()).collect(),
        )
    }

    #[test]
    fn unit_launches_give_each_unit_a_thread_within_cudas_grid_limit() {
        assert_eq!(Grid::Units(0).shape(), (1, 128));
        assert_eq!(Grid::Units(128).shape(), (1, 128));
        assert_eq!(Grid::Units(129).shape(), (2, 128));
        assert_eq!(Grid::Units(1 << 26).shape(), (1 << 19, 128));
        // Past 2^31 - 1 blocks the kernels' grid-stride loops cover the rest.
        assert_eq!(Grid::Units(usize::MAX).shape(), (i32::MAX as u32, 128));
        assert_eq!(Grid::Blocks(7).shape(), (7, 256));
    }

    #[test]
    fn contiguous_layouts_collapse_to_one_dimension() {
        let ix = indexer(&[2, 3, 4], &[vec![12, 4, 1], vec![12, 4, 1]]).unwrap();
        assert_eq!(dims(&ix).0, vec![24]);
        assert_eq!(dims(&ix).1[1], vec![1]);
    }

    #[test]
    fn size_one_dimensions_vanish_and_broadcasts_stay_apart() {
        // out (3, 1, 4) contiguous; input broadcast along the last axis.
        let ix = indexer(&[3, 1, 4], &[vec![4, 4, 1], vec![1, 99, 0]]).unwrap();
        let (shape, strides) = dims(&ix);
        assert_eq!(shape, vec![3, 4]);
        assert_eq!(strides[0], vec![4, 1]);
        assert_eq!(strides[1], vec![1, 0]);
    }

    #[test]
    fn transposes_do_not_merge() {
        let ix = indexer(&[4, 3], &[vec![3, 1], vec![1, 4]]).unwrap();
        assert_eq!(dims(&ix).0, vec![4, 3]);
        let scalar = indexer(&[], &[vec![], vec![]]).unwrap();
        assert_eq!(scalar.ndim, 0);
    }

    #[test]
    fn too_many_irregular_dimensions_is_an_error() {
        let shape = vec![2usize; 17];
        // Strides that never merge: every dimension is a transpose of the next.
        let strides: Vec<i64> = (0..17).map(|d| 1i64 << (2 * d)).collect();
        let err = indexer(&shape, &[strides]).err().unwrap();
        assert!(err.to_string().contains("up to 16"), "{err}");
    }

    #[test]
    fn kernel_scalars_travel_in_the_compute_type() {
        // 0.1 stays a float32 0.1 for a float16 op (rounded once, at the end).
        assert_eq!(
            &compute_scalar_bytes(DType::F16, Scalar::Float(0.1))[..4],
            &0.1f32.to_le_bytes()
        );
        assert_eq!(
            &compute_scalar_bytes(DType::I8, Scalar::Int(-1))[..4],
            &(-1i32).to_le_bytes()
        );
        assert_eq!(
            &compute_scalar_bytes(DType::U8, Scalar::Int(-1))[..4],
            &255u32.to_le_bytes()
        );
        assert_eq!(
            &compute_scalar_bytes(DType::I64, Scalar::Int(-2))[..8],
            &(-2i64).to_le_bytes()
        );
    }

    #[test]
    fn scalars_become_their_dtype_bytes() {
        assert_eq!(&scalar_bytes(DType::U8, Scalar::Int(-1))[..1], &[255]);
        assert_eq!(
            &scalar_bytes(DType::F32, Scalar::Float(1.5))[..4],
            &1.5f32.to_le_bytes()
        );
        assert_eq!(&scalar_bytes(DType::Bool, Scalar::Int(3))[..1], &[1]);
        assert_eq!(
            &scalar_bytes(DType::BF16, Scalar::Float(1.0))[..2],
            &half::bf16::ONE.to_le_bytes()
        );
    }
}
