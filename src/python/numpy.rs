//! The NumPy bridge: `from_numpy` reads the array struct directly and
//! `Tensor.numpy()` builds an array over the tensor's memory, both without a
//! copy and without a DLPack round trip (which would cost more than the
//! whole call). Byte strides pass through unchanged both ways.
//!
//! Layer: just above `tensor`; `args` (ndarray operands), `nested`,
//! `creation` and `methods` use it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::errors::IntoPyResult;
use super::tensor::PyTensor;
use crate::foreign::ForeignTensor;
use crate::raw::c_array;
use crate::storage::{Owner, Retained};
use crate::{DType, Device, NumpyType, Tensor};
use numpy::npyffi::{NPY_ARRAY_WRITEABLE, PY_ARRAY_API, PyArrayObject};
use numpy::{PyArrayDescr, PyArrayDescrMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(from_numpy, m)?)
}

pub(crate) fn is_ndarray(ob: &Bound<'_, PyAny>) -> bool {
    // SAFETY: PyArray_Check only reads the object's type.
    unsafe { numpy::npyffi::PyArray_Check(ob.py(), ob.as_ptr()) != 0 }
}

const SUPPORTED: &str = "The only supported types are: float64, float32, float16, bfloat16 and the \
     float8, float6 and float4 types of ml_dtypes, complex64, complex128, int64, int32, int16, int8, \
     uint64, uint32, uint16, uint8, and bool.";

/// Maps a NumPy dtype onto a dlbridge one, refusing what cannot be shared.
pub(crate) fn dtype_of(descr: &Bound<'_, PyArrayDescr>) -> PyResult<DType> {
    let size = descr.itemsize();
    let found = match DType::from_numpy_kind(descr.kind(), size) {
        Some(dt) => Some(dt),
        // ml_dtypes' types (bfloat16, float8_e4m3fn, ...) register as void-
        // or float-kind types named as dlbridge's dtypes.
        None if matches!((descr.kind(), size), (b'V', 1 | 2) | (b'f', 1))
            && !descr.has_fields() =>
        {
            DType::from_name(&descr.typeobj().name()?.to_cow()?).filter(|d| d.size() == size)
        }
        None => None,
    };
    let Some(dt) = found else {
        return Err(PyTypeError::new_err(format!(
            "can't convert np.ndarray of type {}. {SUPPORTED}",
            descr.typeobj().fully_qualified_name()?
        )));
    };
    if descr.is_native_byteorder() == Some(false) {
        return Err(PyValueError::new_err(format!(
            "given numpy array has byte order different from the native byte order ({}). Conversion \
             between byte orders is currently not supported; use arr.astype(arr.dtype.newbyteorder('='))",
            descr.str()?
        )));
    }
    Ok(dt)
}

/// Gives back the array reference a NumPy-backed storage holds.
///
/// The last owner of a storage may be a DLPack deleter run from a capsule
/// destructor or from another library's thread, where pyo3 does not know the
/// GIL is held: this takes it (re-entrantly) so the array goes at once; once
/// interpreter shutdown has begun nothing may run Python, so the release is
/// left undone.
///
/// # Safety
/// `handle` is an owned reference to a Python object, released once.
pub(crate) unsafe fn release_array(handle: *mut std::ffi::c_void) {
    // SAFETY: the caller's contract: an owned reference, released once.
    let _ = Python::try_attach(|_| unsafe { pyo3::ffi::Py_DecRef(handle.cast()) });
}

/// A tensor over an ndarray's memory that keeps the array alive.
pub(crate) fn tensor_from_ndarray(ob: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if !is_ndarray(ob) {
        return Err(PyTypeError::new_err(format!(
            "expected np.ndarray (got {})",
            ob.get_type().name()?
        )));
    }
    let arr = ob.as_ptr().cast::<PyArrayObject>();
    // SAFETY: `ob` is an ndarray (checked above), so its struct fields are
    // valid to read while we hold a reference to it.
    let (data, nd, dims, strides, descr, flags) = unsafe {
        let a = &(*arr).fields;
        (
            a.data,
            a.nd as usize,
            a.dimensions,
            a.strides,
            a.descr,
            a.flags,
        )
    };
    // SAFETY: descr is the array's live dtype object.
    let descr = unsafe { Bound::from_borrowed_ptr(ob.py(), descr.cast()) };
    let dtype = dtype_of(descr.cast::<PyArrayDescr>()?)?;
    // SAFETY: dims and strides each hold nd entries (NULL for a 0-d array).
    let (shape, byte_strides) = unsafe {
        (
            c_array(dims, nd)
                .iter()
                .map(|&n| n as usize)
                .collect::<Vec<_>>(),
            c_array(strides, nd).to_vec(),
        )
    };
    let checked = ForeignTensor {
        data: data.cast::<u8>(),
        shape,
        byte_strides,
        dtype,
        device: Device::CPU,
        read_only: flags & NPY_ARRAY_WRITEABLE == 0,
    }
    .check()
    .py()?;
    // SAFETY: release_array gives back exactly the reference into_ptr takes.
    let owner =
        Owner::Retained(unsafe { Retained::new(ob.clone().into_ptr().cast(), release_array) });
    // SAFETY: NumPy guarantees every element of the array lies in memory
    // that stays valid while the array lives, and the owner holds the array.
    Ok(unsafe { checked.wrap(owner) })
}

/// `from_numpy(ndarray)`: a tensor sharing the array's memory, dtype kept.
#[pyfunction]
fn from_numpy(ob: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    Ok(PyTensor::new(tensor_from_ndarray(ob)?))
}

/// Each dtype's NumPy dtype, looked up on first use (None: NumPy cannot
/// hold it, or ml_dtypes is missing or lacks it).
static DESCRS: [PyOnceLock<Option<Py<PyArrayDescr>>>; DType::ALL.len()] =
    [const { PyOnceLock::new() }; DType::ALL.len()];

/// The NumPy dtype for `dt` (a new reference, as PyArray_NewFromDescr wants):
/// `numpy.dtype` of its type string, or ml_dtypes' type of its name.
pub(crate) fn descr_for(py: Python<'_>, dt: DType) -> PyResult<Bound<'_, PyArrayDescr>> {
    let lookup = || -> Option<Py<PyArrayDescr>> {
        let np = py.import("numpy").ok()?;
        let of = match dt.numpy() {
            NumpyType::Builtin(typestr) => typestr.into_pyobject(py).ok()?.into_any(),
            NumpyType::MlDtypes => py.import("ml_dtypes").ok()?.getattr(dt.name()).ok()?,
            NumpyType::None => return None,
        };
        let descr = np.getattr("dtype").ok()?.call1((of,)).ok()?;
        descr.cast_into::<PyArrayDescr>().ok().map(Bound::unbind)
    };
    if let Some(d) = DESCRS[dt.index()].get_or_init(py, lookup) {
        return Ok(d.bind(py).clone());
    }
    Err(PyTypeError::new_err(match dt.numpy() {
        NumpyType::MlDtypes => format!(
            "Got unsupported ScalarType {} (NumPy has no {}; install ml_dtypes to get such arrays, \
             or convert with .float() first)",
            dt.scalar_type_name(),
            dt.name()
        ),
        _ => format!("Got unsupported ScalarType {}", dt.scalar_type_name()),
    }))
}

/// An ndarray viewing `t`'s memory, whose base object `owner` keeps it alive.
pub(crate) fn ndarray_over<'py>(
    owner: &Bound<'py, PyAny>,
    t: &Tensor,
) -> PyResult<Bound<'py, PyAny>> {
    let py = owner.py();
    let descr = descr_for(py, t.dtype())?;
    let mut dims: Vec<numpy::npyffi::npy_intp> = t.shape().iter().map(|&n| n as isize).collect();
    let mut strides: Vec<numpy::npyffi::npy_intp> = t.layout().strides.clone();
    let flags = if t.is_read_only() {
        0
    } else {
        NPY_ARRAY_WRITEABLE
    };
    // SAFETY: NewFromDescr steals the descriptor reference (hence into_ptr),
    // dims/strides hold ndim entries, and the data pointer covers every
    // element the layout addresses. On success SetBaseObject steals a
    // reference to the owner, which keeps the memory alive with the array.
    unsafe {
        let arr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            <numpy::PyUntypedArray as pyo3::PyTypeInfo>::type_object_raw(py),
            descr.into_ptr().cast(),
            t.ndim() as i32,
            dims.as_mut_ptr(),
            strides.as_mut_ptr(),
            t.data_ptr().cast(),
            flags,
            std::ptr::null_mut(),
        );
        let arr = Bound::from_owned_ptr_or_err(py, arr)?;
        if PY_ARRAY_API.PyArray_SetBaseObject(py, arr.as_ptr().cast(), owner.clone().into_ptr())
            != 0
        {
            return Err(PyErr::fetch(py));
        }
        Ok(arr)
    }
}

/// `Tensor.numpy(force=False)`.
pub(crate) fn to_numpy<'py>(
    slf: &Bound<'py, PyTensor>,
    force: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let this = slf.get();
    let t = &this.inner;
    if !force {
        if this.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
            ));
        }
        if !t.device().is_cpu() {
            return Err(PyTypeError::new_err(format!(
                "can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
                t.device()
            )));
        }
        return ndarray_over(slf.as_any(), t);
    }
    let host = t.to_device(Device::CPU).py()?;
    let holder = Bound::new(slf.py(), PyTensor::new(host))?;
    ndarray_over(holder.as_any(), &holder.get().inner)
}

/// `__array__(dtype=None, copy=None)`: a zero-copy view unless a dtype change or a copy is asked for.
pub(crate) fn array_protocol<'py>(
    slf: &Bound<'py, PyTensor>,
    dtype: Option<&Bound<'py, PyAny>>,
    copy: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    let arr = to_numpy(slf, false)?;
    let dtype = dtype.filter(|d| !d.is_none());
    if dtype.is_none() && copy != Some(true) {
        return Ok(arr);
    }
    let py = slf.py();
    let np = py.import("numpy")?;
    let kwargs = pyo3::types::PyDict::new(py);
    if let Some(d) = dtype {
        kwargs.set_item("dtype", d)?;
    }
    kwargs.set_item("copy", copy)?;
    np.getattr("array")?.call((arr,), Some(&kwargs))
}
