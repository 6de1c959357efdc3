//! The thin fallible layer over the driver API (cudarc's model: raw `sys`
//! calls, then a layer that turns status codes into errors, then safe
//! types). With `runtime.rs` it is the only place that calls the driver;
//! `tests/layering.rs` keeps it so. Every function here enqueues on
//! [`STREAM`] in the calling thread's current context, which the caller has
//! bound (`Gpu::bind`); errors name what was being done.

use crate::{Error, Result};
use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::sys;

/// The stream dlbridge enqueues all its work on: the legacy default stream.
pub const STREAM: sys::CUstream = std::ptr::null_mut();

/// A driver error as a `RuntimeError` (`ErrorKind::Driver`), naming what failed.
pub fn driver_error(e: DriverError, what: &str) -> Error {
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    crate::err!(Driver, "CUDA error: {text} ({what})")
}

/// Whether the driver library can be opened at all.
pub fn present() -> bool {
    // SAFETY: is_culib_present only tries to dlopen candidate names.
    unsafe { sys::is_culib_present() }
}

/// The CUDA major version the installed driver supports (needs no cuInit).
pub fn major_version() -> Option<i32> {
    if !present() {
        return None;
    }
    std::panic::catch_unwind(|| {
        let mut version = 0;
        // SAFETY: cuDriverGetVersion writes one int.
        let r = unsafe { sys::cuDriverGetVersion(&mut version) };
        (r == sys::CUresult::CUDA_SUCCESS).then_some(version / 1000)
    })
    .ok()
    .flatten()
}

/// An event for ordering work between streams (no timing), destroyed on drop.
pub struct Event(sys::CUevent);

// SAFETY: an event handle is a process-wide driver object usable from any thread.
unsafe impl Send for Event {}

impl Event {
    pub fn new() -> Result<Event> {
        cu::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
            .map(Event)
            .map_err(|e| driver_error(e, "creating an event"))
    }

    /// Marks everything enqueued on `stream` so far.
    ///
    /// # Safety
    /// `stream` must be a live stream of the event's context.
    pub unsafe fn record(&self, stream: sys::CUstream) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { cu::event::record(self.0, stream) }
            .map_err(|e| driver_error(e, "recording an event"))
    }

    /// Makes `stream` wait until the work this event marks is done.
    ///
    /// # Safety
    /// `stream` must be a live stream of the event's context.
    pub unsafe fn make_wait(&self, stream: sys::CUstream, what: &str) -> Result<()> {
        // SAFETY: the caller's contract. Destroying an event that a stream
        // waits on is allowed: the wait holds.
        unsafe {
            cu::stream::wait_event(
                stream,
                self.0,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .map_err(|e| driver_error(e, what))
    }

    /// Blocks the calling thread until the marked work is done.
    pub fn synchronize(&self, what: &str) -> Result<()> {
        // SAFETY: the event is live (owned by self).
        unsafe { cu::event::synchronize(self.0) }.map_err(|e| driver_error(e, what))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the event came from `Event::new` and is destroyed once.
        unsafe {
            let _ = cu::event::destroy(self.0);
        }
    }
}

/// `bytes` of page-locked host memory, which the GPU can DMA directly.
/// Never freed: dlbridge keeps its staging buffers for the process's life.
pub fn alloc_pinned(bytes: usize) -> Result<*mut u8> {
    // SAFETY: the caller has a context current (`Gpu::bind`).
    unsafe { cu::malloc_host(bytes, 0) }
        .map(|p| p.cast())
        .map_err(|e| driver_error(e, "allocating pinned staging memory"))
}

/// Waits for everything enqueued on [`STREAM`] in the current context.
pub fn synchronize(what: &str) -> Result<()> {
    // SAFETY: STREAM (the legacy default stream) always exists.
    unsafe { cu::stream::synchronize(STREAM) }.map_err(|e| driver_error(e, what))
}

/// Enqueues a host-to-device copy of `src` to `dst`.
///
/// # Safety
/// `dst` holds `src.len()` bytes on the current device, and `src` stays
/// unchanged until the copy has run (pageable memory is read at once; pinned
/// memory later, in stream order).
pub unsafe fn copy_to_device(dst: sys::CUdeviceptr, src: &[u8]) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { cu::memcpy_htod_async(dst, src, STREAM) }
        .map_err(|e| driver_error(e, "copying host to device"))
}

/// Enqueues a device-to-host copy from `src` into `dst`.
///
/// # Safety
/// `src` holds `dst.len()` bytes on the current device, and `dst` is not
/// read or written until the copy has run.
pub unsafe fn copy_to_host(dst: &mut [u8], src: sys::CUdeviceptr) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { cu::memcpy_dtoh_async(dst, src, STREAM) }
        .map_err(|e| driver_error(e, "copying device to host"))
}

/// Enqueues a copy of `bytes` between two ranges of the current device.
///
/// # Safety
/// Both ranges hold `bytes` bytes on the current device and do not overlap.
pub unsafe fn copy_on_device(
    dst: sys::CUdeviceptr,
    src: sys::CUdeviceptr,
    bytes: usize,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { cu::memcpy_dtod_async(dst, src, bytes, STREAM) }
        .map_err(|e| driver_error(e, "copying device to device"))
}

/// Enqueues a copy of `bytes` from one device's context to another's.
///
/// # Safety
/// Both ranges hold `bytes` bytes in their (live, primary) contexts.
pub unsafe fn copy_between_devices(
    dst_ctx: sys::CUcontext,
    dst: sys::CUdeviceptr,
    src_ctx: sys::CUcontext,
    src: sys::CUdeviceptr,
    bytes: usize,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { cu::memcpy_peer_async(dst_ctx, dst, src_ctx, src, bytes, STREAM) }
        .map_err(|e| driver_error(e, "copying between devices"))
}

/// Enqueues setting `bytes` bytes at `dst` to `value`.
///
/// # Safety
/// `dst` holds `bytes` bytes on the current device.
pub unsafe fn set_bytes(dst: sys::CUdeviceptr, value: u8, bytes: usize) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { cu::memset_d8_async(dst, value, bytes, STREAM) }
        .map_err(|e| driver_error(e, "zeroing new memory"))
}
