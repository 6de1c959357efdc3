//! Launching `kernels/*.cu` on tensors: the CUDA counterpart of `cpu/`.
//!
//! Every function here takes tensors already on one device, of the dtypes
//! the kernel wants, with inputs broadcast to the output's shape; `ops.rs`
//! and `tensor.rs` do the promotion, broadcasting and checks, exactly as for
//! the CPU.

use super::compile::{FILES, KernelFile};
use super::driver;
use super::runtime::{Gpu, gpu_of};
use crate::backend::{BinaryOp, CompareOp, ReduceOp, Rhs};
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

/// The kernel name suffix of a dtype (its CUDA type name), for the real
/// dtypes the kernels cover.
fn tag(dtype: DType) -> Option<&'static str> {
    dtype.cuda_type()
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
    t.storage().mark_device_use(&super::Cuda);
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

    /// The parameters every binary and comparison kernel starts with: out,
    /// a, b, the number, the mode and the element count `n`. The pointers
    /// are into `self` and `n`, which must outlive the launch.
    fn params(&mut self, n: &mut i64) -> Vec<*mut c_void> {
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
    fn kernel_name(opname: &str, contiguous: bool, tag: &str) -> String {
        let layout = if contiguous { "contig" } else { "strided" };
        format!("dlb_{opname}_{layout}_{tag}")
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
        out.numel().div_ceil(per_thread),
        &mut params,
    )
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

/// Must match `struct Rows` in `kernels/reduce.cu`: `rows` runs of `run`
/// elements `elem_stride` apart, each cut into `splits` pieces of `chunk`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rows {
    rows: i64,
    run: i64,
    elem_stride: i64,
    splits: i64,
    chunk: i64,
}

/// Runs of at least this many elements, `elem_stride` 1, get a block each
/// (`dlb_reduce_block_*`); shorter or strided ones a thread each.
const BLOCK_RUN: usize = 256;

/// The kept dimensions of `t` as an indexer (the first element of each
/// run, in `out`'s row-major order) and the reduced ones as one stride, or
/// `None` when the reduced dimensions do not merge into one.
fn runs_of(t: &Tensor, kept: &[usize], reduced: &[usize]) -> Result<Option<(Indexer, i64)>> {
    let strides = element_strides(t)?;
    let pick = |dims: &[usize]| -> (Vec<usize>, Vec<i64>) {
        dims.iter().map(|&d| (t.shape()[d], strides[d])).unzip()
    };
    let (red_shape, red_strides) = pick(reduced);
    let elem_stride = if red_shape.contains(&0) {
        1 // nothing is read
    } else {
        match indexer(&red_shape, &[red_strides]) {
            Ok(ix) if ix.ndim == 0 => 1,
            Ok(ix) if ix.ndim == 1 => ix.strides[0][0],
            _ => return Ok(None),
        }
    };
    let (kept_shape, kept_strides) = pick(kept);
    Ok(indexer(&kept_shape, &[kept_strides])
        .ok()
        .map(|ix| (ix, elem_stride)))
}

/// How many pieces to cut each of `rows` runs of `run` elements into, so
/// that about `units` blocks (or threads) have work, each piece holding at
/// least `min_chunk` elements (a multiple of `align`): `(splits, chunk)`.
fn plan(rows: usize, run: usize, units: usize, min_chunk: usize, align: usize) -> (usize, usize) {
    if run == 0 {
        return (1, 1);
    }
    let wanted = units.div_ceil(rows.max(1)).max(1);
    let splits = wanted.min(run / min_chunk).max(1);
    let chunk = run.div_ceil(splits).next_multiple_of(align);
    (run.div_ceil(chunk), chunk)
}

/// Reduces `src` over `dims` (sorted, distinct) into the fresh contiguous
/// `out` (and `indices`, int64, for max and min), as `Backend::reduce`
/// describes. The kept dimensions are read in place through an indexer; the
/// reduced ones must merge into one stride, else the input is first copied
/// with them last (as the CPU backend does). A contiguous full sum or mean
/// keeps its grid-stride first pass (`dlb_sum_partial_*`).
pub fn reduce(
    src: &Tensor,
    dims: &[usize],
    op: ReduceOp,
    out: &Tensor,
    indices: Option<&Tensor>,
) -> Result<()> {
    let opname = match op {
        ReduceOp::Sum => "sum",
        ReduceOp::Mean => "mean",
        ReduceOp::Max => "max",
        ReduceOp::Min => "min",
    };
    let dtype = src.dtype();
    let tag = tag_for(opname, dtype)?;
    let out_dtype = match op {
        ReduceOp::Sum if !dtype.is_floating_point() => DType::I64,
        _ => dtype,
    };
    if out.dtype() != out_dtype || !out.is_contiguous() {
        return Err(not_implemented(opname, out.dtype()));
    }
    if indices.is_some_and(|i| i.dtype() != DType::I64 || !i.is_contiguous()) {
        return Err(not_implemented(opname, DType::I64));
    }
    let rows = out.numel();
    if rows == 0 {
        return Ok(());
    }
    let gpu = gpu_of(src.device())?;
    let ndim = src.ndim();
    let kept: Vec<usize> = (0..ndim).filter(|d| !dims.contains(d)).collect();
    let run: usize = dims.iter().map(|&d| src.shape()[d]).product();
    let (input, (mut kept_ix, elem_stride)) = match runs_of(src, &kept, dims)? {
        Some(layout) => (src.clone(), layout),
        None => {
            let order: Vec<i64> = kept.iter().chain(dims).map(|&d| d as i64).collect();
            let rows_first = src.permute(&order)?.contiguous()?;
            let k = kept.len();
            let kept: Vec<usize> = (0..k).collect();
            let reduced: Vec<usize> = (k..ndim).collect();
            let layout = runs_of(&rows_first, &kept, &reduced)?
                .expect("the last dimensions of a contiguous tensor merge, and so do the first");
            (rows_first, layout)
        }
    };
    let mut pin = dev_ptr(&input)?;
    let mut po = dev_ptr(out)?;
    let mut pi = indices.map(dev_ptr).transpose()?.unwrap_or(0);
    let sm = gpu.sm_count as usize;
    let sum_like = matches!(op, ReduceOp::Sum | ReduceOp::Mean);
    let mut g;
    let partials;
    if sum_like && rows == 1 && elem_stride == 1 && run > 0 {
        // The full sum of one contiguous run: a grid-stride share per block.
        let mut wide = is_wide(&[pin]);
        let per_thread = if wide == 1 { 16 / dtype.size() } else { 1 };
        let blocks = gpu
            .blocks_for(run.div_ceil(per_thread))
            .min(gpu.sm_count * 8)
            .max(1);
        let slots = Tensor::empty(&[blocks as usize], DType::I64, src.device())?; // 8-byte slots
        let mut pp = dev_ptr(&slots)?;
        partials = slots;
        let mut n = run as i64;
        let name = format!("dlb_sum_partial_{tag}");
        let f = gpu.function(REDUCE, tag, &name)?;
        // SAFETY: matches dlb_sum_partial_<tag>(const T*, i64, A*, int);
        // partials has one 8-byte slot per block.
        unsafe {
            gpu.launch(
                f,
                &name,
                blocks,
                &mut [arg(&mut pin), arg(&mut n), arg(&mut pp), arg(&mut wide)],
            )?
        };
        g = Rows {
            rows: 1,
            run: run as i64,
            elem_stride: 1,
            splits: blocks as i64,
            chunk: run.div_ceil(blocks as usize) as i64,
        };
    } else {
        let by_block = elem_stride == 1 && run >= BLOCK_RUN;
        let (splits, chunk) = if by_block {
            plan(rows, run, sm * 8, 4096, 16)
        } else {
            plan(rows, run, sm * 2048, 64, 1)
        };
        g = Rows {
            rows: rows as i64,
            run: run as i64,
            elem_stride,
            splits: splits as i64,
            chunk: chunk as i64,
        };
        let tiles = rows * splits;
        let slots = (splits > 1)
            .then(|| Tensor::empty(&[tiles], DType::I64, src.device()))
            .transpose()?;
        let mut pp = slots.as_ref().map(dev_ptr).transpose()?.unwrap_or(0);
        let (kind, blocks) = if by_block {
            ("block", tiles.min(sm * 32) as u32)
        } else {
            ("thread", gpu.blocks_for(tiles))
        };
        let name = format!("dlb_reduce_{kind}_{opname}_{tag}");
        let f = gpu.function(REDUCE, tag, &name)?;
        let mut wide = 1i32;
        let mut params = vec![
            arg(&mut pin),
            arg(&mut kept_ix),
            arg(&mut g),
            arg(&mut po),
            arg(&mut pi),
            arg(&mut pp),
        ];
        if by_block {
            params.push(arg(&mut wide));
        }
        // SAFETY: matches dlb_reduce_<kind>_<op>_<tag>(const T*, Indexer, Rows,
        // O*, i64*, void* [, int]): `input` holds every element the indexer
        // and Rows describe, `out` and `indices` hold `rows` elements, and
        // `partials` one 8-byte slot per piece when there are several.
        unsafe { gpu.launch(f, &name, blocks, &mut params)? };
        match slots {
            Some(slots) => partials = slots,
            None => return Ok(()),
        }
    }
    let mut pp = dev_ptr(&partials)?;
    let name = format!("dlb_reduce_final_{opname}_{tag}");
    let f = gpu.function(REDUCE, tag, &name)?;
    let blocks = rows.min(sm * 32) as u32;
    // SAFETY: matches dlb_reduce_final_<op>_<tag>(const T*, Indexer, Rows,
    // const void*, O*, i64*): partials holds `splits` slots per run, written
    // by the launch before on the same stream.
    unsafe {
        gpu.launch(
            f,
            &name,
            blocks,
            &mut [
                arg(&mut pin),
                arg(&mut kept_ix),
                arg(&mut g),
                arg(&mut pp),
                arg(&mut po),
                arg(&mut pi),
            ],
        )
    }
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
    fn reductions_plan_pieces_that_cover_each_run_once() {
        // Many runs: one piece each.
        assert_eq!(plan(4096, 4096, 1056, 4096, 16), (1, 4096));
        assert_eq!(plan(1 << 20, 8, 1 << 18, 64, 1), (1, 8));
        // Few long runs: cut into aligned pieces, none empty.
        for (rows, run) in [
            (1, 10_000_000),
            (2, 10_000_000),
            (3, 4097),
            (1, 1),
            (7, 100_003),
        ] {
            for (units, min_chunk, align) in [(1056, 4096, 16), (270_336, 64, 1)] {
                let (splits, chunk) = plan(rows, run, units, min_chunk, align);
                assert!(splits >= 1 && chunk.is_multiple_of(align), "{rows} {run}");
                assert!(
                    splits * chunk >= run && (splits - 1) * chunk < run,
                    "{rows} {run}"
                );
                assert!(splits == 1 || chunk >= min_chunk, "{rows} {run}");
            }
        }
        assert_eq!(plan(2, 10_000_000, 1056, 4096, 16).0, 528);
        assert_eq!(plan(5, 0, 1056, 4096, 16), (1, 1));
    }

    #[test]
    fn reductions_read_kept_dimensions_in_place_and_merge_reduced_ones() {
        use crate::Device;
        let t = Tensor::zeros(&[3, 5, 4], DType::F32, Device::CPU).unwrap();
        // The middle dimension: runs of 5, 4 apart; outputs over (3, 4).
        let (ix, stride) = runs_of(&t, &[0, 2], &[1]).unwrap().unwrap();
        assert_eq!(dims(&ix).0, vec![3, 4]);
        assert_eq!(dims(&ix).1[0], vec![20, 1]);
        assert_eq!(stride, 4);
        // The last two merge into runs of 20.
        let (ix, stride) = runs_of(&t, &[0], &[1, 2]).unwrap().unwrap();
        assert_eq!((dims(&ix).0, stride), (vec![3], 1));
        // The first and last do not merge: the input is copied first.
        assert!(runs_of(&t, &[1], &[0, 2]).unwrap().is_none());
        // Everything: one run; size-1 dimensions never matter.
        let (ix, stride) = runs_of(&t, &[], &[0, 1, 2]).unwrap().unwrap();
        assert_eq!((ix.ndim, stride), (0, 1));
        let u = Tensor::zeros(&[3, 1, 4], DType::F32, Device::CPU).unwrap();
        let (_, stride) = runs_of(&u, &[1], &[0, 2]).unwrap().unwrap();
        assert_eq!(stride, 1);
        // A transposed view reduced over its last dimension: runs across memory.
        let tt = Tensor::zeros(&[4, 6], DType::F32, Device::CPU)
            .unwrap()
            .t()
            .unwrap();
        let (ix, stride) = runs_of(&tt, &[0], &[1]).unwrap().unwrap();
        assert_eq!((dims(&ix).1[0].clone(), stride), (vec![1], 6));
        // Expanded (stride 0) dimensions merge: every read is the same element.
        let e = Tensor::zeros(&[3, 1], DType::F32, Device::CPU)
            .unwrap()
            .expand(&[3, 7])
            .unwrap();
        assert_eq!(runs_of(&e, &[0], &[1]).unwrap().unwrap().1, 0);
        // Nothing to read: any stride will do.
        let z = Tensor::zeros(&[3, 0, 2], DType::F32, Device::CPU).unwrap();
        assert_eq!(runs_of(&z, &[1], &[0, 2]).unwrap().unwrap().1, 1);
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
