//! libdlbridge for C and C++ (include/dlbridge.h).
//!
//! The `dlb_*` functions are written in the core crate under its `capi`
//! feature (`src/capi/`); re-exporting them here makes them this library's
//! exported symbols.

pub use dlbridge_core::capi::*;
