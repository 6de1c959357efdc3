//! `dlbridge.Tensor`: PyTorch's tensor methods over a core [`Tensor`].

use super::convert::{nested_list, to_scalar};
use super::device::{PyDevice, extract_device, extract_opt_device};
use super::dtype::{PyDType, dtype_object, extract_dtype, extract_opt_dtype};
use super::errors::IntoPyResult;
use super::index::parse_key;
use crate::ops::{self, Operand};
use crate::{BinaryOp, DType, Device, Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
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
    pub(crate) dl_dims: std::sync::OnceLock<Box<[i64]>>,
}

impl PyTensor {
    pub fn new(inner: Tensor) -> PyTensor {
        PyTensor::with_grad(inner, false)
    }

    pub fn with_grad(inner: Tensor, requires_grad: bool) -> PyTensor {
        PyTensor {
            inner,
            requires_grad: AtomicBool::new(requires_grad),
            dl_dims: std::sync::OnceLock::new(),
        }
    }

    pub fn requires_grad(&self) -> bool {
        self.requires_grad.load(Ordering::Relaxed)
    }

    /// PyTorch refuses in-place writes to leaves that require grad.
    fn check_inplace(&self) -> PyResult<()> {
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

/// The right-hand side of an arithmetic operator, or `None` for NotImplemented.
enum Rhs {
    Tensor(Tensor, bool),
    Scalar(Scalar),
}

fn rhs(ob: &Bound<'_, PyAny>) -> PyResult<Option<Rhs>> {
    if let Ok(t) = ob.cast::<PyTensor>() {
        let t = t.get();
        return Ok(Some(Rhs::Tensor(t.inner.clone(), t.requires_grad())));
    }
    if let Some(s) = to_scalar(ob)? {
        return Ok(Some(Rhs::Scalar(s)));
    }
    if super::numpy::is_ndarray(ob) {
        return Ok(Some(Rhs::Tensor(
            super::numpy::tensor_from_ndarray(ob)?,
            false,
        )));
    }
    Ok(None)
}

static SIZE_TYPE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `dlbridge.Size(...)`, the tuple subclass PyTorch returns for shapes.
fn size_object<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let tuple = PyTuple::new(py, shape)?;
    match SIZE_TYPE.get_or_try_init(py, || -> PyResult<_> {
        Ok(py.import("dlbridge")?.getattr("Size")?.unbind())
    }) {
        Ok(size) => size.bind(py).call1((tuple,)),
        Err(_) => Ok(tuple.into_any()),
    }
}

fn normalize_dim(dim: isize, ndim: usize) -> PyResult<usize> {
    let n = ndim.max(1) as isize;
    let d = if dim < 0 { dim + n } else { dim };
    if d < 0 || d >= n {
        return Err(pyo3::exceptions::PyIndexError::new_err(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -n,
            n - 1
        )));
    }
    Ok(d as usize)
}

/// Shape arguments as PyTorch takes them: `f(2, 3)` or `f((2, 3))`.
pub(crate) fn parse_size(args: &Bound<'_, PyTuple>) -> PyResult<Vec<usize>> {
    check_sizes(&size_values(args)?, None)
}

/// The raw (possibly negative) sizes in `f(2, 3)` or `f((2, 3))`.
pub(crate) fn size_values(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    let items = if args.len() == 1 && !args.get_item(0)?.is_instance_of::<pyo3::types::PyInt>() {
        args.get_item(0)?
            .try_iter()?
            .collect::<PyResult<Vec<_>>>()?
    } else {
        args.iter().collect()
    };
    items
        .iter()
        .map(|i| {
            i.extract::<i64>().map_err(|_| {
                let kind = i
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default();
                PyTypeError::new_err(format!("size must be a tuple of ints, not {kind}"))
            })
        })
        .collect()
}

/// Refuses negative sizes with PyTorch's message (`zeros` has its own).
pub(crate) fn check_sizes(sizes: &[i64], factory: Option<&str>) -> PyResult<Vec<usize>> {
    if let Some(&bad) = sizes.iter().find(|&&n| n < 0) {
        return Err(PyRuntimeError::new_err(match factory {
            Some(name) => format!("{name}: Dimension size must be non-negative."),
            None => format!("Trying to create tensor with negative dimension {bad}: {sizes:?}"),
        }));
    }
    Ok(sizes.iter().map(|&n| n as usize).collect())
}

impl PyTensor {
    /// `self op other`; NotImplemented for operands dlbridge does not know,
    /// so Python can try the other side and then raise its own TypeError.
    fn binary(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        op: BinaryOp,
        reflected: bool,
    ) -> PyResult<Py<PyAny>> {
        let Some(r) = rhs(other)? else {
            return Ok(py.NotImplemented());
        };
        let a = &self.inner;
        let (out, rg) = match &r {
            Rhs::Tensor(b, rg) => {
                let (x, y) = if reflected { (b, a) } else { (a, b) };
                let n = x.numel().max(y.numel());
                (
                    maybe_detach(py, n, || ops::binary(x.into(), y.into(), op)),
                    *rg,
                )
            }
            Rhs::Scalar(s) => {
                let (x, y): (Operand, Operand) = if reflected {
                    ((*s).into(), a.into())
                } else {
                    (a.into(), (*s).into())
                };
                (maybe_detach(py, a.numel(), || ops::binary(x, y, op)), false)
            }
        };
        Ok(Py::new(
            py,
            PyTensor::with_grad(out.py()?, self.requires_grad() || rg),
        )?
        .into_any())
    }

    fn binary_inplace(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        op: BinaryOp,
    ) -> PyResult<()> {
        self.check_inplace()?;
        let r = rhs(other)?.ok_or_else(|| {
            PyTypeError::new_err(format!(
                "unsupported operand type for in-place arithmetic: '{}'",
                other
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        let dst = &self.inner;
        match r {
            Rhs::Tensor(b, _) => {
                maybe_detach(py, dst.numel(), || ops::binary_(dst, (&b).into(), op)).py()
            }
            Rhs::Scalar(s) => {
                maybe_detach(py, dst.numel(), || ops::binary_(dst, s.into(), op)).py()
            }
        }
    }

    /// The single value behind `float(t)` and `int(t)`.
    fn scalar_value(&self) -> PyResult<Scalar> {
        if self.inner.numel() != 1 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "only one element tensors can be converted to Python scalars",
            ));
        }
        self.inner.item().py()
    }

    fn derived(&self, inner: Tensor) -> PyTensor {
        PyTensor::with_grad(inner, self.requires_grad())
    }

    /// The shared body of `to`, `cuda`, `cpu`, `type` and the dtype shortcuts:
    /// the same object when nothing changes, a new tensor otherwise.
    fn convert(
        slf: &Bound<'_, Self>,
        device: Option<Device>,
        dtype: Option<DType>,
        copy: bool,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let t = &this.inner;
        let device = device.map(resolve_device);
        let same_device = device.is_none_or(|d| d == t.device());
        let same_dtype = dtype.is_none_or(|d| d == t.dtype());
        if same_device && same_dtype && !copy {
            return Ok(slf.clone().into_any().unbind());
        }
        let out = maybe_detach(py, t.numel(), || -> crate::Result<Tensor> {
            let moved = match device {
                Some(d) if d != t.device() => t.to_device(d)?,
                _ => t.clone(),
            };
            let cast = moved.to_dtype(dtype.unwrap_or(t.dtype()))?;
            if copy && cast.storage().as_ptr() == t.storage().as_ptr() {
                cast.clone_data()
            } else {
                Ok(cast)
            }
        })
        .py()?;
        Ok(Py::new(py, this.derived(out))?.into_any())
    }
}

/// `cuda` without an index means the current device, which is device 0
/// (as in PyTorch, a `cuda:1` tensor's `.to('cuda')` moves to it).
fn resolve_device(d: Device) -> Device {
    match (d.kind, d.index) {
        (crate::DeviceKind::Cuda, None) => Device::cuda(Some(0)),
        _ => d.canonical(),
    }
}

#[pymethods]
impl PyTensor {
    /// `Tensor(data)`: a float32 copy of `data`; `Tensor(2, 3)`: a 2x3 tensor.
    #[new]
    #[pyo3(signature = (*args))]
    fn py_new(args: &Bound<'_, PyTuple>) -> PyResult<Self> {
        let py = args.py();
        if args.is_empty() {
            return Ok(PyTensor::new(
                Tensor::zeros(&[0], DType::F32, Device::CPU).py()?,
            ));
        }
        let first = args.get_item(0)?;
        if first.is_instance_of::<pyo3::types::PyInt>() {
            return Ok(PyTensor::new(
                Tensor::zeros(&parse_size(args)?, DType::F32, Device::CPU).py()?,
            ));
        }
        if args.len() != 1 {
            return Err(PyTypeError::new_err(
                "Tensor() takes either sizes or one data argument",
            ));
        }
        let t = super::creation::tensor_from_data(py, &first, Some(DType::F32), None)?;
        Ok(PyTensor::new(t))
    }

    // ----- metadata -----

    #[getter]
    fn dtype(&self, py: Python<'_>) -> Py<PyDType> {
        dtype_object(py, self.inner.dtype())
    }

    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice(self.inner.device())
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        size_object(py, self.inner.shape())
    }

    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<isize>) -> PyResult<Bound<'py, PyAny>> {
        match dim {
            None => size_object(py, self.inner.shape()),
            Some(d) => {
                let shape = self.inner.shape();
                let d = normalize_dim(d, shape.len())?;
                Ok(shape
                    .get(d)
                    .copied()
                    .unwrap_or(1)
                    .into_pyobject(py)?
                    .into_any())
            }
        }
    }

    #[pyo3(signature = (dim=None))]
    fn stride<'py>(&self, py: Python<'py>, dim: Option<isize>) -> PyResult<Bound<'py, PyAny>> {
        let strides = self.inner.strides().py()?;
        match dim {
            None => Ok(PyTuple::new(py, strides)?.into_any()),
            Some(d) => {
                let d = normalize_dim(d, strides.len())?;
                Ok(strides
                    .get(d)
                    .copied()
                    .unwrap_or(1)
                    .into_pyobject(py)?
                    .into_any())
            }
        }
    }

    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }

    fn dim(&self) -> usize {
        self.inner.ndim()
    }

    fn numel(&self) -> usize {
        self.inner.numel()
    }

    fn nelement(&self) -> usize {
        self.inner.numel()
    }

    fn element_size(&self) -> usize {
        self.inner.dtype().size()
    }

    #[getter]
    fn itemsize(&self) -> usize {
        self.inner.dtype().size()
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.nbytes()
    }

    fn data_ptr(&self) -> usize {
        self.inner.data_ptr() as usize
    }

    fn is_contiguous(&self) -> bool {
        self.inner.is_contiguous()
    }

    fn is_floating_point(&self) -> bool {
        self.inner.dtype().is_floating_point()
    }

    fn is_complex(&self) -> bool {
        self.inner.dtype().is_complex()
    }

    #[getter]
    fn is_cuda(&self) -> bool {
        !self.inner.device().is_cpu()
    }

    #[getter]
    fn is_cpu(&self) -> bool {
        self.inner.device().is_cpu()
    }

    /// Whether the memory is read-only (a non-writeable NumPy array, a
    /// READ_ONLY DLPack import, a JAX array). In-place ops on it raise.
    #[getter]
    fn is_read_only(&self) -> bool {
        self.inner.is_read_only()
    }

    #[getter(requires_grad)]
    fn get_requires_grad(&self) -> bool {
        self.requires_grad()
    }

    #[setter(requires_grad)]
    fn set_requires_grad(&self, value: bool) -> PyResult<()> {
        let dt = self.inner.dtype();
        if value && !(dt.is_floating_point() || dt.is_complex()) {
            return Err(PyRuntimeError::new_err(
                "only Tensors of floating point and complex dtype can require gradients",
            ));
        }
        self.requires_grad.store(value, Ordering::Relaxed);
        Ok(())
    }

    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_<'py>(
        slf: &Bound<'py, Self>,
        requires_grad: bool,
    ) -> PyResult<Bound<'py, Self>> {
        slf.get().set_requires_grad(requires_grad)?;
        Ok(slf.clone())
    }

    /// A view of the same memory that does not require grad.
    fn detach(&self) -> PyTensor {
        PyTensor::new(self.inner.clone())
    }

    #[getter]
    fn data(&self) -> PyTensor {
        self.detach()
    }

    // ----- conversions -----

    /// `to(device)`, `to(dtype)`, `to(device, dtype)`, `to(other)`, with
    /// `device=`, `dtype=`, `copy=` and `non_blocking=` keywords.
    #[pyo3(signature = (*args, **kwargs))]
    fn to(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let (mut device, mut dtype, mut copy) = (None, None, false);
        for arg in args.iter() {
            if let Ok(d) = arg.cast::<PyDType>() {
                dtype = Some(d.get().0);
            } else if let Ok(t) = arg.cast::<PyTensor>() {
                device = Some(t.get().inner.device());
                dtype = Some(t.get().inner.dtype());
            } else if arg.is_instance_of::<pyo3::types::PyBool>() {
                // to(device, dtype, non_blocking, copy): positional flags.
                continue;
            } else {
                device = Some(extract_device(&arg)?);
            }
        }
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                match k.extract::<String>()?.as_str() {
                    "device" => device = extract_opt_device(Some(&v))?.or(device),
                    "dtype" => dtype = extract_opt_dtype(Some(&v))?.or(dtype),
                    "copy" => copy = v.is_truthy()?,
                    "non_blocking" | "memory_format" => {}
                    other => {
                        return Err(PyTypeError::new_err(format!(
                            "to() got an unexpected keyword argument '{other}'"
                        )));
                    }
                }
            }
        }
        PyTensor::convert(slf, device, dtype, copy)
    }

    /// A copy on a CUDA device (the current one by default).
    #[pyo3(signature = (device=None, non_blocking=false))]
    fn cuda(
        slf: &Bound<'_, Self>,
        device: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = non_blocking;
        let d = extract_opt_device(device)?.unwrap_or(Device::cuda(None));
        if d.is_cpu() {
            return Err(PyRuntimeError::new_err(format!(
                "Invalid device, must be cuda device, got {d}"
            )));
        }
        PyTensor::convert(slf, Some(d), None, false)
    }

    /// Itself when on the CPU, else a host copy. (`device=` is accepted for
    /// the tutorials that pass `device='cpu'`.)
    #[pyo3(signature = (*, device=None, memory_format=None))]
    fn cpu(
        slf: &Bound<'_, Self>,
        device: Option<&Bound<'_, PyAny>>,
        memory_format: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        if let Some(d) = extract_opt_device(device)?
            && !d.is_cpu()
        {
            return Err(PyRuntimeError::new_err(format!(
                "cpu() moves to the CPU, but device {d} was given"
            )));
        }
        PyTensor::convert(slf, Some(Device::CPU), None, false)
    }

    /// `type()`: the legacy type name; `type(dtype)`: a cast.
    #[pyo3(signature = (dtype=None, non_blocking=false))]
    fn r#type(
        slf: &Bound<'_, Self>,
        dtype: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = non_blocking;
        let py = slf.py();
        match dtype {
            None => Ok(legacy_type_name(&slf.get().inner)
                .into_pyobject(py)?
                .into_any()
                .unbind()),
            Some(d) => PyTensor::convert(slf, None, Some(extract_dtype(d)?), false),
        }
    }

    fn float(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        PyTensor::convert(slf, None, Some(DType::F32), false)
    }

    fn double(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        PyTensor::convert(slf, None, Some(DType::F64), false)
    }

    fn half(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        PyTensor::convert(slf, None, Some(DType::F16), false)
    }

    fn bfloat16(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        PyTensor::convert(slf, None, Some(DType::BF16), false)
    }

    fn int(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        PyTensor::convert(slf, None, Some(DType::I32), false)
    }

    fn long(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        PyTensor::convert(slf, None, Some(DType::I64), false)
    }

    fn bool(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        PyTensor::convert(slf, None, Some(DType::Bool), false)
    }

    /// A contiguous copy in new memory.
    fn clone(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(self.derived(maybe_detach(py, t.numel(), || t.clone_data()).py()?))
    }

    fn contiguous(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let this = slf.get();
        if this.inner.is_contiguous() {
            return Ok(slf.clone().into_any().unbind());
        }
        Ok(Py::new(slf.py(), this.clone(slf.py())?)?.into_any())
    }

    // ----- views (shape-only; they share memory) -----

    /// `t.T`: every dimension reversed.
    #[getter(T)]
    fn reversed(&self) -> PyTensor {
        self.derived(self.inner.reversed_dims())
    }

    fn t(&self) -> PyResult<PyTensor> {
        Ok(self.derived(self.inner.t().py()?))
    }

    fn transpose(&self, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
        Ok(self.derived(self.inner.transpose(dim0, dim1).py()?))
    }

    #[pyo3(signature = (*dims))]
    fn permute(&self, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(self.derived(self.inner.permute(&size_values(dims)?).py()?))
    }

    fn unsqueeze(&self, dim: i64) -> PyResult<PyTensor> {
        Ok(self.derived(self.inner.unsqueeze(dim).py()?))
    }

    #[pyo3(signature = (*sizes))]
    fn expand(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(self.derived(self.inner.expand(&size_values(sizes)?).py()?))
    }

    #[pyo3(signature = (*shape))]
    fn view(&self, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(self.derived(self.inner.view(&size_values(shape)?).py()?))
    }

    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let sizes = size_values(shape)?;
        let t = &self.inner;
        Ok(self.derived(maybe_detach(py, t.numel(), || t.reshape(&sizes)).py()?))
    }

    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, py: Python<'_>, start_dim: i64, end_dim: i64) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(self.derived(maybe_detach(py, t.numel(), || t.flatten(start_dim, end_dim)).py()?))
    }

    // ----- in-place writes -----

    /// Copies `src` (broadcast and cast) into this tensor's memory.
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_<'py>(
        slf: &Bound<'py, Self>,
        src: &Bound<'py, PyAny>,
        non_blocking: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let _ = non_blocking;
        let this = slf.get();
        this.check_inplace()?;
        let py = slf.py();
        let src = match rhs(src)? {
            Some(Rhs::Tensor(t, _)) => t,
            Some(Rhs::Scalar(s)) => {
                Tensor::full(&[], s, this.inner.dtype(), this.inner.device()).py()?
            }
            None => super::creation::tensor_from_data(py, src, None, None)?,
        };
        let dst = &this.inner;
        maybe_detach(py, dst.numel(), || dst.copy_(&src)).py()?;
        Ok(slf.clone())
    }

    fn fill_<'py>(slf: &Bound<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let this = slf.get();
        this.check_inplace()?;
        let v = match to_scalar(value)? {
            Some(v) => v,
            None => match value.cast::<PyTensor>() {
                Ok(t) if t.get().inner.numel() == 1 => t.get().inner.item().py()?,
                _ => {
                    return Err(PyTypeError::new_err(
                        "fill_() expects a number or a one-element tensor",
                    ));
                }
            },
        };
        let dst = &this.inner;
        maybe_detach(slf.py(), dst.numel(), || dst.fill_(v)).py()?;
        Ok(slf.clone())
    }

    fn zero_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        slf.get().check_inplace()?;
        let dst = &slf.get().inner;
        maybe_detach(slf.py(), dst.numel(), || dst.fill_(Scalar::Int(0))).py()?;
        Ok(slf.clone())
    }

    fn add_<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        slf.get().binary_inplace(slf.py(), other, BinaryOp::Add)?;
        Ok(slf.clone())
    }

    fn sub_<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        slf.get().binary_inplace(slf.py(), other, BinaryOp::Sub)?;
        Ok(slf.clone())
    }

    fn mul_<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        slf.get().binary_inplace(slf.py(), other, BinaryOp::Mul)?;
        Ok(slf.clone())
    }

    fn div_<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        slf.get().binary_inplace(slf.py(), other, BinaryOp::Div)?;
        Ok(slf.clone())
    }

    fn __iadd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        self.binary_inplace(py, other, BinaryOp::Add)
    }

    fn __isub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        self.binary_inplace(py, other, BinaryOp::Sub)
    }

    fn __imul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        self.binary_inplace(py, other, BinaryOp::Mul)
    }

    fn __itruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        self.binary_inplace(py, other, BinaryOp::Div)
    }

    // ----- arithmetic -----

    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, BinaryOp::Add, false)
    }

    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, BinaryOp::Add, true)
    }

    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, BinaryOp::Sub, false)
    }

    fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, BinaryOp::Sub, true)
    }

    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, BinaryOp::Mul, false)
    }

    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, BinaryOp::Mul, true)
    }

    fn __truediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, BinaryOp::Div, false)
    }

    fn __rtruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, BinaryOp::Div, true)
    }

    fn add(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, BinaryOp::Add, false)
    }

    fn sub(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, BinaryOp::Sub, false)
    }

    fn mul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, BinaryOp::Mul, false)
    }

    fn div(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, BinaryOp::Div, false)
    }

    fn __neg__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(self.derived(maybe_detach(py, t.numel(), || ops::neg(t)).py()?))
    }

    fn neg(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.__neg__(py)
    }

    fn __pos__<'py>(slf: &Bound<'py, Self>) -> Bound<'py, Self> {
        slf.clone()
    }

    #[pyo3(signature = (*, dtype=None))]
    fn sum(&self, py: Python<'_>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let dt = extract_opt_dtype(dtype)?;
        let t = &self.inner;
        Ok(self.derived(maybe_detach(py, t.numel(), || ops::sum(t, dt)).py()?))
    }

    #[pyo3(signature = (*, dtype=None))]
    fn mean(&self, py: Python<'_>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let dt = extract_opt_dtype(dtype)?;
        let t = &self.inner;
        Ok(self.derived(maybe_detach(py, t.numel(), || ops::mean(t, dt)).py()?))
    }

    // ----- Python values -----

    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        super::convert::scalar_to_py(py, self.inner.item().py()?)
    }

    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let values = self.inner.to_scalars().py()?;
        nested_list(py, self.inner.shape(), &values)
    }

    fn __len__(&self) -> PyResult<usize> {
        self.inner
            .shape()
            .first()
            .copied()
            .ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
    }

    fn __bool__(&self) -> PyResult<bool> {
        if self.inner.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "Boolean value of Tensor with {} is ambiguous",
                if self.inner.numel() == 0 {
                    "no values"
                } else {
                    "more than one value"
                }
            )));
        }
        Ok(match self.inner.item().py()? {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
            Scalar::Complex(re, im) => re != 0.0 || im != 0.0,
        })
    }

    fn __float__(&self) -> PyResult<f64> {
        match self.scalar_value()? {
            Scalar::Bool(b) => Ok(b as u8 as f64),
            Scalar::Int(i) => Ok(i as f64),
            Scalar::Float(f) => Ok(f),
            Scalar::Complex(..) => Err(PyTypeError::new_err("can't convert complex to float")),
        }
    }

    fn __int__(&self) -> PyResult<i128> {
        match self.scalar_value()? {
            Scalar::Bool(b) => Ok(b as i128),
            Scalar::Int(i) => Ok(i),
            Scalar::Float(f) if f.is_finite() => Ok(f.trunc() as i128),
            Scalar::Float(_) => Err(PyRuntimeError::new_err(
                "cannot convert float infinity or NaN to integer",
            )),
            Scalar::Complex(..) => Err(PyTypeError::new_err("can't convert complex to int")),
        }
    }

    fn __index__(&self) -> PyResult<i128> {
        match (self.inner.dtype().category(), self.inner.numel()) {
            (crate::Category::Integral | crate::Category::Bool, 1) => self.__int__(),
            _ => Err(PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            )),
        }
    }

    // ----- indexing -----

    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let sel = parse_key(key, self.inner.ndim())?;
        Ok(self.derived(self.inner.index(&sel).py()?))
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.check_inplace()?;
        let view = self.inner.index(&parse_key(key, self.inner.ndim())?).py()?;
        match rhs(value)? {
            Some(Rhs::Scalar(s)) => maybe_detach(py, view.numel(), || view.fill_(s)).py(),
            Some(Rhs::Tensor(t, _)) => maybe_detach(py, view.numel(), || view.copy_(&t)).py(),
            None => {
                let t = super::creation::tensor_from_data(py, value, None, None)?;
                view.copy_(&t).py()
            }
        }
    }

    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let this = slf.get();
        let n = this
            .__len__()
            .map_err(|_| PyTypeError::new_err("iteration over a 0-d tensor"))?;
        let py = slf.py();
        let items = (0..n)
            .map(|i| {
                let row = this
                    .inner
                    .index(&[crate::Selection::Index(i as isize)])
                    .py()?;
                Py::new(py, this.derived(row))
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(pyo3::types::PyList::new(py, items)?
            .try_iter()?
            .into_any()
            .unbind())
    }

    // ----- exchange -----

    /// A NumPy array sharing this tensor's memory (`force=True` copies from
    /// a GPU and ignores `requires_grad`).
    #[pyo3(signature = (*, force=false))]
    fn numpy<'py>(slf: &Bound<'py, Self>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        super::numpy::to_numpy(slf, force)
    }

    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        super::numpy::array_protocol(slf, dtype, copy)
    }

    // `__dlpack__` is installed as a vectorcall method by `dlpack_export.rs`.

    fn __dlpack_device__(&self) -> (u32, i32) {
        super::dlpack_export::dlpack_device(&self.inner)
    }

    #[getter]
    fn __cuda_array_interface__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        super::cuda::array_interface(slf)
    }

    // ----- display -----

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        slf.py()
            .import("dlbridge")?
            .getattr("_repr")?
            .call1((slf,))?
            .extract()
    }

    /// The DLPack C exchange API table (see `exchange_api.rs`).
    #[classattr]
    fn __dlpack_c_exchange_api__(py: Python<'_>) -> PyResult<Py<PyAny>> {
        super::dlpack_export::exchange_api_capsule(py)
    }

    /// NumPy defers binary operators to dlbridge, so `ndarray + tensor` is a tensor.
    #[classattr]
    fn __array_priority__() -> f64 {
        1000.0
    }
}

/// `t.type()` with no argument: PyTorch's legacy type names.
pub(crate) fn legacy_type_name(t: &Tensor) -> String {
    let base = match t.dtype() {
        DType::F32 => "FloatTensor",
        DType::F64 => "DoubleTensor",
        DType::F16 => "HalfTensor",
        DType::BF16 => "BFloat16Tensor",
        DType::U8 => "ByteTensor",
        DType::I8 => "CharTensor",
        DType::I16 => "ShortTensor",
        DType::I32 => "IntTensor",
        DType::I64 => "LongTensor",
        DType::Bool => "BoolTensor",
        DType::U16 => "UInt16Tensor",
        DType::U32 => "UInt32Tensor",
        DType::U64 => "UInt64Tensor",
        DType::C64 => "ComplexFloatTensor",
        DType::C128 => "ComplexDoubleTensor",
    };
    if t.device().is_cpu() {
        format!("dlbridge.{base}")
    } else {
        format!("dlbridge.cuda.{base}")
    }
}
