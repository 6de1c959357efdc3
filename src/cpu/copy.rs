//! Copies between layouts and dtypes (`contiguous`, `copy_`, casts).

use super::strided::{for_each_offset, view, view_mut};
use crate::{Element, Result, Tensor, with_element};
use ndarray::Zip;

/// `src` as a tensor the typed loops can read: itself when ndarray can view
/// it, else a contiguous copy gathered byte by byte.
pub(crate) fn materialize(src: &Tensor) -> Result<Tensor> {
    // SAFETY: only probes whether a view can be built; nothing is read.
    let viewable = with_element!(src.dtype(), T => unsafe { view::<T>(src) }.is_some());
    if viewable {
        return Ok(src.clone());
    }
    let out = Tensor::empty(src.shape(), src.dtype(), src.device())?;
    copy_bytes(&out, src);
    Ok(out)
}

/// Writes `src` (broadcast to `dst`'s shape, cast to its dtype) into `dst`.
/// The caller has checked devices, shapes and that the two do not overlap.
pub(crate) fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    let src = src.broadcast_to(dst.shape())?;
    if src.dtype() == dst.dtype() && src.numel() > 0 {
        if dst.is_contiguous() && src.is_contiguous() {
            // SAFETY: both ranges hold numel elements and do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(src.data_ptr(), dst.data_ptr(), dst.nbytes()) };
            return Ok(());
        }
        // SAFETY: probe only.
        let typed = with_element!(dst.dtype(), T => unsafe { view_mut::<T>(dst).is_some() && view::<T>(&src).is_some() });
        if !typed {
            copy_bytes(dst, &src);
            return Ok(());
        }
    }
    let src = materialize(&src)?;
    // SAFETY: probe only.
    let writable = with_element!(dst.dtype(), T => unsafe { view_mut::<T>(dst).is_some() });
    if writable {
        with_element!(src.dtype(), S => with_element!(dst.dtype(), D => cast_typed::<S, D>(dst, &src)));
    } else {
        let staged = Tensor::empty(dst.shape(), dst.dtype(), dst.device())?;
        with_element!(src.dtype(), S => with_element!(dst.dtype(), D => cast_typed::<S, D>(&staged, &src)));
        copy_bytes(dst, &staged);
    }
    Ok(())
}

fn cast_typed<S: Element, D: Element>(dst: &Tensor, src: &Tensor) {
    // SAFETY: the caller checked that both views exist; dst is exclusively ours
    // for the duration and does not overlap src.
    let (mut out, input) = unsafe { (view_mut::<D>(dst).unwrap(), view::<S>(src).unwrap()) };
    if let (Some(o), Some(i)) = (out.as_slice_mut(), input.as_slice()) {
        o.iter_mut().zip(i).for_each(|(o, &x)| *o = x.cast());
        return;
    }
    Zip::from(&mut out)
        .and(&input)
        .for_each(|o, &x| *o = x.cast());
}

/// Element-by-element byte copy between two same-dtype layouts of one shape:
/// works for any alignment and any stride.
fn copy_bytes(dst: &Tensor, src: &Tensor) {
    let size = dst.dtype().size();
    let mut src_offsets = Vec::with_capacity(src.numel());
    for_each_offset(src.shape(), &src.layout().strides, |o| src_offsets.push(o));
    let (s, d) = (src.data_ptr(), dst.data_ptr());
    let mut k = 0;
    for_each_offset(dst.shape(), &dst.layout().strides, |o| {
        // SAFETY: both offsets address whole elements inside their storages.
        unsafe { std::ptr::copy(s.offset(src_offsets[k]), d.offset(o), size) };
        k += 1;
    });
}
