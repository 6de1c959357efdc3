//! Copies between host and device, and between devices.
//!
//! Ordinary (pageable) host memory cannot be DMA'd directly. Large copies go
//! through a ring of pinned staging buffers: while the GPU moves one chunk,
//! the CPU (several threads, via rayon) fills or drains the next, so the link
//! runs as fast as the host can copy memory. Small copies use the driver's
//! own path. Page-locking the user's pages for each copy instead, so the GPU
//! reads them in place, measured slower on an H100 (docs/benchmarks.md).

use super::driver::{self, Event, STREAM};
use super::runtime::Gpu;
use crate::Result;
use cudarc::driver::sys;
use rayon::prelude::*;
use std::sync::OnceLock;

/// Bytes per staging buffer, and how many buffers rotate.
const CHUNK: usize = 8 << 20;
const BUFFERS: usize = 4;
/// Below this, the driver's pageable copy is as fast and has no set-up.
const DIRECT_BELOW: usize = 1 << 20;
/// Pieces of a chunk the CPU copies in parallel.
const PIECE: usize = 512 << 10;

/// Whether the ring's CPU side stores non-temporally (whole lines, none read
/// first) into memory that is already resident: the pinned buffers, an
/// existing host array. On the H100 machine that gave host-to-device copies
/// a third more bandwidth. Fresh host outputs (`t.cpu()`) always take
/// ordinary stores: the kernel has just zeroed their pages through the cache,
/// where those land, and non-temporal ones measured 5-10% slower there.
/// `DLBRIDGE_CUDA_PAGEABLE=staged` (read once) makes every store ordinary,
/// to measure one against the other.
fn streaming_stores() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("DLBRIDGE_CUDA_PAGEABLE").as_deref() != Ok("staged"))
}

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
fn parallel_copy(dst: &mut [u8], src: &[u8], streams: bool) {
    let piece = |d: &mut [u8], s: &[u8]| {
        if streams {
            stream_copy(d, s)
        } else {
            d.copy_from_slice(s)
        }
    };
    if dst.len() < 2 * PIECE {
        piece(dst, src);
        return;
    }
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| piece(d, s));
}

/// `dst.copy_from_slice(src)` with non-temporal stores: the destination's
/// lines are written whole, not read first, and do not evict the source
/// from the cache. Ends with a store fence, so another agent (the DMA
/// engine, another thread) sees every byte once this returns.
fn stream_copy(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "stream_copy of unequal lengths");
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        const LINE: usize = 64;
        let head = dst.as_ptr().align_offset(16).min(dst.len());
        let lines = (dst.len() - head) / LINE;
        let body = head + lines * LINE;
        dst[..head].copy_from_slice(&src[..head]);
        // SAFETY: dst[head..body] and src[head..body] are in bounds (body <=
        // len); dst + head is 16-byte aligned, as _mm_stream_si128 needs;
        // loads are unaligned; SSE2 is part of x86_64.
        unsafe {
            let d = dst.as_mut_ptr().add(head).cast::<__m128i>();
            let s = src.as_ptr().add(head).cast::<__m128i>();
            for i in 0..lines * (LINE / 16) {
                _mm_stream_si128(d.add(i), _mm_loadu_si128(s.add(i)));
            }
            _mm_sfence();
        }
        dst[body..].copy_from_slice(&src[body..]);
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    dst.copy_from_slice(src);
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
    let streams = streaming_stores();
    with_staging(gpu, |staging| {
        for (i, chunk) in src.chunks(CHUNK).enumerate() {
            let buf = &mut staging.buffers[i % BUFFERS];
            Staging::wait(buf)?;
            // SAFETY: buf.ptr holds CHUNK bytes and no DMA is using it (waited above).
            let pinned = unsafe { std::slice::from_raw_parts_mut(buf.ptr, chunk.len()) };
            parallel_copy(pinned, chunk, streams);
            // SAFETY: pinned stays untouched until the event recorded next has fired.
            unsafe { driver::copy_to_device(dst + (i * CHUNK) as u64, pinned) }?;
            Staging::record(buf)?;
        }
        Ok(())
    })
}

/// Copies device bytes at `src` into host memory; complete on return.
/// `fresh`: `dst` was just allocated and never written (its pages not yet
/// faulted in).
pub fn device_to_host(gpu: &Gpu, dst: &mut [u8], src: sys::CUdeviceptr, fresh: bool) -> Result<()> {
    let _ctx = gpu.bind()?;
    if dst.len() < DIRECT_BELOW {
        // SAFETY: src holds dst.len() bytes; the sync makes the copy complete
        // before dst is touched.
        unsafe { driver::copy_to_host(dst, src) }?;
        return driver::synchronize("copying device to host");
    }
    let streams = !fresh && streaming_stores();
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
            parallel_copy(&mut dst[lo..hi], pinned, streams);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn a_streamed_copy_matches_memcpy_at_every_alignment_and_tail() {
        let src = pattern(300);
        for dst_off in 0..17 {
            for src_off in [0, 1, 5, 16] {
                for len in (0..200).chain([255, 256, 257]) {
                    if src_off + len > src.len() {
                        continue;
                    }
                    let mut dst = vec![0xAAu8; dst_off + len + 8];
                    stream_copy(
                        &mut dst[dst_off..dst_off + len],
                        &src[src_off..src_off + len],
                    );
                    assert_eq!(&dst[dst_off..dst_off + len], &src[src_off..src_off + len]);
                    assert!(
                        dst[..dst_off].iter().all(|&b| b == 0xAA),
                        "wrote before the range"
                    );
                    assert!(
                        dst[dst_off + len..].iter().all(|&b| b == 0xAA),
                        "wrote past the range"
                    );
                }
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "megabytes: too slow under Miri")]
    fn the_ring_copies_large_buffers_whole_either_way() {
        let src = pattern(3 * PIECE + 12_345);
        for streams in [false, true] {
            let mut dst = vec![0u8; src.len() + 3];
            parallel_copy(&mut dst[3..], &src, streams);
            assert_eq!(&dst[3..], &src[..]);
            assert_eq!(&dst[..3], &[0, 0, 0]);
        }
    }
}
