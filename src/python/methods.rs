//! `dlbridge.Tensor`'s Python methods: the one `#[pymethods]` block of
//! [`PyTensor`]. Each body hands its arguments to the module that does the
//! work (or to the core, for the one-call views and metadata); the names,
//! signatures and docstrings are PyTorch's. `__dlpack__` is not here: it is
//! a vectorcall descriptor installed by `dlpack_export::install`.
//!
//! Layer: the top of the tensor layer, below only `mod.rs`.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::args::size_values;
use super::device::PyDevice;
use super::dtype::{PyDType, dtype_object};
use super::errors::IntoPyResult;
use super::tensor::PyTensor;
use super::{arith, convert, creation, cuda, dlpack_export, index, numpy, pickle, sharing};
use crate::{BinaryOp, CompareOp, DType, Tensor, ops};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

#[pymethods]
impl PyTensor {
    /// `Tensor(data)`: a float32 copy of `data`; `Tensor(2, 3)`: a 2x3 tensor.
    #[new]
    #[pyo3(signature = (*args))]
    fn py_new(args: &Bound<'_, PyTuple>) -> PyResult<Self> {
        creation::tensor_new(args)
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
        convert::shape(py, &self.inner)
    }

    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<isize>) -> PyResult<Bound<'py, PyAny>> {
        convert::size(py, &self.inner, dim)
    }

    #[pyo3(signature = (dim=None))]
    fn stride<'py>(&self, py: Python<'py>, dim: Option<isize>) -> PyResult<Bound<'py, PyAny>> {
        convert::stride(py, &self.inner, dim)
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
    fn py_set_requires_grad(&self, value: bool) -> PyResult<()> {
        self.set_requires_grad(value)
    }

    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_<'py>(
        slf: &Bound<'py, Self>,
        requires_grad: bool,
    ) -> PyResult<Bound<'py, Self>> {
        slf.get()
            .set_requires_grad(requires_grad)
            .map(|()| slf.clone())
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
        convert::to(slf, args, kwargs)
    }

    /// A copy on a CUDA device (the current one by default).
    #[pyo3(signature = (device=None, non_blocking=false))]
    fn cuda(
        slf: &Bound<'_, Self>,
        device: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = non_blocking;
        convert::cuda(slf, device)
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
        convert::cpu(slf, device)
    }

    /// `type()`: the legacy type name; `type(dtype)`: a cast.
    #[pyo3(signature = (dtype=None, non_blocking=false))]
    fn r#type(
        slf: &Bound<'_, Self>,
        dtype: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = non_blocking;
        convert::type_(slf, dtype)
    }

    fn float(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert::cast(slf, DType::F32)
    }

    fn double(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert::cast(slf, DType::F64)
    }

    fn half(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert::cast(slf, DType::F16)
    }

    fn bfloat16(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert::cast(slf, DType::BF16)
    }

    fn int(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert::cast(slf, DType::I32)
    }

    fn long(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert::cast(slf, DType::I64)
    }

    fn bool(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert::cast(slf, DType::Bool)
    }

    /// A contiguous copy in new memory.
    fn clone(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.compute(py, Tensor::clone_like)
    }

    fn contiguous(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert::contiguous(slf)
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
    /// `view(*shape)`, or `view(dtype)` for a dtype of the same size.
    fn view(&self, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        if shape.len() == 1
            && let Ok(dt) = shape.get_item(0)?.cast::<PyDType>()
        {
            return Ok(self.derived(self.inner.view_dtype(dt.get().0).py()?));
        }
        Ok(self.derived(self.inner.view(&size_values(shape)?).py()?))
    }

    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let sizes = size_values(shape)?;
        self.compute(py, |t| t.reshape(&sizes))
    }

    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, py: Python<'_>, start_dim: i64, end_dim: i64) -> PyResult<PyTensor> {
        self.compute(py, |t| t.flatten(start_dim, end_dim))
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
        arith::copy_(slf, src)
    }

    fn fill_<'py>(slf: &Bound<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        arith::fill_(slf, value)
    }

    fn zero_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        arith::zero_(slf)
    }

    fn __iadd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        arith::binary_inplace(self, py, other, BinaryOp::Add)
    }

    fn __isub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        arith::binary_inplace(self, py, other, BinaryOp::Sub)
    }

    fn __imul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        arith::binary_inplace(self, py, other, BinaryOp::Mul)
    }

    fn __itruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        arith::binary_inplace(self, py, other, BinaryOp::Div)
    }

    // ----- arithmetic -----

    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::binary(self, py, other, BinaryOp::Add, false)
    }

    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::binary(self, py, other, BinaryOp::Add, true)
    }

    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::binary(self, py, other, BinaryOp::Sub, false)
    }

    fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::binary(self, py, other, BinaryOp::Sub, true)
    }

    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::binary(self, py, other, BinaryOp::Mul, false)
    }

    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::binary(self, py, other, BinaryOp::Mul, true)
    }

    fn __truediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::binary(self, py, other, BinaryOp::Div, false)
    }

    fn __rtruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::binary(self, py, other, BinaryOp::Div, true)
    }

    fn __neg__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        arith::neg(self, py)
    }

    fn __pos__<'py>(slf: &Bound<'py, Self>) -> Bound<'py, Self> {
        slf.clone()
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None, axis=None))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dim = arith::dim_or_axis("sum", dim, axis)?;
        arith::reduce(self, py, "sum", dim, keepdim, dtype, ops::sum)
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None, axis=None))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dim = arith::dim_or_axis("mean", dim, axis)?;
        arith::reduce(self, py, "mean", dim, keepdim, dtype, ops::mean)
    }

    /// `max()`, or `max(dim, keepdim=False)` -> `(values, indices)`.
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None))]
    fn max(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dim = arith::dim_or_axis("max", dim, axis)?;
        arith::extreme(self, py, "max", dim, keepdim)
    }

    /// `min()`, or `min(dim, keepdim=False)` -> `(values, indices)`.
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None))]
    fn min(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dim = arith::dim_or_axis("min", dim, axis)?;
        arith::extreme(self, py, "min", dim, keepdim)
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None))]
    fn amax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dim = arith::dim_or_axis("amax", dim, axis)?;
        arith::extreme_values(self, py, "amax", dim, keepdim, ops::amax)
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None))]
    fn amin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dim = arith::dim_or_axis("amin", dim, axis)?;
        arith::extreme_values(self, py, "amin", dim, keepdim, ops::amin)
    }

    // ----- PyTorch habits: truth reductions, arg-extremes, squeeze, matrix transposes -----

    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None))]
    fn all(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        arith::truth(self, py, "all", dim, axis, keepdim, ops::all)
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None))]
    fn any(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        arith::truth(self, py, "any", dim, axis, keepdim, ops::any)
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None))]
    fn argmax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        arith::arg_extreme(self, py, "argmax", dim, axis, keepdim, ops::argmax)
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None))]
    fn argmin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        arith::arg_extreme(self, py, "argmin", dim, axis, keepdim, ops::argmin)
    }

    /// `squeeze()`, `squeeze(dim)`, `squeeze((d0, d1))`: a view.
    #[pyo3(signature = (dim=None, *, axis=None))]
    fn squeeze(
        &self,
        dim: Option<&Bound<'_, PyAny>>,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        arith::squeeze(self, arith::dim_or_axis("squeeze", dim, axis)?)
    }

    /// `t.mT`: the last two dimensions swapped (a view).
    #[getter(mT)]
    fn matrix_t(&self) -> PyResult<PyTensor> {
        Ok(self.derived(self.inner.matrix_transpose("mT").py()?))
    }

    /// `t.mH`: the conjugate transpose of a batch of matrices.
    #[getter(mH)]
    fn matrix_h(&self, py: Python<'_>) -> PyResult<PyTensor> {
        arith::adjoint(self, py, "mH")
    }

    /// `t.H`: the conjugate transpose of a matrix.
    #[getter(H)]
    fn adjoint(&self, py: Python<'_>) -> PyResult<PyTensor> {
        arith::adjoint(self, py, "H")
    }

    fn __abs__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        arith::abs(self, py)
    }

    fn abs(&self, py: Python<'_>) -> PyResult<PyTensor> {
        arith::abs(self, py)
    }

    // ----- powers -----

    fn __pow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo; // three-argument pow() is not a tensor operation
        arith::binary(self, py, other, BinaryOp::Pow, false)
    }

    fn __rpow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        arith::binary(self, py, other, BinaryOp::Pow, true)
    }

    fn __ipow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        arith::binary_inplace(self, py, other, BinaryOp::Pow)
    }

    fn pow(&self, py: Python<'_>, exponent: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::binary(self, py, exponent, BinaryOp::Pow, false)
    }

    fn pow_<'py>(
        slf: &Bound<'py, Self>,
        exponent: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        arith::named_inplace(slf, exponent, BinaryOp::Pow)
    }

    // ----- comparisons -----

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::compare(self, py, other, CompareOp::Eq, false)
    }

    fn __ne__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::compare(self, py, other, CompareOp::Ne, false)
    }

    fn __lt__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::compare(self, py, other, CompareOp::Lt, false)
    }

    fn __le__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::compare(self, py, other, CompareOp::Le, false)
    }

    fn __gt__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::compare(self, py, other, CompareOp::Gt, false)
    }

    fn __ge__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::compare(self, py, other, CompareOp::Ge, false)
    }

    /// Tensors hash by identity, as PyTorch's do (`==` is elementwise).
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    fn eq(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::compare(self, py, other, CompareOp::Eq, true)
    }

    fn ne(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::compare(self, py, other, CompareOp::Ne, true)
    }

    fn lt(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::compare(self, py, other, CompareOp::Lt, true)
    }

    fn le(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::compare(self, py, other, CompareOp::Le, true)
    }

    fn gt(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::compare(self, py, other, CompareOp::Gt, true)
    }

    fn ge(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith::compare(self, py, other, CompareOp::Ge, true)
    }

    // ----- Python values -----

    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        convert::item(py, &self.inner)
    }

    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        convert::tolist(py, &self.inner)
    }

    fn __len__(&self) -> PyResult<usize> {
        convert::len(&self.inner)
    }

    fn __bool__(&self) -> PyResult<bool> {
        convert::truth(&self.inner)
    }

    fn __float__(&self) -> PyResult<f64> {
        convert::float(&self.inner)
    }

    fn __int__(&self) -> PyResult<i128> {
        convert::int(&self.inner)
    }

    fn __index__(&self) -> PyResult<i128> {
        convert::index(&self.inner)
    }

    // ----- indexing -----

    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        index::getitem(self, key)
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        index::setitem(self, py, key, value)
    }

    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        index::iter(slf)
    }

    // ----- exchange -----

    /// A NumPy array sharing this tensor's memory (`force=True` copies from
    /// a GPU and ignores `requires_grad`).
    #[pyo3(signature = (*, force=false))]
    fn numpy<'py>(slf: &Bound<'py, Self>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        numpy::to_numpy(slf, force)
    }

    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        numpy::array_protocol(slf, dtype, copy)
    }

    // `__dlpack__` is installed as a vectorcall method by `dlpack_export.rs`.

    fn __dlpack_device__(&self) -> (u32, i32) {
        dlpack_export::dlpack_device(&self.inner)
    }

    #[getter]
    fn __cuda_array_interface__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        cuda::array_interface(slf)
    }

    // ----- pickling and copying -----

    fn __reduce_ex__<'py>(slf: &Bound<'py, Self>, protocol: i64) -> PyResult<Bound<'py, PyTuple>> {
        pickle::reduce_ex(slf, protocol)
    }

    fn __copy__(&self) -> PyTensor {
        pickle::shallow_copy(self)
    }

    fn __deepcopy__(slf: &Bound<'_, Self>, memo: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        pickle::deep_copy(slf, memo)
    }

    // ----- sharing between processes -----

    /// Moves the storage into shared memory (every view of it moves too):
    /// a no-op when it is already there, and for CUDA tensors.
    fn share_memory_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        sharing::share_memory_(slf)
    }

    /// Whether the storage is in shared memory (always true on CUDA).
    fn is_shared(&self) -> bool {
        sharing::is_shared(&self.inner)
    }

    /// What `multiprocessing` sends for this tensor (`_sharing.py`).
    fn _share_handle<'py>(slf: &Bound<'py, Self>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        sharing::share_handle(slf)
    }

    // ----- display -----

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        convert::repr(slf)
    }

    /// The DLPack C exchange API table (see `exchange_api.rs`).
    #[classattr]
    fn __dlpack_c_exchange_api__(py: Python<'_>) -> PyResult<Py<PyAny>> {
        dlpack_export::exchange_api_capsule(py)
    }

    /// NumPy defers binary operators to dlbridge, so `ndarray + tensor` is a tensor.
    #[classattr]
    fn __array_priority__() -> f64 {
        1000.0
    }
}
