//! `PyTensor`, the object behind `dlbridge.Tensor`: a core [`Tensor`] plus
//! PyTorch's `requires_grad` flag, its constructors and tiny accessors, and
//! when tensor work releases the GIL. Its Python methods are in `methods.rs`.
//!
//! Layer: the bottom of the tensor layer; it depends only on the crate core
//! and `errors`, and everything that takes or makes tensors sits above it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::errors::IntoPyResult;
use crate::Tensor;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Elements above which a computation releases the GIL.
const DETACH_THRESHOLD: usize = 1 << 15;

/// A tensor: a DLPack-exchangeable view of memory with PyTorch's API.
#[pyclass(name = "Tensor", module = "dlbridge", frozen, weakref, subclass)]
pub struct PyTensor {
    pub inner: Tensor,
    requires_grad: AtomicBool,
    /// Shape then element strides as int64, made on first request by the C
    /// exchange API's non-owning `DLTensor` view, which points into them.
    pub(crate) dl_dims: OnceLock<Box<[i64]>>,
}

impl PyTensor {
    pub fn new(inner: Tensor) -> PyTensor {
        PyTensor::with_grad(inner, false)
    }

    pub fn with_grad(inner: Tensor, requires_grad: bool) -> PyTensor {
        PyTensor {
            inner,
            requires_grad: AtomicBool::new(requires_grad),
            dl_dims: OnceLock::new(),
        }
    }

    /// A new tensor object over `inner` that keeps this one's `requires_grad`.
    pub(crate) fn derived(&self, inner: Tensor) -> PyTensor {
        PyTensor::with_grad(inner, self.requires_grad())
    }

    /// `f` applied to this tensor (without the GIL when the tensor is large),
    /// as a [`derived`](Self::derived) tensor.
    pub(crate) fn compute(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Tensor) -> crate::Result<Tensor> + Send,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(self.derived(maybe_detach(py, t.numel(), || f(t)).py()?))
    }

    pub fn requires_grad(&self) -> bool {
        self.requires_grad.load(Ordering::Relaxed)
    }

    /// The `requires_grad` setter: only float and complex tensors may require grad.
    pub(crate) fn set_requires_grad(&self, value: bool) -> PyResult<()> {
        let dt = self.inner.dtype();
        if value && !(dt.is_floating_point() || dt.is_complex()) {
            return Err(PyRuntimeError::new_err(
                "only Tensors of floating point and complex dtype can require gradients",
            ));
        }
        self.requires_grad.store(value, Ordering::Relaxed);
        Ok(())
    }

    /// PyTorch refuses in-place writes to leaves that require grad.
    pub(crate) fn check_inplace(&self) -> PyResult<()> {
        if self.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "a leaf Variable that requires grad is being used in an in-place operation.",
            ));
        }
        Ok(())
    }
}

/// Runs `f` without the GIL when the work is large enough to matter.
pub(crate) fn maybe_detach<T: Send>(
    py: Python<'_>,
    numel: usize,
    f: impl FnOnce() -> T + Send,
) -> T {
    if numel >= DETACH_THRESHOLD {
        py.detach(f)
    } else {
        f()
    }
}

/// `t.type()` with no argument: PyTorch's legacy type names.
pub(crate) fn legacy_type_name(t: &Tensor) -> String {
    let base = format!("{}Tensor", t.dtype().scalar_type_name());
    if t.device().is_cpu() {
        format!("dlbridge.{base}")
    } else {
        format!("dlbridge.cuda.{base}")
    }
}
