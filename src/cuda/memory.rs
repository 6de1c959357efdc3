//! Device memory that dlbridge owns, and memory of dlbridge's pool opened by
//! another process (CUDA IPC).

use super::driver;
use super::runtime::{Gpu, gpu_of, gpu_with_uuid};
use crate::backend::CudaIpcHandle;
use crate::storage::{Owner, Storage};
use crate::{Device, Result, err};
use cudarc::driver::sys;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// An allocation from dlbridge's stream-ordered pool, or one of another
/// process's opened here. Dropping it (when the last tensor, export or
/// capsule using it goes) frees it exactly once: an own allocation ordered
/// after all work already enqueued on dlbridge's stream, an opened one after
/// that work has finished.
pub struct CudaAllocation {
    ptr: sys::CUdeviceptr,
    gpu: &'static Gpu,
    /// Opened from another process's pool (and so not exportable again).
    imported: bool,
}

impl Drop for CudaAllocation {
    fn drop(&mut self) {
        if self.imported {
            self.gpu.free_imported(self.ptr);
        } else {
            self.gpu.free(self.ptr);
        }
    }
}

/// A new storage of `bytes` on `device`, zeroed (asynchronously) or not.
pub fn new_storage(device: Device, bytes: usize, zeroed: bool) -> Result<Storage> {
    let gpu = gpu_of(device)?;
    let ptr = gpu.alloc(bytes)?;
    let allocation = CudaAllocation {
        ptr,
        gpu,
        imported: false,
    };
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
            Owner::Device(Box::new(allocation)),
        )
    })
}

/// Storages exported in this process, by device and address, so that a
/// handle opened in the process that made it finds the storage itself (the
/// driver opens no pool in its own process).
static EXPORTED: Mutex<Option<Exported>> = Mutex::new(None);

/// Exported storages by (device ordinal, address).
type Exported = HashMap<(u32, u64), Weak<Storage>>;

/// Storages imported into this process, by the exporter's pool id and the
/// allocation's address there: the same allocation received twice (sent
/// twice, or two views of one storage) maps to one storage, as PyTorch's
/// receiving side does, rather than importing a pointer the driver may hand
/// back again, which the first storage to drop would free under the other.
static IMPORTED: Mutex<Option<Imported>> = Mutex::new(None);

/// Imported storages by (exporting pool id, address in the exporter).
type Imported = HashMap<([u8; 16], u64), Weak<Storage>>;

/// What another process needs to open `storage` (dlbridge's pool memory
/// only). dlbridge's queued work on the device is finished first, so the
/// receiver may read at once.
pub fn export_ipc(storage: &Arc<Storage>) -> Result<CudaIpcHandle> {
    let own = match storage.owner() {
        Owner::Device(a) => a.downcast_ref::<CudaAllocation>(),
        _ => None,
    };
    let allocation = match own {
        Some(a) if !a.imported => a,
        Some(_) => {
            return Err(err!(
                InvalidOperation,
                "cannot send this CUDA tensor to another process: it was itself received from one \
                 (CUDA IPC opens memory once, in the process that allocated it); send t.clone() instead"
            ));
        }
        None => {
            return Err(err!(
                InvalidOperation,
                "cannot send this CUDA tensor to another process: its memory belongs to another \
                 library (it came in through from_dlpack), and only memory from dlbridge's own pool \
                 can be shared through CUDA IPC; send t.clone() instead (a copy in dlbridge's pool)"
            ));
        }
    };
    let gpu = allocation.gpu;
    let pool = gpu.pool_export()?;
    gpu.synchronize()?;
    let pointer = gpu.export_pointer(allocation.ptr)?;
    let mut exported = EXPORTED.lock().unwrap_or_else(|e| e.into_inner());
    let exported = exported.get_or_insert_with(HashMap::new);
    if exported.len() >= 64 {
        exported.retain(|_, storage| storage.strong_count() > 0);
    }
    exported.insert((gpu.ordinal, allocation.ptr), Arc::downgrade(storage));
    Ok(CudaIpcHandle {
        pool_fd: pool.fd(),
        pool_id: pool.id,
        device: gpu.ordinal,
        uuid: gpu.uuid()?,
        pointer,
        address: allocation.ptr,
        len: storage.len(),
    })
}

/// The storage a handle from [`export_ipc`] describes: opened from the
/// exporting process's pool, or, in that process itself, the storage it
/// was made from (which must still be alive).
pub fn import_ipc(handle: &CudaIpcHandle, read_only: bool) -> Result<Arc<Storage>> {
    let gpu = gpu_with_uuid(handle.uuid, handle.device)?;
    if gpu.exported_pool_id() == Some(handle.pool_id) {
        let exported = EXPORTED.lock().unwrap_or_else(|e| e.into_inner());
        return exported
            .as_ref()
            .and_then(|m| m.get(&(gpu.ordinal, handle.address)))
            .and_then(Weak::upgrade)
            .filter(|s| s.len() == handle.len)
            .ok_or_else(|| {
                err!(
                    InvalidTensor,
                    "invalid CUDA IPC handle: it names memory of this process that is no longer \
                     alive (or of another size)"
                )
            });
    }
    let key = (handle.pool_id, handle.address);
    let mut imported = IMPORTED.lock().unwrap_or_else(|e| e.into_inner());
    let imported = imported.get_or_insert_with(HashMap::new);
    if let Some(storage) = imported.get(&key).and_then(Weak::upgrade) {
        if storage.len() != handle.len || storage.is_read_only() != read_only {
            return Err(err!(
                InvalidTensor,
                "invalid CUDA IPC handle: it names an allocation this process already holds, \
                 with another size or access"
            ));
        }
        return Ok(storage);
    }
    if imported.len() >= 64 {
        imported.retain(|_, storage| storage.strong_count() > 0);
    }
    let ptr = gpu.import_pointer(handle.pool_id, handle.pool_fd, &handle.pointer, handle.len)?;
    let allocation = CudaAllocation {
        ptr,
        gpu,
        imported: true,
    };
    // SAFETY: the driver mapped the exporter's allocation at ptr in this
    // process, holding at least len bytes (checked by import_pointer), until
    // the allocation is freed by its Drop. (Its exporter must keep it alive
    // meanwhile: the documented rule, as PyTorch's.)
    let storage = Arc::new(unsafe {
        Storage::from_raw(
            ptr as *mut u8,
            handle.len,
            gpu.device(),
            read_only,
            Owner::Device(Box::new(allocation)),
        )
    });
    imported.insert(key, Arc::downgrade(&storage));
    Ok(storage)
}
