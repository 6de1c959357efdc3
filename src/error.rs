//! One error type for the whole crate. Each variant says what went wrong in
//! words a PyTorch user recognises; the Python layer maps variants to the
//! exception types PyTorch raises for the same mistake.

/// Everything that can go wrong in dlbridge.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum Error {
    /// A runtime failure of a valid request (Python `RuntimeError`):
    /// shape and device mismatches, unsupported promotions, missing CUDA.
    #[error("{0}")]
    Runtime(String),
    /// An argument of the wrong kind (Python `TypeError`).
    #[error("{0}")]
    Type(String),
    /// An argument of the right kind with a bad value (Python `ValueError`).
    #[error("{0}")]
    Value(String),
    /// An index outside a dimension (Python `IndexError`).
    #[error("{0}")]
    Index(String),
    /// An operation PyTorch also refuses for this dtype (Python `NotImplementedError`).
    #[error("{0}")]
    NotImplemented(String),
    /// A DLPack export or import that cannot be honoured (Python `BufferError`).
    #[error("{0}")]
    Buffer(String),
}

impl Error {
    /// The error every CUDA request gets on a machine without a usable device.
    pub fn no_cuda(device: impl std::fmt::Display) -> Self {
        Error::Runtime(format!(
            "No CUDA device or driver was found: cannot use device '{device}'. \
             dlbridge.cuda.is_available() is False on this machine."
        ))
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Early-return with an [`Error`] variant built from a format string.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::Error::$kind(format!($($arg)*)))
    };
}
