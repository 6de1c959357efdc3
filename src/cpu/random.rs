//! Uniform random numbers for `rand`: one process-wide generator, seeded from
//! the clock and reseedable with `manual_seed` for reproducible runs.

use super::copy::copy_into;
use super::strided::view_mut;
use crate::{Element as _, Result, Scalar, Tensor, with_compute_element};
use ndarray::Zip;
use std::sync::Mutex;

static RNG: Mutex<Option<fastrand::Rng>> = Mutex::new(None);

/// Reseeds the generator behind `rand` and `rand_like`.
///
/// ```standalone_crate
/// // (its own process: other examples draw from the same generator)
/// use dlbridge::{DType, Device, Tensor, manual_seed};
/// manual_seed(7);
/// let a = Tensor::rand(&[4], DType::F64, Device::CPU)?.to_vec::<f64>()?;
/// manual_seed(7);
/// assert_eq!(Tensor::rand(&[4], DType::F64, Device::CPU)?.to_vec::<f64>()?, a);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub fn manual_seed(seed: u64) {
    *RNG.lock().unwrap_or_else(|e| e.into_inner()) = Some(fastrand::Rng::with_seed(seed));
}

/// Fills a floating or complex tensor with values uniform in [0, 1); a
/// layout ndarray cannot write (misaligned memory) is filled through an
/// aligned staging copy.
pub(crate) fn fill_uniform(t: &Tensor) -> Result<()> {
    // SAFETY: probe only.
    if with_compute_element!(t.dtype(), T => unsafe { view_mut::<T>(t) }.is_none()) {
        let staged = Tensor::empty(t.shape(), t.dtype(), t.device())?;
        fill_uniform(&staged)?;
        return copy_into(t, &staged);
    }
    let mut guard = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let rng = guard.get_or_insert_with(fastrand::Rng::new);
    with_compute_element!(t.dtype(), T => {
        // SAFETY: the view exists (probed above) and t is ours to write.
        let Some(mut v) = (unsafe { view_mut::<T>(t) }) else {
            return Ok(());
        };
        let complex = t.dtype().is_complex();
        Zip::from(&mut v).for_each(|x| {
            let re = uniform(rng, t.dtype());
            *x = if complex { T::from_scalar(Scalar::Complex(re, uniform(rng, t.dtype()))) } else { T::from_scalar(Scalar::Float(re)) };
        });
    });
    Ok(())
}

/// A value in [0, 1) with the precision of the target type, so rounding can
/// never produce 1.0.
fn uniform(rng: &mut fastrand::Rng, dtype: crate::DType) -> f64 {
    let bits = match dtype.to_real() {
        crate::DType::F64 => 53,
        crate::DType::F32 => 24,
        crate::DType::F16 => 11,
        _ => 8,
    };
    (rng.u64(..) >> (64 - bits)) as f64 / (1u64 << bits) as f64
}

/// A fresh 64-bit seed from the same generator (the CUDA `rand` kernel is
/// counter-based and takes one seed per call), so `manual_seed` governs both.
#[cfg(feature = "cuda")]
pub(crate) fn next_seed() -> u64 {
    let mut guard = RNG.lock().unwrap_or_else(|e| e.into_inner());
    guard.get_or_insert_with(fastrand::Rng::new).u64(..)
}
