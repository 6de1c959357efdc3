//! Status codes and the thread-local error message.

use crate::{Error, ErrorKind};
use std::cell::RefCell;
use std::ffi::{CString, c_char};

/// What a `dlb_*` function reports.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum dlb_status {
    /// Success.
    DLB_OK = 0,
    /// A required pointer argument was NULL.
    DLB_ERR_NULL_POINTER = 1,
    /// An argument is out of range (a negative `ndim`, a negative size, an
    /// unknown operator, an index out of range).
    DLB_ERR_INVALID_ARGUMENT = 2,
    /// A DLPack tensor with a major version other than 1.
    DLB_ERR_UNSUPPORTED_VERSION = 3,
    /// A dtype dlbridge does not have (code, bits or lanes).
    DLB_ERR_UNSUPPORTED_DTYPE = 4,
    /// A device type dlbridge does not support, or an invalid device id.
    DLB_ERR_UNSUPPORTED_DEVICE = 5,
    /// A malformed tensor: NULL shape, NULL data with elements, a byte
    /// offset that is not a multiple of the item size, sizes or strides whose
    /// extent overflows. Also an export DLPack cannot express: strides that
    /// are not whole elements, a read-only tensor as a legacy
    /// `DLManagedTensor` (Python raises `BufferError` for both).
    DLB_ERR_INVALID_TENSOR = 6,
    /// Shapes that do not broadcast, a dtype an operation refuses, writing a
    /// read-only tensor, and other refused operations.
    DLB_ERR_INVALID_OPERATION = 7,
    /// CUDA was asked for and is not available (no driver or device).
    DLB_ERR_NO_CUDA = 8,
    /// An allocation failed.
    DLB_ERR_OUT_OF_MEMORY = 9,
    /// Any other runtime failure (a CUDA error, say).
    DLB_ERR_RUNTIME = 10,
    /// A bug in dlbridge (a caught panic). Please report it.
    DLB_ERR_INTERNAL = 11,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error and returns `status`.
pub(crate) fn fail(status: dlb_status, message: impl Into<String>) -> dlb_status {
    let text = CString::new(message.into().replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
    status
}

/// The status an [`Error`] from the core maps to, by its kind alone.
pub(crate) fn status_of(e: &Error) -> dlb_status {
    use dlb_status::*;
    match e.kind() {
        ErrorKind::NoCuda => DLB_ERR_NO_CUDA,
        ErrorKind::OutOfMemory => DLB_ERR_OUT_OF_MEMORY,
        ErrorKind::UnsupportedDevice | ErrorKind::InvalidDevice => DLB_ERR_UNSUPPORTED_DEVICE,
        ErrorKind::UnsupportedDtype => DLB_ERR_UNSUPPORTED_DTYPE,
        ErrorKind::InvalidTensor => DLB_ERR_INVALID_TENSOR,
        ErrorKind::TooLarge
        | ErrorKind::WrongType
        | ErrorKind::InvalidValue
        | ErrorKind::IndexOutOfRange => DLB_ERR_INVALID_ARGUMENT,
        ErrorKind::InvalidOperation
        | ErrorKind::NotImplemented
        | ErrorKind::DTypeMismatch
        | ErrorKind::WrongDevice
        | ErrorKind::NotContiguous
        | ErrorKind::ReadOnly
        | ErrorKind::NotUnique => DLB_ERR_INVALID_OPERATION,
        ErrorKind::UnsupportedVersion => DLB_ERR_UNSUPPORTED_VERSION,
        ErrorKind::Driver => DLB_ERR_RUNTIME,
        // ErrorKind is non_exhaustive for users of the crate, not for us:
        // a new kind must be mapped here.
    }
}

/// Runs the body of an exported function: errors become a status and a
/// message, a panic becomes `DLB_ERR_INTERNAL`.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), dlb_status>) -> dlb_status {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(Ok(())) => dlb_status::DLB_OK,
        Ok(Err(status)) => status,
        Err(_) => fail(
            dlb_status::DLB_ERR_INTERNAL,
            "internal error in dlbridge (a panic was caught)",
        ),
    }
}

/// Converts a core error into a recorded failure.
pub(crate) fn core(e: Error) -> dlb_status {
    fail(status_of(&e), e.to_string())
}

/// The message of the last failed `dlb_*` call on this thread ("" if none).
/// The pointer stays valid until the next failing call on this thread.
/// Thread-safe: each thread has its own message.
#[unsafe(no_mangle)]
pub extern "C" fn dlb_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// A static, human-readable name for a status code ("DLB_OK", ...), or
/// "unknown status" for a number that is none. Thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn dlb_status_name(status: i32) -> *const c_char {
    let name: &'static std::ffi::CStr = match status {
        0 => c"DLB_OK",
        1 => c"DLB_ERR_NULL_POINTER",
        2 => c"DLB_ERR_INVALID_ARGUMENT",
        3 => c"DLB_ERR_UNSUPPORTED_VERSION",
        4 => c"DLB_ERR_UNSUPPORTED_DTYPE",
        5 => c"DLB_ERR_UNSUPPORTED_DEVICE",
        6 => c"DLB_ERR_INVALID_TENSOR",
        7 => c"DLB_ERR_INVALID_OPERATION",
        8 => c"DLB_ERR_NO_CUDA",
        9 => c"DLB_ERR_OUT_OF_MEMORY",
        10 => c"DLB_ERR_RUNTIME",
        11 => c"DLB_ERR_INTERNAL",
        _ => c"unknown status",
    };
    name.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_follows_the_kind_not_the_message() {
        use dlb_status::*;
        let cases = [
            (ErrorKind::NoCuda, DLB_ERR_NO_CUDA),
            (ErrorKind::OutOfMemory, DLB_ERR_OUT_OF_MEMORY),
            (ErrorKind::UnsupportedDevice, DLB_ERR_UNSUPPORTED_DEVICE),
            (ErrorKind::InvalidDevice, DLB_ERR_UNSUPPORTED_DEVICE),
            (ErrorKind::UnsupportedDtype, DLB_ERR_UNSUPPORTED_DTYPE),
            (ErrorKind::InvalidTensor, DLB_ERR_INVALID_TENSOR),
            (ErrorKind::TooLarge, DLB_ERR_INVALID_ARGUMENT),
            (ErrorKind::WrongType, DLB_ERR_INVALID_ARGUMENT),
            (ErrorKind::InvalidValue, DLB_ERR_INVALID_ARGUMENT),
            (ErrorKind::IndexOutOfRange, DLB_ERR_INVALID_ARGUMENT),
            (ErrorKind::InvalidOperation, DLB_ERR_INVALID_OPERATION),
            (ErrorKind::NotImplemented, DLB_ERR_INVALID_OPERATION),
            (ErrorKind::Driver, DLB_ERR_RUNTIME),
            (ErrorKind::DTypeMismatch, DLB_ERR_INVALID_OPERATION),
            (ErrorKind::WrongDevice, DLB_ERR_INVALID_OPERATION),
            (ErrorKind::NotContiguous, DLB_ERR_INVALID_OPERATION),
            (ErrorKind::ReadOnly, DLB_ERR_INVALID_OPERATION),
            (ErrorKind::NotUnique, DLB_ERR_INVALID_OPERATION),
            (ErrorKind::UnsupportedVersion, DLB_ERR_UNSUPPORTED_VERSION),
        ];
        for (kind, status) in cases {
            // A message that names another kind's words changes nothing.
            let e = Error::new(kind, "CUDA error: out of memory, unsupported DLPack dtype");
            assert_eq!(status_of(&e), status, "{kind:?}");
        }
        assert_eq!(
            status_of(&Error::no_cuda("cuda:0")),
            DLB_ERR_NO_CUDA,
            "the no-CUDA constructor carries its kind"
        );
    }
}
