//! A tensor's memory: a raw byte range plus whatever keeps it alive.
//!
//! dlbridge never copies on exchange, so a storage is often memory that
//! another library owns. [`Owner`] records who that is; dropping the last
//! `Arc<Storage>` releases the owner exactly once (a DLPack deleter, a NumPy
//! array reference, or dlbridge's own allocation).

mod count;
mod host;

pub use host::HostBuffer;

use crate::Device;
use crate::backend::Accelerator as _;
use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};

/// How many [`Storage`] values exist right now.
pub fn live_storages() -> isize {
    count::total()
}

/// What keeps a storage's memory valid.
pub enum Owner {
    /// Memory dlbridge allocated on the host.
    Host(HostBuffer),
    /// Memory imported through DLPack; dropping it calls the producer's deleter.
    DlPack(dlpark::AllocationDeleter),
    /// Anything else that pins the memory.
    External(Box<dyn Any + Send + Sync>),
    /// A reference released by a plain function (a NumPy array, without a
    /// box to allocate: the hottest import path).
    Retained(Retained),
    /// Device memory from dlbridge's CUDA pool.
    #[cfg(feature = "cuda")]
    Cuda(crate::cuda::CudaAllocation),
}

/// A counted reference to some object, given back by `release` when it
/// drops: `release` must accept the handle on any thread (Python's takes the
/// GIL), once.
pub struct Retained {
    handle: *mut std::ffi::c_void,
    release: unsafe fn(*mut std::ffi::c_void),
}

impl Retained {
    /// # Safety
    /// `release(handle)` must be sound exactly once, from any thread.
    pub unsafe fn new(
        handle: *mut std::ffi::c_void,
        release: unsafe fn(*mut std::ffi::c_void),
    ) -> Self {
        Retained { handle, release }
    }
}

// SAFETY: the constructor's contract: releasing from any thread is sound.
unsafe impl Send for Retained {}
// SAFETY: the handle is never read, only released once, by the owner's drop.
unsafe impl Sync for Retained {}

impl Drop for Retained {
    fn drop(&mut self) {
        // SAFETY: the constructor's contract, and drop runs once.
        unsafe { (self.release)(self.handle) }
    }
}

/// A contiguous byte range on one device.
pub struct Storage {
    ptr: *mut u8,
    len: usize,
    device: Device,
    read_only: bool,
    /// dlbridge's CUDA stream has been given work on this memory.
    device_used: AtomicBool,
    owner: Owner,
}

// SAFETY: a storage is a plain address range; the owner inside is Send + Sync
// (HostBuffer frees with the global allocator, DLPack deleters may run on any
// thread by the spec, and External requires Send + Sync). Concurrent writes to
// the bytes are the caller's business, exactly as with NumPy and PyTorch.
unsafe impl Send for Storage {}
// SAFETY: see above; shared references only read the fields.
unsafe impl Sync for Storage {}

impl Storage {
    /// Wraps memory described by `ptr..ptr+len`, kept alive by `owner`.
    ///
    /// # Safety
    /// `ptr..ptr + len` must stay valid (and writable unless `read_only`) on
    /// `device` for as long as `owner` lives.
    pub unsafe fn from_raw(
        ptr: *mut u8,
        len: usize,
        device: Device,
        read_only: bool,
        owner: Owner,
    ) -> Storage {
        count::add(1);
        Storage {
            ptr,
            len,
            device,
            read_only,
            device_used: AtomicBool::new(false),
            owner,
        }
    }

    /// A new host buffer of `len` bytes, zeroed or left uninitialised.
    pub fn new_host(len: usize, zeroed: bool) -> crate::Result<Storage> {
        let buffer = HostBuffer::new(len, zeroed)?;
        let ptr = buffer.as_ptr();
        // SAFETY: the buffer owns exactly these bytes and lives inside the storage.
        Ok(unsafe { Storage::from_raw(ptr, len, Device::CPU, false, Owner::Host(buffer)) })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn device(&self) -> Device {
        self.device
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Records that device work touching this memory was enqueued.
    pub fn mark_device_use(&self) {
        if !self.device_used.load(Ordering::Relaxed) {
            self.device_used.store(true, Ordering::Relaxed);
        }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        count::add(-1);
        // Memory another library owns goes back to it when the owner drops
        // (after this body): finish dlbridge's queued work on it first. Its
        // own pool frees in stream order and needs no wait.
        let foreign = match self.owner {
            #[cfg(feature = "cuda")]
            Owner::Cuda(_) => false,
            _ => true,
        };
        if foreign && !self.device.is_cpu() && self.device_used.load(Ordering::Relaxed) {
            crate::cuda::Cuda.before_foreign_release(self.device);
        }
    }
}
