"""examples/pyo3-scale: an extension module of another crate, written with dlbridge's pyo3
layer (`dlbridge::python::{TensorArg, TensorArgMut, TensorOut}`), called with real torch,
NumPy and JAX tensors.

`make test` builds the example with maturin into the virtualenv (`make example-pyo3`)
before pytest runs; without it these tests fail with that hint (they are what shows the
layer works from another crate). Its CUDA cases are in gpu/test_pyo3_example_cuda.py.
"""

import sys

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import OldStyleProducer


def test_scale_returns_a_tensor_every_framework_takes_zero_copy(ext):
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    out = ext.scale(x, 2.5)
    assert type(out).__name__ == "DLPackTensor"
    assert out.shape == [2, 3] and out.dtype == "float32" and out.device == "cpu"
    assert out.__dlpack_device__() == (1, 0)
    expected = x.numpy() * 2.5
    # Each consumer sees the same memory: an edit through one shows in the others.
    t = torch.from_dlpack(out)
    a = np.from_dlpack(out)
    d = db.from_dlpack(out)
    np.testing.assert_array_equal(t.numpy(), expected)
    assert t.data_ptr() == a.ctypes.data == d.data_ptr()
    a[0, 0] = 42.0
    assert t[0, 0].item() == 42.0 and d[0, 0].item() == 42.0
    # The input is untouched.
    np.testing.assert_array_equal(x.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_scale_takes_jax_and_returns_to_jax(ext):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = jnp.arange(4, dtype=jnp.float32)
    out = ext.scale(x, 3.0)
    y = jax.dlpack.from_dlpack(out)
    np.testing.assert_array_equal(np.asarray(y), np.arange(4, dtype=np.float32) * 3)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int64, np.int32])
def test_scale_of_numpy_dtypes_as_torch(ext, dtype):
    a = np.arange(-3, 4).astype(dtype)
    out = torch.from_dlpack(ext.scale(a, 2.0))
    assert out.dtype == (torch.from_numpy(a) * 2.0).dtype
    torch.testing.assert_close(out, torch.from_numpy(a) * 2.0)


def test_scale_of_a_strided_view(ext):
    x = torch.arange(24, dtype=torch.float64).reshape(4, 6)[::2, 1::2]
    torch.testing.assert_close(torch.from_dlpack(ext.scale(x, -1.0)), -x)


def test_scale_inplace_edits_the_callers_tensor(ext):
    x = torch.ones(3, 4)
    ptr = x.data_ptr()
    assert ext.scale_(x, 4.0) is None
    assert x.data_ptr() == ptr
    torch.testing.assert_close(x, torch.full((3, 4), 4.0))
    a = np.arange(5, dtype=np.float64)
    ext.scale_(a, 0.5)
    np.testing.assert_array_equal(a, np.arange(5) * 0.5)
    t = db.ones(2)
    ext.scale_(t, 3.0)
    assert t.tolist() == [3.0, 3.0]
    # A view's edit lands in its base.
    base = torch.zeros(4, 4)
    ext.scale_(base[1:3, ::2].fill_(1.0), 2.0)
    assert base.sum().item() == 8.0


def test_read_only_inputs_are_refused_by_scale_inplace_and_taken_by_scale(ext):
    a = np.arange(3.0)
    a.flags.writeable = False
    with pytest.raises(RuntimeError, match="read-only"):
        ext.scale_(a, 2.0)
    np.testing.assert_array_equal(a, np.arange(3.0))
    np.testing.assert_array_equal(np.from_dlpack(ext.scale(a, 2.0)), np.arange(3.0) * 2)
    jax = pytest.importorskip("jax")
    j = jax.numpy.ones(3)
    with pytest.raises(RuntimeError, match="read-only"):
        ext.scale_(j, 2.0)
    np.testing.assert_array_equal(np.asarray(j), np.ones(3))


def test_expanded_views_are_refused_in_place_as_torch_does(ext):
    x = torch.zeros(1, 3).expand(4, 3)
    with pytest.raises(RuntimeError, match="single memory location"):
        ext.scale_(x, 2.0)


@pytest.mark.parametrize("bad", [[1.0, 2.0], 3.0, "x", None, object()])
def test_non_tensors_are_type_errors(ext, bad):
    for f in (ext.scale, ext.scale_):
        with pytest.raises(TypeError, match=r"expected a tensor \(an object with __dlpack__") as e:
            f(bad, 2.0)
        assert str(e.value).endswith(f"got {type(bad).__name__}")
        # pyo3 names the argument (in a note from Python 3.11 on).
        assert "'x'" in str(e.value) + " ".join(getattr(e.value, "__notes__", []))


def test_tensors_that_require_grad_are_refused_as_torch_exports_them(ext):
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(BufferError, match="require gradient"):
        ext.scale(x, 2.0)


def test_dlpack_capsules_versioned_and_legacy_are_taken(ext):
    x = torch.arange(3, dtype=torch.float32)
    for capsule in (x.__dlpack__(), x.__dlpack__(max_version=(1, 0))):
        out = torch.from_dlpack(ext.scale(capsule, 2.0))
        torch.testing.assert_close(out, x * 2)


def test_a_producer_without_max_version_is_retried_as_the_spec_says(ext):
    a = np.arange(4.0)
    np.testing.assert_array_equal(np.from_dlpack(ext.scale(OldStyleProducer(a), 2.0)), a * 2)


def test_core_errors_become_torchs_exception_classes(ext):
    # int64 *= 2.5 cannot be written back into int64: torch raises RuntimeError.
    x = torch.arange(3)
    with pytest.raises(RuntimeError) as ours:
        ext.scale_(x, 2.5)
    with pytest.raises(RuntimeError) as theirs:
        x.mul_(2.5)
    assert "can't be cast" in str(ours.value) and "can't be cast" in str(theirs.value)


def test_the_exported_object_speaks_every_dlpack_keyword(ext):
    out = ext.scale(np.arange(3.0), 1.0)
    legacy = out.__dlpack__()
    versioned = out.__dlpack__(max_version=(1, 3))
    assert legacy is not None and versioned is not None
    # Explicit Nones mean "not given", as for dlbridge.Tensor.__dlpack__.
    assert out.__dlpack__(stream=None, max_version=None, dl_device=None, copy=None) is not None
    with pytest.raises(BufferError):
        out.__dlpack__(dl_device=(2, 0), copy=False)
    with pytest.raises(ValueError, match="stream=None"):
        out.__dlpack__(stream=1)
    assert np.from_dlpack(out, copy=True).tolist() == [0.0, 1.0, 2.0]
    assert "DLPackTensor(shape=[3], dtype=float64, device='cpu')" == repr(out)


def test_inputs_are_released_after_the_call(ext):
    # TensorArg keeps the producer's memory alive while the tensor lives: the ndarray's
    # reference goes back once the call is over (scale_) or the output is dropped (scale
    # reads through its own import, released before it returns).
    a = np.ones(10)
    before = sys.getrefcount(a)
    ext.scale_(a, 2.0)
    assert sys.getrefcount(a) == before
    out = ext.scale(a, 2.0)
    assert sys.getrefcount(a) == before
    t = torch.from_dlpack(out)
    del out
    assert t.sum().item() == 40.0
