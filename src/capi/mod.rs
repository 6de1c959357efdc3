//! The C ABI (feature `capi`): `include/dlbridge.h` is generated from this
//! module by cbindgen (`tests/c_header.rs` fails when the checked-in header
//! is stale).
//!
//! Conventions, for every function:
//! - a `dlb_status` comes back; `DLB_OK` (0) is success, anything else an
//!   error whose message `dlb_last_error()` returns on the same thread;
//! - results go through out-pointers, which are written only on success;
//! - no panic crosses the boundary (it becomes `DLB_ERR_INTERNAL`);
//! - `dlb_tensor` handles may be used from any thread; writing the same
//!   memory from two threads at once is the caller's race, as in C.

// Every entry point is `unsafe`: it trusts its pointer arguments as the
// header documents (live handles, readable arrays of `ndim` values, writable
// out-pointers). That shared contract is the safety section of each one.
#![allow(clippy::missing_safety_doc)]

mod error;
mod ops;
mod tensor;

pub use error::*;
pub use ops::*;
pub use tensor::*;
