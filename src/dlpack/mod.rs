//! Crossing the DLPack ABI: building managed tensors for consumers
//! ([`export`]) and validating what producers hand in ([`import`]).
//!
//! Rust programs use [`Tensor::from_raw_versioned`](crate::Tensor::from_raw_versioned)
//! and [`Tensor::into_raw_versioned`](crate::Tensor::into_raw_versioned), which
//! call these; here are the options they leave at their defaults:
//!
//! ```
//! use dlbridge::{Tensor, dlpack::{ExportOptions, export_versioned}};
//! use dlbridge::ffi::DlpackFlags;
//! let t = Tensor::from_vec(vec![1u8], &[1])?;
//! let raw = export_versioned(&t, ExportOptions { is_copied: true, ..Default::default() })?;
//! // SAFETY: a fresh export we own; read its flags, then call its deleter once.
//! unsafe {
//!     assert!((*raw).flags.contains(DlpackFlags::IS_COPIED));
//!     ((*raw).deleter.unwrap())(raw);
//! }
//! # Ok::<(), dlbridge::Error>(())
//! ```

pub mod export;
pub mod import;

pub use export::{ExportOptions, VERSION, borrowed_view, export_legacy, export_versioned};
pub use import::import_versioned_or_legacy;
