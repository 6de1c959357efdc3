//! Device memory that dlbridge owns.

use super::driver;
use super::runtime::{Gpu, gpu_of};
use crate::storage::{Owner, Storage};
use crate::{Device, Result};
use cudarc::driver::sys;

/// An allocation from dlbridge's stream-ordered pool. Dropping it (when the
/// last tensor, export or capsule using it goes) frees it exactly once,
/// ordered after all work already enqueued on dlbridge's stream.
pub struct CudaAllocation {
    ptr: sys::CUdeviceptr,
    gpu: &'static Gpu,
}

impl Drop for CudaAllocation {
    fn drop(&mut self) {
        self.gpu.free(self.ptr);
    }
}

/// A new storage of `bytes` on `device`, zeroed (asynchronously) or not.
pub fn new_storage(device: Device, bytes: usize, zeroed: bool) -> Result<Storage> {
    let gpu = gpu_of(device)?;
    let ptr = gpu.alloc(bytes)?;
    let allocation = CudaAllocation { ptr, gpu };
    if zeroed && bytes > 0 {
        let _ctx = gpu.bind()?;
        // SAFETY: ptr holds at least `bytes` bytes; the context is current.
        unsafe { driver::set_bytes(ptr, 0, bytes) }?;
    }
    // SAFETY: the allocation owns ptr..ptr+bytes on this device until dropped,
    // and is moved into the storage.
    Ok(unsafe {
        Storage::from_raw(
            ptr as *mut u8,
            bytes,
            gpu.device(),
            false,
            Owner::Cuda(allocation),
        )
    })
}
