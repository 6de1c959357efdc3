//! Host memory that other processes can map: an anonymous `memfd` segment,
//! mapped `MAP_SHARED`, that owns its descriptor and its mapping.
//!
//! The segment has no name anywhere (nothing in `/dev/shm`), so nothing can
//! outlive the processes that hold it: the kernel frees the pages when the
//! last descriptor and the last mapping go, whoever held them and however
//! they died (a SIGKILLed child leaks nothing). A descriptor travels to
//! another process (`SCM_RIGHTS`, which `multiprocessing` does for us) and
//! [`SharedSegment::open`] maps the same pages there.
//!
//! Segments are sealed against shrinking and growing once sized, and a
//! segment is only opened when it carries that seal and exactly the size its
//! handle claims: a mapping can then never reach past the end of its file,
//! so no access through it can raise SIGBUS, whatever the other side does.
//!
//! (The internal mount memfd segments live on has no size limit, unlike a
//! container's small `/dev/shm`: the "bus error" PyTorch's DataLoader workers
//! meet there cannot happen; a full machine is the OOM killer's business.)

use crate::{Error, Result, err};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// What every segment is sealed with once sized.
const SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// A `memfd` segment and its mapping in this process.
pub struct SharedSegment {
    fd: OwnedFd,
    ptr: *mut u8,
    /// Bytes in use; the file (and mapping) holds `len.max(1)`, since nothing
    /// maps an empty file.
    len: usize,
}

// SAFETY: the segment is a mapping and a descriptor owned by this value,
// released once in Drop, from any thread.
unsafe impl Send for SharedSegment {}
// SAFETY: shared references expose only the address, length and descriptor.
unsafe impl Sync for SharedSegment {}

/// The calling thread's `errno` as an error of the fitting kind.
fn os_error(what: &str) -> Error {
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOMEM | libc::ENOSPC) => {
            err!(
                OutOfMemory,
                "not enough memory for shared memory: {what}: {e}"
            )
        }
        _ => err!(InvalidOperation, "shared memory: {what}: {e}"),
    }
}

/// The size of the file behind a segment of `len` bytes.
fn file_size(len: usize) -> Result<libc::off_t> {
    libc::off_t::try_from(len.max(1)).map_err(|_| {
        err!(
            TooLarge,
            "a shared-memory segment of {len} bytes is too large"
        )
    })
}

/// Maps `size` bytes of `fd` shared, writable or not.
fn map(fd: &OwnedFd, size: usize, writable: bool) -> Result<*mut u8> {
    let prot = if writable {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_READ
    };
    // SAFETY: a new shared mapping of a file we hold open touches no
    // existing memory; the file is at least `size` bytes (checked or set by
    // the callers) and sealed against shrinking.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            prot,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(os_error("mapping a segment"));
    }
    Ok(ptr.cast())
}

impl SharedSegment {
    /// A fresh segment of `len` bytes (zero-filled), mapped writable.
    pub fn new(len: usize) -> Result<SharedSegment> {
        let size = file_size(len)?;
        // SAFETY: the name is a NUL-terminated string; the flags are valid.
        let raw = unsafe {
            libc::memfd_create(
                c"dlbridge-shared".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        if raw < 0 {
            return Err(os_error("creating a segment (memfd_create)"));
        }
        // SAFETY: memfd_create returned a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: plain calls on a descriptor we own.
        unsafe {
            if libc::ftruncate(fd.as_raw_fd(), size) != 0 {
                return Err(os_error(&format!("sizing a segment to {len} bytes")));
            }
            if libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, SEALS) != 0 {
                return Err(os_error("sealing a segment"));
            }
        }
        let ptr = map(&fd, size as usize, true)?;
        Ok(SharedSegment { fd, ptr, len })
    }

    /// Maps the segment behind `fd` (a descriptor the caller keeps: this
    /// takes a duplicate), which must be a sealed dlbridge segment of exactly
    /// the size a `len`-byte segment has. Read-only segments are mapped
    /// without write permission. A descriptor that is not such a segment is
    /// refused (`ErrorKind::InvalidTensor`), never mapped.
    pub fn open(fd: RawFd, len: usize, read_only: bool) -> Result<SharedSegment> {
        let refuse = |why: String| {
            err!(
                InvalidTensor,
                "invalid shared-memory handle (descriptor {fd}, {len} bytes): {why}"
            )
        };
        let size = file_size(len)?;
        // SAFETY: F_DUPFD_CLOEXEC reads no memory; a bad descriptor is an error.
        let raw = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if raw < 0 {
            return Err(refuse(format!(
                "not an open descriptor ({})",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: the duplicate is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: all-zero is a valid `stat`, which fstat fills in.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: st is a valid out-pointer; fd is open.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0
            || st.st_mode & libc::S_IFMT != libc::S_IFREG
        {
            return Err(refuse("not a shared-memory segment".into()));
        }
        // SAFETY: F_GET_SEALS reads no memory; it fails on files that are not memfds.
        let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
        if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
            return Err(refuse(
                "not a sealed dlbridge segment (it could shrink under the mapping)".into(),
            ));
        }
        if st.st_size != size {
            return Err(refuse(format!(
                "the segment holds {} bytes, not {size}",
                st.st_size
            )));
        }
        let ptr = map(&fd, size as usize, !read_only)?;
        Ok(SharedSegment { fd, ptr, len })
    }

    /// The first byte, valid for [`len`](Self::len) bytes while `self` lives.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The segment's size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the segment has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The descriptor (still owned by the segment: duplicate it to keep it).
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Drop for SharedSegment {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made at construction, once; the
        // descriptor closes after this body (OwnedFd).
        unsafe { libc::munmap(self.ptr.cast(), self.len.max(1)) };
    }
}

#[cfg(all(test, not(miri)))] // Miri has no memfd_create or shared mappings
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn a_segment_opened_twice_is_the_same_memory() {
        let a = SharedSegment::new(4096 + 3).unwrap();
        // SAFETY: the segment holds len bytes.
        unsafe { std::slice::from_raw_parts_mut(a.as_ptr(), a.len()) }.fill(7);
        let b = SharedSegment::open(a.fd(), a.len(), false).unwrap();
        assert_ne!(a.as_ptr(), b.as_ptr());
        assert_ne!(a.fd(), b.fd());
        // SAFETY: both hold len bytes.
        unsafe {
            assert!(
                std::slice::from_raw_parts(b.as_ptr(), b.len())
                    .iter()
                    .all(|&x| x == 7)
            );
            *b.as_ptr().add(4098) = 9;
            assert_eq!(*a.as_ptr().add(4098), 9);
        }
        drop(a);
        // SAFETY: b's mapping and descriptor keep the pages alive.
        assert_eq!(unsafe { *b.as_ptr() }, 7);
        let empty = SharedSegment::new(0).unwrap();
        assert!(empty.is_empty());
        assert!(SharedSegment::open(empty.fd(), 0, true).is_ok());
    }

    #[test]
    fn wrong_handles_are_refused() {
        let a = SharedSegment::new(100).unwrap();
        let kind =
            |fd: RawFd, len: usize| SharedSegment::open(fd, len, false).err().unwrap().kind();
        assert_eq!(kind(a.fd(), 101), ErrorKind::InvalidTensor);
        assert_eq!(kind(a.fd(), 99), ErrorKind::InvalidTensor);
        assert_eq!(kind(-1, 100), ErrorKind::InvalidTensor);
        // A regular file and a pipe are no segments.
        let file = std::fs::File::open("/proc/self/exe").unwrap();
        assert_eq!(kind(file.as_raw_fd(), 100), ErrorKind::InvalidTensor);
        let mut fds = [0; 2];
        // SAFETY: fds holds two ints.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        assert_eq!(kind(fds[0], 100), ErrorKind::InvalidTensor);
        // SAFETY: both ends are ours.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        // An unsealed memfd could shrink under the mapping.
        // SAFETY: as in new().
        let raw = unsafe { libc::memfd_create(c"other".as_ptr(), libc::MFD_CLOEXEC) };
        // SAFETY: a fresh descriptor we own.
        let other = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: a plain call on our descriptor.
        assert_eq!(unsafe { libc::ftruncate(other.as_raw_fd(), 100) }, 0);
        assert_eq!(kind(other.as_raw_fd(), 100), ErrorKind::InvalidTensor);
    }
}
