//! The pyo3 layer's public types: [`TensorArg`] and [`TensorArgMut`] take
//! any tensor a Python caller passes, zero-copy, and [`TensorOut`] hands one
//! back that every DLPack consumer takes. Arguments go through the same
//! routine as the Python package's own (`arg::read`), so a `#[pyfunction]`
//! of another crate accepts exactly what `dlbridge.from_dlpack` accepts.
//!
//! Layer: above `arg` and `dlpack_export`; `mod.rs` re-exports it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::arg::producer_tensor;
use super::dlpack_export::{dlpack_device, dlpack_keywords};
use super::errors::type_name;
use crate::Tensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use std::ops::Deref;

/// A tensor argument of a `#[pyfunction]`: any DLPack producer (a torch,
/// JAX, CuPy, TensorFlow, ... tensor, a NumPy array, a `dlbridge.Tensor`)
/// or DLPack capsule (versioned or legacy), imported zero-copy.
///
/// The import is `dlbridge.from_dlpack`'s: the producer's DLPack C exchange
/// API when its type publishes one; otherwise `__dlpack__` with
/// `max_version=(1, 3)`, retried with fewer keywords when the producer
/// refuses them with `TypeError`; for CUDA producers, `stream=1`, so the
/// producer's pending work is ordered before dlbridge's legacy default
/// stream. A read-only export (a `READ_ONLY` flag, a non-writeable array, a
/// JAX array) stays read-only: writes through it fail. A tensor that
/// requires grad is refused with torch's `BufferError`; numbers, lists and
/// other objects with a `TypeError`.
///
/// The tensor keeps the producer's memory alive (the producer's deleter runs
/// when the last dlbridge tensor over it is dropped), so it may outlive the
/// call. It derefs to [`Tensor`].
///
/// ```no_run
/// use dlbridge::python::{TensorArg, TensorOut};
/// use pyo3::prelude::*;
///
/// /// `x * k`, as a new tensor any framework's `from_dlpack` takes.
/// #[pyfunction]
/// fn scale(x: TensorArg, k: f64) -> PyResult<TensorOut> {
///     Ok(x.mul(k)?.into())
/// }
/// ```
pub struct TensorArg(Tensor);

impl TensorArg {
    /// The imported tensor.
    pub fn into_inner(self) -> Tensor {
        self.0
    }
}

impl Deref for TensorArg {
    type Target = Tensor;
    fn deref(&self) -> &Tensor {
        &self.0
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for TensorArg {
    type Error = PyErr;

    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match producer_tensor(&ob) {
            Ok((t, _copied)) => Ok(TensorArg(t)),
            Err(e) if e.is_instance_of::<PyTypeError>(ob.py()) => {
                Err(PyTypeError::new_err(format!(
                    "expected a tensor (an object with __dlpack__ and __dlpack_device__, \
                     or a DLPack capsule), got {}",
                    type_name(&ob)
                )))
            }
            Err(e) => Err(e),
        }
    }
}

/// A tensor argument the function writes into: a [`TensorArg`] that is
/// refused, with the `RuntimeError` dlbridge's in-place methods raise, when
/// its memory is read-only (a `READ_ONLY` DLPack export, a non-writeable
/// NumPy array, a JAX array) or when several of its elements share one
/// memory location (an `expand`ed view). Writes show in the producer's
/// tensor: the memory is the same.
///
/// ```no_run
/// use dlbridge::python::TensorArgMut;
/// use pyo3::prelude::*;
///
/// /// `x *= k` in place: the caller's torch or NumPy tensor changes.
/// #[pyfunction]
/// fn scale_(x: TensorArgMut, k: f64) -> PyResult<()> {
///     Ok(x.mul_(k)?)
/// }
/// ```
pub struct TensorArgMut(Tensor);

impl TensorArgMut {
    /// The imported tensor.
    pub fn into_inner(self) -> Tensor {
        self.0
    }
}

impl Deref for TensorArgMut {
    type Target = Tensor;
    fn deref(&self) -> &Tensor {
        &self.0
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for TensorArgMut {
    type Error = PyErr;

    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let t = TensorArg::extract(ob)?.into_inner();
        t.ensure_writable()?;
        Ok(TensorArgMut(t))
    }
}

/// A tensor returned to Python: an object with `__dlpack__` and
/// `__dlpack_device__` that `torch.from_dlpack`, `np.from_dlpack`,
/// `jax.dlpack.from_dlpack`, `cupy.from_dlpack` and `dlbridge.from_dlpack`
/// take zero-copy (the export is `dlbridge.Tensor.__dlpack__`'s: every
/// keyword of the DLPack Python spec, versioned and legacy capsules, CUDA
/// streams). It also tells its `shape`, `dtype` and `device`. Python sees
/// the class `DLPackTensor`.
///
/// ```no_run
/// use dlbridge::python::TensorOut;
/// use dlbridge::{DType, Device, Tensor};
/// use pyo3::prelude::*;
///
/// #[pyfunction]
/// fn zeros(n: usize) -> PyResult<TensorOut> {
///     Ok(Tensor::zeros(&[n], DType::F32, Device::CPU)?.into())
/// }
/// ```
#[pyclass(name = "DLPackTensor", frozen)]
pub struct TensorOut(Tensor);

impl TensorOut {
    /// The tensor it exports.
    pub fn tensor(&self) -> &Tensor {
        &self.0
    }
}

impl From<Tensor> for TensorOut {
    fn from(t: Tensor) -> TensorOut {
        TensorOut(t)
    }
}

#[pymethods]
impl TensorOut {
    /// Exports the tensor as a DLPack capsule (the DLPack Python protocol).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let keywords = [stream, max_version, dl_device, copy].map(|k| k.map(|v| v.as_borrowed()));
        dlpack_keywords(py, &self.0, false, keywords)
    }

    /// `(device_type, device_id)` as DLPack numbers them.
    fn __dlpack_device__(&self) -> (u32, i32) {
        dlpack_device(&self.0)
    }

    /// The sizes of the dimensions.
    #[getter]
    fn shape(&self) -> Vec<usize> {
        self.0.shape().to_vec()
    }

    /// The element type's name, as torch spells it (`"float32"`).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.0.dtype().name()
    }

    /// The device, as torch spells it (`"cpu"`, `"cuda:0"`).
    #[getter]
    fn device(&self) -> String {
        self.0.device().to_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "DLPackTensor(shape={:?}, dtype={}, device='{}')",
            self.0.shape(),
            self.0.dtype().name(),
            self.0.device()
        )
    }
}
