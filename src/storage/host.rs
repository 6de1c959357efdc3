//! Host allocations: 64-byte aligned (JAX imports aligned CPU buffers without
//! a copy, and SIMD loops like it), from plain malloc blocks 64 bytes larger:
//! glibc's `memalign` splits a bigger chunk and frees the pieces, which made
//! allocation and free half the cost of a small op. Large zeroed buffers and very large
//! uninitialised ones come straight from `mmap`: page-aligned, zero-filled
//! lazily by the kernel (so `zeros` costs nothing until touched) and advised
//! to use transparent huge pages, which keeps page-fault cost off big
//! elementwise results, as NumPy does; other outputs reuse malloc's memory.

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

/// An owned, aligned host byte buffer.
pub struct HostBuffer {
    ptr: *mut u8,
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

    /// The first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if self.block.is_null() {
            // SAFETY: unmaps exactly the mapping made in `map`, once.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
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
            assert!(bytes.iter().all(|&x| x == 0));
        }
        // Miri stops the whole run on an impossible allocation instead of failing it.
        if !cfg!(miri) {
            assert!(HostBuffer::new(usize::MAX / 2, false).is_err());
        }
    }
}
