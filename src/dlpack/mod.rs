//! Crossing the DLPack ABI: building managed tensors for consumers
//! ([`export`]) and validating what producers hand in ([`import`]).

pub mod export;
pub mod import;

pub use export::{ExportOptions, VERSION, borrowed_view, export_legacy, export_versioned};
pub use import::import_versioned_or_legacy;
