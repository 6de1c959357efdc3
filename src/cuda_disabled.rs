//! Stand-in for the CUDA backend when dlbridge is built without the `cuda`
//! feature: the same functions, each saying CUDA is not available.

use crate::cpu::BinaryOp;
use crate::storage::Storage;
use crate::{DType, Device, Error, Result, Scalar, Tensor};

fn off<T>(device: Device) -> Result<T> {
    Err(Error::no_cuda(device))
}

pub fn is_available() -> bool {
    false
}
pub fn device_count() -> usize {
    0
}
pub fn unavailable_reason() -> Option<String> {
    Some("dlbridge was built without its CUDA backend (cargo feature `cuda`)".into())
}
pub fn synchronize(device: Option<u32>) -> Result<()> {
    off(Device::cuda(device))
}
pub fn empty_cache() -> Result<()> {
    off(Device::cuda(None))
}
pub fn device_name(index: u32) -> Result<String> {
    off(Device::cuda(Some(index)))
}
pub fn capability(index: u32) -> Result<(i32, i32)> {
    off(Device::cuda(Some(index)))
}
pub fn resolve(device: Device) -> Result<Device> {
    if device.is_cpu() {
        Ok(Device::CPU)
    } else {
        off(device)
    }
}
pub fn check_stream(_stream: i64) -> Result<()> {
    Ok(())
}
pub fn order_before_consumer(device: Device, _stream: i64) -> Result<()> {
    off(device)
}
pub fn wait_for_producer(device: Device, _stream: i64) -> Result<()> {
    off(device)
}
pub fn new_storage(device: Device, _bytes: usize, _zeroed: bool) -> Result<Storage> {
    off(device)
}
pub(crate) fn before_foreign_release(_device: Device) {}
pub(crate) fn to_device(t: &Tensor, target: Device) -> Result<Tensor> {
    off(if target.is_cpu() { t.device() } else { target })
}
pub(crate) fn binary(
    out: &Tensor,
    _a: &Tensor,
    _b: Option<&Tensor>,
    _s: Scalar,
    _left: bool,
    _op: BinaryOp,
) -> Result<()> {
    off(out.device())
}
pub(crate) fn copy_into(dst: &Tensor, _src: &Tensor) -> Result<()> {
    off(dst.device())
}
pub(crate) fn fill(dst: &Tensor, _value: Scalar) -> Result<()> {
    off(dst.device())
}
pub(crate) fn sum(src: &Tensor, _dtype: DType, _scale: f64) -> Result<Tensor> {
    off(src.device())
}
pub(crate) fn rand(t: &Tensor) -> Result<()> {
    off(t.device())
}
pub fn add_package_roots(_roots: impl IntoIterator<Item = std::path::PathBuf>) {}
