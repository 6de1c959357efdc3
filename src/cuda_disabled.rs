//! Stand-in for the CUDA backend when dlbridge is built without the `cuda`
//! feature: the same [`Backend`], [`Accelerator`] and [`DeviceQueue`]
//! contract as `cuda/backend.rs` (the compiler checks both against the
//! traits), and the same free functions as `cuda/mod.rs` exports, so no
//! caller needs a `cfg` pair; each request says that CUDA is not available.

use crate::backend::{
    Accelerator, Backend, BinaryOp, CompareOp, CudaIpcHandle, ReduceOp, Rhs, UnaryOp,
};
use crate::storage::{DeviceQueue, Storage};
use crate::{DType, Device, Error, ErrorKind, Result, Scalar, Tensor};
use std::path::PathBuf;
use std::sync::Arc;

/// CUDA, as a build without it sees it.
pub struct Cuda;

fn off<T>(device: Device) -> Result<T> {
    Err(Error::no_cuda(device))
}

/// Why this build has no NVRTC or kernels.
const NOT_BUILT: &str = "dlbridge was built without its CUDA backend (cargo feature `cuda`)";

/// The NVRTC version: none in this build.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    Err(Error::new(ErrorKind::NoCuda, NOT_BUILT))
}

/// Where libnvrtc was found: nowhere in this build.
pub fn nvrtc_path() -> Option<PathBuf> {
    None
}

/// Compiles every kernel file: none in this build.
pub fn compile_all(_target: &str) -> Result<Vec<(&'static str, usize)>> {
    Err(Error::new(ErrorKind::NoCuda, NOT_BUILT))
}

/// Where compiled kernels are kept: nowhere in this build.
pub fn cache_dir() -> Option<PathBuf> {
    None
}

impl Backend for Cuda {
    fn allocate(&self, device: Device, _bytes: usize, _zeroed: bool) -> Result<Storage> {
        off(device)
    }
    fn copy(&self, dst: &Tensor, _src: &Tensor) -> Result<()> {
        off(dst.device())
    }
    fn fill(&self, dst: &Tensor, _value: Scalar) -> Result<()> {
        off(dst.device())
    }
    fn binary(&self, out: &Tensor, _lhs: &Tensor, _rhs: Rhs, _op: BinaryOp) -> Result<()> {
        off(out.device())
    }
    fn divide_casting(&self, lhs: &Tensor, _: &Tensor, _: DType) -> Result<Option<Tensor>> {
        off(lhs.device())
    }
    fn unary(&self, out: &Tensor, _src: &Tensor, _op: UnaryOp) -> Result<()> {
        off(out.device())
    }
    fn compare(&self, out: &Tensor, _lhs: &Tensor, _rhs: Rhs, _op: CompareOp) -> Result<()> {
        off(out.device())
    }
    fn reduce(
        &self,
        src: &Tensor,
        _dims: &[usize],
        _op: ReduceOp,
        _out: &Tensor,
        _indices: Option<&Tensor>,
    ) -> Result<()> {
        off(src.device())
    }
    fn random(&self, dst: &Tensor) -> Result<()> {
        off(dst.device())
    }
    fn block_elements(&self) -> usize {
        1 << 16
    }
    fn transfer_into(&self, src: &Tensor, dst: &Tensor, _fresh: bool) -> Result<()> {
        off(Device::host_last(src.device(), dst.device()).0)
    }
}

impl Accelerator for Cuda {
    fn is_available(&self) -> bool {
        false
    }
    fn device_count(&self) -> usize {
        0
    }
    fn unavailable_reason(&self) -> Option<String> {
        Some(NOT_BUILT.into())
    }
    fn resolve(&self, device: Device) -> Result<Device> {
        if device.is_cpu() {
            Ok(Device::CPU)
        } else {
            off(device)
        }
    }
    fn synchronize(&self, index: Option<u32>) -> Result<()> {
        off(Device::cuda(index))
    }
    fn empty_cache(&self) -> Result<()> {
        off(Device::cuda(None))
    }
    fn device_name(&self, index: u32) -> Result<String> {
        off(Device::cuda(Some(index)))
    }
    fn capability(&self, index: u32) -> Result<(i32, i32)> {
        off(Device::cuda(Some(index)))
    }
    fn check_stream(&self, _stream: i64) -> Result<()> {
        Ok(())
    }
    fn order_before_consumer(&self, device: Device, _stream: i64) -> Result<()> {
        off(device)
    }
    fn wait_for_producer(&self, device: Device, _stream: i64) -> Result<()> {
        off(device)
    }
    fn add_library_roots(&self, _roots: Vec<std::path::PathBuf>) {}
    fn export_ipc(&self, storage: &Arc<Storage>) -> Result<CudaIpcHandle> {
        off(storage.device())
    }
    fn import_ipc(&self, handle: &CudaIpcHandle, _read_only: bool) -> Result<Arc<Storage>> {
        off(Device::cuda(Some(handle.device)))
    }
}

impl DeviceQueue for Cuda {
    fn finish(&self, _device: Device) {}
}
