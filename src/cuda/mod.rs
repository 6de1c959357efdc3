//! The CUDA backend (feature `cuda`).
//!
//! cudarc loads `libcuda` and `libnvrtc` at run time, so this module is in
//! every build: without a driver, `Cuda.is_available()` is false and each CUDA
//! request is a clear `RuntimeError`. Layout:
//! - `library`: finding libnvrtc where users have it;
//! - `driver`: the thin fallible layer over raw driver calls (events, copies);
//! - `runtime`: devices, primary contexts, the memory pool, kernel loading
//!   (with `driver`, the only code that calls the driver);
//! - `compile`: NVRTC, cubins, the on-disk cache;
//! - `memory`, `transfer`: allocations and copies;
//! - `kernels`: launching `kernels/*.cu` on tensors;
//! - `stream`: the DLPack `stream` protocol;
//! - `backend`: all of the above as the crate's `Backend` and `Accelerator`.

mod backend;
mod compile;
mod driver;
mod kernels;
mod library;
mod memory;
mod runtime;
mod stream;
mod transfer;

pub use backend::Cuda;
pub use compile::{cache_dir, compile_all, nvrtc_version};
pub use library::nvrtc_path;
