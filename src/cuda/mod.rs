//! The CUDA backend (feature `cuda`).
//!
//! cudarc loads `libcuda` and `libnvrtc` at run time, so this module is in
//! every build: without a driver, [`is_available`] is false and each CUDA
//! request is a clear `RuntimeError`. Layout:
//! - `library`: finding libnvrtc where users have it;
//! - `runtime`: devices, primary contexts, the memory pool, kernel loading;
//! - `compile`: NVRTC, cubins, the on-disk cache;
//! - `memory`, `transfer`: allocations and copies;
//! - `kernels`: launching `kernels/*.cu` on tensors;
//! - `stream`: the DLPack `stream` protocol.

mod compile;
mod kernels;
mod library;
mod memory;
mod runtime;
mod stream;
mod transfer;

pub use compile::{cache_dir, compile_all, nvrtc_version};
pub(crate) use kernels::{binary, copy_into, fill, rand, sum};
pub use library::{add_package_roots, nvrtc_path};
pub use memory::{CudaAllocation, new_storage};
pub use runtime::{device_count, is_available, unavailable_reason};
pub use stream::{check_stream, order_before_consumer, wait_for_producer};

use crate::{Device, DeviceKind, Result, Tensor};

/// Waits for all of dlbridge's work on `device` (on every device dlbridge
/// has used when `None`).
pub fn synchronize(device: Option<u32>) -> Result<()> {
    match device {
        Some(i) => runtime::gpu(i)?.synchronize(),
        None => {
            if !is_available() {
                return Err(crate::Error::no_cuda(Device::cuda(None)));
            }
            runtime::opened().try_for_each(|gpu| gpu.synchronize())
        }
    }
}

/// Gives dlbridge's cached free device memory back to the driver, so
/// PyTorch, CuPy or JAX can allocate it (`torch.cuda.empty_cache()`).
pub fn empty_cache() -> Result<()> {
    if !is_available() {
        return Err(crate::Error::no_cuda(Device::cuda(None)));
    }
    runtime::opened().try_for_each(|gpu| gpu.empty_cache())
}

/// The device's name, e.g. "NVIDIA H100 80GB HBM3" (opens no context).
pub fn device_name(index: u32) -> Result<String> {
    Ok(runtime::describe(index)?.0)
}

/// `(major, minor)` compute capability of a device (opens no context).
pub fn capability(index: u32) -> Result<(i32, i32)> {
    let (_, major, minor) = runtime::describe(index)?;
    Ok((major, minor))
}

/// Resolves `cuda` (no index) to `cuda:0` and checks the device exists.
pub fn resolve(device: Device) -> Result<Device> {
    match device.kind {
        DeviceKind::Cpu => Ok(Device::CPU),
        DeviceKind::Cuda => Ok(runtime::gpu_of(device)?.device()),
    }
}

/// Called when an imported CUDA storage that dlbridge's stream used is
/// released: the producer may reuse that memory on another stream at once,
/// so dlbridge's pending work on it must finish first.
pub(crate) fn before_foreign_release(device: Device) {
    if let Ok(gpu) = runtime::gpu_of(device) {
        let _ = gpu.synchronize();
    }
}

/// A copy of `t` on `target` (another device), always fresh memory.
pub(crate) fn to_device(t: &Tensor, target: Device) -> Result<Tensor> {
    let target = resolve(target)?;
    let out = Tensor::empty(t.shape(), t.dtype(), target)?;
    if t.numel() == 0 {
        return Ok(out);
    }
    let bytes = t.nbytes();
    match (t.device().kind, target.kind) {
        (DeviceKind::Cpu, DeviceKind::Cuda) => {
            let src = crate::cpu::materialize(&t.contiguous()?)?;
            let gpu = runtime::gpu_of(target)?;
            out.storage().mark_device_use();
            // SAFETY: src is a contiguous host tensor of `bytes` bytes, alive for this call.
            let host = unsafe { std::slice::from_raw_parts(src.data_ptr(), bytes) };
            transfer::host_to_device(gpu, out.data_ptr() as u64, host)?;
        }
        (DeviceKind::Cuda, DeviceKind::Cpu) => {
            let src = t.contiguous()?;
            let gpu = runtime::gpu_of(src.device())?;
            src.storage().mark_device_use();
            // SAFETY: out is a fresh contiguous host buffer of `bytes` bytes.
            let host = unsafe { std::slice::from_raw_parts_mut(out.data_ptr(), bytes) };
            transfer::device_to_host(gpu, host, src.data_ptr() as u64)?;
        }
        (DeviceKind::Cuda, DeviceKind::Cuda) => {
            let src = t.contiguous()?;
            src.storage().mark_device_use();
            out.storage().mark_device_use();
            transfer::device_to_device(
                runtime::gpu_of(target)?,
                out.data_ptr() as u64,
                runtime::gpu_of(src.device())?,
                src.data_ptr() as u64,
                bytes,
            )?;
        }
        (DeviceKind::Cpu, DeviceKind::Cpu) => unreachable!("callers handle host to host"),
    }
    Ok(out)
}
