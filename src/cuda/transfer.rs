//! Copies between host and device, and between devices.
//!
//! Ordinary (pageable) host memory cannot be DMA'd directly. Large copies go
//! through a ring of pinned staging buffers: while the GPU moves one chunk,
//! the CPU (several threads, via rayon) fills or drains the next, so the link
//! runs near its pinned bandwidth. Small copies use the driver's own path.

use super::driver::{self, Event, STREAM};
use super::runtime::Gpu;
use crate::Result;
use cudarc::driver::sys;
use rayon::prelude::*;

/// Bytes per staging buffer, and how many buffers rotate.
const CHUNK: usize = 8 << 20;
const BUFFERS: usize = 4;
/// Below this, the driver's pageable copy is as fast and has no set-up.
const DIRECT_BELOW: usize = 1 << 20;
/// Pieces of a chunk the CPU copies in parallel.
const PIECE: usize = 512 << 10;

struct Pinned {
    ptr: *mut u8,
    event: Event,
    /// A DMA using this buffer has been enqueued since its event was last waited on.
    busy: bool,
}

/// A device's staging ring, created on first large transfer and kept.
pub struct Staging {
    buffers: Vec<Pinned>,
}

// SAFETY: the buffers are plain pinned host memory; the ring is only used
// behind its device's mutex.
unsafe impl Send for Staging {}

impl Staging {
    fn new(gpu: &Gpu) -> Result<Staging> {
        let _ctx = gpu.bind()?;
        let mut buffers = Vec::with_capacity(BUFFERS);
        for _ in 0..BUFFERS {
            // Not write-combined: the CPU reads these back after device-to-host copies.
            buffers.push(Pinned {
                ptr: driver::alloc_pinned(CHUNK)?,
                event: Event::new()?,
                busy: false,
            });
        }
        Ok(Staging { buffers })
    }

    fn wait(buf: &mut Pinned) -> Result<()> {
        if buf.busy {
            buf.event.synchronize("waiting for a staged copy")?;
            buf.busy = false;
        }
        Ok(())
    }

    fn record(buf: &mut Pinned) -> Result<()> {
        // SAFETY: STREAM belongs to the current context, as the event does.
        unsafe { buf.event.record(STREAM) }?;
        buf.busy = true;
        Ok(())
    }
}

/// memcpy with several threads: one thread cannot keep up with a PCIe 5 link.
fn parallel_copy(dst: &mut [u8], src: &[u8]) {
    if dst.len() < 2 * PIECE {
        dst.copy_from_slice(src);
        return;
    }
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

fn with_staging<T>(gpu: &Gpu, f: impl FnOnce(&mut Staging) -> Result<T>) -> Result<T> {
    let mut guard = gpu.staging.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_none() {
        *guard = Some(Staging::new(gpu)?);
    }
    f(guard.as_mut().expect("just created"))
}

/// Copies host bytes to device memory at `dst`. On return `src` may be
/// reused; the copy itself completes in stream order.
pub fn host_to_device(gpu: &Gpu, dst: sys::CUdeviceptr, src: &[u8]) -> Result<()> {
    let _ctx = gpu.bind()?;
    if src.len() < DIRECT_BELOW {
        // Waits for the copy: src may be pinned memory (a CUDAHost import),
        // which the driver would read later, after the caller moved on.
        // SAFETY: dst holds src.len() bytes on this device; the sync below
        // finishes the copy before src is released.
        unsafe { driver::copy_to_device(dst, src) }?;
        return driver::synchronize("copying host to device");
    }
    with_staging(gpu, |staging| {
        for (i, chunk) in src.chunks(CHUNK).enumerate() {
            let buf = &mut staging.buffers[i % BUFFERS];
            Staging::wait(buf)?;
            // SAFETY: buf.ptr holds CHUNK bytes and no DMA is using it (waited above).
            let pinned = unsafe { std::slice::from_raw_parts_mut(buf.ptr, chunk.len()) };
            parallel_copy(pinned, chunk);
            // SAFETY: pinned stays untouched until the event recorded next has fired.
            unsafe { driver::copy_to_device(dst + (i * CHUNK) as u64, pinned) }?;
            Staging::record(buf)?;
        }
        Ok(())
    })
}

/// Copies device bytes at `src` into host memory; complete on return.
pub fn device_to_host(gpu: &Gpu, dst: &mut [u8], src: sys::CUdeviceptr) -> Result<()> {
    let _ctx = gpu.bind()?;
    if dst.len() < DIRECT_BELOW {
        // SAFETY: src holds dst.len() bytes; the sync makes the copy complete
        // before dst is touched.
        unsafe { driver::copy_to_host(dst, src) }?;
        return driver::synchronize("copying device to host");
    }
    with_staging(gpu, |staging| {
        let total = dst.len();
        let chunks = total.div_ceil(CHUNK);
        let span = |i: usize| (i * CHUNK, ((i + 1) * CHUNK).min(total));
        let issue = |staging: &mut Staging, i: usize| -> Result<()> {
            let (lo, hi) = span(i);
            let buf = &mut staging.buffers[i % BUFFERS];
            Staging::wait(buf)?;
            // SAFETY: buf.ptr holds CHUNK >= hi - lo bytes and is idle (waited
            // above); it is read only after the event recorded next has fired.
            unsafe {
                let pinned = std::slice::from_raw_parts_mut(buf.ptr, hi - lo);
                driver::copy_to_host(pinned, src + lo as u64)?;
            }
            Staging::record(buf)
        };
        for i in 0..chunks.min(BUFFERS) {
            issue(staging, i)?;
        }
        for i in 0..chunks {
            let (lo, hi) = span(i);
            let buf = &mut staging.buffers[i % BUFFERS];
            Staging::wait(buf)?;
            // SAFETY: the DMA into buf has completed (waited above).
            let pinned = unsafe { std::slice::from_raw_parts(buf.ptr, hi - lo) };
            parallel_copy(&mut dst[lo..hi], pinned);
            if i + BUFFERS < chunks {
                issue(staging, i + BUFFERS)?;
            }
        }
        Ok(())
    })
}

/// Copies `bytes` between two devices (or within one).
pub fn device_to_device(
    dst_gpu: &Gpu,
    dst: sys::CUdeviceptr,
    src_gpu: &Gpu,
    src: sys::CUdeviceptr,
    bytes: usize,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    if std::ptr::eq(dst_gpu, src_gpu) {
        let _ctx = dst_gpu.bind()?;
        // SAFETY: both ranges hold `bytes` bytes on this device (distinct allocations).
        return unsafe { driver::copy_on_device(dst, src, bytes) };
    }
    // Different devices have different legacy streams: finish the
    // destination's pending work (its allocation), copy on the source's
    // stream, and finish that, so both sides see a completed copy.
    dst_gpu.synchronize()?;
    let _ctx = src_gpu.bind()?;
    // SAFETY: both ranges hold `bytes` bytes on their devices; both contexts are primary and live.
    unsafe {
        driver::copy_between_devices(
            dst_gpu.context().cu_ctx(),
            dst,
            src_gpu.context().cu_ctx(),
            src,
            bytes,
        )
    }?;
    src_gpu.synchronize()
}
