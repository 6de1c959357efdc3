//! Ordering dlbridge's work before a DLPack consumer's, per the spec's
//! `stream` argument: the consumer's stream waits on an event recorded on
//! dlbridge's stream, so nothing else on the device is held up.

use super::driver::{Event, STREAM};
use super::runtime::gpu_of;
use crate::{Device, Result};
use cudarc::driver::sys;

/// The DLPack `stream` values a CUDA producer accepts: `None` (meaning 1),
/// 1 (legacy default stream), 2 (per-thread default stream), -1 (no
/// synchronisation) or a `cudaStream_t` (> 2). 0 is ambiguous and refused.
pub fn check_stream(stream: i64) -> Result<()> {
    match stream {
        -1 | 1 | 2 => Ok(()),
        s if s > 2 => Ok(()),
        0 => Err(crate::err!(
            InvalidValue,
            "stream=0 is ambiguous for CUDA and not allowed by the DLPack protocol; use 1 for the legacy \
             default stream, 2 for the per-thread default stream, or -1 for no synchronization"
        )),
        s => Err(crate::err!(
            InvalidValue,
            "invalid stream {s} for a CUDA tensor: expected None, -1, 1, 2 or a cudaStream_t"
        )),
    }
}

/// Makes the consumer's `stream` wait for everything dlbridge has enqueued
/// on `device` so far.
pub fn order_before_consumer(device: Device, stream: i64) -> Result<()> {
    check_stream(stream)?;
    // -1: the consumer synchronises itself. 1: the consumer uses the legacy
    // default stream, which is dlbridge's own, so order already holds.
    if stream == -1 || stream == 1 {
        return Ok(());
    }
    chain(
        device,
        STREAM,
        stream as usize as sys::CUstream,
        "making the consumer's stream wait for dlbridge's work",
    )
}

/// Makes dlbridge's stream wait for everything enqueued so far on a
/// producer's `stream` (a `cudaStream_t`; NULL or 1 is the legacy default
/// stream, dlbridge's own, so nothing is needed).
pub fn wait_for_producer(device: Device, stream: i64) -> Result<()> {
    if stream == 0 || stream == 1 {
        return Ok(());
    }
    chain(
        device,
        stream as usize as sys::CUstream,
        STREAM,
        "waiting for the producer's stream",
    )
}

/// Makes `later` wait for everything enqueued on `earlier` so far, with an
/// event: no device-wide synchronisation. Both belong to `device`'s primary
/// context (a foreign stream is its owner's promise, as the protocol says).
fn chain(device: Device, earlier: sys::CUstream, later: sys::CUstream, what: &str) -> Result<()> {
    let gpu = gpu_of(device)?;
    let _ctx = gpu.bind()?;
    let event = Event::new()?;
    // SAFETY: the event and both streams belong to this device's primary context.
    unsafe {
        event.record(earlier)?;
        event.make_wait(later, what)
    }
}
