//! One error type for the whole crate: a typed [`ErrorKind`] beside a
//! message worded as PyTorch words the same mistake.
//!
//! Callers decide by the kind, never by the text: the Python layer maps each
//! kind to the exception class PyTorch raises ([`ErrorKind::python_class`]),
//! the C ABI to its status code. Rewording a message changes neither.

/// What went wrong, as a type. Each kind has exactly one Python exception
/// class and one C status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An argument of the wrong kind.
    WrongType,
    /// An argument of the right kind with a bad value.
    InvalidValue,
    /// An index outside a dimension.
    IndexOutOfRange,
    /// A shape or size whose element or byte count overflows.
    TooLarge,
    /// A valid request that cannot be carried out: shapes or devices that do
    /// not match, a promotion that is not allowed, writing a read-only or
    /// self-overlapping tensor.
    InvalidOperation,
    /// An operation PyTorch also refuses for this dtype or layout.
    NotImplemented,
    /// A malformed DLPack tensor, or an export DLPack cannot express.
    InvalidTensor,
    /// A DLPack dtype dlbridge does not have.
    UnsupportedDtype,
    /// A DLPack device type dlbridge does not support.
    UnsupportedDevice,
    /// A CUDA device index that does not exist on this machine.
    InvalidDevice,
    /// CUDA was asked for and there is no driver or no device.
    NoCuda,
    /// An allocation failed, on the host or on a device.
    OutOfMemory,
    /// The CUDA driver or NVRTC failed.
    Driver,
    /// Typed access ([`Tensor::as_slice`](crate::Tensor::as_slice) and
    /// kin) asked for an element type that is not the tensor's dtype.
    DTypeMismatch,
    /// Typed access to a tensor whose memory is not host memory (a CUDA
    /// tensor: copy it with `to_device(Device::CPU)` first).
    WrongDevice,
    /// A slice of a tensor whose elements are not contiguous in row-major
    /// order (use `as_array`, which takes any strides, or `contiguous()`).
    NotContiguous,
    /// Writing a tensor whose memory is read-only (a DLPack tensor flagged
    /// `READ_ONLY`, a non-writeable NumPy array).
    ReadOnly,
    /// Typed access to memory that another tensor handle (a clone, a view,
    /// a DLPack export, a Python tensor) shares, or that a library outside
    /// dlbridge also holds (a NumPy array, C memory, shared memory): a Rust
    /// reference into it could alias their writes.
    NotUnique,
    /// A DLPack tensor of a major version other than 1.
    UnsupportedVersion,
}

/// The Python exception class an [`ErrorKind`] raises (PyTorch's choice for
/// the same mistake). Kept free of PyO3 so the core needs no Python.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PythonClass {
    /// `RuntimeError`: PyTorch's class for most refused operations.
    RuntimeError,
    /// `TypeError`: an argument of the wrong kind.
    TypeError,
    /// `ValueError`: an argument with a bad value.
    ValueError,
    /// `IndexError`: an index outside a dimension.
    IndexError,
    /// `NotImplementedError`: what PyTorch has no kernel for.
    NotImplementedError,
    /// `BufferError`: the DLPack protocol's class for a tensor that cannot
    /// be exchanged.
    BufferError,
}

impl ErrorKind {
    /// The Python exception class this kind raises.
    ///
    /// ```
    /// use dlbridge::{ErrorKind, PythonClass};
    /// assert_eq!(ErrorKind::InvalidValue.python_class(), PythonClass::ValueError);
    /// assert_eq!(ErrorKind::ReadOnly.python_class(), PythonClass::RuntimeError);
    /// ```
    pub fn python_class(self) -> PythonClass {
        use ErrorKind::*;
        match self {
            WrongType => PythonClass::TypeError,
            InvalidValue => PythonClass::ValueError,
            IndexOutOfRange => PythonClass::IndexError,
            NotImplemented => PythonClass::NotImplementedError,
            InvalidTensor | UnsupportedDtype | UnsupportedDevice | UnsupportedVersion => {
                PythonClass::BufferError
            }
            TooLarge | InvalidOperation | InvalidDevice | NoCuda | OutOfMemory | Driver
            | DTypeMismatch | WrongDevice | NotContiguous | ReadOnly | NotUnique => {
                PythonClass::RuntimeError
            }
        }
    }
}

/// Everything that can go wrong in dlbridge.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind` with `message` (PyTorch's words where it has some).
    ///
    /// ```
    /// use dlbridge::{Error, ErrorKind};
    /// let e = Error::new(ErrorKind::InvalidValue, "bad size");
    /// assert_eq!((e.kind(), e.message()), (ErrorKind::InvalidValue, "bad size"));
    /// assert_eq!(e.to_string(), "bad size");
    /// ```
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// What went wrong, as a type: decide by this, never by the message.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, worded as PyTorch words the same mistake.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The error every CUDA request gets on a machine without a usable device.
    ///
    /// ```
    /// use dlbridge::{Error, ErrorKind};
    /// assert_eq!(Error::no_cuda("cuda:0").kind(), ErrorKind::NoCuda);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn no_cuda(device: impl std::fmt::Display) -> Self {
        Error::new(
            ErrorKind::NoCuda,
            format!(
                "No CUDA device or driver was found: cannot use device '{device}'. \
                 dlbridge.cuda.is_available() is False on this machine."
            ),
        )
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An [`Error`] of kind `$kind` from a format string: `err!(InvalidValue, "bad {x}")`.
#[macro_export]
macro_rules! err {
    ($kind:ident, $($arg:tt)*) => {
        $crate::Error::new($crate::ErrorKind::$kind, format!($($arg)*))
    };
}

/// Early-return with an [`Error`] of kind `$kind` built from a format string.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::err!($kind, $($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_raises_pytorchs_exception_class() {
        use ErrorKind::*;
        let class = |k: ErrorKind| k.python_class();
        assert_eq!(class(WrongType), PythonClass::TypeError);
        assert_eq!(class(InvalidValue), PythonClass::ValueError);
        assert_eq!(class(IndexOutOfRange), PythonClass::IndexError);
        assert_eq!(class(NotImplemented), PythonClass::NotImplementedError);
        for k in [
            InvalidTensor,
            UnsupportedDtype,
            UnsupportedDevice,
            UnsupportedVersion,
        ] {
            assert_eq!(class(k), PythonClass::BufferError, "{k:?}");
        }
        for k in [
            TooLarge,
            InvalidOperation,
            InvalidDevice,
            NoCuda,
            OutOfMemory,
            Driver,
            DTypeMismatch,
            WrongDevice,
            NotContiguous,
            ReadOnly,
            NotUnique,
        ] {
            assert_eq!(class(k), PythonClass::RuntimeError, "{k:?}");
        }
        let e = err!(InvalidValue, "bad {}", 3);
        assert_eq!((e.kind(), e.message()), (InvalidValue, "bad 3"));
        assert_eq!(e.to_string(), "bad 3");
    }
}
