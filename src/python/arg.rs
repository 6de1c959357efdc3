//! Python arguments as tensors: the one routine, [`read`], that every door
//! for Python data takes: `from_dlpack`, `as_tensor`/`asarray`, `tensor()`,
//! `copy_`, the operators, index assignment and the pyo3 layer's
//! `TensorArg`. It tries, in this order, a dlbridge tensor (the object's own
//! tensor), an ndarray (its memory, read directly as `from_numpy` does), a
//! number, then (when the caller takes them) any DLPack producer or capsule
//! (`dlpack_import`); what is left is the caller's (nested data, or a
//! `TypeError`). Each branch calls a leaf and comes back here, so what counts
//! as a tensor is decided in one place.
//!
//! Layer: above `tensor`, `numpy`, `args` (numbers) and `dlpack_import`;
//! `api`, `creation`, `asarray`, `arith` and `index` use it.
//! (errors, capsule, dtype -> device -> tensor -> numpy -> pickle -> args -> nested,
//! exchange_api -> dlpack_export, dlpack_import -> arg -> api, creation -> convert,
//! arith, index, asarray, cuda, sharing -> methods -> package -> mod.rs)

use super::args::to_scalar;
use super::device::extract_opt_device;
use super::dlpack_import::{not_a_producer, requires_grad_refused, try_import};
use super::errors::IntoPyResult;
use super::fastcall::{self, Args, FastCall};
use super::numpy::{is_ndarray, tensor_from_ndarray};
use super::tensor::PyTensor;
use crate::{Scalar, Tensor};
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;

/// What a Python object is to dlbridge.
pub(crate) enum Value {
    /// Memory that already is a tensor, shared: a dlbridge tensor (with its
    /// `requires_grad`), an ndarray, or a DLPack producer's export (`copied`
    /// when the producer said it made a copy).
    Tensor {
        tensor: Tensor,
        requires_grad: bool,
        copied: bool,
    },
    /// A Python or NumPy number.
    Scalar(Scalar),
    /// Anything else: nested data, or an object dlbridge does not take.
    Other,
}

/// Whether [`read`] imports other frameworks' tensors (DLPack producers
/// and capsules) or leaves them as [`Value::Other`]: operators leave them,
/// as PyTorch does not compute with a JAX array (the result's framework
/// would depend on the operand order, and a copy or a device move would
/// hide behind `+`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Producers {
    Import,
    Leave,
}

/// `ob` as dlbridge sees it (see the module doc for the order).
pub(crate) fn read(ob: &Bound<'_, PyAny>, producers: Producers) -> PyResult<Value> {
    if let Ok(t) = ob.cast::<PyTensor>() {
        let t = t.get();
        return Ok(Value::Tensor {
            tensor: t.inner.clone(),
            requires_grad: t.requires_grad(),
            copied: false,
        });
    }
    // Read directly, as from_numpy does: the same tensor (shared memory,
    // read-only kept) without a DLPack round trip, which costs more than a
    // whole from_dlpack call.
    if is_ndarray(ob) {
        return Ok(Value::Tensor {
            tensor: tensor_from_ndarray(ob)?,
            requires_grad: false,
            copied: false,
        });
    }
    // Numbers have no `__dlpack__`, so the order of these two only decides
    // which lookup a miss pays; imports are the hot path.
    if producers == Producers::Import
        && let Some((tensor, copied)) = try_import(ob)?
    {
        return Ok(Value::Tensor {
            tensor,
            requires_grad: false,
            copied,
        });
    }
    Ok(match to_scalar(ob)? {
        Some(s) => Value::Scalar(s),
        None => Value::Other,
    })
}

/// Any DLPack producer or capsule (a dlbridge tensor and an ndarray too),
/// zero-copy; anything else is `from_dlpack`'s `TypeError`. Refuses a tensor
/// that requires grad, as torch's `__dlpack__` does.
pub(crate) fn producer_tensor(ob: &Bound<'_, PyAny>) -> PyResult<(Tensor, bool)> {
    match read(ob, Producers::Import)? {
        Value::Tensor {
            requires_grad: true,
            ..
        } => Err(requires_grad_refused()),
        Value::Tensor { tensor, copied, .. } => Ok((tensor, copied)),
        Value::Scalar(_) | Value::Other => Err(not_a_producer(ob)),
    }
}

/// The right-hand side of an operator or an in-place write.
pub(crate) enum Rhs {
    /// A tensor (a dlbridge one, with its `requires_grad`, or an ndarray's memory).
    Tensor(Tensor, bool),
    Scalar(Scalar),
}

/// `ob` as an operand, or `None` (NotImplemented) for what operators do not
/// take: other frameworks' tensors stay out (see [`Producers`]).
pub(crate) fn rhs(ob: &Bound<'_, PyAny>) -> PyResult<Option<Rhs>> {
    Ok(match read(ob, Producers::Leave)? {
        Value::Tensor {
            tensor,
            requires_grad,
            ..
        } => Some(Rhs::Tensor(tensor, requires_grad)),
        Value::Scalar(s) => Some(Rhs::Scalar(s)),
        Value::Other => None,
    })
}

// ----- from_dlpack -----

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    fastcall::add_function::<FromDlpack>(m)
}

/// `from_dlpack` as a fast entry point (see `fastcall.rs`): it is the
/// hottest import path.
struct FromDlpack;

impl FastCall for FromDlpack {
    const NAME: &'static str = "from_dlpack";
    const DOC: &'static std::ffi::CStr = c"from_dlpack(x, /, *, device=None, copy=None)\n--\n\n\
A tensor sharing the memory of any DLPack producer (or capsule), as torch.from_dlpack: \
zero-copy unless `copy=True` or another `device` asks for a copy.";
    const POSITIONAL: &'static [&'static str] = &["x"];
    const KEYWORDS: &'static [&'static str] = &["device", "copy"];

    fastcall::cells!();

    fn call(
        py: Python<'_>,
        _slf: *mut pyo3::ffi::PyObject,
        args: Args<'_, '_>,
    ) -> PyResult<Py<PyAny>> {
        let [device, copy, ..] = args.keywords;
        let copy = copy.map(|c| c.extract::<bool>()).transpose()?;
        let t = from_dlpack(&args.positional[0], device.as_deref(), copy)?;
        Ok(Py::new(py, t)?.into_any())
    }
}

/// `from_dlpack(x, /, *, device=None, copy=None)` with the array API's meaning:
/// zero-copy by default, `copy=True` always copies, `copy=False` never does,
/// and `device` places the result (copying only when it differs).
fn from_dlpack(
    x: &Bound<'_, PyAny>,
    device: Option<&Bound<'_, PyAny>>,
    copy: Option<bool>,
) -> PyResult<PyTensor> {
    let device = extract_opt_device(device)?;
    let (t, copied) = producer_tensor(x)?;
    if copy == Some(false) && copied {
        return Err(PyBufferError::new_err(
            "copy=False, but the producer made a copy",
        ));
    }
    let device = match device {
        Some(d) if !d.is_cpu() => Some(crate::backend::resolve(d).py()?),
        other => other,
    };
    let placed = match device {
        Some(d) if d != t.device() => {
            if copy == Some(false) {
                return Err(PyBufferError::new_err(format!(
                    "copy=False, but moving to {d} needs a copy"
                )));
            }
            t.to_device(d).py()?
        }
        _ if copy == Some(true) && !copied => t.clone_data().py()?,
        _ => t,
    };
    Ok(PyTensor::new(placed))
}
