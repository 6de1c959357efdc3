//! A tensor's memory: a raw byte range plus whatever keeps it alive.
//!
//! dlbridge never copies on exchange, so a storage is often memory that
//! another library owns. [`Owner`] records who that is; dropping the last
//! `Arc<Storage>` releases the owner exactly once (a DLPack deleter, a NumPy
//! array reference, or dlbridge's own allocation).
//!
//! A host storage can move into shared memory in place
//! ([`Storage::share_memory`], PyTorch's `share_memory_`): its address
//! changes under every view of it, and its previous memory stays alive until
//! the storage drops, since exports and NumPy arrays made earlier still
//! point there.
//!
//! A tensor's storage is shared by its clones and views:
//!
//! ```
//! use dlbridge::Tensor;
//! use std::sync::Arc;
//! let t = Tensor::from_vec(vec![0f32; 4], &[4])?;
//! let s = t.storage();
//! assert_eq!((s.len(), s.is_read_only(), s.is_exclusive()), (16, false, true));
//! let view = t.reshape(&[2, 2])?;
//! assert!(Arc::ptr_eq(view.storage(), t.storage()));
//! # Ok::<(), dlbridge::Error>(())
//! ```

mod count;
mod host;
mod shared;

pub use host::HostBuffer;
pub use shared::SharedSegment;

use crate::Device;
use std::any::Any;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, OnceLock};

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
    /// Device memory a backend of dlbridge allocated (the CUDA pool's
    /// `CudaAllocation`): its drop frees it in the order of the backend's
    /// own queue, so no wait comes first.
    Device(Box<dyn Any + Send + Sync>),
    /// A shared-memory segment mapped here (a tensor from another process).
    Shared(SharedSegment),
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

/// A device backend's queue of work, as storages see it: the backend that
/// queues work on a storage's memory says so with
/// [`Storage::mark_device_use`], and is asked to finish it before memory
/// another library owns goes back to that library.
pub trait DeviceQueue: Sync {
    /// Waits until the work queued on `device` has finished: memory another
    /// library owns is about to go back to it, which may reuse it at once
    /// on another stream.
    fn finish(&self, device: Device);
}

/// A contiguous byte range on one device.
pub struct Storage {
    /// The first byte. It changes at most once, when the storage moves into
    /// shared memory; read with a relaxed load (see [`Storage::as_ptr`]).
    ptr: AtomicPtr<u8>,
    len: usize,
    device: Device,
    read_only: bool,
    /// Reachable only through this storage, as far as dlbridge knows (see
    /// [`Storage::is_exclusive`]).
    exclusive: bool,
    /// The device queue that has been given work on this memory, if any.
    device_used: OnceLock<&'static dyn DeviceQueue>,
    /// What keeps the original memory alive, until the storage drops (also
    /// after a move into shared memory: earlier exports may point there).
    owner: Owner,
    /// The shared segment the bytes moved to, once they have (a leaked
    /// `Box`, null until then; freed in Drop). Not a `OnceLock<Box<_>>`:
    /// that one's drop cost `from_numpy` about 8 ns more per storage.
    moved: AtomicPtr<SharedSegment>,
}

// The owner inside is Send + Sync: HostBuffer frees with the global
// allocator, DLPack deleters may run on any thread by the spec, External
// and Device require Send + Sync, segments unmap from any thread.
// SAFETY: a storage is a plain address range, its owner Send + Sync (above).
// Concurrent writes to the bytes are the caller's business, as with NumPy.
unsafe impl Send for Storage {}
// SAFETY: see above; shared references only read the fields.
unsafe impl Sync for Storage {}

impl Storage {
    /// Wraps memory described by `ptr..ptr+len`, kept alive by `owner`.
    ///
    /// # Safety
    /// `ptr..ptr + len` must stay valid (and writable unless `read_only`) on
    /// `device` for as long as `owner` lives.
    ///
    /// ```
    /// use dlbridge::{DType, Device, Layout, Tensor, storage::{Owner, Storage}};
    /// use std::sync::Arc;
    /// let mut bytes = vec![1u8, 2, 3, 4];
    /// let (ptr, len) = (bytes.as_mut_ptr(), bytes.len());
    /// // SAFETY: the Vec's buffer lives in the owner, as long as the storage.
    /// let s = unsafe { Storage::from_raw(ptr, len, Device::CPU, false, Owner::External(Box::new(bytes))) };
    /// let t = Tensor::from_parts(Arc::new(s), Layout::contiguous(vec![2], 2), DType::U16)?;
    /// assert_eq!(t.to_vec::<u16>()?, vec![u16::from_ne_bytes([1, 2]), u16::from_ne_bytes([3, 4])]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub unsafe fn from_raw(
        ptr: *mut u8,
        len: usize,
        device: Device,
        read_only: bool,
        owner: Owner,
    ) -> Storage {
        count::add(1);
        Storage {
            ptr: AtomicPtr::new(ptr),
            len,
            device,
            read_only,
            exclusive: false,
            device_used: OnceLock::new(),
            owner,
            moved: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// A host storage over a mapped shared-memory segment.
    pub fn from_shared(segment: SharedSegment, read_only: bool) -> Storage {
        let (ptr, len) = (segment.as_ptr(), segment.len());
        // SAFETY: the segment's mapping holds len bytes (writable unless it
        // was opened read-only, when `read_only` is set) until it drops.
        unsafe { Storage::from_raw(ptr, len, Device::CPU, read_only, Owner::Shared(segment)) }
    }

    /// A new host buffer of `len` bytes, zeroed or left uninitialised.
    ///
    /// ```
    /// use dlbridge::storage::Storage;
    /// let s = Storage::new_host(100, true)?;
    /// assert_eq!((s.len(), s.as_ptr() as usize % 64), (100, 0));
    /// assert!(s.is_exclusive());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn new_host(len: usize, zeroed: bool) -> crate::Result<Storage> {
        let buffer = HostBuffer::new(len, zeroed)?;
        let ptr = buffer.as_ptr();
        // SAFETY: the buffer owns exactly these bytes and lives inside the storage.
        let mut storage =
            unsafe { Storage::from_raw(ptr, len, Device::CPU, false, Owner::Host(buffer)) };
        // SAFETY: fresh memory, which nothing but this storage can reach.
        unsafe { storage.assume_exclusive() };
        Ok(storage)
    }

    /// The first byte. A relaxed load, as cheap as a plain field read: the
    /// only store ([`share_memory`](Self::share_memory)) happens with the
    /// GIL held in Python, whose hand-over orders it before any other
    /// thread's next use; a thread that still sees the old address reads
    /// memory that stays valid until the storage drops.
    #[inline]
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.load(Ordering::Relaxed)
    }

    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the storage has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device the bytes are on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Whether the bytes may not be written (a READ_ONLY import, a non-writeable NumPy array).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether, as far as dlbridge knows, the bytes are reachable only
    /// through this storage: memory dlbridge allocated on the host, a Rust
    /// `Vec` given to it ([`Tensor::from_vec`](crate::Tensor::from_vec)), a
    /// DLPack import through the unsafe Rust API (whose contract says so).
    /// Not memory that another library also holds (a NumPy array, a tensor
    /// imported from Python, C memory), nor bytes moved into shared memory,
    /// which other processes map. Typed access
    /// ([`Tensor::as_slice`](crate::Tensor::as_slice)) needs it.
    pub fn is_exclusive(&self) -> bool {
        self.exclusive && self.shared_segment().is_none()
    }

    /// Declares that the bytes are reachable only through this storage.
    ///
    /// # Safety
    /// While this storage lives, nothing but it reads or writes the bytes
    /// (a library that also holds them, another import of the same memory)
    /// while Rust references made by typed access are alive.
    pub unsafe fn assume_exclusive(&mut self) {
        self.exclusive = true;
    }

    /// What keeps the storage's original memory alive.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The shared-memory segment this storage's bytes are in, if they are:
    /// a received one, or where [`share_memory`](Self::share_memory) moved them.
    pub fn shared_segment(&self) -> Option<&SharedSegment> {
        match &self.owner {
            Owner::Shared(segment) => Some(segment),
            // SAFETY: non-null only once it points at a segment that lives
            // until the storage drops (set once, in share_memory).
            _ => unsafe { self.moved.load(Ordering::Acquire).as_ref() },
        }
    }

    /// Moves a host storage's bytes into a new shared-memory segment, in
    /// place (PyTorch's `share_memory_`): one copy, after which every view
    /// of this storage, old and new, reads and writes the segment. A no-op
    /// when already shared, and for device memory (PyTorch's rule: CUDA
    /// memory is shared through IPC handles instead).
    ///
    /// The previous memory is not freed: DLPack exports, NumPy arrays and C
    /// views made before the move still point into it (they keep seeing the
    /// bytes as they were, and their writes no longer reach this storage),
    /// so it stays alive until the storage drops. That is the cost: until
    /// then the bytes are held twice. Writes made by other threads while the
    /// copy runs may be lost, as in PyTorch.
    pub fn share_memory(&self) -> crate::Result<()> {
        if !self.device.is_cpu() || self.shared_segment().is_some() {
            return Ok(());
        }
        // One move at a time: a second caller finds the move done.
        static MOVING: Mutex<()> = Mutex::new(());
        let _one = MOVING.lock().unwrap_or_else(|e| e.into_inner());
        if self.shared_segment().is_some() {
            return Ok(());
        }
        let segment = SharedSegment::new(self.len)?;
        let old = self.as_ptr();
        // (An empty storage's pointer may be NULL: nothing to copy then.)
        if self.len > 0 {
            // SAFETY: the storage's current memory holds len readable bytes
            // for as long as the storage lives; the segment is fresh memory of
            // len bytes that nothing else can see yet.
            unsafe { std::ptr::copy_nonoverlapping(old, segment.as_ptr(), self.len) };
        }
        let new = segment.as_ptr();
        self.moved
            .store(Box::into_raw(Box::new(segment)), Ordering::Release);
        self.ptr.store(new, Ordering::Release);
        Ok(())
    }

    /// Records that `queue` was given device work touching this memory.
    pub fn mark_device_use(&self, queue: &'static dyn DeviceQueue) {
        if self.device_used.get().is_none() {
            let _ = self.device_used.set(queue);
        }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        count::add(-1);
        // Memory another library owns goes back to it when the owner drops
        // (after this body): finish dlbridge's queued work on it first. Its
        // own pool frees in stream order and needs no wait.
        if let Some(queue) = self.device_used.get()
            && !matches!(self.owner, Owner::Device(_))
            && !self.device.is_cpu()
        {
            queue.finish(self.device);
        }
        let moved = *self.moved.get_mut();
        if !moved.is_null() {
            // SAFETY: made by Box::into_raw in share_memory, freed only here.
            drop(unsafe { Box::from_raw(moved) });
        }
    }
}

#[cfg(all(test, not(miri)))] // Miri has no memfd_create or shared mappings
mod tests {
    use super::*;

    #[test]
    fn share_memory_moves_the_bytes_and_keeps_the_old_ones() {
        let s = Storage::new_host(4096, true).unwrap();
        let old = s.as_ptr();
        // SAFETY: the storage holds 4096 bytes.
        unsafe { std::slice::from_raw_parts_mut(old, 4096) }.fill(3);
        assert!(s.shared_segment().is_none());
        s.share_memory().unwrap();
        let new = s.as_ptr();
        assert_ne!(new, old);
        let segment = s.shared_segment().unwrap();
        assert_eq!((segment.as_ptr(), segment.len()), (new, 4096));
        // SAFETY: both ranges stay valid while the storage lives.
        unsafe {
            assert!(
                std::slice::from_raw_parts(new, 4096)
                    .iter()
                    .all(|&x| x == 3)
            );
            *new = 5;
            assert_eq!(*old, 3, "the old bytes stay as they were, and alive");
        }
        // Another mapping of the segment sees the storage's writes.
        let other = SharedSegment::open(segment.fd(), 4096, false).unwrap();
        // SAFETY: the mapping holds 4096 bytes.
        assert_eq!(unsafe { *other.as_ptr() }, 5);
        s.share_memory().unwrap();
        assert_eq!(s.as_ptr(), new, "a second move is a no-op");
    }

    #[test]
    fn a_received_segment_is_shared_and_keeps_read_only() {
        let segment = SharedSegment::new(8).unwrap();
        let back = SharedSegment::open(segment.fd(), 8, true).unwrap();
        let s = Storage::from_shared(back, true);
        assert!(s.is_read_only() && s.shared_segment().is_some());
        let before = s.as_ptr();
        s.share_memory().unwrap();
        assert_eq!(s.as_ptr(), before);
        let empty = Storage::new_host(0, false).unwrap();
        empty.share_memory().unwrap();
        assert_eq!(empty.shared_segment().unwrap().len(), 0);
    }
}
