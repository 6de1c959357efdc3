//! Host allocations: 64-byte aligned (JAX imports aligned CPU buffers without a
//! copy, and SIMD loops like it), with transparent huge pages for large ones
//! as NumPy does, which keeps page-fault cost off big elementwise results.

use crate::{Error, Result};
use std::alloc::{self, Layout};

const ALIGN: usize = 64;
/// Above this size, ask the kernel for huge pages (NumPy uses 4 MiB too).
const HUGE_PAGE_THRESHOLD: usize = 4 << 20;

/// An owned, aligned host byte buffer.
pub struct HostBuffer {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the buffer is plain memory from the global allocator, freed once in Drop.
unsafe impl Send for HostBuffer {}
// SAFETY: shared references expose only the address.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    pub fn new(len: usize, zeroed: bool) -> Result<HostBuffer> {
        let too_big = || {
            Error::Runtime(format!(
                "cannot allocate {len} bytes on the host: size too large"
            ))
        };
        let layout = Layout::from_size_align(len.max(1), ALIGN).map_err(|_| too_big())?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe {
            if zeroed {
                alloc::alloc_zeroed(layout)
            } else {
                alloc::alloc(layout)
            }
        };
        if ptr.is_null() {
            return Err(Error::Runtime(format!(
                "DefaultCPUAllocator: not enough memory: you tried to allocate {len} bytes."
            )));
        }
        if len >= HUGE_PAGE_THRESHOLD {
            // madvise wants a page-aligned start: advise from the first whole page.
            let skip = ptr.align_offset(4096);
            // SAFETY: advisory only, on pages inside the block we own; failure is harmless.
            unsafe { libc::madvise(ptr.add(skip).cast(), len - skip, libc::MADV_HUGEPAGE) };
        }
        Ok(HostBuffer { ptr, layout })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this exact layout and freed only here.
        unsafe { alloc::dealloc(self.ptr, self.layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_zeroed_on_request() {
        for len in [0, 1, 63, 4096, HUGE_PAGE_THRESHOLD + 1] {
            let b = HostBuffer::new(len, true).unwrap();
            assert_eq!(b.as_ptr() as usize % ALIGN, 0);
            // SAFETY: the buffer holds at least max(len, 1) bytes.
            let bytes = unsafe { std::slice::from_raw_parts(b.as_ptr(), len) };
            assert!(bytes.iter().all(|&x| x == 0));
        }
        assert!(HostBuffer::new(usize::MAX, false).is_err());
    }
}
