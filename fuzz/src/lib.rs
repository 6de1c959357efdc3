//! What both fuzz targets share: a foreign DLPack tensor whose every field
//! comes from the fuzzer's input, and a counter of its deleter's calls.
//!
//! The byte layout is fixed (the checked-in corpus is written in it): one
//! mode byte, version, ndim, shape, strides, dtype, device, byte offset and
//! flags, little-endian, zeros once the input runs out. Each target may read
//! its own options from the bytes that follow.

use dlpark::DlpackFlags;
use dlpark::ffi::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned,
    DLPackVersion, DLTensor,
};
use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

/// Reads little-endian integers from the input, then zeros.
pub struct Reader<'a>(pub &'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }
    pub fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    pub fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.take())
    }
    pub fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take())
    }
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
}

/// Calls of the foreign tensor's deleter. An atomic, not a thread-local:
/// dlbridge may run a deleter on any thread.
pub static DELETES: AtomicU32 = AtomicU32::new(0);

pub fn deletes() -> u32 {
    DELETES.load(Ordering::SeqCst)
}

// The fuzz targets are built with AddressSanitizer (cargo-fuzz's default).
unsafe extern "C" {
    fn __asan_poison_memory_region(addr: *const c_void, size: usize);
    fn __asan_unpoison_memory_region(addr: *const c_void, size: usize);
}

/// What a real producer frees in its deleter: the managed tensor and its
/// shape and strides arrays. The counting deleters free nothing, so they
/// poison these instead: dlbridge touching any of them after the deleter ran
/// is then an ASan report. `(address, bytes)`, unpoisoned by `unpoison()`.
static RELEASED: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());
static POISONED: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

fn release<M>(managed: *mut M) {
    DELETES.fetch_add(1, Ordering::SeqCst);
    let mut poisoned = POISONED.lock().unwrap();
    poisoned.push((managed as usize, size_of::<M>()));
    poisoned.extend(RELEASED.lock().unwrap().iter().copied());
    for &(addr, len) in poisoned.iter() {
        // SAFETY: poisoning only marks memory this process owns (a live
        // managed tensor, live Vec buffers) as off-limits until unpoison().
        unsafe { __asan_poison_memory_region(addr as *const c_void, len) };
    }
}

/// Makes the memory poisoned by a deleter usable again. Call it before the
/// managed tensor (or the `Foreign` holding the arrays) goes away; `Foreign`'s
/// drop calls it too.
pub fn unpoison() {
    for (addr, len) in POISONED.lock().unwrap().drain(..) {
        // SAFETY: undoes a poisoning of memory that is still alive.
        unsafe { __asan_unpoison_memory_region(addr as *const c_void, len) };
    }
}

unsafe extern "C" fn count_versioned(m: *mut DLManagedTensorVersioned) {
    release(m);
}

unsafe extern "C" fn count_legacy(m: *mut DLManagedTensor) {
    release(m);
}

/// Backing memory the tensor may point into. The targets never read through
/// it (a foreign tensor's memory is the producer's promise), they only ask
/// dlbridge about metadata.
static mut BUFFER: [u64; 64] = [0; 64];

/// A fuzzed producer's tensor: the descriptor plus the shape and strides
/// arrays it points into (which must outlive any import of it).
pub struct Foreign {
    pub legacy: bool,
    version: DLPackVersion,
    flags: u64,
    tensor: DLTensor,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
}

impl Foreign {
    /// Reads one tensor from the input (and resets the deleter counter).
    pub fn read(r: &mut Reader<'_>) -> Foreign {
        let mode = r.u8();
        let legacy = mode & 1 == 1;
        let null_data = mode & 2 == 2;
        let null_shape = mode & 4 == 4;
        let null_strides = mode & 8 == 8;
        let version = DLPackVersion {
            major: r.u32() % 4,
            minor: r.u32() % 8,
        };
        // Mostly small ranks, sometimes anything.
        let raw_ndim = r.i32();
        let ndim = if mode & 16 == 16 {
            raw_ndim
        } else {
            raw_ndim.rem_euclid(6)
        };
        // A producer keeps its own promise: shape and strides hold ndim values
        // whenever ndim is a rank dlbridge would read (0..=64). Other ranks
        // get a short array, which dlbridge must refuse before reading.
        let dims = if (0..=64).contains(&ndim) {
            ndim as usize
        } else {
            2
        };
        let mut shape: Vec<i64> = (0..dims).map(|_| r.i64() % 1024).collect();
        let mut strides: Vec<i64> = (0..dims).map(|_| r.i64()).collect();
        if mode & 32 == 32 {
            shape.iter_mut().for_each(|s| *s = r.i64()); // any size, overflow included
        } else {
            strides.iter_mut().for_each(|s| *s %= 4096);
        }
        let dtype = DLDataType {
            code: DLDataTypeCode(r.u8() % 20),
            bits: r.u8(),
            lanes: r.u16() % 3,
        };
        let device = DLDevice {
            device_type: DLDeviceType(r.u32() % 20),
            device_id: r.i32() % 4,
        };
        let byte_offset = r.u64() % 512;
        let flags = r.u64() & 7;
        // Only the address is taken.
        let data = if null_data {
            std::ptr::null_mut()
        } else {
            std::ptr::addr_of_mut!(BUFFER) as *mut std::ffi::c_void
        };
        let tensor = DLTensor {
            data,
            device,
            ndim,
            dtype,
            shape: if null_shape {
                std::ptr::null_mut()
            } else {
                shape.as_mut_ptr()
            },
            strides: if null_strides {
                std::ptr::null_mut()
            } else {
                strides.as_mut_ptr()
            },
            byte_offset,
        };
        DELETES.store(0, Ordering::SeqCst);
        unpoison();
        *RELEASED.lock().unwrap() = vec![
            (shape.as_ptr() as usize, shape.len() * size_of::<i64>()),
            (strides.as_ptr() as usize, strides.len() * size_of::<i64>()),
        ];
        Foreign {
            legacy,
            version,
            flags,
            tensor,
            _shape: shape,
            _strides: strides,
        }
    }

    /// The 1.x managed tensor, with a counting deleter.
    pub fn versioned(&self) -> DLManagedTensorVersioned {
        DLManagedTensorVersioned {
            version: self.version,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(count_versioned),
            flags: DlpackFlags::from_bits_retain(self.flags),
            dl_tensor: self.tensor,
        }
    }

    /// The legacy (0.x) managed tensor, with a counting deleter.
    pub fn legacy(&self) -> DLManagedTensor {
        DLManagedTensor {
            dl_tensor: self.tensor,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(count_legacy),
        }
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        unpoison();
        RELEASED.lock().unwrap().clear();
    }
}
