//! The CPU backend: strided, broadcasting loops over host memory.
//!
//! Typed loops run on `ndarray` views. Layouts ndarray cannot describe
//! (misaligned data, strides that are not whole elements, self-overlapping
//! destinations) go through a byte-wise gather/scatter first, so every layout
//! NumPy allows still computes correctly.

mod arith;
mod copy;
mod elementwise;
mod random;
mod reduce;
mod strided;

pub use arith::BinaryOp;
pub(crate) use copy::{copy_into, materialize};
pub(crate) use elementwise::{binary_inplace, binary_into, fill, neg_into};
pub(crate) use random::fill_uniform;
pub use random::manual_seed;
#[cfg(feature = "cuda")]
pub(crate) use random::next_seed;
pub(crate) use reduce::sum_all;
