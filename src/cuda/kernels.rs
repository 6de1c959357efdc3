//! Launching `kernels/*.cu` on tensors: the CUDA counterpart of `cpu/`.
//!
//! Every function here takes tensors already on one device, of the dtypes
//! the kernel wants, with inputs broadcast to the output's shape; `ops.rs`
//! and `tensor.rs` do the promotion, broadcasting and checks, exactly as for
//! the CPU.

use super::compile::{FILES, KernelFile};
use super::driver;
use super::runtime::{Gpu, gpu_of};
use crate::backend::{BinaryOp, CompareOp, Rhs};
use crate::{DType, Error, Result, Scalar, Tensor, bail, with_element};
use cudarc::driver::sys;
use std::ffi::c_void;

const ELEMENTWISE: &KernelFile = &FILES[0];
const CAST: &KernelFile = &FILES[1];
const COPY: &KernelFile = &FILES[2];
const REDUCE: &KernelFile = &FILES[3];
const RANDOM: &KernelFile = &FILES[4];
const COMPARE: &KernelFile = &FILES[5];

/// Must match `DLB_MAX_DIMS` in `kernels/common.cuh`.
const MAX_DIMS: usize = 16;

/// Must match `struct Indexer` in `kernels/common.cuh`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Indexer {
    ndim: i32,
    pad: i32,
    shape: [i64; MAX_DIMS],
    strides: [[i64; MAX_DIMS]; 3],
}

/// The kernel name suffix of a dtype, for the real dtypes the kernels cover.
fn tag(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::Bool => "b8",
        DType::U8 => "u8",
        DType::I8 => "i8",
        DType::I16 => "i16",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::U16 => "u16",
        DType::U32 => "u32",
        DType::U64 => "u64",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::C64 | DType::C128 => return None,
    })
}

/// PyTorch's wording for a kernel missing a dtype.
fn not_implemented(what: &str, dtype: DType) -> Error {
    crate::err!(
        NotImplemented,
        "\"{what}_cuda\" not implemented for '{}'",
        dtype.scalar_type_name()
    )
}

fn tag_for(what: &str, dtype: DType) -> Result<&'static str> {
    tag(dtype).ok_or_else(|| not_implemented(what, dtype))
}

/// The device address of `t`'s first element, checked for alignment. Marks
/// the storage as used by dlbridge's stream (see `Storage::drop`).
fn dev_ptr(t: &Tensor) -> Result<sys::CUdeviceptr> {
    let p = t.data_ptr() as u64;
    let align = t.dtype().size().min(8) as u64;
    if t.numel() > 0 && !p.is_multiple_of(align) {
        bail!(
            InvalidOperation,
            "this CUDA tensor's data pointer {p:#x} is not aligned to its {align}-byte elements"
        );
    }
    t.storage().mark_device_use();
    Ok(p)
}

fn element_strides(t: &Tensor) -> Result<Vec<i64>> {
    Ok(t.strides()?.into_iter().map(|s| s as i64).collect())
}

/// Drops size-1 dimensions and merges neighbours that are contiguous in
/// every operand, so most layouts become one or two dimensions.
fn indexer(shape: &[usize], operands: &[Vec<i64>]) -> Result<Indexer> {
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
fn scalar_bytes(dtype: DType, value: Scalar) -> [u8; 16] {
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
/// (`Tr<T>::C` in `kernels/common.cuh`): float16 and bfloat16 compute in
/// float32, so the scalar goes unrounded, as PyTorch passes it; narrow
/// integers wrap to their dtype, then widen.
fn compute_scalar_bytes(dtype: DType, value: Scalar) -> [u8; 16] {
    use crate::Element;
    let widened: Option<[u8; 4]> = match dtype {
        DType::F16 | DType::BF16 => Some(f32::from_scalar(value).to_le_bytes()),
        DType::I8 => Some((i8::from_scalar(value) as i32).to_le_bytes()),
        DType::I16 => Some((i16::from_scalar(value) as i32).to_le_bytes()),
        DType::U8 => Some((u8::from_scalar(value) as u32).to_le_bytes()),
        DType::U16 => Some((u16::from_scalar(value) as u32).to_le_bytes()),
        _ => None,
    };
    match widened {
        Some(four) => {
            let mut out = [0u8; 16];
            out[..4].copy_from_slice(&four);
            out
        }
        None => scalar_bytes(dtype, value),
    }
}

fn arg<T>(v: &mut T) -> *mut c_void {
    (v as *mut T).cast()
}

fn launch(
    gpu: &Gpu,
    file: &'static KernelFile,
    tag: &'static str,
    name: &str,
    units: usize,
    params: &mut [*mut c_void],
) -> Result<()> {
    let f = gpu.function(file, tag, name)?;
    // SAFETY: callers build `params` to match the kernel's signature in
    // kernels/*.cu, from locals that outlive this call (cuLaunchKernel copies
    // the values), and device pointers kept alive by their tensors' storages
    // (freed in stream order after the kernel).
    unsafe { gpu.launch(f, name, gpu.blocks_for(units), params) }
}

fn is_wide(ptrs: &[u64]) -> i32 {
    ptrs.iter().all(|p| p.is_multiple_of(16)) as i32
}

/// The operands of an elementwise kernel: `a` (and a tensor `b`) broadcast
/// to `out`'s shape, a number by value in the compute type of `dtype`, and
/// which operands are tensors (`mode`, as `kernels/elementwise.cu` names it).
struct Operands {
    a: Tensor,
    b: Option<Tensor>,
    po: sys::CUdeviceptr,
    pa: sys::CUdeviceptr,
    pb: sys::CUdeviceptr,
    scalar: [u8; 16],
    mode: i32,
}

impl Operands {
    fn new(out: &Tensor, a: &Tensor, rhs: Rhs, dtype: DType) -> Result<Operands> {
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

    fn contiguous(&self, out: &Tensor) -> bool {
        out.is_contiguous()
            && self.a.is_contiguous()
            && self.b.as_ref().is_none_or(|b| b.is_contiguous())
    }

    /// The strided indexer over out, a and b (stride 0 for a number).
    fn indexer(&self, out: &Tensor) -> Result<Indexer> {
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
    if o.contiguous(out) {
        let mut wide = is_wide(&[o.po, o.pa, o.pb]);
        let per_thread = if wide == 1 { 16 / dtype.size() } else { 1 };
        let name = format!("dlb_{opname}_contig_{tag}");
        launch(
            gpu,
            ELEMENTWISE,
            tag,
            &name,
            out.numel().div_ceil(per_thread),
            &mut [
                arg(&mut o.po),
                arg(&mut o.pa),
                arg(&mut o.pb),
                arg(&mut o.scalar),
                arg(&mut o.mode),
                arg(&mut n),
                arg(&mut wide),
            ],
        )
    } else {
        let mut ix = o.indexer(out)?;
        let name = format!("dlb_{opname}_strided_{tag}");
        launch(
            gpu,
            ELEMENTWISE,
            tag,
            &name,
            out.numel(),
            &mut [
                arg(&mut o.po),
                arg(&mut o.pa),
                arg(&mut o.pb),
                arg(&mut o.scalar),
                arg(&mut o.mode),
                arg(&mut n),
                arg(&mut ix),
            ],
        )
    }
}

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
    let mut ix = o.indexer(out)?;
    let name = format!(
        "dlb_{opname}_{}_{tag}",
        if contiguous { "contig" } else { "strided" }
    );
    let mut params = vec![
        arg(&mut o.po),
        arg(&mut o.pa),
        arg(&mut o.pb),
        arg(&mut o.scalar),
        arg(&mut o.mode),
        arg(&mut n),
    ];
    if !contiguous {
        params.push(arg(&mut ix));
    }
    launch(gpu, COMPARE, tag, &name, out.numel(), &mut params)
}

/// `out = |src|`, one shape and dtype (real dtypes only); `out` is fresh.
pub fn abs(out: &Tensor, src: &Tensor) -> Result<()> {
    let tag = tag_for("abs", src.dtype())?;
    if out.numel() == 0 {
        return Ok(());
    }
    let gpu = gpu_of(out.device())?;
    let mut po = dev_ptr(out)?;
    let mut ps = dev_ptr(src)?;
    let mut n = out.numel() as i64;
    let mut ix = indexer(out.shape(), &[element_strides(out)?, element_strides(src)?])?;
    let name = format!("dlb_abs_{tag}");
    launch(
        gpu,
        ELEMENTWISE,
        tag,
        &name,
        out.numel(),
        &mut [arg(&mut po), arg(&mut ps), arg(&mut n), arg(&mut ix)],
    )
}

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
            dst.numel(),
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
        dst.numel(),
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
            dst.numel().div_ceil(per_thread),
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
            dst.numel(),
            &mut [arg(&mut pd), arg(&mut v), arg(&mut n), arg(&mut ix)],
        )
    }
}

/// The sum of a contiguous tensor's elements, multiplied by `scale` (1/n
/// for mean), into the one-element `out` (int64 for integer inputs).
pub fn sum(src: &Tensor, out: &Tensor, scale: f64) -> Result<()> {
    debug_assert!(src.is_contiguous() && out.numel() == 1);
    let out_dtype = out.dtype();
    let tag = tag_for("sum", src.dtype())?;
    let out_tag = match out_dtype {
        DType::I64 if !src.dtype().is_floating_point() => "i64",
        dt if dt == src.dtype() && dt.is_floating_point() => tag,
        dt => return Err(not_implemented("sum", dt)),
    };
    let gpu = gpu_of(src.device())?;
    let n = src.numel();
    let mut ps = dev_ptr(src)?;
    let mut wide = is_wide(&[ps]);
    let per_thread = if wide == 1 {
        16 / src.dtype().size()
    } else {
        1
    };
    let blocks = gpu
        .blocks_for(n.div_ceil(per_thread))
        .min(gpu.sm_count * 8)
        .max(1);
    let partials = Tensor::empty(&[blocks as usize], DType::F64, src.device())?; // 8-byte slots
    let mut pp = dev_ptr(&partials)?;
    let mut n64 = n as i64;
    let partial_name = format!("dlb_sum_partial_{tag}");
    let f = gpu.function(REDUCE, "all", &partial_name)?;
    // SAFETY: matches dlb_sum_partial_<tag>(const T*, i64, A*, int); partials
    // has one 8-byte slot per block.
    unsafe {
        gpu.launch(
            f,
            &partial_name,
            blocks,
            &mut [arg(&mut ps), arg(&mut n64), arg(&mut pp), arg(&mut wide)],
        )?
    };
    let mut m = blocks as i64;
    let mut po = dev_ptr(out)?;
    let mut scale = scale;
    let final_name = format!("dlb_sum_final_{out_tag}");
    let f = gpu.function(REDUCE, "all", &final_name)?;
    // SAFETY: matches dlb_sum_final_<tag>(const A*, i64, O*, double); one block.
    unsafe {
        gpu.launch(
            f,
            &final_name,
            1,
            &mut [arg(&mut pp), arg(&mut m), arg(&mut po), arg(&mut scale)],
        )?
    };
    Ok(())
}

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
        t.numel(),
        &mut [arg(&mut po), arg(&mut n), arg(&mut seed), arg(&mut offset)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(ix: &Indexer) -> (Vec<i64>, Vec<Vec<i64>>) {
        let n = ix.ndim as usize;
        (
            ix.shape[..n].to_vec(),
            (0..3).map(|k| ix.strides[k][..n].to_vec()).collect(),
        )
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
