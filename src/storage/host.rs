//! Host allocations: 64-byte aligned (JAX imports aligned CPU buffers without
//! a copy, and SIMD loops like it), from plain malloc blocks 64 bytes larger:
//! glibc's `memalign` splits a bigger chunk and frees the pieces, which made
//! allocation and free half the cost of a small op. Large zeroed buffers and very large
//! uninitialised ones come straight from `mmap`: page-aligned, zero-filled
//! lazily by the kernel (so `zeros` costs nothing until touched) and advised
//! to use transparent huge pages, which keeps page-fault cost off big
//! elementwise results, as NumPy does; other outputs reuse malloc's memory.
//! One freed large mapping is kept as a spare for the next output of about
//! its size (see [`SPARE_MAX`]): a fresh one is zeroed by the kernel page by
//! page as the op first writes it, which cost as much as the op itself.

use crate::{Error, Result};
use std::alloc::{self, Layout};

const ALIGN: usize = 64;
/// The alignment malloc gives every block (so `std::alloc` calls plain `malloc`).
const MALLOC_ALIGN: usize = 16;
/// From this size on, a zeroed buffer comes straight from `mmap` (glibc would
/// mmap anyway, but std's aligned path would then memset the whole block).
/// The AddressSanitizer build (`tests/asan/python_suite.sh` sets
/// `--cfg dlbridge_asan`) sends every size through the allocator instead,
/// since ASan cannot see overruns of raw mappings.
const MMAP_ZEROED: usize = if cfg!(dlbridge_asan) {
    usize::MAX
} else {
    1 << 20
};
/// From this size on, an uninitialised buffer (an op's output) is mapped
/// too, with huge pages. Below it, malloc reuses freed memory: a fresh
/// mapping per op would fault in every page on each call (`a + b` of 2^18
/// float32 took 350 µs that way, against 21 µs for 2^17 from the heap).
/// glibc's own limit for that reuse (`DEFAULT_MMAP_THRESHOLD_MAX`), as
/// NumPy gets it.
const MMAP_UNINIT: usize = if cfg!(dlbridge_asan) {
    usize::MAX
} else {
    32 << 20
};
/// The largest freed mapping kept as a spare for the next uninitialised
/// buffer. The kernel zeroes a fresh mapping on first write, which made a
/// 10^7-element cast to float32 take 3 to 4 ms instead of 1, and in this
/// project's virtual machines a float64 op of that size (80 MB) 27 ms on
/// some runs instead of 5 (fresh guest pages fault on the host too). One
/// spare of at most 256 MiB (a 2^25-element float64 result with room) is
/// kept. Miri has no `madvise`.
const SPARE_MAX: usize = if cfg!(miri) { 0 } else { 256 << 20 };
/// A spare of up to this size stays resident, as glibc keeps up to 64 MiB
/// of freed memory on its heap (its trim threshold once its mmap threshold
/// has risen to 32 MiB); a larger one is handed back with `MADV_FREE`, so
/// the kernel may take its pages under memory pressure. (Not for the
/// smaller ones: their reuse then cost a third more, 1.33 ms against 1.02
/// for a 40 MB float32 output, as the pages come back.)
const SPARE_RESIDENT: usize = 64 << 20;

/// The spare mapping: its first byte and length (null and 0 when there is none).
struct Spare(*mut u8, usize);
// SAFETY: plain memory that only the slot refers to.
unsafe impl Send for Spare {}
static SPARE: std::sync::Mutex<Spare> = std::sync::Mutex::new(Spare(std::ptr::null_mut(), 0));

/// An owned, aligned host byte buffer.
pub struct HostBuffer {
    ptr: *mut u8,
    /// The bytes asked for (a malloc block) or mapped (a mapping, which may
    /// be a larger spare).
    len: usize,
    /// The malloc block `ptr` lies in (null for a mapping).
    block: *mut u8,
}

// SAFETY: the buffer is plain memory owned by this value and freed once in Drop.
unsafe impl Send for HostBuffer {}
// SAFETY: shared references expose only the address.
unsafe impl Sync for HostBuffer {}

fn out_of_memory(len: usize) -> Error {
    crate::err!(
        OutOfMemory,
        "DefaultCPUAllocator: not enough memory: you tried to allocate {len} bytes."
    )
}

impl HostBuffer {
    /// `len` bytes, 64-byte aligned, zeroed or left uninitialised; an error (not an abort) when the memory cannot be had.
    pub fn new(len: usize, zeroed: bool) -> Result<HostBuffer> {
        if !zeroed && len >= MMAP_UNINIT {
            return HostBuffer::take_spare(len).map_or_else(|| HostBuffer::map(len), Ok);
        }
        if len >= if zeroed { MMAP_ZEROED } else { MMAP_UNINIT } {
            return HostBuffer::map(len);
        }
        let layout = HostBuffer::block_layout(len).ok_or_else(|| out_of_memory(len))?;
        // SAFETY: the layout has a non-zero size.
        let block = unsafe {
            if zeroed {
                alloc::alloc_zeroed(layout)
            } else {
                alloc::alloc(layout)
            }
        };
        if block.is_null() {
            return Err(out_of_memory(len));
        }
        // SAFETY: the block has ALIGN - MALLOC_ALIGN bytes to spare, at least
        // what this skips (nothing for an aligned block), so `len` bytes
        // remain after the aligned start.
        let ptr = unsafe { block.add(block.addr().next_multiple_of(ALIGN) - block.addr()) };
        Ok(HostBuffer { ptr, len, block })
    }

    /// The malloc block for `len` bytes at a 64-byte boundary. The
    /// AddressSanitizer build asks for exactly `len` aligned bytes instead,
    /// so that it sees an overrun of the buffer's last byte.
    fn block_layout(len: usize) -> Option<Layout> {
        if cfg!(dlbridge_asan) {
            return Layout::from_size_align(len.max(1), ALIGN).ok();
        }
        Layout::from_size_align(len.max(1).checked_add(ALIGN - MALLOC_ALIGN)?, MALLOC_ALIGN).ok()
    }

    /// Fresh anonymous pages: always zeroed, page-aligned.
    fn map(len: usize) -> Result<HostBuffer> {
        // SAFETY: an anonymous private mapping touches no existing memory.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(out_of_memory(len));
        }
        // SAFETY: advisory only, on the mapping we just made; failure is harmless.
        #[cfg(not(miri))] // Miri cannot run madvise; it is only a hint
        unsafe {
            libc::madvise(ptr, len, libc::MADV_HUGEPAGE)
        };
        Ok(HostBuffer {
            ptr: ptr.cast(),
            len,
            block: std::ptr::null_mut(),
        })
    }

    /// The spare mapping, when it holds `len` bytes and not twice as many.
    fn take_spare(len: usize) -> Option<HostBuffer> {
        let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        if spare.1 < len || spare.1 / 2 >= len {
            return None;
        }
        let Spare(ptr, len) = std::mem::replace(&mut *spare, Spare(std::ptr::null_mut(), 0));
        Some(HostBuffer {
            ptr,
            len,
            block: std::ptr::null_mut(),
        })
    }

    /// The first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

/// Unmaps a mapping made by [`HostBuffer::map`].
///
/// # Safety
/// `addr` and `len` are exactly such a mapping, which nothing uses any more.
unsafe fn unmap(addr: *mut u8, len: usize) {
    // SAFETY: the caller's promise.
    unsafe { libc::munmap(addr.cast(), len) };
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if self.block.is_null() {
            if (MMAP_UNINIT..=SPARE_MAX).contains(&self.len)
                && (self.len <= SPARE_RESIDENT
                    // SAFETY: our own mapping, unused from here on: its contents may go.
                    || unsafe { libc::madvise(self.ptr.cast(), self.len, libc::MADV_FREE) } == 0)
            {
                let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
                let Spare(old, old_len) = std::mem::replace(&mut *spare, Spare(self.ptr, self.len));
                drop(spare);
                if !old.is_null() {
                    // SAFETY: the old spare, which only the slot held.
                    unsafe { unmap(old, old_len) };
                }
            } else {
                // SAFETY: exactly the mapping made in `map` (or taken as the spare), once.
                unsafe { unmap(self.ptr, self.len) };
            }
        } else {
            let layout = HostBuffer::block_layout(self.len).expect("valid when allocated");
            // SAFETY: allocated in `new` with this exact layout and freed only here.
            unsafe { alloc::dealloc(self.block, layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_zeroed_on_request() {
        for len in [0, 1, 63, 4096, (1 << 20) + 1] {
            let b = HostBuffer::new(len, true).unwrap();
            assert_eq!(b.as_ptr() as usize % ALIGN, 0);
            // SAFETY: the buffer holds at least len bytes.
            let bytes = unsafe { std::slice::from_raw_parts(b.as_ptr(), len) };
            // Compared as slices (one memcmp): a byte-by-byte loop over the
            // mapped MiB took Miri 280 s of its 490.
            assert!(bytes == vec![0u8; len].as_slice());
        }
        // Miri stops the whole run on an impossible allocation instead of failing it.
        if !cfg!(miri) {
            assert!(HostBuffer::new(usize::MAX / 2, false).is_err());
        }
    }

    #[test]
    fn a_freed_large_mapping_serves_the_next_output_of_about_its_size() {
        if SPARE_MAX < MMAP_UNINIT {
            return; // no spare kept (Miri, AddressSanitizer)
        }
        // No other unit test asks for 32 MiB, so the slot is this test's.
        let len = MMAP_UNINIT + 16384;
        let first = HostBuffer::new(len, false).unwrap();
        let addr = first.as_ptr();
        // SAFETY: the buffer holds len bytes.
        unsafe { addr.write_bytes(7, len) };
        drop(first);
        // A zeroed buffer never takes the spare; one twice the size does not either.
        let zeroed = HostBuffer::new(len, true).unwrap();
        assert_ne!(zeroed.as_ptr(), addr);
        // SAFETY: the buffer holds len bytes.
        assert!(
            unsafe { std::slice::from_raw_parts(zeroed.as_ptr(), len) }
                .iter()
                .all(|&x| x == 0)
        );
        let twice = HostBuffer::new(2 * len, false).unwrap();
        assert_ne!(twice.as_ptr(), addr);
        let again = HostBuffer::new(len - 8192, false).unwrap();
        assert_eq!((again.as_ptr(), again.len), (addr, len));
        // SAFETY: the buffer holds len bytes.
        unsafe { again.as_ptr().write_bytes(1, len) };
        drop((again, twice));
        // Past SPARE_RESIDENT the spare is handed back with MADV_FREE, and
        // still serves the next output; past SPARE_MAX none is kept.
        let big = HostBuffer::new(SPARE_RESIDENT + 4096, false).unwrap();
        let addr = big.as_ptr();
        // SAFETY: the buffer holds that many bytes.
        unsafe { addr.write_bytes(3, SPARE_RESIDENT + 4096) };
        drop(big);
        let reused = HostBuffer::new(SPARE_RESIDENT, false).unwrap();
        assert_eq!(reused.as_ptr(), addr);
        drop(reused);
        drop(HostBuffer::new(SPARE_MAX + 4096, false).unwrap());
        let spare = SPARE.lock().unwrap();
        assert!(spare.0 == addr && spare.1 > SPARE_RESIDENT);
    }
}
