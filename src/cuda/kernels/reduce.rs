//! Reductions (`kernels/reduce.cu`): how a reduction is cut into runs and
//! pieces, and its launches.

use super::{
    Grid, Indexer, REDUCE, arg, dev_ptr, element_strides, indexer, is_wide, launch,
    not_implemented, tag_for,
};
use crate::backend::ReduceOp;
use crate::cuda::runtime::gpu_of;
use crate::{DType, Result, Tensor};

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
        // dlb_sum_partial_<tag>(const T*, i64, A*, int): partials has one
        // 8-byte slot per block.
        launch(
            gpu,
            REDUCE,
            tag,
            &name,
            Grid::Blocks(blocks),
            &mut [arg(&mut pin), arg(&mut n), arg(&mut pp), arg(&mut wide)],
        )?;
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
        // dlb_reduce_<kind>_<op>_<tag>(const T*, Indexer, Rows, O*, i64*,
        // void* [, int]): `input` holds every element the indexer and Rows
        // describe, `out` and `indices` hold `rows` elements, and `partials`
        // one 8-byte slot per piece when there are several.
        launch(gpu, REDUCE, tag, &name, Grid::Blocks(blocks), &mut params)?;
        match slots {
            Some(slots) => partials = slots,
            None => return Ok(()),
        }
    }
    let mut pp = dev_ptr(&partials)?;
    let name = format!("dlb_reduce_final_{opname}_{tag}");
    // dlb_reduce_final_<op>_<tag>(const T*, Indexer, Rows, const void*, O*,
    // i64*): partials holds `splits` slots per run, written by the launch
    // before on the same stream.
    launch(
        gpu,
        REDUCE,
        tag,
        &name,
        Grid::Blocks(rows.min(sm * 32) as u32),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::kernels::tests::dims;

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
}
