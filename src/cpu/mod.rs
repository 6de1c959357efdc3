//! The CPU backend: strided, broadcasting loops over host memory.
//!
//! Typed loops run on `ndarray` views. Layouts ndarray cannot describe
//! (misaligned data, strides that are not whole elements, self-overlapping
//! destinations) go through a byte-wise gather/scatter first, so every layout
//! NumPy allows still computes correctly.

mod arith;
mod backend;
mod cast;
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod cast_x86;
mod copy;
mod elementwise;
mod exp64;
mod extreme;
mod isa;
mod kernel;
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod log32;
mod narrow;
mod numpy_sum;
mod operand;
mod parallel;
mod plan;
mod pow;
mod random;
mod reduce;
mod reduce_run;
mod round_once;
mod rounding;
mod row_groups;
mod sqrt;
mod strided;
mod sum_lanes;
mod transpose;
mod vmath;
mod vpow;
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod vpow_avx2;
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod vpow_avx512;
mod vpow_table;

pub(crate) use backend::Cpu;
pub(crate) use copy::materialize;
pub use random::manual_seed;
#[cfg(feature = "cuda")]
pub(crate) use random::next_seed;
pub(crate) use strided::{view, view_mut};
