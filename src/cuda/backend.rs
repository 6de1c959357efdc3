//! CUDA's implementation of [`Backend`] and [`Accelerator`]: kernels from
//! `kernels/`, copies from `transfer.rs`, devices from `runtime.rs`.

use super::runtime::{self, gpu_of};
use super::{kernels, library, memory, stream, transfer};
use crate::backend::{
    Accelerator, Backend, BinaryOp, CompareOp, CudaIpcHandle, ReduceOp, Rhs, UnaryOp,
};
use crate::storage::{DeviceQueue, Storage};
use crate::{DType, Device, DeviceKind, Result, Scalar, Tensor};
use std::sync::Arc;

/// NVIDIA GPUs, through the driver API (cudarc, loaded at run time).
pub struct Cuda;

impl Backend for Cuda {
    fn allocate(&self, device: Device, bytes: usize, zeroed: bool) -> Result<Storage> {
        memory::new_storage(device, bytes, zeroed)
    }

    fn copy(&self, dst: &Tensor, src: &Tensor) -> Result<()> {
        let (to, from) = (dst.dtype(), src.dtype());
        if to != from && (to.is_storage_only() || from.is_storage_only()) {
            // No kernel converts the float8/float6/float4 formats: the host
            // casts, between two transfers.
            return dst.copy_(&src.to_device(Device::CPU)?.to_dtype(to)?);
        }
        kernels::copy_into(dst, src)
    }

    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()> {
        kernels::fill(dst, value)
    }

    fn binary(&self, out: &Tensor, lhs: &Tensor, rhs: Rhs, op: BinaryOp) -> Result<()> {
        kernels::binary(out, lhs, rhs, op)
    }

    fn divide_casting(&self, _: &Tensor, _: &Tensor, _: DType) -> Result<Option<Tensor>> {
        Ok(None) // the kernels take one dtype: the operands are cast first, a block at a time
    }

    fn unary(&self, out: &Tensor, src: &Tensor, op: UnaryOp) -> Result<()> {
        match op {
            // -x is x * -1 in every dtype (wrapping for unsigned ones, as in PyTorch).
            UnaryOp::Neg => kernels::binary(
                out,
                src,
                Rhs::Scalar {
                    value: Scalar::Int(-1),
                    left: false,
                },
                BinaryOp::Mul,
            ),
            op => kernels::unary(out, src, op),
        }
    }

    fn compare(&self, out: &Tensor, lhs: &Tensor, rhs: Rhs, op: CompareOp) -> Result<()> {
        kernels::compare(out, lhs, rhs, op)
    }

    fn reduce(
        &self,
        src: &Tensor,
        dims: &[usize],
        op: ReduceOp,
        out: &Tensor,
        indices: Option<&Tensor>,
    ) -> Result<()> {
        kernels::reduce(src, dims, op, out, indices)
    }

    fn random(&self, dst: &Tensor) -> Result<()> {
        kernels::rand(dst)
    }

    fn block_elements(&self) -> usize {
        1 << 22 // 32 MiB of float64: a few launches a block, not thousands an op
    }

    fn transfer_into(&self, t: &Tensor, out: &Tensor, fresh: bool) -> Result<()> {
        debug_assert!(out.is_contiguous() && out.shape() == t.shape() && out.dtype() == t.dtype());
        if t.numel() == 0 {
            return Ok(());
        }
        let bytes = t.nbytes();
        let target = out.device();
        match (t.device().kind, target.kind) {
            (DeviceKind::Cpu, DeviceKind::Cuda) => {
                let src = crate::cpu::materialize(&t.contiguous()?)?;
                let gpu = gpu_of(target)?;
                out.storage().mark_device_use(&Cuda);
                // SAFETY: src is a contiguous host tensor of `bytes` bytes, alive for this call.
                let host = unsafe { std::slice::from_raw_parts(src.data_ptr(), bytes) };
                transfer::host_to_device(gpu, out.data_ptr() as u64, host)?;
            }
            (DeviceKind::Cuda, DeviceKind::Cpu) => {
                let src = t.contiguous()?;
                let gpu = gpu_of(src.device())?;
                src.storage().mark_device_use(&Cuda);
                // SAFETY: out is a contiguous host tensor of `bytes` bytes that
                // nothing else reads or writes during the copy.
                let host = unsafe { std::slice::from_raw_parts_mut(out.data_ptr(), bytes) };
                transfer::device_to_host(gpu, host, src.data_ptr() as u64, fresh)?;
            }
            (DeviceKind::Cuda, DeviceKind::Cuda) => {
                let src = t.contiguous()?;
                src.storage().mark_device_use(&Cuda);
                out.storage().mark_device_use(&Cuda);
                transfer::device_to_device(
                    gpu_of(target)?,
                    out.data_ptr() as u64,
                    gpu_of(src.device())?,
                    src.data_ptr() as u64,
                    bytes,
                )?;
            }
            (DeviceKind::Cpu, DeviceKind::Cpu) => return out.copy_(t),
        }
        Ok(())
    }
}

impl Accelerator for Cuda {
    fn is_available(&self) -> bool {
        runtime::device_count() > 0
    }

    fn device_count(&self) -> usize {
        runtime::device_count()
    }

    fn unavailable_reason(&self) -> Option<String> {
        runtime::unavailable_reason()
    }

    fn resolve(&self, device: Device) -> Result<Device> {
        match device.kind {
            DeviceKind::Cpu => Ok(Device::CPU),
            DeviceKind::Cuda => Ok(gpu_of(device)?.device()),
        }
    }

    fn synchronize(&self, index: Option<u32>) -> Result<()> {
        match index {
            Some(i) => runtime::gpu(i)?.synchronize(),
            None => {
                if !self.is_available() {
                    return Err(crate::Error::no_cuda(Device::cuda(None)));
                }
                runtime::opened().try_for_each(|gpu| gpu.synchronize())
            }
        }
    }

    fn empty_cache(&self) -> Result<()> {
        if !self.is_available() {
            return Err(crate::Error::no_cuda(Device::cuda(None)));
        }
        runtime::opened().try_for_each(|gpu| gpu.empty_cache())
    }

    fn device_name(&self, index: u32) -> Result<String> {
        Ok(runtime::describe(index)?.0)
    }

    fn capability(&self, index: u32) -> Result<(i32, i32)> {
        let (_, major, minor) = runtime::describe(index)?;
        Ok((major, minor))
    }

    fn check_stream(&self, stream: i64) -> Result<()> {
        stream::check_stream(stream)
    }

    fn order_before_consumer(&self, device: Device, stream: i64) -> Result<()> {
        stream::order_before_consumer(device, stream)
    }

    fn wait_for_producer(&self, device: Device, stream: i64) -> Result<()> {
        stream::wait_for_producer(device, stream)
    }

    fn add_library_roots(&self, roots: Vec<std::path::PathBuf>) {
        library::add_package_roots(roots)
    }

    fn export_ipc(&self, storage: &Arc<Storage>) -> Result<CudaIpcHandle> {
        memory::export_ipc(storage)
    }

    fn import_ipc(&self, handle: &CudaIpcHandle, read_only: bool) -> Result<Arc<Storage>> {
        memory::import_ipc(handle, read_only)
    }
}

impl DeviceQueue for Cuda {
    /// Imported memory dlbridge used goes back to its owner next.
    fn finish(&self, device: Device) {
        if let Ok(gpu) = gpu_of(device) {
            let _ = gpu.synchronize();
        }
    }
}
